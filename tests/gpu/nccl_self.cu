/* GPU check: one rank's plan through the nccl backend on a one-rank communicator. The rank packs a
 * strided box of its source (rows 1..2, columns 1..2 of a 4x4 int32 tile), sends it to itself
 * with ncclSend/ncclRecv in one group, and unpacks it into a strided box of its destination (rows
 * 0..1, columns 1..2 of a 2x4 tile). Then the lanes executor on two one-rank communicators and
 * streams of the same GPU: tree 0 (lane 0) moves source bytes 0..15 into the workspace and 16..31
 * into the destination, tree 1 (lane 1) forwards what tree 0 received, which it may only do after
 * a CUDA event of lane 0; the lanes are split from the first communicator without blocking, start
 * after and end before work on the caller's stream. Last, a communicator whose second rank never
 * comes must fail within its set-up timeout. Built and run by tests/gpu/run.sh. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

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
static const mc_rt_plan_t plan = {0, 1, 64, 32, 32, 3, 4, 1, boxes, ops, steps, NULL, NULL, NULL, 0};

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
                                   ldeps, NULL, 2};

/* The lanes check: two lanes split from c0 (non-blocking, bounded), started after and joined into
 * the caller's stream; destination bytes 0..31 must be source bytes 0..31. */
static int lanes_check(ncclComm_t c0, cudaStream_t stream, mc_rt_buffers_t *b)
{
    mc_rt_nccl_lanes_t ln;
    mc_rt_err_t err;
    unsigned char dst[32];
    if (mc_rt_nccl_lanes_split(c0, 2, 30, &ln, &err) != MC_RT_OK) {
        printf("nccl lanes: FAIL: %s\n", err.msg);
        return 1;
    }
    cudaMemsetAsync(b->buf[MC_RT_BUF_DST], 0xff, 32, stream);
    if (mc_rt_run_nccl_lanes(&lplan, &ln, b, NULL, stream, &err) != MC_RT_OK ||
        mc_rt_cuda_wait(stream, NULL, 0, 30, &err) != MC_RT_OK) {
        printf("nccl lanes: FAIL: %s\n", err.msg);
        mc_rt_nccl_lanes_free(&ln, 1);
        return 1;
    }
    cudaMemcpy(dst, b->buf[MC_RT_BUF_DST], 32, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < 32; i++)
        wrong += dst[i] != i;
    printf("nccl lanes: two split communicators and streams, a cross-lane event: %s\n",
           wrong ? "WRONG BYTES" : "every byte correct");
    mc_rt_nccl_lanes_free(&ln, 0);
    return wrong ? 1 : 0;
}

/* The set-up bound: rank 0 of a two-rank communicator whose rank 1 never comes must fail within
 * the timeout (3 s) plus a second, naming the rank. */
static int setup_timeout_check(void)
{
    ncclUniqueId id;
    ncclComm_t c;
    mc_rt_err_t err;
    if (ncclGetUniqueId(&id) != ncclSuccess) {
        printf("nccl set-up bound: FAIL: ncclGetUniqueId\n");
        return 1;
    }
    double t0 = mc_rt_now();
    int st = mc_rt_nccl_init(&c, 2, id, 0, 3.0, &err);
    double t = mc_rt_now() - t0;
    int ok = st == MC_RT_ERR_TIMEOUT && t < 4.0 && strstr(err.msg, "rank 0: ");
    printf("nccl set-up bound: a missing peer ends the init after %.1f s: %s (%s)\n", t,
           ok ? "ok" : "FAIL", st == MC_RT_OK ? "it succeeded" : err.msg);
    if (st == MC_RT_OK)
        ncclCommDestroy(c);
    return ok ? 0 : 1;
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
    wrong += lanes_check(comm, stream, &b);
    wrong += setup_timeout_check();
    for (int i = 0; i < MC_RT_NBUFS; i++)
        cudaFree(b.buf[i]);
    ncclCommDestroy(comm);
    return wrong ? 1 : 0;
}
