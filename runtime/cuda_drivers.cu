/* Drivers that run plans on a GPU from host buffers, for `meshcast run` and tests/gpu: the GPU
 * loopback (every virtual rank's buffers on one device), the nccl backend bootstrapped through
 * MPI, and the pack-kernel timing against cudaMemcpyAsync. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_internal.h"

#define CU(call)                                                                              \
    do {                                                                                      \
        cudaError_t ce_ = (call);                                                             \
        if (ce_ != cudaSuccess) {                                                             \
            st = mc_rt_fail(err, MC_RT_ERR_RUNTIME, "%s:%d: %s: %s", __FILE__, __LINE__, #call, \
                            cudaGetErrorString(ce_));                                         \
            goto out;                                                                         \
        }                                                                                     \
    } while (0)

static int need_gpu(mc_rt_err_t *err)
{
    return mc_rt_cuda_devices() > 0
               ? MC_RT_OK
               : mc_rt_fail(err, MC_RT_ERR_UNSUPPORTED, "no CUDA device on this machine");
}

/* Device copies of host buffers (NULL host pointers leave the device buffer uninitialized). */
static int to_device(const mc_rt_buffers_t *h, mc_rt_buffers_t *d, cudaStream_t stream,
                     mc_rt_err_t *err)
{
    int st = MC_RT_OK;
    memset(d, 0, sizeof *d);
    for (int b = 0; b < MC_RT_NBUFS; b++) {
        d->bytes[b] = h->bytes[b];
        CU(cudaMalloc(&d->buf[b], h->bytes[b] ? h->bytes[b] : 1));
        if (h->buf[b] && h->bytes[b])
            CU(cudaMemcpyAsync(d->buf[b], h->buf[b], h->bytes[b], cudaMemcpyHostToDevice, stream));
    }
out:
    return st;
}

static void free_device(mc_rt_buffers_t *d)
{
    for (int b = 0; b < MC_RT_NBUFS; b++)
        cudaFree(d->buf[b]);
}

/* A stream and two events for timing, made and destroyed together. */
typedef struct timing {
    cudaStream_t stream;
    cudaEvent_t e0, e1;
} timing_t;

static int timing_new(timing_t *t, mc_rt_err_t *err)
{
    int st = MC_RT_OK;
    memset(t, 0, sizeof *t);
    CU(cudaSetDevice(0));
    CU(cudaStreamCreate(&t->stream));
    CU(cudaEventCreate(&t->e0));
    CU(cudaEventCreate(&t->e1));
out:
    return st;
}

static void timing_free(timing_t *t)
{
    if (t->e0)
        cudaEventDestroy(t->e0);
    if (t->e1)
        cudaEventDestroy(t->e1);
    if (t->stream)
        cudaStreamDestroy(t->stream);
}

static int gpu_copy(void *ctx, const mc_rt_plan_t *plan, const mc_rt_op_t *op,
                    const mc_rt_buffers_t *bufs, mc_rt_err_t *err)
{
    return mc_rt_copy_cuda(plan, (uint32_t)(op - plan->ops), bufs, *(cudaStream_t *)ctx, err);
}

static int gpu_move(void *ctx, void *dst, const void *src, uint64_t bytes, mc_rt_err_t *err)
{
    cudaError_t ce = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                     *(cudaStream_t *)ctx);
    return ce == cudaSuccess ? MC_RT_OK
                             : mc_rt_fail(err, MC_RT_ERR_RUNTIME, "loopback: CUDA: %s",
                                          cudaGetErrorString(ce));
}

int mc_rt_run_loopback_gpu(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                           double *seconds, mc_rt_err_t *err)
{
    int st = need_gpu(err);
    timing_t t;
    float ms = 0;
    mc_rt_buffers_t *dev = (mc_rt_buffers_t *)calloc(nranks > 0 ? nranks : 1, sizeof *dev);
    mc_rt_mover_t mv = {gpu_copy, gpu_move, &t.stream};
    memset(&t, 0, sizeof t);
    if (st != MC_RT_OK || !dev || (st = timing_new(&t, err)) != MC_RT_OK)
        goto out;
    for (int r = 0; r < nranks; r++)
        if ((st = to_device(&bufs[r], &dev[r], t.stream, err)) != MC_RT_OK)
            goto out;
    CU(cudaEventRecord(t.e0, t.stream));
    if ((st = mc_rt_loopback_exec(nranks, plans, dev, &mv, MC_RT_ORDER_DEPS, 0, err)) != MC_RT_OK)
        goto out;
    CU(cudaEventRecord(t.e1, t.stream));
    CU(cudaStreamSynchronize(t.stream));
    CU(cudaEventElapsedTime(&ms, t.e0, t.e1));
    *seconds = ms * 1e-3;
    for (int r = 0; r < nranks; r++)
        CU(cudaMemcpy(bufs[r].buf[MC_RT_BUF_DST], dev[r].buf[MC_RT_BUF_DST],
                      bufs[r].bytes[MC_RT_BUF_DST], cudaMemcpyDeviceToHost));
out:
    for (int r = 0; dev && r < nranks; r++)
        free_device(&dev[r]);
    free(dev);
    timing_free(&t);
    return st;
}

/* One timed run of op: 0 as the runtime does it, 1 the pack kernel, 2 a plain memcpy of its
 * bytes. */
static int time_copy(const mc_rt_plan_t *plan, uint32_t op, const mc_rt_buffers_t *d, timing_t *t,
                     int how, double *best, mc_rt_err_t *err)
{
    int st = MC_RT_OK;
    float ms = 0;
    CU(cudaEventRecord(t->e0, t->stream));
    if (how == 0)
        st = mc_rt_copy_cuda(plan, op, d, t->stream, err);
    else if (how == 1)
        st = mc_rt_copy_cuda_kernel(plan, op, d, t->stream, err);
    else
        CU(cudaMemcpyAsync(d->buf[MC_RT_BUF_WS], d->buf[MC_RT_BUF_SRC], plan->ops[op].bytes,
                           cudaMemcpyDeviceToDevice, t->stream));
    if (st != MC_RT_OK)
        goto out;
    CU(cudaEventRecord(t->e1, t->stream));
    CU(cudaEventSynchronize(t->e1));
    CU(cudaEventElapsedTime(&ms, t->e0, t->e1));
    *best = ms * 1e-3 < *best ? ms * 1e-3 : *best;
out:
    return st;
}

int mc_rt_cuda_bench_copy(const mc_rt_plan_t *plan, uint32_t op, int iters, double *runtime_s,
                          double *kernel_s, double *memcpy_s, mc_rt_err_t *err)
{
    int st = need_gpu(err);
    mc_rt_buffers_t h, d;
    timing_t t;
    const mc_rt_op_t *o = &plan->ops[op];
    double *best[3] = {runtime_s, kernel_s, memcpy_s}, warm;
    memset(&h, 0, sizeof h);
    memset(&d, 0, sizeof d);
    memset(&t, 0, sizeof t);
    /* The baseline copies the op's bytes from SRC to WS, so both hold at least that much. */
    h.bytes[MC_RT_BUF_SRC] = plan->src_bytes > o->bytes ? plan->src_bytes : o->bytes;
    h.bytes[MC_RT_BUF_DST] = plan->dst_bytes;
    h.bytes[MC_RT_BUF_WS] = plan->ws_bytes > o->bytes ? plan->ws_bytes : o->bytes;
    *runtime_s = *kernel_s = *memcpy_s = 1e30;
    if (st != MC_RT_OK || (st = timing_new(&t, err)) != MC_RT_OK ||
        (st = to_device(&h, &d, t.stream, err)) != MC_RT_OK)
        goto out;
    for (int i = 0; i <= iters; i++) /* run 0 warms up */
        for (int how = 0; how < 3; how++)
            if ((st = time_copy(plan, op, &d, &t, how, i ? best[how] : &warm, err)) != MC_RT_OK)
                goto out;
out:
    free_device(&d);
    timing_free(&t);
    return st;
}

/* The rank's index among the ranks on its host, to pick its GPU. */
static int local_rank(MPI_Comm comm)
{
    MPI_Comm local;
    int r = 0;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &r);
    MPI_Comm_free(&local);
    return r;
}

/* Waits for stream (which joins every lane) with a deadline; on a timeout the lanes are aborted. */
static int wait_lanes(int rank, mc_rt_nccl_lanes_t *ln, cudaStream_t stream, double timeout_s,
                      mc_rt_err_t *err)
{
    int st = mc_rt_cuda_wait(stream, NULL, rank, timeout_s, err);
    if (st == MC_RT_ERR_TIMEOUT)
        mc_rt_nccl_lanes_free(ln, 1);
    return st;
}

int mc_rt_run_nccl_mpi(const mc_rt_plan_t *plan, MPI_Comm comm, const mc_rt_buffers_t *bufs,
                       double timeout_s, double *seconds, mc_rt_err_t *err)
{
    int st = need_gpu(err);
    /* every rank's lane count, as its maximum and minus its minimum: they must agree */
    double in[2] = {(double)mc_rt_plan_lanes(plan), -(double)mc_rt_plan_lanes(plan)};
    double bad = st != MC_RT_OK, any_bad, unused[2], lanes[2];
    ncclUniqueId id;
    ncclComm_t parent = NULL;
    mc_rt_nccl_lanes_t ln;
    cudaStream_t stream = NULL;
    mc_rt_buffers_t dev;
    double t0;
    memset(&dev, 0, sizeof dev);
    memset(&ln, 0, sizeof ln);
    /* Every rank must agree before any of them enters the collective NCCL init; the gates, the
     * broadcast and NCCL's set-up (non-blocking, polled) are all bounded by timeout_s. */
    if (mc_rt_mpi_gate(comm, "nccl set-up", 1, &bad, unused, &any_bad, timeout_s, err) !=
            MC_RT_OK ||
        mc_rt_mpi_gate(comm, "nccl lanes", 2, in, unused, lanes, timeout_s, err) != MC_RT_OK)
        return MC_RT_ERR_TIMEOUT;
    if (any_bad > 0) {
        if (st == MC_RT_OK)
            st = mc_rt_fail(err, MC_RT_ERR_UNSUPPORTED, "rank %d: another rank has no GPU",
                            plan->rank);
        goto out;
    }
    if (lanes[0] != -lanes[1]) {
        st = mc_rt_fail(err, MC_RT_ERR_INVALID,
                        "rank %d: the ranks' plans have from %.0f to %.0f lanes: not one schedule",
                        plan->rank, -lanes[1], lanes[0]);
        goto out;
    }
    CU(cudaSetDevice(local_rank(comm) % mc_rt_cuda_devices()));
    if (plan->rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
        memset(&id, 0, sizeof id);
    if ((st = mc_rt_mpi_bcast(comm, "nccl set-up", &id, sizeof id, timeout_s, err)) != MC_RT_OK ||
        (st = mc_rt_nccl_init(&parent, plan->nranks, id, plan->rank, timeout_s, err)) !=
            MC_RT_OK ||
        (st = mc_rt_nccl_lanes_split(parent, (int)mc_rt_plan_lanes(plan), timeout_s, &ln, err)) !=
            MC_RT_OK)
        goto out;
    CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if ((st = to_device(bufs, &dev, stream, err)) != MC_RT_OK)
        goto out;
    CU(cudaStreamSynchronize(stream));
    bad = 0;
    if ((st = mc_rt_mpi_gate(comm, "nccl start", 1, &bad, unused, &any_bad, timeout_s, err)) !=
        MC_RT_OK)
        goto out;
    t0 = MPI_Wtime();
    if ((st = mc_rt_run_nccl_lanes(plan, &ln, &dev, NULL, stream, err)) != MC_RT_OK ||
        (st = wait_lanes(plan->rank, &ln, stream, timeout_s, err)) != MC_RT_OK)
        goto out;
    *seconds = MPI_Wtime() - t0;
    CU(cudaMemcpy(bufs->buf[MC_RT_BUF_DST], dev.buf[MC_RT_BUF_DST], bufs->bytes[MC_RT_BUF_DST],
                  cudaMemcpyDeviceToHost));
out:
    /* After any failure a peer may never come: the communicators are aborted, not destroyed
     * (which waits for their work), and before the device memory is freed (cudaFree waits for
     * the device, whose NCCL kernels may wait for that peer). */
    if (stream)
        cudaStreamDestroy(stream);
    mc_rt_nccl_lanes_free(&ln, st != MC_RT_OK);
    if (parent)
        (st != MC_RT_OK ? ncclCommAbort : ncclCommDestroy)(parent);
    free_device(&dev);
    return st;
}
