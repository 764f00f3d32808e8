/* The root host's part of rail-stripe trees (candidates_rails.c, docs/synthesis.md "Rail
 * stripes"): per rail, the trees that take the stripe from its root to a first GPU (the rail's,
 * or on the root's own rail each other GPU in turn) and to every destination of the root host,
 * planned for all the rails together by the load their stripes put on each link. Every stripe
 * starts at the root there, so the trees the other hosts use (the entry GPU's shortest-path
 * tree, which already fills some links exactly: on a MI250 three stripes on a one-lane xGMI
 * link) plus a path from the root overload the links around it, where trees planned around each
 * other's load fit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

/* Adds w stripes to the load (stripes per byte/s) of every link on the route from a to b. */
static void charge(const mc_topo_t *t, int a, int b, double w, double *load)
{
    mc_route_t rt;
    mc_err_t ignored = {0};
    if (a != b && mc_topo_route(t, a, b, &rt, &ignored) == MC_OK)
        for (int i = 0; i < rt.nlinks; i++)
            load[rt.links[i]] += w / t->links[rt.links[i]].bw;
}

/* The busiest link of the route from a to b once it carries w more stripes; *len gets the
 * route's length as the host's shortest-path trees weigh it (mc_topo_host_spt: time per byte,
 * a little more per hop). */
static double peak(const mc_topo_t *t, int a, int b, double w, const double *load, double *len)
{
    mc_route_t rt;
    mc_err_t ignored = {0};
    double most = 0;
    if (mc_topo_route(t, a, b, &rt, &ignored) != MC_OK)
        return HUGE_VAL;
    *len = 1.0 / rt.bw + 1e-15 * (1 + rt.nlinks);
    for (int i = 0; i < rt.nlinks; i++) {
        double v = load[rt.links[i]] + w / t->links[rt.links[i]].bw;
        most = v > most ? v : most;
    }
    return most;
}

/* Whether (p, d) beats (q, e): a less loaded busiest link, or as loaded (within rounding) and
 * nearer (d, e: the distance from the root along the tree, as the host's shortest-path trees
 * weigh routes); a load up to level (the busiest link's before the tree) counts as none, since
 * the split is at that level anyway: with nothing loaded a tree is the host's shortest-path tree,
 * and leaves it only where its links would fill (a deeper tree pays more pipeline fill, and its
 * chunks cost the simulator more). */
static int less(double p, double d, double q, double e, double level)
{
    p = p > level ? p : level;
    q = q > level ? q : level;
    return p < q * (1 - 1e-9) || (p <= q * (1 + 1e-9) && d < e);
}

/* The path from g[0] to g[1] among the GPUs g[0..n) whose busiest link, carrying w more, is
 * least loaded (Dijkstra on that bottleneck, the nearer on a tie); edges into par, chi, marked in
 * in[]; returns their count. */
static int path(const mc_topo_t *t, const int *g, int n, double w, const double *load,
                double level, int *par, int *chi, char *in)
{
    double *best = mc_xmalloc(sizeof(double) * (size_t)n);
    double *dist = mc_xcalloc((size_t)n, sizeof(double));
    int *hops = mc_xcalloc((size_t)n, sizeof(int)), *from = mc_xmalloc(sizeof(int) * (size_t)n);
    char *done = mc_xcalloc((size_t)n, 1);
    for (int v = 0; v < n; v++) {
        best[v] = HUGE_VAL;
        from[v] = -1;
    }
    best[0] = 0;
    for (int u = 0; u >= 0 && u != 1;) {
        done[u] = 1;
        for (int v = 0; v < n; v++) {
            double len = 0, p = done[v] ? HUGE_VAL : peak(t, g[u], g[v], w, load, &len);
            p = p > best[u] ? p : best[u];
            if (!done[v] && less(p, dist[u] + len, best[v], dist[v], level)) {
                best[v] = p;
                dist[v] = dist[u] + len;
                hops[v] = hops[u] + 1;
                from[v] = u;
            }
        }
        u = -1;
        for (int v = 0; v < n; v++)
            if (!done[v] && best[v] < HUGE_VAL &&
                (u < 0 || less(best[v], dist[v], best[u], dist[u], level)))
                u = v;
    }
    int m = from[1] >= 0 ? hops[1] : 0;
    for (int v = 1, i = m - 1; i >= 0; v = from[v], i--) {
        par[i] = g[from[v]];
        chi[i] = g[v];
        in[v] = 1;
    }
    free(best);
    free(dist);
    free(hops);
    free(from);
    free(done);
    return m;
}

/* Prim's state over the GPUs g[0..n) of one tree: per GPU outside it, its best edge from the
 * tree so far (the busiest link's load with w more, the distance it would have, the parent). */
typedef struct prim {
    const mc_topo_t *t;
    const int *g;
    int n;
    double w, level;
    const double *load;
    char *in;
    double *best, *dist;
    int *from;
} prim_t;

/* Offers every edge from u, in the tree, to the GPUs outside it. */
static void offer(prim_t *p, int u)
{
    for (int v = 0; v < p->n; v++) {
        double len = 0, b = p->in[v] ? HUGE_VAL : peak(p->t, p->g[u], p->g[v], p->w, p->load, &len);
        if (b < HUGE_VAL && (p->from[v] < 0 || less(b, p->dist[u] + len, p->best[v], p->dist[v],
                                                    p->level))) {
            p->best[v] = b;
            p->dist[v] = p->dist[u] + len;
            p->from[v] = u;
        }
    }
}

/* Joins the GPUs of g not yet in[] the tree (its path, ne edges, parents first) one at a time
 * by the edge from the tree whose busiest link, carrying w more, is least loaded (Prim on that
 * bottleneck; the nearer on a tie), never from the root (g[0]): every stripe of the host
 * leaves it, so its links carry each byte once, on the paths (on an NVSwitch the root would
 * otherwise be the shallowest parent of every GPU until its link filled); returns the count of
 * edges. */
static int join(const mc_topo_t *t, const int *g, int n, double w, const double *load,
                double level, int *par, int *chi, int ne, char *in)
{
    prim_t p = {.t = t, .g = g, .n = n, .w = w, .level = level, .load = load, .in = in};
    p.best = mc_xmalloc(sizeof(double) * (size_t)n);
    p.dist = mc_xcalloc((size_t)n, sizeof(double));
    p.from = mc_xmalloc(sizeof(int) * (size_t)n);
    for (int v = 0; v < n; v++) {
        p.best[v] = HUGE_VAL;
        p.from[v] = -1;
    }
    /* the path's distances, edge after edge from the root */
    for (int i = 0; i < ne; i++)
        for (int v = 0; v < n; v++)
            for (int a = 0; g[v] == chi[i] && a < n; a++)
                if (g[a] == par[i]) {
                    double len = 0;
                    peak(t, par[i], chi[i], w, load, &len);
                    p.dist[v] = p.dist[a] + len;
                }
    for (int u = ne > 0; u < n; u++)
        if (in[u])
            offer(&p, u);
    for (;;) {
        int bv = -1;
        for (int v = 0; v < n; v++)
            if (!in[v] && p.from[v] >= 0 &&
                (bv < 0 || less(p.best[v], p.dist[v], p.best[bv], p.dist[bv], level)))
                bv = v;
        if (bv < 0)
            break;
        in[bv] = 1;
        par[ne] = g[p.from[bv]];
        chi[ne++] = g[bv];
        offer(&p, bv);
    }
    free(p.best);
    free(p.dist);
    free(p.from);
    return ne;
}

/* The busiest link's load: the level a tree may fill its links to at no cost (less). */
static double busiest(const mc_topo_t *t, const double *load)
{
    double most = 0;
    for (int l = 0; l < t->nlinks; l++)
        most = load[l] > most ? load[l] : most;
    return most;
}

int mc_cands_home_trees(const mc_topo_t *t, const mc_home_t *h, int *par, int *chi, int *ne,
                        int *npath)
{
    double *load = mc_xcalloc((size_t)t->nlinks + 1, sizeof(double));
    int *g = mc_xmalloc(sizeof(int) * (size_t)h->n * (size_t)(h->ndests + 2));
    int *ng = mc_xmalloc(sizeof(int) * (size_t)(h->n + 1)), stride = h->ndests + 2;
    char *in = mc_xcalloc((size_t)h->n * (size_t)stride, 1);
    for (int k = 0; k < h->ndep; k++)
        charge(t, h->dep_from[k], h->dep_to[k], 1, load);
    /* first every tree's path from its root to its first GPU, so that the trees joined after see
     * the root's links taken by the paths of the trees joined later */
    for (int e = 0; e < h->n; e++) {
        int *ge = g + (size_t)e * stride, n = 0;
        ge[n++] = h->roots[e];
        ge[n++] = h->firsts[e];
        for (int i = 0; i < h->ndests; i++)
            if (h->dests[i] != h->roots[e] && h->dests[i] != h->firsts[e])
                ge[n++] = h->dests[i];
        ng[e] = n;
        in[(size_t)e * stride] = 1;
        ne[e] = path(t, ge, n, h->ws[e], load, busiest(t, load), par + (size_t)e * stride,
                     chi + (size_t)e * stride, in + (size_t)e * stride);
        for (int i = 0; i < ne[e]; i++)
            charge(t, par[(size_t)e * stride + i], chi[(size_t)e * stride + i], h->ws[e], load);
    }
    int ok = 1;
    for (int e = 0; e < h->n && ok; e++) {
        int m = npath[e] = ne[e];
        ne[e] = join(t, g + (size_t)e * stride, ng[e], h->ws[e], load, busiest(t, load),
                     par + (size_t)e * stride, chi + (size_t)e * stride, m,
                     in + (size_t)e * stride);
        ok = ne[e] == ng[e] - 1;
        for (int i = m; i < ne[e]; i++)
            charge(t, par[(size_t)e * stride + i], chi[(size_t)e * stride + i], h->ws[e], load);
    }
    free(load);
    free(g);
    free(ng);
    free(in);
    return ok ? 0 : -1;
}
