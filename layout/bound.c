/* Lower bounds on the time of any schedule for a task on a topology (array-redistribution.md
 * section 5.3, docs/synthesis.md "Lower bound"). Every term must stay a true lower bound,
 * because the simulator is tested against it: capacities are generous (a GPU's every link
 * counts; a set of hosts gets the maximum flow between its GPUs and the rest) and bytes are
 * counted as the least that must cross (distinct bytes, relaying allowed). This file holds the
 * per-GPU, per-holder-group, per-host and per-mesh terms and picks the largest; the flow, cut
 * and lp terms have files of their own. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layout/bound_internal.h"

const char *mc_bound_kind_str(mc_bound_kind_t k)
{
    static const char *names[] = {"ingress", "egress", "host-cut", "mesh-cut", "flow", "cut", "lp",
                                  "host-relay", "reach", "latency", "none"};
    return (unsigned)k <= MC_BOUND_NONE ? names[k] : "?";
}

static int gpu_host(const mc_topo_t *topo, int gpu)
{
    return mc_topo_gpu_host(topo, gpu);
}

/* Distinct hosts of a GPU list into hosts[] (stamp[] marks them with mark); returns the count. */
static int hosts_of(const mc_topo_t *topo, const int *gpus, int n, int *stamp, int mark, int *hosts)
{
    int nh = 0;
    for (int i = 0; i < n; i++) {
        int h = gpu_host(topo, gpus[i]);
        if (stamp[h] != mark) {
            stamp[h] = mark;
            hosts[nh++] = h;
        }
    }
    return nh;
}

void mc_task_host_bytes(const mc_task_t *task, const mc_topo_t *topo, uint64_t *in, uint64_t *out)
{
    int nh = topo->nhosts;
    int *hold = mc_xmalloc(sizeof(int) * (size_t)nh), *need = mc_xmalloc(sizeof(int) * (size_t)nh);
    int *hold_stamp = mc_xmalloc(sizeof(int) * (size_t)nh);
    int *need_stamp = mc_xmalloc(sizeof(int) * (size_t)nh);
    for (int h = 0; h < nh; h++) {
        in[h] = out[h] = 0;
        hold_stamp[h] = need_stamp[h] = -1;
    }
    for (int i = 0; i < task->npieces; i++) {
        const mc_piece_t *p = &task->pieces[i];
        int nhold = hosts_of(topo, p->holders, p->nholders, hold_stamp, i, hold);
        int nneed = hosts_of(topo, p->dests, p->ndests, need_stamp, i, need);
        for (int j = 0; j < nneed; j++)
            if (hold_stamp[need[j]] != i)
                in[need[j]] += p->bytes;
        /* Held by one host only: it must leave that host if any other host needs it. */
        if (nhold == 1 && (nneed > 1 || (nneed == 1 && need[0] != hold[0])))
            out[hold[0]] += p->bytes;
    }
    free(hold);
    free(need);
    free(hold_stamp);
    free(need_stamp);
}

/* How fast bytes can enter (into != 0) or leave a set of hosts: the maximum flow between the set's
 * GPUs, where all data starts and ends, and everything outside it (network switches are outside
 * every set). It is at most the capacity of the links crossing the boundary, and less when the
 * links behind them are slower (a 48 GB/s PCIe hop in front of a 50 GB/s NIC). Only the set's
 * own nodes enter the flow network, everything outside is one node, so it stays small. */
static double set_capacity(const mc_topo_t *topo, const mc_bound_ctx_t *al, const char *in_set,
                           int into)
{
    mc_bound_net_t net;
    mc_bound_net_init(&net, topo, &al->index, in_set);
    for (int g = 0; g < topo->ngpus; g++)
        if (in_set[gpu_host(topo, g)]) {
            if (into)
                mc_bound_net_sink(&net, g);
            else
                mc_bound_net_source(&net, g);
        }
    if (into)
        mc_bound_net_source(&net, -1);
    else
        mc_bound_net_sink(&net, -1);
    double flow = mc_bound_net_value(&net);
    mc_bound_net_free(&net);
    return flow;
}

/* The least latency of a path from any GPU to each node (to != 0: from each node to any GPU) over
 * the links that some route takes, into dist[topo->nnodes]: relaxed link by link until nothing
 * changes (a few passes: paths in a topology are a few links long). */
static void gpu_distances(const mc_topo_t *topo, const double *cap, int to, double *dist)
{
    for (int v = 0; v < topo->nnodes; v++)
        dist[v] = topo->nodes[v].kind == MC_NODE_GPU ? 0 : INFINITY;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < topo->nlinks; i++) {
            const mc_link_t *l = &topo->links[i];
            int from = to ? l->dst : l->src, at = to ? l->src : l->dst;
            if (cap[i] > 0 && dist[from] + l->latency < dist[at]) {
                dist[at] = dist[from] + l->latency;
                changed = 1;
            }
        }
    }
}

/* What the terms read (mc_bound_ctx_t). The least fixed cost of the messages each resource's
 * traffic pays (docs/synthesis.md, "Latency in the bound"): the simulator holds every message of
 * a route for the largest alpha of its link kinds plus the sum of its links' latencies before its
 * bytes move, and a route is a path from a GPU to a GPU over links that some route takes. So a
 * message that crosses link l waits at least alpha(l) + the least latency of such a path through
 * l. Nothing enters a GPU before the least of that over its incoming links, nothing leaves one
 * before the least over its outgoing links, and nothing crosses between hosts before the least
 * over the links whose ends are on different hosts. */
static void ctx_init(mc_bound_ctx_t *a, const mc_task_t *task, const mc_topo_t *topo)
{
    a->ncls = mc_bound_classes(task, &a->cls);
    a->in = mc_xmalloc(sizeof(double) * (size_t)topo->ngpus);
    a->out = mc_xmalloc(sizeof(double) * (size_t)topo->ngpus);
    a->in_bw = mc_xcalloc((size_t)topo->ngpus, sizeof(double));
    a->out_bw = mc_xcalloc((size_t)topo->ngpus, sizeof(double));
    a->cross = INFINITY;
    mc_bound_index_init(&a->index, topo);
    for (int g = 0; g < topo->ngpus; g++)
        a->in[g] = a->out[g] = INFINITY;
    double *from = mc_xmalloc(sizeof(double) * (size_t)(topo->nnodes + 1));
    double *to = mc_xmalloc(sizeof(double) * (size_t)(topo->nnodes + 1));
    gpu_distances(topo, a->index.cap, 0, from);
    gpu_distances(topo, a->index.cap, 1, to);
    for (int i = 0; i < topo->nlinks; i++) {
        const mc_link_t *l = &topo->links[i];
        const mc_node_t *s = &topo->nodes[l->src], *d = &topo->nodes[l->dst];
        if (d->kind == MC_NODE_GPU && d->gpu >= 0)
            a->in_bw[d->gpu] += a->index.cap[i];
        if (s->kind == MC_NODE_GPU && s->gpu >= 0)
            a->out_bw[s->gpu] += a->index.cap[i];
        /* a link no route takes carries no message */
        if (!(a->index.cap[i] > 0))
            continue;
        double al = mc_topo_alpha(l->kind) + l->latency;
        if (s->host != d->host)
            a->cross = fmin(a->cross, al + from[l->src] + to[l->dst]);
        if (d->kind == MC_NODE_GPU && d->gpu >= 0)
            a->in[d->gpu] = fmin(a->in[d->gpu], al + from[l->src]);
        if (s->kind == MC_NODE_GPU && s->gpu >= 0)
            a->out[s->gpu] = fmin(a->out[s->gpu], al + to[l->dst]);
    }
    free(from);
    free(to);
    /* the terms that read every route need them all: a pair without one leaves them out */
    a->routed = topo->ngpus <= MC_BOUND_ROUTE_GPUS;
    for (int x = 0; x < topo->ngpus && a->routed; x++)
        for (int y = 0; y < topo->ngpus && a->routed; y++) {
            mc_route_t r;
            mc_err_t ignored = {0};
            a->routed = x == y || mc_topo_route(topo, x, y, &r, &ignored) == MC_OK;
        }
}

static void ctx_free(mc_bound_ctx_t *a)
{
    free(a->in);
    free(a->out);
    free(a->in_bw);
    free(a->out_bw);
    free(a->cls);
    if (a->in)
        mc_bound_index_free(&a->index);
}

mc_status_t mc_bound_term(mc_best_t *best, uint64_t bytes, double cap, double alpha, int at,
                          const char *what, const mc_topo_t *topo, int *kept, mc_err_t *err)
{
    if (kept)
        *kept = 0;
    if (bytes == 0)
        return MC_OK;
    if (!(cap > 0))
        return mc_err_set(err, MC_ERR_INVALID, "%s %d must pass %llu bytes but no link of %s "
                          "can carry them", what, at, (unsigned long long)bytes, topo->source);
    double bw = (double)bytes / cap;
    alpha = isfinite(alpha) ? alpha : 0;
    if (best->where < 0 || bw + alpha > best->bw + best->alpha) {
        *best = (mc_best_t){bw, alpha, at};
        if (kept)
            *kept = 1;
    }
    return MC_OK;
}

static mc_status_t term(mc_best_t *best, uint64_t bytes, double cap, double alpha, int at,
                        const char *what, const mc_topo_t *topo, mc_err_t *err)
{
    return mc_bound_term(best, bytes, cap, alpha, at, what, topo, NULL, err);
}

/* A GPU receives need(d) bytes over its incoming links, the first after the cheapest alpha of
 * its incoming links, or after a cross-host alpha when every piece it needs comes from other
 * hosts (the bytes crossed before reaching it). */
static mc_status_t ingress(const mc_topo_t *topo, const mc_bound_ctx_t *al, mc_best_t *best,
                           mc_err_t *err)
{
    mc_status_t st = MC_OK;
    uint64_t *need = mc_xcalloc((size_t)topo->ngpus, sizeof(uint64_t));
    double *first = mc_xmalloc(sizeof(double) * (size_t)topo->ngpus);
    int *stamp = mc_xmalloc(sizeof(int) * (size_t)topo->nhosts);
    for (int g = 0; g < topo->ngpus; g++)
        first[g] = INFINITY;
    for (int h = 0; h < topo->nhosts; h++)
        stamp[h] = -1;
    for (int i = 0; i < al->ncls; i++) {
        const mc_piece_t *p = al->cls[i].p;
        for (int j = 0; j < p->nholders; j++)
            stamp[gpu_host(topo, p->holders[j])] = i;
        for (int j = 0; j < p->ndests; j++) {
            int d = p->dests[j];
            double a = stamp[gpu_host(topo, d)] == i ? al->in[d] : fmax(al->in[d], al->cross);
            need[d] += al->cls[i].bytes;
            first[d] = fmin(first[d], a);
        }
    }
    for (int g = 0; g < topo->ngpus && st == MC_OK; g++)
        st = term(best, need[g], al->in_bw[g], first[g], g, "GPU", topo, err);
    free(need);
    free(first);
    free(stamp);
    return st;
}

static const mc_bound_class_t *sort_cls;
static int sort_by_dests;
static int cmp_holders(const void *a, const void *b)
{
    const mc_piece_t *x = sort_cls[*(const int *)a].p;
    const mc_piece_t *y = sort_cls[*(const int *)b].p;
    if (x->nholders != y->nholders)
        return x->nholders - y->nholders;
    int c = memcmp(x->holders, y->holders, sizeof(int) * (size_t)x->nholders);
    if (c || !sort_by_dests)
        return c;
    if (x->ndests != y->ndests)
        return x->ndests - y->ndests;
    return memcmp(x->dests, y->dests, sizeof(int) * (size_t)x->ndests);
}

int mc_bound_holder_groups(const mc_bound_ctx_t *al, int by_dests, int *order, int *start)
{
    int n = 0;
    for (int i = 0; i < al->ncls; i++)
        order[i] = i;
    sort_cls = al->cls;
    sort_by_dests = by_dests;
    mc_sort(order, (size_t)al->ncls, sizeof(int), cmp_holders);
    for (int i = 0; i < al->ncls; i++)
        if (i == 0 || cmp_holders(&order[i - 1], &order[i]) != 0)
            start[n++] = i;
    start[n] = al->ncls;
    return n;
}

/* Pieces with the same holder set form a group; each of their bytes must leave the group once
 * (relays may fan it out afterwards). Pieces of different tensors with the same holders add. */
static mc_status_t egress(const mc_topo_t *topo, const mc_bound_ctx_t *al, mc_best_t *best,
                          mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int *order = mc_xmalloc(sizeof(int) * (size_t)al->ncls);
    int *start = mc_xmalloc(sizeof(int) * (size_t)(al->ncls + 1));
    int ngroups = mc_bound_holder_groups(al, 0, order, start);
    for (int gi = 0; gi < ngroups && st == MC_OK; gi++) {
        const mc_piece_t *p = al->cls[order[start[gi]]].p;
        uint64_t bytes = 0;
        for (int j = start[gi]; j < start[gi + 1]; j++)
            bytes += al->cls[order[j]].bytes;
        double cap = 0, alpha = INFINITY;
        for (int h = 0; h < p->nholders; h++) {
            cap += al->out_bw[p->holders[h]];
            alpha = fmin(alpha, al->out[p->holders[h]]);
        }
        st = term(best, bytes, cap, alpha, p->holders[0], "holder group of GPU", topo, err);
    }
    free(start);
    free(order);
    return st;
}

/* Both directions of the cut around a set of hosts: bytes in over the links entering it, bytes
 * out over the links leaving it, each after a cross-host alpha. */
static mc_status_t cut(mc_best_t *best, uint64_t in, uint64_t out, const char *set, int at,
                       const char *what, const mc_topo_t *topo, const mc_bound_ctx_t *al,
                       mc_err_t *err)
{
    mc_status_t st = term(best, in, set_capacity(topo, al, set, 1), al->cross, at, what, topo, err);
    if (st == MC_OK)
        st = term(best, out, set_capacity(topo, al, set, 0), al->cross, at, what, topo, err);
    return st;
}

/* Into need[g], the bytes GPU g needs of pieces held on no GPU of its own host. */
static void needed_from_away(const mc_topo_t *topo, const mc_bound_ctx_t *al, uint64_t *need)
{
    int *stamp = mc_xmalloc(sizeof(int) * (size_t)topo->nhosts);
    for (int h = 0; h < topo->nhosts; h++)
        stamp[h] = -1;
    memset(need, 0, sizeof(uint64_t) * (size_t)topo->ngpus);
    for (int i = 0; i < al->ncls; i++) {
        const mc_piece_t *p = al->cls[i].p;
        for (int j = 0; j < p->nholders; j++)
            stamp[gpu_host(topo, p->holders[j])] = i;
        for (int j = 0; j < p->ndests; j++)
            need[p->dests[j]] += stamp[gpu_host(topo, p->dests[j])] == i ? 0 : al->cls[i].bytes;
    }
    free(stamp);
}

/* The relay's wait behind the network (docs/synthesis.md, "Lower bound"): GPU m of host h needs
 * s bytes held only on other hosts. A byte reaches m either on a message from another host, whose
 * route ends over one of m's links that such routes take (capacity c), or relayed by another GPU
 * g of h, on a message that waits at least w (the least alpha and latency of a route from g to
 * m) after g received the byte. No byte enters h before `cross`, and h's GPUs receive at most C
 * bytes/s from outside (the host cut's capacity). So by time T, m holds at most C (T - w - cross)
 * bytes that entered h by T - w plus c w that came straight to it after: T >= cross + w +
 * (s - c w) / C where s > c w, T >= cross + s / c otherwise (c taken at most C). Needs every
 * route (MC_BOUND_ROUTE_GPUS); a host of one GPU relays nothing (w infinite). */
static mc_status_t relay_wait(const mc_topo_t *topo, const mc_bound_ctx_t *al, int h, double cap,
                              const uint64_t *need, mc_best_t *best, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_err_t ignored = {0};
    mc_route_t r;
    int first, n = mc_topo_host_gpus(topo, h, &first);
    for (int m = first; m < first + n && st == MC_OK && cap > 0; m++) {
        if (!need[m])
            continue;
        double c = 0, w = INFINITY;
        char *last = mc_xcalloc((size_t)topo->nlinks + 1, 1);
        for (int g = 0; g < topo->ngpus && st == MC_OK; g++) {
            if (g == m)
                continue;
            if (mc_topo_route(topo, g, m, &r, &ignored) != MC_OK || r.nlinks == 0)
                st = MC_ERR_INTERNAL; /* the caller has checked every route */
            else if (gpu_host(topo, g) == h)
                w = fmin(w, mc_topo_links_delay(topo, r.links, r.nlinks));
            else if (!last[r.links[r.nlinks - 1]]++)
                c += al->index.cap[r.links[r.nlinks - 1]];
        }
        free(last);
        if (st != MC_OK)
            return mc_err_set(err, MC_ERR_INTERNAL, "%s:%d: GPU %d has no route", __FILE__,
                              __LINE__, m);
        c = fmin(c, cap);
        double s = (double)need[m];
        if (!(c > 0))
            continue;
        if (s > c * w)
            st = term(best, need[m], cap, al->cross + w * (1 - c / cap), h, "host", topo, err);
        else
            st = term(best, need[m], c, al->cross, h, "host", topo, err);
    }
    return st;
}

/* Cuts around each host, and into each of its GPUs behind the relays' wait (relay_wait); with
 * the hosts' capacities, the relays between hosts (mc_bound_relay_hosts) into *relay. */
static mc_status_t host_cut(const mc_task_t *task, const mc_topo_t *topo, const mc_bound_ctx_t *al,
                            mc_best_t *best, mc_best_t *relay, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int nh = topo->nhosts, routed = al->routed;
    uint64_t *in = mc_xmalloc(sizeof(uint64_t) * (size_t)nh);
    uint64_t *out = mc_xmalloc(sizeof(uint64_t) * (size_t)nh);
    uint64_t *need = mc_xmalloc(sizeof(uint64_t) * (size_t)topo->ngpus);
    double *cap_in = mc_xcalloc((size_t)nh, sizeof(double));
    double *cap_out = mc_xcalloc((size_t)nh, sizeof(double));
    char *set = mc_xcalloc((size_t)nh, 1);
    mc_task_host_bytes(task, topo, in, out);
    needed_from_away(topo, al, need);
    for (int h = 0; h < nh && st == MC_OK; h++) {
        if (!in[h] && !out[h])
            continue;
        set[h] = 1;
        double cap = cap_in[h] = set_capacity(topo, al, set, 1);
        cap_out[h] = set_capacity(topo, al, set, 0);
        st = term(best, in[h], cap, al->cross, h, "host", topo, err);
        if (st == MC_OK)
            st = term(best, out[h], cap_out[h], al->cross, h, "host", topo, err);
        if (st == MC_OK && routed && in[h])
            st = relay_wait(topo, al, h, cap, need, best, err);
        set[h] = 0;
    }
    if (st == MC_OK)
        st = mc_bound_relay_hosts(topo, al, cap_in, cap_out, relay, err);
    free(cap_in);
    free(cap_out);
    free(in);
    free(out);
    free(need);
    free(set);
    return st;
}

/* Cuts around the hosts of each mesh: bytes needed inside held by no host inside, and bytes held
 * only inside needed outside. */
static mc_status_t mesh_cut(const mc_task_t *task, const mc_topo_t *topo, const mc_bound_ctx_t *al,
                            mc_best_t *best, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    char *set = mc_xmalloc((size_t)topo->nhosts);
    for (int m = 0; m < task->nmeshes && st == MC_OK; m++) {
        memset(set, 0, (size_t)topo->nhosts);
        for (int i = 0; i < task->meshes[m].ndevices; i++)
            set[gpu_host(topo, task->meshes[m].devices[i])] = 1;
        uint64_t in = 0, out = 0;
        for (int i = 0; i < al->ncls; i++) {
            const mc_piece_t *p = al->cls[i].p;
            int any_hold = 0, all_hold = 1, any_need = 0, need_out = 0;
            for (int j = 0; j < p->nholders; j++) {
                int inside = set[gpu_host(topo, p->holders[j])];
                any_hold |= inside;
                all_hold &= inside;
            }
            for (int j = 0; j < p->ndests; j++) {
                int inside = set[gpu_host(topo, p->dests[j])];
                any_need |= inside;
                need_out |= !inside;
            }
            in += any_need && !any_hold ? al->cls[i].bytes : 0;
            out += all_hold && need_out ? al->cls[i].bytes : 0;
        }
        st = cut(best, in, out, set, m, "the hosts of mesh", topo, al, err);
    }
    free(set);
    return st;
}

int mc_bound_set_gpus(const mc_topo_t *topo, const mc_bound_set_t *set, int *gpus)
{
    int n = 0, first = -1;
    for (int g = 0; g < topo->ngpus; g++) {
        int h = gpu_host(topo, g);
        first = h == set->host && first < 0 ? g : first;
        int bit = set->host >= 0 ? (h == set->host ? g - first : 64) : h;
        if (bit < 64 && (set->mask >> bit & 1))
            gpus[n++] = g;
    }
    return n;
}

/* The largest term so far (bandwidth time plus alpha) over every kind. */
static double largest(const mc_best_t *best)
{
    double top = 0;
    for (int k = 0; k < MC_BOUND_NTERMS; k++)
        if (best[k].where >= 0)
            top = fmax(top, best[k].bw + best[k].alpha);
    return top;
}

/* The bound; exact: every term's own largest value exact, else the flow and cut terms skip what
 * cannot exceed the largest term found before them. */
static mc_status_t bound_of(const mc_task_t *task, const mc_topo_t *topo, int exact,
                            mc_bound_t *bound, mc_err_t *err)
{
    mc_bound_t b = {0};
    b.binding = MC_BOUND_NONE;
    b.where = b.flow_holder = -1;
    b.cut_set.host = -1;
    mc_best_t best[MC_BOUND_NTERMS];
    for (int k = 0; k < MC_BOUND_NTERMS; k++) {
        best[k] = (mc_best_t){0, 0, -1};
        b.term_where[k] = -1;
    }
    mc_bound_ctx_t al = {0};
    mc_status_t st;
    MC_CHECK_GOTO(mc_task_check_topo(task, topo, err), out, st);
    if (task->npieces == 0)
        goto out;
    ctx_init(&al, task, topo);
    MC_CHECK_GOTO(ingress(topo, &al, &best[MC_BOUND_INGRESS], err), out, st);
    MC_CHECK_GOTO(egress(topo, &al, &best[MC_BOUND_EGRESS], err), out, st);
    MC_CHECK_GOTO(host_cut(task, topo, &al, &best[MC_BOUND_HOST_CUT], &best[MC_BOUND_HOST_RELAY],
                           err), out, st);
    MC_CHECK_GOTO(mesh_cut(task, topo, &al, &best[MC_BOUND_MESH_CUT], err), out, st);
    if (al.routed)
        MC_CHECK_GOTO(mc_bound_reach(topo, &al, &best[MC_BOUND_REACH], err), out, st);
    MC_CHECK_GOTO(mc_bound_cut(topo, &al, exact ? 0 : largest(best), &best[MC_BOUND_CUT],
                               &b.cut_set, err), out, st);
    MC_CHECK_GOTO(mc_bound_flow(topo, &al, exact ? 0 : largest(best), &best[MC_BOUND_FLOW],
                                &b.flow_holder, err), out, st);
    mc_bound_lp(topo, &al, exact ? 0 : largest(best), &best[MC_BOUND_LP]);
    b.ingress_s = best[MC_BOUND_INGRESS].bw;
    b.egress_s = best[MC_BOUND_EGRESS].bw;
    b.host_cut_s = best[MC_BOUND_HOST_CUT].bw;
    b.mesh_cut_s = best[MC_BOUND_MESH_CUT].bw;
    b.cut_s = best[MC_BOUND_CUT].bw;
    b.flow_s = best[MC_BOUND_FLOW].bw;
    b.lp_s = best[MC_BOUND_LP].bw;
    b.host_relay_s = best[MC_BOUND_HOST_RELAY].bw;
    b.reach_s = best[MC_BOUND_REACH].bw;
    /* Ties go to the earlier term: a GPU's own links before its host's before its mesh's. The
     * flow and cut terms generalize the ones before them (a whole host is one of the cut's
     * sets), so they bind only where they are larger by more than the rounding of two different
     * maximum-flow computations of the same cut. */
    int k_max = MC_BOUND_INGRESS;
    for (int k = 0; k < MC_BOUND_NTERMS; k++) {
        double t = best[k].bw + best[k].alpha, top = best[k_max].bw + best[k_max].alpha;
        if (t > (k >= MC_BOUND_FLOW ? top * (1 + 1e-9) : top))
            k_max = k;
        b.term_where[k] = best[k].where;
    }
    b.binding = best[k_max].alpha > best[k_max].bw ? MC_BOUND_LATENCY : (mc_bound_kind_t)k_max;
    b.where = best[k_max].where;
    b.latency_s = best[k_max].alpha;
    b.seconds = best[k_max].bw + best[k_max].alpha;
out:
    ctx_free(&al);
    if (st == MC_OK)
        *bound = b;
    return st;
}

mc_status_t mc_task_bound(const mc_task_t *task, const mc_topo_t *topo, mc_bound_t *bound,
                          mc_err_t *err)
{
    /* The cache is not part of the task's value: writing it through the const pointer is safe
     * because every task is allocated by mc_task_new. */
    mc_task_t *memo = (mc_task_t *)task;
    if (memo->bound && memo->bound_topo == topo && memo->bound_fp == topo->fingerprint) {
        *bound = *memo->bound;
        return MC_OK;
    }
    mc_status_t st = bound_of(task, topo, 0, bound, err);
    if (st == MC_OK) {
        if (!memo->bound)
            memo->bound = mc_xmalloc(sizeof(mc_bound_t));
        *memo->bound = *bound;
        memo->bound_topo = topo;
        memo->bound_fp = topo->fingerprint;
    }
    return st;
}

mc_status_t mc_task_bound_terms(const mc_task_t *task, const mc_topo_t *topo, mc_bound_t *bound,
                                mc_err_t *err)
{
    return bound_of(task, topo, 1, bound, err);
}
