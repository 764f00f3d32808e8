/* The nccl backend on device buffers: the generic pack kernel launch, the step loop that puts
 * each micro-step's sends and receives in one NCCL group on the caller's stream, and a bounded
 * wait. Generated code links this file (or ships it with --standalone). */
#include <cuda_runtime.h>
#include <nccl.h>
#include <time.h>

#include "copy_kernel.cuh"
#include "rt_internal.h"

int mc_rt_cuda_devices(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : (cudaGetLastError(), 0);
}

/* Any box: the dimension counts are read from the boxes, only 1 (contiguous) is specialized. */
template <typename W>
static void launch_any(const mc_rt_plan_t *plan, const mc_rt_op_t *o, const mc_rt_buffers_t *bufs,
                       cudaStream_t stream)
{
    if (plan->boxes[o->src.box].ndims == 1)
        mc_rt_launch_copy<W, 1, 0>(plan, o, bufs, stream);
    else if (plan->boxes[o->dst.box].ndims == 1)
        mc_rt_launch_copy<W, 0, 1>(plan, o, bufs, stream);
    else
        mc_rt_launch_copy<W, 0, 0>(plan, o, bufs, stream);
}

int mc_rt_copy_cuda(const mc_rt_plan_t *plan, uint32_t op, const mc_rt_buffers_t *bufs,
                    cudaStream_t stream, mc_rt_err_t *err)
{
    const mc_rt_op_t *o = &plan->ops[op];
    cudaError_t ce = cudaSuccess;
    mc_rt_rows_t rows;
    if (mc_rt_copy_contiguous(plan, o)) {
        /* The copy engine does it without SMs. */
        ce = cudaMemcpyAsync(mc_rt_ref_ptr(plan, &o->dst, bufs), mc_rt_ref_ptr(plan, &o->src, bufs),
                             o->bytes, cudaMemcpyDeviceToDevice, stream);
    } else if (mc_rt_copy_rows(plan, o, MC_RT_COPY_ENGINE_MIN_RUN, &rows)) {
        /* Wide runs: pitched copies on the copy engine, again without SMs. */
        const unsigned char *s = (const unsigned char *)bufs->buf[plan->boxes[o->src.box].buf];
        unsigned char *d = (unsigned char *)bufs->buf[plan->boxes[o->dst.box].buf];
        for (int k = 0; k < rows.n && ce == cudaSuccess; k++)
            ce = cudaMemcpy2DAsync(d + rows.part[k].dst, rows.part[k].dpitch, s + rows.part[k].src,
                                   rows.part[k].spitch, rows.part[k].width, rows.part[k].height,
                                   cudaMemcpyDeviceToDevice, stream);
    } else {
        switch (mc_rt_copy_word(plan, o, bufs)) {
        case 16: launch_any<uint4>(plan, o, bufs, stream); break;
        case 8: launch_any<uint2>(plan, o, bufs, stream); break;
        case 4: launch_any<unsigned>(plan, o, bufs, stream); break;
        case 2: launch_any<unsigned short>(plan, o, bufs, stream); break;
        default: launch_any<unsigned char>(plan, o, bufs, stream);
        }
        ce = cudaGetLastError();
    }
    if (ce != cudaSuccess)
        return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: op %u: CUDA: %s", plan->rank, op,
                          cudaGetErrorString(ce));
    return MC_RT_OK;
}

static int run_copies(const mc_rt_plan_t *plan, uint32_t first, uint32_t n,
                      const mc_rt_buffers_t *bufs, cudaStream_t stream, mc_rt_cuda_copy_fn copy,
                      mc_rt_err_t *err)
{
    int st = MC_RT_OK;
    for (uint32_t i = first; i < first + n && st == MC_RT_OK; i++)
        st = copy(plan, i, bufs, stream, err);
    return st;
}

static int nccl_step(const mc_rt_plan_t *plan, const mc_rt_step_t *stp, ncclComm_t comm,
                     const mc_rt_buffers_t *bufs, cudaStream_t stream, mc_rt_err_t *err)
{
    ncclResult_t nr = ncclGroupStart();
    for (uint32_t k = 0; nr == ncclSuccess && k < stp->ncomm; k++) {
        const mc_rt_op_t *op = &plan->ops[stp->first + stp->npre + k];
        nr = op->kind == MC_RT_OP_SEND
                 ? ncclSend(mc_rt_ref_ptr(plan, &op->src, bufs), op->bytes, ncclUint8, op->peer,
                            comm, stream)
                 : ncclRecv(mc_rt_ref_ptr(plan, &op->dst, bufs), op->bytes, ncclUint8, op->peer,
                            comm, stream);
    }
    ncclResult_t ne = ncclGroupEnd();
    nr = nr != ncclSuccess ? nr : ne;
    if (nr != ncclSuccess)
        return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d, step %u: NCCL: %s", plan->rank,
                          stp->index, ncclGetErrorString(nr));
    return MC_RT_OK;
}

int mc_rt_run_nccl(const mc_rt_plan_t *plan, ncclComm_t comm, const mc_rt_buffers_t *bufs,
                   cudaStream_t stream, mc_rt_cuda_copy_fn copy, mc_rt_err_t *err)
{
    int st, nranks = 0, rank = -1;
    if (ncclCommCount(comm, &nranks) != ncclSuccess || ncclCommUserRank(comm, &rank) != ncclSuccess)
        return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: not a usable NCCL communicator",
                          plan->rank);
    if (nranks != plan->nranks || rank != plan->rank)
        return mc_rt_fail(err, MC_RT_ERR_INVALID,
                          "rank %d of %d: the plan is for rank %d of %d ranks", rank, nranks,
                          plan->rank, plan->nranks);
    if ((st = mc_rt_plan_check(plan, err)) != MC_RT_OK ||
        (st = mc_rt_buffers_check(plan, bufs, err)) != MC_RT_OK)
        return st;
    copy = copy ? copy : mc_rt_copy_cuda;
    for (uint32_t s = 0; s < plan->nsteps; s++) {
        const mc_rt_step_t *stp = &plan->steps[s];
        if ((st = run_copies(plan, stp->first, stp->npre, bufs, stream, copy, err)) != MC_RT_OK ||
            (stp->ncomm && (st = nccl_step(plan, stp, comm, bufs, stream, err)) != MC_RT_OK) ||
            (st = run_copies(plan, stp->first + stp->npre + stp->ncomm, stp->npost, bufs, stream,
                             copy, err)) != MC_RT_OK)
            return st;
    }
    return MC_RT_OK;
}

int mc_rt_cuda_wait(cudaStream_t stream, ncclComm_t comm, int rank, double timeout_s,
                    mc_rt_err_t *err)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        cudaError_t ce = cudaStreamQuery(stream);
        if (ce == cudaSuccess)
            return MC_RT_OK;
        if (ce != cudaErrorNotReady)
            return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: CUDA: %s", rank,
                              cudaGetErrorString(ce));
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) * 1e-9 > timeout_s) {
            if (comm)
                ncclCommAbort(comm);
            return mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                              "rank %d: timed out after %.1f s waiting for the GPU (a peer did not "
                              "arrive or the device hangs)", rank, timeout_s);
        }
        struct timespec nap = {0, 100000};
        nanosleep(&nap, NULL);
    }
}
