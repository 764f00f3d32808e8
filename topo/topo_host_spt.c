/* Each GPU's shortest-path tree over the other GPUs of its host (the complete graph of the host's
 * GPU-to-GPU routes, weighted by time per byte), computed once per GPU and cached inside the
 * topology: the candidate builders ask for it once per tree they fan out inside a host, and
 * building the host graph and running Dijkstra each time was a third of the synthesis of an
 * all-to-all over 64 GPUs. */
#include <stdlib.h>

#include "topo/topo_internal.h"

struct mc_host_spt_cache {
    int nnodes, nlinks, ngpus;
    int **parent; /* per GPU: NULL until asked */
};

/* Weights of the complete GPU graph of one host: 1/bw of each route, plus a little per hop so
 * that among equal rates the tree with fewer relays wins. */
static mc_status_t host_graph(const mc_topo_t *t, int g0, int n, igraph_t *g, igraph_vector_t *w,
                              mc_err_t *err)
{
    igraph_vector_int_t edges;
    igraph_vector_int_init(&edges, 0);
    igraph_vector_init(w, 0);
    mc_status_t st = MC_OK;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            mc_route_t r;
            MC_CHECK_GOTO(mc_topo_route(t, g0 + a, g0 + b, &r, err), out, st);
            igraph_vector_int_push_back(&edges, a);
            igraph_vector_int_push_back(&edges, b);
            igraph_vector_push_back(w, 1.0 / r.bw + 1e-15 * (1 + r.nlinks));
        }
    if (igraph_create(g, &edges, n, IGRAPH_DIRECTED) != IGRAPH_SUCCESS)
        st = mc_err_set(err, MC_ERR_INTERNAL, "%s:%d: igraph could not build a host graph",
                        __FILE__, __LINE__);
out:
    igraph_vector_int_destroy(&edges);
    if (st != MC_OK)
        igraph_vector_destroy(w);
    return st;
}

static mc_status_t compute(const mc_topo_t *t, int src, int g0, int n, int *parent, mc_err_t *err)
{
    igraph_t g;
    igraph_vector_t w;
    igraph_vector_int_t par;
    mc_status_t st = host_graph(t, g0, n, &g, &w, err);
    if (st != MC_OK)
        return st;
    igraph_vector_int_init(&par, 0);
    if (igraph_get_shortest_paths_dijkstra(&g, NULL, NULL, src - g0, igraph_vss_all(), &w,
                                           IGRAPH_OUT, &par, NULL) != IGRAPH_SUCCESS)
        st = mc_err_set(err, MC_ERR_INTERNAL, "%s:%d: igraph Dijkstra failed", __FILE__, __LINE__);
    for (int v = 0; v < n && st == MC_OK; v++)
        parent[v] = (int)VECTOR(par)[v];
    igraph_vector_int_destroy(&par);
    igraph_vector_destroy(&w);
    igraph_destroy(&g);
    return st;
}

/* The cache lives inside the (logically const) topology; it is rebuilt if the graph changed. */
static struct mc_host_spt_cache *cache_of(const mc_topo_t *ct)
{
    mc_topo_t *t = (mc_topo_t *)ct;
    struct mc_host_spt_cache *c = t->host_spt_cache;
    if (c && c->nnodes == t->nnodes && c->nlinks == t->nlinks && c->ngpus == t->ngpus)
        return c;
    mc_topo_host_spt_cache_free(t);
    c = mc_xcalloc(1, sizeof(*c));
    c->nnodes = t->nnodes;
    c->nlinks = t->nlinks;
    c->ngpus = t->ngpus;
    c->parent = mc_xcalloc((size_t)t->ngpus + 1, sizeof(int *));
    t->host_spt_cache = c;
    return c;
}

void mc_topo_host_spt_cache_free(mc_topo_t *t)
{
    struct mc_host_spt_cache *c = t->host_spt_cache;
    if (!c)
        return;
    for (int i = 0; i < c->ngpus; i++)
        free(c->parent[i]);
    free(c->parent);
    free(c);
    t->host_spt_cache = NULL;
}

/* The cache, and igraph in it, under mc_topo_igraph_lock. */
mc_status_t mc_topo_host_spt(const mc_topo_t *t, int src, int *g0, const int **parent,
                             mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_topo_igraph_lock();
    struct mc_host_spt_cache *c = cache_of(t);
    int n = mc_topo_host_gpus(t, mc_topo_gpu_host(t, src), g0);
    if (!c->parent[src]) {
        int *p = mc_xmalloc(sizeof(int) * (size_t)n);
        st = compute(t, src, *g0, n, p, err);
        if (st != MC_OK)
            free(p);
        else
            c->parent[src] = p;
    }
    *parent = c->parent[src];
    mc_topo_igraph_unlock();
    return st;
}
