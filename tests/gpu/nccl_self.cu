/* GPU check: one rank's plan through the nccl backend on a one-rank communicator. The rank packs a
 * strided box of its source (rows 1..2, columns 1..2 of a 4x4 int32 tile), sends it to itself
 * with ncclSend/ncclRecv in one group, and unpacks it into a strided box of its destination (rows
 * 0..1, columns 1..2 of a 2x4 tile). Built and run by tests/gpu/run.sh. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#include "runtime.h"

static const mc_rt_box_t boxes[] = {
    {MC_RT_BUF_SRC, 2, 20, {2, 8}, {16, 0}},
    {MC_RT_BUF_WS, 1, 0, {32}, {0}},
    {MC_RT_BUF_DST, 2, 4, {2, 8}, {16, 0}},
};
static const mc_rt_op_t ops[] = {
    {MC_RT_OP_COPY, 0, 0, 16, {0, 0}, {1, 0}},
    {MC_RT_OP_SEND, 0, 0, 16, {1, 0}, {0, 0}},
    {MC_RT_OP_RECV, 0, 0, 16, {0, 0}, {1, 16}},
    {MC_RT_OP_COPY, 0, 0, 16, {1, 16}, {2, 0}},
};
static const mc_rt_step_t steps[] = {{0, 0, 1, 2, 1}};
static const mc_rt_plan_t plan = {0, 1, 64, 32, 32, 3, 4, 1, boxes, ops, steps, NULL, NULL};

int main(void)
{
    int ndev = 0, dev = 0, version = 0;
    ncclComm_t comm;
    cudaStream_t stream;
    mc_rt_buffers_t b;
    mc_rt_err_t err;
    unsigned char src[64], dst[32];
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("nccl one-rank: SKIP (no CUDA device)\n");
        return 0;
    }
    ncclGetVersion(&version);
    cudaSetDevice(0);
    if (ncclCommInitAll(&comm, 1, &dev) != ncclSuccess) {
        printf("nccl one-rank: FAIL: ncclCommInitAll\n");
        return 1;
    }
    cudaStreamCreate(&stream);
    for (int i = 0; i < 64; i++)
        src[i] = (unsigned char)i;
    memset(dst, 0xff, sizeof dst);
    memset(&b, 0, sizeof b);
    b.bytes[MC_RT_BUF_SRC] = 64;
    b.bytes[MC_RT_BUF_DST] = 32;
    b.bytes[MC_RT_BUF_WS] = 32;
    for (int i = 0; i < MC_RT_NBUFS; i++)
        cudaMalloc(&b.buf[i], b.bytes[i]);
    cudaMemcpy(b.buf[MC_RT_BUF_SRC], src, 64, cudaMemcpyHostToDevice);
    cudaMemcpy(b.buf[MC_RT_BUF_DST], dst, 32, cudaMemcpyHostToDevice);
    if (mc_rt_run_nccl(&plan, comm, &b, stream, NULL, &err) != MC_RT_OK ||
        mc_rt_cuda_wait(stream, comm, 0, 30, &err) != MC_RT_OK) {
        printf("nccl one-rank: FAIL: %s\n", err.msg);
        return 1;
    }
    cudaMemcpy(dst, b.buf[MC_RT_BUF_DST], 32, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < 32; i++) {
        int row = i / 16, col = i % 16;
        int want = col >= 4 && col < 12 ? (row + 1) * 16 + col : 0xff;
        wrong += dst[i] != want;
    }
    printf("nccl one-rank (NCCL %d): pack, ncclSend/ncclRecv to self, unpack: %s\n", version,
           wrong ? "WRONG BYTES" : "every byte correct");
    for (int i = 0; i < MC_RT_NBUFS; i++)
        cudaFree(b.buf[i]);
    ncclCommDestroy(comm);
    return wrong ? 1 : 0;
}
