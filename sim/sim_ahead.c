/* Runs made ahead (mc_sim_ahead_start): a schedule simulated on a thread of its own before its
 * allowance and horizon are known, then decided under them (mc_sim_run_memo_ahead) exactly as a
 * run begun then would be. The synthesis races its tries one after another, each under what the
 * one before left (docs/synthesis.md, "Session 27"); the next try is made ahead beside the one
 * racing.
 *
 * The run made ahead goes up to `work` units and up to `most_horizon` (no less than the true
 * horizon can be; 0: none, and then none for the true one either), with no cut, and records what
 * it saw (sim_seen_t). A run under the true allowance A and horizon H passes the same batches of
 * events and makes the same checks (sim.c, stop_here) until one stops it:
 * - the allowance: no batch it ran was past A (the last one's work is A or less);
 * - the horizon: the first batch whose last event, or least end from its links' loads, was past
 *   H. The latest of those times only grows, so that batch is one at which it grew, recorded
 *   where it reached `least_horizon` (H is no less);
 * - the cut: it fires at a batch past A/4 whose pace (time reached per unit of work) is below
 *   floor / (SIM_CUT_MARGIN * A). The slowest pace of each of SIM_SEEN_PACES spans of work up to
 *   `work` is recorded: where none of the spans past A/4 is that slow (by a margin for
 *   rounding), no batch was cut; otherwise the run is not decided here.
 * Where it ended or a recorded batch stops it, that is the outcome; where it stopped at its
 * allowance or was handed over (cancelled), it goes on under A and H from that batch, whose checks
 * it makes again (sim_run_until_counted). Anything else (a batch past A, H below least_horizon,
 * a record full, a pace too slow) is left to a run begun afresh. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_internal.h"

struct mc_sim_ahead {
    const mc_sched_t *s;
    const mc_topo_t *topo;
    int64_t work;
    double most_horizon;
    sim_seen_t seen;
    atomic_int cancel;
    mc_apart_t *thread;
    /* what the run made ahead came to */
    mc_status_t st;
    sim_t *run;
    mc_sim_result_t res;
};

/* The span of the paces watched (sim_seen_t) that holds work, up to the run's (the last span,
 * and above). */
static int span_of(const sim_seen_t *seen, int64_t work)
{
    if (seen->work <= 0)
        return 0;
    int64_t i = work * SIM_SEEN_PACES / seen->work;
    return i < SIM_SEEN_PACES ? (int)i : SIM_SEEN_PACES - 1;
}

void sim_seen_batch(sim_seen_t *seen, int64_t work, double now, double last, double end,
                    double reached)
{
    double t = end > last ? end : last;
    if (t > seen->most) {
        seen->most = t;
        if (t >= seen->from && seen->n < SIM_SEEN_MAX)
            seen->at[seen->n++] = (sim_seen_at_t){work, now, last, end};
        else if (t >= seen->from)
            seen->overflow = 1;
    }
    seen->last_work = work;
    int i = span_of(seen, work);
    if (!seen->slow_work[i] ||
        reached * (double)seen->slow_work[i] < seen->slow_reached[i] * (double)work) {
        seen->slow_work[i] = work;
        seen->slow_reached[i] = reached;
    }
}

/* Whether the cut under the allowance w and floor_s may have stopped a batch seen: the slowest
 * pace of each span with work past w / 4, weighed as stop_here weighs a batch's (with a margin
 * for the rounding of the paces compared). */
static int may_cut(const sim_seen_t *seen, int64_t w, double floor_s)
{
    if (seen->work < w / 4) /* a quarter of w is past every batch seen */
        return 0;
    for (int i = 0; floor_s > 0 && i < SIM_SEEN_PACES; i++)
        if (seen->slow_work[i] && span_of(seen, w / 4) <= i &&
            SIM_CUT_MARGIN * seen->slow_reached[i] * (double)w <
                floor_s * (double)seen->slow_work[i] * (1 + 1e-9))
            return 1;
    return 0;
}

static void run_ahead(void *arg)
{
    mc_sim_ahead_t *a = arg;
    mc_err_t err = {0};
    a->st = sim_run_ahead(a->s, a->topo, a->work, a->most_horizon, &a->seen, &a->cancel,
                          &a->run, &a->res, &err);
}

mc_sim_ahead_t *mc_sim_ahead_start(const mc_sched_t *s, const mc_topo_t *topo, int64_t work,
                                   double least_horizon, double most_horizon)
{
    mc_sim_ahead_t *a = mc_xcalloc(1, sizeof *a);
    a->s = s;
    a->topo = topo;
    a->work = work;
    a->most_horizon = most_horizon;
    a->seen.from = least_horizon;
    a->seen.work = work;
    atomic_init(&a->cancel, 0);
    a->thread = mc_apart_start(run_ahead, a);
    return a;
}

const mc_sched_t *mc_sim_ahead_sched(const mc_sim_ahead_t *a)
{
    return a->s;
}

void mc_sim_ahead_stop(mc_sim_ahead_t *a)
{
    if (!a->thread)
        return;
    atomic_store(&a->cancel, 1);
    mc_apart_join(a->thread);
    a->thread = NULL;
}

void mc_sim_ahead_free(mc_sim_ahead_t *a)
{
    if (!a)
        return;
    mc_sim_ahead_stop(a);
    sim_run_free(a->run);
    mc_sim_result_free(&a->res);
    free(a);
}

int sim_ahead_decide(mc_sim_ahead_t *a, int64_t *work_left, double horizon_s, double floor_s,
                     int64_t *nflows, sim_t **paused, mc_sim_result_t *res, mc_status_t *st,
                     mc_err_t *err)
{
    mc_sim_ahead_stop(a);
    const sim_seen_t *seen = &a->seen;
    int64_t w = work_left ? *work_left : 0;
    if (!a->run || !work_left || seen->last_work > w || seen->overflow ||
        (horizon_s > 0) != (a->most_horizon > 0) || horizon_s > a->most_horizon ||
        (horizon_s > 0 && horizon_s < seen->from))
        return 0;
    if (a->st != MC_OK && a->st != MC_ERR_TIMEOUT)
        return 0;
    if (may_cut(seen, w, floor_s))
        return 0;
    *nflows = sim_run_flows(a->run);
    memset(res, 0, sizeof *res);
    if (MC_SIM_WORK_PER_FLOW * *nflows > w) {
        *st = mc_err_set(err, MC_ERR_TIMEOUT, "sim: %lld flows are beyond its work limit",
                         (long long)*nflows);
        return 1;
    }
    for (int i = 0; horizon_s > 0 && i < seen->n; i++) {
        const sim_seen_at_t *at = &seen->at[i];
        if (at->last <= horizon_s && at->end <= horizon_s)
            continue;
        res->makespan_s = at->last > horizon_s ? at->last : at->end;
        *work_left -= at->work;
        *st = mc_err_set(err, MC_ERR_TIMEOUT, "sim: stopped past its horizon (%g s)",
                         horizon_s);
        return 1;
    }
    if (a->st == MC_OK) {
        *res = a->res;
        memset(&a->res, 0, sizeof a->res);
        *work_left -= sim_run_work(a->run);
        *st = MC_OK;
        return 1;
    }
    if (!sim_run_can_go_on(a->run))
        return 0;
    sim_t *run = a->run;
    a->run = NULL;
    *st = sim_run_until_counted(a->s, a->topo, work_left, horizon_s, floor_s, nflows, &run, res,
                                err);
    if (horizon_s == 0) /* stopped at the allowance, kept to go on (as run_memo keeps it) */
        *paused = run;
    else
        sim_run_free(run);
    return 1;
}
