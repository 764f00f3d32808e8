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

/* mc_plan_shared_ps with scratch room for 2 * pc->nedges doubles. */
static int64_t tree_ps(const mc_pcand_t *pc, const int64_t *load, double *pace)
{
    int64_t busiest = 0;
    for (int i = 0; i < pc->nlinks; i++)
        busiest = load[pc->links[i]] > busiest ? load[pc->links[i]] : busiest;
    if (pc->nedges == 0)
        return busiest + pc->fixed_ps;
    double *at = pace + pc->nedges;
    for (int e = 0; e < pc->nedges; e++) {
        pace[e] = 0;
        for (int i = pc->edge_at[e]; i < pc->edge_at[e + 1]; i++)
            pace[e] = (double)load[pc->edge_links[i]] > pace[e] ? (double)load[pc->edge_links[i]]
                                                                : pace[e];
    }
    /* t(n) ~ first + A/n + (n - 1) hop: a fill falling as 1/n and an overhead growing with n,
     * convex; least near sqrt(A / hop), with A the paces down the slowest path less the slowest
     * edge's and hop that edge's overhead; walked from there to the least */
    double a = 0, slow = 0, hop = 0;
    for (int e = 0; e < pc->nedges; e++) {
        at[e] = pace[e] + (pc->edge_up[e] >= 0 ? at[pc->edge_up[e]] : 0);
        a = at[e] > a ? at[e] : a;
        if (pace[e] > slow) {
            slow = pace[e];
            hop = (double)pc->edge_hop_ps[e];
        }
    }
    double guess = hop > 0 ? sqrt((a - slow) / hop) : MC_CHUNKS_MAX;
    int n = guess < 1 ? 1 : guess > MC_CHUNKS_MAX ? MC_CHUNKS_MAX : (int)guess;
    double best = pipelined(pc, pace, n, at);
    for (int dir = 1; dir >= -1; dir -= 2)
        for (int m = n + dir; m >= 1 && m <= MC_CHUNKS_MAX; m += dir) {
            double t = pipelined(pc, pace, m, at);
            if (t >= best)
                break;
            best = t;
            n = m;
        }
    return (int64_t)best;
}

int64_t mc_plan_shared_ps(const mc_pcand_t *pc, const int64_t *load)
{
    double *scratch = mc_xmalloc(sizeof(double) * (size_t)(2 * pc->nedges + 1));
    int64_t t = tree_ps(pc, load, scratch);
    free(scratch);
    return t;
}

/* The links' loads of a one-phase solution into load[0..nlinks). */
static void loads(const mc_plan_t *pl, const int *units, int64_t *load)
{
    memset(load, 0, sizeof(int64_t) * (size_t)(pl->nlinks + 1));
    for (int c = 0; c < pl->ncands; c++)
        for (int i = 0; i < pl->cands[c].nlinks && units[c] > 0; i++)
            load[pl->cands[c].links[i]] += units[c] * pl->cands[c].link_ps[i];
}

/* The descent's state: the solution's units and link loads, each tree's time at shared pace as
 * last computed (time[]), and per link the candidates that cross it (users[user_at[l] ..
 * user_at[l + 1])), so that a move re-times only the trees on the links it changes. The moves
 * tried from one slowest tree see only the trees that carry units when they begin (active[],
 * and per link those of them, ausers[auser_at[l] .. auser_at[l + 1])): the estimate scanned
 * every candidate, and a link's users were most of them (43,712 candidates on 688 links in an
 * all-to-all over 64 GPUs, most of them carrying nothing). */
typedef struct state {
    const mc_plan_t *pl;
    int *u;
    int64_t *load, *time;
    int *user_at, *users;
    int *auser_at, *ausers, *active, nactive;
    int *mark, stamp;    /* mark[c] == stamp: c crosses a link the move changed */
    double *scratch;
    int64_t work;        /* trees re-timed, each counted as its links and edges */
} state_t;

/* Per link l, the candidates with units (every one where units is NULL) that cross it:
 * users[at[l] .. at[l + 1]) (at: nlinks + 2 ints); those candidates into list[] (NULL: not
 * kept), their count returned. */
static int index_users(const mc_plan_t *pl, const int *units, int *at, int *users, int *list)
{
    int n = 0;
    memset(at, 0, sizeof(int) * (size_t)(pl->nlinks + 2));
    for (int c = 0; c < pl->ncands; c++) {
        if (units && units[c] <= 0)
            continue;
        if (list)
            list[n] = c;
        n++;
        for (int i = 0; i < pl->cands[c].nlinks; i++)
            at[pl->cands[c].links[i] + 2]++;
    }
    for (int l = 0; l < pl->nlinks; l++)
        at[l + 2] += at[l + 1];
    for (int c = 0; c < pl->ncands; c++)
        for (int i = 0; i < pl->cands[c].nlinks && (!units || units[c] > 0); i++)
            users[at[pl->cands[c].links[i] + 1]++] = c;
    return n;
}

static void state_init(state_t *st, const mc_plan_t *pl, int *units)
{
    int most = 1, n = 0;
    memset(st, 0, sizeof(*st));
    st->pl = pl;
    st->u = units;
    st->load = mc_xmalloc(sizeof(int64_t) * (size_t)(pl->nlinks + 1));
    st->time = mc_xcalloc((size_t)pl->ncands + 1, sizeof(int64_t));
    st->mark = mc_xcalloc((size_t)pl->ncands + 1, sizeof(int));
    for (int c = 0; c < pl->ncands; c++) {
        most = pl->cands[c].nedges > most ? pl->cands[c].nedges : most;
        n += pl->cands[c].nlinks;
    }
    st->user_at = mc_xmalloc(sizeof(int) * (size_t)(pl->nlinks + 2));
    st->users = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    index_users(pl, NULL, st->user_at, st->users, NULL);
    st->auser_at = mc_xmalloc(sizeof(int) * (size_t)(pl->nlinks + 2));
    st->ausers = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    st->active = mc_xmalloc(sizeof(int) * (size_t)(pl->ncands + 1));
    st->scratch = mc_xmalloc(sizeof(double) * (size_t)(2 * most));
    loads(pl, units, st->load);
    for (int c = 0; c < pl->ncands; c++)
        st->time[c] = units[c] > 0 ? tree_ps(&pl->cands[c], st->load, st->scratch) : 0;
}

static void state_free(state_t *st)
{
    free(st->load);
    free(st->time);
    free(st->mark);
    free(st->user_at);
    free(st->users);
    free(st->auser_at);
    free(st->ausers);
    free(st->active);
    free(st->scratch);
}

/* Marks the candidates that cross a link of candidate c, of those indexed in at, users. */
static void mark_users(state_t *st, const int *at, const int *users, int c)
{
    const mc_pcand_t *pc = &st->pl->cands[c];
    for (int i = 0; i < pc->nlinks; i++)
        for (int j = at[pc->links[i]]; j < at[pc->links[i] + 1]; j++)
            st->mark[users[j]] = st->stamp;
}

/* The estimate at the current loads, the marked trees re-timed (into time[] when keep); *slow
 * gets the slowest tree (-1: a link is slower than every tree) and *excess what the trees' times
 * exceed the busiest link by, summed (the descent's second key: it falls when one of several
 * equally slow trees speeds up). */
static int64_t estimate(state_t *st, int keep, int *slow, int64_t *excess)
{
    const mc_plan_t *pl = st->pl;
    int64_t lmax = 0, t;
    for (int l = 0; l < pl->nlinks; l++)
        lmax = st->load[l] > lmax ? st->load[l] : lmax;
    *slow = -1;
    *excess = 0;
    t = lmax;
    for (int c = 0; c < pl->ncands; c++) {
        int64_t tc = st->time[c];
        if (st->mark[c] == st->stamp && st->u[c] > 0) {
            tc = tree_ps(&pl->cands[c], st->load, st->scratch);
            st->work += pl->cands[c].nlinks + pl->cands[c].nedges;
        } else if (st->mark[c] == st->stamp) {
            tc = 0;
        }
        if (keep)
            st->time[c] = tc;
        if (st->u[c] <= 0)
            continue;
        *excess += tc > lmax ? tc - lmax : 0;
        if (tc > t) {
            t = tc;
            *slow = c;
        }
    }
    return t;
}

/* Moves one unit from candidate a to candidate b, with the loads. */
static void move(state_t *st, int a, int b)
{
    const mc_plan_t *pl = st->pl;
    st->u[a]--;
    st->u[b]++;
    for (int i = 0; i < pl->cands[a].nlinks; i++)
        st->load[pl->cands[a].links[i]] -= pl->cands[a].link_ps[i];
    for (int i = 0; i < pl->cands[b].nlinks; i++)
        st->load[pl->cands[b].links[i]] += pl->cands[b].link_ps[i];
}

/* move, and marks the trees whose time it may change. */
static void shift(state_t *st, int a, int b)
{
    move(st, a, b);
    st->stamp++;
    mark_users(st, st->user_at, st->users, a);
    mark_users(st, st->user_at, st->users, b);
}

/* The estimate and its excess (as estimate's) with one unit moved from a to b, tried: the trees
 * with units are the active ones (a among them) and b, and only they are marked (b by its own
 * links: a tree with none is re-timed nowhere). */
static int64_t try_move(state_t *st, int a, int b, int64_t *excess)
{
    const mc_plan_t *pl = st->pl;
    int fresh = st->u[b] <= 0;
    move(st, a, b);
    st->stamp++;
    mark_users(st, st->auser_at, st->ausers, a);
    mark_users(st, st->auser_at, st->ausers, b);
    if (pl->cands[b].nlinks > 0)
        st->mark[b] = st->stamp;
    int64_t lmax = 0, t;
    for (int l = 0; l < pl->nlinks; l++)
        lmax = st->load[l] > lmax ? st->load[l] : lmax;
    t = lmax;
    *excess = 0;
    for (int j = 0; j < st->nactive + fresh; j++) {
        int c = j < st->nactive ? st->active[j] : b;
        int64_t tc = st->time[c];
        if (st->u[c] <= 0)
            continue;
        if (st->mark[c] == st->stamp) {
            tc = tree_ps(&pl->cands[c], st->load, st->scratch);
            st->work += pl->cands[c].nlinks + pl->cands[c].nedges;
        }
        *excess += tc > lmax ? tc - lmax : 0;
        t = tc > t ? tc : t;
    }
    move(st, b, a);
    return t;
}

int64_t mc_plan_shared_est(const mc_plan_t *pl, const mc_plan_sol_t *sol)
{
    state_t st;
    int64_t excess;
    int slow;
    state_init(&st, pl, sol->units);
    int64_t t = estimate(&st, 0, &slow, &excess);
    state_free(&st);
    return t;
}

int64_t mc_plan_descend_shared(const mc_plan_t *pl, mc_plan_sol_t *sol, int64_t *work_left)
{
    if (sol->nphases != 1 || mc_plan_check(pl, sol) != 0)
        return -1;
    state_t st;
    int64_t excess;
    int slow;
    state_init(&st, pl, sol->units);
    int64_t t = estimate(&st, 0, &slow, &excess);
    while (slow >= 0 && st.work < *work_left) {
        int best = -1, from = slow;
        int64_t best_t = t, best_excess = excess;
        st.nactive = index_users(pl, st.u, st.auser_at, st.ausers, st.active);
        for (int d = 0; d < pl->ncands; d++) {
            if (d == from || pl->cands[d].piece != pl->cands[from].piece)
                continue;
            int64_t e, td = try_move(&st, from, d, &e);
            if (td < best_t || (td == best_t && e < best_excess)) {
                best = d;
                best_t = td;
                best_excess = e;
            }
        }
        if (best < 0)
            break;
        shift(&st, from, best);
        t = estimate(&st, 1, &slow, &excess);
    }
    *work_left -= st.work < *work_left ? st.work : *work_left;
    state_free(&st);
    mc_plan_check(pl, sol);
    return t;
}
