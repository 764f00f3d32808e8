/* The abstract plan of the meshcast strategy: its cost model (a phase lasts as long as its
 * slowest tree or its busiest shared link), the feasibility check every solution passes before
 * it is decoded, and the greedy seed that is also the fallback when Z3 finds nothing better. */
#include <stdlib.h>
#include <string.h>

#include "synth/mc_meshcast.h"

void mc_plan_free(mc_plan_t *pl)
{
    for (int c = 0; c < pl->ncands; c++) {
        free(pl->cands[c].links);
        free(pl->cands[c].link_ps);
    }
    free(pl->cands);
    free(pl->units);
    memset(pl, 0, sizeof(*pl));
}

void mc_plan_sol_free(mc_plan_sol_t *s)
{
    free(s->units);
    memset(s, 0, sizeof(*s));
}

static void sol_init(const mc_plan_t *pl, mc_plan_sol_t *s, int nphases)
{
    s->nphases = nphases;
    s->units = mc_xcalloc((size_t)pl->ncands * (size_t)(nphases > 0 ? nphases : 1), sizeof(int));
    s->est_ps = 0;
}

int64_t mc_plan_phase_ps(const mc_plan_t *pl, const mc_plan_sol_t *s, int k)
{
    int64_t t = 0;
    int64_t *load = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int64_t));
    for (int c = 0; c < pl->ncands; c++) {
        int u = s->units[c * s->nphases + k];
        if (u <= 0)
            continue;
        const mc_pcand_t *pc = &pl->cands[c];
        int64_t tc = u * pc->unit_ps + pc->fixed_ps;
        if (tc > t)
            t = tc;
        for (int i = 0; i < pc->nlinks; i++)
            load[pc->links[i]] += u * pc->link_ps[i];
    }
    for (int l = 0; l < pl->nlinks; l++)
        if (load[l] > t)
            t = load[l];
    free(load);
    return t;
}

int mc_plan_check(const mc_plan_t *pl, mc_plan_sol_t *s)
{
    int bad = 0;
    int *sum = mc_xcalloc((size_t)pl->npieces + 1, sizeof(int));
    for (int c = 0; c < pl->ncands; c++)
        for (int k = 0; k < s->nphases; k++) {
            int u = s->units[c * s->nphases + k];
            if (u < 0)
                bad = 1;
            sum[pl->cands[c].piece] += u;
        }
    for (int p = 0; p < pl->npieces; p++)
        if (sum[p] != pl->units[p])
            bad = 1;
    s->est_ps = 0;
    for (int k = 0; k < s->nphases && !bad; k++)
        s->est_ps += mc_plan_phase_ps(pl, s, k);
    free(sum);
    return bad ? -1 : 0;
}

int64_t mc_plan_lower_ps(const mc_plan_t *pl)
{
    int64_t lb = 0;
    int64_t *load = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int64_t));
    int64_t *least = mc_xmalloc(sizeof(int64_t) * (size_t)(pl->nlinks + 1));
    int *users = mc_xmalloc(sizeof(int) * (size_t)(pl->nlinks + 1));
    for (int c = 0, p = 0; p < pl->npieces; p++) {
        int first = c, n = 0;
        int64_t alone = -1;
        for (int l = 0; l < pl->nlinks; l++)
            users[l] = 0;
        for (; c < pl->ncands && pl->cands[c].piece == p; c++, n++) {
            const mc_pcand_t *pc = &pl->cands[c];
            int64_t t = pl->units[p] * pc->unit_ps + pc->fixed_ps;
            if (alone < 0 || t < alone)
                alone = t;
            for (int i = 0; i < pc->nlinks; i++) {
                int l = pc->links[i];
                if (!users[l] || pc->link_ps[i] < least[l])
                    least[l] = pc->link_ps[i];
                users[l]++;
            }
        }
        if (alone > lb)
            lb = alone;
        /* a link every candidate of p crosses carries all of p's units */
        for (int i = 0; n > 0 && i < pl->cands[first].nlinks; i++) {
            int l = pl->cands[first].links[i];
            if (users[l] == n)
                load[l] += pl->units[p] * least[l];
        }
    }
    for (int l = 0; l < pl->nlinks; l++)
        if (load[l] > lb)
            lb = load[l];
    free(load);
    free(least);
    free(users);
    return lb;
}

static int64_t *cmp_time; /* qsort has no context argument in C11 */

static int cmp_phase(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (cmp_time[x] != cmp_time[y])
        return cmp_time[x] > cmp_time[y] ? -1 : 1;
    return x - y;
}

void mc_plan_sol_compact(const mc_plan_t *pl, mc_plan_sol_t *s)
{
    int K = s->nphases;
    int *order = mc_xmalloc(sizeof(int) * (size_t)(K + 1));
    int64_t *time = mc_xmalloc(sizeof(int64_t) * (size_t)(K + 1));
    int n = 0;
    for (int k = 0; k < K; k++) {
        int any = 0;
        for (int c = 0; c < pl->ncands && !any; c++)
            any = s->units[c * K + k] > 0;
        time[k] = mc_plan_phase_ps(pl, s, k);
        if (any)
            order[n++] = k;
    }
    cmp_time = time;
    qsort(order, (size_t)n, sizeof(int), cmp_phase);
    int *units = mc_xcalloc((size_t)pl->ncands * (size_t)(n > 0 ? n : 1), sizeof(int));
    for (int c = 0; c < pl->ncands; c++)
        for (int j = 0; j < n; j++)
            units[c * n + j] = s->units[c * K + order[j]];
    free(s->units);
    s->units = units;
    s->nphases = n;
    free(order);
    free(time);
}

/* Phases the greedy seed may open: trees share links at planned rates, so a new phase only pays
 * when a tree's fixed cost is worth keeping apart. */
#define MC_GREEDY_PHASES 4

void mc_plan_greedy(const mc_plan_t *pl, mc_plan_sol_t *out)
{
    int K = pl->npieces < MC_GREEDY_PHASES ? pl->npieces : MC_GREEDY_PHASES;
    if (K < 1)
        K = 1;
    sol_init(pl, out, K);
    int64_t *load = mc_xcalloc((size_t)K * (size_t)(pl->nlinks + 1), sizeof(int64_t));
    int64_t *phase = mc_xcalloc((size_t)K, sizeof(int64_t));
    int nopen = 0;
    for (int c = 0, p = 0; p < pl->npieces; p++) {
        int best_c = -1, best_k = -1;
        int64_t best_inc = 0, best_t = 0;
        for (; c < pl->ncands && pl->cands[c].piece == p; c++) {
            const mc_pcand_t *pc = &pl->cands[c];
            for (int k = 0; k <= nopen && k < K; k++) {
                /* the phase grows to this tree's time or to the links they share */
                int64_t t = pl->units[p] * pc->unit_ps + pc->fixed_ps;
                if (t < phase[k])
                    t = phase[k];
                for (int i = 0; i < pc->nlinks; i++) {
                    int64_t l = load[(size_t)k * (size_t)pl->nlinks + (size_t)pc->links[i]] +
                                pl->units[p] * pc->link_ps[i];
                    if (l > t)
                        t = l;
                }
                if (best_c < 0 || t - phase[k] < best_inc) {
                    best_c = c;
                    best_k = k;
                    best_inc = t - phase[k];
                    best_t = t;
                }
            }
        }
        if (best_c < 0)
            continue; /* a piece with no candidate: mc_plan_check reports it */
        const mc_pcand_t *pc = &pl->cands[best_c];
        out->units[best_c * K + best_k] = pl->units[p];
        for (int i = 0; i < pc->nlinks; i++)
            load[(size_t)best_k * (size_t)pl->nlinks + (size_t)pc->links[i]] +=
                pl->units[p] * pc->link_ps[i];
        phase[best_k] = best_t;
        if (best_k == nopen)
            nopen++;
    }
    free(load);
    free(phase);
    mc_plan_sol_compact(pl, out);
    mc_plan_check(pl, out);
}
