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
        uint32_t *f = realloc(a->from, cap * sizeof *f), *t = f ? realloc(a->to, cap * sizeof *t) : NULL;
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

/* Node `join` waits for nodes [first, first+n) and for `prev` (UINT32_MAX: none); those nodes wait
 * for prev. */
static int part(arcs_t *a, uint32_t first, uint32_t n, uint32_t prev, uint32_t join)
{
    int rc = 0;
    for (uint32_t i = first; i < first + n && !rc; i++)
        rc = (prev != UINT32_MAX ? arc(a, prev, i) : 0) || arc(a, i, join);
    return rc || (prev != UINT32_MAX ? arc(a, prev, join) : 0);
}

/* Three joins per step: after its packs, after its sends and receives, after its unpacks. */
static int step_arcs(const mc_rt_plan_t *p, arcs_t *a)
{
    uint32_t prev = UINT32_MAX;
    for (uint32_t s = 0; s < p->nsteps; s++) {
        const mc_rt_step_t *st = &p->steps[s];
        uint32_t j = p->nops + 3 * s, at = st->first;
        if (part(a, at, st->npre, prev, j) || part(a, at + st->npre, st->ncomm, j, j + 1) ||
            part(a, at + st->npre + st->ncomm, st->npost, j + 1, j + 2))
            return -1;
        prev = j + 2;
    }
    return 0;
}

int mc_rt_graph_build(const mc_rt_plan_t *p, int order, mc_rt_graph_t *g, mc_rt_err_t *err)
{
    arcs_t a = {0};
    int st = MC_RT_OK, steps = order == MC_RT_ORDER_STEPS || !p->dep_first;
    g->nnodes = p->nops + (steps ? 3 * p->nsteps : 0);
    g->npred = calloc(g->nnodes + 1, sizeof *g->npred);
    g->succ_first = calloc(g->nnodes + 2, sizeof *g->succ_first);
    g->succ = NULL;
    if (!g->npred || !g->succ_first)
        goto oom;
    if (steps) {
        if (step_arcs(p, &a))
            goto oom;
    } else {
        for (uint32_t i = 0; i < p->nops; i++)
            for (uint32_t k = p->dep_first[i]; k < p->dep_first[i + 1]; k++)
                if (arc(&a, p->deps[k], i))
                    goto oom;
    }
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
