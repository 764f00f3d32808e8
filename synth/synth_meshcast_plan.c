/* The abstract plan of the meshcast strategy: its cost model (a phase lasts as long as its
 * slowest tree or its busiest shared link), the feasibility check every solution passes before
 * it is decoded, and the greedy seed that is also the fallback when Z3 finds nothing better. */
#include <stdlib.h>
#include <string.h>

#include "synth/synth_internal.h"

void mc_plan_free(mc_plan_t *pl)
{
    for (int c = 0; c < pl->ncands; c++) {
        free(pl->cands[c].links);
        free(pl->cands[c].link_ps);
    }
    free(pl->cands);
    free(pl->units);
    free(pl->slots);
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
    int *used = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int));
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
    for (int k = 0; k < s->nphases && !bad; k++) {
        memset(used, 0, sizeof(int) * (size_t)pl->nlinks);
        for (int c = 0; c < pl->ncands; c++) {
            if (s->units[c * s->nphases + k] <= 0)
                continue;
            for (int i = 0; i < pl->cands[c].nlinks; i++)
                if (++used[pl->cands[c].links[i]] > pl->slots[pl->cands[c].links[i]])
                    bad = 1;
        }
        s->est_ps += mc_plan_phase_ps(pl, s, k);
    }
    free(sum);
    free(used);
    return bad ? -1 : 0;
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

/* Would candidate c fit into phase k next to what is there? */
static int fits(const mc_plan_t *pl, const mc_plan_sol_t *s, int c, int k, int *used)
{
    memset(used, 0, sizeof(int) * (size_t)pl->nlinks);
    for (int d = 0; d < pl->ncands; d++)
        if (s->units[d * s->nphases + k] > 0)
            for (int i = 0; i < pl->cands[d].nlinks; i++)
                used[pl->cands[d].links[i]]++;
    for (int i = 0; i < pl->cands[c].nlinks; i++)
        if (used[pl->cands[c].links[i]] + 1 > pl->slots[pl->cands[c].links[i]])
            return 0;
    return 1;
}

void mc_plan_greedy(const mc_plan_t *pl, mc_plan_sol_t *out)
{
    /* At most one phase per piece is ever needed: a new phase always fits. */
    int K = pl->npieces > 0 ? pl->npieces : 1;
    sol_init(pl, out, K);
    int *used = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int));
    int64_t *phase = mc_xcalloc((size_t)K, sizeof(int64_t));
    int nopen = 0;
    int first = 0;
    for (int p = 0; p < pl->npieces; p++) {
        int best_c = -1, best_k = -1;
        int64_t best_inc = 0;
        int c;
        for (c = first; c < pl->ncands && pl->cands[c].piece == p; c++) {
            const mc_pcand_t *pc = &pl->cands[c];
            int64_t tc = pl->units[p] * pc->unit_ps + pc->fixed_ps;
            for (int k = 0; k <= nopen && k < K; k++) {
                if (k < nopen && !fits(pl, out, c, k, used))
                    continue;
                int64_t inc = k < nopen ? (tc > phase[k] ? tc - phase[k] : 0) : tc;
                if (best_c < 0 || inc < best_inc) {
                    best_c = c;
                    best_k = k;
                    best_inc = inc;
                }
            }
        }
        first = c;
        if (best_c < 0)
            continue; /* a piece with no candidate: mc_plan_check reports it */
        out->units[best_c * K + best_k] = pl->units[p];
        if (best_k == nopen)
            nopen++;
        phase[best_k] = mc_plan_phase_ps(pl, out, best_k);
    }
    free(used);
    free(phase);
    mc_plan_sol_compact(pl, out);
    mc_plan_check(pl, out);
}
