/* The topology as a flow network for the lower bounds: one region of hosts in full, the rest
 * contracted into one node, and terminal arcs from a super source and to a super sink that each
 * term switches on for the GPUs it starts and ends at. Built once per region, solved many times. */
#include <math.h>
#include <stdlib.h>

#include "layout/bound_internal.h"

void mc_bound_net_init(mc_bound_net_t *n, const mc_topo_t *topo, const char *hosts)
{
    int *id = mc_xmalloc(sizeof(int) * (size_t)topo->nnodes), k = 0;
    for (int i = 0; i < topo->nnodes; i++) {
        int h = topo->nodes[i].host;
        id[i] = !hosts || (h >= 0 && hosts[h]) ? k++ : -1;
    }
    n->topo = topo;
    n->outside = hosts ? k++ : -1;
    n->source = k++;
    n->sink = k++;
    mc_flow_init(&n->flow, k);
    for (int i = 0; i < topo->nlinks; i++) {
        const mc_link_t *l = &topo->links[i];
        int s = id[l->src] >= 0 ? id[l->src] : n->outside;
        int d = id[l->dst] >= 0 ? id[l->dst] : n->outside;
        if (s != d)
            mc_flow_arc(&n->flow, s, d, l->bw);
    }
    n->src_arc = mc_xmalloc(sizeof(int) * (size_t)topo->ngpus);
    n->snk_arc = mc_xmalloc(sizeof(int) * (size_t)topo->ngpus);
    for (int g = 0; g < topo->ngpus; g++) {
        int v = id[topo->gpu_node[g]];
        n->src_arc[g] = v >= 0 ? mc_flow_arc(&n->flow, n->source, v, 0) : -1;
        n->snk_arc[g] = v >= 0 ? mc_flow_arc(&n->flow, v, n->sink, 0) : -1;
    }
    n->out_src_arc = hosts ? mc_flow_arc(&n->flow, n->source, n->outside, 0) : -1;
    n->out_snk_arc = hosts ? mc_flow_arc(&n->flow, n->outside, n->sink, 0) : -1;
    free(id);
}

void mc_bound_net_free(mc_bound_net_t *n)
{
    mc_flow_free(&n->flow);
    free(n->src_arc);
    free(n->snk_arc);
}

void mc_bound_net_clear(mc_bound_net_t *n)
{
    for (int g = 0; g < n->topo->ngpus; g++)
        if (n->src_arc[g] >= 0) {
            mc_flow_set(&n->flow, n->src_arc[g], 0);
            mc_flow_set(&n->flow, n->snk_arc[g], 0);
        }
    if (n->outside >= 0) {
        mc_flow_set(&n->flow, n->out_src_arc, 0);
        mc_flow_set(&n->flow, n->out_snk_arc, 0);
    }
}

/* A GPU outside the region is the outside node. */
static int terminal(const mc_bound_net_t *n, int gpu, const int *arcs, int out_arc)
{
    return gpu >= 0 && arcs[gpu] >= 0 ? arcs[gpu] : out_arc;
}

void mc_bound_net_source(mc_bound_net_t *n, int gpu)
{
    int a = terminal(n, gpu, n->src_arc, n->out_src_arc);
    if (a >= 0)
        mc_flow_set(&n->flow, a, HUGE_VAL);
}

void mc_bound_net_sink(mc_bound_net_t *n, int gpu)
{
    int a = terminal(n, gpu, n->snk_arc, n->out_snk_arc);
    if (a >= 0)
        mc_flow_set(&n->flow, a, HUGE_VAL);
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
    const mc_flow_t *f = &n->flow;
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
    return direct + lower;
}

int mc_bound_skip(mc_bound_net_t *net, uint64_t bytes, double alpha, double floor,
                  const mc_best_t *best)
{
    double top = fmax(floor, best->where >= 0 ? best->bw + best->alpha : 0);
    double lower = mc_bound_net_lower(net);
    return lower > 0 && (double)bytes / lower + (isfinite(alpha) ? alpha : 0) <= top;
}
