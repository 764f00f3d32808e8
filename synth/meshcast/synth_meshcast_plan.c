/* The abstract plan of the meshcast strategy: its cost model (a phase lasts as long as its
 * slowest tree or its busiest shared link), the feasibility check every solution passes before
 * it is decoded, and the greedy seed that is also the fallback when Z3 finds nothing better. */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

void mc_plan_free(mc_plan_t *pl)
{
    for (int c = 0; c < pl->ncands; c++) {
        free(pl->cands[c].links);
        free(pl->cands[c].link_ps);
        free(pl->cands[c].edge_up);
        free(pl->cands[c].edge_hop_ps);
        free(pl->cands[c].edge_at);
        free(pl->cands[c].edge_links);
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

void mc_plan_sol_copy(const mc_plan_t *pl, const mc_plan_sol_t *src, mc_plan_sol_t *dst)
{
    size_t n = (size_t)pl->ncands * (size_t)(src->nphases > 0 ? src->nphases : 1);
    dst->nphases = src->nphases;
    dst->units = mc_xmalloc(sizeof(int) * n);
    memcpy(dst->units, src->units, sizeof(int) * n);
    dst->est_ps = src->est_ps;
}

/* Phase k's time given its link loads (load[0..nlinks)): the slowest tree or the busiest link. */
static int64_t phase_ps_at(const mc_plan_t *pl, const mc_plan_sol_t *s, int k, const int64_t *load)
{
    int64_t t = 0;
    for (int c = 0; c < pl->ncands; c++) {
        int64_t tc = mc_pcand_ps(&pl->cands[c], s->units[c * s->nphases + k]);
        if (tc > t)
            t = tc;
    }
    for (int l = 0; l < pl->nlinks; l++)
        if (load[l] > t)
            t = load[l];
    return t;
}

int64_t mc_plan_phase_ps(const mc_plan_t *pl, const mc_plan_sol_t *s, int k)
{
    int64_t *load = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int64_t));
    for (int c = 0; c < pl->ncands; c++) {
        int u = s->units[c * s->nphases + k];
        const mc_pcand_t *pc = &pl->cands[c];
        for (int i = 0; i < pc->nlinks && u > 0; i++)
            load[pc->links[i]] += u * pc->link_ps[i];
    }
    int64_t t = phase_ps_at(pl, s, k, load);
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
        for (int l = 0; l < pl->nlinks; l++)
            users[l] = 0;
        for (; c < pl->ncands && pl->cands[c].piece == p; c++, n++) {
            const mc_pcand_t *pc = &pl->cands[c];
            for (int i = 0; i < pc->nlinks; i++) {
                int l = pc->links[i];
                if (!users[l] || pc->link_ps[i] < least[l])
                    least[l] = pc->link_ps[i];
                users[l]++;
            }
        }
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

/* A phase with its time, sorted slowest first, then by phase (no shared state: the two greedy
 * seeds compact their plans at once, synth_meshcast_solve.c). */
typedef struct phase_time {
    int64_t time;
    int k;
} phase_time_t;

static int cmp_phase(const void *a, const void *b)
{
    const phase_time_t *x = a, *y = b;
    if (x->time != y->time)
        return x->time > y->time ? -1 : 1;
    return x->k - y->k;
}

void mc_plan_sol_compact(const mc_plan_t *pl, mc_plan_sol_t *s)
{
    int K = s->nphases;
    phase_time_t *order = mc_xmalloc(sizeof(phase_time_t) * (size_t)(K + 1));
    int n = 0;
    for (int k = 0; k < K; k++) {
        int any = 0;
        for (int c = 0; c < pl->ncands && !any; c++)
            any = s->units[c * K + k] > 0;
        if (any)
            order[n++] = (phase_time_t){mc_plan_phase_ps(pl, s, k), k};
    }
    mc_sort(order, (size_t)n, sizeof(phase_time_t), cmp_phase);
    int *units = mc_xcalloc((size_t)pl->ncands * (size_t)(n > 0 ? n : 1), sizeof(int));
    for (int c = 0; c < pl->ncands; c++)
        for (int j = 0; j < n; j++)
            units[c * n + j] = s->units[c * K + order[j].k];
    free(s->units);
    s->units = units;
    s->nphases = n;
    free(order);
}

/* Phases the greedy seed may open: trees share links at planned rates, so a new phase only pays
 * when a tree's fixed cost is worth keeping apart. */
#define MC_GREEDY_PHASES 4

/* A candidate's rank in a phase: what ranks_before compares (its growth of the phase, its local
 * where the tie-break reads it, whether it does not run there yet) and the candidate, in order:
 * the least key ranks first (before). */
typedef struct rank_key {
    int64_t inc, local;
    uint64_t unused_c; /* 1 << 32 where the candidate does not run there, plus c - first */
} rank_key_t;

typedef struct fill {
    const mc_plan_t *pl;
    mc_plan_sol_t *out;
    int K, nopen;
    int balance;    /* break ties by the load of the candidate's own links */
    int64_t *load;  /* [k * nlinks + l] */
    int64_t *phase; /* [k] */
    int *at_phase;  /* [k]: trees and links of phase k as slow as the phase (0 when it is empty) */
    int64_t *local; /* [(c - first) * K + k]: with_unit of the piece being placed, -1: unknown */
    int most;       /* the most candidates of a piece */
    int *order;     /* [k * most + j]: the piece's candidates (c - first) as they rank in phase k */
    int *ranked;    /* [k]: whether order of phase k is kept (settle_first) */
    rank_key_t *key; /* [k * most + j]: candidate j's (c - first) in phase k as last taken */
    char *stale;     /* [k * most + j]: whether candidate j's key in phase k changed since */
    /* the piece being placed, per plan link: its candidates that cross it (c - first), and their
     * time per unit on it (users, user_ps, from at[l], n_at[l] of them; at -1: none) */
    int *at, *n_at, *users, *used_links, nused_links;
    int64_t *user_ps;
    /* [k * nlinks + l]: how far link l's load in phase k may still grow before the local of a
     * candidate of the piece that crosses l grows with it (at most that: kept by subtracting what
     * the load grew), -1: unknown */
    int64_t *slack;
} fill_t;

/* Tree time or link load going from before to after in phase k: keeps at_phase[k] counting the
 * items that set the phase's time. */
static void track(fill_t *f, int k, int64_t before, int64_t after)
{
    if (f->phase[k] <= 0)
        return;
    f->at_phase[k] += (after == f->phase[k]) - (before == f->phase[k]);
}

/* Phase k's time and its count of items that set it, from a full scan. */
static void rescan(fill_t *f, int k, const int64_t *load)
{
    int64_t t = phase_ps_at(f->pl, f->out, k, load);
    int n = 0;
    for (int c = 0; c < f->pl->ncands && t > 0; c++)
        n += mc_pcand_ps(&f->pl->cands[c], f->out->units[c * f->K + k]) == t;
    for (int l = 0; l < f->pl->nlinks && t > 0; l++)
        n += load[l] == t;
    f->phase[k] = t;
    f->at_phase[k] = n;
}

/* Candidate c's time in phase k if it took one more unit there, without the phase's other trees
 * and links: the busiest of c's own links, or c's own time. */
static int64_t with_unit(const fill_t *f, int c, int k)
{
    const mc_pcand_t *pc = &f->pl->cands[c];
    int64_t t = (f->out->units[c * f->K + k] + 1) * pc->unit_ps + pc->fixed_ps;
    for (int i = 0; i < pc->nlinks; i++) {
        int64_t l = f->load[(size_t)k * (size_t)f->pl->nlinks + (size_t)pc->links[i]] +
                    pc->link_ps[i];
        if (l > t)
            t = l;
    }
    return t;
}

/* Whether placing a unit on a tree whose time would be local (used: it runs already) grows
 * phase k by inc and ranks before one growing it by best_inc (best_local, best_used): least
 * growth; among equals, where its own links stay least loaded (so that links off the critical
 * path fill evenly and do not become the next critical one), then on a tree that already runs (no
 * new fixed cost). */
static int ranks_before(const fill_t *f, int64_t inc, int64_t local, int used, int64_t best_inc,
                        int64_t best_local, int best_used)
{
    return inc < best_inc || (inc == best_inc && f->balance && local < best_local) ||
           (inc == best_inc && (!f->balance || local == best_local) && used && !best_used);
}

/* How much candidate c (its place in local: i = c - first) grows phase k by taking a unit there,
 * with its time there (*local) and whether it runs there (*used). */
static inline int64_t growth(fill_t *f, int c, int i, int k, int64_t *local, int *used)
{
    int64_t *known = &f->local[(size_t)i * (size_t)f->K + (size_t)k];
    if (*known < 0)
        *known = with_unit(f, c, k);
    *local = *known;
    *used = f->out->units[c * f->K + k] > 0;
    return *local > f->phase[k] ? *local - f->phase[k] : 0;
}

/* Takes the key of the piece's candidate i (c - first) in phase k. */
static void take_key(fill_t *f, int first, int i, int k)
{
    rank_key_t *r = &f->key[(size_t)k * (size_t)f->most + (size_t)i];
    int64_t local;
    int used;
    r->inc = growth(f, first + i, i, k, &local, &used);
    r->local = f->balance ? local : 0;
    r->unused_c = ((uint64_t)!used << 32) | (uint64_t)i;
}

/* Whether the piece's candidate i (c - first) ranks before candidate j in phase k: it grows the
 * phase less (ranks_before: by inc, then local with balance, then a tree that runs first), or as
 * little and is the lower; by their keys, taken once per change (a comparison that took both
 * afresh was a quarter of the synthesis of an uneven all-to-all over eight DGX-1, 55 M calls). */
static inline int before(const fill_t *f, int k, int i, int j)
{
    const rank_key_t *a = &f->key[(size_t)k * (size_t)f->most + (size_t)i];
    const rank_key_t *b = &f->key[(size_t)k * (size_t)f->most + (size_t)j];
    return a->inc < b->inc ||
           (a->inc == b->inc &&
            (a->local < b->local || (a->local == b->local && a->unused_c < b->unused_c)));
}

/* Sorts the piece's candidates (first..end) as they rank in phase k. */
static void rank_phase(fill_t *f, int first, int end, int k)
{
    int *o = f->order + (size_t)k * (size_t)f->most;
    for (int n = 0; n < end - first; n++) {
        take_key(f, first, n, k);
        f->stale[(size_t)k * (size_t)f->most + (size_t)n] = 0;
    }
    for (int n = 0; n < end - first; n++) {
        int j = n;
        for (; j > 0 && before(f, k, n, o[j - 1]); j--)
            o[j] = o[j - 1];
        o[j] = n;
    }
    f->ranked[k] = 1;
}

/* Makes phase k's first candidate its true first. Phase k's order is sorted by the keys as last
 * taken, and while the phase's time stays, a placement there only raises the keys it changes
 * (a raised local, whose inc cannot fall), but the placed candidate's, which is first; those are
 * marked stale. So a kept key is never after the candidate's true one, and a first whose key is
 * current ranks before every other candidate's true key. A stale first takes its key again and
 * goes back to its rank among the others (bisection) until the first is current. A placement in
 * an uneven all-to-all over eight DGX-1 raised the keys of about 6 of a piece's 12 candidates on
 * nearly every unit (2.4 M sorts afresh, 55 M comparisons, a quarter of its synthesis); few of
 * them reach the front before the piece is placed. */
static void settle_first(fill_t *f, int first, int end, int k)
{
    int *o = f->order + (size_t)k * (size_t)f->most, n = end - first;
    char *stale = f->stale + (size_t)k * (size_t)f->most;
    while (stale[o[0]]) {
        int x = o[0], lo = 1, hi = n;
        take_key(f, first, x, k);
        stale[x] = 0;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (before(f, k, o[mid], x))
                lo = mid + 1;
            else
                hi = mid;
        }
        memmove(o, o + 1, sizeof(int) * (size_t)(lo - 1));
        o[lo - 1] = x;
    }
}

/* Places one unit of piece p where it grows the estimate least (ranks_before), among equals the
 * lowest candidate and phase. A placement changes only its own phase, and there only raises
 * keys unless the phase's time grew, so each phase's candidates are kept in rank (order, set right
 * at its front by settle_first): a scan of every candidate and phase per unit was a quarter of the
 * synthesis of an all-to-all over 64 GPUs (4,032 pieces). */
static void place_unit(fill_t *f, int first, int end)
{
    int best_c = -1, best_k = -1, best_used = 0;
    int64_t best_inc = 0, best_t = 0, best_local = 0;
    for (int k = 0; k <= f->nopen && k < f->K; k++) {
        if (!f->ranked[k])
            rank_phase(f, first, end, k);
        settle_first(f, first, end, k);
        int c = first + f->order[(size_t)k * (size_t)f->most];
        int used, i = c - first;
        int64_t local, inc = growth(f, c, i, k, &local, &used);
        if (best_c < 0 || ranks_before(f, inc, local, used, best_inc, best_local, best_used) ||
            (c < best_c &&
             !ranks_before(f, best_inc, best_local, best_used, inc, local, used))) {
            best_c = c;
            best_k = k;
            best_inc = inc;
            best_t = f->phase[k] + inc;
            best_local = local;
            best_used = used;
        }
    }
    const mc_pcand_t *pc = &f->pl->cands[best_c];
    int *u = &f->out->units[best_c * f->K + best_k];
    int64_t *load = f->load + (size_t)best_k * (size_t)f->pl->nlinks;
    if (best_t > f->phase[best_k]) {
        /* a new slowest: only this tree and its links can be as slow */
        f->phase[best_k] = best_t;
        f->at_phase[best_k] = 0;
        f->ranked[best_k] = 0;
    }
    track(f, best_k, mc_pcand_ps(pc, *u), mc_pcand_ps(pc, *u + 1));
    (*u)++;
    if (best_k == f->nopen)
        f->nopen++;
    /* Only phase best_k changed, and there only grew: best_c's own time and the loads of its
     * links. with_unit is a maximum over those terms, so each candidate's known one takes the
     * maximum with its terms that grew (the candidates crossing best_c's links, best_c's own
     * time), as computed afresh. Phase best_k was ranked, so all of its are known. */
    int64_t *col = f->local + (size_t)best_k, *mine = &col[(size_t)(best_c - first) * f->K];
    if (mc_pcand_ps(pc, *u + 1) > *mine)
        *mine = mc_pcand_ps(pc, *u + 1);
    int64_t *slack = f->slack + (size_t)best_k * (size_t)f->pl->nlinks;
    char *stale = f->stale + (size_t)best_k * (size_t)f->most;
    /* track's count, kept here: the phase's time does not change in this loop */
    int64_t time = f->phase[best_k];
    int at = 0;
    for (int i = 0; i < pc->nlinks; i++) {
        int l = pc->links[i];
        at += (load[l] + pc->link_ps[i] == time) - (load[l] == time);
        load[l] += pc->link_ps[i];
        if (slack[l] >= pc->link_ps[i]) {
            /* no candidate's local grows: of the 200 million users the scans visited in an
             * uneven all-to-all over 64 GPUs (a fifth of its synthesis), 4,352 grew */
            slack[l] -= pc->link_ps[i];
            continue;
        }
        slack[l] = INT64_MAX;
        for (int x = f->at[l], end_x = x + f->n_at[l]; x < end_x; x++) {
            int64_t *known = &col[(size_t)f->users[x] * (size_t)f->K], v = load[l] + f->user_ps[x];
            if (v > *known) {
                *known = v;
                stale[f->users[x]] = 1;
            }
            slack[l] = *known - v < slack[l] ? *known - v : slack[l];
        }
    }
    if (time > 0)
        f->at_phase[best_k] += at;
    stale[best_c - first] = 1;
}

/* Sets up f's users of the plan links for candidates first..end (the piece about to be placed). */
static void index_users(fill_t *f, int first, int end)
{
    const mc_plan_t *pl = f->pl;
    for (int i = 0; i < f->nused_links; i++) {
        f->at[f->used_links[i]] = -1;
        f->n_at[f->used_links[i]] = 0;
    }
    f->nused_links = 0;
    for (int c = first; c < end; c++)
        for (int i = 0; i < pl->cands[c].nlinks; i++) {
            int l = pl->cands[c].links[i];
            if (f->at[l] < 0) {
                f->at[l] = 0;
                f->used_links[f->nused_links++] = l;
                for (int k = 0; k < f->K; k++)
                    f->slack[(size_t)k * (size_t)pl->nlinks + (size_t)l] = -1;
            }
            f->n_at[l]++;
        }
    for (int i = 0, n = 0; i < f->nused_links; i++) {
        int l = f->used_links[i];
        f->at[l] = n;
        n += f->n_at[l];
        f->n_at[l] = 0;
    }
    for (int c = first; c < end; c++)
        for (int i = 0; i < pl->cands[c].nlinks; i++) {
            int l = pl->cands[c].links[i], x = f->at[l] + f->n_at[l]++;
            f->users[x] = c - first;
            f->user_ps[x] = pl->cands[c].link_ps[i];
        }
}

/* Takes piece p's units (candidates first..end) out of every phase. A phase's time is scanned
 * again only when nothing is left as slow as it was: at_phase counts what set it (a full scan per
 * piece and phase was most of the synthesis time on many-piece tasks, 4,032 pieces and 29,065
 * trees over 64 GPUs; a scan whenever a lifted tree or link had set the time still was, once
 * every tree of an all-to-all is equally slow). */
static void lift_piece(fill_t *f, int first, int end)
{
    for (int k = 0; k < f->K; k++) {
        int64_t *load = f->load + (size_t)k * (size_t)f->pl->nlinks;
        for (int c = first; c < end; c++) {
            const mc_pcand_t *pc = &f->pl->cands[c];
            int u = f->out->units[c * f->K + k];
            if (u <= 0)
                continue;
            track(f, k, mc_pcand_ps(pc, u), 0);
            for (int i = 0; i < pc->nlinks; i++) {
                int64_t *l = &load[pc->links[i]];
                track(f, k, *l, *l - u * pc->link_ps[i]);
                *l -= u * pc->link_ps[i];
            }
            f->out->units[c * f->K + k] = 0;
        }
        if (f->phase[k] > 0 && f->at_phase[k] == 0)
            rescan(f, k, load);
    }
}

/* Rounds of rip-up and re-route after the first fill: each piece is lifted and filled again
 * knowing where all the others went, which undoes the worst of the largest-first order. */
#define MC_GREEDY_ROUNDS 2

void mc_plan_greedy(const mc_plan_t *pl, int balance, mc_plan_sol_t *out)
{
    fill_t f = {.pl = pl, .out = out, .balance = balance};
    f.K = pl->npieces < MC_GREEDY_PHASES ? pl->npieces : MC_GREEDY_PHASES;
    if (f.K < 1)
        f.K = 1;
    sol_init(pl, out, f.K);
    f.load = mc_xcalloc((size_t)f.K * (size_t)(pl->nlinks + 1), sizeof(int64_t));
    f.phase = mc_xcalloc((size_t)f.K, sizeof(int64_t));
    f.at_phase = mc_xcalloc((size_t)f.K, sizeof(int));
    f.ranked = mc_xcalloc((size_t)f.K, sizeof(int));
    int most = 1;
    for (int c = 0, n = 0; c < pl->ncands; c++) {
        n = c > 0 && pl->cands[c].piece == pl->cands[c - 1].piece ? n + 1 : 1;
        most = n > most ? n : most;
    }
    f.local = mc_xmalloc(sizeof(int64_t) * (size_t)most * (size_t)f.K);
    f.most = most;
    f.order = mc_xmalloc(sizeof(int) * (size_t)most * (size_t)f.K);
    f.key = mc_xmalloc(sizeof(rank_key_t) * (size_t)most * (size_t)f.K);
    f.stale = mc_xcalloc((size_t)most * (size_t)f.K, 1);
    int most_links = 0;
    for (int c = 0, n = 0; c < pl->ncands; c++) {
        n = (c > 0 && pl->cands[c].piece == pl->cands[c - 1].piece ? n : 0) + pl->cands[c].nlinks;
        most_links = n > most_links ? n : most_links;
    }
    f.at = mc_xmalloc(sizeof(int) * (size_t)(pl->nlinks + 1));
    f.n_at = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int));
    for (int l = 0; l < pl->nlinks; l++)
        f.at[l] = -1;
    f.users = mc_xmalloc(sizeof(int) * (size_t)(most_links + 1));
    f.user_ps = mc_xmalloc(sizeof(int64_t) * (size_t)(most_links + 1));
    f.used_links = mc_xmalloc(sizeof(int) * (size_t)(pl->nlinks + 1));
    f.slack = mc_xmalloc(sizeof(int64_t) * (size_t)f.K * (size_t)(pl->nlinks + 1));
    for (int round = 0; round <= MC_GREEDY_ROUNDS; round++)
        for (int c = 0, p = 0; p < pl->npieces; p++) {
            int first = c;
            while (c < pl->ncands && pl->cands[c].piece == p)
                c++;
            if (round > 0)
                lift_piece(&f, first, c);
            for (size_t i = 0; i < (size_t)(c - first) * (size_t)f.K; i++)
                f.local[i] = -1;
            for (int k = 0; k < f.K; k++)
                f.ranked[k] = 0;
            index_users(&f, first, c);
            for (int u = 0; u < pl->units[p] && c > first; u++)
                place_unit(&f, first, c);
        }
    free(f.at);
    free(f.n_at);
    free(f.users);
    free(f.user_ps);
    free(f.used_links);
    free(f.slack);
    free(f.load);
    free(f.phase);
    free(f.at_phase);
    free(f.ranked);
    free(f.order);
    free(f.key);
    free(f.stale);
    free(f.local);
    mc_plan_sol_compact(pl, out);
    mc_plan_check(pl, out);
}

int mc_plan_direct(const mc_plan_t *pl, const int *direct, mc_plan_sol_t *out)
{
    sol_init(pl, out, 1);
    for (int c = 0, p = 0; p < pl->npieces; p++) {
        int found = 0;
        for (; c < pl->ncands && pl->cands[c].piece == p; c++)
            if (direct[c] && !found) {
                out->units[c] = pl->units[p];
                found = 1;
            }
        if (!found)
            return -1;
    }
    return mc_plan_check(pl, out);
}

void mc_plan_whole(const mc_plan_t *pl, const mc_plan_sol_t *sol, mc_plan_sol_t *out)
{
    sol_init(pl, out, 1);
    for (int c = 0, p = 0; p < pl->npieces; p++) {
        int best = -1, most = -1;
        for (; c < pl->ncands && pl->cands[c].piece == p; c++) {
            int u = 0;
            for (int k = 0; k < sol->nphases; k++)
                u += sol->units[c * sol->nphases + k];
            if (u > most) {
                most = u;
                best = c;
            }
        }
        if (best >= 0)
            out->units[best] = pl->units[p];
    }
    mc_plan_check(pl, out);
}

/* The busiest of candidate c's links if it took one more unit (load: the links' loads). */
static int64_t busiest_with_unit(const mc_plan_t *pl, const int64_t *load, int c)
{
    const mc_pcand_t *pc = &pl->cands[c];
    int64_t t = 0;
    for (int i = 0; i < pc->nlinks; i++)
        if (load[pc->links[i]] + pc->link_ps[i] > t)
            t = load[pc->links[i]] + pc->link_ps[i];
    return t;
}

void mc_plan_round(const mc_plan_t *pl, const double *x, int by_load, mc_plan_sol_t *sol)
{
    sol->nphases = 1;
    sol->units = mc_xcalloc((size_t)pl->ncands + 1, sizeof(int));
    int64_t *load = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int64_t));
    for (int c = 0; c < pl->ncands; c++) {
        sol->units[c] = x[c] < 0 ? 0 : (int)x[c];
        for (int i = 0; i < pl->cands[c].nlinks; i++)
            load[pl->cands[c].links[i]] += sol->units[c] * pl->cands[c].link_ps[i];
    }
    for (int c = 0, p = 0; p < pl->npieces; p++) {
        int first = c, left = pl->units[p];
        for (; c < pl->ncands && pl->cands[c].piece == p; c++)
            left -= sol->units[c];
        for (; left > 0 && c > first; left--) {
            int best = first;
            int64_t best_busy = busiest_with_unit(pl, load, first);
            for (int d = first + 1; d < c; d++) {
                double rd = x[d] - sol->units[d], rb = x[best] - sol->units[best];
                int64_t busy = busiest_with_unit(pl, load, d);
                /* by load: among the candidates the split rounds up, the one whose busiest
                 * link stays least loaded */
                int better = by_load && (rd > 0) != (rb > 0) ? rd > 0
                             : by_load && busy != best_busy ? busy < best_busy
                                                            : rd > rb;
                if (better) {
                    best = d;
                    best_busy = busy;
                }
            }
            sol->units[best]++;
            for (int i = 0; i < pl->cands[best].nlinks; i++)
                load[pl->cands[best].links[i]] += pl->cands[best].link_ps[i];
        }
    }
    free(load);
}
