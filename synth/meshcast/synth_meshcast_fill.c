/* The plan's estimate with each tree's pipeline fill paid at the pace it shares its links at
 * (docs/synthesis.md, "Choosing the plan to certify"). The plan's own model charges a tree's fill
 * at its solo rate, so a chain across eight hosts and through each of them (depth 14) costs as
 * little as a star over the hosts (depth 2) when both load the links alike; in the simulator a
 * tree that shares its busiest link moves each chunk at its share of it, and every level of the
 * tree adds a chunk's time at that pace. The estimate needs no edge lists (mc_plan_shared_est
 * does), so it is cheap on every component. */
#include <math.h>
#include <stdlib.h>

#include "synth/meshcast/mc_meshcast.h"

/* One tree of depth d, the busiest of its links loaded for busy seconds, carrying bytes in chunks
 * of at least min_chunk: its pipelined time busy + (d - 1) busy / n + n hop, n at its best
 * (sqrt((d - 1) busy / hop)) but no more than the bytes allow. */
static double tree_s(const mc_cand_t *c, double busy, uint64_t bytes, uint64_t min_chunk)
{
    double hop = 0;
    for (int e = 0; e < c->nedges; e++)
        hop = c->edge_hop[e] > hop ? c->edge_hop[e] : hop;
    if (c->depth <= 1 || busy <= 0 || hop <= 0)
        return busy;
    double n = sqrt((c->depth - 1) * busy / hop), most = (double)(bytes / min_chunk);
    n = n > most ? most : n;
    n = n < 1 ? 1 : n;
    return busy + (c->depth - 1) * busy / n + n * hop;
}

int64_t mc_plan_fill_ps(const mc_plan_t *pl, const mc_cand_t *const *cand,
                        const uint64_t *unit_bytes, uint64_t min_chunk, const mc_plan_sol_t *s)
{
    int64_t *load = mc_xmalloc(sizeof(int64_t) * (size_t)(pl->nlinks + 1)), total = 0;
    for (int k = 0; k < s->nphases; k++) {
        int64_t phase = 0;
        for (int l = 0; l < pl->nlinks; l++)
            load[l] = 0;
        for (int c = 0; c < pl->ncands; c++) {
            int u = s->units[c * s->nphases + k];
            for (int i = 0; i < pl->cands[c].nlinks && u > 0; i++)
                load[pl->cands[c].links[i]] += u * pl->cands[c].link_ps[i];
        }
        for (int l = 0; l < pl->nlinks; l++)
            phase = load[l] > phase ? load[l] : phase;
        for (int c = 0; c < pl->ncands; c++) {
            int u = s->units[c * s->nphases + k];
            if (u <= 0)
                continue;
            const mc_pcand_t *pc = &pl->cands[c];
            int64_t busy = u * pc->unit_ps;
            for (int i = 0; i < pc->nlinks; i++)
                busy = load[pc->links[i]] > busy ? load[pc->links[i]] : busy;
            double t = tree_s(cand[c], (double)busy * 1e-12,
                              (uint64_t)u * unit_bytes[pc->piece], min_chunk);
            phase = (int64_t)(t * 1e12) > phase ? (int64_t)(t * 1e12) : phase;
        }
        total += phase;
    }
    free(load);
    return total;
}
