/* Staggered chunking for the meshcast strategy (docs/synthesis.md, "Referee"). Trees of one phase
 * that share their bottleneck link and are cut into the same number of chunks move in lockstep:
 * every one of them pays its per-message overhead at the same instant, and the link idles while
 * they do. Giving the j-th of m such trees 1 + spread * j/m times the chunks puts their overheads
 * at different instants, so one tree's overhead falls while another moves bytes (the effect NCCL
 * gets from several channels on one NIC). How far apart (the spread) is left to the simulator: the
 * referee tries a few and keeps a staggered schedule only when it is faster. */
#include <stdlib.h>

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

typedef struct keyed {
    int phase, link, tree;
} keyed_t;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed_t *x = a, *y = b;
    if (x->phase != y->phase)
        return (x->phase > y->phase) - (x->phase < y->phase);
    if (x->link != y->link)
        return (x->link > y->link) - (x->link < y->link);
    return (x->tree > y->tree) - (x->tree < y->tree);
}

void mc_sched_stagger(mc_sched_t *s, const mc_topo_t *topo, int spread, uint64_t min_chunk)
{
    keyed_t *k = mc_xmalloc(sizeof(keyed_t) * (size_t)(s->ntrees + 1));
    for (int t = 0; t < s->ntrees; t++)
        k[t] = (keyed_t){s->trees[t].phase, bottleneck(&s->trees[t], topo), t};
    mc_sort(k, (size_t)s->ntrees, sizeof(keyed_t), cmp_keyed);
    for (int a = 0, b; a < s->ntrees; a = b) {
        for (b = a + 1; b < s->ntrees && k[b].phase == k[a].phase && k[b].link == k[a].link; b++)
            ;
        int m = b - a;
        for (int j = 1; j < m; j++) {
            mc_tree_t *t = &s->trees[k[a + j].tree];
            uint64_t n = (uint64_t)t->nchunks * (uint64_t)(m + spread * j) / (uint64_t)m;
            uint64_t most = t->bytes / (min_chunk ? min_chunk : 1);
            if (n > most)
                n = most;
            /* chunks of ceil(bytes / n): every one must be non-empty */
            while (n > (uint64_t)t->nchunks && (n - 1) * ((t->bytes + n - 1) / n) >= t->bytes)
                n--;
            if (n > (uint64_t)t->nchunks && n <= MC_CHUNKS_MAX)
                t->nchunks = (int)n;
        }
    }
    free(k);
}
