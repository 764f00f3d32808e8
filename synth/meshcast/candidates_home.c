/* The root host's part of rail-stripe trees (candidates_rails.c, docs/synthesis.md "Rail
 * stripes"): per rail, the tree that takes the stripe from its root to the rail's GPU and to
 * every destination of the root host, planned for all the rails together by the load their
 * stripes put on each link. Every stripe starts at the root there, so the trees the other hosts
 * use (the entry GPU's shortest-path tree, which already fills some links exactly: on a MI250
 * three stripes on a one-lane xGMI link) plus a path from the root overload the links around
 * it, where trees planned around each other's load fit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

/* Adds one stripe to the load (stripes per byte/s) of every link on the route from a to b. */
static void charge(const mc_topo_t *t, int a, int b, double *load)
{
    mc_route_t rt;
    mc_err_t ignored = {0};
    if (a != b && mc_topo_route(t, a, b, &rt, &ignored) == MC_OK)
        for (int i = 0; i < rt.nlinks; i++)
            load[rt.links[i]] += 1.0 / t->links[rt.links[i]].bw;
}

/* The busiest link of the route from a to b once it carries one more stripe. */
static double peak(const mc_topo_t *t, int a, int b, const double *load)
{
    mc_route_t rt;
    mc_err_t ignored = {0};
    double most = 0;
    if (mc_topo_route(t, a, b, &rt, &ignored) != MC_OK)
        return HUGE_VAL;
    for (int i = 0; i < rt.nlinks; i++) {
        double v = load[rt.links[i]] + 1.0 / t->links[rt.links[i]].bw;
        most = v > most ? v : most;
    }
    return most;
}

/* Whether (p, d) beats (q, e): a less loaded busiest link, or as loaded (within rounding) and
 * shallower. */
static int less(double p, int d, double q, int e)
{
    return p < q * (1 - 1e-9) || (p <= q * (1 + 1e-9) && d < e);
}

/* One rail's tree over the GPUs g[0..n) (g[0] the root; with via, g[1] the rail GPU): first the
 * path from the root to the rail GPU whose busiest link is least loaded (Dijkstra on that
 * bottleneck over every GPU of g), then the others joined one at a time by the least loaded edge
 * from the tree (Prim on the same measure); ties go to the shallower. Edges parents first into
 * par, chi; returns their count. */
static int grow(const mc_topo_t *t, const int *g, int n, int via, const double *load, int *par,
                int *chi)
{
    double *best = mc_xmalloc(sizeof(double) * (size_t)n);
    int *depth = mc_xcalloc((size_t)n, sizeof(int)), *from = mc_xmalloc(sizeof(int) * (size_t)n);
    char *in = mc_xcalloc((size_t)n, 1);
    for (int v = 0; v < n; v++) {
        best[v] = HUGE_VAL;
        from[v] = -1;
    }
    best[0] = 0;
    for (int u = via ? 0 : -1; u >= 0 && u != 1;) {
        in[u] = 1;
        for (int v = 0; v < n; v++) {
            double p = in[v] ? HUGE_VAL : peak(t, g[u], g[v], load);
            p = p > best[u] ? p : best[u];
            if (!in[v] && less(p, depth[u] + 1, best[v], depth[v])) {
                best[v] = p;
                depth[v] = depth[u] + 1;
                from[v] = u;
            }
        }
        u = -1;
        for (int v = 0; v < n; v++)
            if (!in[v] && best[v] < HUGE_VAL &&
                (u < 0 || less(best[v], depth[v], best[u], depth[u])))
                u = v;
    }
    /* keep only the path to the rail GPU */
    memset(in, 0, (size_t)n);
    in[0] = 1;
    int m = 0;
    for (int v = 1; via && from[v] >= 0; v = from[v])
        m++;
    for (int v = 1, i = m - 1; via && from[v] >= 0; v = from[v], i--) {
        par[i] = g[from[v]];
        chi[i] = g[v];
        in[v] = 1;
    }
    int ne = m;
    for (;;) {
        int bu = -1, bv = -1;
        double bp = HUGE_VAL;
        for (int u = 0; u < n; u++)
            for (int v = 0; in[u] && v < n; v++) {
                double p = in[v] ? HUGE_VAL : peak(t, g[u], g[v], load);
                if (p < HUGE_VAL && (bu < 0 || less(p, depth[u] + 1, bp, depth[bu] + 1))) {
                    bp = p;
                    bu = u;
                    bv = v;
                }
            }
        if (bu < 0)
            break;
        in[bv] = 1;
        depth[bv] = depth[bu] + 1;
        par[ne] = g[bu];
        chi[ne++] = g[bv];
    }
    free(best);
    free(depth);
    free(from);
    free(in);
    return ne;
}

int mc_cands_home_trees(const mc_topo_t *t, const int *roots, const int *xs, const int *to,
                        int nrails, const int *dests, int ndests, int stride, int *par, int *chi,
                        int *ne)
{
    double *load = mc_xcalloc((size_t)t->nlinks + 1, sizeof(double));
    int *g = mc_xmalloc(sizeof(int) * (size_t)(ndests + 2));
    for (int k = 0; k < nrails; k++)
        if (to[k] >= 0)
            charge(t, xs[k], to[k], load);
    int ok = 1;
    for (int k = 0; k < nrails && ok; k++) {
        int n = 0;
        g[n++] = roots[k];
        if (xs[k] != roots[k])
            g[n++] = xs[k];
        for (int i = 0; i < ndests; i++)
            if (dests[i] != roots[k] && dests[i] != xs[k])
                g[n++] = dests[i];
        ne[k] = grow(t, g, n, xs[k] != roots[k], load, par + (size_t)k * stride,
                     chi + (size_t)k * stride);
        ok = ne[k] == n - 1;
        for (int i = 0; i < ne[k]; i++)
            charge(t, par[(size_t)k * stride + i], chi[(size_t)k * stride + i], load);
    }
    free(load);
    free(g);
    return ok ? 0 : -1;
}
