/* The local descent of the meshcast plan (mc_plan_descend): a rounded split leaves whole units on
 * slow deep trees, so one unit at a time moves from the slowest tree to the candidate of its piece
 * that lowers the estimate most. The trees' times and the links' loads stand in two indexed heaps
 * (util/maxheap.h), so that a move re-keys only what it touches: scans of every tree and link per
 * move were half the synthesis of an uneven 16 MiB all-to-all over six MI250 hosts under leaves
 * (perf). A probe of one move reads the loads without changing them: the slowest tree's links,
 * ranked once by their load without its unit, give the busiest of them the other tree does not
 * cross (moving the unit there and back, every link of both trees twice a probe, was 0.42 s of
 * the 2.2 s synthesis of a 64-GPU all-gather over eight H100 hosts under spines, perf). */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"
#include "util/maxheap.h"

/* A link and its load. */
typedef struct ranked {
    int64_t v;
    int id;
} ranked_t;

/* Largest first. */
static int cmp_ranked(const void *a, const void *b)
{
    int64_t x = ((const ranked_t *)a)->v, y = ((const ranked_t *)b)->v;
    return (x < y) - (x > y);
}

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

/* How many of the n values v[], largest first, exceed x. */
static int count_above(const int64_t *v, int n, int64_t x)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (v[mid] > x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* In the n values v[], largest first, one that equals from becomes to, in its place. */
static void replace_sorted(int64_t *v, int n, int64_t from, int64_t to)
{
    int at = count_above(v, n, from); /* the first of the values equal to from */
    if (to > from) {
        int k = count_above(v, n, to);
        memmove(v + k + 1, v + k, sizeof(int64_t) * (size_t)(at - k));
        v[k] = to;
    } else if (to < from) {
        int k = count_above(v, n, to) - 1; /* the last place that stays above to, less from's */
        memmove(v + at, v + at + 1, sizeof(int64_t) * (size_t)(k - at));
        v[k] = to;
    }
}

/* The descent's state: the solution's link loads (ps), the heaps of those loads and of the trees'
 * times (-1 for a tree without units: below every tree that has some), and scratch. */
typedef struct descent {
    const mc_plan_t *pl;
    mc_plan_sol_t *sol;
    int64_t *load;
    mc_maxheap_t links, trees;
    int *found;        /* mc_maxheap_above's output */
    char *crossed;     /* [l]: the slowest tree, or the tree probed, crosses l (cleared again) */
    int64_t *off;      /* [l]: what a unit of the slowest tree adds to l (0 off its links) */
    ranked_t *without; /* the slowest tree's links by their load without its unit, largest first */
    int64_t *times;    /* the trees' times (the tree heap's keys), largest first */
    int64_t *sum;      /* [k]: the first k of times summed, up to probe_t's nover */
} descent_t;

static int64_t tree_key(const descent_t *d, int c)
{
    return d->sol->units[c] > 0 ? mc_pcand_ps(&d->pl->cands[c], d->sol->units[c]) : -1;
}

/* The slowest tree (-1 for none) and how far the trees' times exceed the busiest link, summed:
 * the second key of the descent, which falls when one of several equally slow trees speeds up.
 * Equal times: the first tree, as a scan in order would keep. */
static int slowest_tree(const descent_t *d, int64_t *excess)
{
    int top = mc_maxheap_top(&d->links);
    int64_t lmax = top >= 0 && d->links.key[top] > 0 ? d->links.key[top] : 0;
    int n = mc_maxheap_above(&d->trees, lmax, d->found);
    *excess = 0;
    for (int i = 0; i < n; i++)
        *excess += d->trees.key[d->found[i]] - lmax;
    int slow = mc_maxheap_top(&d->trees);
    return slow >= 0 && d->trees.key[slow] >= 0 ? slow : -1;
}

/* Moves one unit of candidate from to candidate to, with their link loads (not the heaps). */
static void move_unit(const mc_plan_t *pl, mc_plan_sol_t *s, int64_t *load, int from, int to)
{
    const mc_pcand_t *a = &pl->cands[from], *b = &pl->cands[to];
    s->units[from]--;
    s->units[to]++;
    for (int i = 0; i < a->nlinks; i++)
        load[a->links[i]] -= a->link_ps[i];
    for (int i = 0; i < b->nlinks; i++)
        load[b->links[i]] += b->link_ps[i];
}

/* The heaps and the times take tree c's new time and its links' new loads. */
static void rekey(descent_t *d, int c)
{
    const mc_pcand_t *pc = &d->pl->cands[c];
    for (int i = 0; i < pc->nlinks; i++)
        mc_maxheap_set(&d->links, pc->links[i], d->load[pc->links[i]]);
    int64_t t = tree_key(d, c);
    replace_sorted(d->times, d->pl->ncands, d->trees.key[c], t);
    mc_maxheap_set(&d->trees, c, t);
}

/* What the moves off one slowest tree leave unchanged, taken once for all of them: the busiest
 * link that tree does not cross (a move raises only the loads of the other tree's links), the
 * three slowest trees (two are moved), and the trees that carry units slower than that link, with
 * their times: no other tree can exceed the busiest link after a move. */
typedef struct probe {
    int64_t rest;      /* the busiest link off slow's, 0 for none */
    int64_t top[3];    /* the slowest trees' times, slowest first */
    int top_c[3];      /* and the trees, -1 for none */
    int nover;         /* how many trees carry units slower than rest: the first of the
                        * descent's times (no probe changes them), summed in its sum */
} probe_t;

/* Takes pr for the moves off slow (probe_drop undoes what it marks). */
static void probe_take(descent_t *d, int slow, probe_t *pr)
{
    const mc_pcand_t *ps = &d->pl->cands[slow];
    for (int i = 0; i < ps->nlinks; i++)
        d->crossed[ps->links[i]] = 1;
    pr->rest = mc_maxheap_max_unmarked(&d->links, d->crossed, 0);
    for (int i = 0; i < ps->nlinks; i++)
        d->crossed[ps->links[i]] = 0;
    for (int i = 0; i < ps->nlinks; i++) {
        int l = ps->links[i];
        d->off[l] = ps->link_ps[i];
        d->without[i] = (ranked_t){d->load[l] - ps->link_ps[i], l};
    }
    mc_sort(d->without, (size_t)ps->nlinks, sizeof(ranked_t), cmp_ranked);
    pr->nover = count_above(d->times, d->pl->ncands, pr->rest);
    d->sum[0] = 0;
    for (int i = 0; i < pr->nover; i++)
        d->sum[i + 1] = d->sum[i] + d->times[i];
    int top[3], n = mc_maxheap_largest(&d->trees, 3, top);
    for (int i = 0; i < 3; i++) {
        int used = i < n && d->trees.key[top[i]] >= 0;
        pr->top_c[i] = used ? top[i] : -1;
        pr->top[i] = used ? d->trees.key[top[i]] : 0;
    }
}

static void probe_drop(descent_t *d, int slow)
{
    const mc_pcand_t *ps = &d->pl->cands[slow];
    for (int i = 0; i < ps->nlinks; i++)
        d->off[ps->links[i]] = 0;
}

/* How far the trees slower than lmax (at least pr->rest) exceed it, summed. */
static int64_t over_excess(const descent_t *d, const probe_t *pr, int64_t lmax)
{
    int k = count_above(d->times, pr->nover, lmax);
    return d->sum[k] - (int64_t)k * lmax;
}

/* Were a unit moved from slow to d (pr taken before): the phase's time and slowest_tree's
 * excess. The busiest link after the move: the busiest off slow's (rest), each of d's links with
 * d's unit on and slow's off, and the first of slow's links by load without its unit that d
 * does not cross. */
static int64_t probe_moved(const descent_t *dt, const probe_t *pr, int slow, int d,
                           int64_t *excess)
{
    const mc_pcand_t *a = &dt->pl->cands[slow], *b = &dt->pl->cands[d];
    const int64_t *load = dt->load, *time = dt->trees.key;
    const int *units = dt->sol->units;
    int64_t lmax = pr->rest, t;
    for (int i = 0; i < b->nlinks; i++) {
        int l = b->links[i];
        int64_t v = load[l] + b->link_ps[i] - dt->off[l];
        dt->crossed[l] = 1;
        lmax = v > lmax ? v : lmax;
    }
    for (int i = 0; i < a->nlinks; i++)
        if (!dt->crossed[dt->without[i].id]) {
            lmax = dt->without[i].v > lmax ? dt->without[i].v : lmax;
            break;
        }
    for (int i = 0; i < b->nlinks; i++)
        dt->crossed[b->links[i]] = 0;
    t = lmax;
    for (int i = 0; i < 3 && pr->top_c[i] >= 0; i++)
        if (pr->top_c[i] != slow && pr->top_c[i] != d) {
            t = pr->top[i] > t ? pr->top[i] : t;
            break;
        }
    /* the others' excess: every tree's above lmax but slow's and d's, whose times change */
    *excess = over_excess(dt, pr, lmax);
    for (int i = 0; i < 2; i++) {
        int64_t ti = time[i ? d : slow];
        *excess -= ti > lmax ? ti - lmax : 0;
    }
    int64_t ta = mc_pcand_ps(a, units[slow] - 1), tb = mc_pcand_ps(b, units[d] + 1);
    *excess += (ta > lmax ? ta - lmax : 0) + (tb > lmax ? tb - lmax : 0);
    t = ta > t ? ta : t;
    return tb > t ? tb : t;
}

void mc_plan_descend(const mc_plan_t *pl, mc_plan_sol_t *sol)
{
    if (sol->nphases != 1 || mc_plan_check(pl, sol) != 0)
        return;
    descent_t d = {.pl = pl, .sol = sol,
                   .load = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int64_t)),
                   .found = mc_xmalloc(sizeof(int) * (size_t)(pl->ncands + 1)),
                   .crossed = mc_xcalloc((size_t)pl->nlinks + 1, 1),
                   .off = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int64_t)),
                   .without = mc_xmalloc(sizeof(ranked_t) * (size_t)(pl->nlinks + 1)),
                   .times = mc_xmalloc(sizeof(int64_t) * ((size_t)pl->ncands + 1)),
                   .sum = mc_xmalloc(sizeof(int64_t) * ((size_t)pl->ncands + 2))};
    probe_t pr;
    int64_t *key = mc_xmalloc(sizeof(int64_t) * (size_t)(pl->ncands + 1));
    for (int c = 0; c < pl->ncands; c++) {
        for (int i = 0; i < pl->cands[c].nlinks; i++)
            d.load[pl->cands[c].links[i]] += sol->units[c] * pl->cands[c].link_ps[i];
        key[c] = tree_key(&d, c);
    }
    mc_maxheap_init(&d.links, pl->nlinks, d.load);
    mc_maxheap_init(&d.trees, pl->ncands, key);
    memcpy(d.times, key, sizeof(int64_t) * (size_t)pl->ncands);
    mc_sort(d.times, (size_t)pl->ncands, sizeof(int64_t), cmp_desc);
    free(key);
    int64_t t = mc_plan_phase_ps(pl, sol, 0), excess;
    for (int slow = slowest_tree(&d, &excess); slow >= 0;) {
        int p = pl->cands[slow].piece, best = -1, first = slow, end = slow + 1;
        int64_t best_t = t, best_excess = excess;
        probe_take(&d, slow, &pr);
        /* the piece's candidates (the plan groups them by piece) */
        while (first > 0 && pl->cands[first - 1].piece == p)
            first--;
        while (end < pl->ncands && pl->cands[end].piece == p)
            end++;
        for (int c = first; c < end; c++) {
            if (c == slow)
                continue;
            int64_t e, tc = probe_moved(&d, &pr, slow, c, &e);
            if (tc < best_t || (tc == best_t && e < best_excess)) {
                best = c;
                best_t = tc;
                best_excess = e;
            }
        }
        probe_drop(&d, slow);
        if (best < 0)
            break;
        move_unit(pl, sol, d.load, slow, best);
        rekey(&d, slow);
        rekey(&d, best);
        t = best_t;
        slow = slowest_tree(&d, &excess);
    }
    mc_maxheap_free(&d.links);
    mc_maxheap_free(&d.trees);
    free(d.load);
    free(d.found);
    free(d.crossed);
    free(d.off);
    free(d.without);
    free(d.times);
    free(d.sum);
    mc_plan_check(pl, sol);
}
