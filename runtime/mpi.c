/* The mpi backend: one rank's plan on host buffers with MPI_Isend/MPI_Irecv, one wait per
 * micro-step. The wait polls MPI_Testall against a deadline instead of blocking in MPI_Waitall,
 * so a peer that never arrives ends the run with an error naming the rank and the step. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#include "rt_internal.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int check_comm(const mc_rt_plan_t *plan, MPI_Comm comm, mc_rt_err_t *err)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (size != plan->nranks || rank != plan->rank)
        return mc_rt_fail(err, MC_RT_ERR_INVALID,
                          "rank %d of %d: the plan is for rank %d of %d ranks; start %d ranks", rank,
                          size, plan->rank, plan->nranks, plan->nranks);
    for (uint32_t i = 0; i < plan->nops; i++)
        if (plan->ops[i].kind != MC_RT_OP_COPY && plan->ops[i].bytes > INT_MAX)
            return mc_rt_fail(err, MC_RT_ERR_UNSUPPORTED,
                              "rank %d: op %u moves %llu bytes, more than one MPI message holds",
                              rank, i, (unsigned long long)plan->ops[i].bytes);
    return MC_RT_OK;
}

/* Names the first request still pending after the deadline. */
static int timed_out(const mc_rt_plan_t *plan, const mc_rt_step_t *st, MPI_Request *reqs,
                     double timeout_s, mc_rt_err_t *err)
{
    for (uint32_t k = 0; k < st->ncomm; k++) {
        int done = 0;
        if (reqs[k] != MPI_REQUEST_NULL)
            MPI_Test(&reqs[k], &done, MPI_STATUS_IGNORE);
        if (reqs[k] == MPI_REQUEST_NULL || done)
            continue;
        const mc_rt_op_t *op = &plan->ops[st->first + st->npre + k];
        return mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                          "rank %d, step %u: timed out after %.1f s waiting for the %s of %llu "
                          "bytes (tag %d) %s rank %d",
                          plan->rank, st->index, timeout_s,
                          op->kind == MC_RT_OP_SEND ? "send" : "receive",
                          (unsigned long long)op->bytes, op->tag,
                          op->kind == MC_RT_OP_SEND ? "to" : "from", op->peer);
    }
    return MC_RT_OK;
}

static int exchange(const mc_rt_plan_t *plan, const mc_rt_step_t *st, MPI_Comm comm,
                    const mc_rt_buffers_t *bufs, MPI_Request *reqs, double timeout_s,
                    mc_rt_err_t *err)
{
    for (uint32_t k = 0; k < st->ncomm; k++) {
        const mc_rt_op_t *op = &plan->ops[st->first + st->npre + k];
        int rc = op->kind == MC_RT_OP_RECV
                     ? MPI_Irecv(mc_rt_ref_ptr(plan, &op->dst, bufs), (int)op->bytes, MPI_BYTE,
                                 op->peer, op->tag, comm, &reqs[k])
                     : MPI_Isend(mc_rt_ref_ptr(plan, &op->src, bufs), (int)op->bytes, MPI_BYTE,
                                 op->peer, op->tag, comm, &reqs[k]);
        if (rc != MPI_SUCCESS)
            return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d, step %u: MPI error %d posting op %u",
                              plan->rank, st->index, rc, st->first + st->npre + k);
    }
    double deadline = now_s() + timeout_s;
    for (;;) {
        int done = 0;
        MPI_Testall((int)st->ncomm, reqs, &done, MPI_STATUSES_IGNORE);
        if (done)
            return MC_RT_OK;
        if (now_s() > deadline)
            return timed_out(plan, st, reqs, timeout_s, err);
        /* Ranks share few cores when oversubscribed: give the peers the CPU. */
        struct timespec nap = {0, 20000};
        nanosleep(&nap, NULL);
    }
}

int mc_rt_run_mpi(const mc_rt_plan_t *plan, MPI_Comm comm, const mc_rt_buffers_t *bufs,
                  double timeout_s, mc_rt_err_t *err)
{
    int st;
    MPI_Request *reqs = NULL;
    if ((st = check_comm(plan, comm, err)) != MC_RT_OK ||
        (st = mc_rt_plan_check(plan, err)) != MC_RT_OK ||
        (st = mc_rt_buffers_check(plan, bufs, err)) != MC_RT_OK)
        goto out;
    uint32_t maxcomm = 1;
    for (uint32_t s = 0; s < plan->nsteps; s++)
        maxcomm = plan->steps[s].ncomm > maxcomm ? plan->steps[s].ncomm : maxcomm;
    if (!(reqs = malloc(maxcomm * sizeof *reqs))) {
        st = mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: out of memory", plan->rank);
        goto out;
    }
    for (uint32_t s = 0; s < plan->nsteps; s++) {
        const mc_rt_step_t *stp = &plan->steps[s];
        for (uint32_t i = stp->first; i < stp->first + stp->npre; i++)
            mc_rt_copy_host(plan, &plan->ops[i], bufs);
        if (stp->ncomm && (st = exchange(plan, stp, comm, bufs, reqs, timeout_s, err)) != MC_RT_OK)
            goto out;
        for (uint32_t i = stp->first + stp->npre + stp->ncomm;
             i < stp->first + stp->npre + stp->ncomm + stp->npost; i++)
            mc_rt_copy_host(plan, &plan->ops[i], bufs);
    }
out:
    free(reqs);
    return st;
}
