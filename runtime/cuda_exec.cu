/* The nccl backend on device buffers: the generic pack kernel launch, the step loop that puts
 * each micro-step's sends and receives in one NCCL group on the caller's stream, the lanes
 * executor with its bounded set-up (non-blocking communicators split from the caller's), and a
 * bounded wait. Generated code links this file (or ships it with --standalone). */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int mc_rt_copy_cuda_kernel(const mc_rt_plan_t *plan, uint32_t op, const mc_rt_buffers_t *bufs,
                           cudaStream_t stream, mc_rt_err_t *err)
{
    const mc_rt_op_t *o = &plan->ops[op];
    switch (mc_rt_copy_word(plan, o, bufs)) {
    case 16: launch_any<uint4>(plan, o, bufs, stream); break;
    case 8: launch_any<uint2>(plan, o, bufs, stream); break;
    case 4: launch_any<unsigned>(plan, o, bufs, stream); break;
    case 2: launch_any<unsigned short>(plan, o, bufs, stream); break;
    default: launch_any<unsigned char>(plan, o, bufs, stream);
    }
    cudaError_t ce = cudaGetLastError();
    if (ce != cudaSuccess)
        return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: op %u: CUDA: %s", plan->rank, op,
                          cudaGetErrorString(ce));
    return MC_RT_OK;
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
        return mc_rt_copy_cuda_kernel(plan, op, bufs, stream, err);
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

/* A send or receive as NCCL's. */
static ncclResult_t nccl_op(const mc_rt_plan_t *plan, const mc_rt_op_t *op, ncclComm_t comm,
                            const mc_rt_buffers_t *bufs, cudaStream_t stream)
{
    return op->kind == MC_RT_OP_SEND
               ? ncclSend(mc_rt_ref_ptr(plan, &op->src, bufs), op->bytes, ncclUint8, op->peer,
                          comm, stream)
               : ncclRecv(mc_rt_ref_ptr(plan, &op->dst, bufs), op->bytes, ncclUint8, op->peer,
                          comm, stream);
}

static int nccl_step(const mc_rt_plan_t *plan, const mc_rt_step_t *stp, ncclComm_t comm,
                     const mc_rt_buffers_t *bufs, cudaStream_t stream, mc_rt_err_t *err)
{
    ncclResult_t nr = ncclGroupStart();
    for (uint32_t k = 0; nr == ncclSuccess && k < stp->ncomm; k++)
        nr = nccl_op(plan, &plan->ops[stp->first + stp->npre + k], comm, bufs, stream);
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
    return mc_rt_run_nccl_traced(plan, comm, bufs, stream, copy, NULL, err);
}

int mc_rt_run_nccl_traced(const mc_rt_plan_t *plan, ncclComm_t comm, const mc_rt_buffers_t *bufs,
                          cudaStream_t stream, mc_rt_cuda_copy_fn copy, cudaEvent_t *events,
                          mc_rt_err_t *err)
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
        if (events && cudaEventRecord(events[s], stream) != cudaSuccess)
            return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d, step %u: cudaEventRecord failed",
                              plan->rank, stp->index);
    }
    return MC_RT_OK;
}

int mc_rt_cuda_wait(cudaStream_t stream, ncclComm_t comm, int rank, double timeout_s,
                    mc_rt_err_t *err)
{
    mc_rt_plan_t none;
    memset(&none, 0, sizeof none);
    none.rank = rank;
    return mc_rt_cuda_wait_steps(stream, comm, &none, NULL, timeout_s, err);
}

int mc_rt_cuda_wait_steps(cudaStream_t stream, ncclComm_t comm, const mc_rt_plan_t *plan,
                          cudaEvent_t *events, double timeout_s, mc_rt_err_t *err)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        cudaError_t ce = cudaStreamQuery(stream);
        if (ce == cudaSuccess)
            return MC_RT_OK;
        if (ce != cudaErrorNotReady)
            return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: CUDA: %s", plan->rank,
                              cudaGetErrorString(ce));
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) * 1e-9 > timeout_s)
            break;
        struct timespec nap = {0, 100000};
        nanosleep(&nap, NULL);
    }
    /* The first step whose event has not fired is where a peer went missing. */
    uint32_t s = 0;
    while (events && s < plan->nsteps && cudaEventQuery(events[s]) == cudaSuccess)
        s++;
    if (comm)
        ncclCommAbort(comm);
    if (events && s < plan->nsteps)
        return mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                          "rank %d, step %u: timed out after %.1f s waiting for the GPU (a peer "
                          "of this step did not arrive, or the device hangs)",
                          plan->rank, plan->steps[s].index, timeout_s);
    return mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                      "rank %d: timed out after %.1f s waiting for the GPU (a peer did not "
                      "arrive or the device hangs)", plan->rank, timeout_s);
}

/* Polls comm while its last call is in progress (a non-blocking communicator: NCCL finishes the
 * call in the background and no other call may be made on comm meanwhile) until deadline. */
static int nccl_settle(ncclComm_t comm, ncclResult_t nr, double deadline, double timeout_s,
                       int rank, const char *what, mc_rt_err_t *err)
{
    while (nr == ncclInProgress) {
        if (mc_rt_now() > deadline)
            return mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                              "rank %d: %s: timed out after %.1f s (a peer did not arrive)", rank,
                              what, timeout_s);
        struct timespec nap = {0, 100000};
        nanosleep(&nap, NULL);
        if (ncclCommGetAsyncError(comm, &nr) != ncclSuccess)
            nr = ncclInternalError;
    }
    if (nr != ncclSuccess)
        return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: %s: NCCL: %s", rank, what,
                          ncclGetErrorString(nr));
    return MC_RT_OK;
}

static ncclConfig_t nonblocking(void)
{
    ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
    c.blocking = 0;
    return c;
}

int mc_rt_nccl_init(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, double timeout_s,
                    mc_rt_err_t *err)
{
    ncclConfig_t c = nonblocking();
    *comm = NULL;
    ncclResult_t nr = ncclCommInitRankConfig(comm, nranks, id, rank, &c);
    int st = *comm ? nccl_settle(*comm, nr, mc_rt_now() + timeout_s, timeout_s, rank,
                                 "ncclCommInitRankConfig", err)
                   : mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: ncclCommInitRankConfig: %s",
                                rank, ncclGetErrorString(nr));
    if (st != MC_RT_OK && *comm) {
        ncclCommAbort(*comm);
        *comm = NULL;
    }
    return st;
}

void mc_rt_nccl_lanes_free(mc_rt_nccl_lanes_t *ln, int abort)
{
    for (int l = 0; l < MC_RT_MAX_LANES; l++) {
        if (ln->streams[l])
            cudaStreamDestroy(ln->streams[l]);
        if (ln->comms[l])
            (abort ? ncclCommAbort : ncclCommDestroy)(ln->comms[l]);
        ln->streams[l] = NULL;
        ln->comms[l] = NULL;
    }
    ln->nlanes = 0;
}

int mc_rt_nccl_lanes_split(ncclComm_t comm, int nlanes, double timeout_s, mc_rt_nccl_lanes_t *ln,
                           mc_rt_err_t *err)
{
    int rank = -1, st = MC_RT_OK;
    double deadline = mc_rt_now() + timeout_s;
    memset(ln, 0, sizeof *ln);
    ln->timeout_s = timeout_s;
    if (ncclCommUserRank(comm, &rank) != ncclSuccess)
        return mc_rt_fail(err, MC_RT_ERR_INVALID, "not a usable NCCL communicator");
    if (nlanes < 1 || nlanes > MC_RT_MAX_LANES)
        return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: %d lanes, expected 1 to %d", rank,
                          nlanes, MC_RT_MAX_LANES);
    /* One split at a time, in the same order on every rank, under one deadline. */
    for (int l = 0; l < nlanes && st == MC_RT_OK; l++) {
        ncclConfig_t c = nonblocking();
        ncclResult_t nr = ncclCommSplit(comm, 0, rank, &ln->comms[l], &c);
        char what[48];
        snprintf(what, sizeof what, "ncclCommSplit of lane %d", l);
        st = ln->comms[l] ? nccl_settle(ln->comms[l], nr, deadline, timeout_s, rank, what, err)
                          : mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: %s: %s", rank, what,
                                       ncclGetErrorString(nr));
        if (st == MC_RT_OK &&
            cudaStreamCreateWithFlags(&ln->streams[l], cudaStreamNonBlocking) != cudaSuccess)
            st = mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: lane %d: cannot create a stream",
                            rank, l);
        ln->nlanes = l + 1;
    }
    if (st != MC_RT_OK)
        mc_rt_nccl_lanes_free(ln, 1);
    return st;
}

/* The lanes executor's state: every op's lane and, for ops that an op of another lane waits for,
 * an event recorded after them. */
typedef struct lanes {
    uint32_t *lane;
    cudaEvent_t *ev;
} lanes_t;

/* Makes stream l wait for the events of op i's dependencies in other lanes. */
static int wait_deps(const mc_rt_plan_t *plan, const lanes_t *ln, uint32_t i, cudaStream_t stream,
                     mc_rt_err_t *err)
{
    for (uint32_t k = plan->dep_first ? plan->dep_first[i] : 0;
         plan->dep_first && k < plan->dep_first[i + 1]; k++) {
        uint32_t j = plan->deps[k];
        if (ln->lane[j] != ln->lane[i] && cudaStreamWaitEvent(stream, ln->ev[j], 0) != cudaSuccess)
            return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: op %u: cudaStreamWaitEvent failed",
                              plan->rank, i);
    }
    return MC_RT_OK;
}

static int mark(const mc_rt_plan_t *plan, const lanes_t *ln, uint32_t i, cudaStream_t stream,
                mc_rt_err_t *err)
{
    if (ln->ev[i] && cudaEventRecord(ln->ev[i], stream) != cudaSuccess)
        return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: op %u: cudaEventRecord failed",
                          plan->rank, i);
    return MC_RT_OK;
}

/* The copies of [first, first+n) in lane l. */
static int lane_copies(const mc_rt_plan_t *plan, const lanes_t *ln, uint32_t l, uint32_t first,
                       uint32_t n, const mc_rt_buffers_t *bufs, cudaStream_t stream,
                       mc_rt_cuda_copy_fn copy, mc_rt_err_t *err)
{
    int st = MC_RT_OK;
    for (uint32_t i = first; i < first + n && st == MC_RT_OK; i++)
        if (ln->lane[i] == l && (st = wait_deps(plan, ln, i, stream, err)) == MC_RT_OK &&
            (st = copy(plan, i, bufs, stream, err)) == MC_RT_OK)
            st = mark(plan, ln, i, stream, err);
    return st;
}

/* The sends and receives of step stp in lane l: one NCCL group (on a non-blocking communicator
 * it may still be connecting to a new peer when ncclGroupEnd returns: waited for until deadline). */
static int lane_comm(const mc_rt_plan_t *plan, const lanes_t *ln, uint32_t l,
                     const mc_rt_step_t *stp, const mc_rt_nccl_lanes_t *lanes, double deadline,
                     const mc_rt_buffers_t *bufs, mc_rt_err_t *err)
{
    ncclComm_t comm = lanes->comms[l];
    cudaStream_t stream = lanes->streams[l];
    uint32_t first = stp->first + stp->npre, end = first + stp->ncomm, n = 0;
    int st = MC_RT_OK;
    for (uint32_t i = first; i < end && st == MC_RT_OK; i++)
        if (ln->lane[i] == l) {
            st = wait_deps(plan, ln, i, stream, err);
            n++;
        }
    if (st != MC_RT_OK || !n)
        return st;
    ncclResult_t nr = ncclGroupStart();
    for (uint32_t i = first; nr == ncclSuccess && i < end; i++)
        if (ln->lane[i] == l)
            nr = nccl_op(plan, &plan->ops[i], comm, bufs, stream);
    ncclResult_t ne = ncclGroupEnd();
    nr = nr != ncclSuccess ? nr : ne;
    char what[48];
    snprintf(what, sizeof what, "step %u, lane %u", stp->index, l);
    if ((st = nccl_settle(comm, nr, deadline, lanes->timeout_s, plan->rank, what, err)) !=
        MC_RT_OK)
        return st;
    for (uint32_t i = first; i < end && st == MC_RT_OK; i++)
        if (ln->lane[i] == l)
            st = mark(plan, ln, i, stream, err);
    return st;
}

/* Creates an event after every op that an op of another lane waits for. */
static int lane_events(const mc_rt_plan_t *plan, lanes_t *ln, mc_rt_err_t *err)
{
    for (uint32_t i = 0; plan->dep_first && i < plan->nops; i++)
        for (uint32_t k = plan->dep_first[i]; k < plan->dep_first[i + 1]; k++) {
            uint32_t j = plan->deps[k];
            if (ln->lane[j] == ln->lane[i] || ln->ev[j])
                continue;
            if (cudaEventCreateWithFlags(&ln->ev[j], cudaEventDisableTiming) != cudaSuccess) {
                ln->ev[j] = NULL;
                return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: cannot create CUDA events",
                                  plan->rank);
            }
        }
    return MC_RT_OK;
}

/* Makes every lane's stream wait for what is enqueued on `from` (from NULL: stream waits for
 * every lane's), through one event per stream that waits. */
static int fork_join(const mc_rt_plan_t *plan, const mc_rt_nccl_lanes_t *ln, cudaStream_t stream,
                     int fork, mc_rt_err_t *err)
{
    cudaError_t ce = cudaSuccess;
    for (int l = 0; l < (fork ? 1 : ln->nlanes) && ce == cudaSuccess; l++) {
        cudaEvent_t ev;
        if ((ce = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming)) != cudaSuccess)
            break;
        ce = cudaEventRecord(ev, fork ? stream : ln->streams[l]);
        for (int k = 0; fork && k < ln->nlanes && ce == cudaSuccess; k++)
            ce = cudaStreamWaitEvent(ln->streams[k], ev, 0);
        if (!fork && ce == cudaSuccess)
            ce = cudaStreamWaitEvent(stream, ev, 0);
        cudaEventDestroy(ev);
    }
    if (ce != cudaSuccess)
        return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: lanes %s the caller's stream: %s",
                          plan->rank, fork ? "after" : "joining", cudaGetErrorString(ce));
    return MC_RT_OK;
}

int mc_rt_run_nccl_lanes(const mc_rt_plan_t *plan, const mc_rt_nccl_lanes_t *lanes,
                         const mc_rt_buffers_t *bufs, mc_rt_cuda_copy_fn copy,
                         cudaStream_t stream, mc_rt_err_t *err)
{
    int st = MC_RT_OK;
    uint32_t nlanes = (uint32_t)lanes->nlanes;
    double deadline = mc_rt_now() + lanes->timeout_s;
    lanes_t ln;
    ln.lane = (uint32_t *)calloc(plan->nops + 1, sizeof *ln.lane);
    ln.ev = (cudaEvent_t *)calloc(plan->nops + 1, sizeof *ln.ev);
    if (!ln.lane || !ln.ev) {
        st = mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: out of memory", plan->rank);
        goto out;
    }
    if (nlanes < mc_rt_plan_lanes(plan) || nlanes > MC_RT_MAX_LANES) {
        st = mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: %u lanes, the plan needs %u",
                        plan->rank, nlanes, mc_rt_plan_lanes(plan));
        goto out;
    }
    for (uint32_t l = 0; l < nlanes; l++) {
        int nranks = 0, rank = -1;
        if (ncclCommCount(lanes->comms[l], &nranks) != ncclSuccess ||
            ncclCommUserRank(lanes->comms[l], &rank) != ncclSuccess || nranks != plan->nranks ||
            rank != plan->rank) {
            st = mc_rt_fail(err, MC_RT_ERR_INVALID,
                            "rank %d: lane %u's communicator is not rank %d of %d", plan->rank, l,
                            plan->rank, plan->nranks);
            goto out;
        }
    }
    if ((st = mc_rt_plan_check(plan, err)) != MC_RT_OK ||
        (st = mc_rt_buffers_check(plan, bufs, err)) != MC_RT_OK)
        goto out;
    mc_rt_op_lanes(plan, nlanes, ln.lane);
    if ((st = lane_events(plan, &ln, err)) != MC_RT_OK ||
        (st = fork_join(plan, lanes, stream, 1, err)) != MC_RT_OK)
        goto out;
    copy = copy ? copy : mc_rt_copy_cuda;
    for (uint32_t s = 0; s < plan->nsteps && st == MC_RT_OK; s++) {
        const mc_rt_step_t *stp = &plan->steps[s];
        for (uint32_t l = 0; l < nlanes && st == MC_RT_OK; l++)
            if ((st = lane_copies(plan, &ln, l, stp->first, stp->npre, bufs, lanes->streams[l],
                                  copy, err)) == MC_RT_OK &&
                (st = lane_comm(plan, &ln, l, stp, lanes, deadline, bufs, err)) == MC_RT_OK)
                st = lane_copies(plan, &ln, l, stp->first + stp->npre + stp->ncomm, stp->npost,
                                 bufs, lanes->streams[l], copy, err);
    }
    if (st == MC_RT_OK)
        st = fork_join(plan, lanes, stream, 0, err);
out:
    /* Destroying an event that a stream still has to record is allowed: CUDA releases it after. */
    for (uint32_t i = 0; ln.ev && i < plan->nops; i++)
        if (ln.ev[i])
            cudaEventDestroy(ln.ev[i]);
    free(ln.lane);
    free(ln.ev);
    return st;
}
