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

/* The most chunks, up to want, that bytes can be cut into with none below floor: at least 1. */
static int chunks_up_to(uint64_t want, uint64_t bytes, uint64_t floor)
{
    uint64_t most = bytes / (floor ? floor : 1);
    uint64_t n = want < most ? want : most;
    n = n < MC_CHUNKS_MAX ? n : MC_CHUNKS_MAX;
    return n ? (int)n : 1;
}

/* Tree t in chunks of its set's count (none below floor), ramp j where its chunks stay valid. */
static int set_phase(mc_tree_t *t, uint64_t want, uint64_t floor, int j)
{
    int n0 = t->nchunks, r0 = t->ramp;
    t->nchunks = chunks_up_to(want, t->bytes, floor);
    t->ramp = j % (MC_SCHED_MAX_RAMP + 1);
    while (t->ramp > 0 && !mc_tree_chunks_valid(t))
        t->ramp--;
    return t->nchunks != n0 || t->ramp != r0;
}

/* The trees of s in sets of like edges, each set's trees in the order of their offsets: per set
 * its trees from at[k] to at[k + 1] of order; returns the number of sets. */
static int alike_sets(const mc_sched_t *s, int **order, int **at)
{
    int *first = first_alike(s), n = s->ntrees, nsets = 0;
    int *set = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    for (int t = 0; t < n; t++)
        if (first[t] == t)
            set[t] = nsets++;
    *at = mc_xcalloc((size_t)nsets + 2, sizeof(int));
    for (int t = 0; t < n; t++)
        (*at)[set[first[t]] + 2]++;
    for (int k = 0; k < nsets; k++)
        (*at)[k + 2] += (*at)[k + 1];
    *order = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    for (int t = 0; t < n; t++) /* trees in index order: a set's by insertion below */
        (*order)[(*at)[set[first[t]] + 1]++] = t;
    for (int k = 0; k < nsets; k++) /* by offset: few per set, insertion sort */
        for (int i = (*at)[k] + 1; i < (*at)[k + 1]; i++)
            for (int j = i; j > (*at)[k] &&
                            s->trees[(*order)[j]].offset < s->trees[(*order)[j - 1]].offset;
                 j--) {
                int x = (*order)[j];
                (*order)[j] = (*order)[j - 1];
                (*order)[j - 1] = x;
            }
    free(first);
    free(set);
    return nsets;
}

int mc_sched_phased(mc_sched_t *s, const mc_topo_t *topo, double mult, uint64_t net_chunk,
                    uint64_t host_chunk)
{
    int *order, *at, changed = 0;
    int nsets = alike_sets(s, &order, &at);
    for (int k = 0; k < nsets; k++) {
        if (at[k + 1] - at[k] < 2)
            continue;
        int most = 0;
        for (int i = at[k]; i < at[k + 1]; i++)
            most = s->trees[order[i]].nchunks > most ? s->trees[order[i]].nchunks : most;
        uint64_t floor = mc_sched_tree_in_host(s, topo, order[at[k]]) ? host_chunk : net_chunk;
        for (int i = at[k]; i < at[k + 1]; i++)
            changed |= set_phase(&s->trees[order[i]], (uint64_t)ceil(most * mult), floor,
                                 i - at[k]);
    }
    free(order);
    free(at);
    return changed;
}
