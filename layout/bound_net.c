/* The topology as a flow network for the lower bounds: one region of hosts in full, the rest
 * contracted into one node, and terminal arcs from a super source and to a super sink that each
 * term switches on for the GPUs it starts and ends at. Built once per region, solved many times. */
#include <math.h>
#include <stdlib.h>

#include "layout/bound_internal.h"

void mc_bound_index_init(mc_bound_index_t *x, const mc_topo_t *topo)
{
    int nh = topo->nhosts;
    x->node_start = mc_xcalloc((size_t)nh + 1, sizeof(int));
    x->link_start = mc_xcalloc((size_t)nh + 1, sizeof(int));
    x->nodes = mc_xmalloc(sizeof(int) * (size_t)(topo->nnodes + 1));
    x->links = mc_xmalloc(sizeof(int) * (size_t)(2 * topo->nlinks + 1));
    x->node_id = mc_xmalloc(sizeof(int) * (size_t)topo->nnodes);
    x->cap = mc_xmalloc(sizeof(double) * (size_t)(topo->nlinks + 1));
    mc_bound_route_caps(topo, x->cap);
    for (int i = 0; i < topo->nnodes; i++) {
        x->node_id[i] = -1;
        if (topo->nodes[i].host >= 0)
            x->node_start[topo->nodes[i].host + 1]++;
    }
    for (int i = 0; i < topo->nlinks; i++) {
        int hs = topo->nodes[topo->links[i].src].host, hd = topo->nodes[topo->links[i].dst].host;
        if (hs >= 0)
            x->link_start[hs + 1]++;
        if (hd >= 0 && hd != hs)
            x->link_start[hd + 1]++;
    }
    for (int h = 0; h < nh; h++) {
        x->node_start[h + 1] += x->node_start[h];
        x->link_start[h + 1] += x->link_start[h];
    }
    int *fill = mc_xmalloc(sizeof(int) * (size_t)(nh + 1));
    for (int h = 0; h < nh; h++)
        fill[h] = x->node_start[h];
    for (int i = 0; i < topo->nnodes; i++)
        if (topo->nodes[i].host >= 0)
            x->nodes[fill[topo->nodes[i].host]++] = i;
    for (int h = 0; h < nh; h++)
        fill[h] = x->link_start[h];
    for (int i = 0; i < topo->nlinks; i++) {
        int hs = topo->nodes[topo->links[i].src].host, hd = topo->nodes[topo->links[i].dst].host;
        if (hs >= 0)
            x->links[fill[hs]++] = i;
        if (hd >= 0 && hd != hs)
            x->links[fill[hd]++] = i;
    }
    free(fill);
}

void mc_bound_index_free(mc_bound_index_t *x)
{
    free(x->node_start);
    free(x->link_start);
    free(x->nodes);
    free(x->links);
    free(x->node_id);
    free(x->cap);
}

void mc_bound_route_caps(const mc_topo_t *topo, double *cap)
{
    int routed = topo->ngpus <= MC_BOUND_ROUTE_GPUS;
    for (int i = 0; i < topo->nlinks; i++)
        cap[i] = 0;
    for (int a = 0; routed && a < topo->ngpus; a++)
        for (int b = 0; routed && b < topo->ngpus; b++) {
            mc_route_t r;
            mc_err_t ignored = {0};
            if (a == b)
                continue;
            /* a pair with no route is reported where it is used; here every link counts */
            routed = mc_topo_route(topo, a, b, &r, &ignored) == MC_OK;
            for (int j = 0; routed && j < r.nlinks; j++)
                cap[r.links[j]] = topo->links[r.links[j]].bw;
        }
    for (int i = 0; !routed && i < topo->nlinks; i++)
        cap[i] = topo->links[i].bw;
}

/* Adds link i unless both ends are outside (contracted into one node). */
static void add_link(mc_bound_net_t *n, const int *id, int i)
{
    const mc_link_t *l = &n->topo->links[i];
    int s = id[l->src] >= 0 ? id[l->src] : n->outside;
    int d = id[l->dst] >= 0 ? id[l->dst] : n->outside;
    if (s != d)
        mc_flow_arc(&n->flow, s, d, n->cap[i]);
}

/* Whether link i, listed under region host h, is added from h's list: the first region host of
 * its two ends lists it. */
static int listed_here(const mc_topo_t *topo, const char *hosts, int i, int h)
{
    int hs = topo->nodes[topo->links[i].src].host, hd = topo->nodes[topo->links[i].dst].host;
    int first = hs >= 0 && hosts[hs] ? hs : hd;
    if (hd >= 0 && hosts[hd] && hd < first)
        first = hd;
    return first == h;
}

void mc_bound_net_init(mc_bound_net_t *n, const mc_topo_t *topo, const mc_bound_index_t *x,
                       const char *hosts)
{
    int *id = x->node_id, k = 0;
    for (int h = 0; h < topo->nhosts; h++)
        for (int j = x->node_start[h]; hosts && hosts[h] && j < x->node_start[h + 1]; j++)
            id[x->nodes[j]] = k++;
    for (int i = 0; !hosts && i < topo->nnodes; i++)
        id[i] = k++;
    n->topo = topo;
    n->cap = x->cap;
    n->outside = hosts ? k++ : -1;
    n->source = k++;
    n->sink = k++;
    mc_flow_init(&n->flow, k);
    for (int h = 0; h < topo->nhosts; h++)
        for (int j = x->link_start[h]; hosts && hosts[h] && j < x->link_start[h + 1]; j++)
            if (listed_here(topo, hosts, x->links[j], h))
                add_link(n, id, x->links[j]);
    for (int i = 0; !hosts && i < topo->nlinks; i++)
        add_link(n, id, i);
    n->src_arc = mc_xmalloc(sizeof(int) * (size_t)topo->ngpus);
    n->snk_arc = mc_xmalloc(sizeof(int) * (size_t)topo->ngpus);
    n->on = mc_xmalloc(sizeof(int) * (size_t)(2 * topo->ngpus + 2));
    n->non = 0;
    for (int g = 0; g < topo->ngpus; g++) {
        int v = id[topo->gpu_node[g]];
        n->src_arc[g] = v >= 0 ? mc_flow_arc(&n->flow, n->source, v, 0) : -1;
        n->snk_arc[g] = v >= 0 ? mc_flow_arc(&n->flow, v, n->sink, 0) : -1;
    }
    n->out_src_arc = hosts ? mc_flow_arc(&n->flow, n->source, n->outside, 0) : -1;
    n->out_snk_arc = hosts ? mc_flow_arc(&n->flow, n->outside, n->sink, 0) : -1;
    /* The index's node map is shared scratch: back to -1 for the next network. */
    for (int h = 0; h < topo->nhosts; h++)
        for (int j = x->node_start[h]; hosts && hosts[h] && j < x->node_start[h + 1]; j++)
            id[x->nodes[j]] = -1;
    for (int i = 0; !hosts && i < topo->nnodes; i++)
        id[i] = -1;
}

void mc_bound_net_free(mc_bound_net_t *n)
{
    mc_flow_free(&n->flow);
    free(n->src_arc);
    free(n->snk_arc);
    free(n->on);
}

void mc_bound_net_clear(mc_bound_net_t *n)
{
    for (int i = 0; i < n->non; i++)
        mc_flow_set(&n->flow, n->on[i], 0);
    n->non = 0;
}

/* A GPU outside the region is the outside node. */
static int terminal(const mc_bound_net_t *n, int gpu, const int *arcs, int out_arc)
{
    return gpu >= 0 && arcs[gpu] >= 0 ? arcs[gpu] : out_arc;
}

static void switch_on(mc_bound_net_t *n, int arc)
{
    if (arc >= 0 && n->flow.cap[arc] == 0) {
        mc_flow_set(&n->flow, arc, HUGE_VAL);
        n->on[n->non++] = arc;
    }
}

void mc_bound_net_source(mc_bound_net_t *n, int gpu)
{
    switch_on(n, terminal(n, gpu, n->src_arc, n->out_src_arc));
}

void mc_bound_net_sink(mc_bound_net_t *n, int gpu)
{
    switch_on(n, terminal(n, gpu, n->snk_arc, n->out_snk_arc));
}

double mc_bound_net_value(mc_bound_net_t *n)
{
    return mc_flow_max(&n->flow, n->source, n->sink);
}

/* A lower bound on mc_bound_net_value in one pass over the arcs, so that a term that cannot
 * exceed what is already known is not solved: the arcs from a source straight to a sink, plus
 * for every other node the smaller of what the sources send it and what it sends the sinks. These
 * paths share no arc, so together they are a feasible flow. */
double mc_bound_net_lower(mc_bound_net_t *n)
{
    mc_flow_t *f = &n->flow;
    char *role = mc_xcalloc((size_t)f->n, 1); /* 1 source, 2 sink */
    double *from_src = mc_xcalloc((size_t)f->n, sizeof(double));
    double *to_snk = mc_xcalloc((size_t)f->n, sizeof(double));
    for (int a = f->head[n->source]; a >= 0; a = f->next[a])
        if (f->cap[a] > 0)
            role[f->to[a]] |= 1;
    for (int a = f->head[n->sink]; a >= 0; a = f->next[a])
        if (f->cap[a ^ 1] > 0) /* a is the twin of an arc into the sink */
            role[f->to[a]] |= 2;
    double direct = 0, lower = 0;
    for (int u = 0; u < f->n; u++) {
        if (u == n->source || u == n->sink)
            continue;
        for (int a = f->head[u]; a >= 0; a = f->next[a]) {
            int v = f->to[a];
            if ((a & 1) || v == n->source || v == n->sink)
                continue;
            if ((role[u] & 1) && (role[v] & 2))
                direct += f->cap[a];
            else if ((role[u] & 1) && !role[v])
                from_src[v] += f->cap[a];
            else if (!role[u] && (role[v] & 2))
                to_snk[u] += f->cap[a];
        }
    }
    for (int v = 0; v < f->n; v++)
        if (!role[v])
            lower += fmin(from_src[v], to_snk[v]);
    free(role);
    free(from_src);
    free(to_snk);
    n->flow.work += f->m;
    return direct + lower;
}

int mc_bound_skip(mc_bound_net_t *net, uint64_t bytes, double alpha, double floor,
                  const mc_best_t *best)
{
    double top = fmax(floor, best->where >= 0 ? best->bw + best->alpha : 0);
    double lower = mc_bound_net_lower(net);
    return lower > 0 && (double)bytes / lower + (isfinite(alpha) ? alpha : 0) <= top;
}
