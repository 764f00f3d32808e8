/* Routing a transfer between two GPUs the way NCCL would (DESIGN.md section 2): NVLink, directly
 * or through an NVSwitch, inside an NVLink domain; PCIe and the CPU interconnect inside a host
 * otherwise; across hosts, PCIe to the sender's nearest NIC port, the network fabric (NET links
 * and switches, fewest hops then widest), and the receiver's nearest port. On rail-optimized
 * fabrics the data first crosses NVLink to a sender-side GPU whose NIC is on the receiver's rail
 * (NCCL's PXN), recorded in via_gpu; where no such GPU exists and nothing joins the rails, it is
 * staged through the sender's host to its port on that rail (or the receiver's). Per-GPU NIC
 * paths and per-port fabric trees are computed once and cached inside the topology, so a route
 * costs about its own length. A port's fabric tree keeps only the links into switches (and into
 * the few ports that a search may enter by several links): every other port has one way in, the
 * same from every source, so the cache grows with the ports that send times the switches, not
 * with the ports squared. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo_internal.h"

/* Routes are asked for from two threads at once (the plain synthesis runs on a thread of its own,
 * synth_meshcast.c): the cache is filled under this lock, and a pair's route once found is
 * published with its link count stored last (release), so that mc_topo_route_links reads a known
 * one without the lock. */
static pthread_mutex_t route_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct path {
    int n;
    int links[MC_ROUTE_MAX_LINKS];
} path_t;

typedef struct gpu_nic {
    int done;
    int net;        /* nearest NET node, -1 if the host has none reachable */
    int first_tied; /* lowest-numbered of the ports that are equally near */
    path_t out, in; /* GPU -> NET and NET -> GPU */
} gpu_nic_t;

/* A route between two GPUs as found (its links and relay; nlinks -1: not yet): a schedule's
 * every edge is routed, every variant the referee builds again, so on clusters up to
 * MC_ROUTE_PAIR_GPUS GPUs (4,096 pairs at 64, 2.6 MB at most) each pair is searched once. */
typedef struct pair_route {
    int nlinks, via_gpu;
    int links[MC_ROUTE_MAX_LINKS];
} pair_route_t;
#define MC_ROUTE_PAIR_GPUS 128

struct mc_route_cache {
    int nnodes, nlinks;
    int *out_start, *out_links; /* links leaving each node (CSR) */
    int *in_start, *in_links;   /* links entering each node */
    gpu_nic_t *gpu;             /* per global GPU index */
    int *fab_index;             /* node -> index among fabric nodes (NET, SWITCH), or -1 */
    int nfab;
    int *fab_in;                /* per fabric node: the one link a fabric search may enter it by,
                                 * when it has exactly one and is a port; else -1 */
    int *fab_slot;              /* per fabric node: its index in a source's tree, or -1 */
    int nslots;
    int *fab_key;               /* per fabric node: which of equal ways a path to it takes
                                 * (fabric_ways_in, fabric) */
    int **fab_pred;             /* per fabric source, lazily: the links into each slot node that
                                 * end one of its shortest widest paths (fabric) */
    size_t bytes;               /* held by fab_pred's trees */
    int *dist, *pred, *queue;   /* BFS scratch, per node */
    double *width;
    pair_route_t **pairs;       /* per source GPU, lazily: its routes to every GPU, where t has
                                 * at most MC_ROUTE_PAIR_GPUS GPUs (else NULL) */
};

typedef enum { WALK_HOST, WALK_NIC, WALK_FABRIC } walk_t;

/* Which links a search may take: inside a host (PCIe, CPU links, never through another GPU or
 * into the network), inside a host up to a NIC port, or across the fabric between ports. */
static int may_take(const mc_topo_t *t, const mc_link_t *l, int from, int next, int origin,
                    int target, walk_t walk)
{
    const mc_node_t *f = &t->nodes[from], *n = &t->nodes[next];
    if (walk == WALK_FABRIC)
        return l->kind == MC_LINK_NET && (n->kind == MC_NODE_NET || n->kind == MC_NODE_SWITCH) &&
               (f->kind == MC_NODE_SWITCH || from == origin);
    if (n->host != t->nodes[origin].host)
        return 0;
    if (walk == WALK_NIC && f->kind == MC_NODE_NIC)
        return l->kind == MC_LINK_NET && n->kind == MC_NODE_NET;
    if (mc_link_is_gpu_fabric(l->kind) || l->kind == MC_LINK_NET)
        return 0;
    if (n->kind == MC_NODE_GPU)
        return next == target;
    return n->kind == MC_NODE_PCI || n->kind == MC_NODE_CPU ||
           (walk == WALK_NIC && n->kind == MC_NODE_NIC);
}

/* Breadth-first search from origin (along links, or against them when backward), keeping for
 * each node the widest of its shortest paths; ties go to the lower link id, so routes are
 * deterministic. Fills c->dist and c->pred (the link that reached each node). */
static void bfs(const mc_topo_t *t, struct mc_route_cache *c, int origin, int target, walk_t walk,
                int backward)
{
    for (int i = 0; i < t->nnodes; i++) {
        c->dist[i] = -1;
        c->pred[i] = -1;
        c->width[i] = 0;
    }
    int head = 0, tail = 0;
    c->dist[origin] = 0;
    c->width[origin] = INFINITY;
    c->queue[tail++] = origin;
    const int *start = backward ? c->in_start : c->out_start;
    const int *adj = backward ? c->in_links : c->out_links;
    while (head < tail) {
        int u = c->queue[head++];
        if (u == target)
            continue;
        for (int k = start[u]; k < start[u + 1]; k++) {
            const mc_link_t *l = &t->links[adj[k]];
            int v = backward ? l->src : l->dst;
            if (!may_take(t, l, u, v, origin, target, walk))
                continue;
            double w = fmin(c->width[u], l->bw);
            if (c->dist[v] < 0) {
                c->dist[v] = c->dist[u] + 1;
                c->queue[tail++] = v;
            } else if (c->dist[v] != c->dist[u] + 1 || !(w > c->width[v])) {
                continue;
            }
            c->width[v] = w;
            c->pred[v] = adj[k];
        }
    }
}

/* The path the last bfs found from origin to node, in travel order. */
static mc_status_t trace(const mc_topo_t *t, const struct mc_route_cache *c, int node,
                         int backward, path_t *p, mc_err_t *err)
{
    p->n = 0;
    int links[MC_ROUTE_MAX_LINKS];
    for (int v = node; c->pred[v] >= 0;) {
        if (p->n == MC_ROUTE_MAX_LINKS)
            return mc_err_set(err, MC_ERR_UNSUPPORTED, "%s: a route to %s needs more than %d "
                              "links", t->source, t->nodes[node].name, MC_ROUTE_MAX_LINKS);
        const mc_link_t *l = &t->links[c->pred[v]];
        links[p->n++] = c->pred[v];
        v = backward ? l->dst : l->src;
    }
    for (int i = 0; i < p->n; i++) /* forward searches trace back from the end */
        p->links[i] = backward ? links[i] : links[p->n - 1 - i];
    return MC_OK;
}

static void csr(const mc_topo_t *t, int by_dst, int **start_out, int **links_out)
{
    int *start = mc_xcalloc((size_t)t->nnodes + 1, sizeof(int));
    int *links = mc_xmalloc(sizeof(int) * (size_t)(t->nlinks ? t->nlinks : 1));
    for (int i = 0; i < t->nlinks; i++)
        start[(by_dst ? t->links[i].dst : t->links[i].src) + 1]++;
    for (int i = 0; i < t->nnodes; i++)
        start[i + 1] += start[i];
    int *fill = mc_xmalloc(sizeof(int) * ((size_t)t->nnodes + 1));
    memcpy(fill, start, sizeof(int) * ((size_t)t->nnodes + 1));
    for (int i = 0; i < t->nlinks; i++)
        links[fill[by_dst ? t->links[i].dst : t->links[i].src]++] = i;
    free(fill);
    *start_out = start;
    *links_out = links;
}

void mc_topo_route_cache_free(mc_topo_t *t)
{
    struct mc_route_cache *c = t->route_cache;
    if (!c)
        return;
    for (int i = 0; i < c->nfab; i++)
        free(c->fab_pred[i]);
    free(c->fab_pred);
    free(c->fab_index);
    free(c->fab_in);
    free(c->fab_slot);
    free(c->fab_key);
    free(c->out_start);
    free(c->out_links);
    free(c->in_start);
    free(c->in_links);
    free(c->gpu);
    free(c->dist);
    free(c->pred);
    free(c->queue);
    free(c->width);
    for (int g = 0; c->pairs && g < t->ngpus; g++)
        free(c->pairs[g]);
    free(c->pairs);
    free(c);
    t->route_cache = NULL;
}

/* Which fabric nodes a fabric search can enter by one link only (a port under its leaf switch):
 * its tree from any source enters them by that link, so no tree keeps them. The links counted
 * are those may_take can allow: NET links out of a switch or out of a port (the origin). Each
 * such port's key is its place among the ports of its switch, plus the switch's place among the
 * switches (so that leaves with fewer ports than there are spines start on different spines);
 * another node's, its index. */
static void fabric_ways_in(const mc_topo_t *t, struct mc_route_cache *c)
{
    c->fab_in = mc_xmalloc(sizeof(int) * (size_t)(c->nfab ? c->nfab : 1));
    c->fab_slot = mc_xmalloc(sizeof(int) * (size_t)(c->nfab ? c->nfab : 1));
    c->fab_key = mc_xmalloc(sizeof(int) * (size_t)(c->nfab ? c->nfab : 1));
    /* per switch, the key of its next port: its place among the switches, plus its ports so far */
    int *next_key = mc_xcalloc((size_t)t->nnodes + 1, sizeof(int));
    for (int v = 0, n = 0; v < t->nnodes; v++)
        if (t->nodes[v].kind == MC_NODE_SWITCH)
            next_key[v] = n++;
    for (int v = 0; v < t->nnodes; v++) {
        int fi = c->fab_index[v], ways = 0, only = -1;
        if (fi < 0)
            continue;
        for (int k = c->in_start[v]; k < c->in_start[v + 1]; k++) {
            const mc_link_t *l = &t->links[c->in_links[k]];
            mc_node_kind_t from = t->nodes[l->src].kind;
            if (l->kind == MC_LINK_NET && (from == MC_NODE_SWITCH || from == MC_NODE_NET)) {
                ways++;
                only = c->in_links[k];
            }
        }
        int fixed = ways == 1 && t->nodes[v].kind == MC_NODE_NET;
        c->fab_in[fi] = fixed ? only : -1;
        c->fab_slot[fi] = fixed ? -1 : c->nslots++;
        c->fab_key[fi] = fixed ? next_key[t->links[only].src]++ : fi;
    }
    free(next_key);
}

/* The cache lives inside the (logically const) topology; it is rebuilt if the graph changed. */
static struct mc_route_cache *cache_of(const mc_topo_t *ct)
{
    mc_topo_t *t = (mc_topo_t *)ct;
    struct mc_route_cache *c = t->route_cache;
    if (c && c->nnodes == t->nnodes && c->nlinks == t->nlinks)
        return c;
    mc_topo_route_cache_free(t);
    c = mc_xcalloc(1, sizeof(*c));
    c->nnodes = t->nnodes;
    c->nlinks = t->nlinks;
    csr(t, 0, &c->out_start, &c->out_links);
    csr(t, 1, &c->in_start, &c->in_links);
    c->gpu = mc_xcalloc((size_t)t->ngpus, sizeof(gpu_nic_t));
    c->fab_index = mc_xmalloc(sizeof(int) * (size_t)t->nnodes);
    for (int i = 0; i < t->nnodes; i++) {
        mc_node_kind_t k = t->nodes[i].kind;
        c->fab_index[i] = k == MC_NODE_NET || k == MC_NODE_SWITCH ? c->nfab++ : -1;
    }
    fabric_ways_in(t, c);
    c->fab_pred = mc_xcalloc((size_t)c->nfab + 1, sizeof(int *));
    c->dist = mc_xmalloc(sizeof(int) * (size_t)t->nnodes);
    c->pred = mc_xmalloc(sizeof(int) * (size_t)t->nnodes);
    c->queue = mc_xmalloc(sizeof(int) * (size_t)t->nnodes);
    c->width = mc_xmalloc(sizeof(double) * (size_t)t->nnodes);
    if (t->ngpus <= MC_ROUTE_PAIR_GPUS)
        c->pairs = mc_xcalloc((size_t)t->ngpus + 1, sizeof(pair_route_t *));
    __atomic_store_n(&t->route_cache, c, __ATOMIC_RELEASE);
    return c;
}

/* The GPU's nearest NIC port (fewest hops, then widest) and the paths to and from it. When several
 * ports are equally near (two GPUs and two NICs under one PCIe switch, as on a DGX A100), the
 * GPUs share them out in order, as NCCL pairs GPU i with NIC i: the k-th GPU of the host that
 * sees a set of tied ports takes the (k mod n)-th of them. */
static mc_status_t gpu_nic(const mc_topo_t *t, struct mc_route_cache *c, int gpu,
                           const gpu_nic_t **out, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    gpu_nic_t *g = &c->gpu[gpu];
    *out = g;
    if (g->done)
        return MC_OK;
    int host = mc_topo_gpu_host(t, gpu);
    for (int o = gpu - 1; o >= 0 && mc_topo_gpu_host(t, o) == host; o--) {
        const gpu_nic_t *other;
        MC_CHECK_GOTO(gpu_nic(t, c, o, &other, err), out, st); /* its share comes first */
    }
    int node = t->gpu_node[gpu];
    g->done = 1;
    g->net = -1;
    bfs(t, c, node, -1, WALK_NIC, 0);
    int best = -1, ntied = 0;
    for (int i = 0; i < t->nnodes; i++) {
        if (t->nodes[i].kind != MC_NODE_NET || c->dist[i] < 0)
            continue;
        if (best < 0 || c->dist[i] < c->dist[best] ||
            (c->dist[i] == c->dist[best] && c->width[i] > c->width[best])) {
            best = i;
            ntied = 1;
        } else if (c->dist[i] == c->dist[best] && c->width[i] == c->width[best]) {
            ntied++;
        }
    }
    g->first_tied = best;
    if (best >= 0) {
        int k = 0;
        for (int o = gpu - 1; o >= 0 && mc_topo_gpu_host(t, o) == host; o--)
            k += c->gpu[o].first_tied == best;
        int pick = k % ntied;
        for (int i = best; i < t->nnodes; i++)
            if (t->nodes[i].kind == MC_NODE_NET && c->dist[i] == c->dist[best] &&
                c->width[i] == c->width[best] && pick-- == 0) {
                g->net = i;
                break;
            }
    }
    if (g->net < 0)
        return MC_OK;
    MC_CHECK_GOTO(trace(t, c, g->net, 0, &g->out, err), out, st);
    bfs(t, c, node, -1, WALK_NIC, 1);
    if (c->dist[g->net] < 0) {
        g->net = -1;
        return MC_OK;
    }
    MC_CHECK_GOTO(trace(t, c, g->net, 1, &g->in, err), out, st);
out:
    return st;
}

/* The search tree of fabric source `from` (after its bfs): per slot node, the links into it that
 * end one of its shortest widest paths, the one bfs kept first. Laid out as nslots + 1 offsets,
 * then the links. */
static int *fabric_tree(const mc_topo_t *t, struct mc_route_cache *c, int from, size_t *bytes)
{
    int nslots = c->nslots, n = 0, cap = nslots + 1;
    int *tree = mc_xmalloc(sizeof(int) * (size_t)(nslots + 1));
    int *links = mc_xmalloc(sizeof(int) * (size_t)cap);
    for (int i = 0, s = 0; i < t->nnodes; i++) {
        if (c->fab_index[i] < 0 || c->fab_slot[c->fab_index[i]] < 0)
            continue;
        tree[s++] = n;
        if (c->pred[i] < 0)
            continue;
        MC_GROW(links, cap, n + 1);
        links[n++] = c->pred[i];
        for (int k = c->in_start[i]; k < c->in_start[i + 1]; k++) {
            const mc_link_t *l = &t->links[c->in_links[k]];
            if (c->in_links[k] == c->pred[i] || c->dist[l->src] != c->dist[i] - 1 ||
                !may_take(t, l, l->src, i, from, -1, WALK_FABRIC) ||
                fmin(c->width[l->src], l->bw) != c->width[i])
                continue;
            MC_GROW(links, cap, n + 1);
            links[n++] = c->in_links[k];
        }
    }
    tree[nslots] = n;
    tree = mc_xrealloc(tree, sizeof(int) * (size_t)(nslots + 1 + n));
    memcpy(tree + nslots + 1, links, sizeof(int) * (size_t)n);
    free(links);
    *bytes += sizeof(int) * (size_t)(nslots + 1 + n);
    return tree;
}

/* The fabric path between two NIC ports; the search tree of each source port is kept (its slot
 * nodes). A port entered by its one link is reached when that link's switch is, or when the link
 * leaves the source itself. Where equal paths part (a leaf under several spines), the one taken
 * depends on the destination port's key, as InfiniBand's fat-tree routing spreads destinations
 * over the spines (D-mod-k): the ports of a leaf come in by every spine in turn, where the first
 * of the links left every path on one spine and the others idle. */
static mc_status_t fabric(const mc_topo_t *t, struct mc_route_cache *c, int from, int to,
                          path_t *p, mc_err_t *err)
{
    int fi = c->fab_index[from];
    if (!c->fab_pred[fi]) {
        bfs(t, c, from, -1, WALK_FABRIC, 0);
        c->fab_pred[fi] = fabric_tree(t, c, from, &c->bytes);
    }
    const int *tree = c->fab_pred[fi], *tied = tree + c->nslots + 1;
    int key = c->fab_key[c->fab_index[to]];
    int links[MC_ROUTE_MAX_LINKS], n = 0;
    for (int v = to; v != from;) {
        int vi = c->fab_index[v], slot = c->fab_slot[vi], l = c->fab_in[vi];
        if (slot >= 0) {
            int ways = tree[slot + 1] - tree[slot];
            l = ways ? tied[tree[slot] + key % ways] : -1;
        }
        if (l >= 0 && slot < 0 && t->links[l].src != from &&
            t->nodes[t->links[l].src].kind != MC_NODE_SWITCH)
            l = -1; /* out of another port: only the source's own links start a path */
        if (l < 0)
            return mc_err_set(err, MC_ERR_INVALID, "%s: no network path from %s to %s",
                              t->source, t->nodes[from].name, t->nodes[to].name);
        if (n == MC_ROUTE_MAX_LINKS)
            return mc_err_set(err, MC_ERR_UNSUPPORTED, "%s: the network path from %s to %s has "
                              "more than %d links", t->source, t->nodes[from].name,
                              t->nodes[to].name, MC_ROUTE_MAX_LINKS);
        links[n++] = l;
        v = t->links[l].src;
    }
    p->n = n;
    for (int i = 0; i < n; i++)
        p->links[i] = links[n - 1 - i];
    return MC_OK;
}

/* NVLink (or xGMI) between two GPUs: a direct link or one switch hop, whichever is wider (direct on a
 * tie). Returns 0 when they share none. */
static int nvlink_path(const mc_topo_t *t, const struct mc_route_cache *c, int a, int b,
                       path_t *p)
{
    double best = 0;
    p->n = 0;
    for (int k = c->out_start[a]; k < c->out_start[a + 1]; k++) {
        const mc_link_t *l = &t->links[c->out_links[k]];
        if (!mc_link_is_gpu_fabric(l->kind))
            continue;
        if (l->dst == b && l->bw > best) {
            best = l->bw;
            *p = (path_t){1, {c->out_links[k]}};
        }
        if (t->nodes[l->dst].kind != MC_NODE_NVS)
            continue;
        for (int j = c->out_start[l->dst]; j < c->out_start[l->dst + 1]; j++) {
            const mc_link_t *m = &t->links[c->out_links[j]];
            if (mc_link_is_gpu_fabric(m->kind) && m->dst == b && fmin(l->bw, m->bw) > best) {
                best = fmin(l->bw, m->bw);
                *p = (path_t){2, {c->out_links[k], c->out_links[j]}};
            }
        }
    }
    return p->n > 0;
}

static mc_status_t append(const mc_topo_t *t, mc_route_t *r, const path_t *p, mc_err_t *err)
{
    if (r->nlinks + p->n > MC_ROUTE_MAX_LINKS)
        return mc_err_set(err, MC_ERR_UNSUPPORTED, "%s: the route from GPU %d to GPU %d needs "
                          "more than %d links", t->source, r->src_gpu, r->dst_gpu,
                          MC_ROUTE_MAX_LINKS);
    memcpy(r->links + r->nlinks, p->links, sizeof(int) * (size_t)p->n);
    r->nlinks += p->n;
    return MC_OK;
}

static int rail_of(const mc_topo_t *t, const gpu_nic_t *g)
{
    return g->net >= 0 ? t->nodes[g->net].rail : -1;
}

/* PXN: the first GPU of the sender's host, joined to it by NVLink, whose nearest port is on the
 * receiver's rail; -1 when none qualifies. GPUs are numbered host by host, so the host's GPUs are
 * the run of indexes around a. */
static mc_status_t pxn_relay(const mc_topo_t *t, struct mc_route_cache *c, int a, int rail,
                             int *relay, path_t *nvl, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    const gpu_nic_t *g;
    int host = mc_topo_gpu_host(t, a), first = a;
    *relay = -1;
    while (first > 0 && mc_topo_gpu_host(t, first - 1) == host)
        first--;
    for (int p = first; p < t->ngpus && mc_topo_gpu_host(t, p) == host && *relay < 0; p++) {
        if (p == a)
            continue;
        MC_CHECK_GOTO(gpu_nic(t, c, p, &g, err), out, st);
        if (rail_of(t, g) == rail && nvlink_path(t, c, t->gpu_node[a], t->gpu_node[p], nvl))
            *relay = p;
    }
out:
    return st;
}

/* GPU gpu's host's port on the given rail, reached through the host (PCIe and the CPU links: the
 * bytes staged through host memory, as NCCL does without GPUDirect), and the path between them:
 * from the GPU to the port, or with backward from the port to the GPU; *net -1 when the host has
 * no port on that rail. */
static mc_status_t host_port_on_rail(const mc_topo_t *t, struct mc_route_cache *c, int gpu,
                                     int rail, int backward, int *net, path_t *path,
                                     mc_err_t *err)
{
    bfs(t, c, t->gpu_node[gpu], -1, WALK_NIC, backward);
    *net = -1;
    for (int i = 0; rail >= 0 && i < t->nnodes; i++)
        if (t->nodes[i].kind == MC_NODE_NET && t->nodes[i].rail == rail && c->dist[i] >= 0 &&
            (*net < 0 || c->dist[i] < c->dist[*net] ||
             (c->dist[i] == c->dist[*net] && c->width[i] > c->width[*net])))
            *net = i;
    return *net >= 0 ? trace(t, c, *net, backward, path, err) : MC_OK;
}

static mc_status_t network_route(const mc_topo_t *t, struct mc_route_cache *c, mc_route_t *r,
                                 mc_err_t *err)
{
    mc_status_t st;
    const gpu_nic_t *src, *dst;
    path_t p;
    MC_CHECK_GOTO(gpu_nic(t, c, r->src_gpu, &src, err), out, st);
    MC_CHECK_GOTO(gpu_nic(t, c, r->dst_gpu, &dst, err), out, st);
    if (src->net < 0 || dst->net < 0) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s: GPU %d and GPU %d are on different hosts but "
                        "%s reaches no NIC", t->source, r->src_gpu, r->dst_gpu,
                        t->nodes[t->gpu_node[src->net < 0 ? r->src_gpu : r->dst_gpu]].name);
        goto out;
    }
    int rail = rail_of(t, dst), net = src->net, in_net = dst->net, port;
    const path_t *out_path = &src->out, *in_path = &dst->in;
    path_t staged_out, staged_in;
    if (rail >= 0 && rail_of(t, src) != rail) {
        int relay;
        MC_CHECK_GOTO(pxn_relay(t, c, r->src_gpu, rail, &relay, &p, err), out, st);
        if (relay >= 0) {
            MC_CHECK_GOTO(append(t, r, &p, err), out, st);
            r->via_gpu = relay;
            net = c->gpu[relay].net;
            out_path = &c->gpu[relay].out;
        }
    }
    mc_err_t no_way = {0};
    if (fabric(t, c, net, in_net, &p, &no_way) != MC_OK) {
        /* rails with nothing above them and no NVLink to a GPU on the receiver's rail: staged
         * through the sender's host to its port on that rail, else through the receiver's host
         * from its port on the sender's rail; the fabric's error stands where neither exists */
        if (r->via_gpu < 0) {
            MC_CHECK_GOTO(host_port_on_rail(t, c, r->src_gpu, rail, 0, &port, &staged_out, err),
                          out, st);
            if (port >= 0) {
                net = port;
                out_path = &staged_out;
            } else {
                MC_CHECK_GOTO(host_port_on_rail(t, c, r->dst_gpu, rail_of(t, src), 1, &port,
                                                &staged_in, err),
                              out, st);
                if (port >= 0) {
                    in_net = port;
                    in_path = &staged_in;
                }
            }
        }
        MC_CHECK_GOTO(fabric(t, c, net, in_net, &p, err), out, st);
    }
    MC_CHECK_GOTO(append(t, r, out_path, err), out, st);
    MC_CHECK_GOTO(append(t, r, &p, err), out, st);
    MC_CHECK_GOTO(append(t, r, in_path, err), out, st);
out:
    return st;
}

size_t mc_topo_route_cache_bytes(const mc_topo_t *t)
{
    const struct mc_route_cache *c = t->route_cache;
    return c ? c->bytes : 0;
}

/* A route's links and relay GPU (n links from from[], via) into *nlinks, links[] and *via_gpu. */
static void copy_links(int *nlinks, int *links, int *via_gpu, int n, const int *from, int via)
{
    *nlinks = n;
    *via_gpu = via;
    memcpy(links, from, sizeof(int) * (size_t)n);
}

/* The route of pair (a, b) found already, or NULL; without the lock (route_lock). */
static const pair_route_t *known_pair(const mc_topo_t *t, int gpu_a, int gpu_b)
{
    if (gpu_a < 0 || gpu_a >= t->ngpus || gpu_b < 0 || gpu_b >= t->ngpus || gpu_a == gpu_b)
        return NULL;
    const struct mc_route_cache *c = __atomic_load_n(&t->route_cache, __ATOMIC_ACQUIRE);
    const pair_route_t *row = c && c->pairs ? __atomic_load_n(&c->pairs[gpu_a], __ATOMIC_ACQUIRE)
                                            : NULL;
    return row && __atomic_load_n(&row[gpu_b].nlinks, __ATOMIC_ACQUIRE) >= 0 ? &row[gpu_b]
                                                                             : NULL;
}

mc_status_t mc_topo_route_links(const mc_topo_t *t, int gpu_a, int gpu_b, int *nlinks, int *links,
                                int *via_gpu, mc_err_t *err)
{
    const pair_route_t *known = known_pair(t, gpu_a, gpu_b);
    if (known) {
        copy_links(nlinks, links, via_gpu, known->nlinks, known->links, known->via_gpu);
        return MC_OK;
    }
    mc_route_t r;
    mc_status_t st = mc_topo_route(t, gpu_a, gpu_b, &r, err);
    if (st == MC_OK)
        copy_links(nlinks, links, via_gpu, r.nlinks, r.links, r.via_gpu);
    return st;
}

/* mc_topo_route under route_lock. */
static mc_status_t route_locked(const mc_topo_t *t, int gpu_a, int gpu_b, mc_route_t *r,
                                mc_err_t *err)
{
    mc_status_t st = MC_OK;
    struct mc_route_cache *c = cache_of(t);
    int a = t->gpu_node[gpu_a], b = t->gpu_node[gpu_b];
    pair_route_t *known = NULL;
    if (c->pairs) {
        if (!c->pairs[gpu_a]) {
            pair_route_t *row = mc_xmalloc(sizeof(pair_route_t) * (size_t)t->ngpus);
            for (int g = 0; g < t->ngpus; g++)
                row[g].nlinks = -1;
            __atomic_store_n(&c->pairs[gpu_a], row, __ATOMIC_RELEASE);
        }
        known = &c->pairs[gpu_a][gpu_b];
    }
    if (known && known->nlinks >= 0) {
        copy_links(&r->nlinks, r->links, &r->via_gpu, known->nlinks, known->links, known->via_gpu);
        goto figures;
    }
    path_t p;
    if (nvlink_path(t, c, a, b, &p)) {
        MC_CHECK_GOTO(append(t, r, &p, err), out, st);
    } else if (t->nodes[a].host == t->nodes[b].host) {
        bfs(t, c, a, b, WALK_HOST, 0);
        if (c->dist[b] < 0) {
            st = mc_err_set(err, MC_ERR_INVALID, "%s: no PCIe path from %s to %s", t->source,
                            t->nodes[a].name, t->nodes[b].name);
            goto out;
        }
        MC_CHECK_GOTO(trace(t, c, b, 0, &p, err), out, st);
        MC_CHECK_GOTO(append(t, r, &p, err), out, st);
    } else {
        MC_CHECK_GOTO(network_route(t, c, r, err), out, st);
    }
    if (known) { /* its links first, its count last: then a reader without the lock sees it */
        memcpy(known->links, r->links, sizeof(int) * (size_t)r->nlinks);
        known->via_gpu = r->via_gpu;
        __atomic_store_n(&known->nlinks, r->nlinks, __ATOMIC_RELEASE);
    }
figures: /* from the links as they are now */
    for (int i = 0; i < r->nlinks; i++) {
        r->bw = fmin(r->bw, t->links[r->links[i]].bw);
        r->latency += t->links[r->links[i]].latency;
    }
out:
    return st;
}

mc_status_t mc_topo_route(const mc_topo_t *t, int gpu_a, int gpu_b, mc_route_t *r,
                          mc_err_t *err)
{
    if (gpu_a < 0 || gpu_a >= t->ngpus || gpu_b < 0 || gpu_b >= t->ngpus)
        return mc_err_set(err, MC_ERR_INVALID, "%s: GPU %d or %d is not in 0..%d", t->source,
                          gpu_a, gpu_b, t->ngpus - 1);
    *r = (mc_route_t){.src_gpu = gpu_a, .dst_gpu = gpu_b, .via_gpu = -1, .bw = INFINITY};
    if (gpu_a == gpu_b)
        return MC_OK;
    pthread_mutex_lock(&route_lock);
    mc_status_t st = route_locked(t, gpu_a, gpu_b, r, err);
    pthread_mutex_unlock(&route_lock);
    return st;
}
