/* Alpa's randomized greedy load balancing and ordering of broadcasts into rounds
 * (alpa/pipeline_parallel/cross_mesh_resharding.py, LoadBalancingTaskSolverGreedyAlgo, the mode
 * the paper calls "Ours"). Workers are hosts (one NIC each in Alpa's model). A round is a set of
 * works that share no worker; each round is the best of `trials` random trials. Python's
 * np.random / random.choices are replaced by a seeded splitmix64 so the result is reproducible;
 * the algorithm is otherwise Alpa's, including its tie rules. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth_internal.h"

static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double next_unit(uint64_t *state)
{
    return (double)(next_u64(state) >> 11) * (1.0 / 9007199254740992.0);
}

typedef struct trial {
    int n;
    int *works;    /* picked, in pick order */
    int *senders;
} trial_t;

/* find_one_random_concurrent_set_of_works: shuffle the open works, take each whose receivers are
 * all free and that has a free candidate sender, drawn with weight max_load - load + 1. */
static void one_trial(int nworkers, const synth_lb_work_t *works, const int *open, int nopen,
                      const double *load, uint64_t *rng, char *used, int *perm, double *weight,
                      trial_t *t)
{
    memcpy(perm, open, sizeof(int) * (size_t)nopen);
    for (int i = nopen - 1; i > 0; i--) {
        int j = (int)(next_u64(rng) % (uint64_t)(i + 1));
        int x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    memset(used, 0, (size_t)nworkers);
    t->n = 0;
    for (int k = 0; k < nopen; k++) {
        const synth_lb_work_t *w = &works[perm[k]];
        int ok = 1;
        for (int r = 0; r < w->nreceivers && ok; r++)
            ok = !used[w->receivers[r]];
        if (!ok)
            continue;
        int navail = 0;
        double max_load = 0, total = 0;
        for (int s = 0; s < w->nsenders; s++)
            if (!used[w->senders[s]]) {
                double l = load[w->senders[s]];
                if (navail == 0 || l > max_load)
                    max_load = l;
                navail++;
            }
        if (!navail)
            continue;
        int na = 0;
        for (int s = 0; s < w->nsenders; s++)
            if (!used[w->senders[s]]) {
                weight[na] = max_load - load[w->senders[s]] + 1;
                total += weight[na++];
            }
        double x = next_unit(rng) * total;
        int pick = -1;
        na = 0;
        for (int s = 0; s < w->nsenders; s++) {
            if (used[w->senders[s]])
                continue;
            pick = w->senders[s];
            x -= weight[na++];
            if (x < 0)
                break;
        }
        used[pick] = 1;
        for (int r = 0; r < w->nreceivers; r++)
            used[w->receivers[r]] = 1;
        t->works[t->n] = perm[k];
        t->senders[t->n++] = pick;
    }
}

/* Population standard deviation of the loads after the trial's works are added. */
static double trial_std(int nworkers, const synth_lb_work_t *works, const double *load,
                        const trial_t *t, double *scratch)
{
    memcpy(scratch, load, sizeof(double) * (size_t)nworkers);
    for (int i = 0; i < t->n; i++)
        scratch[t->senders[i]] += works[t->works[i]].duration;
    double mean = 0, var = 0;
    for (int i = 0; i < nworkers; i++)
        mean += scratch[i];
    mean /= nworkers;
    for (int i = 0; i < nworkers; i++)
        var += (scratch[i] - mean) * (scratch[i] - mean);
    return sqrt(var / nworkers);
}

int synth_lb_greedy(int nworkers, int nworks, const synth_lb_work_t *works, int trials,
                    uint64_t seed, int *sender, int *round)
{
    uint64_t rng = seed;
    int maxw = 1;
    for (int w = 0; w < nworks; w++)
        if (works[w].nsenders > maxw)
            maxw = works[w].nsenders;
    double *load = mc_xcalloc((size_t)nworkers, sizeof(double));
    double *scratch = mc_xmalloc(sizeof(double) * (size_t)nworkers);
    double *weight = mc_xmalloc(sizeof(double) * (size_t)maxw);
    char *used = mc_xmalloc((size_t)nworkers);
    int *open = mc_xmalloc(sizeof(int) * (size_t)(nworks ? nworks : 1));
    int *perm = mc_xmalloc(sizeof(int) * (size_t)(nworks ? nworks : 1));
    trial_t cur, best;
    cur.works = mc_xmalloc(sizeof(int) * (size_t)(nworks ? nworks : 1));
    cur.senders = mc_xmalloc(sizeof(int) * (size_t)(nworks ? nworks : 1));
    best.works = mc_xmalloc(sizeof(int) * (size_t)(nworks ? nworks : 1));
    best.senders = mc_xmalloc(sizeof(int) * (size_t)(nworks ? nworks : 1));
    int nopen = nworks, nrounds = 0;
    for (int w = 0; w < nworks; w++) {
        open[w] = w;
        sender[w] = round[w] = -1;
    }
    while (nopen > 0) {
        double best_std = 0;
        best.n = 0;
        for (int k = 0; k < trials; k++) {
            one_trial(nworkers, works, open, nopen, load, &rng, used, perm, weight, &cur);
            if (cur.n < best.n)
                continue;
            double sd = trial_std(nworkers, works, load, &cur, scratch);
            if (cur.n > best.n || sd < best_std) {
                trial_t x = best;
                best = cur;
                cur = x;
                best_std = sd;
            }
        }
        if (best.n == 0)
            break; /* only works without a candidate sender remain: they stay at -1 */
        for (int i = 0; i < best.n; i++) {
            sender[best.works[i]] = best.senders[i];
            round[best.works[i]] = nrounds;
            load[best.senders[i]] += works[best.works[i]].duration;
        }
        int k = 0;
        for (int i = 0; i < nopen; i++)
            if (round[open[i]] < 0)
                open[k++] = open[i];
        nopen = k;
        nrounds++;
    }
    free(load);
    free(scratch);
    free(weight);
    free(used);
    free(open);
    free(perm);
    free(cur.works);
    free(cur.senders);
    free(best.works);
    free(best.senders);
    return nrounds;
}
