/* Chunk counts for pipelined chains. NCCL pipelines a ring broadcast in steps of its buffer slot
 * (512 KiB with the Simple protocol), 8 in flight per connection; the simulator charges a message
 * overhead per chunk and edge, overlapping the chunks in flight before it. So a chain gets the
 * chunk count that is best for it under that model (mc_chain_chunks), never more chunks than
 * NCCL's steps allow: a baseline is never made slower than NCCL would run it. */
#include <stdlib.h>

#include "synth/synth_internal.h"
#include "topo/topo_chain.h"

int synth_inflight(const mc_synth_opts_t *opts)
{
    return opts->inflight > 0 ? opts->inflight : MC_NCCL_STEPS;
}

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
    uint64_t steps = t->bytes / MC_NCCL_STEP_BYTES;
    int cmax = steps < 1 ? 1 : steps > SYNTH_MAX_CHUNKS ? SYNTH_MAX_CHUNKS : (int)steps;
    int best = mc_chain_chunks(fixed, bw, t->nedges, (double)t->bytes, cmax, t->inflight);
    free(fixed);
    free(bw);
    return best;
}
