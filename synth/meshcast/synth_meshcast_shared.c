/* The plan's estimate with every tree at its shared pace, and the descent under it. The plan's
 * own model (synth_meshcast_plan.c) charges a tree's pipeline fill at the tree's solo rate; in one
 * phase, trees that share a link move at their share of it, so each chunk step of the fill takes
 * longer: on the MI250 broadcast of `direct`, 36 trees of 1-4 MiB run at 4-6 GB/s each where
 * their links carry 12-144 GB/s, and a depth-7 tree's fill is far above its fixed_ps. Under this
 * estimate a deep tree on busy links costs what it costs in the simulator, and the descent
 * lightens the links under deep, slow trees instead of only the busiest link. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

/* The tree's time in n chunks, each edge e taking pace[e] / n plus its overhead per chunk (at[]:
 * scratch, one per edge). */
static double pipelined(const mc_pcand_t *pc, const double *pace, int n, double *at)
{
    double first = 0, slowest = 0;
    for (int e = 0; e < pc->nedges; e++) {
        double step = (double)pc->edge_hop_ps[e] + pace[e] / n;
        at[e] = step + (pc->edge_up[e] >= 0 ? at[pc->edge_up[e]] : 0);
        first = at[e] > first ? at[e] : first;
        slowest = step > slowest ? step : slowest;
    }
    return first + (n - 1) * slowest;
}

int64_t mc_plan_shared_ps(const mc_pcand_t *pc, const int64_t *load)
{
    int64_t busiest = 0;
    for (int i = 0; i < pc->nlinks; i++)
        busiest = load[pc->links[i]] > busiest ? load[pc->links[i]] : busiest;
    if (pc->nedges == 0)
        return busiest + pc->fixed_ps;
    double *pace = mc_xcalloc((size_t)pc->nedges * 2, sizeof(double)), *at = pace + pc->nedges;
    for (int e = 0; e < pc->nedges; e++)
        for (int i = pc->edge_at[e]; i < pc->edge_at[e + 1]; i++)
            pace[e] = (double)load[pc->edge_links[i]] > pace[e] ? (double)load[pc->edge_links[i]]
                                                                : pace[e];
    /* a fill falling as 1/n and an overhead growing with n: convex, ternary search */
    int lo = 1, hi = MC_CHUNKS_MAX;
    while (hi - lo > 2) {
        int m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
        if (pipelined(pc, pace, m1, at) <= pipelined(pc, pace, m2, at))
            hi = m2;
        else
            lo = m1;
    }
    double best = HUGE_VAL;
    for (int n = lo; n <= hi; n++) {
        double t = pipelined(pc, pace, n, at);
        best = t < best ? t : best;
    }
    free(pace);
    return (int64_t)best;
}

/* The links' loads of a one-phase solution into load[0..nlinks). */
static void loads(const mc_plan_t *pl, const int *units, int64_t *load)
{
    memset(load, 0, sizeof(int64_t) * (size_t)(pl->nlinks + 1));
    for (int c = 0; c < pl->ncands; c++)
        for (int i = 0; i < pl->cands[c].nlinks && units[c] > 0; i++)
            load[pl->cands[c].links[i]] += units[c] * pl->cands[c].link_ps[i];
}

/* The estimate given the loads; *slow gets the slowest tree (-1: a link is slower than every
 * tree) and *excess what the trees' times exceed the busiest link by, summed (the descent's
 * second key: it falls when one of several equally slow trees speeds up). */
static int64_t estimate(const mc_plan_t *pl, const int *units, const int64_t *load, int *slow,
                        int64_t *excess)
{
    int64_t lmax = 0, t = 0;
    for (int l = 0; l < pl->nlinks; l++)
        lmax = load[l] > lmax ? load[l] : lmax;
    *slow = -1;
    *excess = 0;
    t = lmax;
    for (int c = 0; c < pl->ncands; c++) {
        const mc_pcand_t *pc = &pl->cands[c];
        if (units[c] <= 0)
            continue;
        int64_t tc = mc_plan_shared_ps(pc, load);
        *excess += tc > lmax ? tc - lmax : 0;
        if (tc > t) {
            t = tc;
            *slow = c;
        }
    }
    return t;
}

int64_t mc_plan_shared_est(const mc_plan_t *pl, const mc_plan_sol_t *sol)
{
    int64_t *load = mc_xmalloc(sizeof(int64_t) * (size_t)(pl->nlinks + 1)), excess;
    int slow;
    loads(pl, sol->units, load);
    int64_t t = estimate(pl, sol->units, load, &slow, &excess);
    free(load);
    return t;
}

/* Moves one unit from candidate a to candidate b, with the loads. */
static void shift(const mc_plan_t *pl, int *units, int64_t *load, int a, int b)
{
    units[a]--;
    units[b]++;
    for (int i = 0; i < pl->cands[a].nlinks; i++)
        load[pl->cands[a].links[i]] -= pl->cands[a].link_ps[i];
    for (int i = 0; i < pl->cands[b].nlinks; i++)
        load[pl->cands[b].links[i]] += pl->cands[b].link_ps[i];
}

int64_t mc_plan_descend_shared(const mc_plan_t *pl, mc_plan_sol_t *sol)
{
    if (sol->nphases != 1 || mc_plan_check(pl, sol) != 0)
        return -1;
    int64_t *load = mc_xmalloc(sizeof(int64_t) * (size_t)(pl->nlinks + 1)), excess;
    int *u = sol->units, slow;
    loads(pl, u, load);
    int64_t t = estimate(pl, u, load, &slow, &excess);
    while (slow >= 0) {
        int best = -1;
        int64_t best_t = t, best_excess = excess;
        for (int d = 0; d < pl->ncands; d++) {
            if (d == slow || pl->cands[d].piece != pl->cands[slow].piece)
                continue;
            int64_t e;
            int s2;
            shift(pl, u, load, slow, d);
            int64_t td = estimate(pl, u, load, &s2, &e);
            if (td < best_t || (td == best_t && e < best_excess)) {
                best = d;
                best_t = td;
                best_excess = e;
            }
            shift(pl, u, load, d, slow);
        }
        if (best < 0)
            break;
        shift(pl, u, load, slow, best);
        t = estimate(pl, u, load, &slow, &excess);
    }
    free(load);
    mc_plan_check(pl, sol);
    return t;
}
