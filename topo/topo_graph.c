/* Building a topology: nodes, directed links, GPU numbering, the igraph graph and the
 * fingerprint; plus the capacity queries the lower bounds use. Loaders only call these. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "topo/topo.h"
#include "topo/topo_internal.h"

/* Per-message software overhead (alpha) by link kind: NCCL's Simple-protocol per-step hardware
 * latencies in src/graph/tuning.cc (NVLink 3.4 us, PCIe 5.7 us, network 14 us; see
 * ../shared/research/simulation-runtime.md section 2.2). */
double mc_topo_alpha(mc_link_kind_t kind)
{
    static const double alpha[MC_LINK__COUNT] = {
        [MC_LINK_LOC] = 0.0,    [MC_LINK_NVL] = 3.4e-6, [MC_LINK_C2C] = 3.4e-6,
        [MC_LINK_PCI] = 5.7e-6, [MC_LINK_SYS] = 5.7e-6, [MC_LINK_NET] = 14.0e-6,
        [MC_LINK_XGMI] = 3.4e-6, /* RCCL's LINK_NVL carries xGMI: it shares NVLink's figures */
    };
    return (unsigned)kind < MC_LINK__COUNT ? alpha[kind] : 0.0;
}

/* Wire and switch latency of one hop when a file gives none. */
double mc_topo_default_latency(mc_link_kind_t kind)
{
    static const double lat[MC_LINK__COUNT] = {
        [MC_LINK_LOC] = 0.0,    [MC_LINK_NVL] = 0.5e-6, [MC_LINK_C2C] = 0.5e-6,
        [MC_LINK_PCI] = 0.5e-6, [MC_LINK_SYS] = 0.5e-6, [MC_LINK_NET] = 1.0e-6,
        [MC_LINK_XGMI] = 0.5e-6,
    };
    return (unsigned)kind < MC_LINK__COUNT ? lat[kind] : 0.0;
}

double mc_topo_links_delay(const mc_topo_t *t, const int *links, int n)
{
    double alpha = 0, lat = 0;
    for (int i = 0; i < n; i++) {
        const mc_link_t *l = &t->links[links[i]];
        double a = mc_topo_alpha(l->kind);
        if (a > alpha)
            alpha = a;
        lat += l->latency;
    }
    return alpha + lat;
}

const char *mc_node_kind_str(mc_node_kind_t k)
{
    static const char *names[MC_NODE__COUNT] = {"GPU", "PCI", "NVS", "CPU", "NIC", "NET", "SWITCH"};
    return (unsigned)k < MC_NODE__COUNT ? names[k] : "?";
}

const char *mc_link_kind_str(mc_link_kind_t k)
{
    static const char *names[MC_LINK__COUNT] = {"LOC", "NVL", "C2C", "PCI", "SYS", "NET", "XGMI"};
    return (unsigned)k < MC_LINK__COUNT ? names[k] : "?";
}

int mc_link_is_gpu_fabric(mc_link_kind_t k)
{
    return k == MC_LINK_NVL || k == MC_LINK_XGMI;
}

/* (topo.h) */
static pthread_mutex_t igraph_lock = PTHREAD_MUTEX_INITIALIZER;

void mc_topo_igraph_lock(void)
{
    pthread_mutex_lock(&igraph_lock);
}

void mc_topo_igraph_unlock(void)
{
    pthread_mutex_unlock(&igraph_lock);
}

mc_topo_t *mc_topo_new(const char *source)
{
    static int handler_installed;
    if (!handler_installed) {
        /* igraph's default handler aborts the process; errors come back as return codes. */
        igraph_set_error_handler(igraph_error_handler_printignore);
        handler_installed = 1;
    }
    mc_topo_t *t = mc_xcalloc(1, sizeof(*t));
    t->source = mc_xstrdup(source ? source : "(memory)");
    return t;
}

int mc_topo_add_node(mc_topo_t *t, const mc_node_t *proto)
{
    MC_GROW(t->nodes, t->node_cap, t->nnodes + 1);
    t->nodes[t->nnodes] = *proto;
    t->nodes[t->nnodes].gpu = -1;
    return t->nnodes++;
}

static unsigned link_slot(const mc_topo_t *t, int src, int dst, mc_link_kind_t kind)
{
    uint64_t h = ((uint64_t)(unsigned)src * 0x9E3779B97F4A7C15ULL) ^
                 ((uint64_t)(unsigned)dst * 0xC2B2AE3D27D4EB4FULL) ^ (uint64_t)kind;
    return (unsigned)((h ^ (h >> 29)) & (uint64_t)(t->link_index_cap - 1));
}

/* Keeps the (src, dst, kind) index at most half full, so adding a link stays O(1) at cluster
 * scale (the 1024-GPU file has 12,608 links). */
static void link_index_grow(mc_topo_t *t)
{
    if (2 * (t->nlinks + 1) <= t->link_index_cap)
        return;
    free(t->link_index);
    t->link_index_cap = t->link_index_cap ? 2 * t->link_index_cap : 64;
    while (2 * (t->nlinks + 1) > t->link_index_cap)
        t->link_index_cap *= 2;
    t->link_index = mc_xmalloc(sizeof(int) * (size_t)t->link_index_cap);
    memset(t->link_index, 0xff, sizeof(int) * (size_t)t->link_index_cap);
    for (int i = 0; i < t->nlinks; i++) {
        const mc_link_t *l = &t->links[i];
        unsigned k = link_slot(t, l->src, l->dst, l->kind);
        while (t->link_index[k] >= 0)
            k = (k + 1) & (unsigned)(t->link_index_cap - 1);
        t->link_index[k] = i;
    }
}

int mc_topo_add_link(mc_topo_t *t, int src, int dst, mc_link_kind_t kind, double bw,
                     double latency, int count)
{
    link_index_grow(t);
    unsigned k = link_slot(t, src, dst, kind);
    for (; t->link_index[k] >= 0; k = (k + 1) & (unsigned)(t->link_index_cap - 1)) {
        mc_link_t *l = &t->links[t->link_index[k]];
        if (l->src == src && l->dst == dst && l->kind == kind) {
            l->bw += bw;
            l->count += count;
            return t->link_index[k];
        }
    }
    MC_GROW(t->links, t->link_cap, t->nlinks + 1);
    t->links[t->nlinks] = (mc_link_t){src, dst, kind, bw, latency, count};
    t->link_index[k] = t->nlinks;
    return t->nlinks++;
}

void mc_topo_add_link_pair(mc_topo_t *t, int a, int b, mc_link_kind_t kind, double bw,
                           double latency, int count)
{
    mc_topo_add_link(t, a, b, kind, bw, latency, count);
    mc_topo_add_link(t, b, a, kind, bw, latency, count);
}

void mc_topo_warn(mc_topo_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = mc_xvasprintf(fmt, ap);
    va_end(ap);
    MC_GROW(t->warnings, t->warn_cap, t->nwarnings + 1);
    t->warnings[t->nwarnings++] = s;
}

static const mc_topo_t *sort_topo; /* qsort has no context argument in C11 */

static int cmp_gpu_nodes(const void *a, const void *b)
{
    const mc_node_t *x = &sort_topo->nodes[*(const int *)a];
    const mc_node_t *y = &sort_topo->nodes[*(const int *)b];
    if (x->host != y->host)
        return x->host < y->host ? -1 : 1;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

static uint64_t fingerprint(const mc_topo_t *t)
{
    XXH64_state_t *h = XXH64_createState();
    XXH64_reset(h, 0x6d65736863617374ULL);
    for (int i = 0; i < t->nnodes; i++) {
        const mc_node_t *n = &t->nodes[i];
        char line[160];
        int len = snprintf(line, sizeof line, "N %s %d %d %d %d %.6g %s\n", mc_node_kind_str(n->kind),
                           n->host, n->gpu, n->sm, n->rail, n->bw, n->name);
        XXH64_update(h, line, (size_t)len);
    }
    for (int i = 0; i < t->nlinks; i++) {
        const mc_link_t *l = &t->links[i];
        char line[200];
        int len = snprintf(line, sizeof line, "L %s %s %s %.6g %.6g %d\n", t->nodes[l->src].name,
                           t->nodes[l->dst].name, mc_link_kind_str(l->kind), l->bw, l->latency,
                           l->count);
        XXH64_update(h, line, (size_t)len);
    }
    uint64_t v = XXH64_digest(h);
    XXH64_freeState(h);
    return v;
}

mc_status_t mc_topo_finalize(mc_topo_t *t, mc_err_t *err)
{
    free(t->gpu_node);
    t->gpu_node = NULL;
    t->ngpus = 0;
    t->nhosts = 0;
    for (int i = 0; i < t->nnodes; i++) {
        if (t->nodes[i].host + 1 > t->nhosts)
            t->nhosts = t->nodes[i].host + 1;
        if (t->nodes[i].kind == MC_NODE_GPU)
            t->ngpus++;
    }
    if (t->ngpus == 0)
        return mc_err_set(err, MC_ERR_INVALID, "%s: the topology has no GPUs", t->source);
    t->gpu_node = mc_xmalloc(sizeof(int) * (size_t)t->ngpus);
    int k = 0;
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].kind == MC_NODE_GPU)
            t->gpu_node[k++] = i;
    sort_topo = t;
    mc_sort(t->gpu_node, (size_t)t->ngpus, sizeof(int), cmp_gpu_nodes);
    for (int g = 0; g < t->ngpus; g++)
        t->nodes[t->gpu_node[g]].gpu = g;
    for (int i = 0; i < t->nlinks; i++)
        if (!(t->links[i].bw > 0))
            return mc_err_set(err, MC_ERR_INVALID, "%s: link %s -> %s has no bandwidth", t->source,
                              t->nodes[t->links[i].src].name, t->nodes[t->links[i].dst].name);

    if (t->graph_ready)
        igraph_destroy(&t->graph);
    t->graph_ready = 0;
    igraph_vector_int_t edges;
    if (igraph_vector_int_init(&edges, 2 * (igraph_integer_t)t->nlinks) != IGRAPH_SUCCESS)
        return mc_err_set(err, MC_ERR_NOMEM, "%s: cannot build the graph", t->source);
    for (int i = 0; i < t->nlinks; i++) {
        VECTOR(edges)[2 * i] = t->links[i].src;
        VECTOR(edges)[2 * i + 1] = t->links[i].dst;
    }
    igraph_error_t ie = igraph_create(&t->graph, &edges, t->nnodes, IGRAPH_DIRECTED);
    igraph_vector_int_destroy(&edges);
    if (ie != IGRAPH_SUCCESS)
        return mc_err_set(err, MC_ERR_INTERNAL, "%s: igraph: %s", t->source, igraph_strerror(ie));
    t->graph_ready = 1;
    t->fingerprint = fingerprint(t);
    return MC_OK;
}

void mc_topo_free(mc_topo_t *t)
{
    if (!t)
        return;
    mc_topo_route_cache_free(t);
    mc_topo_host_spt_cache_free(t);
    if (t->graph_ready)
        igraph_destroy(&t->graph);
    for (int i = 0; i < t->nwarnings; i++)
        free(t->warnings[i]);
    free(t->warnings);
    free(t->nodes);
    free(t->links);
    free(t->link_index);
    free(t->gpu_node);
    free(t->source);
    free(t);
}

int mc_topo_gpu_host(const mc_topo_t *t, int gpu)
{
    return t->nodes[t->gpu_node[gpu]].host;
}

/* The first GPU whose host is at least h. */
static int first_gpu_from(const mc_topo_t *t, int h)
{
    int lo = 0, hi = t->ngpus;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (mc_topo_gpu_host(t, mid) < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int mc_topo_host_gpus(const mc_topo_t *t, int h, int *first)
{
    *first = first_gpu_from(t, h);
    return first_gpu_from(t, h + 1) - *first;
}

int mc_topo_host_gpu_on_dev(const mc_topo_t *t, int h, int dev)
{
    int first, n = mc_topo_host_gpus(t, h, &first);
    for (int i = first; i < first + n; i++)
        if (t->nodes[t->gpu_node[i]].dev == dev)
            return i;
    return -1;
}

int mc_topo_find_node(const mc_topo_t *t, const char *name)
{
    for (int i = 0; i < t->nnodes; i++)
        if (!strcmp(t->nodes[i].name, name))
            return i;
    return -1;
}

/* The lowest link id from src to dst of any kind, through the (src, dst, kind) index: schedules
 * with instances look up every link of every copy (sched_symmetry.c). */
int mc_topo_find_link(const mc_topo_t *t, int src, int dst)
{
    int best = -1;
    for (int kind = 0; kind < MC_LINK__COUNT && t->link_index_cap; kind++)
        for (unsigned k = link_slot(t, src, dst, (mc_link_kind_t)kind); t->link_index[k] >= 0;
             k = (k + 1) & (unsigned)(t->link_index_cap - 1)) {
            const mc_link_t *l = &t->links[t->link_index[k]];
            if (l->src == src && l->dst == dst && l->kind == (mc_link_kind_t)kind) {
                if (best < 0 || t->link_index[k] < best)
                    best = t->link_index[k];
                break;
            }
        }
    return best;
}

double mc_topo_gpu_ingress_bw(const mc_topo_t *t, int gpu)
{
    int node = t->gpu_node[gpu];
    double bw = 0;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].dst == node)
            bw += t->links[i].bw;
    return bw;
}

double mc_topo_gpu_egress_bw(const mc_topo_t *t, int gpu)
{
    int node = t->gpu_node[gpu];
    double bw = 0;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == node)
            bw += t->links[i].bw;
    return bw;
}

double mc_topo_host_net_bw(const mc_topo_t *t, int host)
{
    double bw = 0;
    for (int i = 0; i < t->nlinks; i++) {
        const mc_link_t *l = &t->links[i];
        const mc_node_t *s = &t->nodes[l->src];
        if (l->kind == MC_LINK_NET && s->kind == MC_NODE_NET && s->host == host &&
            t->nodes[l->dst].host != host)
            bw += l->bw;
    }
    return bw;
}
