/* The balanced plan (docs/synthesis.md, "Session 16: all-gathers over many hosts"): every share
 * whole on one of its candidates, chosen share by share so that the busiest link stays least
 * loaded. Where many shares load the same links evenly (an all-gather over rail hosts: every GPU's
 * piece to every other GPU), one tree per share fills the links almost as evenly as the
 * fractional optimum, whose many small trees per share the simulator runs far slower (1 GiB over
 * eight MI300X boxes: 4.26 ms against 2.94 ms) and far more expensively. The referee decides. */
#include "synth/meshcast/mc_meshcast.h"

#include <stdint.h>
#include <stdlib.h>

#include "util/util.h"

/* The busiest link candidate c's links would have with u units more (*busiest), and how much
 * the sum of the squared link loads would grow (*spread: least where the links are least loaded
 * and the routes short). */
static void with_units(const mc_plan_t *pl, const int64_t *load, int c, int u, int64_t *busiest,
                       double *spread)
{
    const mc_pcand_t *pc = &pl->cands[c];
    *busiest = 0;
    *spread = 0;
    for (int i = 0; i < pc->nlinks; i++) {
        int64_t d = (int64_t)u * pc->link_ps[i], l = load[pc->links[i]] + d;
        *busiest = l > *busiest ? l : *busiest;
        *spread += (double)d * (double)(2 * load[pc->links[i]] + d);
    }
}

/* Adds (sign 1) or removes (-1) u units of candidate c to the links' loads. */
static void charge(const mc_plan_t *pl, int64_t *load, int c, int u, int sign)
{
    for (int j = 0; j < pl->cands[c].nlinks; j++)
        load[pl->cands[c].links[j]] += sign * (int64_t)u * pl->cands[c].link_ps[j];
}

/* Rounds in which every piece is lifted and placed again on what the others leave: the first
 * pieces were placed on empty links, where many trees tie. */
#define MC_BALANCE_ROUNDS 3

void mc_plan_balanced(const mc_plan_t *pl, mc_plan_sol_t *out)
{
    out->nphases = 1;
    out->units = mc_xcalloc((size_t)pl->ncands + 1, sizeof(int));
    out->est_ps = 0;
    int64_t *load = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int64_t));
    int *first = mc_xmalloc(sizeof(int) * (size_t)(pl->npieces + 1));
    int *order = mc_xmalloc(sizeof(int) * (size_t)(pl->npieces + 1));
    int *on = mc_xmalloc(sizeof(int) * (size_t)(pl->npieces + 1));
    for (int p = 0; p <= pl->npieces; p++) {
        first[p] = pl->ncands;
        on[p] = -1;
    }
    for (int c = pl->ncands - 1; c >= 0; c--)
        first[pl->cands[c].piece] = c;
    /* the largest pieces first (by units, then index): they are the hardest to place */
    for (int p = 0; p < pl->npieces; p++) {
        int i = p;
        for (; i > 0 && pl->units[order[i - 1]] < pl->units[p]; i--)
            order[i] = order[i - 1];
        order[i] = p;
    }
    for (int round = 0; round <= MC_BALANCE_ROUNDS; round++)
        for (int i = 0; i < pl->npieces; i++) {
            int p = order[i], best = -1, u = pl->units[p];
            int64_t best_busy = 0;
            double best_spread = 0;
            if (on[p] >= 0)
                charge(pl, load, on[p], u, -1);
            for (int c = first[p]; c < pl->ncands && pl->cands[c].piece == p; c++) {
                int64_t busy;
                double spread;
                with_units(pl, load, c, u, &busy, &spread);
                /* least busiest link, then the least spread, then the shallowest (the least
                 * pipeline fill: a chain through a host ties with its star on empty links) */
                if (best < 0 || busy < best_busy ||
                    (busy == best_busy &&
                     (spread < best_spread || (spread == best_spread &&
                                               pl->cands[c].fixed_ps < pl->cands[best].fixed_ps)))) {
                    best = c;
                    best_busy = busy;
                    best_spread = spread;
                }
            }
            on[p] = best;
            if (best >= 0)
                charge(pl, load, best, u, 1);
        }
    for (int p = 0; p < pl->npieces; p++)
        if (on[p] >= 0)
            out->units[on[p]] = pl->units[p];
    mc_plan_check(pl, out);
    free(load);
    free(first);
    free(order);
    free(on);
}
