/* The schedule type: creating a schedule, adding trees and edges, chunk arithmetic, freeing. */
#include <stdlib.h>
#include <string.h>

#include "sched/sched_internal.h"

mc_sched_t *mc_sched_new(mc_task_t *task, const mc_topo_t *topo, const char *strategy)
{
    mc_sched_t *s = mc_xcalloc(1, sizeof(*s));
    s->task = task;
    s->topo_fingerprint = topo ? topo->fingerprint : 0;
    snprintf(s->strategy, sizeof s->strategy, "%s", strategy ? strategy : "");
    return s;
}

void mc_sched_free(mc_sched_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->ntrees; i++)
        free(s->trees[i].edges);
    free(s->trees);
    for (int i = 0; i < s->nnotes; i++)
        free(s->notes[i]);
    free(s->notes);
    mc_sched_sym_compact_free(s);
    if (s->owns_task)
        mc_task_free(s->task);
    free(s);
}

int mc_sched_add_tree(mc_sched_t *s, int piece, uint64_t offset, uint64_t bytes, int root,
                      int phase, int nchunks)
{
    MC_GROW(s->trees, s->tree_cap, s->ntrees + 1);
    s->trees[s->ntrees] = (mc_tree_t){.piece = piece, .offset = offset, .bytes = bytes,
                                      .root = root, .phase = phase, .nchunks = nchunks,
                                      .inflight = 1};
    if (phase + 1 > s->nphases)
        s->nphases = phase + 1;
    return s->ntrees++;
}

static mc_status_t no_tree(const mc_sched_t *s, int ti, mc_err_t *err)
{
    return mc_err_set(err, MC_ERR_INVALID, "schedule: no tree %d (it has %d)", ti, s->ntrees);
}

/* Room for one more edge of tree t (not yet counted). */
static mc_tree_edge_t *next_edge(mc_tree_t *t)
{
    /* most trees have a few edges, and an edge holds MC_ROUTE_MAX_LINKS links: the edge lists
     * start at 2, not at MC_GROW's 8 (8 edges of 144 bytes per tree made 42 MB of a 1024-GPU
     * schedule: heaptrack) */
    if (!t->edge_cap) {
        t->edges = mc_xmalloc(2 * sizeof(*t->edges));
        t->edge_cap = 2;
    }
    MC_GROW(t->edges, t->edge_cap, t->nedges + 1);
    return &t->edges[t->nedges];
}

mc_status_t mc_sched_add_edge_route(mc_sched_t *s, int ti, const mc_route_t *route, mc_err_t *err)
{
    if (ti < 0 || ti >= s->ntrees)
        return no_tree(s, ti, err);
    if (route->nlinks < 0 || route->nlinks > MC_ROUTE_MAX_LINKS)
        return mc_err_set(err, MC_ERR_INVALID, "schedule: a route of %d links (at most %d)",
                          route->nlinks, MC_ROUTE_MAX_LINKS);
    mc_tree_t *t = &s->trees[ti];
    mc_tree_edge_t *e = next_edge(t);
    t->nedges++;
    e->parent = route->src_gpu;
    e->child = route->dst_gpu;
    e->nlinks = route->nlinks;
    memcpy(e->links, route->links, sizeof(int) * (size_t)route->nlinks);
    e->via_gpu = route->via_gpu;
    return MC_OK;
}

/* The route is read into the edge (mc_topo_route_links): a whole mc_route_t filled, its
 * bandwidth and latency summed and its links copied twice was most of the 0.84 G instructions
 * of the 2.4 M edges the races of an all-gather over eight MI300X hosts built. */
mc_status_t mc_sched_add_edge(mc_sched_t *s, const mc_topo_t *topo, int ti, int parent, int child,
                              mc_err_t *err)
{
    if (parent < 0 || parent >= topo->ngpus || child < 0 || child >= topo->ngpus)
        return mc_err_set(err, MC_ERR_INVALID, "schedule: edge %d -> %d: the topology has GPUs 0..%d",
                          parent, child, topo->ngpus - 1);
    if (ti < 0 || ti >= s->ntrees)
        return no_tree(s, ti, err);
    mc_tree_t *t = &s->trees[ti];
    mc_tree_edge_t *e = next_edge(t);
    mc_status_t st = mc_topo_route_links(topo, parent, child, &e->nlinks, e->links, &e->via_gpu,
                                         err);
    if (st != MC_OK)
        return st;
    e->parent = parent;
    e->child = child;
    t->nedges++;
    return MC_OK;
}

int mc_sched_add_tree_like(mc_sched_t *s, const mc_tree_t *like, int piece, int root)
{
    mc_tree_t t = *like; /* adding may move s's trees */
    int ti = mc_sched_add_tree(s, piece, t.offset, t.bytes, root, t.phase, t.nchunks);
    s->trees[ti].rate = t.rate;
    s->trees[ti].inflight = t.inflight;
    s->trees[ti].ramp = t.ramp;
    return ti;
}

int mc_sched_inflight(const mc_sched_t *s)
{
    int most = 1;
    for (int t = 0; t < s->ntrees; t++)
        most = s->trees[t].inflight > most ? s->trees[t].inflight : most;
    return most;
}

static int imin(int a, int b)
{
    return a < b ? a : b;
}

/* The ramp's weight of chunk k of n (mc_tree_chunk). */
static uint64_t ramp_weight(int k, int n, int r)
{
    return (uint64_t)1 << (imin(k, r) + imin(n - 1 - k, r));
}

/* W(k): the weight of chunks 0 .. k-1, in O(r): the middle chunks (r <= j < n - r) weigh 4^r
 * each, the others are summed one by one. */
static uint64_t ramp_prefix(int k, int n, int r)
{
    uint64_t w = 0;
    int middle = imin(k, n - r) - r;
    for (int j = 0; j < imin(k, r); j++)
        w += ramp_weight(j, n, r);
    if (middle > 0)
        w += (uint64_t)middle << (2 * r);
    for (int j = r > n - r ? r : n - r; j < k; j++)
        w += ramp_weight(j, n, r);
    return w;
}

static uint64_t ramp_start(const mc_tree_t *t, int k, int n)
{
    if (k >= n)
        return t->bytes;
    return (uint64_t)((unsigned __int128)t->bytes * ramp_prefix(k, n, t->ramp) /
                      ramp_prefix(n, n, t->ramp));
}

void mc_tree_chunk(const mc_tree_t *t, int k, uint64_t *off, uint64_t *len)
{
    int nc = t->nchunks > 0 ? t->nchunks : 1;
    if (t->ramp > 0) {
        *off = ramp_start(t, k, nc);
        *len = ramp_start(t, k + 1, nc) - *off;
        return;
    }
    uint64_t n = (uint64_t)nc;
    uint64_t size = (t->bytes + n - 1) / n;
    uint64_t lo = size * (uint64_t)k;
    *off = lo < t->bytes ? lo : t->bytes;
    *len = lo < t->bytes ? (t->bytes - lo < size ? t->bytes - lo : size) : 0;
}

uint64_t mc_tree_chunk_max(const mc_tree_t *t)
{
    uint64_t off, len;
    int n = t->nchunks > 0 ? t->nchunks : 1;
    if (t->ramp <= 0) {
        mc_tree_chunk(t, 0, &off, &len);
        return len;
    }
    /* chunk k has floor(x + bytes w(k) / W(n)) - floor(x) <= ceil(bytes w(k) / W(n)) bytes, and
     * the heaviest chunk weighs 2^min(n - 1, 2r) */
    unsigned __int128 w = (uint64_t)1 << imin(n - 1, 2 * t->ramp), all = ramp_prefix(n, n, t->ramp);
    return (uint64_t)(((unsigned __int128)t->bytes * w + all - 1) / all);
}

int mc_tree_chunks_valid(const mc_tree_t *t)
{
    uint64_t off, len;
    if (t->nchunks < 1 || t->nchunks > MC_SCHED_MAX_CHUNKS || t->ramp < 0 ||
        t->ramp > MC_SCHED_MAX_RAMP)
        return 0;
    if (t->ramp <= 0) {
        mc_tree_chunk(t, t->nchunks - 1, &off, &len);
        return len > 0;
    }
    return (unsigned __int128)t->bytes * ramp_weight(0, t->nchunks, t->ramp) >=
           ramp_prefix(t->nchunks, t->nchunks, t->ramp);
}
