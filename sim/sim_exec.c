/* The executed-plan simulation (sim_exec.h). Each rank's graph comes from the runtime itself
 * (mc_rt_exec_*), so the order is the backend's by construction; posted sends meet posted
 * receives as MPI matches them (oldest send of the peer with the tag), and the resulting flows
 * share links max-min fairly, re-rated whenever one starts or ends. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_exec.h"
#include "sim/sim_internal.h"

/* The links a send crosses: its schedule edge's route, or for a token (a 0-byte message that
 * orders phases, tag beyond the trees) the topology's route between the two GPUs. */
typedef struct xpath {
    const int *links;
    int nlinks;
    double delay;
} xpath_t;

typedef struct xflow {
    const xpath_t *e;
    double cap;                /* its connection's limit (mc_topo_conn_cap), 0 for none */
    int rank, peer;            /* receiving rank and sending rank */
    uint32_t recv, send;       /* their ops */
    sim_motion_t m;
    double delay;
    int on_links;              /* moving bytes: listed on its links */
} xflow_t;

typedef struct xrank {
    mc_rt_exec_t x;
    uint32_t *pend;            /* posted sends and receives not matched yet, in posting order */
    uint32_t npend;
    xpath_t *path;             /* per op: a send's links */
    double *cap;               /* per op: a send's connection limit (mc_topo_conn_cap), 0: none */
    mc_route_t *routes;        /* tokens' routes */
} xrank_t;

typedef struct xsim {
    const mc_sched_t *s;
    const mc_topo_t *topo;
    int nranks;
    const mc_rt_plan_t *plans;
    xrank_t *r;
    double *end;               /* per rank: its last completion */
    xflow_t *flows;
    int nflows, flow_cap;
    int **lflows, *nlflows, *lcap; /* active flows per link */
    sim_links_t lk;                /* capacities and the rate computation (sim_links.c) */
    sim_queue_t q;
} xsim_t;

/* The edge of tree `tree` from GPU parent to GPU child, or NULL. */
static const mc_tree_edge_t *find_edge(const mc_sched_t *s, int tree, int parent, int child)
{
    if (tree < 0 || tree >= s->ntrees)
        return NULL;
    for (int e = 0; e < s->trees[tree].nedges; e++)
        if (s->trees[tree].edges[e].parent == parent && s->trees[tree].edges[e].child == child)
            return &s->trees[tree].edges[e];
    return NULL;
}

static mc_status_t rank_init(xsim_t *xs, int r, const int *gpus, int order, mc_err_t *err)
{
    const mc_rt_plan_t *p = &xs->plans[r];
    mc_rt_err_t re = {0};
    xrank_t *xr = &xs->r[r];
    if (mc_rt_plan_check(p, &re) != MC_RT_OK || mc_rt_exec_init(&xr->x, p, order, &re) != MC_RT_OK)
        return mc_err_set(err, MC_ERR_INVALID, "sim: %s", re.msg);
    xr->pend = mc_xmalloc((p->nops + 1) * sizeof *xr->pend);
    xr->path = mc_xcalloc(p->nops + 1, sizeof *xr->path);
    xr->routes = mc_xcalloc(p->nops + 1, sizeof *xr->routes);
    xr->cap = mc_xcalloc(p->nops + 1, sizeof *xr->cap);
    for (uint32_t i = 0; i < p->nops; i++) {
        const mc_rt_op_t *op = &p->ops[i];
        if (op->kind != MC_RT_OP_SEND)
            continue;
        if (op->tag >= xs->s->ntrees && !op->bytes) {
            mc_status_t st = mc_topo_route(xs->topo, gpus[r], gpus[op->peer], &xr->routes[i], err);
            if (st != MC_OK)
                return st;
            xr->path[i] = (xpath_t){xr->routes[i].links, xr->routes[i].nlinks, 0};
        } else {
            const mc_tree_edge_t *e = find_edge(xs->s, op->tag, gpus[r], gpus[op->peer]);
            if (!e || e->nlinks < 1)
                return mc_err_set(err, MC_ERR_INVALID,
                                  "sim: rank %d (GPU %d), op %u: the schedule has no routed edge "
                                  "GPU %d -> GPU %d in tree %d",
                                  r, gpus[r], i, gpus[r], gpus[op->peer], op->tag);
            xr->path[i] = (xpath_t){e->links, e->nlinks, 0};
            xr->cap[i] = mc_topo_conn_cap(xs->topo, e->parent, e->child, e->links, e->nlinks);
        }
        xr->path[i].delay = mc_topo_links_delay(xs->topo, xr->path[i].links, xr->path[i].nlinks);
    }
    return MC_OK;
}

/* Starts what is ready on every rank (copies finish at once) and turns each posted receive whose
 * send is posted too into a flow that starts after the edge's overhead. Returns its work: the
 * ranks and posted operations it looked at (the allowance counts them: on thousands of ranks they
 * outweigh the events). */
static int64_t advance(xsim_t *xs, double now)
{
    int64_t work = 2 * (int64_t)xs->nranks;
    for (int r = 0; r < xs->nranks; r++) {
        int64_t i;
        while ((i = mc_rt_exec_next(&xs->r[r].x, 0)) >= 0) {
            if (xs->plans[r].ops[i].kind == MC_RT_OP_COPY)
                mc_rt_exec_done(&xs->r[r].x, (uint32_t)i);
            else
                xs->r[r].pend[xs->r[r].npend++] = (uint32_t)i;
        }
    }
    for (int r = 0; r < xs->nranks; r++) {
        xrank_t *xr = &xs->r[r];
        for (uint32_t k = 0; k < xr->npend;) {
            const mc_rt_op_t *op = &xs->plans[r].ops[xr->pend[k]];
            xrank_t *xq = &xs->r[op->peer];
            uint32_t j = 0;
            while (op->kind == MC_RT_OP_RECV && j < xq->npend) {
                work++;
                const mc_rt_op_t *o = &xs->plans[op->peer].ops[xq->pend[j]];
                if (o->kind == MC_RT_OP_SEND && o->peer == r && o->tag == op->tag)
                    break;
                j++;
            }
            if (op->kind != MC_RT_OP_RECV || j == xq->npend) {
                k++;
                continue;
            }
            MC_GROW(xs->flows, xs->flow_cap, xs->nflows + 1);
            const xpath_t *e = &xq->path[xq->pend[j]];
            xs->flows[xs->nflows] = (xflow_t){.e = e, .cap = xq->cap[xq->pend[j]], .rank = r,
                                              .peer = op->peer,
                                              .recv = xr->pend[k], .send = xq->pend[j],
                                              .m = {.remaining = (double)op->bytes}, .delay = e->delay};
            sim_queue_push(&xs->q, now + xs->flows[xs->nflows].delay, SIM_EV_ACTIVATE,
                           xs->nflows, 0);
            xs->nflows++;
            memmove(&xq->pend[j], &xq->pend[j + 1], (xq->npend - j - 1) * sizeof *xq->pend);
            xq->npend--;
            memmove(&xr->pend[k], &xr->pend[k + 1], (xr->npend - k - 1) * sizeof *xr->pend);
            xr->npend--;
        }
    }
    return work;
}

static const int *on_link(const void *ctx, int l, int *n)
{
    const xsim_t *xs = ctx;
    *n = xs->nlflows[l];
    return xs->lflows[l];
}

static const int *flow_path(const void *ctx, int f, int *nlinks, double *cap)
{
    const xsim_t *xs = ctx;
    *nlinks = xs->flows[f].e->nlinks;
    *cap = xs->flows[f].cap;
    return xs->flows[f].e->links;
}

/* New max-min rates for the flows around the touched links; a flow whose rate changed gets a
 * new finish event. */
static void rerate(xsim_t *xs, double now)
{
    sim_flows_t fl = {.ctx = xs, .nflows = xs->nflows, .on_link = on_link, .path = flow_path};
    sim_links_rerate(&xs->lk, &fl);
    for (int i = 0; i < xs->lk.ncomp_flows; i++) /* without classes, flow i is entry i */
        sim_motion_rerate(&xs->flows[xs->lk.comp_flows[i]].m, xs->lk.crate[i], now, &xs->q,
                          xs->lk.comp_flows[i]);
}

/* Applies one event; returns whether the set of active flows changed. */
static int process(xsim_t *xs, const sim_event_t *ev, double now)
{
    xflow_t *f = &xs->flows[ev->flow];
    if (ev->kind == SIM_EV_ACTIVATE && f->m.remaining > 0) {
        f->m.t_upd = now;
        f->on_links = 1;
        for (int j = 0; j < f->e->nlinks; j++) {
            int l = f->e->links[j];
            MC_GROW(xs->lflows[l], xs->lcap[l], xs->nlflows[l] + 1);
            xs->lflows[l][xs->nlflows[l]++] = ev->flow;
            sim_links_touch(&xs->lk, l);
        }
        return 1;
    }
    if (ev->kind == SIM_EV_FINISH && ev->version != f->m.version)
        return 0;
    for (int j = 0; f->on_links && j < f->e->nlinks; j++) {
        int l = f->e->links[j];
        for (int k = 0; k < xs->nlflows[l]; k++)
            if (xs->lflows[l][k] == ev->flow) {
                xs->lflows[l][k] = xs->lflows[l][--xs->nlflows[l]];
                break;
            }
        sim_links_touch(&xs->lk, l);
    }
    f->m.remaining = 0;
    f->on_links = 0;
    xs->end[f->rank] = xs->end[f->peer] = now;
    mc_rt_exec_done(&xs->r[f->rank].x, f->recv);
    mc_rt_exec_done(&xs->r[f->peer].x, f->send);
    return 1;
}

/* The first rank that did not finish, with its oldest posted op. */
static mc_status_t stalled(const xsim_t *xs, mc_err_t *err)
{
    for (int r = 0; r < xs->nranks; r++) {
        const xrank_t *xr = &xs->r[r];
        if (mc_rt_exec_finished(&xr->x))
            continue;
        if (!xr->npend)
            return mc_err_set(err, MC_ERR_INTERNAL, "sim: rank %d stalled with %u of %u ops done",
                              r, xr->x.ndone, xs->plans[r].nops);
        const mc_rt_op_t *op = &xs->plans[r].ops[xr->pend[0]];
        return mc_err_set(err, MC_ERR_INTERNAL,
                          "sim: rank %d stalled: its %s of %llu bytes (tag %d) %s rank %d never "
                          "meets its peer's",
                          r, op->kind == MC_RT_OP_SEND ? "send" : "receive",
                          (unsigned long long)op->bytes, op->tag,
                          op->kind == MC_RT_OP_SEND ? "to" : "from", op->peer);
    }
    return MC_OK;
}

mc_status_t mc_sim_exec(const mc_sched_t *s, const mc_topo_t *topo, int nranks,
                        const mc_rt_plan_t *plans, const int *gpus, int order,
                        mc_sim_exec_result_t *res, mc_err_t *err)
{
    return mc_sim_exec_bounded(s, topo, nranks, plans, gpus, order, NULL, res, err);
}

int mc_sim_exec_fits(const mc_sched_t *s, int64_t work_max)
{
    if (!work_max)
        return 1;
    int64_t sends = 0;
    for (int t = 0; t < s->ntrees; t++)
        sends += (int64_t)s->trees[t].nedges * s->trees[t].nchunks;
    return 4 * sends <= work_max;
}

mc_status_t mc_sim_exec_bounded(const mc_sched_t *s, const mc_topo_t *topo, int nranks,
                                const mc_rt_plan_t *plans, const int *gpus, int order,
                                int64_t *work_left, mc_sim_exec_result_t *res, mc_err_t *err)
{
    memset(res, 0, sizeof *res);
    if (work_left && !mc_sim_exec_fits(s, *work_left > 0 ? *work_left : 1))
        return mc_err_set(err, MC_ERR_TIMEOUT, "sim --executed: more sends than its work limit "
                          "allows (%lld)", (long long)*work_left);
    mc_status_t st = MC_OK;
    xsim_t xs = {.s = s, .topo = topo, .nranks = nranks, .plans = plans};
    xs.r = mc_xcalloc((size_t)nranks + 1, sizeof *xs.r);
    xs.end = mc_xcalloc((size_t)nranks + 1, sizeof *xs.end);
    size_t nl = (size_t)topo->nlinks + 1;
    xs.lflows = mc_xcalloc(nl, sizeof(int *));
    xs.nlflows = mc_xcalloc(nl, sizeof(int));
    xs.lcap = mc_xcalloc(nl, sizeof(int));
    sim_links_init(&xs.lk, topo);
    for (int r = 0; r < nranks; r++)
        MC_CHECK_GOTO(rank_init(&xs, r, gpus, order, err), out, st);
    double now = 0, last = 0;
    int64_t work = advance(&xs, now);
    while (xs.q.n > 0) {
        sim_links_begin(&xs.lk);
        sim_event_t ev = sim_queue_pop(&xs.q);
        int changed = process(&xs, &ev, now = ev.t);
        work++;
        /* events at the same instant (up to rounding) share one rate computation, as in sim.c */
        while (xs.q.n > 0 && sim_queue_next(&xs.q) <= now * (1 + 1e-12) + 1e-18) {
            ev = sim_queue_pop(&xs.q);
            changed |= process(&xs, &ev, now);
            work++;
        }
        if (!changed)
            continue;
        last = now;
        work += advance(&xs, now);
        if (xs.lk.ntouched) {
            rerate(&xs, now);
            work += xs.lk.ncomp_flows + xs.lk.ncomp_links;
        }
        if (work_left && work > *work_left) {
            st = mc_err_set(err, MC_ERR_TIMEOUT, "sim --executed: stopped at its work limit "
                            "(%lld events, flows and links re-rated)", (long long)*work_left);
            goto out;
        }
    }
    if (work_left)
        *work_left -= work;
    MC_CHECK_GOTO(stalled(&xs, err), out, st);
    res->makespan_s = last;
    res->nflows = xs.nflows;
    res->nranks = nranks;
    res->rank_end_s = xs.end;
    xs.end = NULL;
out:
    free(xs.end);
    for (int r = 0; r < nranks; r++) {
        mc_rt_exec_free(&xs.r[r].x);
        free(xs.r[r].pend);
        free(xs.r[r].path);
        free(xs.r[r].routes);
        free(xs.r[r].cap);
    }
    free(xs.r);
    free(xs.flows);
    for (int l = 0; xs.lflows && l < topo->nlinks; l++)
        free(xs.lflows[l]);
    free(xs.lflows);
    free(xs.nlflows);
    free(xs.lcap);
    sim_queue_free(&xs.q);
    sim_links_free(&xs.lk);
    return st;
}

void mc_sim_exec_result_free(mc_sim_exec_result_t *res)
{
    free(res->rank_end_s);
    memset(res, 0, sizeof *res);
}
