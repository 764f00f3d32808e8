/* A ring collective's rings over a list of GPUs, as NCCL builds them across hosts: each host's
 * run of the list searched (topo_rings_search.c) or, on an NVSwitch host, kept in the list's
 * order; channel c entering every run at its c-th GPU; and how many channels NCCL runs. */
#include <stdlib.h>

#include "topo/topo_rings.h"

/* NCCL's MAXCHANNELS (src/include/device.h), the cap of connect.cc's doubling of the rings, and
 * the cap meshcast has always put on NVLink lanes (MAXCHANNELS of the NCCL versions before). */
#define NCCL_MAX_CHANNELS 64
#define LANE_MAX_CHANNELS 32

/* A GPU's NVLink lanes and whether one of its links reaches an NVSwitch; igraph lists its
 * outgoing links without scanning every link of the topology (under mc_topo_igraph_lock). */
static void gpu_out(const mc_topo_t *t, int gpu, int *lanes, int *nvswitch)
{
    igraph_vector_int_t out;
    *lanes = *nvswitch = 0;
    mc_topo_igraph_lock();
    if (igraph_vector_int_init(&out, 0) != IGRAPH_SUCCESS) {
        mc_topo_igraph_unlock();
        return;
    }
    if (igraph_incident(&t->graph, &out, t->gpu_node[gpu], IGRAPH_OUT) == IGRAPH_SUCCESS)
        for (igraph_integer_t i = 0; i < igraph_vector_int_size(&out); i++) {
            const mc_link_t *l = &t->links[VECTOR(out)[i]];
            *lanes += l->kind == MC_LINK_NVL ? l->count : 0;
            *nvswitch |= t->nodes[l->dst].kind == MC_NODE_NVS;
        }
    igraph_vector_int_destroy(&out);
    mc_topo_igraph_unlock();
}

int mc_topo_ring_searched(const mc_topo_t *t, int gpu)
{
    int lanes, nvswitch;
    gpu_out(t, gpu, &lanes, &nvswitch);
    return !nvswitch;
}

void mc_topo_ring_from(const mc_topo_ring_search_t *s, int n, int c, int first, int *out)
{
    const int *cycle = s->order + (size_t)(c % s->nrings) * (size_t)n;
    int p = 0;
    while (p < n - 1 && cycle[p] != first)
        p++;
    for (int i = 0; i < n; i++)
        out[i] = cycle[(p + i) % n];
}

void mc_topo_rings_free(mc_topo_rings_t *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nruns; i++)
        mc_topo_ring_search_free(&r->search[i]);
    free(r->gpus);
    free(r->start);
    free(r->search);
    free(r->found);
    free(r);
}

mc_status_t mc_topo_rings_new(const mc_topo_t *t, const int *gpus, int n, int root,
                              mc_topo_ring_cache_t *cache, mc_topo_rings_t **out, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_topo_rings_t *r = mc_xcalloc(1, sizeof(*r));
    r->gpus = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    int at = -1;
    for (int i = 0; i < n && root >= 0; i++)
        if (gpus[i] == root)
            root = -1;
    /* On an NVSwitch host the root stays off the ring: each channel goes from it to the list's
     * c-th GPU, which staggers the channels' first hops (calibrated: bench/calib.cases) */
    if (root >= 0 && !mc_topo_ring_searched_cached(cache, t, root))
        root = -1;
    if (root >= 0)
        for (at = 0; at < n && mc_topo_gpu_host(t, gpus[at]) != mc_topo_gpu_host(t, root); at++)
            ;
    for (int i = 0; i < n; i++) {
        if (root >= 0 && i == at % n)
            r->gpus[r->n++] = root;
        r->gpus[r->n++] = gpus[i];
    }
    r->start = mc_xmalloc(sizeof(int) * (size_t)(r->n + 1));
    r->search = mc_xcalloc((size_t)r->n, sizeof(mc_topo_ring_search_t));
    r->found = mc_xcalloc((size_t)r->n, sizeof(*r->found));
    for (int a = 0, b; a < r->n && st == MC_OK; a = b) {
        int h = mc_topo_gpu_host(t, r->gpus[a]), nvs = 0;
        for (b = a; b < r->n && mc_topo_gpu_host(t, r->gpus[b]) == h; b++)
            nvs |= !mc_topo_ring_searched_cached(cache, t, r->gpus[b]);
        r->start[r->nruns] = a;
        if (b - a > 1 && !nvs && cache)
            st = mc_topo_ring_search_cached(cache, t, r->gpus + a, b - a, &r->found[r->nruns],
                                            err);
        else if (b - a > 1 && !nvs)
            st = mc_topo_ring_search(t, r->gpus + a, b - a, &r->search[r->nruns], err);
        if (!r->found[r->nruns])
            r->found[r->nruns] = &r->search[r->nruns];
        r->start[++r->nruns] = b;
    }
    if (st != MC_OK) {
        mc_topo_rings_free(r);
        return st;
    }
    *out = r;
    return MC_OK;
}

void mc_topo_rings_order(const mc_topo_rings_t *r, int c, int *order)
{
    for (int k = 0; k < r->nruns; k++) {
        int a = r->start[k], len = r->start[k + 1] - a, first = r->gpus[a + c % len];
        const mc_topo_ring_search_t *s = r->found[k];
        if (!s->nrings) {
            for (int i = 0; i < len; i++)
                order[a + i] = r->gpus[a + (i + c) % len];
            continue;
        }
        mc_topo_ring_from(s, len, c, first, order + a);
    }
}

int mc_topo_rings_chain(const mc_topo_rings_t *r, int root, const int *dests, int ndests, int c,
                        int *order, int *out)
{
    int n = 0, start = 0;
    mc_topo_rings_order(r, c, order);
    while (start < r->n - 1 && order[start] != root)
        start++;
    out[n++] = root;
    for (int k = 1; k <= r->n; k++) {
        int g = order[(start + k) % r->n];
        for (int d = 0; d < ndests; d++)
            if (dests[d] == g && g != root)
                out[n++] = g;
    }
    return n;
}

int mc_topo_rings_sharing(const mc_topo_rings_t *r, int channels)
{
    int apart = r->nruns == 1 && r->found[0]->nrings ? r->found[0]->nrings : 1;
    return (channels + apart - 1) / apart;
}

int mc_topo_rings_channels(const mc_topo_t *t, const mc_topo_rings_t *r, int root)
{
    int lanes, nvswitch, ports = 0, h = mc_topo_gpu_host(t, root);
    gpu_out(t, root, &lanes, &nvswitch);
    lanes = lanes < 1 ? 1 : lanes > LANE_MAX_CHANNELS ? LANE_MAX_CHANNELS : lanes;
    if (r->nruns < 2) {
        int doubled = 2 * r->found[0]->nrings;
        return !doubled ? lanes : doubled > NCCL_MAX_CHANNELS ? NCCL_MAX_CHANNELS : doubled;
    }
    for (int i = 0; i < t->nnodes; i++)
        ports += t->nodes[i].kind == MC_NODE_NET && t->nodes[i].host == h;
    if (ports < 1)
        return lanes;
    int per = (lanes + ports - 1) / ports;
    while (per > 1 && per * ports > LANE_MAX_CHANNELS)
        per--;
    return per * ports;
}
