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

/* What one round's trials share. */
typedef struct lb_round {
    int nworkers;
    const synth_lb_work_t *works;
    const double *load;
    uint64_t rng;
    char *used;        /* per worker, in the current trial */
    char *receiver;    /* per worker: a receiver of some open work */
    int nreceivers;    /* how many workers are */
    int *perm, nopen;  /* the open works, shuffled in place */
    double *weight;
} lb_round_t;

/* Draws a sender among w's unused candidates with weight max_load - load + 1. */
static int draw_sender(lb_round_t *r, const synth_lb_work_t *w)
{
    int navail = 0, pick = -1;
    double max_load = 0, total = 0;
    for (int s = 0; s < w->nsenders; s++)
        if (!r->used[w->senders[s]]) {
            double l = r->load[w->senders[s]];
            if (navail++ == 0 || l > max_load)
                max_load = l;
        }
    if (!navail)
        return -1;
    int na = 0;
    for (int s = 0; s < w->nsenders; s++)
        if (!r->used[w->senders[s]]) {
            r->weight[na] = max_load - r->load[w->senders[s]] + 1;
            total += r->weight[na++];
        }
    double x = next_unit(&r->rng) * total;
    na = 0;
    for (int s = 0; s < w->nsenders; s++) {
        if (r->used[w->senders[s]])
            continue;
        pick = w->senders[s];
        x -= r->weight[na++];
        if (x < 0)
            break;
    }
    return pick;
}

/* find_one_random_concurrent_set_of_works: in a random order of the open works, take each whose
 * receivers are all free and that has a free candidate sender. The order is drawn lazily
 * (Fisher-Yates from the front) and the scan stops once every receiving worker is taken, when no
 * further work could fit: the same distribution as Alpa's full shuffle, at a fraction of the cost
 * on large tasks. */
static void one_trial(lb_round_t *r, trial_t *t)
{
    int free_receivers = r->nreceivers;
    memset(r->used, 0, (size_t)r->nworkers);
    t->n = 0;
    for (int k = 0; k < r->nopen && free_receivers > 0; k++) {
        int j = k + (int)(next_u64(&r->rng) % (uint64_t)(r->nopen - k));
        int x = r->perm[k];
        r->perm[k] = r->perm[j];
        r->perm[j] = x;
        const synth_lb_work_t *w = &r->works[r->perm[k]];
        int ok = 1;
        for (int i = 0; i < w->nreceivers && ok; i++)
            ok = !r->used[w->receivers[i]];
        int pick = ok ? draw_sender(r, w) : -1;
        if (pick < 0)
            continue;
        free_receivers -= r->receiver[pick];
        r->used[pick] = 1;
        for (int i = 0; i < w->nreceivers; i++) {
            free_receivers -= r->receiver[w->receivers[i]] && !r->used[w->receivers[i]];
            r->used[w->receivers[i]] = 1;
        }
        t->works[t->n] = r->perm[k];
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

/* Marks the workers that receive in some open work. */
static void mark_receivers(lb_round_t *r)
{
    memset(r->receiver, 0, (size_t)r->nworkers);
    r->nreceivers = 0;
    for (int i = 0; i < r->nopen; i++) {
        const synth_lb_work_t *w = &r->works[r->perm[i]];
        for (int k = 0; k < w->nreceivers; k++)
            if (!r->receiver[w->receivers[k]]) {
                r->receiver[w->receivers[k]] = 1;
                r->nreceivers++;
            }
    }
}

int synth_lb_greedy(int nworkers, int nworks, const synth_lb_work_t *works, int trials,
                    uint64_t seed, int *sender, int *round)
{
    int maxw = 1, n1 = nworks ? nworks : 1, nrounds = 0;
    for (int w = 0; w < nworks; w++)
        if (works[w].nsenders > maxw)
            maxw = works[w].nsenders;
    double *load = mc_xcalloc((size_t)nworkers, sizeof(double));
    double *scratch = mc_xmalloc(sizeof(double) * (size_t)nworkers);
    lb_round_t r = {.nworkers = nworkers, .works = works, .load = load, .rng = seed,
                    .used = mc_xmalloc((size_t)nworkers), .receiver = mc_xmalloc((size_t)nworkers),
                    .perm = mc_xmalloc(sizeof(int) * (size_t)n1), .nopen = nworks,
                    .weight = mc_xmalloc(sizeof(double) * (size_t)maxw)};
    trial_t cur = {0, mc_xmalloc(sizeof(int) * (size_t)n1), mc_xmalloc(sizeof(int) * (size_t)n1)};
    trial_t best = {0, mc_xmalloc(sizeof(int) * (size_t)n1), mc_xmalloc(sizeof(int) * (size_t)n1)};
    for (int w = 0; w < nworks; w++) {
        r.perm[w] = w;
        sender[w] = round[w] = -1;
    }
    while (r.nopen > 0) {
        double best_std = 0;
        best.n = 0;
        mark_receivers(&r);
        for (int k = 0; k < trials; k++) {
            one_trial(&r, &cur);
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
        for (int i = 0; i < r.nopen; i++)
            if (round[r.perm[i]] < 0)
                r.perm[k++] = r.perm[i];
        r.nopen = k;
        nrounds++;
    }
    free(load);
    free(scratch);
    free(r.used);
    free(r.receiver);
    free(r.perm);
    free(r.weight);
    free(cur.works);
    free(cur.senders);
    free(best.works);
    free(best.senders);
    return nrounds;
}
