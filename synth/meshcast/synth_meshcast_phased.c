/* Channels out of phase (docs/synthesis.md, "Session 41"). Trees of one phase over the same
 * edges (a tree's channels, mc_sched_channels, or the equal parts of an evened-out plan) share
 * every link they cross. Each sends its chunks one at a time, so a link carries bytes only while
 * one of them is past its message overhead. Channels whose chunks are cut alike move in lockstep:
 * they pay their overheads at the same instants and the links idle meanwhile, and chunk counts
 * staggered by channel (mc_sched_channels' spread) drift in and out of step. Here the j-th tree of
 * such a set starts with a ramp of j (mc_tree_chunk: its first chunks 2^-j of its middle ones
 * and growing), all with one chunk count: each starts its steady chunks a different part of a
 * chunk later, and equal chunks keep them apart, so one tree's overhead falls while another's
 * bytes move and the chunks can be smaller, filling the pipeline sooner. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"
#include "util/index.h"

/* The hash of what makes trees of a schedule alike here: their phase and edges, routes included. */
static uint64_t tree_key(const mc_tree_t *t)
{
    uint64_t h = mc_hash_step(mc_hash_step(MC_HASH_SEED, (uint64_t)t->phase), (uint64_t)t->nedges);
    for (int e = 0; e < t->nedges; e++) {
        const mc_tree_edge_t *x = &t->edges[e];
        h = mc_hash_step(h, (uint64_t)x->parent << 32 | (uint32_t)x->child);
        for (int i = 0; i < x->nlinks; i++)
            h = mc_hash_step(h, (uint64_t)x->links[i]);
    }
    return h;
}

static int same_edges(const mc_tree_t *a, const mc_tree_t *b)
{
    if (a->phase != b->phase || a->nedges != b->nedges)
        return 0;
    for (int e = 0; e < a->nedges; e++) {
        const mc_tree_edge_t *x = &a->edges[e], *y = &b->edges[e];
        if (x->parent != y->parent || x->child != y->child || x->nlinks != y->nlinks ||
            memcmp(x->links, y->links, sizeof(int) * (size_t)x->nlinks) != 0)
            return 0;
    }
    return 1;
}

/* Per tree of s, the first tree with its edges (itself when it is the first). */
static int *first_alike(const mc_sched_t *s)
{
    int *first = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    mc_index_t ix = {0};
    for (int t = 0; t < s->ntrees; t++) {
        uint64_t h = tree_key(&s->trees[t]);
        size_t at = mc_index_start(&ix, h);
        int u;
        first[t] = t;
        while ((u = mc_index_next(&ix, h, &at)) >= 0)
            if (same_edges(&s->trees[u], &s->trees[t])) {
                first[t] = u;
                break;
            }
        if (first[t] == t)
            mc_index_add(&ix, h, t);
    }
    mc_index_free(&ix);
    return first;
}

/* Tree t in chunks of its set's count (none below floor, at most MC_CHUNKS_MAX), ramp j where its
 * chunks stay valid; whether it changed. */
static int set_phase(mc_tree_t *t, uint64_t want, uint64_t floor, int j)
{
    int n0 = t->nchunks, r0 = t->ramp;
    t->nchunks = (int)mc_chunks_within(want < MC_CHUNKS_MAX ? want : MC_CHUNKS_MAX, t->bytes, floor);
    t->ramp = j % (MC_SCHED_MAX_RAMP + 1);
    while (t->ramp > 0 && !mc_tree_chunks_valid(t))
        t->ramp--;
    return t->nchunks != n0 || t->ramp != r0;
}

/* A tree with the first tree of its set (first_alike) and its offset: sorted by both (then by
 * index), the sets are runs, each in the order of its offsets. */
typedef struct member {
    int set;
    uint64_t offset;
    int tree;
} member_t;

static int by_set_offset(const void *a, const void *b)
{
    const member_t *x = a, *y = b;
    if (x->set != y->set)
        return x->set < y->set ? -1 : 1;
    if (x->offset != y->offset) /* trees of other pieces share offsets */
        return x->offset < y->offset ? -1 : 1;
    return x->tree - y->tree;
}

int mc_sched_phased(mc_sched_t *s, const mc_topo_t *topo, double mult, uint64_t net_chunk,
                    uint64_t host_chunk)
{
    int *first = first_alike(s), n = s->ntrees, changed = 0;
    member_t *m = mc_xmalloc(sizeof(member_t) * (size_t)(n + 1));
    for (int t = 0; t < n; t++)
        m[t] = (member_t){first[t], s->trees[t].offset, t};
    qsort(m, (size_t)n, sizeof *m, by_set_offset);
    for (int a = 0, b; a < n; a = b) {
        int most = 0;
        for (b = a; b < n && m[b].set == m[a].set; b++)
            most = s->trees[m[b].tree].nchunks > most ? s->trees[m[b].tree].nchunks : most;
        if (b - a < 2)
            continue;
        uint64_t floor = mc_sched_tree_in_host(s, topo, m[a].tree) ? host_chunk : net_chunk;
        for (int i = a; i < b; i++)
            changed |= set_phase(&s->trees[m[i].tree], (uint64_t)ceil(most * mult), floor, i - a);
    }
    free(m);
    free(first);
    return changed;
}
