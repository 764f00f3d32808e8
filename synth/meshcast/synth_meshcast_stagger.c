/* Staggered chunking and channels for the meshcast strategy (docs/synthesis.md, "Referee").
 * Trees of one phase
 * that share their bottleneck link and are cut into the same number of chunks move in lockstep:
 * every one of them pays its per-message overhead at the same instant, and the link idles while
 * they do. Giving the j-th of m such trees 1 + spread * j/m times the chunks puts their overheads
 * at different instants, so one tree's overhead falls while another moves bytes (the effect NCCL
 * gets from several channels on one NIC). How far apart (the spread) is left to the simulator: the
 * referee tries a few and keeps a staggered schedule only when it is faster.
 *
 * A tree alone on its links meets the same idling from the other side: one connection sends its
 * chunks in order, each after the message overhead, so its links idle for that overhead between
 * chunks, and the chunk count trades that idle time against the pipeline fill of a deep tree
 * (mi300x2-bcast: 8 trees, each alone on a rail, best at 6 chunks, 1.34 of the bound). Cut into
 * channels (copies of the tree carrying consecutive parts of its bytes) and staggered, one
 * channel's overhead falls while another moves bytes, as NCCL's channels do, so the same links
 * stay busy with smaller chunks and less fill. */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

/* The tree's slowest link (lowest id among equals): where trees of a phase queue. */
static int bottleneck(const mc_tree_t *t, const mc_topo_t *topo)
{
    int best = -1;
    for (int e = 0; e < t->nedges; e++)
        for (int i = 0; i < t->edges[e].nlinks; i++) {
            int l = t->edges[e].links[i];
            double bw = topo->links[l].bw, bb = best >= 0 ? topo->links[best].bw : 0;
            if (best < 0 || bw < bb || (bw == bb && l < best))
                best = l;
        }
    return best;
}

uint64_t mc_chunks_within(uint64_t want, uint64_t bytes, uint64_t min_chunk)
{
    uint64_t n = want, most = bytes / (min_chunk ? min_chunk : 1);
    if (n > most)
        n = most;
    while (n > 1 && (n - 1) * ((bytes + n - 1) / n) >= bytes)
        n--;
    return n ? n : 1;
}

typedef struct keyed {
    int phase, link, tree;
} keyed_t;

/* The trees of s by phase, then bottleneck link (-1: none), then index, counted into place: a
 * sort by comparisons was 1.3% of the synthesis of an uneven all-to-all over 64 GPUs (29,000
 * trees, staggered 69 times). */
static keyed_t *by_bottleneck(const mc_sched_t *s, const mc_topo_t *topo)
{
    keyed_t *k = mc_xmalloc(sizeof(keyed_t) * (size_t)(s->ntrees + 1));
    int *at = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1)), phases = 1;
    for (int t = 0; t < s->ntrees; t++) {
        at[t] = bottleneck(&s->trees[t], topo);
        phases = s->trees[t].phase >= phases ? s->trees[t].phase + 1 : phases;
    }
    size_t width = (size_t)topo->nlinks + 1;
    size_t *start = mc_xcalloc((size_t)phases * width + 1, sizeof(size_t));
    for (int t = 0; t < s->ntrees; t++)
        start[(size_t)s->trees[t].phase * width + (size_t)(at[t] + 1) + 1]++;
    for (size_t i = 1; i <= (size_t)phases * width; i++)
        start[i] += start[i - 1];
    for (int t = 0; t < s->ntrees; t++)
        k[start[(size_t)s->trees[t].phase * width + (size_t)(at[t] + 1)]++] =
            (keyed_t){s->trees[t].phase, at[t], t};
    free(at);
    free(start);
    return k;
}

void mc_sched_stagger(mc_sched_t *s, const mc_topo_t *topo, int spread, uint64_t min_chunk)
{
    keyed_t *k = by_bottleneck(s, topo);
    for (int a = 0, b; a < s->ntrees; a = b) {
        for (b = a + 1; b < s->ntrees && k[b].phase == k[a].phase && k[b].link == k[a].link; b++)
            ;
        int m = b - a;
        for (int j = 1; j < m; j++) {
            mc_tree_t *t = &s->trees[k[a + j].tree];
            uint64_t n = mc_chunks_within((uint64_t)t->nchunks * (uint64_t)(m + spread * j) /
                                              (uint64_t)m,
                                          t->bytes, min_chunk);
            if (n > (uint64_t)t->nchunks && n <= MC_CHUNKS_MAX)
                t->nchunks = (int)n;
        }
    }
    free(k);
}

/* Bytes a channel's range is a multiple of (the last channel takes the rest). */
#define CHANNEL_GRANULE 4096u

int mc_sched_tree_in_host(const mc_sched_t *s, const mc_topo_t *topo, int t)
{
    const mc_tree_t *tr = &s->trees[t];
    for (int e = 0; e < tr->nedges; e++)
        for (int i = 0; i < tr->edges[e].nlinks; i++)
            if (topo->links[tr->edges[e].links[i]].kind == MC_LINK_NET)
                return 0;
    return 1;
}

/* Whether tree t is too small for 2 channels of its chunks of min_chunk bytes each. */
static int held_by(const mc_sched_t *s, int t, uint64_t min_chunk)
{
    return s->trees[t].bytes / min_chunk < 2 * (uint64_t)s->trees[t].nchunks;
}

int mc_sched_host_held(const mc_sched_t *s, const mc_topo_t *topo, uint64_t min_chunk)
{
    int held = 0;
    for (int t = 0; t < s->ntrees; t++) {
        if (!mc_sched_tree_in_host(s, topo, t))
            return 0;
        held |= held_by(s, t, min_chunk);
    }
    return held;
}

int mc_sched_net_held(const mc_sched_t *s, const mc_topo_t *topo, uint64_t min_chunk)
{
    for (int t = 0; t < s->ntrees; t++)
        if (held_by(s, t, min_chunk) && !mc_sched_tree_in_host(s, topo, t))
            return 1;
    return 0;
}

void mc_sched_channels(mc_sched_t *s, const mc_topo_t *topo, int k, int spread, uint64_t min_chunk,
                       uint64_t host_chunk, uint64_t min_bytes)
{
    int n0 = s->ntrees;
    for (int t = 0; t < n0; t++) {
        if (s->trees[t].bytes < min_bytes)
            continue;
        uint64_t floor = mc_sched_tree_in_host(s, topo, t) ? host_chunk : min_chunk;
        uint64_t bytes = s->trees[t].bytes, least = floor > CHANNEL_GRANULE ? floor
                                                                            : CHANNEL_GRANULE;
        int m = bytes / least < (uint64_t)k ? (int)(bytes / least) : k;
        if (m < 2)
            continue;
        uint64_t part = (bytes / (uint64_t)m) / CHANNEL_GRANULE * CHANNEL_GRANULE;
        /* channels 1 .. m-1 are appended copies, in order; channel 0 is the tree itself, cut
         * last so that the copies read its whole range */
        for (int j = 1; j <= m; j++) {
            int ch = j % m;
            mc_tree_t *src = &s->trees[t];
            uint64_t off = src->offset + part * (uint64_t)ch;
            uint64_t len = ch == m - 1 ? bytes - part * (uint64_t)(m - 1) : part;
            /* channel ch of m in 1 + spread * ch/m times the tree's chunks, as mc_sched_stagger */
            uint64_t want = (uint64_t)src->nchunks * (uint64_t)(m + spread * ch) / (uint64_t)m;
            int c = (int)mc_chunks_within(want > MC_CHUNKS_MAX ? MC_CHUNKS_MAX : want, len, floor);
            if (ch == 0) {
                src->bytes = len;
                src->nchunks = c;
                continue;
            }
            int u = mc_sched_add_tree(s, src->piece, off, len, src->root, src->phase, c);
            src = &s->trees[t]; /* the array may have moved */
            mc_tree_t *dst = &s->trees[u];
            dst->edges = mc_xmalloc(sizeof(mc_tree_edge_t) * (size_t)(src->nedges + 1));
            memcpy(dst->edges, src->edges, sizeof(mc_tree_edge_t) * (size_t)src->nedges);
            dst->nedges = dst->edge_cap = src->nedges;
        }
    }
    mc_sched_plan_rates(s, topo);
}
