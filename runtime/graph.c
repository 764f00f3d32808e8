/* The graph a backend executes for one rank's plan: the plan's dependency table, or the order its
 * steps give (for plans without one, and to time what the lockstep execution did). Built once per
 * run as successor lists, so that completing an op releases its successors in time linear in
 * their number. */
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

typedef struct arcs {
    uint32_t *from, *to;
    uint32_t n, cap;
} arcs_t;

static int arc(arcs_t *a, uint32_t from, uint32_t to)
{
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? 2 * a->cap : 256;
        uint32_t *f = realloc(a->from, cap * sizeof *f);
        uint32_t *t = f ? realloc(a->to, cap * sizeof *t) : NULL;
        if (f)
            a->from = f;
        if (!f || !t)
            return -1;
        a->to = t;
        a->cap = cap;
    }
    a->from[a->n] = from;
    a->to[a->n++] = to;
    return 0;
}

/* Node `join` waits for the ops of [first, first+n) in lane l and for `prev` (UINT32_MAX: none);
 * those ops wait for prev. *any: whether there was one. */
static int lane_part(arcs_t *a, uint32_t first, uint32_t n, const uint32_t *lane, uint32_t l,
                     uint32_t prev, uint32_t join, int *any)
{
    int rc = 0;
    for (uint32_t i = first; i < first + n && !rc; i++)
        if (lane[i] == l) {
            *any = 1;
            rc = (prev != UINT32_MAX ? arc(a, prev, i) : 0) || arc(a, i, join);
        }
    return rc || (prev != UINT32_MAX ? arc(a, prev, join) : 0);
}

/* Per step and lane (all ops in lane 0 for the steps order), three joins: after its packs, after
 * its sends and receives, after its unpacks; a lane's groups follow each other. */
static int step_arcs(const mc_rt_plan_t *p, const uint32_t *lane, uint32_t nlanes, arcs_t *a)
{
    uint32_t *prev = malloc(nlanes * sizeof *prev);
    int rc = !prev;
    for (uint32_t l = 0; !rc && l < nlanes; l++)
        prev[l] = UINT32_MAX;
    for (uint32_t s = 0; !rc && s < p->nsteps; s++) {
        const mc_rt_step_t *st = &p->steps[s];
        uint32_t at = st->first;
        for (uint32_t l = 0; !rc && l < nlanes; l++) {
            uint32_t j = p->nops + 3 * (s * nlanes + l);
            int any = 0;
            rc = lane_part(a, at, st->npre, lane, l, prev[l], j, &any) ||
                 lane_part(a, at + st->npre, st->ncomm, lane, l, j, j + 1, &any) ||
                 lane_part(a, at + st->npre + st->ncomm, st->npost, lane, l, j + 1, j + 2, &any);
            if (any)
                prev[l] = j + 2;
        }
    }
    free(prev);
    return rc ? -1 : 0;
}

void mc_rt_op_lanes(const mc_rt_plan_t *p, uint32_t nlanes, uint32_t *lane)
{
    const uint32_t unset = UINT32_MAX;
    for (uint32_t i = 0; i < p->nops; i++)
        lane[i] = p->ops[i].kind == MC_RT_OP_COPY ? unset : (uint32_t)p->ops[i].tag % nlanes;
    if (!p->dep_first || nlanes == 1 || p->lane) {
        for (uint32_t i = 0; i < p->nops; i++)
            lane[i] = !p->dep_first || nlanes == 1 ? 0 : p->lane ? p->lane[i] % nlanes : 0;
        return;
    }
    /* a copy: the lane of the first send or receive that waits for it (a pack), else of the
     * first it waits for (an unpack), else 0 */
    for (uint32_t i = 0; i < p->nops; i++) {
        if (p->ops[i].kind == MC_RT_OP_COPY)
            continue;
        for (uint32_t k = p->dep_first[i]; k < p->dep_first[i + 1]; k++)
            if (p->ops[p->deps[k]].kind == MC_RT_OP_COPY && lane[p->deps[k]] == unset)
                lane[p->deps[k]] = lane[i] | 0x80000000u;
    }
    for (uint32_t i = 0; i < p->nops; i++) {
        if (lane[i] != unset) {
            lane[i] &= 0x7fffffffu;
            continue;
        }
        lane[i] = 0;
        for (uint32_t k = p->dep_first[i]; k < p->dep_first[i + 1]; k++)
            if (p->ops[p->deps[k]].kind != MC_RT_OP_COPY) {
                lane[i] = lane[p->deps[k]];
                break;
            }
    }
}

int mc_rt_graph_build(const mc_rt_plan_t *p, int order, mc_rt_graph_t *g, mc_rt_err_t *err)
{
    arcs_t a = {0};
    int st = MC_RT_OK;
    /* lanes: 0 for the dependency table alone, else how many lanes the steps are grouped by */
    uint32_t nlanes = order == MC_RT_ORDER_STEPS || !p->dep_first ? 1
                      : order == MC_RT_ORDER_NCCL    ? mc_rt_plan_lanes(p)
                      : order > MC_RT_ORDER_NCCL     ? (uint32_t)(order - MC_RT_ORDER_LANES(0))
                                                     : 0;
    uint32_t *lane = calloc(p->nops + 1, sizeof *lane);
    g->nnodes = p->nops + 3 * p->nsteps * nlanes;
    g->npred = calloc(g->nnodes + 1, sizeof *g->npred);
    g->succ_first = calloc(g->nnodes + 2, sizeof *g->succ_first);
    g->succ = NULL;
    if (!lane || !g->npred || !g->succ_first)
        goto oom;
    if (nlanes) {
        mc_rt_op_lanes(p, nlanes, lane);
        if (step_arcs(p, lane, nlanes, &a))
            goto oom;
    }
    for (uint32_t i = 0; p->dep_first && order != MC_RT_ORDER_STEPS && i < p->nops; i++)
        for (uint32_t k = p->dep_first[i]; k < p->dep_first[i + 1]; k++)
            if (arc(&a, p->deps[k], i))
                goto oom;
    if (!(g->succ = malloc((a.n + 1) * sizeof *g->succ)))
        goto oom;
    for (uint32_t k = 0; k < a.n; k++) {
        g->npred[a.to[k]]++;
        g->succ_first[a.from[k] + 2]++;
    }
    for (uint32_t n = 0; n < g->nnodes; n++)
        g->succ_first[n + 2] += g->succ_first[n + 1];
    for (uint32_t k = 0; k < a.n; k++)
        g->succ[g->succ_first[a.from[k] + 1]++] = a.to[k];
    goto out;
oom:
    mc_rt_graph_free(g);
    st = mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: out of memory for the dependency graph",
                    p->rank);
out:
    free(lane);
    free(a.from);
    free(a.to);
    return st;
}

void mc_rt_graph_free(mc_rt_graph_t *g)
{
    free(g->npred);
    free(g->succ_first);
    free(g->succ);
    g->npred = g->succ_first = g->succ = NULL;
    g->nnodes = 0;
}

int mc_rt_exec_init(mc_rt_exec_t *x, const mc_rt_plan_t *plan, int order, mc_rt_err_t *err)
{
    int st;
    memset(x, 0, sizeof *x);
    x->plan = plan;
    if ((st = mc_rt_graph_build(plan, order, &x->g, err)) != MC_RT_OK)
        return st;
    x->left = malloc((x->g.nnodes + 1) * sizeof *x->left);
    x->queue = malloc((x->g.nnodes + 1) * sizeof *x->queue);
    if (!x->left || !x->queue) {
        mc_rt_exec_free(x);
        return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: out of memory", plan->rank);
    }
    for (uint32_t n = 0; n < x->g.nnodes; n++)
        if (!(x->left[n] = x->g.npred[n]))
            x->queue[x->tail++] = n;
    return MC_RT_OK;
}

void mc_rt_exec_free(mc_rt_exec_t *x)
{
    mc_rt_graph_free(&x->g);
    free(x->left);
    free(x->queue);
    x->left = x->queue = NULL;
}

void mc_rt_exec_done(mc_rt_exec_t *x, uint32_t i)
{
    if (i < x->plan->nops)
        x->ndone++;
    for (uint32_t k = x->g.succ_first[i]; k < x->g.succ_first[i + 1]; k++)
        if (!--x->left[x->g.succ[k]])
            x->queue[x->tail++] = x->g.succ[k];
}

int64_t mc_rt_exec_next(mc_rt_exec_t *x, uint64_t pick)
{
    while (x->head < x->tail) {
        if (pick) {
            uint32_t k = x->head + (uint32_t)(pick % (x->tail - x->head)), t = x->queue[k];
            x->queue[k] = x->queue[x->head];
            x->queue[x->head] = t;
        }
        uint32_t n = x->queue[x->head++];
        if (n < x->plan->nops)
            return n;
        mc_rt_exec_done(x, n);
    }
    return -1;
}

int mc_rt_exec_finished(const mc_rt_exec_t *x)
{
    return x->ndone == x->plan->nops;
}
