/* The meshcast strategy (DESIGN.md section 5, docs/synthesis.md): its entry and its referee. The
 * candidate trees and the components' plans (synth_meshcast_solve.c) become schedules
 * (synth_meshcast_assemble.c) in the referee's variants (forms, staggers, chunk steps, channels),
 * each validated and simulated and the fastest kept; the balanced plan and the synthesis from the
 * shapes alone race beside it, the last races (synth_meshcast_alt.c) after. The schedule states
 * in its params how far its simulated time is from the lower bound. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/collectives/collective_internal.h"
#include "synth/meshcast/mc_meshcast.h"
#include "synth/meshcast/synth_meshcast_run.h"

/* The first channel try (the largest trees in 2), which stops the others when not covered, may
 * take two thirds of an allowance: the 56 trees of a broadcast over 8 A100 rail hosts, each 18
 * MiB in 23-28 chunks, take 4 M in 2 channels (1.19 -> 1.09 of the bound). A whole allowance
 * also covered the 2 channels of the broadcast over 4 DGX A100 (1.14 -> 1.09) but took the
 * synthesis of host 0's shards to 8 A100 rail hosts to 2.3 s of CPU (1.4 s with two thirds). */
#define MC_SIM_FIRST_CHANNEL_WORK (MC_SIM_WORK * 2 / 3)
/* Each try of channels on host chunks gets this much work and no more: those of a 1 GiB
 * broadcast on the MI250 box took 2.6-7.9 M each for 0.1%, doubling its synthesis CPU; the 4 and
 * 64 MiB schedules they sped up, at most 0.5 M; an eighth of an allowance lost `direct`'s
 * mi250-allgather (1.199 -> 1.148 with a third). */
#define MC_SIM_HOST_CHANNEL_WORK (MC_SIM_WORK / 3)
/* At most this many steps of 3/4 or 4/3 of the chunks, while each is faster. */
#define MC_COARSE_STEPS 3

/* (synth_meshcast_run.h) */
mc_status_t mc_meshcast_certify(const run_t *r, const mc_sched_t *s, const char *plan,
                                int64_t *work_left, double horizon, mc_sim_ahead_t *ahead,
                                verdict_t *v, mc_err_t *err)
{
    mc_buf_t buf = {0};
    mc_status_t st = MC_OK;
    mc_sim_result_t sim = {0};
    const mc_bound_t *b = &r->bound;
    *v = (verdict_t){0};
    if (r->stale && atomic_load(r->stale)) {
        mc_sim_ahead_free(ahead);
        return mc_err_set(err, MC_ERR_TIMEOUT, "what is made ahead is of no use (synth_both)");
    }
    int bad = mc_valid_memo_check(r->valid, s, r->topo, &buf);
    if (bad) {
        mc_sim_ahead_free(ahead);
        st = mc_err_set(err, MC_ERR_INTERNAL,
                        "%s:%d: the meshcast schedule (plan %s) has %d violations:\n%s", __FILE__,
                        __LINE__, plan, bad, buf.data ? buf.data : "");
        goto out;
    }
    mc_err_t stopped = {0};
    int64_t before = *work_left;
    st = ahead ? mc_sim_run_memo_ahead(r->memo, ahead, r->topo, work_left, horizon, b->seconds,
                                       &sim, &stopped)
               : mc_sim_run_memo_cut(r->memo, s, r->topo, work_left, horizon, b->seconds, &sim,
                                     &stopped);
    v->simulated = st == MC_OK;
    v->reached = st == MC_ERR_TIMEOUT ? sim.makespan_s : 0;
    v->beaten = st == MC_ERR_TIMEOUT && horizon > 0 && sim.makespan_s > horizon;
    v->work = before - *work_left;
    if (st != MC_OK && st != MC_ERR_TIMEOUT) {
        *err = stopped;
        goto out;
    }
    st = MC_OK;
    if (v->simulated) {
        v->t = sim.makespan_s;
    } else {
        for (int i = 0; i < r->ncomps; i++) {
            const mc_comp_t *cp = &r->comps[i];
            const mc_comp_t *rep = cp->same_as >= 0 ? &r->comps[cp->same_as] : cp;
            if (rep->plans[MC_PLAN_SOLVED].est_ps * 1e-12 > v->t)
                v->t = rep->plans[MC_PLAN_SOLVED].est_ps * 1e-12;
        }
    }
    double gap = b->seconds > 0 ? (v->t / b->seconds - 1) * 100 : 0;
    snprintf(v->params, sizeof v->params,
             "plan=%s %s=%.6g bound_s=%.6g gap=%.2f%% optimal=%d/%d components=%d "
             "rlimit_used=%llu priced=%d frac_s=%.6g",
             plan, v->simulated ? "sim_s" : "est_s", v->t, b->seconds, gap, r->nz3_optimal,
             r->nunique, r->ncomps, (unsigned long long)r->rlimit_used, r->price.added,
             r->price.frac_s);
out:
    mc_sim_result_free(&sim);
    mc_buf_free(&buf);
    return st;
}

/* The later forms are built from the fastest kind so far and then from the second fastest: which
 * kind gains most from re-chunking or evening out is not the one fastest as decoded (MI300X
 * broadcast: the fastest decoded plan, seven two-level trees, re-chunked and evened out 0.95 ms;
 * the solved plan, second as decoded, 0.87 ms). */
#define VARIANT_FASTEST (-1)
#define VARIANT_SECOND (-2)
/* The most variants the referee has: every kind in 1 + MC_STAGGER_MAX staggers, every form of
 * the two fastest and of the plan descended at shared pace. */
#define MC_VARIANTS_MAX (MC_PLAN_KINDS * (MC_STAGGER_MAX + 1) * FORM_COUNT * 3)

/* Whether the referee races this kind: the solved plan and its whole form always; the others
 * when every component that copies no other was given one (a copy is decoded from its
 * original's plans). Until session 39 a copy, given no plan of its own, kept every other kind
 * out of the race wherever components repeat: racing them there had spent the allowance that
 * the re-chunked variants needed (h100-realloc-train-gen in `modern`: 1.07 -> 1.15 of the bound,
 * then). Raced again, that case keeps its time; on the uneven 1 GiB reshuffle over RCCL's
 * 16-GCD MI250 VM (`topo_16p1h_vm`) the rounded fractional splits, never simulated before, take
 * 1.20 -> 1.02 of the bound, and `modern`'s h100-llama70b-tp8-tp4 loses 1.0035 -> 1.0105
 * (docs/synthesis.md, "Session 39"). Racing only the kinds estimated below the solved plan
 * kept that row but won 10 of RCCL's 810 cases instead of 32. */
static int every_comp_has(const run_t *r, int kind)
{
    if (kind == MC_PLAN_SOLVED || kind == MC_PLAN_WHOLE)
        return 1;
    for (int c = 0; c < r->ncomps; c++)
        if (r->comps[c].same_as < 0 && !r->comps[c].has[kind])
            return 0;
    return 1;
}

/* The tree edges a kind's plans use over the distinct components: what its simulation grows
 * with (every edge of a tree moves every chunk). */
static int64_t plan_edges(const run_t *r, int kind)
{
    int64_t n = 0;
    for (int i = 0; i < r->ncomps; i++) {
        const mc_comp_t *cp = &r->comps[i];
        const mc_plan_sol_t *sol = &cp->plans[kind];
        for (int c = 0; cp->same_as < 0 && cp->has[kind] && c < cp->plan.ncands; c++)
            for (int k = 0; k < sol->nphases; k++)
                n += sol->units[c * sol->nphases + k] > 0 ? r->cs.c[cp->cand_ids[c]].nedges : 0;
    }
    return n;
}

/* A plan with more than this many times the solved plan's tree edges is raced after the forms
 * of the fastest kinds: its simulation can take the allowance they need. */
#define MC_BIG_PLAN 4

/* The referee's table, in the order it is raced: the plans as decoded, cheapest to simulate
 * first, then their staggered forms (the solved plan as decoded is already timed); then the
 * fastest kind re-chunked and, where pricing added trees, evened out and both, each as it is and
 * staggered; then the same for the second fastest kind, and for the plan descended at shared
 * pace. A caller's fixed chunk leaves out what changes chunk counts. */
static int variants(const run_t *r, variant_t *out)
{
    static const int order[] = {MC_PLAN_DIRECT, MC_PLAN_WHOLE,  MC_PLAN_OTHER0, MC_PLAN_OTHER1,
                                MC_PLAN_OTHER2, MC_PLAN_OTHER3, MC_PLAN_OTHER4, MC_PLAN_REPAIRED,
                                MC_PLAN_SHARED, MC_PLAN_SOLVED};
    int n = 0, nstagger = r->chunk ? 0 : MC_STAGGER_MAX;
    int64_t big = MC_BIG_PLAN * plan_edges(r, MC_PLAN_SOLVED);
    for (int stagger = 0; stagger <= nstagger; stagger++)
        for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
            if ((order[i] != MC_PLAN_SOLVED || stagger) && every_comp_has(r, order[i]) &&
                (!big || plan_edges(r, order[i]) <= big))
                out[n++] = (variant_t){.kind = order[i], .form = FORM_DECODED, .stagger = stagger};
    /* last, the plan descended at shared pace in its forms: not ranked, since on a tie as decoded
     * it took the later forms from a kind that gains more from them (DGX-1, 96 MiB from GPU 5:
     * 1.217 -> 1.228 of the bound) */
    int kinds[] = {VARIANT_FASTEST, VARIANT_SECOND, MC_PLAN_SHARED};
    int nkinds = every_comp_has(r, MC_PLAN_SHARED) ? 3 : 2;
    for (int i = 0; i < nkinds; i++)
        for (int form = FORM_RECHUNK; form < (r->price.added ? FORM_COUNT : FORM_EVEN) && !r->chunk;
             form++)
            for (int stagger = 0; stagger <= MC_STAGGER_MAX; stagger++)
                out[n++] = (variant_t){.kind = kinds[i], .form = form, .stagger = stagger};
    /* the plans far larger than the solved one last, as decoded and staggered */
    for (int stagger = 0; stagger <= nstagger && big; stagger++)
        for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
            if (every_comp_has(r, order[i]) && plan_edges(r, order[i]) > big)
                out[n++] = (variant_t){.kind = order[i], .form = FORM_DECODED, .stagger = stagger};
    return n;
}

/* Builds variant x (its kind resolved) into *out, named in name[size]. The same variant gives
 * the same schedule, so the referee keeps its winner's variant and verdict rather than the
 * schedule, and builds the winner again at the end: one schedule is held at a time (two were
 * 186 MB of the 8192-GPU case's 986 MB peak: heaptrack). */
static mc_status_t build(run_t *r, variant_t x, mc_sched_t **out, char *name, size_t size,
                         mc_err_t *err)
{
    static const char *names[MC_PLAN_KINDS] = {"z3",     "other0", "other1", "other2",
                                               "other3", "other4", "repaired", "shared", "direct",
                                               "whole", "balanced"};
    static const char *forms[FORM_COUNT] = {"", "+rechunk", "+even", "+even+rechunk"};
    static const char *staggers[] = {"", "+stagger1", "+stagger2", "+stagger3"};
    mc_sched_t *d = NULL;
    mc_status_t st = mc_meshcast_assembled(r, x.kind, x.form, &d, err);
    if (st != MC_OK)
        return st;
    if (x.stagger)
        mc_sched_stagger(d, r->topo, x.stagger, MC_MIN_CHUNK_BYTES);
    for (int k = 0; k < abs(x.coarse); k++)
        for (int t = 0; t < d->ntrees; t++) {
            mc_tree_t *tr = &d->trees[t];
            uint64_t finer = (uint64_t)tr->nchunks * 4 / 3, most = tr->bytes / MC_MIN_CHUNK_BYTES;
            tr->nchunks = x.coarse > 0 ? (3 * tr->nchunks + 3) / 4
                          : finer <= most && finer <= MC_CHUNKS_MAX ? (int)finer
                                                                     : tr->nchunks;
        }
    for (int t = 0; t < d->ntrees && x.fit > 1; t++)
        d->trees[t].nchunks = (d->trees[t].nchunks + x.fit - 1) / x.fit;
    uint64_t largest = 0;
    for (int t = 0; t < d->ntrees; t++)
        largest = d->trees[t].bytes > largest ? d->trees[t].bytes : largest;
    if (x.channels > 1)
        mc_sched_channels(d, r->topo, x.channels, x.channel_spread, MC_MIN_CHUNK_BYTES,
                          x.channel_host ? MC_HOST_CHUNK_BYTES : MC_MIN_CHUNK_BYTES,
                          x.channel_big ? largest / 2 : 0);
    snprintf(name, size, "%s%s%s%s%.*d%s%.*d%s%.*d%s%.*d%s%s", names[x.kind], forms[x.form],
             staggers[x.stagger], x.coarse > 0 ? "+coarse" : x.coarse < 0 ? "+fine" : "",
             x.coarse ? 1 : 0, abs(x.coarse), x.fit > 1 ? "+fit" : "", x.fit > 1 ? 1 : 0, x.fit,
             x.channels > 1 ? "+ch" : "", x.channels > 1 ? 1 : 0, x.channels,
             x.channels > 1 ? "s" : "", x.channels > 1 ? 1 : 0, x.channel_spread,
             x.channel_big ? "big" : "", x.channel_host ? "host" : "");
    *out = d;
    return MC_OK;
}

/* A race simulated ahead (mc_sim_ahead_start) on a core no other thread of the synthesis takes,
 * while the race before it runs: the channel tries, the runner's first try and the referee's
 * table are raced one after another, each under the allowance and horizon the one before left,
 * so the next one's are known only within limits. Taken by race_then when it races the same
 * variant, it is decided as a race begun then would be (docs/synthesis.md, "Session 27"). */
typedef struct race_ahead {
    variant_t x;
    mc_sched_t *d;
    char name[64];
    mc_sim_ahead_t *sim;
} race_ahead_t;

static void ahead_free(race_ahead_t *a)
{
    if (!a)
        return;
    mc_sim_ahead_free(a->sim);
    mc_sched_free(a->d);
    free(a);
}

/* Drops the race r began ahead for a race that did not come (its thread stopped). */
static void ahead_drop(run_t *r)
{
    ahead_free(r->ahead);
    r->ahead = NULL;
}

/* The next race to simulate ahead of the one raced now: variant x of run r, simulated up to
 * `work` units (no more than its allowance can be, or at most all of it: the run made ahead is
 * of use while it ran no more than its allowance) and a horizon no earlier than its own (0: it
 * has none); pace: the work per flow of the race before the one raced now (0: not looked at). */
typedef struct next_race {
    run_t *r;
    variant_t x;
    int64_t work;
    double horizon, pace;
} next_race_t;

/* The chunk crossings (every chunk over every edge of its tree) of a schedule: what its
 * simulation grows with. */
static int64_t sched_flows(const mc_sched_t *d)
{
    int64_t n = 0;
    for (int t = 0; t < d->ntrees; t++)
        n += (int64_t)d->trees[t].nchunks * d->trees[t].nedges;
    return n;
}

/* Begins next ahead (race_ahead_t, in next->r->ahead) unless another thread of the synthesis is
 * at work, or it is the schedule d raced now or one the memo decides. Nor where d, at the pace of
 * the race before it, would take more than its allowance: its race would then end the tries
 * (the 4 channels of a 1 GiB broadcast over eight MI300X hosts, stopped at 4.7 M units). */
static mc_status_t begin_ahead(const next_race_t *next, const mc_sched_t *d, int64_t allowance,
                               mc_err_t *err)
{
    run_t *r = next->r;
    if (r->ahead || next->work <= 0 || mc_apart_running() > 0 ||
        next->pace * (double)sched_flows(d) > (double)allowance)
        return MC_OK;
    race_ahead_t *a = mc_xcalloc(1, sizeof *a);
    a->x = next->x;
    mc_status_t st = build(r, next->x, &a->d, a->name, sizeof a->name, err);
    if (st != MC_OK || mc_sim_memo_same(r->memo, a->d, d) || mc_sim_memo_has(r->memo, a->d)) {
        ahead_free(a);
        return st;
    }
    /* the horizon it is raced up to is a simulated time: the bound is below it */
    a->sim = mc_sim_ahead_start(a->d, r->topo, next->work, r->bound.seconds * (1 - 1e-6),
                                next->horizon);
    r->ahead = a;
    return MC_OK;
}

/* Whether what is left of r's allowance starts a run of d (mc_sim_least_work: its chunk
 * crossings, counted at once, bound its flows from above). */
static int can_start(const run_t *r, const mc_sched_t *d)
{
    return MC_SIM_WORK_PER_FLOW * sched_flows(d) <= r->sim_work_left ||
           mc_sim_least_work(d, r->topo) <= r->sim_work_left;
}

/* Builds variant x and times it (mc_meshcast_certify) up to horizon; next (or NULL): the race
 * after it, simulated ahead meanwhile (begin_ahead) where x's run starts (else the next race
 * may not come: referee). *flows (NULL: not asked) gets its flows. */
static mc_status_t race_then(run_t *r, variant_t x, double horizon, const next_race_t *next,
                             verdict_t *v, int64_t *flows, mc_err_t *err)
{
    race_ahead_t *a = r->ahead;
    mc_sched_t *d = NULL;
    mc_sim_ahead_t *sim = NULL;
    char name[64];
    mc_status_t st = MC_OK;
    r->ahead = NULL;
    if (a && memcmp(&a->x, &x, sizeof x) == 0) {
        d = a->d;
        sim = a->sim;
        memcpy(name, a->name, sizeof name);
        free(a);
        mc_sim_ahead_stop(sim); /* the rest of it is raced here */
    } else {
        ahead_free(a);
        st = build(r, x, &d, name, sizeof name, err);
    }
    if (st == MC_OK && flows)
        *flows = sched_flows(d);
    if (st == MC_OK && next && can_start(r, d))
        st = begin_ahead(next, d, r->sim_work_left, err);
    if (st == MC_OK)
        st = mc_meshcast_certify(r, d, name, &r->sim_work_left, horizon, sim, v, err);
    else
        mc_sim_ahead_free(sim);
    mc_sched_free(d);
    return st;
}

/* Builds variant x (its kind resolved) and times it within the allowance, up to the simulated
 * time horizon (0: none): *v gets its verdict; the schedule is not kept. */
static mc_status_t race(run_t *r, variant_t x, double horizon, verdict_t *v, mc_err_t *err)
{
    return race_then(r, x, horizon, NULL, v, NULL, err);
}

/* Whether the referee's winner r->kept stays inside hosts with a tree held by
 * MC_MIN_CHUNK_BYTES (mc_sched_host_held): only there are channels on MC_HOST_CHUNK_BYTES tried
 * (on eight-host clusters they won nothing and took 9-32% more CPU). */
static mc_status_t host_held(run_t *r, int *held, mc_err_t *err)
{
    mc_sched_t *d = NULL;
    char name[64];
    mc_status_t st = build(r, r->kept, &d, name, sizeof name, err);
    *held = st == MC_OK && mc_sched_host_held(d, r->topo, MC_MIN_CHUNK_BYTES);
    mc_sched_free(d);
    return st;
}

/* A tree alone on its links idles them for the message overhead between its chunks, which holds
 * its chunk count down and its pipeline fill up; cut into channels (mc_sched_channels), one
 * channel's overhead overlaps another's bytes (mi300x2-bcast in `direct`: 1.34 -> 1.08 of the
 * bound). The channel race times a variant with its largest trees (half the largest tree's bytes
 * or more) cut into 2 channels (dgx1-half-replicate: 1.32 -> 1.23), then with every tree cut
 * into 4 (spread 1) and 8 (spreads 1 and 2), then, where its trees inside hosts are held by the
 * network's chunk (host_held), on the smaller chunks of hosts; each within an allowance of its
 * own. channels: channels, spread, only the trees of at least half the largest's bytes, host
 * chunks. */
static const int channel_tries[][4] = {{2, 1, 1, 0}, {4, 1, 0, 0}, {8, 1, 0, 0}, {8, 2, 0, 0},
                                       {2, 2, 0, 1}, {3, 1, 0, 1}, {4, 1, 0, 1}, {4, 2, 0, 1}};
#define CHANNEL_TRIES ((int)(sizeof channel_tries / sizeof channel_tries[0]))

/* A channel race under way: the variant its tries cut, whether it takes the host chunks' tries,
 * whether it is a runner's (stopped by its first try that is not the fastest), the last try's
 * verdict, the next try and the last try's pace. */
typedef struct channel_race {
    variant_t x;
    int held, runner, next;
    verdict_t dv;
    double pace; /* the last try's work per flow (0: none yet) */
} channel_race_t;

/* A channel race of r->kept, timed *v. */
static mc_status_t channels_begin(run_t *r, const verdict_t *v, int runner, channel_race_t *c,
                                  mc_err_t *err)
{
    *c = (channel_race_t){.x = r->kept, .runner = runner, .dv = {.simulated = 1}};
    return v->t > MC_ALT_ROOM * r->bound.seconds ? host_held(r, &c->held, err) : MC_OK;
}

/* x cut into channels as try i says. */
static variant_t channel_try(variant_t x, int i)
{
    const int *t = channel_tries[i];
    x.channels = t[0];
    x.channel_spread = t[1];
    x.channel_big = t[2];
    x.channel_host = t[3];
    return x;
}

/* The allowance try i of a channel race adds to what is left (the host chunks' tries: sets). */
static int64_t channel_work(int i)
{
    return channel_tries[i][3] ? MC_SIM_HOST_CHANNEL_WORK
           : i == 0            ? MC_SIM_FIRST_CHANNEL_WORK
                               : MC_SIM_CHANNEL_WORK;
}

/* Whether c's try i comes, before try `to`, when the one before it goes on. */
static int channel_comes(const channel_race_t *c, int i, int to)
{
    return i < to && i < CHANNEL_TRIES && (c->held || !channel_tries[i][3]);
}

/* Races c's tries before try `to` while they go on: a try the allowance did not cover stops the
 * rest (they have as many channels or more); one stopped once it was slower than the fastest does
 * not, but in a runner's race. A try faster than *v is kept in r->kept, *v. next (or NULL): the
 * race after c's tries, begun ahead with the last one. Each try but the last begins the next
 * ahead, whose allowance is at least what the next adds: a try goes on only after one that ended
 * or passed its horizon, within its allowance. */
static mc_status_t channels_run(run_t *r, channel_race_t *c, verdict_t *v, int to,
                                const next_race_t *next, mc_err_t *err)
{
    for (; channel_comes(c, c->next, to) && (c->dv.simulated || (c->dv.beaten && !c->runner));
         c->next++) {
        int64_t add = channel_work(c->next), flows = 0;
        c->x = channel_try(c->x, c->next);
        r->sim_work_left = channel_tries[c->next][3] ? add : r->sim_work_left + add;
        next_race_t after = {r, c->x, 0, v->t, c->pace};
        if (channel_comes(c, c->next + 1, to)) {
            after.x = channel_try(c->x, c->next + 1);
            after.work = channel_work(c->next + 1);
        }
        int64_t before = r->sim_work_left;
        mc_status_t st = race_then(r, c->x, v->t, after.work ? &after : next, &c->dv, &flows,
                                   err);
        if (st != MC_OK)
            return st;
        c->pace = flows ? (double)(before - r->sim_work_left) / (double)flows : 0;
        if (c->dv.simulated && c->dv.t < v->t) {
            r->kept = c->x;
            *v = c->dv;
        }
    }
    return MC_OK;
}

/* The last step of a synthesis: the winner *won (timed *v) cut into channels. Channels gain more
 * on some plans than on others (eight DGX H100 hosts, 1 GiB all-gather: the priced plan
 * re-chunked 2.891 ms, in 2 channels 2.787; the balanced plan 2.893, in 2 channels 2.658, in 4
 * 2.578), so a runner close behind the winner (the balanced plan's synthesis and its plan,
 * timed *vr; or NULL) has its first try raced too, up to the winner's first: the faster of the
 * two goes on with its other tries. */
static mc_status_t synth_channels(run_t **won, verdict_t *v, run_t *runner, variant_t plan,
                                  verdict_t *vr, mc_err_t *err)
{
    channel_race_t cw, cr, *go = &cw;
    /* the runner's first try comes next, under an allowance of its own (or what the winner's
     * left, when the runner is *won) */
    next_race_t first = {runner, channel_try(plan, 0), 0, v->t, 0};
    if (runner)
        first.work = channel_work(0) + (runner == *won ? 0 : runner->sim_work_left);
    mc_status_t st = channels_begin(*won, v, 0, &cw, err);
    if (st == MC_OK)
        st = channels_run(*won, &cw, v, 1, runner ? &first : NULL, err);
    if (st == MC_OK && runner) {
        variant_t kept = (*won)->kept;
        runner->kept = plan;
        vr->t = v->t; /* its tries count only where faster than the winner's */
        st = channels_begin(runner, vr, 1, &cr, err);
        if (st == MC_OK)
            st = channels_run(runner, &cr, vr, 1, NULL, err);
        if (st == MC_OK && vr->t < v->t) {
            *v = *vr;
            *won = runner;
            cr.runner = 0;
            go = &cr;
        } else {
            (*won)->kept = kept; /* the runner may be *won: the balanced plan over its own
                                  * components */
        }
    }
    if (st == MC_OK)
        st = channels_run(*won, go, v, CHANNEL_TRIES, NULL, err);
    ahead_drop(*won);
    if (runner)
        ahead_drop(runner);
    return st;
}

/* How far behind the fastest the other kind's variant may be for its chunk steps to be raced:
 * three steps gained 2.2% on the DGX-1 broadcast from GPU 5 (below), about 1% elsewhere; a
 * runner further behind is left out (on `intra`'s 32-GPU cases, 2.7-49% behind, its steps were
 * up to 14% more CPU time for no gain). */
#define MC_STEP_REACH 1.02

/* Steps variant x, timed x_t, to 3/4 of its chunks while that is faster, or else to 4/3 while
 * that is, at most MC_COARSE_STEPS times; a step faster than the fastest so far (*v) replaces it
 * (*replaced, *kept). */
static mc_status_t step_chunks(run_t *r, variant_t x, double x_t, verdict_t *v, int *replaced,
                               variant_t *kept, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    for (int dir = 1, better = 1; better && abs(x.coarse) < MC_COARSE_STEPS;) {
        verdict_t dv;
        x.coarse += dir;
        MC_CHECK_GOTO(race(r, x, v->simulated ? x_t : 0, &dv, err), out, st);
        better = dv.simulated && dv.t < x_t;
        if (better)
            x_t = dv.t;
        if (better && dv.t < v->t) {
            *kept = x;
            *v = dv;
            *replaced = 1;
        }
        if (!better && x.coarse == 1) { /* fewer chunks were slower: try more */
            dir = -1;
            x.coarse = 0;
            better = 1;
        }
    }
out:
    return st;
}

/* Whether the referee leaves variant x out: one of its kind and form, less staggered, was not
 * started by the allowance (unstarted[kind][form]: its stagger, or -1). Staggers only add chunks
 * (mc_sched_stagger), and the allowance only shrinks along the table, so x would not start either:
 * with 1,008 units left, the referee of an uneven 4 MiB all-to-all over four A100 and four H100
 * boxes built 28 variants it could not start, 132,623 chunk crossings each at most, 2 s of CPU. */
static int left_out(variant_t x, int unstarted[MC_PLAN_KINDS][FORM_COUNT])
{
    return unstarted[x.kind][x.form] >= 0 && x.stagger > unstarted[x.kind][x.form];
}

/* The simulator referees: the plan's cost model does not charge everything the simulator does,
 * so the solved plan (timed *v) is raced against the variants built from the same candidates
 * (variants), and the fastest simulated one is kept in r->kept, *v; *replaced says whether it is
 * not the solved plan. The simulations share one allowance of work (mc_sim_run_bounded); the
 * variants it does not cover are dropped. */
static mc_status_t referee(run_t *r, verdict_t *v, int *replaced, mc_err_t *err)
{
    variant_t table[MC_VARIANTS_MAX];
    int n = variants(r, table), fastest = MC_PLAN_SOLVED, second = -1;
    int unstarted[MC_PLAN_KINDS][FORM_COUNT];
    double fastest_t = v->t, second_t = HUGE_VAL;
    variant_t winner = {.kind = MC_PLAN_SOLVED, .form = FORM_DECODED};
    variant_t best_x[MC_PLAN_KINDS]; /* per kind, its fastest variant, timed best_t */
    double best_t[MC_PLAN_KINDS], solved_t = v->simulated ? v->t : HUGE_VAL;
    mc_status_t st = MC_OK;
    *replaced = 0;
    for (int k = 0; k < MC_PLAN_KINDS; k++) {
        best_t[k] = HUGE_VAL;
        best_x[k] = (variant_t){.kind = k, .form = FORM_DECODED};
        for (int f = 0; f < FORM_COUNT; f++)
            unstarted[k][f] = -1;
    }
    for (int i = 0; i < n && r->sim_work_left > 0; i++) {
        variant_t x = table[i];
        verdict_t dv;
        if (x.kind == VARIANT_SECOND && second < 0)
            continue;
        if (x.kind < 0)
            x.kind = x.kind == VARIANT_FASTEST ? fastest : second;
        if (left_out(x, unstarted))
            continue;
        /* a form counts only if it beats the fastest, so its simulation stops at that time; the
         * plans as decoded are timed in full, since they rank the kinds whose forms are raced */
        double horizon = table[i].form != FORM_DECODED && v->simulated ? v->t : 0;
        /* the next variant is simulated ahead where it is known now (not the fastest or second
         * kind so far), and so is whether it has a horizon: up to the allowance left now */
        const variant_t *y = i + 1 < n ? &table[i + 1] : NULL;
        next_race_t next = {r, y ? *y : x, r->sim_work_left,
                            y && y->form != FORM_DECODED ? v->t : 0, 0};
        int known = y && y->kind >= 0 && (y->form == FORM_DECODED || v->simulated) &&
                    !left_out(*y, unstarted);
        MC_CHECK_GOTO(race_then(r, x, horizon, known ? &next : NULL, &dv, NULL, err), out, st);
        double t = dv.simulated ? dv.t : HUGE_VAL;
        if (!dv.simulated && dv.work == 0 && unstarted[x.kind][x.form] < 0)
            unstarted[x.kind][x.form] = x.stagger;
        /* the repaired plan is raced as decoded and staggered only: ranked, it took the place
         * of a fastest kind and left the later forms to a plan that gains less from them (MI250
         * broadcast in `direct`: 1.31 -> 1.33 of the bound); the plan at shared pace has forms
         * of its own (variants) and is not ranked either */
        int ranked = table[i].form == FORM_DECODED && x.kind != MC_PLAN_REPAIRED &&
                     x.kind != MC_PLAN_SHARED;
        if (ranked && t < fastest_t) {
            if (x.kind != fastest) {
                second = fastest;
                second_t = fastest_t;
            }
            fastest = x.kind;
            fastest_t = t;
        } else if (ranked && x.kind != fastest && t < second_t) {
            second = x.kind;
            second_t = t;
        }
        if (t < best_t[x.kind]) {
            best_t[x.kind] = t;
            best_x[x.kind] = x;
        }
        if (t < v->t) {
            *v = dv;
            *replaced = 1;
            winner = x;
        }
    }
    best_t[MC_PLAN_SOLVED] = best_t[MC_PLAN_SOLVED] < solved_t ? best_t[MC_PLAN_SOLVED] : solved_t;
    variant_t runner = winner;
    double runner_t = HUGE_VAL;
    for (int k = 0; k < MC_PLAN_KINDS; k++)
        if (k != winner.kind && best_t[k] < runner_t) {
            runner = best_x[k];
            runner_t = best_t[k];
        }
    /* The chunk counts are each tree's best alone or at its planned share; trees that share links
     * do not progress as modelled (staggered, or one finishing early and leaving the link to
     * the others), where larger chunks can pay less per-message overhead than they add fill
     * (h100-single-3x8 in `modern`: 3.34 -> 3.31 ms with 3/4 of the chunks). So the winner is
     * timed again with 3/4 of its chunks while that is faster, or else with 4/3 while that is
     * (none below MC_MIN_CHUNK_BYTES); then, within an allowance of its own, the fastest variant
     * of another kind when it is close (MC_STEP_REACH), since the steps gain more on some plans
     * than on others (DGX-1, 96 MiB from GPU 5: the plan descended at shared pace, evened out
     * and staggered, 992.8 us, 985.4 us after its steps; the solved plan 998.0 us, 976.1 us). */
    r->sim_work_left += r->chunk ? 0 : MC_SIM_COARSE_WORK;
    variant_t kept = winner;
    if (!r->chunk) {
        MC_CHECK_GOTO(step_chunks(r, winner, v->t, v, replaced, &kept, err), out, st);
        int64_t left = r->sim_work_left;
        r->sim_work_left = MC_SIM_COARSE_WORK;
        if (runner_t <= MC_STEP_REACH * v->t)
            MC_CHECK_GOTO(step_chunks(r, runner, runner_t, v, replaced, &kept, err), out, st);
        r->sim_work_left = left;
    }
    r->kept = kept;
out:
    ahead_drop(r); /* begun for a variant the allowance did not reach */
    return st;
}

static void run_free(run_t *r)
{
    mc_comps_free(r->comps, r->ncomps);
    mc_cands_free(&r->cs);
    mc_shares_free(&r->sh);
    free(r->first);
    free(r->count);
    for (int k = 0; k < MC_SPLITS; k++)
        free(r->frac[k]);
    mc_assembled_free(r->assembled);
}

/* How far above the bound a winner is raced against the balanced synthesis (as the last races,
 * synth_meshcast_alt.c). */
#define MC_BALANCED_ROOM 1.02

/* Whether some share of the task has destinations on two hosts or more other than its first
 * holder's: where its chains across hosts can visit them wrapped around (synth_balanced). */
static int chains_across(const mc_task_t *task, const mc_topo_t *topo)
{
    mc_shares_t sh;
    int nlocal, across = 0;
    mc_shares_build(task, topo, &sh);
    for (int i = 0; i < sh.n && !across; i++)
        across = mc_cands_hosts_away(topo, &sh.s[i], task->pieces[sh.s[i].piece].holders[0],
                                     &nlocal) >= 2;
    mc_shares_free(&sh);
    return across;
}

/* One synthesis from the candidates, in two steps: its components solved (synth_solve), then the
 * solved plan certified and raced by the referee (synth_race): r->kept gets the variant that won,
 * *v its verdict. */
static mc_status_t synth_solve(run_t *r, mc_err_t *err)
{
    mc_comps_build(r->task, r->topo, &r->sh, &r->cs, r->first, r->count, r->chunk,
                   r->frac[MC_SPLIT_LOAD], &r->comps, &r->ncomps);
    return mc_meshcast_solve(r, err);
}

static mc_status_t synth_race(run_t *r, verdict_t *v, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int replaced;
    r->kept = (variant_t){.kind = MC_PLAN_SOLVED, .form = FORM_DECODED};
    MC_CHECK_GOTO(race(r, r->kept, 0, v, err), out, st);
    /* A plan too large to simulate states its estimate; a variant is faster when its simulated
     * time beats the time the simulation of the plan had reached when it stopped. */
    verdict_t solved = *v;
    if (!v->simulated)
        v->t = v->reached;
    MC_CHECK_GOTO(referee(r, v, &replaced, err), out, st);
    if (!replaced)
        *v = solved;
out:
    return st;
}

/* The longest wait on any root-to-leaf path of the trees a one-phase plan of this kind uses
 * (alpha + route latency per edge, summed along the path): the simulator charges it before a
 * chunk crosses each edge, so no leaf has its first chunk sooner and the plan's makespan is at
 * least this. */
static double plan_depth_s(const run_t *r, int kind)
{
    double most = 0, *wait = NULL; /* per edge of one tree: the waits down to its child */
    int cap = 0;
    for (int i = 0; i < r->ncomps; i++) {
        const mc_comp_t *cp = &r->comps[i];
        const mc_plan_sol_t *sol = &(cp->same_as >= 0 ? &r->comps[cp->same_as] : cp)->plans[kind];
        for (int c = 0; c < cp->plan.ncands && sol->nphases == 1; c++) {
            const mc_cand_t *cd = &r->cs.c[cp->cand_ids[c]];
            if (sol->units[c] <= 0)
                continue;
            MC_GROW(wait, cap, cd->nedges);
            for (int e = 0; e < cd->nedges; e++) {
                wait[e] = cd->edge_hop[e] + (cd->edge_up[e] >= 0 ? wait[cd->edge_up[e]] : 0);
                most = wait[e] > most ? wait[e] : most;
            }
        }
    }
    free(wait);
    return most;
}

/* The balanced plan (docs/synthesis.md, "Session 16: all-gathers over many hosts"): every share
 * whole on one of its candidates, placed by link load (mc_plan_balanced). Where some share
 * crosses to several hosts (chains_across), over the shape-based candidates with every chain
 * across hosts visiting them from its root's host on, wrapping around, in a synthesis of its own
 * (b, fresh); else over the winner's own components. */
static mc_status_t balanced_plans(run_t *b, int fresh, mc_err_t *err)
{
    if (fresh) {
        b->wrap = 1;
        mc_status_t st = mc_meshcast_gen_cands(b, 0, err);
        if (st != MC_OK)
            return st;
        mc_comps_build(b->task, b->topo, &b->sh, &b->cs, b->first, b->count, b->chunk, NULL,
                       &b->comps, &b->ncomps);
    }
    /* made again where the end of a synthesis made ahead is made again (synth_both) */
    for (int i = 0; i < b->ncomps; i++)
        if (b->comps[i].same_as < 0) {
            mc_plan_sol_free(&b->comps[i].plans[MC_PLAN_BALANCED]);
            mc_plan_balanced(&b->comps[i].plan, &b->comps[i].plans[MC_PLAN_BALANCED]);
            b->comps[i].has[MC_PLAN_BALANCED] = 1;
        }
    return MC_OK;
}

static const variant_t balanced_plan = {.kind = MC_PLAN_BALANCED, .form = FORM_DECODED};

/* The fresh balanced synthesis's simulation made apart: its schedule is built before the other
 * syntheses and timed on a thread of its own, as synth_balanced times it where the winner was
 * not simulated (the summary's allowance, no horizon, the cut at the bound), while they are
 * synthesized; synth_balanced hands its end to the memo, which then decides that race as by a
 * run of its own (the same run: it is deterministic). Where the race is not run, or is run up to
 * a horizon before the run apart has ended, the run apart is cancelled. */
typedef struct balanced_apart {
    mc_sched_t *d;             /* the schedule (NULL: none made apart) */
    const mc_topo_t *topo;
    double floor, t;
    int64_t allowed, left, flows;
    atomic_int cancel, done;
    mc_status_t st;
    mc_apart_t *thread;
} balanced_apart_t;

static void balanced_apart_run(void *arg)
{
    balanced_apart_t *a = arg;
    mc_sim_result_t res;
    mc_err_t err = {0};
    a->st = mc_sim_run_apart(a->d, a->topo, &a->left, a->floor, &a->cancel, &a->flows, &res,
                             &err);
    a->t = res.makespan_s;
    mc_sim_result_free(&res);
    atomic_store(&a->done, 1);
}

static mc_status_t balanced_begin(run_t *b, balanced_apart_t *a, mc_err_t *err)
{
    char name[64];
    mc_status_t st = balanced_plans(b, 1, err);
    if (st == MC_OK)
        st = build(b, balanced_plan, &a->d, name, sizeof name, err);
    if (st != MC_OK)
        return st;
    a->topo = b->topo;
    a->floor = b->bound.seconds;
    a->allowed = a->left = b->opts->sim_work > 0 ? b->opts->sim_work : INT64_MAX / 2;
    a->thread = mc_apart_start_idle(balanced_apart_run, a);
    return MC_OK;
}

/* Ends the run apart, waiting for it (wait) or cancelling it where it has not ended; an end is
 * handed to memo m (NULL: none). */
static void balanced_end(balanced_apart_t *a, mc_sim_memo_t *m, int wait)
{
    if (!a->d)
        return;
    if (!wait && !atomic_load(&a->done))
        atomic_store(&a->cancel, 1);
    mc_apart_join(a->thread);
    a->thread = NULL;
    if (m && a->st == MC_OK)
        mc_sim_memo_put_ended(m, a->d, a->t, a->allowed - a->left, a->flows);
    mc_sched_free(a->d);
    a->d = NULL;
}

/* The balanced synthesis b (balanced_plans; a: its run apart, or NULL where b is the winner won
 * itself, timed *w) raced: where the winner was simulated, the balanced plan is timed within
 * one referee's allowance up to its time. Where it was not, the summary simulates the written
 * schedule within the caller's allowance (opts->sim_work) in any case, and a balanced plan
 * simulated to its end is not simulated again (the memo): it gets that allowance, waiting for
 * its run apart, where it moves fewer chunks over tree edges than the winner (its 64 trees over
 * eight RTX 3090 boxes, 1 GiB: 47 M units, 2.5 s, where the summary stopped the winner's 275 trees
 * at 200 M, 16 s), and one referee's allowance where it moves more: chunks are a poor measure of
 * the work (the chains of a 64 MiB all-gather over sixteen 4-GPU hosts of one NIC each, 96,768
 * chunk moves, ended in 0.4 M units at 1.016 of the bound; the winner's 91,224 ran out of 7 M,
 * and the summary found it at 1.48). Its time is known up to MC_STEP_REACH times the winner's, so
 * that one close behind races its channels too (mc_synth_meshcast). */
static mc_status_t synth_balanced(run_t *b, run_t *won, const verdict_t *w, balanced_apart_t *a,
                                  verdict_t *v, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_sched_t *d = NULL;
    char name[64];
    int whole = 0; /* timed within the summary's allowance */
    if (!a)
        MC_CHECK_GOTO(balanced_plans(b, 0, err), out, st);
    /* its deepest path alone outlasts the winner: it cannot win (the 4 MiB all-gathers, whose
     * winner is one level of hosts deep, its chains seven) */
    if (w->simulated && plan_depth_s(b, MC_PLAN_BALANCED) >= w->t)
        goto out;
    b->sim_work_left = MC_SIM_WORK;
    if (!w->simulated) {
        int64_t flows;
        MC_CHECK_GOTO(build(won, won->kept, &d, name, sizeof name, err), out, st);
        flows = sched_flows(d);
        mc_sched_free(d);
        d = NULL;
        MC_CHECK_GOTO(build(b, balanced_plan, &d, name, sizeof name, err), out, st);
        whole = sched_flows(d) <= flows;
        if (whole)
            b->sim_work_left = b->opts->sim_work > 0 ? b->opts->sim_work : INT64_MAX / 2;
    }
    if (a)
        balanced_end(a, b->memo, whole);
    MC_CHECK_GOTO(race(b, balanced_plan, w->simulated ? MC_STEP_REACH * w->t : 0, v, err), out,
                  st);
    /* the caller's allowance was for timing the plan: the channel race adds its own */
    if (!w->simulated)
        b->sim_work_left = 0;
out:
    mc_sched_free(d);
    return st;
}

/* What the end of a synthesis reads besides its winner: the synthesis's run (its chunk, options
 * and bound), the balanced synthesis and its run apart (across: chains_across). */
typedef struct ending {
    const run_t *r;
    run_t *bal;
    balanced_apart_t *apart;
    int across;
} ending_t;

/* The work a winner too large to simulate may take in its coarser forms (time_estimated): the
 * coarsest form of the priced plan of a 1 GiB all-gather over four hosts of eight bridged H100
 * PCIe GPUs (445 trees, every one at one chunk: 13,795 chunk crossings) takes 9.1 M units, since
 * every event re-rates the flows of hundreds of trees that share the network. */
#define MC_SIM_FIT_WORK (2 * MC_SIM_WORK)
/* Coarser forms are raced only against a plan this many times slower than the winner's estimate:
 * over 722 tasks (the sweeps of sessions 33-35, the 96 on eight hosts, and session 40's PCIe
 * and RCCL clusters) they won where that plan was 1.40-3.31 times the estimate, and of the 14
 * ladders that won nothing, 12 raced a plan below 1.5 times it (1.00-1.48, up to 14 M units
 * each). Solved plans simulated in full (RCCL's 810 cases and session 40's PCIe shapes) take at
 * most 1.27 times their estimate in 19 of 20 cases at 1 GiB, 1.44 at 64 MiB. */
#define MC_FIT_ROOM 1.5
/* Units per chunk crossing that the first of those forms is taken to need before any is timed:
 * where hundreds of trees share links, the ladders took 88-660 per crossing; the coarsest form of
 * a 56 MiB all-gather over eight MI250 hosts under leaves (87,507 crossings, 160 each in
 * MC_SIM_FIT_WORK) reached 165 us of its 820 us in all of it. */
#define MC_FIT_PACE 200.0
/* A form is skipped, but for the last (half the chunks), where it has less than this many times
 * the chunk crossings of the last form raced: where most trees are at one or two chunks already,
 * halving again changes a few trees (the 1 GiB all-gather over two 16-GCD MI250 boxes: 31,186
 * crossings with an eighth of the chunks, 32,426 with a quarter, raced for 2.9 M units). */
#define MC_FIT_STEP (4.0 / 3.0)

/* The chunk crossings (sched_flows) of variant x with its chunk counts divided by fit. */
static mc_status_t fitted_flows(run_t *r, variant_t x, int fit, int64_t *flows, mc_err_t *err)
{
    mc_sched_t *d = NULL;
    char name[64];
    x.fit = fit;
    mc_status_t st = build(r, x, &d, name, sizeof name, err);
    *flows = st == MC_OK ? sched_flows(d) : 0;
    mc_sched_free(d);
    return st;
}

/* The most forms race_fitted tells apart: divisors 1 to 2^24, MC_SCHED_MAX_CHUNKS. */
#define MC_FIT_FORMS 25

/* Winner x (timed *v by its estimate) in coarser forms, each raced up to the time of the
 * fastest so far (t, at first the plan it races): its chunk counts divided by the largest power
 * of two that still leaves some tree more than one chunk, then by half that, and so on
 * (MC_FIT_STEP), while the next form, at the pace of the last one per chunk crossing
 * (MC_FIT_PACE for the first), fits what is left of MC_SIM_FIT_WORK. The fastest that is
 * simulated goes into *v and won->kept. Forms with fewer chunks pipeline less but simulate in
 * far less work: on the all-gather above the plan as solved needs 60 M units and simulates at
 * 17.1 ms; at one chunk per tree 9.1 M units, 23.3 ms; with a quarter of its chunks 12.8 M,
 * 18.7 ms; the balanced plan it lost to, 40.0 ms. */
static mc_status_t race_fitted(run_t *won, variant_t x, double t, verdict_t *v, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int64_t flows[MC_FIT_FORMS], left = won->sim_work_left, work = MC_SIM_FIT_WORK;
    int n = 1; /* flows[k]: the crossings with the chunk counts divided by 2^k, k < n */
    /* the coarsest form: where halving the chunk counts again moves nothing */
    MC_CHECK_GOTO(fitted_flows(won, x, 1, &flows[0], err), out, st);
    for (; n < MC_FIT_FORMS; n++) {
        MC_CHECK_GOTO(fitted_flows(won, x, 1 << n, &flows[n], err), out, st);
        if (flows[n] == flows[n - 1])
            break;
    }
    double pace = MC_FIT_PACE, raced = 0;
    for (int k = n - 1; k >= 1; k--) {
        verdict_t dv;
        variant_t y = x;
        y.fit = 1 << k;
        if (k > 1 && (double)flows[k] < MC_FIT_STEP * raced)
            continue;
        if (pace * (double)flows[k] > (double)work)
            break;
        won->sim_work_left = work;
        MC_CHECK_GOTO(race(won, y, t, &dv, err), out, st);
        work = won->sim_work_left;
        if (!dv.simulated && !dv.beaten)
            break;
        raced = (double)flows[k];
        pace = (double)dv.work / (double)flows[k];
        if (dv.simulated) {
            t = dv.t;
            *v = dv;
            won->kept = y;
        }
    }
out:
    won->sim_work_left = left;
    return st;
}

/* A winner known by its estimate only (*v: its allowance did not cover it), timed within one
 * referee's allowance up to the simulated time t of the plan it races: into *v where it ends
 * sooner, else *v stays and the timed plan wins (plain_beats, finish). Where, at the pace of
 * the run that stopped, its estimate lies beyond that allowance (the uneven 1 GiB all-to-all
 * over four A100 and four H100 boxes: 32.6 us reached in 3.5 M units of 614.7 us estimated),
 * its coarser forms are raced instead where t is far above the estimate (race_fitted,
 * MC_FIT_ROOM). A simulated time alone did not beat an estimate: the priced plan of a 1 GiB
 * all-gather over eight 4-GPU hosts under three spines (88,288 flows) ran out of the half
 * allowance it races with (0.647 s reached of 0.971 s estimated) and lost to the plain plan's
 * 2.28 s, then to XLA's ring (2.00 of the bound); timed, it ends at 1.009 s (1.04) in 4.3 M
 * units. More than one allowance was too much: the 1 GiB all-gathers over eight RTX 3090 or
 * MI250 boxes went 1.1 -> 9.2 s and 1.6 -> 5.9 s with the summary's, for the same schedule. */
static mc_status_t time_estimated(run_t *won, verdict_t *v, double t, mc_err_t *err)
{
    verdict_t vw;
    int64_t left = won->sim_work_left;
    if (v->reached <= 0)
        return MC_OK;
    if ((double)v->work * v->t / v->reached > MC_SIM_WORK)
        return t > MC_FIT_ROOM * v->t ? race_fitted(won, won->kept, t, v, err) : MC_OK;
    won->sim_work_left = MC_SIM_WORK;
    mc_status_t st = race(won, won->kept, t, &vw, err);
    won->sim_work_left = left;
    if (st == MC_OK && vw.simulated)
        *v = vw;
    return st;
}

/* The end of a synthesis from its winner won (timed *v): where the winner is more than
 * MC_BALANCED_ROOM above the bound or was not simulated, the balanced plan races it
 * (synth_balanced), timed up to its time: many shares that each load the same kinds of links (an
 * all-gather, every GPU's shard to every host) are placed by the fractional model on many small
 * trees per share, which the simulator runs far slower than their load says and often cannot
 * time within the allowance (1 GiB over eight MI300X boxes: 567 trees, an estimate of 2.98 ms,
 * 4.26 ms simulated by the summary); one tree per share, the chains wrapped around, 2.94 ms. It
 * must be simulated faster to be kept. Then the winner is cut into channels (beside the balanced
 * plan close behind), and the last races. The schedule into *s, its verdict into *v. */
static mc_status_t finish(const ending_t *e, run_t *won, verdict_t *v, mc_sched_t **s,
                          mc_err_t *err)
{
    const run_t *r = e->r;
    mc_status_t st = MC_OK;
    verdict_t vb = {0};
    char name[64];
    run_t *runner = NULL; /* the balanced plan's synthesis where it lost by MC_STEP_REACH or less */
    /* (not where the winner is its own balanced plan already: priced_timed) */
    if (!r->chunk && !r->opts->memory_limit &&
        (e->across || won->kept.kind != MC_PLAN_BALANCED) &&
        (!v->simulated || v->t > MC_BALANCED_ROOM * r->bound.seconds)) {
        run_t *b = e->across ? e->bal : won;
        int64_t left = won->sim_work_left;
        MC_CHECK_GOTO(synth_balanced(b, won, v, e->across ? e->apart : NULL, &vb, err), out, st);
        if (vb.simulated && !v->simulated)
            MC_CHECK_GOTO(time_estimated(won, v, vb.t, err), out, st);
        if (vb.simulated && (!v->simulated || vb.t < v->t)) {
            *v = vb;
            won = b;
            won->kept = balanced_plan;
        } else {
            won->sim_work_left = left;
            runner = vb.simulated && v->simulated ? b : NULL;
        }
    }
    balanced_end(e->apart, NULL, 0);
    if (!r->chunk && v->simulated)
        MC_CHECK_GOTO(synth_channels(&won, v, runner, balanced_plan, &vb, err), out, st);
    MC_CHECK_GOTO(build(won, won->kept, s, name, sizeof name, err), out, st);
    if (!r->chunk && v->simulated && !r->opts->memory_limit) {
        won->last_work_left = MC_SIM_LAST_WORK;
        MC_CHECK_GOTO(mc_meshcast_race_striped(won, s, v, err), out, st);
        won->last_work_left = MC_SIM_LAST_WORK;
        MC_CHECK_GOTO(mc_meshcast_race_ring(won, s, v, err), out, st);
        won->last_work_left = MC_SIM_LAST_WORK;
        MC_CHECK_GOTO(mc_meshcast_race_looped(won, s, v, err), out, st);
        won->last_work_left = MC_SIM_LAST_WORK;
        MC_CHECK_GOTO(mc_meshcast_race_ramp(won, s, v, err), out, st);
        won->last_work_left = MC_SIM_LAST_WORK;
        MC_CHECK_GOTO(mc_meshcast_race_phased(won, s, v, err), out, st);
        won->last_work_left = MC_SIM_LAST_WORK;
        MC_CHECK_GOTO(mc_meshcast_race_side(won, s, v, err), out, st);
    }
    memcpy((*s)->params, v->params, sizeof (*s)->params);
out:
    return st;
}

/* The synthesis from the shape-based candidates alone (mc_synth_meshcast), made on a thread of
 * its own while the priced synthesis solves its components: it reads the task, the topology and
 * its own candidates, and until the priced synthesis races, nothing else touches what it writes
 * (the memos of simulations, chunks and validity it shares; the topology's caches of routes and
 * of host trees, and igraph, are locked: topo_route.c, mc_topo_igraph_lock). Once it has raced,
 * done is set; left_over says whether it left allowance over (plain_left), and where it did, or
 * where it beats the priced synthesis's verdict handed in (priced, once priced_ready is set),
 * abandon tells the priced synthesis that what it made ahead is of no use (synth_both). */
typedef struct plain_apart {
    run_t *r;
    verdict_t *v;
    mc_status_t st;
    mc_err_t err;
    int left_over;
    verdict_t priced;
    atomic_int priced_ready, abandon, done;
} plain_apart_t;

/* What the plain synthesis hands on to the priced one: the allowance it left, none where it
 * spent all of it (a last run overshoots its allowance by a batch of events, or is charged one
 * unit more where the cut stopped it). */
static int64_t plain_left(const run_t *plain)
{
    return plain->sim_work_left > 0 ? plain->sim_work_left : 0;
}

/* Whether the plain synthesis (timed *v2) beats the priced one (*v): a simulated time beats an
 * estimate (a plan too large to simulate is estimated by the model that leaves out what the
 * simulator charges: a 1 GiB all-gather over 8 DGX H100, the shape-based plan of 585 trees
 * estimated 2.61 ms, simulated 4.54 ms; the priced one simulated 2.98 ms). A priced plan known
 * by its estimate is timed first where the plain one was simulated (time_estimated). */
static int plain_beats(const verdict_t *v, const verdict_t *v2)
{
    return v->simulated ? v2->simulated && v2->t <= v->t : v2->simulated || v2->t <= v->t;
}

static void plain_apart_run(void *arg)
{
    plain_apart_t *a = arg;
    a->st = mc_meshcast_gen_cands(a->r, 0, &a->err);
    if (a->st == MC_OK)
        a->st = synth_solve(a->r, &a->err);
    if (a->st == MC_OK)
        a->st = synth_race(a->r, a->v, &a->err);
    a->left_over = a->st != MC_OK || plain_left(a->r) > 0;
    if (a->left_over)
        atomic_store(&a->abandon, 1);
    atomic_store(&a->done, 1);
    /* looked at after done is set: synth_both hands the verdict in before it looks at done, so a
     * verdict it made ahead on is seen here */
    if (atomic_load(&a->priced_ready) && plain_beats(&a->priced, a->v))
        atomic_store(&a->abandon, 1);
}

/* A run's state that the end of a synthesis changes, kept to be put back. */
typedef struct run_state {
    variant_t kept;
    int64_t sim_work_left, last_work_left;
    mc_sim_memo_t *memo;
    mc_chunk_memo_t *chunks;
    mc_valid_memo_t *valid;
} run_state_t;

static run_state_t state_of(const run_t *r)
{
    return (run_state_t){r->kept, r->sim_work_left, r->last_work_left, r->memo, r->chunks,
                         r->valid};
}

static void state_back(run_t *r, const run_state_t *s)
{
    r->kept = s->kept;
    r->sim_work_left = s->sim_work_left;
    r->last_work_left = s->last_work_left;
    r->memo = s->memo;
    r->chunks = s->chunks;
    r->valid = s->valid;
}

/* Points r at the memos of run from. */
static void share_memos(run_t *r, const run_t *from)
{
    r->memo = from->memo;
    r->chunks = from->chunks;
    r->valid = from->valid;
}

/* Gives r memos of its own (the races made ahead). */
static void own_memos(run_t *r)
{
    r->memo = mc_sim_memo_new();
    r->chunks = mc_chunk_memo_new();
    r->valid = mc_valid_memo_new();
}

/* Frees the memos own_memos gave r, its sim memo's runs handed to `to` first: as to's own
 * where they are what to's synthesis would have run (mc_sim_memo_take), else aside
 * (mc_sim_memo_set_aside: made under other allowances, they spare the runs made again). */
static void drop_memos(run_t *r, mc_sim_memo_t *to, int own)
{
    if (own)
        mc_sim_memo_take(to, r->memo);
    else
        mc_sim_memo_set_aside(to, r->memo);
    mc_chunk_memo_free(r->chunks);
    mc_valid_memo_free(r->valid);
}

/* The two syntheses where pricing added trees (mc_synth_meshcast): the plain one on a thread of
 * its own (plain_apart_run) while the priced one solves; the priced one then races with half an
 * allowance more than the plain one left. Where the plain one is still racing, the priced one
 * races at once, as if none was left (the plain synthesis of a large all-gather spends all of
 * its allowance on its solved plan), on memos of its own, and stops at its next race once the
 * plain one has left some (abandon; race): then it races again with what was left. Either way its
 * races are those it would make after the plain one, with the same outcomes, since a memo
 * decides a run as a run of its own would. Where the plain one is racing still, the end of the
 * synthesis (finish) is made ahead too, on the priced winner, the balanced synthesis on memos of
 * its own: it stands where the plain one neither left allowance nor beat the priced one (then
 * *s is the schedule and *ended is set), else the runs' states are put back. */
static mc_status_t synth_both(run_t *r, run_t *plain, verdict_t *v, verdict_t *v2,
                              const ending_t *e, mc_sched_t **s, int *ended, mc_err_t *err)
{
    plain_apart_t pa = {.r = plain, .v = v2};
    mc_apart_t *th = mc_apart_start(plain_apart_run, &pa);
    mc_status_t st = synth_solve(r, err), ahead_st = MC_OK, end_st = MC_ERR_TIMEOUT;
    int ahead = st == MC_OK && !atomic_load(&pa.done);
    verdict_t vend;
    mc_sched_t *send = NULL;
    run_state_t rs = state_of(r), bs = state_of(e->bal);
    mc_err_t end_err = {0};
    if (ahead) {
        own_memos(r);
        r->stale = &pa.abandon;
        r->sim_work_left = MC_SIM_WORK / 2;
        ahead_st = synth_race(r, v, err);
        pa.priced = *v;
        atomic_store(&pa.priced_ready, ahead_st == MC_OK);
        if (ahead_st == MC_OK && !atomic_load(&pa.done)) {
            rs = state_of(r);
            own_memos(e->bal);
            e->bal->stale = &pa.abandon;
            vend = *v;
            end_st = finish(e, r, &vend, &send, &end_err);
            e->bal->stale = NULL;
        }
        r->stale = NULL;
    }
    mc_apart_join(th);
    if (st == MC_OK && pa.st != MC_OK) {
        *err = pa.err;
        st = pa.st;
    }
    int stands = ahead && st == MC_OK && !pa.left_over && end_st == MC_OK && !plain_beats(v, v2);
    if (e->bal->memo != bs.memo) { /* the end made ahead: taken, or put back */
        drop_memos(e->bal, bs.memo, stands);
        state_back(e->bal, &bs);
        if (!stands) {
            mc_sched_free(send);
            state_back(r, &rs);
        }
    }
    if (ahead && (st != MC_OK || pa.left_over)) { /* back to the shared memos (the caller's) */
        drop_memos(r, plain->memo, 0);
        share_memos(r, plain);
        ahead = 0;
    }
    if (ahead && st == MC_OK) { /* its runs into the shared memo: the caller may time the
                                 * schedule again (cmd_synth's summary) */
        mc_sim_memo_take(plain->memo, r->memo);
        r->memo = plain->memo;
    }
    if (stands) {
        *v = vend;
        *s = send;
        *ended = 1;
    }
    if (st != MC_OK || ahead)
        return st != MC_OK ? st : ahead_st;
    r->sim_work_left = MC_SIM_WORK / 2 + plain_left(plain);
    return synth_race(r, v, err);
}

/* The priced synthesis r's winner known by its estimate only (*v), where the plain one's was
 * simulated (*v2): timed (time_estimated), else, where the balanced plan is r's own (not the
 * chains across hosts that both syntheses share), that plan raced as finish would race it
 * (synth_balanced), and kept in r->kept and *v where it is simulated faster than the plain
 * winner: on the uneven 64 MiB all-to-all over four A100 and four H100 boxes the priced
 * plan's 16,429 flows need 14.5 M units, the plain winner (the direct sends) is at 1.50 of the
 * bound, and the priced trees placed whole by load at 1.07. */
static mc_status_t priced_timed(run_t *r, const ending_t *e, verdict_t *v, const verdict_t *v2,
                                mc_err_t *err)
{
    verdict_t vb;
    mc_status_t st = time_estimated(r, v, v2->t, err);
    if (st != MC_OK || v->simulated || e->across || r->chunk || r->opts->memory_limit)
        return st;
    int64_t left = r->sim_work_left;
    st = synth_balanced(r, r, v, NULL, &vb, err);
    r->sim_work_left = left;
    if (st == MC_OK && vb.simulated && vb.t < v2->t) {
        *v = vb;
        r->kept = balanced_plan;
    }
    return st;
}

mc_status_t mc_synth_meshcast(mc_task_t *task, const mc_topo_t *topo,
                              const mc_synth_opts_t *opts, mc_sched_t **out, mc_err_t *err)
{
    mc_synth_opts_t defaults = MC_SYNTH_OPTS_DEFAULT;
    run_t r = {.task = task, .topo = topo, .opts = opts ? opts : &defaults,
               .sim_work_left = MC_SIM_WORK};
    r.memo = r.opts->memo ? r.opts->memo : mc_sim_memo_new();
    r.chunks = mc_chunk_memo_new();
    r.valid = mc_valid_memo_new();
    r.chunk = r.opts->chunk_bytes;
    run_t plain = r, bal = r;
    mc_sched_t *s = NULL;
    mc_status_t st = MC_OK;
    verdict_t v, v2 = {0};
    balanced_apart_t apart = {0};
    *out = NULL;
    MC_CHECK_GOTO(mc_task_split(task, err), out, st);
    MC_CHECK_GOTO(mc_task_check_topo(task, topo, err), out, st);
    MC_CHECK_GOTO(mc_task_bound(task, topo, &r.bound, err), out, st);
    plain.bound = r.bound;
    bal.bound = r.bound;
    int across = !r.chunk && !r.opts->memory_limit && chains_across(task, topo);
    if (across)
        MC_CHECK_GOTO(balanced_begin(&bal, &apart, err), out, st);
    MC_CHECK_GOTO(mc_meshcast_gen_cands(&r, 1, err), out, st);
    /* Priced trees lower the fractional optimum, but the simulator also charges what the model
     * does not (pipeline fill of deeper trees, trees sharing links finishing apart): when pricing
     * added trees, the synthesis from the shape-based candidates alone (what it would be without
     * them, with its whole simulation allowance) races the priced one, which gets half an
     * allowance more, so that pricing never makes a schedule slower. */
    ending_t end = {&r, &bal, &apart, across};
    int ended = 0;
    if (r.price.added) {
        MC_CHECK_GOTO(synth_both(&r, &plain, &v, &v2, &end, &s, &ended, err), out, st);
    } else {
        MC_CHECK_GOTO(synth_solve(&r, err), out, st);
        MC_CHECK_GOTO(synth_race(&r, &v, err), out, st);
    }
    if (!ended) {
        run_t *won = &r;
        if (r.price.added && !v.simulated && v2.simulated)
            MC_CHECK_GOTO(priced_timed(&r, &end, &v, &v2, err), out, st);
        if (r.price.added && plain_beats(&v, &v2)) {
            v = v2;
            won = &plain;
        }
        MC_CHECK_GOTO(finish(&end, won, &v, &s, err), out, st);
    }
    /* On one mesh, the collective form wins when memory is tight or when it is faster; then the
     * baselines' plans where they are faster. */
    MC_CHECK_GOTO(
        mc_synth_collectives_referee(task, topo, r.opts, MC_SIM_LAST_WORK, &s, &v.t, err), out,
        st);
    if (r.opts->progress) {
        char a[32];
        fprintf(stderr, "meshcast: %s %s (%s)\n", v.simulated ? "simulated" : "estimated",
                mc_fmt_seconds(v.t, a, sizeof a), s->params);
    }
    *out = s;
    s = NULL;
out:
    balanced_end(&apart, NULL, 0);
    mc_sched_free(s);
    run_free(&r);
    run_free(&plain);
    run_free(&bal);
    if (r.chunks != plain.chunks) { /* the priced synthesis's own, made ahead (synth_both) */
        mc_chunk_memo_free(r.chunks);
        mc_valid_memo_free(r.valid);
    }
    if (plain.memo != r.opts->memo)
        mc_sim_memo_free(plain.memo);
    mc_chunk_memo_free(plain.chunks);
    mc_valid_memo_free(plain.valid);
    return st;
}
