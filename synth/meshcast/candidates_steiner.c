/* Cheap multicast trees under link prices, for the column generation of the meshcast strategy
 * (docs/synthesis.md): igraph 0.10 has no Steiner-tree function, so this is the shortest-path
 * heuristic of Takahashi and Matsuyama over igraph's Dijkstra. The graph is the complete directed
 * graph over the GPUs a share may use, an edge a->b standing for the route a transfer from a to
 * b takes (mc_topo_route) and weighing what its links cost at their prices; a cheapest path
 * a->x->b is a relay through GPU x, so relays may sit at any GPU, needed there or not. */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

void mc_steiner_free(mc_steiner_t *g)
{
    free(g->gpus);
    free(g->node);
    free(g->w);
    free(g->dist);
    free(g->pred);
    memset(g, 0, sizeof(*g));
}

/* The distance from the root of a Dijkstra tree to node b (memo: per node, -1 where not known):
 * its parent's plus the edge's weight, the sum Dijkstra itself made when it set b's parent. */
static double tree_dist(const mc_steiner_t *g, const igraph_vector_int_t *par, int b, double *memo)
{
    if (memo[b] < 0)
        memo[b] = tree_dist(g, par, (int)VECTOR(*par)[b], memo) +
                  g->w[(size_t)VECTOR(*par)[b] * (size_t)g->n + (size_t)b];
    return memo[b];
}

/* Fills g->dist and g->pred from every node (igraph Dijkstra over g->w, under
 * mc_topo_igraph_lock): one shortest-path tree per node, the distances summed down it (a second
 * Dijkstra for the distances alone was a quarter of the pricing on eight DGX A100 under two
 * spines). The graph is complete, so every node is reached. */
static mc_status_t all_pairs(mc_steiner_t *g, mc_err_t *err)
{
    int n = g->n;
    mc_status_t st = MC_OK;
    igraph_t ig;
    igraph_vector_int_t edges, par;
    igraph_vector_t w;
    double *memo = mc_xmalloc(sizeof(double) * (size_t)(n + 1));
    mc_topo_igraph_lock();
    igraph_vector_int_init(&edges, 0);
    igraph_vector_int_init(&par, 0);
    igraph_vector_init(&w, 0);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (a != b) {
                igraph_vector_int_push_back(&edges, a);
                igraph_vector_int_push_back(&edges, b);
                igraph_vector_push_back(&w, g->w[a * n + b]);
            }
    if (igraph_create(&ig, &edges, n, IGRAPH_DIRECTED) != IGRAPH_SUCCESS) {
        st = mc_err_set(err, MC_ERR_INTERNAL, "%s:%d: igraph could not build the price graph",
                        __FILE__, __LINE__);
        goto out_graph;
    }
    for (int a = 0; a < n; a++) {
        if (igraph_get_shortest_paths_dijkstra(&ig, NULL, NULL, a, igraph_vss_all(), &w,
                                               IGRAPH_OUT, &par, NULL) != IGRAPH_SUCCESS) {
            st = mc_err_set(err, MC_ERR_INTERNAL, "%s:%d: igraph Dijkstra failed", __FILE__,
                            __LINE__);
            goto out;
        }
        for (int b = 0; b < n; b++)
            memo[b] = b == a ? 0 : -1;
        for (int b = 0; b < n; b++) {
            g->dist[a * n + b] = tree_dist(g, &par, b, memo);
            g->pred[a * n + b] = (int)VECTOR(par)[b];
        }
    }
out:
    igraph_destroy(&ig);
out_graph:
    igraph_vector_destroy(&w);
    igraph_vector_int_destroy(&par);
    igraph_vector_int_destroy(&edges);
    free(memo);
    mc_topo_igraph_unlock();
    return st;
}

mc_status_t mc_steiner_init(mc_steiner_t *g, const mc_topo_t *topo, const int *gpus, int n,
                            const double *price, double eps, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    memset(g, 0, sizeof(*g));
    g->topo = topo;
    g->n = n;
    g->gpus = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    memcpy(g->gpus, gpus, sizeof(int) * (size_t)n);
    g->node = mc_xmalloc(sizeof(int) * (size_t)(topo->ngpus + 1));
    for (int i = 0; i < topo->ngpus; i++)
        g->node[i] = -1;
    for (int i = 0; i < n; i++)
        g->node[gpus[i]] = i;
    size_t nn = (size_t)n * (size_t)n + 1;
    g->w = mc_xcalloc(nn, sizeof(double));
    g->dist = mc_xcalloc(nn, sizeof(double));
    g->pred = mc_xcalloc(nn, sizeof(int));
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            mc_route_t r;
            if (a == b)
                continue;
            MC_CHECK_GOTO(mc_topo_route(topo, gpus[a], gpus[b], &r, err), out, st);
            for (int i = 0; i < r.nlinks; i++)
                g->w[a * n + b] += (price[r.links[i]] + eps) / topo->links[r.links[i]].bw;
        }
    st = all_pairs(g, err);
out:
    if (st != MC_OK)
        mc_steiner_free(g);
    return st;
}

/* Whether node v lies in the subtree of node a (up: parent node per node, -1 at the root). */
static int below(const int *up, int v, int a)
{
    for (; v >= 0; v = up[v])
        if (v == a)
            return 1;
    return 0;
}

/* The local search moves a node under a shallower parent that costs up to this much more: fill
 * grows with depth, and the duals of a degenerate split barely tell equal links apart. */
#define MC_STEINER_FLAT 0.02

/* Edges from the root down to node v. */
static int level(const int *up, int v)
{
    int d = 0;
    for (; up[v] >= 0; v = up[v])
        d++;
    return d;
}

/* Local search after the heuristic: every node moves under whichever tree node reaches it most
 * cheaply (not one of its own descendants; among equal prices, the shallowest), relays left with nothing below them are dropped, and
 * the edges are written again parents first. Returns the new edge count. */
static int improve(const mc_steiner_t *g, int root, const int *dests, int ndests, int *parent,
                   int *child, int ne, double *cost)
{
    int n = g->n;
    int *up = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    int *kids = mc_xcalloc((size_t)n + 1, sizeof(int));
    char *dest = mc_xcalloc((size_t)n + 1, 1);
    for (int v = 0; v < n; v++)
        up[v] = -2; /* not in the tree */
    up[root] = -1;
    for (int e = 0; e < ne; e++)
        up[g->node[child[e]]] = g->node[parent[e]];
    for (int i = 0; i < ndests; i++)
        dest[g->node[dests[i]]] = 1;
    for (int moved = 1, pass = 0; moved && pass < n; pass++) {
        moved = 0;
        for (int v = 0; v < n; v++) {
            if (up[v] < 0)
                continue;
            int best = up[v];
            for (int u = 0; u < n; u++)
                if (up[u] != -2 && u != v && !below(up, u, v) &&
                    (g->w[u * n + v] < g->w[best * n + v] * (1 - 1e-9) ||
                     (g->w[u * n + v] <= g->w[best * n + v] * (1 + MC_STEINER_FLAT) &&
                      level(up, u) < level(up, best))))
                    best = u;
            moved |= best != up[v];
            up[v] = best;
        }
    }
    for (int v = 0; v < n; v++)
        if (up[v] >= 0)
            kids[up[v]]++;
    for (int pruned = 1; pruned;) {
        pruned = 0;
        for (int v = 0; v < n; v++)
            if (up[v] >= 0 && !kids[v] && !dest[v]) {
                kids[up[v]]--;
                up[v] = -2;
                pruned = 1;
            }
    }
    /* parents first: breadth-first from the root, children by node */
    int *queue = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    int head = 0, tail = 0;
    queue[tail++] = root;
    *cost = 0;
    ne = 0;
    while (head < tail) {
        int a = queue[head++];
        for (int v = 0; v < n; v++)
            if (up[v] == a) {
                parent[ne] = g->gpus[a];
                child[ne++] = g->gpus[v];
                *cost += g->w[a * n + v];
                queue[tail++] = v;
            }
    }
    free(queue);
    free(dest);
    free(kids);
    free(up);
    return ne;
}

int mc_steiner_tree(const mc_steiner_t *g, int root, const int *dests, int ndests, int *parent,
                    int *child, double *cost)
{
    int n = g->n, ne = 0;
    if (root < 0 || root >= g->topo->ngpus || g->node[root] < 0)
        return -1;
    for (int i = 0; i < ndests; i++)
        if (dests[i] < 0 || dests[i] >= g->topo->ngpus || g->node[dests[i]] < 0)
            return -1;
    char *in = mc_xcalloc((size_t)n + 1, 1);
    double *near = mc_xmalloc(sizeof(double) * (size_t)(n + 1)); /* per node: to the tree */
    int *from = mc_xmalloc(sizeof(int) * (size_t)(n + 1));       /* the tree node nearest */
    int *path = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    int r = g->node[root];
    in[r] = 1;
    for (int v = 0; v < n; v++) {
        near[v] = g->dist[r * n + v];
        from[v] = r;
    }
    *cost = 0;
    for (;;) {
        /* the destination not yet reached that is nearest to the tree (lowest GPU on ties) */
        int best = -1;
        for (int i = 0; i < ndests; i++) {
            int v = g->node[dests[i]];
            if (!in[v] && (best < 0 || near[v] < near[best]))
                best = v;
        }
        if (best < 0)
            break;
        /* its cheapest path from the tree, cut at the last tree node on it */
        int u = from[best], np = 0;
        for (int v = best; !in[v]; v = g->pred[u * n + v])
            path[np++] = v;
        int at = g->pred[u * n + path[np - 1]];
        for (int i = np - 1; i >= 0; i--) {
            parent[ne] = g->gpus[at];
            child[ne++] = g->gpus[path[i]];
            *cost += g->w[at * n + path[i]];
            at = path[i];
            in[at] = 1;
            for (int v = 0; v < n; v++)
                if (g->dist[at * n + v] < near[v]) {
                    near[v] = g->dist[at * n + v];
                    from[v] = at;
                }
        }
    }
    ne = improve(g, r, dests, ndests, parent, child, ne, cost);
    free(in);
    free(near);
    free(from);
    free(path);
    return ne;
}
