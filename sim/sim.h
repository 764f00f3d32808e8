/* sim: a deterministic, event-driven, flow-level simulator that times a schedule on a topology
 * (DESIGN.md section 6). Every chunk on every tree edge is a flow along the edge's route; active
 * flows share each link max-min fairly; relays store and forward per chunk; each message pays the
 * largest alpha (mc_topo_alpha) of its route's link kinds plus the route's hop latencies. Phases run
 * one after another. */
#ifndef MC_SIM_H
#define MC_SIM_H

#include <stdatomic.h>

#include "sched/sched.h"
#include "topo/topo.h"
#include "util/util.h"

typedef struct mc_sim_interval {
    int link;
    double t0, t1;     /* seconds */
    double rate;       /* bytes/s the link carried over the interval (sum over flows) */
} mc_sim_interval_t;

typedef struct mc_sim_result {
    double makespan_s;
    int nlinks;
    double *link_busy_s;   /* per link id: time with at least one active flow */
    double *link_bytes;    /* per link id: bytes carried */
    int nintervals;
    mc_sim_interval_t *intervals; /* per-link timeline, ordered by link then time */
    long nflows;           /* flows simulated */
} mc_sim_result_t;

mc_status_t mc_sim_run(const mc_sched_t *s, const mc_topo_t *topo, mc_sim_result_t *res,
                       mc_err_t *err);
/* The same simulation without the per-link timeline (nintervals is 0): the same makespan and
 * per-link totals in far less memory (a 1024-GPU schedule can make tens of millions of
 * intervals). For callers that only need the numbers: synth, bench. */
mc_status_t mc_sim_run_totals(const mc_sched_t *s, const mc_topo_t *topo, mc_sim_result_t *res,
                              mc_err_t *err);
/* mc_sim_run_totals within an allowance of work (events, plus the flows and links each one
 * re-rates: what its time grows with, counted the same on every machine). Takes
 * what it used from *work_left; when that runs out it stops with MC_ERR_TIMEOUT, and of the
 * result only makespan_s is set: the simulated time it reached, a lower bound on the makespan. */
mc_status_t mc_sim_run_bounded(const mc_sched_t *s, const mc_topo_t *topo, int64_t *work_left,
                               mc_sim_result_t *res, mc_err_t *err);
/* The least allowance a run of s starts under: MC_SIM_WORK_PER_FLOW units per flow it simulates
 * (those of its distinct groups, sim_groups.c; every flow costs two events and two re-ratings at
 * least). Under less, mc_sim_run_bounded and the runs below stop at once with MC_ERR_TIMEOUT,
 * taking nothing. */
#define MC_SIM_WORK_PER_FLOW 4
int64_t mc_sim_least_work(const mc_sched_t *s, const mc_topo_t *topo);
/* mc_sim_run_bounded that also stops, with MC_ERR_TIMEOUT, once the simulated time passes
 * horizon_s (0: never), makespan_s the time reached; or as soon as the bytes its links have still
 * to move end it past horizon_s, makespan_s that least end (sim.c, group_end_least): either way
 * a time past horizon_s and no later than the makespan. A caller looking for a schedule faster
 * than one it has does not pay for simulating the rest of a slower one. */
mc_status_t mc_sim_run_until(const mc_sched_t *s, const mc_topo_t *topo, int64_t *work_left,
                             double horizon_s, mc_sim_result_t *res, mc_err_t *err);
void mc_sim_result_free(mc_sim_result_t *res);

/* Outcomes of mc_sim_run_until remembered by schedule, for one topology (sim_memo.c). */
typedef struct mc_sim_memo mc_sim_memo_t;
mc_sim_memo_t *mc_sim_memo_new(void);
void mc_sim_memo_free(mc_sim_memo_t *m);
/* mc_sim_run_until on topo, whose outcome (status, makespan_s, the work taken from *work_left)
 * is that of an earlier run of the same schedule in m when that run decides it; then only
 * makespan_s is set in res. work_left NULL: no allowance (an earlier run that ended decides it;
 * a run without one is not remembered). */
mc_status_t mc_sim_run_memo(mc_sim_memo_t *m, const mc_sched_t *s, const mc_topo_t *topo,
                            int64_t *work_left, double horizon_s, mc_sim_result_t *res,
                            mc_err_t *err);
/* mc_sim_run_memo with the cut: floor_s > 0 is a time the schedule's makespan cannot be below
 * (the task's bound); a run that has taken a quarter of its allowance or more and whose simulated
 * time, at the pace of its work so far, would reach less than a fifth of floor_s by the end of
 * its allowance is stopped there with MC_ERR_TIMEOUT, the time reached in makespan_s, and charged
 * all of its allowance and one more unit, as the allowance would stop it (sim.c, stop_here). */
mc_status_t mc_sim_run_memo_cut(mc_sim_memo_t *m, const mc_sched_t *s, const mc_topo_t *topo,
                                int64_t *work_left, double horizon_s, double floor_s,
                                mc_sim_result_t *res, mc_err_t *err);
/* mc_sim_run_memo_cut with no horizon and no memo, which also stops (MC_ERR_TIMEOUT) as soon as
 * *cancel is set: a run made apart, on a thread of its own, whose end a memo then takes in
 * (mc_sim_memo_put_ended); *nflows gets the flows it has to simulate. */
mc_status_t mc_sim_run_apart(const mc_sched_t *s, const mc_topo_t *topo, int64_t *work_left,
                             double floor_s, const atomic_int *cancel, int64_t *nflows,
                             mc_sim_result_t *res, mc_err_t *err);
/* Remembers in m that a run of s with no horizon ended at makespan_s having used `work` for
 * `flows` flows (mc_sim_run_apart): later runs of s through m are decided by it as by a run m
 * made. */
void mc_sim_memo_put_ended(mc_sim_memo_t *m, const mc_sched_t *s, double makespan_s,
                           int64_t work, int64_t flows);
/* A run made ahead (sim_ahead.c): s simulated on a thread of its own, before the allowance and
 * horizon it is to be timed under are known, up to `work` units and a horizon from
 * least_horizon to most_horizon (0: none, and none for the true one either). s must outlive it. */
typedef struct mc_sim_ahead mc_sim_ahead_t;
mc_sim_ahead_t *mc_sim_ahead_start(const mc_sched_t *s, const mc_topo_t *topo, int64_t work,
                                   double least_horizon, double most_horizon);
const mc_sched_t *mc_sim_ahead_sched(const mc_sim_ahead_t *a);
/* Stops a's thread at its next batch of events and waits for it: what is left of the run is
 * made by the caller when it is decided. */
void mc_sim_ahead_stop(mc_sim_ahead_t *a);
/* Stops a run made ahead (at its next batch of events) and frees it. */
void mc_sim_ahead_free(mc_sim_ahead_t *a);
/* mc_sim_run_memo_cut of a's schedule, with the same outcome, makespan and work taken, and
 * remembered the same: where m does not decide it and the allowance and horizon cover what a ran,
 * from a's run, taken on from where it stopped or told from what it recorded; where they do not,
 * or its record cannot tell, run afresh. Frees a. */
mc_status_t mc_sim_run_memo_ahead(mc_sim_memo_t *m, mc_sim_ahead_t *a, const mc_topo_t *topo,
                                  int64_t *work_left, double horizon_s, double floor_s,
                                  mc_sim_result_t *res, mc_err_t *err);
/* Moves every run `from` remembers into m (as if m had made them) and frees `from`: runs made
 * on memos of their own, on another thread, handed on. */
void mc_sim_memo_take(mc_sim_memo_t *m, mc_sim_memo_t *from);
/* Keeps the runs `from` remembers aside in m and frees `from`: runs made ahead that were not m's
 * own (made under other allowances: the priced races made ahead and made again, or the end of a
 * synthesis made ahead in vain). A run through m that m does not decide is decided by one of
 * them only where it decides it as a run begun afresh would (ended or stopped past its horizon
 * under as much allowance or less, and the same floor or a higher one: sim_memo.c, find), and is
 * then remembered in m as that run would be; so m answers every run as it would without them. */
void mc_sim_memo_set_aside(mc_sim_memo_t *m, mc_sim_memo_t *from);
/* Whether m, or the runs it keeps aside, has a run of s (or of a schedule the simulator reads as
 * s) that can decide a later one (ended, or stopped past a horizon). */
int mc_sim_memo_has(mc_sim_memo_t *m, const mc_sched_t *s);
/* Whether the simulator reads a and b as the same schedule (m's scratch used to compare). */
int mc_sim_memo_same(mc_sim_memo_t *m, const mc_sched_t *a, const mc_sched_t *b);
/* How many of m's runs went on from where an allowance had stopped them (with no horizon) rather
 * than being simulated again from the start. */
long mc_sim_memo_resumed(const mc_sim_memo_t *m);
/* How many of m's runs were decided from runs made ahead (mc_sim_run_memo_ahead, or kept aside:
 * mc_sim_memo_set_aside) rather than simulated again from the start. */
long mc_sim_memo_ahead_taken(const mc_sim_memo_t *m);

/* mc_sim_run (timeline) or mc_sim_run_totals of a schedule whose instances may be compact
 * (mc_sched_load_compact): the expanded schedule's result, with each instance that renames its
 * template onto links and GPUs of the same figures timed as its template rather than simulated
 * (sim_compact.c); otherwise on the schedule expanded. */
mc_status_t mc_sim_run_compact(const mc_sched_t *s, const mc_topo_t *topo, int timeline,
                               mc_sim_result_t *res, mc_err_t *err);

/* The allowance (mc_sim_run_bounded's units) that the commands reporting a simulated time give
 * the simulation by default (synth's summary line, bench's rows; --sim-work): far above what the
 * scale suite's schedules need, since identical groups are simulated once; a bound on runaway
 * simulations of schedules without symmetry. */
#define MC_SIM_REPORT_WORK 200000000

/* The ids of the n busiest links into ids: most loaded first (bytes carried / bandwidth, the time
 * the link needed at full rate), then longest busy, then lowest id. Returns how many links were
 * busy at all, at most n. */
int mc_sim_busiest(const mc_sim_result_t *res, const mc_topo_t *topo, int *ids, int n);

/* The frame of the SVG timelines (this one and the pipeline's): the document's start with the
 * title line opened on the escaped title, for the caller to finish and close with "</text>"; and
 * a time axis of five ticks in ms, grid lines from y0 to y1 at x0..x0+width, labels below y1. */
void mc_sim_svg_begin(mc_buf_t *b, int width, int height, const char *title);
void mc_sim_svg_time_axis(mc_buf_t *b, double x0, double width, int y0, int y1, double span_s);

/* An SVG drawing of the timeline: one row per busy link (busiest first), one bar per interval,
 * shaded by the share of the link's bandwidth it used. Caller frees. */
char *mc_sim_timeline_svg(const mc_sim_result_t *res, const mc_topo_t *topo, const char *title);

#endif
