/* Chunk counts for pipelined chains. NCCL pipelines a ring broadcast in steps of its buffer slot
 * (512 KiB with the Simple protocol); the simulator charges a message overhead per chunk and
 * edge. So a baseline gets the chunk count that is best for it under that model, never more
 * chunks than NCCL's steps allow: the baseline is never made slower than NCCL would run it. */
#include <stdlib.h>

#include "synth/synth_internal.h"

int synth_forced_chunks(uint64_t bytes, uint64_t chunk_bytes)
{
    uint64_t c = chunk_bytes ? (bytes + chunk_bytes - 1) / chunk_bytes : 1;
    if (c < 1)
        c = 1;
    return c > SYNTH_MAX_CHUNKS ? SYNTH_MAX_CHUNKS : (int)c;
}

/* Fixed cost (overhead + hop latency) and bandwidth of one tree edge's route, shared by sharers
 * chains that move alongside it. */
static void edge_cost(const mc_topo_t *topo, const mc_tree_edge_t *e, int sharers, double *fixed,
                      double *bw)
{
    double b = 0;
    for (int i = 0; i < e->nlinks; i++) {
        const mc_link_t *l = &topo->links[e->links[i]];
        if (b == 0 || l->bw < b)
            b = l->bw;
    }
    *fixed = mc_topo_links_delay(topo, e->links, e->nlinks);
    *bw = b > 0 ? b / sharers : 1e30;
}

/* Modelled time of a chain moving bytes in c chunks: the first chunk crosses every edge, the
 * other c-1 follow at the pace of the slowest edge. */
static double chain_time(const double *fixed, const double *bw, int n, double bytes, int c)
{
    double chunk = bytes / c, first = 0, slowest = 0;
    for (int i = 0; i < n; i++) {
        double t = fixed[i] + chunk / bw[i];
        first += t;
        if (t > slowest)
            slowest = t;
    }
    return first + (c - 1) * slowest;
}

int synth_chain_chunks(const mc_sched_t *s, const mc_topo_t *topo, int ti, uint64_t chunk_bytes,
                       int sharers)
{
    const mc_tree_t *t = &s->trees[ti];
    if (chunk_bytes)
        return synth_forced_chunks(t->bytes, chunk_bytes);
    if (t->nedges <= 1)
        return 1;
    double *fixed = mc_xmalloc(sizeof(double) * (size_t)t->nedges);
    double *bw = mc_xmalloc(sizeof(double) * (size_t)t->nedges);
    for (int i = 0; i < t->nedges; i++)
        edge_cost(topo, &t->edges[i], sharers < 1 ? 1 : sharers, &fixed[i], &bw[i]);
    uint64_t steps = t->bytes / SYNTH_NCCL_STEP_BYTES;
    int cmax = steps < 1 ? 1 : steps > SYNTH_MAX_CHUNKS ? SYNTH_MAX_CHUNKS : (int)steps;
    int best = 1;
    double best_t = chain_time(fixed, bw, t->nedges, (double)t->bytes, 1);
    for (int c = 2; c <= cmax; c++) {
        double tc = chain_time(fixed, bw, t->nedges, (double)t->bytes, c);
        if (tc < best_t) {
            best_t = tc;
            best = c;
        }
    }
    free(fixed);
    free(bw);
    return best;
}
