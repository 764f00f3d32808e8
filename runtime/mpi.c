/* The mpi backend: one rank's plan on host buffers with MPI_Isend/MPI_Irecv, in the order of its
 * dependency graph: every op starts as soon as the ops it waits for are done (copies run at once,
 * sends and receives are posted), and one MPI_Testsome loop progresses what is posted. The loop
 * never blocks in MPI: when nothing completes for timeout_s seconds the run fails naming the rank,
 * the step and the oldest op still pending, so a peer that never arrives ends the run. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#include "rt_internal.h"

static int check_comm(const mc_rt_plan_t *plan, MPI_Comm comm, mc_rt_err_t *err)
{
    int rank, size, sync_tag = mc_rt_mpi_sync_tag(comm);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (size != plan->nranks || rank != plan->rank)
        return mc_rt_fail(err, MC_RT_ERR_INVALID,
                          "rank %d of %d: the plan is for rank %d of %d ranks; start %d ranks", rank,
                          size, plan->rank, plan->nranks, plan->nranks);
    for (uint32_t i = 0; i < plan->nops; i++) {
        const mc_rt_op_t *op = &plan->ops[i];
        if (op->kind == MC_RT_OP_COPY)
            continue;
        if (op->bytes > INT_MAX)
            return mc_rt_fail(err, MC_RT_ERR_UNSUPPORTED,
                              "rank %d: op %u moves %llu bytes, more than one MPI message holds",
                              rank, i, (unsigned long long)op->bytes);
        if (op->tag < 0 || op->tag >= sync_tag)
            return mc_rt_fail(err, MC_RT_ERR_UNSUPPORTED,
                              "rank %d: op %u has tag %d, beyond this MPI's tags 0..%d", rank, i,
                              op->tag, sync_tag - 1);
    }
    return MC_RT_OK;
}

/* The requests in flight and the ops they belong to. */
typedef struct inflight {
    MPI_Request *req;
    uint32_t *op;
    int *idx;
    int n;
} inflight_t;

static int post(const mc_rt_plan_t *plan, uint32_t i, MPI_Comm comm, const mc_rt_buffers_t *bufs,
                inflight_t *f, mc_rt_err_t *err)
{
    const mc_rt_op_t *op = &plan->ops[i];
    int rc = op->kind == MC_RT_OP_RECV
                 ? MPI_Irecv(mc_rt_ref_ptr(plan, &op->dst, bufs), (int)op->bytes, MPI_BYTE,
                             op->peer, op->tag, comm, &f->req[f->n])
                 : MPI_Isend(mc_rt_ref_ptr(plan, &op->src, bufs), (int)op->bytes, MPI_BYTE,
                             op->peer, op->tag, comm, &f->req[f->n]);
    if (rc != MPI_SUCCESS)
        return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d, step %u: MPI error %d posting op %u",
                          plan->rank, mc_rt_op_step(plan, i), rc, i);
    f->op[f->n++] = i;
    return MC_RT_OK;
}

/* Names the oldest op still in flight. */
static int timed_out(const mc_rt_plan_t *plan, const inflight_t *f, double timeout_s,
                     mc_rt_err_t *err)
{
    uint32_t oldest = f->op[0];
    for (int k = 1; k < f->n; k++)
        oldest = f->op[k] < oldest ? f->op[k] : oldest;
    const mc_rt_op_t *op = &plan->ops[oldest];
    return mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                      "rank %d, step %u: timed out after %.1f s waiting for the %s of %llu bytes "
                      "(tag %d) %s rank %d",
                      plan->rank, mc_rt_op_step(plan, oldest), timeout_s,
                      op->kind == MC_RT_OP_SEND ? "send" : "receive",
                      (unsigned long long)op->bytes, op->tag,
                      op->kind == MC_RT_OP_SEND ? "to" : "from", op->peer);
}

/* Starts every op that is ready: copies run, sends and receives are posted. */
static int start_ready(mc_rt_exec_t *x, MPI_Comm comm, const mc_rt_buffers_t *bufs, inflight_t *f,
                       mc_rt_err_t *err)
{
    int64_t i;
    while ((i = mc_rt_exec_next(x, 0)) >= 0) {
        const mc_rt_op_t *op = &x->plan->ops[i];
        if (op->kind == MC_RT_OP_COPY) {
            mc_rt_copy_host(x->plan, op, bufs);
            mc_rt_exec_done(x, (uint32_t)i);
        } else {
            int st = post(x->plan, (uint32_t)i, comm, bufs, f, err);
            if (st != MC_RT_OK)
                return st;
        }
    }
    return MC_RT_OK;
}

/* Completes what finished; the requests left are moved to the front. Returns how many finished. */
static int reap(mc_rt_exec_t *x, inflight_t *f)
{
    int out = 0, kept = 0;
    MPI_Testsome(f->n, f->req, &out, f->idx, MPI_STATUSES_IGNORE);
    if (out <= 0)
        return 0;
    for (int k = 0; k < out; k++)
        mc_rt_exec_done(x, f->op[f->idx[k]]);
    for (int k = 0; k < f->n; k++)
        if (f->req[k] != MPI_REQUEST_NULL) {
            f->req[kept] = f->req[k];
            f->op[kept++] = f->op[k];
        }
    f->n = kept;
    return out;
}

int mc_rt_run_mpi(const mc_rt_plan_t *plan, MPI_Comm comm, const mc_rt_buffers_t *bufs,
                  double timeout_s, mc_rt_err_t *err)
{
    int st;
    mc_rt_exec_t x = {0};
    inflight_t f = {0};
    int held = 0; /* buffers MPI may still use after a failure */
    if ((st = check_comm(plan, comm, err)) != MC_RT_OK ||
        (st = mc_rt_plan_check(plan, err)) != MC_RT_OK ||
        (st = mc_rt_buffers_check(plan, bufs, err)) != MC_RT_OK ||
        (st = mc_rt_exec_init(&x, plan, MC_RT_ORDER_DEPS, err)) != MC_RT_OK)
        goto out;
    size_t n = plan->nops + 1;
    f.req = malloc(n * sizeof *f.req);
    f.op = malloc(n * sizeof *f.op);
    f.idx = malloc(n * sizeof *f.idx);
    if (!f.req || !f.op || !f.idx) {
        st = mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: out of memory", plan->rank);
        goto out;
    }
    double last = mc_rt_now();
    for (;;) {
        if ((st = start_ready(&x, comm, bufs, &f, err)) != MC_RT_OK) {
            held = mc_rt_mpi_release(f.n, f.req);
            goto out;
        }
        if (!f.n)
            break;
        if (reap(&x, &f)) {
            last = mc_rt_now();
            continue;
        }
        if (mc_rt_now() - last > timeout_s) {
            st = timed_out(plan, &f, timeout_s, err);
            held = mc_rt_mpi_release(f.n, f.req);
            goto out;
        }
        /* Ranks share few cores when oversubscribed: give the peers the CPU. */
        struct timespec nap = {0, 20000};
        nanosleep(&nap, NULL);
    }
    if (!mc_rt_exec_finished(&x))
        st = mc_rt_fail(err, MC_RT_ERR_INVALID,
                        "rank %d: %u of %u ops can never start: their dependencies form a cycle",
                        plan->rank, plan->nops - x.ndone, plan->nops);
out:
    if (err)
        err->in_use = held;
    free(f.req);
    free(f.op);
    free(f.idx);
    mc_rt_exec_free(&x);
    return st;
}
