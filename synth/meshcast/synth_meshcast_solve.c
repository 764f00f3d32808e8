/* The meshcast strategy's candidates and plans (docs/synthesis.md): every share's candidate trees
 * (the shapes, the rail stripes and, with pricing, the trees priced by link load), then each
 * component that is not a copy of another solved: greedy seeds, the fractional splits and their
 * descents, Z3's integer refinement under the rlimit and the time left. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"
#include "synth/meshcast/synth_meshcast_run.h"

/* The fluid part of the bound, what pricing aims at: its largest term's bytes over capacity. Not
 * the binding term's (bound.seconds - latency_s): terms wait different message latencies, so the
 * binding one can carry fewer bytes (a 16 MiB all-gather over two H100 boxes: host-cut, 23.3 us
 * plus 20 us between hosts, binds over a cut into one GPU of 37.8 us plus 4.4 us). The host-relay
 * and reach terms are left out: their bytes' time is one side of a trade against message waits
 * (a second network wait; links that open late), not a link load. */
static double fluid_bound(const mc_bound_t *b)
{
    double terms[] = {b->ingress_s, b->egress_s, b->host_cut_s, b->mesh_cut_s,
                      b->cut_s,     b->flow_s,   b->lp_s};
    double top = 0;
    for (size_t i = 0; i < sizeof terms / sizeof terms[0]; i++)
        top = terms[i] > top ? terms[i] : top;
    return top;
}

mc_status_t mc_meshcast_gen_cands(run_t *r, int price, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_shares_build(r->task, r->topo, &r->sh);
    r->first = mc_xmalloc(sizeof(int) * (size_t)(r->sh.n + 1));
    r->count = mc_xmalloc(sizeof(int) * (size_t)(r->sh.n + 1));
    /* shares leaving one host rotate over its holders; shares in symmetric places get the same
     * rotation, so their components stay identical */
    int *leaving = mc_xcalloc((size_t)r->topo->nhosts + 1, sizeof(int));
    int *nleaving = mc_xcalloc((size_t)r->topo->nhosts + 1, sizeof(int));
    char *taken = mc_xcalloc((size_t)r->topo->ngpus + 1, 1);
    int senders = 0;
    for (int i = 0; i < r->sh.n; i++) {
        int h = mc_rails_host(r->task, r->topo, &r->sh.s[i]);
        senders += h >= 0 && nleaving[h] == 0;
        nleaving[h >= 0 ? h : r->topo->nhosts]++;
    }
    for (int i = 0; i < r->sh.n; i++) {
        const mc_share_t *s = &r->sh.s[i];
        const mc_piece_t *pc = &r->task->pieces[s->piece];
        int h = s->root_host >= 0 ? s->root_host : mc_topo_gpu_host(r->topo, pc->holders[0]);
        r->first[i] = r->cs.n;
        MC_CHECK_GOTO(mc_cands_add_share(&r->cs, r->task, r->topo, s, leaving[h]++,
                                         r->opts->memory_limit != 0, r->wrap, err),
                      out, st);
        /* rail stripes (candidates_rails.c): their split spreads the share over every rail
         * and, on the root's own rail, its host's fan-out over every other GPU, which whole
         * units of 1/32 cannot; where the fractional model starts from that split (with
         * pricing: not under a memory limit, nor in the shape-only race) */
        mc_piece_t view = *pc;
        view.ndests = s->ndests;
        view.dests = (int *)s->dests;
        int units = 0, rh = mc_rails_host(r->task, r->topo, s);
        if (rh >= 0 && price && !r->opts->memory_limit)
            MC_CHECK_GOTO(mc_cands_add_rails(&r->cs, r->topo, s->piece, &view, rh, nleaving[rh],
                                             senders, taken, &units, err),
                          out, st);
        r->sh.s[i].fine = units;
        r->count[i] = r->cs.n - r->first[i];
    }
    /* trees priced by link load join the shapes above (relays are what they add: not under a
     * memory limit) */
    if (price && !r->opts->memory_limit)
        MC_CHECK_GOTO(mc_cands_price(&r->cs, r->task, r->topo, &r->sh, r->first, r->count,
                                     fluid_bound(&r->bound), r->frac, &r->price,
                                     err),
                      out, st);
    if (price && !r->opts->memory_limit)
        mc_rails_unstripe(&r->cs, r->task, r->topo, &r->sh, r->first, r->count,
                          r->price.frac_s);
out:
    free(leaving);
    free(nleaving);
    free(taken);
    return st;
}

/* Z3 work per component when the caller sets no rlimit: the relaxation is solved to the end
 * within it; the integer refinement gets what is left. Enough for the models up to 64 GPUs. */
#define MC_RLIMIT_DEFAULT 400000ull
/* A plan this close to its lower bound is not refined. */
#define MC_GOOD_ENOUGH 1.002

/* Refines plan `from` with the integer model into *out; a copy of it when it is already within
 * MC_GOOD_ENOUGH of the lower bound or no time is left. *optimal: whether out is proven
 * optimal (or good enough). */
static mc_status_t refine(run_t *r, const mc_plan_t *pl, const mc_plan_sol_t *from, int64_t lower,
                          uint64_t rl, double left, mc_plan_sol_t *out, int *optimal,
                          mc_err_t *err)
{
    mc_z3_stats_t zs;
    if ((double)from->est_ps <= MC_GOOD_ENOUGH * (double)lower || left <= 0.001) {
        mc_plan_sol_copy(pl, from, out);
        *optimal = (double)from->est_ps <= MC_GOOD_ENOUGH * (double)lower;
        return MC_OK;
    }
    mc_status_t st = mc_plan_solve_z3(pl, from, lower, rl, left, out, &zs, err);
    r->rlimit_used += zs.rlimit_used;
    *optimal = zs.status == MC_Z3_OPTIMAL || zs.status == MC_Z3_AT_BOUND;
    return st;
}

/* Split k of the fractional model over the component's shares, rounded to whole units in one
 * phase. Returns 0 when it is a feasible plan. */
static int frac_plan(const run_t *r, const mc_comp_t *cp, int k, int by_load, mc_plan_sol_t *out)
{
    const mc_plan_t *pl = &cp->plan;
    double *x = mc_xmalloc(sizeof(double) * (size_t)(pl->ncands + 1));
    for (int c = 0; c < pl->ncands; c++)
        x[c] = r->frac[k][cp->cand_ids[c]] * pl->units[pl->cands[c].piece];
    mc_plan_round(pl, x, by_load, out);
    free(x);
    mc_plan_sol_compact(pl, out);
    return mc_plan_check(pl, out);
}

/* The work the descents at shared pace of one component may do together (mc_plan_descend_shared's
 * units): the MI250 broadcast of `direct` takes 0.1 M, its all-gather 2.8 M; the all-gather over
 * two MI300X boxes took 31 M (0.34 s here) for no gain. */
#define MC_SHARED_WORK 4000000

/* The n rounded splits in split[], each descended under the plan's estimate (mc_plan_descend)
 * or, with shared, at shared pace (mc_plan_descend_shared); the lowest under that estimate into
 * *out. Returns 1 when it is below the same estimate of the split it came from. They join the
 * splits rather than replacing them: neither estimate charges all the simulator does (on the
 * MI250 broadcast of `direct` the repaired split was slower), the referee decides. */
static int descended(const mc_plan_t *pl, const mc_plan_sol_t *split, int n, int shared,
                     mc_plan_sol_t *out)
{
    int found = 0;
    int64_t least = 0, work = MC_SHARED_WORK;
    for (int i = 0; i < n; i++) {
        mc_plan_sol_t d = {0};
        mc_plan_sol_copy(pl, &split[i], &d);
        int64_t before = shared ? mc_plan_shared_est(pl, &d) : split[i].est_ps, t;
        if (shared) {
            t = mc_plan_descend_shared(pl, &d, &work);
        } else {
            mc_plan_descend(pl, &d);
            t = d.est_ps;
        }
        if (t >= 0 && t < before && (!found || t < least)) {
            mc_plan_sol_free(out);
            *out = d;
            least = t;
            found = 1;
        } else {
            mc_plan_sol_free(&d);
        }
    }
    return found;
}

/* Each starting plan's estimate with every tree's fill at shared pace (mc_plan_fill_ps), no
 * lower than the plan's own estimate. The plan's estimate alone let a split over chains across
 * eight hosts (depth 14) beat whole stars over the hosts (depth 2) on the 64-GPU all-gather:
 * at 1 GiB 4.96 against 5.10 ms estimated, where the chains simulate at 8.25 ms and the stars,
 * raced, at 5.21 ms. */
/* The estimate picks the plan to certify unless its fill at shared pace is more than this many
 * times another plan's: that estimate paces every level of a tree at its busiest link's whole
 * load, an upper bound that misjudges near-ties (two MI300X boxes, 64 MiB with (host, gpu)
 * swapped: the split it preferred by 1.21x, 105.7 against 127.6 us, simulates at 80.5 us, the
 * estimate's choice at 75.1 us), not factors of 1.94 to 9.4 (all-gathers over four DGX A100,
 * 1 GiB: 1.32 -> 1.03 of the bound; over eight, 64 MiB and 1 GiB). */
#define MC_FILL_DECISIVE 1.5

static void ranks(const run_t *r, const mc_comp_t *cp, const mc_plan_sol_t *from, int n,
                  int64_t *rank)
{
    const mc_plan_t *pl = &cp->plan;
    const mc_cand_t **cand = mc_xmalloc(sizeof(*cand) * (size_t)(pl->ncands + 1));
    uint64_t *ub = mc_xmalloc(sizeof(uint64_t) * (size_t)(pl->npieces + 1));
    for (int c = 0; c < pl->ncands; c++)
        cand[c] = &r->cs.c[cp->cand_ids[c]];
    for (int p = 0; p < pl->npieces; p++) {
        const mc_share_t *sh = &r->sh.s[cp->pieces[p]];
        mc_piece_units(r->task->pieces[sh->piece].bytes, sh->fine, &ub[p]);
    }
    for (int i = 0; i < n; i++) {
        int64_t f = mc_plan_fill_ps(pl, cand, ub, r->chunk ? r->chunk : MC_MIN_CHUNK_BYTES,
                                    &from[i]);
        rank[i] = f > from[i].est_ps ? f : from[i].est_ps;
    }
    free(cand);
    free(ub);
}

/* One greedy seed of a plan (mc_plan_greedy), as mc_run_both runs it. */
typedef struct greedy {
    const mc_plan_t *pl;
    int balance;
    mc_plan_sol_t *out;
} greedy_t;

static void greedy(void *arg)
{
    greedy_t *g = arg;
    mc_plan_greedy(g->pl, g->balance, g->out);
}

/* One component: two greedy seeds (the two tie-breaks, at once: each reads only the plan and
 * writes only its own solution), and the relaxation rounded or, where
 * pricing added trees or the relaxation gave no plan, the fractional model's splits rounded; the
 * integer model refines the best (the solved plan) and, since the estimate does not see
 * everything the simulator charges, the others as well (MC_PLAN_OTHER*, raced by the referee).
 * Each refinement gets a third of the rlimit (GLPK's relaxation counts none). */
static mc_status_t solve_comp(run_t *r, mc_comp_t *cp, uint64_t rl, double budget, mc_err_t *err)
{
    const mc_plan_t *pl = &cp->plan;
    mc_plan_sol_t from[3 + MC_SPLITS] = {{0}};
    double t0 = mc_now();
    mc_status_t st = MC_OK;
    int *direct = mc_xmalloc(sizeof(int) * (size_t)(pl->ncands + 1));
    for (int c = 0; c < pl->ncands; c++)
        direct[c] = r->cs.c[cp->cand_ids[c]].direct;
    cp->has[MC_PLAN_DIRECT] = mc_plan_direct(pl, direct, &cp->plans[MC_PLAN_DIRECT]) == 0;
    free(direct);
    greedy_t seeds[2] = {{pl, 0, &from[0]}, {pl, 1, &from[1]}};
    mc_run_both(greedy, &seeds[0], greedy, &seeds[1]);
    int nfrom = 2, best = 0;
    /* Once pricing has added trees, the fractional model's splits take the relaxation's place,
     * and shares with rail stripes (marked fine) have their split too. */
    int striped = 0;
    for (int i = 0; i < cp->npieces; i++)
        striped |= r->sh.s[cp->pieces[i]].fine && !r->price.added;
    int relaxed = !r->price.added && !striped && mc_plan_solve_lp(pl, budget, &from[nfrom]) == 0;
    nfrom += relaxed;
    /* Where the relaxation gave no plan (too many candidates, or stopped), the fractional
     * model's load split stands in for it, rounded by load: the greedy seeds fill units up to
     * the slowest tree's time, fixed cost included, and so leave links loaded unevenly where the
     * simulator overlaps that cost with other trees' bytes (x4-paper-reorder in `intra`). */
    int splits = r->price.added || (striped && r->frac[MC_SPLIT_LOAD]) ? MC_SPLITS
                 : !relaxed && r->frac[MC_SPLIT_LOAD] ? 1 : 0;
    for (int k = 0; k < splits; k++) {
        if (frac_plan(r, cp, k, !r->price.added, &from[nfrom]) == 0)
            nfrom++;
        else
            mc_plan_sol_free(&from[nfrom]);
    }
    for (int shared = 0; shared <= 1; shared++) {
        int kind = shared ? MC_PLAN_SHARED : MC_PLAN_REPAIRED;
        cp->has[kind] =
            r->price.added && descended(pl, &from[2], nfrom - 2, shared, &cp->plans[kind]);
    }
    int64_t rank[3 + MC_SPLITS];
    ranks(r, cp, from, nfrom, rank);
    for (int i = 1; i < nfrom; i++)
        if (from[i].est_ps < from[best].est_ps)
            best = i;
    for (int i = 0; i < nfrom; i++)
        if ((double)rank[best] > MC_FILL_DECISIVE * (double)rank[i])
            best = i;
    int64_t lower = mc_plan_lower_ps(pl);
    for (int i = 0, n = 0; i < nfrom; i++) {
        int optimal;
        int kind = i == best ? MC_PLAN_SOLVED : MC_PLAN_OTHER0 + n++;
        mc_plan_sol_t *out = &cp->plans[kind];
        cp->has[kind] = 1;
        double left = (budget - (mc_now() - t0)) / (nfrom - i);
        MC_CHECK_GOTO(refine(r, pl, &from[i], lower, rl / 3, left, out, &optimal, err), out, st);
        if (i == best)
            r->nz3_optimal += optimal;
    }
    mc_plan_whole(pl, &cp->plans[MC_PLAN_SOLVED], &cp->plans[MC_PLAN_WHOLE]);
    cp->has[MC_PLAN_WHOLE] = 1;
    if (r->opts->progress) {
        char a[32], b[32];
        fprintf(stderr, "\rmeshcast: z3 component %d: best %s, lower bound %s   ", r->nsolved + 1,
                mc_fmt_seconds((double)cp->plans[MC_PLAN_SOLVED].est_ps * 1e-12, a, sizeof a),
                mc_fmt_seconds((double)lower * 1e-12, b, sizeof b));
    }
out:
    for (int i = 0; i < 3 + MC_SPLITS; i++)
        mc_plan_sol_free(&from[i]);
    return st;
}

/* Solves every component that is not a copy of an earlier one; the rlimit and the time left are
 * shared equally among those still to solve. */
mc_status_t mc_meshcast_solve(run_t *r, mc_err_t *err)
{
    double t0 = mc_now(), total = mc_synth_budget_s(r->opts);
    for (int i = 0; i < r->ncomps; i++)
        r->nunique += r->comps[i].same_as < 0;
    for (int i = 0; i < r->ncomps; i++) {
        mc_comp_t *cp = &r->comps[i];
        if (cp->same_as >= 0)
            continue;
        double budget = (total - (mc_now() - t0)) / (r->nunique - r->nsolved);
        uint64_t rl = r->opts->rlimit ? r->opts->rlimit / (uint64_t)r->nunique : MC_RLIMIT_DEFAULT;
        mc_status_t st = solve_comp(r, cp, rl ? rl : 1, budget, err);
        if (st != MC_OK)
            return st;
        r->nsolved++;
    }
    if (r->opts->progress)
        fprintf(stderr, "\n");
    return MC_OK;
}
