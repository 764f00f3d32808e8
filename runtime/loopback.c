/* The loopback backend: every rank's plan runs in this process, one global micro-step at a time;
 * a receive takes its bytes straight from the matching send. The same stepping drives host
 * buffers (here) and one GPU with a buffer set per virtual rank (loopback_cuda.cu) through a
 * mover. It needs no network, so it checks lowering and plans on any machine. */
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* The step of rank r with global index s, or NULL; cur[r] walks r's steps in order. */
static const mc_rt_step_t *step_at(const mc_rt_plan_t *p, const uint32_t *cur, uint32_t s)
{
    return *cur < p->nsteps && p->steps[*cur].index == s ? &p->steps[*cur] : NULL;
}

static int run_copies(const mc_rt_plan_t *p, uint32_t first, uint32_t n,
                      const mc_rt_buffers_t *bufs, const mc_rt_mover_t *mv, mc_rt_err_t *err)
{
    int st = MC_RT_OK;
    for (uint32_t i = first; i < first + n && st == MC_RT_OK; i++)
        st = mv->copy(mv->ctx, p, &p->ops[i], bufs, err);
    return st;
}

/* Finds rank p's unused SEND to rank r with tag in step st, in order. */
static long find_send(const mc_rt_plan_t *p, const mc_rt_step_t *st, int r, int tag,
                      const char *used)
{
    for (uint32_t i = st->first + st->npre; i < st->first + st->npre + st->ncomm; i++)
        if (!used[i] && p->ops[i].kind == MC_RT_OP_SEND && p->ops[i].peer == r &&
            p->ops[i].tag == tag)
            return i;
    return -1;
}

static int exchange(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                    const uint32_t *cur, uint32_t s, char **used, const mc_rt_mover_t *mv,
                    mc_rt_err_t *err)
{
    for (int r = 0; r < nranks; r++) {
        const mc_rt_step_t *st = step_at(&plans[r], &cur[r], s);
        for (uint32_t i = st ? st->first + st->npre : 0; st && i < st->first + st->npre + st->ncomm;
             i++) {
            const mc_rt_op_t *op = &plans[r].ops[i];
            if (op->kind != MC_RT_OP_RECV)
                continue;
            const mc_rt_plan_t *pp = &plans[op->peer];
            const mc_rt_step_t *pst = step_at(pp, &cur[op->peer], s);
            long k = pst ? find_send(pp, pst, r, op->tag, used[op->peer]) : -1;
            if (k < 0)
                return mc_rt_fail(err, MC_RT_ERR_RUNTIME,
                                  "rank %d, step %u: receive of %llu bytes (tag %d) from rank %d "
                                  "has no matching send",
                                  r, s, (unsigned long long)op->bytes, op->tag, op->peer);
            if (pp->ops[k].bytes != op->bytes)
                return mc_rt_fail(err, MC_RT_ERR_RUNTIME,
                                  "rank %d, step %u: receives %llu bytes (tag %d) but rank %d "
                                  "sends %llu",
                                  r, s, (unsigned long long)op->bytes, op->tag, op->peer,
                                  (unsigned long long)pp->ops[k].bytes);
            used[op->peer][k] = 1;
            int rc = mv->move(mv->ctx, mc_rt_ref_ptr(&plans[r], &op->dst, &bufs[r]),
                              mc_rt_ref_ptr(pp, &pp->ops[k].src, &bufs[op->peer]), op->bytes,
                              err);
            if (rc != MC_RT_OK)
                return rc;
        }
    }
    for (int r = 0; r < nranks; r++) {
        const mc_rt_step_t *st = step_at(&plans[r], &cur[r], s);
        for (uint32_t i = st ? st->first + st->npre : 0; st && i < st->first + st->npre + st->ncomm;
             i++)
            if (plans[r].ops[i].kind == MC_RT_OP_SEND && !used[r][i])
                return mc_rt_fail(err, MC_RT_ERR_RUNTIME,
                                  "rank %d, step %u: send of %llu bytes (tag %d) to rank %d has "
                                  "no matching receive",
                                  r, s, (unsigned long long)plans[r].ops[i].bytes,
                                  plans[r].ops[i].tag, plans[r].ops[i].peer);
    }
    return MC_RT_OK;
}

int mc_rt_loopback_exec(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                        const mc_rt_mover_t *mv, mc_rt_err_t *err)
{
    int st = MC_RT_OK;
    uint32_t *cur = calloc(nranks > 0 ? nranks : 1, sizeof *cur);
    char **used = calloc(nranks > 0 ? nranks : 1, sizeof *used);
    if (!cur || !used) {
        st = mc_rt_fail(err, MC_RT_ERR_RUNTIME, "loopback: out of memory");
        goto out;
    }
    for (int r = 0; r < nranks; r++) {
        if (plans[r].rank != r || plans[r].nranks != nranks) {
            st = mc_rt_fail(err, MC_RT_ERR_INVALID,
                            "loopback: plan %d is for rank %d of %d, expected rank %d of %d", r,
                            plans[r].rank, plans[r].nranks, r, nranks);
            goto out;
        }
        if ((st = mc_rt_plan_check(&plans[r], err)) != MC_RT_OK ||
            (st = mc_rt_buffers_check(&plans[r], &bufs[r], err)) != MC_RT_OK)
            goto out;
        if (!(used[r] = calloc(plans[r].nops + 1, 1))) {
            st = mc_rt_fail(err, MC_RT_ERR_RUNTIME, "loopback: out of memory");
            goto out;
        }
    }
    for (;;) {
        uint32_t s = UINT32_MAX;
        for (int r = 0; r < nranks; r++)
            if (cur[r] < plans[r].nsteps && plans[r].steps[cur[r]].index < s)
                s = plans[r].steps[cur[r]].index;
        if (s == UINT32_MAX)
            break;
        for (int r = 0; r < nranks; r++) {
            const mc_rt_step_t *stp = step_at(&plans[r], &cur[r], s);
            if (stp && (st = run_copies(&plans[r], stp->first, stp->npre, &bufs[r], mv, err)))
                goto out;
        }
        if ((st = exchange(nranks, plans, bufs, cur, s, used, mv, err)) != MC_RT_OK)
            goto out;
        for (int r = 0; r < nranks; r++) {
            const mc_rt_step_t *stp = step_at(&plans[r], &cur[r], s);
            if (!stp)
                continue;
            st = run_copies(&plans[r], stp->first + stp->npre + stp->ncomm, stp->npost, &bufs[r],
                            mv, err);
            if (st != MC_RT_OK)
                goto out;
            cur[r]++;
        }
    }
out:
    for (int r = 0; used && r < nranks; r++)
        free(used[r]);
    free(used);
    free(cur);
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

int mc_rt_run_loopback(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                       mc_rt_err_t *err)
{
    const mc_rt_mover_t mv = {host_copy, host_move, NULL};
    return mc_rt_loopback_exec(nranks, plans, bufs, &mv, err);
}
