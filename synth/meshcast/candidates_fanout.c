/* A host's part of a small share's rail tree (docs/synthesis.md, "Session 18: small broadcasts
 * over several hosts"): the destinations of one host reached from the GPUs already in the tree by
 * the alpha-beta cost of the tree's own bytes. The shortest-path tree (mc_cands_host_spt) sends
 * from the entry GPU straight to each destination, which over a PCIe box puts the bytes on the
 * link between its CPUs once per GPU behind it (4 times on the RTX 3090 boxes, 10 GB/s, where
 * the NIC moves 7 GB/s); a chain loads every link once but pays a message wait per GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

/* The cost of a tree carrying `bytes` with the edge of route rt added to it: its busiest link
 * with rt's links loaded once more (load[] in bytes), plus its latest first-chunk arrival with
 * the edge's child's at `at`. */
static double cost_with(const mc_topo_t *t, const mc_route_t *rt, const double *load,
                        double busiest, double latest, double at, double bytes)
{
    double most = busiest;
    for (int i = 0; i < rt->nlinks; i++) {
        const mc_link_t *l = &t->links[rt->links[i]];
        double s = (load[rt->links[i]] + bytes) / l->bw;
        most = s > most ? s : most;
    }
    return most + (at > latest ? at : latest);
}

/* When the first chunk of `chunk` bytes sent at `from_at` over route rt has arrived. */
static double first_chunk_at(const mc_topo_t *t, const mc_route_t *rt, double from_at,
                             double chunk)
{
    return from_at + mc_topo_links_delay(t, rt->links, rt->nlinks) + chunk / rt->bw;
}

/* Loads the route's links with the tree's bytes once more; returns the busiest link's time. */
static double load_route(const mc_topo_t *t, const mc_route_t *rt, double *load, double bytes,
                         double busiest)
{
    for (int i = 0; i < rt->nlinks; i++) {
        double s = (load[rt->links[i]] += bytes) / t->links[rt->links[i]].bw;
        busiest = s > busiest ? s : busiest;
    }
    return busiest;
}

double mc_cands_fanout_cost(const mc_topo_t *topo, const int *parent, const int *child, int ne,
                            double bytes, double chunk, double *most)
{
    *most = 0;
    if (ne <= 0)
        return 0;
    int g0, n = mc_topo_host_gpus(topo, mc_topo_gpu_host(topo, parent[0]), &g0);
    double *arrive = mc_xmalloc(sizeof(double) * (size_t)(n + 1));
    double *load = mc_xcalloc((size_t)topo->nlinks + 1, sizeof(double));
    double busiest = 0, latest = 0;
    mc_err_t ignored = {0};
    for (int v = 0; v < n; v++)
        arrive[v] = 0;
    /* parents come before their children in the list */
    for (int e = 0; e < ne; e++) {
        mc_route_t rt;
        if (mc_topo_route(topo, parent[e], child[e], &rt, &ignored) != MC_OK) {
            latest = HUGE_VAL;
            break;
        }
        busiest = load_route(topo, &rt, load, bytes, busiest);
        double at = first_chunk_at(topo, &rt, arrive[parent[e] - g0], chunk);
        arrive[child[e] - g0] = at;
        latest = at > latest ? at : latest;
    }
    free(arrive);
    free(load);
    *most = busiest;
    return busiest + latest;
}

int mc_cands_host_fanout(const mc_topo_t *topo, const int *in, int nin, const int *want,
                         int nwant, double bytes, double chunk, int *parent, int *child)
{
    mc_err_t ignored = {0};
    int g0, n = mc_topo_host_gpus(topo, mc_topo_gpu_host(topo, in[0]), &g0), ne = 0;
    double *arrive = mc_xmalloc(sizeof(double) * (size_t)(n + 1));
    double *load = mc_xcalloc((size_t)topo->nlinks + 1, sizeof(double));
    char *left = mc_xcalloc((size_t)n + 1, 1);
    double busiest = 0, latest = 0;
    for (int v = 0; v < n; v++)
        arrive[v] = -1;
    for (int i = 0; i < nin; i++)
        arrive[in[i] - g0] = 0;
    for (int i = 0; i < nwant; i++)
        left[want[i] - g0] = arrive[want[i] - g0] < 0;
    for (;;) {
        double best = HUGE_VAL, best_at = 0;
        int bu = -1, bv = -1;
        mc_route_t brt = {0};
        for (int v = 0; v < n; v++)
            for (int u = 0; u < n; u++) {
                mc_route_t rt;
                if (!left[v] || arrive[u] < 0 ||
                    mc_topo_route(topo, g0 + u, g0 + v, &rt, &ignored) != MC_OK)
                    continue;
                double at = first_chunk_at(topo, &rt, arrive[u], chunk);
                double c = cost_with(topo, &rt, load, busiest, latest, at, bytes);
                /* ties: the earlier arrival, then the lower GPUs */
                if (c < best * (1 - 1e-9) || (c <= best * (1 + 1e-9) && at < best_at)) {
                    best = c;
                    best_at = at;
                    bu = u;
                    bv = v;
                    brt = rt;
                }
            }
        if (bv < 0)
            break;
        busiest = load_route(topo, &brt, load, bytes, busiest);
        latest = best_at > latest ? best_at : latest;
        arrive[bv] = best_at;
        left[bv] = 0;
        parent[ne] = g0 + bu;
        child[ne++] = g0 + bv;
    }
    if (memchr(left, 1, (size_t)n))
        ne = -1; /* unreachable inside the host */
    free(arrive);
    free(load);
    free(left);
    return ne;
}
