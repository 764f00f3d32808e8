/* GPU check: one rank's plan through the nccl backend on a one-rank communicator. The rank packs a
 * strided box of its source (rows 1..2, columns 1..2 of a 4x4 int32 tile), sends it to itself
 * with ncclSend/ncclRecv in one group, and unpacks it into a strided box of its destination (rows
 * 0..1, columns 1..2 of a 2x4 tile). Then the lanes executor on two one-rank communicators and
 * streams of the same GPU: tree 0 (lane 0) moves source bytes 0..15 into the workspace and 16..31
 * into the destination, tree 1 (lane 1) forwards what tree 0 received, which it may only do after
 * a CUDA event of lane 0. Built and run by tests/gpu/run.sh. */
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
static const mc_rt_plan_t plan = {0, 1, 64, 32, 32, 3, 4, 1, boxes, ops, steps, NULL, NULL, NULL};

/* Two trees, two lanes: op 2 (lane 1) sends what op 1 (lane 0) received. */
static const mc_rt_box_t lboxes[] = {
    {MC_RT_BUF_SRC, 1, 0, {64}, {0}},
    {MC_RT_BUF_WS, 1, 0, {32}, {0}},
    {MC_RT_BUF_DST, 1, 0, {32}, {0}},
};
static const mc_rt_op_t lops[] = {
    {MC_RT_OP_SEND, 0, 0, 16, {0, 0}, {0, 0}},  {MC_RT_OP_RECV, 0, 0, 16, {0, 0}, {1, 0}},
    {MC_RT_OP_SEND, 0, 1, 16, {1, 0}, {0, 0}},  {MC_RT_OP_RECV, 0, 1, 16, {0, 0}, {2, 0}},
    {MC_RT_OP_SEND, 0, 0, 16, {0, 16}, {0, 0}}, {MC_RT_OP_RECV, 0, 0, 16, {0, 0}, {2, 16}},
};
static const mc_rt_step_t lsteps[] = {{0, 0, 0, 2, 0}, {1, 2, 0, 4, 0}};
static const uint32_t ldep_first[] = {0, 0, 0, 1, 1, 2, 3};
static const uint32_t ldeps[] = {1, 0, 1};
static const mc_rt_plan_t lplan = {0, 1, 64, 32, 32, 3, 6, 2, lboxes, lops, lsteps, ldep_first,
                                   ldeps, NULL};

/* The lanes check: destination bytes 0..31 must be source bytes 0..31. */
static int lanes_check(ncclComm_t c0, mc_rt_buffers_t *b)
{
    ncclComm_t comms[2] = {c0, NULL};
    cudaStream_t streams[2];
    mc_rt_err_t err;
    unsigned char dst[32];
    if (ncclCommSplit(c0, 0, 0, &comms[1], NULL) != ncclSuccess) {
        printf("nccl lanes: FAIL: ncclCommSplit\n");
        return 1;
    }
    for (int l = 0; l < 2; l++)
        cudaStreamCreateWithFlags(&streams[l], cudaStreamNonBlocking);
    cudaMemset(b->buf[MC_RT_BUF_DST], 0xff, 32);
    cudaDeviceSynchronize();
    if (mc_rt_run_nccl_lanes(&lplan, 2, comms, streams, b, NULL, &err) != MC_RT_OK ||
        mc_rt_cuda_wait(streams[0], comms[0], 0, 30, &err) != MC_RT_OK ||
        mc_rt_cuda_wait(streams[1], comms[1], 0, 30, &err) != MC_RT_OK) {
        printf("nccl lanes: FAIL: %s\n", err.msg);
        return 1;
    }
    cudaMemcpy(dst, b->buf[MC_RT_BUF_DST], 32, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < 32; i++)
        wrong += dst[i] != i;
    printf("nccl lanes: two communicators and streams, a cross-lane event: %s\n",
           wrong ? "WRONG BYTES" : "every byte correct");
    ncclCommDestroy(comms[1]);
    return wrong ? 1 : 0;
}

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
    wrong += lanes_check(comm, &b);
    for (int i = 0; i < MC_RT_NBUFS; i++)
        cudaFree(b.buf[i]);
    ncclCommDestroy(comm);
    return wrong ? 1 : 0;
}
