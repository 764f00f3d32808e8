/* The local descent of the meshcast plan (mc_plan_descend): a rounded split leaves whole units on
 * slow deep trees, so one unit at a time moves from the slowest tree to the candidate of its piece
 * that lowers the estimate most. The trees' times and the links' loads stand in two indexed heaps
 * (util/maxheap.h), so that a move re-keys only what it touches: scans of every tree and link per
 * move were half the synthesis of an uneven 16 MiB all-to-all over six MI250 hosts under leaves
 * (perf). */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"
#include "util/maxheap.h"

/* The descent's state: the solution's link loads (ps), the heaps of those loads and of the trees'
 * times (-1 for a tree without units: below every tree that has some), and scratch. */
typedef struct descent {
    const mc_plan_t *pl;
    mc_plan_sol_t *sol;
    int64_t *load;
    mc_maxheap_t links, trees;
    int *found;        /* mc_maxheap_above's output */
    char *crossed;     /* [l]: the slowest tree crosses l (cleared again) */
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

/* The heaps take tree c's new time and its links' new loads. */
static void rekey(descent_t *d, int c)
{
    const mc_pcand_t *pc = &d->pl->cands[c];
    for (int i = 0; i < pc->nlinks; i++)
        mc_maxheap_set(&d->links, pc->links[i], d->load[pc->links[i]]);
    mc_maxheap_set(&d->trees, c, tree_key(d, c));
}

/* What the moves off one slowest tree leave unchanged, taken once for all of them: the busiest
 * link that tree does not cross (a move raises only the loads of the other tree's links), the
 * three slowest trees (two are moved), and the trees that carry units slower than that link, with
 * their times: no other tree can exceed the busiest link after a move. */
typedef struct probe {
    int64_t rest;      /* the busiest link off slow's, 0 for none */
    int64_t top[3];    /* the slowest trees' times, slowest first */
    int top_c[3];      /* and the trees, -1 for none */
    const int *over;   /* the trees with units slower than rest (their times: the tree heap's
                        * keys, which no probe changes) */
    int nover;
} probe_t;

static void probe_take(descent_t *d, int slow, probe_t *pr)
{
    const mc_pcand_t *ps = &d->pl->cands[slow];
    for (int i = 0; i < ps->nlinks; i++)
        d->crossed[ps->links[i]] = 1;
    pr->rest = mc_maxheap_max_unmarked(&d->links, d->crossed, 0);
    for (int i = 0; i < ps->nlinks; i++)
        d->crossed[ps->links[i]] = 0;
    pr->nover = mc_maxheap_above(&d->trees, pr->rest, d->found);
    pr->over = d->found;
    int top[3], n = mc_maxheap_largest(&d->trees, 3, top);
    for (int i = 0; i < 3; i++) {
        int used = i < n && d->trees.key[top[i]] >= 0;
        pr->top_c[i] = used ? top[i] : -1;
        pr->top[i] = used ? d->trees.key[top[i]] : 0;
    }
}

/* After a unit moved from slow to d (pr taken before): the phase's time and slowest_tree's
 * excess. */
static int64_t probe_moved(const descent_t *dt, const probe_t *pr, int slow, int d,
                           int64_t *excess)
{
    const mc_pcand_t *a = &dt->pl->cands[slow], *b = &dt->pl->cands[d];
    const int64_t *load = dt->load, *time = dt->trees.key;
    const int *units = dt->sol->units;
    int64_t lmax = pr->rest, t;
    for (int i = 0; i < a->nlinks; i++)
        lmax = load[a->links[i]] > lmax ? load[a->links[i]] : lmax;
    for (int i = 0; i < b->nlinks; i++)
        lmax = load[b->links[i]] > lmax ? load[b->links[i]] : lmax;
    t = lmax;
    for (int i = 0; i < 3 && pr->top_c[i] >= 0; i++)
        if (pr->top_c[i] != slow && pr->top_c[i] != d) {
            t = pr->top[i] > t ? pr->top[i] : t;
            break;
        }
    *excess = 0;
    for (int i = 0; i < pr->nover; i++) {
        int c = pr->over[i];
        if (c != slow && c != d && time[c] > lmax)
            *excess += time[c] - lmax;
    }
    int64_t ta = mc_pcand_ps(a, units[slow]), tb = mc_pcand_ps(b, units[d]);
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
                   .crossed = mc_xcalloc((size_t)pl->nlinks + 1, 1)};
    probe_t pr;
    int64_t *key = mc_xmalloc(sizeof(int64_t) * (size_t)(pl->ncands + 1));
    for (int c = 0; c < pl->ncands; c++) {
        for (int i = 0; i < pl->cands[c].nlinks; i++)
            d.load[pl->cands[c].links[i]] += sol->units[c] * pl->cands[c].link_ps[i];
        key[c] = tree_key(&d, c);
    }
    mc_maxheap_init(&d.links, pl->nlinks, d.load);
    mc_maxheap_init(&d.trees, pl->ncands, key);
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
            int64_t e;
            move_unit(pl, sol, d.load, slow, c);
            int64_t tc = probe_moved(&d, &pr, slow, c, &e);
            if (tc < best_t || (tc == best_t && e < best_excess)) {
                best = c;
                best_t = tc;
                best_excess = e;
            }
            move_unit(pl, sol, d.load, c, slow);
        }
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
    mc_plan_check(pl, sol);
}
