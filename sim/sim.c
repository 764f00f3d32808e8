/* The flow-level simulator (DESIGN.md section 6). Phases run one after another. In a phase, every
 * chunk k of every tree edge parent->child is a flow over the edge's route. It becomes ready when
 * the parent holds chunk k (the root holds every chunk at the phase start; a relay holds it once
 * its own incoming flow for chunk k has finished: store and forward per chunk) and the edge has
 * finished chunk k-1 (one connection sends its chunks in order). A ready flow waits the message
 * overhead (the largest mc_topo_alpha of its route's link kinds plus the route's hop latencies)
 * and then moves its bytes at its max-min fair share of the links it crosses. Rates are recomputed
 * at every flow start and end, only for the flows that share links, transitively, with the flows
 * that changed, so link-disjoint trees cost nothing to each other. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_internal.h"

/* Flows of one phase at most: 48 bytes each, so about 2.4 GB. */
#define SIM_MAX_FLOWS 50000000

typedef struct sim_flow {
    int edge, chunk;
    double bytes;
    sim_motion_t m;
    int active;
} sim_flow_t;

typedef struct sim_edge {
    const mc_tree_edge_t *e;
    int route, nlinks;      /* e's route, from routes[route]: side by side with the other
                             * edges', since every re-rating reads its flows' routes */
    int tree;
    int in_edge;            /* the edge that brings the parent its data, -1 from the root */
    int child_off, nchild;  /* edges leaving the child, in children[] */
    int nchunks, next, arrived, busy;
    int flow_base;
    double delay;           /* alpha + hop latencies, paid by every chunk */
    double cap;             /* the connection's rate limit (mc_topo_conn_cap), 0 for none */
} sim_edge_t;

typedef struct sim_link {
    int *flows, n, cap;     /* active flows */
    double rate, since;     /* current total rate and since when */
    mc_sim_interval_t *iv;  /* its timeline so far, in time order */
    int niv, iv_cap;
} sim_link_t;

typedef struct sim {
    const mc_sched_t *s;
    const mc_topo_t *topo;
    mc_sim_result_t *res;
    sim_link_t *links;
    sim_links_t lk;         /* capacities and the rate computation (sim_links.c) */
    sim_queue_t q;
    /* one phase */
    sim_edge_t *edges;
    int nedges, edge_cap;
    int *children, nchildren, children_cap;
    int *routes, nroutes, route_cap;
    sim_flow_t *flows;
    int nflows, flow_cap;
    int keep_intervals;
    int64_t work, work_max;  /* events, and flows and links re-rated, so far; the limit (0: none) */
    double stopped_at;       /* simulated time when the limit stopped it */
    double horizon;          /* simulated time past which it stops (0: none) */
} sim_t;

static double edge_delay(const mc_topo_t *topo, const mc_tree_edge_t *e)
{
    return mc_topo_links_delay(topo, e->links, e->nlinks);
}

/* Adds the edges and flows of tree ti to the phase. */
static mc_status_t build_tree(sim_t *sm, int ti, int *edge_of, mc_err_t *err)
{
    const mc_tree_t *tr = &sm->s->trees[ti];
    const mc_topo_t *topo = sm->topo;
    mc_status_t st = MC_OK;
    int base = sm->nedges;
    if (tr->root < 0 || tr->root >= topo->ngpus || tr->nchunks < 1 ||
        tr->nchunks > MC_SCHED_MAX_CHUNKS)
        return mc_err_set(err, MC_ERR_INVALID, "sim: tree %d has root %d and %d chunks", ti,
                          tr->root, tr->nchunks);
    if ((int64_t)sm->nflows + (int64_t)tr->nedges * tr->nchunks > SIM_MAX_FLOWS)
        return mc_err_set(err, MC_ERR_INVALID, "sim: phase %d has more than %d flows (edges x "
                          "chunks); use fewer, larger chunks", tr->phase, SIM_MAX_FLOWS);
    for (int e = 0; e < tr->nedges; e++) {
        const mc_tree_edge_t *ed = &tr->edges[e];
        int bad = ed->nlinks < 1 || ed->parent < 0 || ed->parent >= topo->ngpus ||
                  ed->child < 0 || ed->child >= topo->ngpus;
        for (int j = 0; !bad && j < ed->nlinks; j++)
            bad = ed->links[j] < 0 || ed->links[j] >= topo->nlinks;
        int in = bad || ed->parent == tr->root ? -1 : edge_of[ed->parent];
        if (bad || (ed->parent != tr->root && in < 0)) {
            st = mc_err_set(err, MC_ERR_INVALID, "sim: tree %d, edge %d -> %d: %s; run meshcast "
                            "validate", ti, ed->parent, ed->child,
                            bad ? "its route is not on this topology" : "its parent never gets the data");
            goto out;
        }
        MC_GROW(sm->edges, sm->edge_cap, sm->nedges + 1);
        sm->edges[sm->nedges] = (sim_edge_t){.e = ed, .route = sm->nroutes, .nlinks = ed->nlinks,
                                             .tree = ti, .in_edge = in,
                                             .nchunks = tr->nchunks, .flow_base = sm->nflows,
                                             .delay = edge_delay(topo, ed),
                                             .cap = mc_topo_conn_cap(topo, ed->parent, ed->child,
                                                                        ed->links, ed->nlinks)};
        edge_of[ed->child] = sm->nedges++;
        MC_GROW(sm->routes, sm->route_cap, sm->nroutes + ed->nlinks);
        memcpy(sm->routes + sm->nroutes, ed->links, sizeof(int) * (size_t)ed->nlinks);
        sm->nroutes += ed->nlinks;
        MC_GROW(sm->flows, sm->flow_cap, sm->nflows + tr->nchunks);
        for (int k = 0; k < tr->nchunks; k++) {
            uint64_t off, len;
            mc_tree_chunk(tr, k, &off, &len);
            sm->flows[sm->nflows++] = (sim_flow_t){.edge = sm->nedges - 1, .chunk = k,
                                                   .bytes = (double)len};
        }
    }
    /* children lists (edges whose parent is this edge's child), by counting */
    int n = sm->nedges - base;
    MC_GROW(sm->children, sm->children_cap, sm->nchildren + n);
    for (int i = base; i < sm->nedges; i++)
        sm->edges[i].nchild = 0;
    for (int i = base; i < sm->nedges; i++)
        if (sm->edges[i].in_edge >= 0)
            sm->edges[sm->edges[i].in_edge].nchild++;
    for (int i = base, at = sm->nchildren; i < sm->nedges; i++) {
        sm->edges[i].child_off = at;
        at += sm->edges[i].nchild;
        sm->edges[i].nchild = 0;
    }
    for (int i = base; i < sm->nedges; i++) {
        sim_edge_t *p = sm->edges[i].in_edge >= 0 ? &sm->edges[sm->edges[i].in_edge] : NULL;
        if (p)
            sm->children[p->child_off + p->nchild++] = i;
    }
    sm->nchildren += n;
out:
    for (int i = base; i < sm->nedges; i++)
        edge_of[sm->edges[i].e->child] = -1;
    return st;
}

/* Starts the next chunk of edge i if the edge is free and its parent holds that chunk. */
static void try_start(sim_t *sm, int i, double now)
{
    sim_edge_t *e = &sm->edges[i];
    if (e->busy || e->next >= e->nchunks)
        return;
    if (e->in_edge >= 0 && sm->edges[e->in_edge].arrived <= e->next)
        return;
    e->busy = 1;
    sim_queue_push(&sm->q, now + e->delay, SIM_EV_ACTIVATE, e->flow_base + e->next++, 0);
}

static void link_add(sim_link_t *l, int f)
{
    MC_GROW(l->flows, l->cap, l->n + 1);
    l->flows[l->n++] = f;
}

static void link_remove(sim_link_t *l, int f)
{
    for (int i = 0; i < l->n; i++)
        if (l->flows[i] == f) {
            memmove(&l->flows[i], &l->flows[i + 1], sizeof(int) * (size_t)(l->n - i - 1));
            l->n--;
            return;
        }
}

/* Applies one event; returns 0 for a finish event that a later rate change superseded. */
static int process(sim_t *sm, const sim_event_t *ev, double now)
{
    sim_flow_t *f = &sm->flows[ev->flow];
    sim_edge_t *e = &sm->edges[f->edge];
    if (ev->kind == SIM_EV_ACTIVATE) {
        f->active = 1;
        f->m.remaining = f->bytes;
        f->m.rate = 0;
        f->m.t_upd = now;
        for (int j = 0; j < e->nlinks; j++) {
            link_add(&sm->links[sm->routes[e->route + j]], ev->flow);
            sim_links_touch(&sm->lk, sm->routes[e->route + j]);
        }
        return 1;
    }
    if (!f->active || ev->version != f->m.version)
        return 0;
    f->active = 0;
    f->m.remaining = 0;
    for (int j = 0; j < e->nlinks; j++) {
        link_remove(&sm->links[sm->routes[e->route + j]], ev->flow);
        sim_links_touch(&sm->lk, sm->routes[e->route + j]);
    }
    e->arrived++;
    e->busy = 0;
    try_start(sm, f->edge, now);
    for (int c = 0; c < e->nchild; c++)
        try_start(sm, sm->children[e->child_off + c], now);
    return 1;
}

static void record(sim_t *sm, int l, double now, double rate)
{
    sim_link_t *sl = &sm->links[l];
    if (fabs(rate - sl->rate) <= 1e-12 * (rate > sl->rate ? rate : sl->rate))
        return; /* the same total summed in another order */
    if (sl->rate > 0 && now > sl->since) {
        mc_sim_interval_t *last = sl->niv ? &sl->iv[sl->niv - 1] : NULL;
        if (last && last->t1 == sl->since && last->rate == sl->rate)
            last->t1 = now;
        else if (sm->keep_intervals) {
            MC_GROW(sl->iv, sl->iv_cap, sl->niv + 1);
            sl->iv[sl->niv++] = (mc_sim_interval_t){l, sl->since, now, sl->rate};
        }
        sm->res->link_busy_s[l] += now - sl->since;
        sm->res->link_bytes[l] += sl->rate * (now - sl->since);
    }
    sl->rate = rate;
    sl->since = now;
}

static const int *on_link(const void *ctx, int l, int *n)
{
    const sim_t *sm = ctx;
    *n = sm->links[l].n;
    return sm->links[l].flows;
}

static const int *flow_path(const void *ctx, int f, int *nlinks)
{
    const sim_t *sm = ctx;
    const sim_edge_t *e = &sm->edges[sm->flows[f].edge];
    *nlinks = e->nlinks;
    return sm->routes + e->route;
}

static double flow_cap(const void *ctx, int f)
{
    const sim_t *sm = ctx;
    return sm->edges[sm->flows[f].edge].cap;
}

/* New max-min rates for the component around the touched links; new finish events. */
static void recompute(sim_t *sm, double now)
{
    sim_links_t *lk = &sm->lk;
    sim_flows_t fl = {sm, sm->nflows, on_link, flow_path, flow_cap};
    sim_links_rerate(lk, &fl);
    int n = lk->ncomp_flows;
    sm->work += n + lk->ncomp_links;
    for (int i = 0; i < n; i++)
        sim_motion_rerate(&sm->flows[lk->comp_flows[i]].m, lk->rates[i], now, &sm->q,
                          lk->comp_flows[i]);
    for (int i = 0; i < lk->ncomp_links; i++) {
        sim_link_t *l = &sm->links[lk->comp_links[i]];
        double total = 0;
        for (int k = 0; k < l->n; k++)
            total += sm->flows[l->flows[k]].m.rate;
        record(sm, lk->comp_links[i], now, total);
    }
}

/* Runs the n trees of one phase in trees[] from t0; returns their end time in *t_end. */
static mc_status_t run_trees(sim_t *sm, int phase, const int *trees, int n, int *edge_of,
                             double t0, double *t_end, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    sm->nedges = sm->nflows = sm->nchildren = sm->nroutes = 0;
    for (int i = 0; i < n; i++)
        MC_CHECK_GOTO(build_tree(sm, trees[i], edge_of, err), out, st);
    double now = t0, last = t0;
    for (int i = 0; i < sm->nedges; i++)
        if (sm->edges[i].in_edge < 0)
            try_start(sm, i, now);
    while (sm->q.n > 0) {
        sim_event_t ev = sim_queue_pop(&sm->q);
        now = ev.t;
        sm->work++;
        sim_links_begin(&sm->lk);
        if (process(sm, &ev, now))
            last = now;
        /* events at the same instant (up to rounding) share one rate computation */
        while (sm->q.n > 0 && sim_queue_next(&sm->q) <= now * (1 + 1e-12) + 1e-18) {
            ev = sim_queue_pop(&sm->q);
            sm->work++;
            if (process(sm, &ev, now))
                last = now;
        }
        if (sm->lk.ntouched)
            recompute(sm, now);
        if (sm->work_max && sm->work > sm->work_max) {
            sm->stopped_at = now;
            st = mc_err_set(err, MC_ERR_TIMEOUT, "sim: stopped at its work limit (%lld events, "
                            "flows and links re-rated)", (long long)sm->work_max);
            goto out;
        }
        /* now may be a superseded finish (stale events pop after the last flow): the makespan
         * is at least the last event that moved something */
        if (sm->horizon > 0 && last > sm->horizon) {
            sm->stopped_at = last;
            st = mc_err_set(err, MC_ERR_TIMEOUT, "sim: stopped past its horizon (%g s)",
                            sm->horizon);
            goto out;
        }
    }
    for (int i = 0; i < sm->nedges; i++)
        if (sm->edges[i].arrived < sm->edges[i].nchunks) {
            st = mc_err_set(err, MC_ERR_INTERNAL, "sim: phase %d stalled on tree %d", phase,
                            sm->edges[i].tree);
            goto out;
        }
    sm->res->nflows += sm->nflows;
    *t_end = last;
out:
    sim_queue_free(&sm->q);
    return st;
}

/* Group k of g is a copy of group r, simulated already: its links get r's per-link results of
 * this phase (from index at[j] of r's j-th link's timeline), renumbered. */
static void copy_group(sim_t *sm, const sim_groups_t *g, int k, int r, const double *busy,
                       const double *bytes, const int *at)
{
    mc_sim_result_t *res = sm->res;
    for (int j = 0; j < g->link_off[r + 1] - g->link_off[r]; j++) {
        int from = g->links[g->link_off[r] + j], to = g->links[g->link_off[k] + j];
        int i = g->link_off[r] + j;
        res->link_busy_s[to] += busy[i];
        res->link_bytes[to] += bytes[i];
        sim_link_t *src = &sm->links[from], *dst = &sm->links[to];
        for (int v = at[i]; v < src->niv; v++) {
            MC_GROW(dst->iv, dst->iv_cap, dst->niv + 1);
            dst->iv[dst->niv] = src->iv[v];
            dst->iv[dst->niv++].link = to;
        }
    }
}

/* Runs one phase from t0, each distinct group of link-disjoint trees once (sim_groups.c);
 * returns its end time in *t_end. */
static mc_status_t run_phase(sim_t *sm, int phase, const sim_groups_t *g, int *edge_of,
                             double t0, double *t_end, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int n = g->ngroups, nl = g->link_off[n];
    double *busy = mc_xmalloc(sizeof(double) * (size_t)(nl + 1));
    double *bytes = mc_xmalloc(sizeof(double) * (size_t)(nl + 1));
    int *at = mc_xmalloc(sizeof(int) * (size_t)(nl + 1));
    double *end = mc_xmalloc(sizeof(double) * (size_t)(n + 1));
    long *flows = mc_xmalloc(sizeof(long) * (size_t)(n + 1));
    *t_end = t0;
    for (int k = 0; k < n; k++) {
        int r = g->same_as[k];
        if (r >= 0) {
            copy_group(sm, g, k, r, busy, bytes, at);
            end[k] = end[r];
            sm->res->nflows += flows[r];
        } else {
            for (int i = g->link_off[k]; i < g->link_off[k + 1]; i++) {
                busy[i] = sm->res->link_busy_s[g->links[i]];
                bytes[i] = sm->res->link_bytes[g->links[i]];
                at[i] = sm->links[g->links[i]].niv;
            }
            long before = sm->res->nflows;
            MC_CHECK_GOTO(run_trees(sm, phase, g->trees + g->tree_off[k],
                                    g->tree_off[k + 1] - g->tree_off[k], edge_of, t0, &end[k],
                                    err), out, st);
            flows[k] = sm->res->nflows - before;
            for (int i = g->link_off[k]; i < g->link_off[k + 1]; i++) {
                busy[i] = sm->res->link_busy_s[g->links[i]] - busy[i];
                bytes[i] = sm->res->link_bytes[g->links[i]] - bytes[i];
            }
        }
        if (end[k] > *t_end)
            *t_end = end[k];
    }
out:
    free(busy);
    free(bytes);
    free(at);
    free(end);
    free(flows);
    return st;
}

/* The per-link timelines, concatenated in link order. */
static void gather_intervals(sim_t *sm)
{
    mc_sim_result_t *r = sm->res;
    size_t n = 0;
    for (int l = 0; l < sm->topo->nlinks; l++)
        n += (size_t)sm->links[l].niv;
    r->intervals = mc_xmalloc(sizeof(mc_sim_interval_t) * (n + 1));
    for (int l = 0; l < sm->topo->nlinks; l++) {
        if (!sm->links[l].niv)
            continue;
        memcpy(&r->intervals[r->nintervals], sm->links[l].iv,
               sizeof(mc_sim_interval_t) * (size_t)sm->links[l].niv);
        r->nintervals += sm->links[l].niv;
    }
}

static void sim_free(sim_t *sm)
{
    for (int l = 0; sm->links && l < sm->topo->nlinks; l++) {
        free(sm->links[l].flows);
        free(sm->links[l].iv);
    }
    free(sm->links);
    sim_links_free(&sm->lk);
    sim_queue_free(&sm->q);
    free(sm->edges);
    free(sm->children);
    free(sm->routes);
    free(sm->flows);
}

static mc_status_t sim_run(const mc_sched_t *s, const mc_topo_t *topo, int keep_intervals,
                           int64_t *work_left, double horizon_s, int64_t *nflows,
                           mc_sim_result_t *res, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    size_t nl = (size_t)topo->nlinks + 1;
    memset(res, 0, sizeof(*res));
    sim_groups_t *groups = mc_xcalloc((size_t)s->nphases + 1, sizeof(sim_groups_t));
    /* every flow simulated costs two events and two re-ratings at least, and in practice more:
     * a schedule with more flows to simulate than a quarter of the allowance is not started */
    int64_t flows = 0;
    for (int p = 0; p < s->nphases; p++) {
        sim_groups_build(s, topo, p, &groups[p]);
        for (int k = 0; work_left && k < groups[p].ngroups; k++)
            for (int i = groups[p].tree_off[k]; groups[p].same_as[k] < 0 &&
                                                 i < groups[p].tree_off[k + 1]; i++) {
                const mc_tree_t *tr = &s->trees[groups[p].trees[i]];
                flows += (int64_t)tr->nedges * tr->nchunks;
            }
    }
    if (nflows)
        *nflows = flows;
    if (work_left && 4 * flows > *work_left) {
        for (int p = 0; p < s->nphases; p++)
            sim_groups_free(&groups[p]);
        free(groups);
        return mc_err_set(err, MC_ERR_TIMEOUT, "sim: %lld flows are beyond its work limit",
                          (long long)flows);
    }
    res->nlinks = topo->nlinks;
    res->link_busy_s = mc_xcalloc(nl, sizeof(double));
    res->link_bytes = mc_xcalloc(nl, sizeof(double));
    sim_t sm = {.s = s, .topo = topo, .res = res, .keep_intervals = keep_intervals,
                .work_max = work_left ? (*work_left > 0 ? *work_left : 1) : 0,
                .horizon = horizon_s};
    sm.links = mc_xcalloc(nl, sizeof(sim_link_t));
    sim_links_init(&sm.lk, topo);
    int *edge_of = mc_xmalloc(sizeof(int) * (size_t)(topo->ngpus + 1));
    for (int g = 0; g < topo->ngpus; g++)
        edge_of[g] = -1;
    double t = 0;
    for (int p = 0; p < s->nphases; p++)
        MC_CHECK_GOTO(run_phase(&sm, p, &groups[p], edge_of, t, &t, err), out, st);
    res->makespan_s = t;
    gather_intervals(&sm);
out:
    for (int p = 0; p < s->nphases; p++)
        sim_groups_free(&groups[p]);
    free(groups);
    if (work_left)
        *work_left -= sm.work;
    free(edge_of);
    sim_free(&sm);
    if (st != MC_OK)
        mc_sim_result_free(res);
    if (st == MC_ERR_TIMEOUT)
        res->makespan_s = sm.stopped_at;
    return st;
}

mc_status_t mc_sim_run(const mc_sched_t *s, const mc_topo_t *topo, mc_sim_result_t *res,
                       mc_err_t *err)
{
    return sim_run(s, topo, 1, NULL, 0, NULL, res, err);
}

mc_status_t mc_sim_run_totals(const mc_sched_t *s, const mc_topo_t *topo, mc_sim_result_t *res,
                              mc_err_t *err)
{
    return sim_run(s, topo, 0, NULL, 0, NULL, res, err);
}

mc_status_t mc_sim_run_bounded(const mc_sched_t *s, const mc_topo_t *topo, int64_t *work_left,
                               mc_sim_result_t *res, mc_err_t *err)
{
    return sim_run(s, topo, 0, work_left, 0, NULL, res, err);
}

mc_status_t mc_sim_run_until(const mc_sched_t *s, const mc_topo_t *topo, int64_t *work_left,
                             double horizon_s, mc_sim_result_t *res, mc_err_t *err)
{
    return sim_run(s, topo, 0, work_left, horizon_s, NULL, res, err);
}

mc_status_t sim_run_until_counted(const mc_sched_t *s, const mc_topo_t *topo, int64_t *work_left,
                                  double horizon_s, int64_t *nflows, mc_sim_result_t *res,
                                  mc_err_t *err)
{
    return sim_run(s, topo, 0, work_left, horizon_s, nflows, res, err);
}

void mc_sim_result_free(mc_sim_result_t *res)
{
    free(res->link_busy_s);
    free(res->link_bytes);
    free(res->intervals);
    memset(res, 0, sizeof(*res));
}
