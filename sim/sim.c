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
#include "util/index.h"

/* Flows of one phase at most: 48 bytes each, so about 2.4 GB. */
#define SIM_MAX_FLOWS 50000000

typedef struct sim_flow {
    int edge, chunk;
    double bytes;
    sim_motion_t m;
    int active;
    int waiting;            /* past its message overhead, behind its edge's chunk before it */
} sim_flow_t;

typedef struct sim_edge {
    int child;              /* the GPU it feeds (not the schedule's edge: a run stopped at its
                             * allowance goes on with another copy of the same schedule) */
    int route, nlinks;      /* its route, from routes[route]: side by side with the other
                             * edges', since every re-rating reads its flows' routes */
    int tree;
    int in_edge;            /* the edge that brings the parent its data, -1 from the root */
    int child_off, nchild;  /* edges leaving the child, in children[] */
    int nchunks, inflight;  /* the tree's */
    int next;               /* chunks whose message overhead has begun, */
    int arrived;            /* and those through */
    int flow_base;
    double delay;           /* alpha + hop latencies, paid by every chunk (overlapping the
                             * chunks before it when inflight > 1) */
    double cap;             /* the connection's rate limit (mc_topo_conn_cap), 0 for none */
    int cls;                /* its route class (sim_class) */
} sim_edge_t;

/* A list of numbers, in an array of its own. */
typedef struct sim_list {
    int *v, n, cap;
} sim_list_t;

/* A link's classes with active flows: per crossing of the link by a class's route, the class
 * and the crossing (its place in the classes' routes, sim_classes_t's links), in no order. */
typedef struct sim_crossings {
    int *cls, *cross, n, cap;
} sim_crossings_t;

/* Route classes: the distinct (route, connection limit) pairs of a run's edges, numbered in the
 * order met, indexed by the hash of their route and limit. Flows of one class get one max-min
 * rate, so the solver takes each class once, and the re-rating gathers its component class by
 * class (sim_links.c): per class its active flows, per link its classes with active flows. */
typedef struct sim_classes {
    int n, cap, *off, *links, nlinks, links_cap;
    double *conn;
    mc_index_t index;
    sim_list_t *active;     /* per class: its active flows, in the order they became active */
    double *rate;           /* per class: the rate its last re-rating gave its active flows, */
    unsigned char *joined;  /* and whether a flow became active since (at rate 0) */
    int *at, at_cap;        /* per crossing (links[]): its place on its link's crossings */
} sim_classes_t;

typedef struct sim_link {
    int *flows, n, cap;     /* active flows, in the order they became active, and `dead` flows
                             * no longer active: a flow that ends stays until they are half */
    int dead;
    sim_crossings_t cls;    /* the classes of its active flows */
    double rate, since;     /* current total rate and since when */
    mc_sim_interval_t *iv;  /* its timeline so far, in time order */
    int niv, iv_cap;
} sim_link_t;

struct sim_run {
    const mc_sched_t *s;
    const mc_topo_t *topo;
    mc_sim_result_t res;
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
    /* per flow, apart from the rest: its rate (the one in its motion: a link's total sums
     * them), and when it became active in its group (its place on every link's flows) */
    double *flow_rate;
    int flow_rate_cap;
    unsigned *flow_version;  /* per flow: its motion's version, apart too, since most finish
                              * events popped are superseded and are told so from it alone */
    int flow_version_cap;
    unsigned *flow_seq, seq;
    int flow_seq_cap;
    unsigned *moved, stamp;  /* per link: the re-rating (stamp) that touched it or re-rated one of
                              * its flows to another rate */
    sim_flow_at_t *changed;  /* per re-rating: the flows re-rated to another rate */
    int changed_cap;
    sim_classes_t cls;
    sim_twins_t twins;       /* the group's classes' routes as the solver takes them */
    int *group_cls, group_cls_cap; /* scratch: the group's distinct classes, */
    unsigned *cls_seen, group_no;  /* met in group number group_no */
    int cls_seen_cap;
    int keep_intervals;
    int64_t work, work_max;  /* events, and flows and links re-rated, so far; the limit (0: none) */
    double stopped_at;       /* simulated time when the limit stopped it */
    double horizon;          /* simulated time past which it stops (0: none) */
    double floor;            /* the least makespan its schedule can have, for the cut (0: no cut) */
    int cut;                 /* stopped by the cut (stop_here) */
    const atomic_int *cancel; /* set: stop (a run made apart, mc_sim_run_apart); or NULL */
    sim_seen_t *seen;        /* a run made ahead: what its batches saw (sim_run_ahead); or NULL */
    int can_go_on;           /* stopped (if so) by *cancel or the allowance: it can go on */
    double *link_load;       /* per link: the bytes the phase's group in its event loop sends
                              * over it */
    int64_t load_check;      /* work at which stop_here next looks at those loads */
    int64_t nflows_all;      /* flows of its distinct groups: what it has to simulate */
    /* where the run is, so that one stopped at its allowance can go on (sim_run_until_counted):
     * phase `phase` began at t0 and its groups so far end at t_end; group `group` is in its
     * event loop (in_group) at `now`, its last event that moved something at `last` */
    sim_groups_t *groups;
    int nphases, phase, group, in_group;
    double t0, t_end, now, last;
    int *edge_of;
    /* the phase's groups: per group its end and flows; per link of a group (link_off), its busy
     * time, bytes and timeline length before the group ran, then what the group added */
    double *busy, *bytes, *end;
    int *at;
    long *gflows;
};

static double edge_delay(const mc_topo_t *topo, const mc_tree_edge_t *e)
{
    return mc_topo_links_delay(topo, e->links, e->nlinks);
}

static uint64_t route_hash(const int *links, int n, double conn)
{
    uint64_t b;
    memcpy(&b, &conn, sizeof b);
    uint64_t h = mc_hash_step(MC_HASH_SEED, b);
    for (int j = 0; j < n; j++)
        h = mc_hash_step(h, (uint32_t)links[j]);
    return mc_hash_fold(h);
}

static int class_is(const sim_classes_t *c, int k, const int *links, int n, double conn)
{
    return c->off[k + 1] - c->off[k] == n && c->conn[k] == conn &&
           !memcmp(c->links + c->off[k], links, sizeof(int) * (size_t)n);
}

/* The number of the class of a route and connection limit, a new one if none has them. */
static int sim_class(sim_classes_t *c, const int *links, int n, double conn)
{
    uint64_t h = route_hash(links, n, conn);
    size_t at = mc_index_start(&c->index, h);
    for (int k; (k = mc_index_next(&c->index, h, &at)) >= 0;)
        if (class_is(c, k, links, n, conn))
            return k;
    int k = c->n++;
    mc_index_add(&c->index, h, k);
    if (c->n + 1 > c->cap) {
        c->cap = 2 * c->n + 16;
        c->off = mc_xrealloc(c->off, sizeof(int) * (size_t)c->cap);
        c->conn = mc_xrealloc(c->conn, sizeof(double) * (size_t)c->cap);
        c->active = mc_xrealloc(c->active, sizeof(sim_list_t) * (size_t)c->cap);
        c->rate = mc_xrealloc(c->rate, sizeof(double) * (size_t)c->cap);
        c->joined = mc_xrealloc(c->joined, (size_t)c->cap);
        c->off[0] = 0;
    }
    c->active[k] = (sim_list_t){0};
    c->rate[k] = 0;
    c->joined[k] = 0;
    MC_GROW(c->links, c->links_cap, c->nlinks + n);
    MC_GROW(c->at, c->at_cap, c->nlinks + n);
    memcpy(c->links + c->nlinks, links, sizeof(int) * (size_t)n);
    c->off[k + 1] = c->nlinks += n;
    c->conn[k] = conn;
    return k;
}

/* Adds the edges and flows of tree ti to the phase. */
static mc_status_t build_tree(sim_t *sm, int ti, int *edge_of, mc_err_t *err)
{
    const mc_tree_t *tr = &sm->s->trees[ti];
    const mc_topo_t *topo = sm->topo;
    mc_status_t st = MC_OK;
    int base = sm->nedges;
    if (tr->root < 0 || tr->root >= topo->ngpus || tr->nchunks < 1 ||
        tr->nchunks > MC_SCHED_MAX_CHUNKS || tr->ramp < 0 || tr->ramp > MC_SCHED_MAX_RAMP)
        return mc_err_set(err, MC_ERR_INVALID, "sim: tree %d has root %d and %d chunks (ramp %d)",
                          ti, tr->root, tr->nchunks, tr->ramp);
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
        double conn = mc_topo_conn_cap(topo, ed->parent, ed->child, ed->links, ed->nlinks);
        sm->edges[sm->nedges] = (sim_edge_t){.child = ed->child, .route = sm->nroutes,
                                             .nlinks = ed->nlinks,
                                             .tree = ti, .in_edge = in,
                                             .nchunks = tr->nchunks,
                                             .inflight = tr->inflight > 1 ? tr->inflight : 1,
                                             .flow_base = sm->nflows,
                                             .delay = edge_delay(topo, ed), .cap = conn,
                                             .cls = sim_class(&sm->cls, ed->links, ed->nlinks,
                                                              conn)};
        edge_of[ed->child] = sm->nedges++;
        MC_GROW(sm->routes, sm->route_cap, sm->nroutes + ed->nlinks);
        memcpy(sm->routes + sm->nroutes, ed->links, sizeof(int) * (size_t)ed->nlinks);
        sm->nroutes += ed->nlinks;
        MC_GROW(sm->flows, sm->flow_cap, sm->nflows + tr->nchunks);
        MC_GROW(sm->flow_seq, sm->flow_seq_cap, sm->nflows + tr->nchunks);
        MC_GROW(sm->flow_rate, sm->flow_rate_cap, sm->nflows + tr->nchunks);
        MC_GROW(sm->flow_version, sm->flow_version_cap, sm->nflows + tr->nchunks);
        for (int k = 0; k < tr->nchunks; k++) {
            uint64_t off, len;
            mc_tree_chunk(tr, k, &off, &len);
            sm->flow_rate[sm->nflows] = 0;
            sm->flow_version[sm->nflows] = 0;
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
        edge_of[sm->edges[i].child] = -1;
    return st;
}

/* Starts the message overhead of edge i's next chunks that its parent holds, as many as leave
 * at most `inflight` of the edge's chunks not yet through. */
static void try_start(sim_t *sm, int i, double now)
{
    sim_edge_t *e = &sm->edges[i];
    while (e->next < e->nchunks && e->next - e->arrived < e->inflight &&
           (e->in_edge < 0 || sm->edges[e->in_edge].arrived > e->next))
        sim_queue_push(&sm->q, now + e->delay, SIM_EV_ACTIVATE, e->flow_base + e->next++, 0);
}

static void link_add(sim_link_t *l, int f)
{
    MC_GROW(l->flows, l->cap, l->n + 1);
    l->flows[l->n++] = f;
}

/* A flow on l ended: l drops its flows no longer active once they are half of its flows, so
 * that an end costs no search of its link's flows (on the 1 GiB all-to-alls over eight DGX-1s,
 * the search was 7% of the instructions). At a group's end every link is empty. */
static void link_dead(sim_t *sm, sim_link_t *l)
{
    if (2 * ++l->dead <= l->n)
        return;
    int k = 0;
    for (int i = 0; i < l->n; i++)
        if (sm->flows[l->flows[i]].active)
            l->flows[k++] = l->flows[i];
    l->n = k;
    l->dead = 0;
}

/* Removes x, if there, from the list, keeping the others' order. */
static void list_remove(sim_list_t *l, int x)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == x) {
            memmove(&l->v[i], &l->v[i + 1], sizeof(int) * (size_t)(l->n - i - 1));
            l->n--;
            return;
        }
}

static void list_add(sim_list_t *l, int x)
{
    MC_GROW(l->v, l->cap, l->n + 1);
    l->v[l->n++] = x;
}

/* Crossing x of class c goes on the link's crossings (lc). */
static void cross_add(sim_classes_t *cs, sim_crossings_t *lc, int c, int x)
{
    if (lc->n == lc->cap) {
        lc->cap = 2 * lc->cap + 4;
        lc->cls = mc_xrealloc(lc->cls, sizeof(int) * (size_t)lc->cap);
        lc->cross = mc_xrealloc(lc->cross, sizeof(int) * (size_t)lc->cap);
    }
    lc->cls[lc->n] = c;
    lc->cross[lc->n] = x;
    cs->at[x] = lc->n++;
}

/* Crossing x leaves the link's crossings, the last taking its place: no search. */
static void cross_remove(sim_classes_t *cs, sim_crossings_t *lc, int x)
{
    int i = cs->at[x], last = --lc->n;
    lc->cls[i] = lc->cls[last];
    lc->cross[i] = lc->cross[last];
    cs->at[lc->cross[i]] = i;
}

/* Flow f of edge e becomes active (on) or not: its class's active flows, and when the class
 * gains its first or loses its last, its route's links' crossings. */
static void class_flow(sim_t *sm, const sim_edge_t *e, int f, int on)
{
    sim_list_t *a = &sm->cls.active[e->cls];
    if (on) {
        list_add(a, f);
        sm->cls.joined[e->cls] = 1;
    } else
        list_remove(a, f);
    if (a->n != on)
        return;
    for (int j = 0, x = sm->cls.off[e->cls]; j < e->nlinks; j++, x++) {
        sim_crossings_t *lc = &sm->links[sm->routes[e->route + j]].cls;
        if (on)
            cross_add(&sm->cls, lc, e->cls, x);
        else
            cross_remove(&sm->cls, lc, x);
    }
}

/* Flow fi's bytes begin to move (at rate 0 until the re-rating). */
static void activate(sim_t *sm, sim_edge_t *e, int fi, double now)
{
    sim_flow_t *f = &sm->flows[fi];
    f->active = 1;
    f->m.remaining = f->bytes;
    f->m.rate = 0;
    f->m.t_upd = now;
    for (int j = 0; j < e->nlinks; j++) {
        link_add(&sm->links[sm->routes[e->route + j]], fi);
        sim_links_touch(&sm->lk, sm->routes[e->route + j]);
    }
    sm->flow_seq[fi] = sm->seq++;
    class_flow(sm, e, fi, 1);
}

/* Applies one event; returns 0 for a finish event that a later rate change superseded. A finish
 * of its flow's current version is of an active flow: versions change only while a flow is
 * active, each is queued once, and the flow ends when that event pops. A chunk past its message
 * overhead moves once the edge's chunk before it is through (one connection moves its chunks in
 * order): until then it is `waiting`, and the end of that chunk starts it. */
static int process(sim_t *sm, const sim_event_t *ev, double now)
{
    if (ev->kind == SIM_EV_FINISH && ev->version != sm->flow_version[ev->flow])
        return 0;
    sim_flow_t *f = &sm->flows[ev->flow];
    sim_edge_t *e = &sm->edges[f->edge];
    if (ev->kind == SIM_EV_ACTIVATE) {
        if (e->arrived < f->chunk)
            f->waiting = 1;
        else
            activate(sm, e, ev->flow, now);
        return 1;
    }
    f->active = 0;
    f->m.remaining = 0;
    sm->flow_rate[ev->flow] = 0; /* summed with its link's flows: adds nothing */
    for (int j = 0; j < e->nlinks; j++) {
        link_dead(sm, &sm->links[sm->routes[e->route + j]]);
        sim_links_touch(&sm->lk, sm->routes[e->route + j]);
    }
    class_flow(sm, e, ev->flow, 0);
    e->arrived++;
    if (e->arrived < e->nchunks && sm->flows[e->flow_base + e->arrived].waiting) {
        sm->flows[e->flow_base + e->arrived].waiting = 0;
        activate(sm, e, e->flow_base + e->arrived, now);
    }
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
        sm->res.link_busy_s[l] += now - sl->since;
        sm->res.link_bytes[l] += sl->rate * (now - sl->since);
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

static const int *flow_path(const void *ctx, int f, int *nlinks, double *cap)
{
    const sim_t *sm = ctx;
    const sim_edge_t *e = &sm->edges[sm->flows[f].edge];
    *nlinks = e->nlinks;
    *cap = e->cap;
    return sm->routes + e->route;
}

static const int *classes_on(const void *ctx, int l, int *n)
{
    const sim_t *sm = ctx;
    *n = sm->links[l].cls.n;
    return sm->links[l].cls.cls;
}

static const int *class_flows(const void *ctx, int c, int *n)
{
    const sim_t *sm = ctx;
    *n = sm->cls.active[c].n;
    return sm->cls.active[c].v;
}

static const int *solver_route(const void *ctx, int c, int *n)
{
    const sim_t *sm = ctx;
    *n = sm->twins.route_n[c];
    return sm->twins.routes + sm->twins.route_at[c];
}

/* New max-min rates for the component around the touched links; new finish events. */
static void recompute(sim_t *sm, double now)
{
    sim_links_t *lk = &sm->lk;
    sim_flows_t fl = {sm, sm->nflows, on_link, flow_path, sm->cls.n, classes_on, class_flows,
                      sm->flow_seq, solver_route, sm->twins.first};
    sim_links_rerate(lk, &fl);
    sm->work += lk->ncomp_flows + lk->ncomp_links;
    if (++sm->stamp == 0) { /* wrapped: old stamps could collide */
        memset(sm->moved, 0, sizeof(unsigned) * (size_t)sm->topo->nlinks);
        sm->stamp = 1;
    }
    for (int i = 0; i < lk->ntouched; i++)
        sm->moved[lk->touched[i]] = sm->stamp;
    /* a flow re-rated to another rate moves up to now at its old one (one whose rate stays moves
     * on as it did); a class with such a flow moves its links (its route). A class whose rate
     * stays and that no flow joined since its last re-rating has none. */
    int n = 0;
    MC_GROW(sm->changed, sm->changed_cap, lk->ncomp_flows);
    for (int i = 0; i < lk->ncls; i++) {
        int c = lk->ent_cls[i];
        double rate = lk->crate[i];
        if (!sm->cls.joined[c] && sm->cls.rate[c] == rate)
            continue;
        sm->cls.joined[c] = 0;
        sm->cls.rate[c] = rate;
        const sim_list_t *a = &sm->cls.active[c];
        int had = n;
        for (int k = 0; k < a->n; k++)
            if (sm->flow_rate[a->v[k]] != rate) {
                sim_motion_advance(&sm->flows[a->v[k]].m, now);
                sm->changed[n++] = (sim_flow_at_t){a->v[k], i};
            }
        for (int x = sm->cls.off[c]; n > had && x < sm->cls.off[c + 1]; x++)
            sm->moved[sm->cls.links[x]] = sm->stamp;
    }
    /* their new finishes, queued in the order a gathering flow by flow re-rates them, which
     * breaks the ties of equal times */
    sim_links_order(lk, &fl, sm->changed, n);
    for (int k = 0; k < n; k++) {
        int f = sm->changed[k].flow;
        sm->flow_rate[f] = lk->crate[sm->changed[k].entry];
        sim_motion_retime(&sm->flows[f].m, sm->flow_rate[f], now, &sm->q, f);
        sm->flow_version[f] = sm->flows[f].m.version;
    }
    /* every active flow on these links is in the component, so flow_rate is its motion's rate
     * (0 for a flow no longer active); a link whose flows and their rates are those of its last
     * total has that total, which record() takes already: it is not summed again */
    for (int i = 0; i < lk->ncomp_links; i++) {
        if (sm->moved[lk->comp_links[i]] != sm->stamp)
            continue;
        sim_link_t *l = &sm->links[lk->comp_links[i]];
        double total = 0;
        for (int k = 0; k < l->n; k++)
            total += sm->flow_rate[l->flows[k]];
        record(sm, lk->comp_links[i], now, total);
    }
}

/* The solver's routes of the group's classes (sim_twins.c). */
static void group_twins(sim_t *sm)
{
    MC_GROW(sm->group_cls, sm->group_cls_cap, sm->nedges);
    if (sm->cls.n > sm->cls_seen_cap) {
        sm->cls_seen = mc_xrealloc(sm->cls_seen, sizeof(unsigned) * (size_t)sm->cls.n);
        memset(sm->cls_seen + sm->cls_seen_cap, 0,
               sizeof(unsigned) * (size_t)(sm->cls.n - sm->cls_seen_cap));
        sm->cls_seen_cap = sm->cls.n;
    }
    if (++sm->group_no == 0) { /* wrapped: old marks could collide */
        memset(sm->cls_seen, 0, sizeof(unsigned) * (size_t)sm->cls_seen_cap);
        sm->group_no = 1;
    }
    int n = 0;
    for (int i = 0; i < sm->nedges; i++) {
        int c = sm->edges[i].cls;
        if (sm->cls_seen[c] != sm->group_no) {
            sm->cls_seen[c] = sm->group_no;
            sm->group_cls[n++] = c;
        }
    }
    sim_twins_build(&sm->twins, sm->topo->nlinks, sm->lk.cap, sm->group_cls, n, sm->cls.off,
                    sm->cls.links, sm->cls.n);
}

/* Sets up the n trees of one group in trees[] to run from t0: their edges, flows and first
 * chunks. */
static mc_status_t group_begin(sim_t *sm, const int *trees, int n, double t0, mc_err_t *err)
{
    sm->nedges = sm->nflows = sm->nchildren = sm->nroutes = 0;
    sm->seq = 0;
    /* the arrays sized once for the group, not doubled (and copied) tree by tree; build_tree
     * checks the counts, so sizes past SIM_MAX_FLOWS are left to it */
    int64_t nedges = 0, nroutes = 0, nflows = 0;
    for (int i = 0; i < n; i++) {
        const mc_tree_t *tr = &sm->s->trees[trees[i]];
        nedges += tr->nedges;
        nflows += (int64_t)tr->nedges * (tr->nchunks > 0 ? tr->nchunks : 0);
        for (int e = 0; e < tr->nedges; e++)
            nroutes += tr->edges[e].nlinks > 0 ? tr->edges[e].nlinks : 0;
    }
    if (nflows <= SIM_MAX_FLOWS && nroutes <= SIM_MAX_FLOWS) {
        MC_GROW(sm->edges, sm->edge_cap, (int)nedges);
        MC_GROW(sm->children, sm->children_cap, (int)nedges);
        MC_GROW(sm->routes, sm->route_cap, (int)nroutes);
        MC_GROW(sm->flows, sm->flow_cap, (int)nflows);
        MC_GROW(sm->flow_seq, sm->flow_seq_cap, (int)nflows);
        MC_GROW(sm->flow_rate, sm->flow_rate_cap, (int)nflows);
        MC_GROW(sm->flow_version, sm->flow_version_cap, (int)nflows);
    }
    for (int i = 0; i < n; i++) {
        mc_status_t st = build_tree(sm, trees[i], sm->edge_of, err);
        if (st != MC_OK)
            return st;
    }
    group_twins(sm);
    sm->now = sm->last = t0;
    for (int i = 0; i < sm->nedges; i++)
        if (sm->edges[i].in_edge < 0)
            try_start(sm, i, sm->now);
    return MC_OK;
}

/* The cut: a run with an allowance W and a floor F (a time its makespan cannot be below: the
 * task's bound) that has taken a quarter of W or more and whose simulated time, at the pace of
 * its work so far, would reach less than F / SIM_CUT_MARGIN by the end of W, is stopped there as
 * if W had stopped it: it could end within W only if its simulated time moved more than
 * SIM_CUT_MARGIN times faster per unit of work from there on than up to there. A forecast, not
 * a proof: over the 1318 allowed runs of the 96 eight-host tasks, none that ended or passed its
 * horizon was more than 1.46 times short of its floor at that pace, at a quarter, half or all of
 * its allowance, but a margin of 2 cut the winner of a 1 GiB broadcast over four p4d hosts, 2.55
 * times short at half its allowance, whose time then moved 4.9 times faster per unit of work
 * (docs/synthesis.md, session 19). SIM_CUT_MARGIN is in sim_internal.h. */

/* How often a run with a horizon looks at its links' loads (group_end_least). */
#define LOAD_CHECK_LINKS 16
#define LOAD_CHECK_WORK 4096

/* The least time the group in its event loop can end at: its last event that moved something,
 * plus, on each of its links, the bytes its flows had still to move then at the link's bandwidth
 * (less a billionth of its load, for the rounding of the bytes summed so far). Nothing changed
 * since that event, so the links' rates since their last change give the bytes moved up to it.
 * Sets when it is next called for: every LOAD_CHECK_LINKS units of work per link of the group
 * and LOAD_CHECK_WORK more, so that it costs a fraction of the run. */
static double group_end_least(sim_t *sm)
{
    const sim_groups_t *g = &sm->groups[sm->phase];
    int k = sm->group;
    double most = 0;
    for (int i = g->link_off[k]; i < g->link_off[k + 1]; i++) {
        int l = g->links[i];
        const sim_link_t *sl = &sm->links[l];
        double moved = sm->res.link_bytes[l] - sm->bytes[i] + sl->rate * (sm->last - sl->since);
        double left = (sm->link_load[l] * (1 - 1e-9) - moved) / sm->lk.cap[l];
        if (left > most)
            most = left;
    }
    sm->load_check = sm->work + LOAD_CHECK_WORK +
                     LOAD_CHECK_LINKS * (int64_t)(g->link_off[k + 1] - g->link_off[k]);
    return sm->last + most;
}

/* Whether the run must stop here: cancelled, past its allowance (MC_ERR_TIMEOUT, the state kept
 * so that it can go on), past its horizon (or its links' loads end it past it), or by the cut.
 * Checked after each batch of events, and first when a stopped run goes on under a new
 * allowance, so that it stops where a run begun afresh would. */
static mc_status_t stop_here(sim_t *sm, mc_err_t *err)
{
    sm->can_go_on = 1; /* stopped before this batch's checks, which it makes again going on */
    if (sm->cancel && atomic_load_explicit(sm->cancel, memory_order_relaxed)) {
        sm->stopped_at = sm->now;
        return mc_err_set(err, MC_ERR_TIMEOUT, "sim: cancelled");
    }
    if (sm->work_max && sm->work > sm->work_max) {
        sm->stopped_at = sm->now;
        return mc_err_set(err, MC_ERR_TIMEOUT, "sim: stopped at its work limit (%lld events, "
                          "flows and links re-rated)", (long long)sm->work_max);
    }
    sm->can_go_on = 0;
    /* now may be a superseded finish (stale events pop after the last flow): the makespan is at
     * least the last event that moved something; the links' loads are looked at only when that
     * is not past the horizon */
    double end = -1;
    if (sm->horizon > 0 && sm->last <= sm->horizon && sm->in_group &&
        sm->work >= sm->load_check)
        end = group_end_least(sm);
    /* the time reached: the phase's link-disjoint groups are simulated one after another, each
     * from the phase's start, so a later group's clock starts again below the earlier's ends */
    double reached = sm->now > sm->t_end ? sm->now : sm->t_end;
    if (sm->seen)
        sim_seen_batch(sm->seen, sm->work, sm->now, sm->last, end, reached);
    if (sm->horizon > 0 && sm->last > sm->horizon) {
        sm->stopped_at = sm->last;
        return mc_err_set(err, MC_ERR_TIMEOUT, "sim: stopped past its horizon (%g s)",
                          sm->horizon);
    }
    if (sm->horizon > 0 && end > sm->horizon) {
        sm->stopped_at = end;
        return mc_err_set(err, MC_ERR_TIMEOUT, "sim: its links' loads end it past its horizon "
                          "(%g s)", sm->horizon);
    }
    if (sm->floor > 0 && sm->work_max && 4 * sm->work >= sm->work_max &&
        SIM_CUT_MARGIN * reached * (double)sm->work_max < sm->floor * (double)sm->work) {
        sm->stopped_at = sm->now;
        sm->cut = 1;
        return mc_err_set(err, MC_ERR_TIMEOUT, "sim: cut at %lld of its work limit (%lld): %g s "
                          "reached, at least %g s to go", (long long)sm->work,
                          (long long)sm->work_max, sm->now, sm->floor);
    }
    return MC_OK;
}

/* Runs the group set up by group_begin to its end, or until stop_here; returns its end time in
 * *t_end. */
static mc_status_t group_events(sim_t *sm, int phase, double *t_end, mc_err_t *err)
{
    double now = sm->now, last = sm->last;
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
        sm->now = now;
        sm->last = last;
        mc_status_t st = stop_here(sm, err);
        if (st != MC_OK)
            return st;
    }
    for (int i = 0; i < sm->nedges; i++)
        if (sm->edges[i].arrived < sm->edges[i].nchunks)
            return mc_err_set(err, MC_ERR_INTERNAL, "sim: phase %d stalled on tree %d", phase,
                              sm->edges[i].tree);
    sm->res.nflows += sm->nflows;
    *t_end = last;
    sim_queue_free(&sm->q);
    return MC_OK;
}

/* Group k of g is a copy of group r, simulated already: its links get r's per-link results of
 * this phase (from index at[j] of r's j-th link's timeline), renumbered. */
static void copy_group(sim_t *sm, const sim_groups_t *g, int k, int r)
{
    mc_sim_result_t *res = &sm->res;
    for (int j = 0; j < g->link_off[r + 1] - g->link_off[r]; j++) {
        int from = g->links[g->link_off[r] + j], to = g->links[g->link_off[k] + j];
        int i = g->link_off[r] + j;
        res->link_busy_s[to] += sm->busy[i];
        res->link_bytes[to] += sm->bytes[i];
        sim_link_t *src = &sm->links[from], *dst = &sm->links[to];
        for (int v = sm->at[i]; v < src->niv; v++) {
            MC_GROW(dst->iv, dst->iv_cap, dst->niv + 1);
            dst->iv[dst->niv] = src->iv[v];
            dst->iv[dst->niv++].link = to;
        }
    }
}

static void phase_free(sim_t *sm)
{
    free(sm->busy);
    free(sm->bytes);
    free(sm->at);
    free(sm->end);
    free(sm->gflows);
    sm->busy = sm->bytes = sm->end = NULL;
    sm->at = NULL;
    sm->gflows = NULL;
}

/* The bytes group k of g, set up by group_begin, sends over each of its links (sm->link_load);
 * its first batch of events looks at them. */
static void group_loads(sim_t *sm, const sim_groups_t *g, int k)
{
    for (int i = g->link_off[k]; i < g->link_off[k + 1]; i++)
        sm->link_load[g->links[i]] = 0;
    for (int i = 0; i < sm->nedges; i++) {
        const sim_edge_t *e = &sm->edges[i];
        double bytes = (double)sm->s->trees[e->tree].bytes;
        for (int j = 0; j < e->nlinks; j++)
            sm->link_load[sm->routes[e->route + j]] += bytes;
    }
    sm->load_check = sm->work;
}

/* Runs the current phase from its current group, each distinct group of link-disjoint trees once
 * (sim_groups.c), until its end (then sm->t_end is its end time) or until stop_here. */
static mc_status_t run_phase(sim_t *sm, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    const sim_groups_t *g = &sm->groups[sm->phase];
    int n = g->ngroups;
    if (!sm->busy) {
        int nl = g->link_off[n];
        sm->busy = mc_xmalloc(sizeof(double) * (size_t)(nl + 1));
        sm->bytes = mc_xmalloc(sizeof(double) * (size_t)(nl + 1));
        sm->at = mc_xmalloc(sizeof(int) * (size_t)(nl + 1));
        sm->end = mc_xmalloc(sizeof(double) * (size_t)(n + 1));
        sm->gflows = mc_xmalloc(sizeof(long) * (size_t)(n + 1));
        sm->t_end = sm->t0;
    }
    for (; sm->group < n; sm->group++) {
        int k = sm->group, r = g->same_as[k];
        if (r >= 0) {
            copy_group(sm, g, k, r);
            sm->end[k] = sm->end[r];
            sm->res.nflows += sm->gflows[r];
        } else {
            if (!sm->in_group) {
                for (int i = g->link_off[k]; i < g->link_off[k + 1]; i++) {
                    sm->busy[i] = sm->res.link_busy_s[g->links[i]];
                    sm->bytes[i] = sm->res.link_bytes[g->links[i]];
                    sm->at[i] = sm->links[g->links[i]].niv;
                }
                sm->gflows[k] = sm->res.nflows;
                st = group_begin(sm, g->trees + g->tree_off[k],
                                 g->tree_off[k + 1] - g->tree_off[k], sm->t0, err);
                if (st != MC_OK)
                    return st;
                group_loads(sm, g, k);
                sm->in_group = 1;
            }
            st = group_events(sm, sm->phase, &sm->end[k], err);
            if (st != MC_OK)
                return st;
            sm->in_group = 0;
            sm->gflows[k] = sm->res.nflows - sm->gflows[k];
            for (int i = g->link_off[k]; i < g->link_off[k + 1]; i++) {
                sm->busy[i] = sm->res.link_busy_s[g->links[i]] - sm->busy[i];
                sm->bytes[i] = sm->res.link_bytes[g->links[i]] - sm->bytes[i];
            }
        }
        if (sm->end[k] > sm->t_end)
            sm->t_end = sm->end[k];
    }
    phase_free(sm);
    return st;
}

/* The per-link timelines, concatenated in link order. */
static void gather_intervals(sim_t *sm)
{
    mc_sim_result_t *r = &sm->res;
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

void sim_run_free(sim_t *sm)
{
    if (!sm)
        return;
    for (int l = 0; sm->links && l < sm->topo->nlinks; l++) {
        free(sm->links[l].flows);
        free(sm->links[l].cls.cls);
        free(sm->links[l].cls.cross);
        free(sm->links[l].iv);
    }
    free(sm->links);
    sim_links_free(&sm->lk);
    sim_queue_free(&sm->q);
    free(sm->edges);
    free(sm->children);
    free(sm->routes);
    free(sm->flows);
    free(sm->flow_seq);
    free(sm->flow_rate);
    free(sm->flow_version);
    free(sm->moved);
    free(sm->link_load);
    free(sm->changed);
    free(sm->cls.off);
    free(sm->cls.links);
    sim_twins_free(&sm->twins);
    free(sm->group_cls);
    free(sm->cls_seen);
    free(sm->cls.conn);
    mc_index_free(&sm->cls.index);
    for (int c = 0; c < sm->cls.n; c++)
        free(sm->cls.active[c].v);
    free(sm->cls.active);
    free(sm->cls.rate);
    free(sm->cls.joined);
    free(sm->cls.at);
    for (int p = 0; p < sm->nphases; p++)
        sim_groups_free(&sm->groups[p]);
    free(sm->groups);
    free(sm->edge_of);
    phase_free(sm);
    mc_sim_result_free(&sm->res);
    free(sm);
}

/* The flows of one phase's distinct groups: what a run simulates of it. */
static int64_t distinct_flows(const mc_sched_t *s, const sim_groups_t *g)
{
    int64_t n = 0;
    for (int k = 0; k < g->ngroups; k++)
        for (int i = g->tree_off[k]; g->same_as[k] < 0 && i < g->tree_off[k + 1]; i++) {
            const mc_tree_t *tr = &s->trees[g->trees[i]];
            n += (int64_t)tr->nedges * tr->nchunks;
        }
    return n;
}

int64_t mc_sim_least_work(const mc_sched_t *s, const mc_topo_t *topo)
{
    int64_t n = 0;
    for (int p = 0; p < s->nphases; p++) {
        sim_groups_t g = {0};
        sim_groups_build(s, topo, p, &g);
        n += distinct_flows(s, &g);
        sim_groups_free(&g);
    }
    return MC_SIM_WORK_PER_FLOW * n;
}

/* A run of s set up at its start. */
static sim_t *sim_new(const mc_sched_t *s, const mc_topo_t *topo, int keep_intervals)
{
    size_t nl = (size_t)topo->nlinks + 1;
    sim_t *sm = mc_xcalloc(1, sizeof *sm);
    *sm = (sim_t){.s = s, .topo = topo, .keep_intervals = keep_intervals,
                  .nphases = s->nphases};
    sm->groups = mc_xcalloc((size_t)s->nphases + 1, sizeof(sim_groups_t));
    for (int p = 0; p < s->nphases; p++) {
        sim_groups_build(s, topo, p, &sm->groups[p]);
        sm->nflows_all += distinct_flows(s, &sm->groups[p]);
    }
    sm->res.nlinks = topo->nlinks;
    sm->res.link_busy_s = mc_xcalloc(nl, sizeof(double));
    sm->res.link_bytes = mc_xcalloc(nl, sizeof(double));
    sm->links = mc_xcalloc(nl, sizeof(sim_link_t));
    sim_links_init(&sm->lk, topo);
    sm->moved = mc_xcalloc(nl, sizeof(unsigned));
    sm->link_load = mc_xcalloc(nl, sizeof(double));
    sm->edge_of = mc_xmalloc(sizeof(int) * (size_t)(topo->ngpus + 1));
    for (int g = 0; g < topo->ngpus; g++)
        sm->edge_of[g] = -1;
    return sm;
}

/* Runs sm from where it is to its end or until stop_here; its result moves to *res, of which
 * only makespan_s is set when it stopped (the time reached). */
static mc_status_t sim_go(sim_t *sm, mc_sim_result_t *res, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    memset(res, 0, sizeof *res);
    if (sm->in_group)
        MC_CHECK_GOTO(stop_here(sm, err), out, st);
    for (; sm->phase < sm->nphases; sm->phase++, sm->group = 0) {
        MC_CHECK_GOTO(run_phase(sm, err), out, st);
        sm->t0 = sm->t_end;
    }
    sm->res.makespan_s = sm->t0;
    gather_intervals(sm);
    *res = sm->res;
    memset(&sm->res, 0, sizeof sm->res);
out:
    if (st == MC_ERR_TIMEOUT)
        res->makespan_s = sm->stopped_at;
    return st;
}

/* Runs s (the timeline kept when keep_intervals) within the allowance *work_left (NULL: none)
 * up to horizon_s (0: none), cut (stop_here) by floor_s (0: no cut; a cut run is charged all of
 * its allowance and one more unit, as the allowance would stop it), stopped as soon as *cancel
 * is set (NULL: never); *nflows gets the flows it has to simulate. With run not NULL, *run NULL
 * begins the run and *run not NULL takes on a run that its allowance (or the cut) stopped with
 * no horizon (sim_run_until_counted); *run gets the run when its allowance or the cut stops it
 * with no horizon, else NULL. */
static mc_status_t sim_run(const mc_sched_t *s, const mc_topo_t *topo, int keep_intervals,
                           int64_t *work_left, double horizon_s, double floor_s,
                           const atomic_int *cancel, int64_t *nflows, sim_t **run,
                           mc_sim_result_t *res, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    sim_t *sm = run ? *run : NULL;
    if (sm)
        sm->s = s; /* the same trees, perhaps another copy of them */
    else
        sm = sim_new(s, topo, keep_intervals);
    if (run)
        *run = NULL;
    if (nflows)
        *nflows = sm->nflows_all;
    memset(res, 0, sizeof *res);
    /* every flow simulated costs two events and two re-ratings at least, and in practice more:
     * a schedule with more flows to simulate than a quarter of the allowance is not started */
    if (work_left && MC_SIM_WORK_PER_FLOW * sm->nflows_all > *work_left) {
        st = mc_err_set(err, MC_ERR_TIMEOUT, "sim: %lld flows are beyond its work limit",
                        (long long)sm->nflows_all);
        if (run && sm->in_group) /* still as it was stopped */
            *run = sm;
        else
            sim_run_free(sm);
        return st;
    }
    sm->work_max = work_left ? (*work_left > 0 ? *work_left : 1) : 0;
    sm->horizon = horizon_s;
    sm->floor = work_left ? floor_s : 0;
    sm->cut = 0;
    sm->cancel = cancel;
    st = sim_go(sm, res, err);
    /* its work from the start, as a run begun afresh with this allowance takes */
    if (work_left)
        *work_left -= sm->cut ? sm->work_max + 1 : sm->work;
    if (run && st == MC_ERR_TIMEOUT && horizon_s == 0 && work_left)
        *run = sm;
    else
        sim_run_free(sm);
    return st;
}

mc_status_t sim_run_ahead(const mc_sched_t *s, const mc_topo_t *topo, int64_t work_max,
                          double horizon_s, sim_seen_t *seen, const atomic_int *cancel,
                          sim_t **run, mc_sim_result_t *res, mc_err_t *err)
{
    sim_t *sm = sim_new(s, topo, 0); /* no floor: uncut */
    sm->work_max = work_max;
    sm->horizon = horizon_s;
    sm->cancel = cancel;
    sm->seen = seen;
    mc_status_t st = sim_go(sm, res, err);
    sm->cancel = NULL;
    sm->seen = NULL;
    *run = sm;
    return st;
}

int64_t sim_run_work(const sim_t *run)
{
    return run->work;
}

int64_t sim_run_flows(const sim_t *run)
{
    return run->nflows_all;
}

int sim_run_can_go_on(const sim_t *run)
{
    return run->in_group && run->can_go_on;
}

mc_status_t mc_sim_run(const mc_sched_t *s, const mc_topo_t *topo, mc_sim_result_t *res,
                       mc_err_t *err)
{
    return sim_run(s, topo, 1, NULL, 0, 0, NULL, NULL, NULL, res, err);
}

mc_status_t mc_sim_run_totals(const mc_sched_t *s, const mc_topo_t *topo, mc_sim_result_t *res,
                              mc_err_t *err)
{
    return sim_run(s, topo, 0, NULL, 0, 0, NULL, NULL, NULL, res, err);
}

mc_status_t mc_sim_run_bounded(const mc_sched_t *s, const mc_topo_t *topo, int64_t *work_left,
                               mc_sim_result_t *res, mc_err_t *err)
{
    return sim_run(s, topo, 0, work_left, 0, 0, NULL, NULL, NULL, res, err);
}

mc_status_t mc_sim_run_until(const mc_sched_t *s, const mc_topo_t *topo, int64_t *work_left,
                             double horizon_s, mc_sim_result_t *res, mc_err_t *err)
{
    return sim_run(s, topo, 0, work_left, horizon_s, 0, NULL, NULL, NULL, res, err);
}

mc_status_t sim_run_until_counted(const mc_sched_t *s, const mc_topo_t *topo, int64_t *work_left,
                                  double horizon_s, double floor_s, int64_t *nflows, sim_t **run,
                                  mc_sim_result_t *res, mc_err_t *err)
{
    return sim_run(s, topo, 0, work_left, horizon_s, floor_s, NULL, nflows, run, res, err);
}

mc_status_t mc_sim_run_apart(const mc_sched_t *s, const mc_topo_t *topo, int64_t *work_left,
                             double floor_s, const atomic_int *cancel, int64_t *nflows,
                             mc_sim_result_t *res, mc_err_t *err)
{
    return sim_run(s, topo, 0, work_left, 0, floor_s, cancel, nflows, NULL, res, err);
}

void mc_sim_result_free(mc_sim_result_t *res)
{
    free(res->link_busy_s);
    free(res->link_bytes);
    free(res->intervals);
    memset(res, 0, sizeof(*res));
}
