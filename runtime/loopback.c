/* The loopback backend: every rank's plan runs in this process in the order of its dependency
 * graph; a posted receive takes its bytes straight from the oldest posted send of its peer with
 * its tag, as MPI matches them. The same loop drives host buffers (here) and one GPU with a
 * buffer set per virtual rank (cuda_drivers.cu) through a mover. It needs no network, so it
 * checks lowering and plans on any machine. */
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* Each rank's progress and the sends and receives it has posted that have not met their peer's. */
typedef struct lb_rank {
    mc_rt_exec_t x;
    uint32_t *pend;
    uint32_t npend;
} lb_rank_t;

static uint64_t next_pick(uint64_t *seed)
{
    if (!*seed)
        return 0;
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    return *seed;
}

/* Runs every ready copy and posts every ready send and receive; returns how many ops started. */
static int start_ready(const mc_rt_plan_t *p, lb_rank_t *lr, const mc_rt_buffers_t *bufs,
                       const mc_rt_mover_t *mv, uint64_t *seed, int *started, mc_rt_err_t *err)
{
    int64_t i;
    while ((i = mc_rt_exec_next(&lr->x, next_pick(seed))) >= 0) {
        (*started)++;
        if (p->ops[i].kind != MC_RT_OP_COPY) {
            lr->pend[lr->npend++] = (uint32_t)i;
            continue;
        }
        int st = mv->copy(mv->ctx, p, &p->ops[i], bufs, err);
        if (st != MC_RT_OK)
            return st;
        mc_rt_exec_done(&lr->x, (uint32_t)i);
    }
    return MC_RT_OK;
}

/* Position in q's posted ops of its oldest send to rank r with tag, or -1. */
static long find_send(const mc_rt_plan_t *pq, const lb_rank_t *q, int r, int tag)
{
    for (uint32_t k = 0; k < q->npend; k++) {
        const mc_rt_op_t *o = &pq->ops[q->pend[k]];
        if (o->kind == MC_RT_OP_SEND && o->peer == r && o->tag == tag)
            return k;
    }
    return -1;
}

static void unpost(lb_rank_t *lr, uint32_t k)
{
    memmove(&lr->pend[k], &lr->pend[k + 1], (lr->npend - k - 1) * sizeof *lr->pend);
    lr->npend--;
}

/* Moves the bytes of every posted receive whose send is posted too; counts the pairs in *moved. */
static int match(int nranks, const mc_rt_plan_t *plans, lb_rank_t *lr, const mc_rt_buffers_t *bufs,
                 const mc_rt_mover_t *mv, int *moved, mc_rt_err_t *err)
{
    for (int r = 0; r < nranks; r++)
        for (uint32_t k = 0; k < lr[r].npend;) {
            uint32_t i = lr[r].pend[k];
            const mc_rt_op_t *op = &plans[r].ops[i];
            long j = op->kind == MC_RT_OP_RECV ? find_send(&plans[op->peer], &lr[op->peer], r,
                                                           op->tag)
                                               : -1;
            if (j < 0) {
                k++;
                continue;
            }
            const mc_rt_plan_t *pp = &plans[op->peer];
            uint32_t si = lr[op->peer].pend[j];
            if (pp->ops[si].bytes != op->bytes)
                return mc_rt_fail(err, MC_RT_ERR_RUNTIME,
                                  "rank %d, step %u: receives %llu bytes (tag %d) but rank %d "
                                  "sends %llu",
                                  r, mc_rt_op_step(&plans[r], i), (unsigned long long)op->bytes,
                                  op->tag, op->peer, (unsigned long long)pp->ops[si].bytes);
            if (plans[r].lane && pp->lane && plans[r].lane[i] != pp->lane[si])
                return mc_rt_fail(err, MC_RT_ERR_INVALID,
                                  "rank %d, step %u: receives (tag %d) in lane %u but rank %d "
                                  "sends in lane %u",
                                  r, mc_rt_op_step(&plans[r], i), op->tag, plans[r].lane[i],
                                  op->peer, pp->lane[si]);
            int st = mv->move(mv->ctx, mc_rt_ref_ptr(&plans[r], &op->dst, &bufs[r]),
                              mc_rt_ref_ptr(pp, &pp->ops[si].src, &bufs[op->peer]), op->bytes, err);
            if (st != MC_RT_OK)
                return st;
            unpost(&lr[op->peer], (uint32_t)j);
            unpost(&lr[r], k);
            mc_rt_exec_done(&lr[op->peer].x, si);
            mc_rt_exec_done(&lr[r].x, i);
            (*moved)++;
        }
    return MC_RT_OK;
}

/* Nothing can start or move: names the first posted receive (else send) whose peer never posts
 * its side. */
static int stuck(int nranks, const mc_rt_plan_t *plans, const lb_rank_t *lr, mc_rt_err_t *err)
{
    for (int recv = 1; recv >= 0; recv--)
        for (int r = 0; r < nranks; r++)
            for (uint32_t k = 0; k < lr[r].npend; k++) {
                const mc_rt_op_t *op = &plans[r].ops[lr[r].pend[k]];
                if ((op->kind == MC_RT_OP_RECV) != recv)
                    continue;
                return mc_rt_fail(err, MC_RT_ERR_RUNTIME,
                              "rank %d, step %u: %s of %llu bytes (tag %d) %s rank %d has no "
                              "matching %s",
                              r, mc_rt_op_step(&plans[r], lr[r].pend[k]), recv ? "receive" : "send",
                              (unsigned long long)op->bytes, op->tag, recv ? "from" : "to",
                              op->peer, recv ? "send" : "receive");
        }
    return mc_rt_fail(err, MC_RT_ERR_INVALID, "loopback: ops wait for each other in a cycle");
}

int mc_rt_loopback_exec(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                        const mc_rt_mover_t *mv, int order, uint64_t seed, mc_rt_err_t *err)
{
    int st = MC_RT_OK;
    lb_rank_t *lr = calloc(nranks > 0 ? nranks : 1, sizeof *lr);
    if (!lr)
        return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "loopback: out of memory");
    for (int r = 0; r < nranks; r++) {
        if (plans[r].rank != r || plans[r].nranks != nranks) {
            st = mc_rt_fail(err, MC_RT_ERR_INVALID,
                            "loopback: plan %d is for rank %d of %d, expected rank %d of %d", r,
                            plans[r].rank, plans[r].nranks, r, nranks);
            goto out;
        }
        if ((st = mc_rt_plan_check(&plans[r], err)) != MC_RT_OK ||
            (st = mc_rt_buffers_check(&plans[r], &bufs[r], err)) != MC_RT_OK ||
            (st = mc_rt_exec_init(&lr[r].x, &plans[r], order, err)) != MC_RT_OK)
            goto out;
        if (!(lr[r].pend = malloc((plans[r].nops + 1) * sizeof *lr[r].pend))) {
            st = mc_rt_fail(err, MC_RT_ERR_RUNTIME, "loopback: out of memory");
            goto out;
        }
    }
    for (;;) {
        int started = 0, moved = 0, finished = 1;
        for (int r = 0; r < nranks; r++)
            if ((st = start_ready(&plans[r], &lr[r], &bufs[r], mv, &seed, &started, err)))
                goto out;
        if ((st = match(nranks, plans, lr, bufs, mv, &moved, err)) != MC_RT_OK)
            goto out;
        for (int r = 0; r < nranks; r++)
            finished &= mc_rt_exec_finished(&lr[r].x);
        if (finished)
            break;
        if (!started && !moved) {
            st = stuck(nranks, plans, lr, err);
            goto out;
        }
    }
out:
    for (int r = 0; r < nranks; r++) {
        mc_rt_exec_free(&lr[r].x);
        free(lr[r].pend);
    }
    free(lr);
    return st;
}

static int host_copy(void *ctx, const mc_rt_plan_t *plan, const mc_rt_op_t *op,
                     const mc_rt_buffers_t *bufs, mc_rt_err_t *err)
{
    (void)ctx, (void)err; /* host copies cannot fail */
    mc_rt_copy_host(plan, op, bufs);
    return MC_RT_OK;
}

static int host_move(void *ctx, void *dst, const void *src, uint64_t bytes, mc_rt_err_t *err)
{
    (void)ctx, (void)err;
    memcpy(dst, src, bytes);
    return MC_RT_OK;
}

int mc_rt_run_loopback_order(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                             int order, uint64_t seed, mc_rt_err_t *err)
{
    const mc_rt_mover_t mv = {host_copy, host_move, NULL};
    return mc_rt_loopback_exec(nranks, plans, bufs, &mv, order, seed, err);
}

int mc_rt_run_loopback(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                       mc_rt_err_t *err)
{
    return mc_rt_run_loopback_order(nranks, plans, bufs, MC_RT_ORDER_DEPS, 0, err);
}
