/* Internals of sim/: the event queue, ordered by time and then by insertion, so that runs are
 * deterministic whatever the order in which equal times were computed; a flow's bytes in motion,
 * shared by both simulators; the link-disjoint groups of a phase. */
#ifndef MC_SIM_INTERNAL_H
#define MC_SIM_INTERNAL_H

#include "sched/sched.h"
#include "sim/sim.h"
#include "topo/topo.h"

typedef enum { SIM_EV_ACTIVATE, SIM_EV_FINISH } sim_ev_kind_t;

typedef struct sim_event {
    double t;
    sim_ev_kind_t kind;
    int flow;
    unsigned version; /* FINISH: the flow's rate version it was computed for */
} sim_event_t;

/* sim_queue.c: a radix heap on the events' times, in digits of SIM_QUEUE_DIGIT bits; the events
 * timed below the last one popped wait in the binary heap `early`. An event is held in 16 bytes:
 * its time, its flow (~flow for an activation) and its version; the early heap adds its
 * insertion number. */
#define SIM_QUEUE_DIGIT 8
#define SIM_QUEUE_BUCKETS (1 + (64 / SIM_QUEUE_DIGIT << SIM_QUEUE_DIGIT))
_Static_assert(64 % SIM_QUEUE_DIGIT == 0 && (SIM_QUEUE_BUCKETS + 63) / 64 <= 64,
               "the digits must cover a time's 64 bits and the bucket bitmap's words one word");
typedef struct sim_qev {
    double t;
    int code;
    unsigned version;
} sim_qev_t;

typedef struct sim_bucket {
    sim_qev_t *ev;
    int n, cap, head;       /* head: bucket 0 is read from there */
    uint64_t least;         /* the least time bits in the bucket */
} sim_bucket_t;

typedef struct sim_queue {
    sim_bucket_t b[SIM_QUEUE_BUCKETS];
    uint64_t full[(SIM_QUEUE_BUCKETS + 63) / 64]; /* the buckets not empty */
    uint64_t words;         /* the words of `full` not 0 */
    uint64_t last;          /* the time bits bucket numbers are taken against */
    struct sim_early {
        sim_qev_t ev;
        long seq;
    } *early;
    int nearly, early_cap;
    int n;                  /* events queued */
    long seq;
} sim_queue_t;

void sim_queue_push(sim_queue_t *q, double t, sim_ev_kind_t kind, int flow, unsigned version);
/* The time of the next event; the queue must not be empty. */
double sim_queue_next(sim_queue_t *q);
sim_event_t sim_queue_pop(sim_queue_t *q);
/* Empties the queue. */
void sim_queue_free(sim_queue_t *q);

/* sim_motion.c: a flow's bytes in motion, as both simulators (sim.c, sim_exec.c) move them: what
 * is left at t_upd, moving at rate; version counts rate changes, so that a FINISH event computed
 * for an older rate is recognized and dropped. */
typedef struct sim_motion {
    double remaining, rate, t_upd;
    unsigned version;
} sim_motion_t;

/* Moves m's bytes up to now at its old rate (inline: sim.c calls it for every flow re-rated). */
static inline void sim_motion_advance(sim_motion_t *m, double now)
{
    m->remaining -= m->rate * (now - m->t_upd);
    if (m->remaining < 0)
        m->remaining = 0;
    m->t_upd = now;
}
/* Gives m, moved up to now, a rate other than its own, and queues the flow's new finish (flow is
 * its index in the queue's events). */
void sim_motion_retime(sim_motion_t *m, double rate, double now, sim_queue_t *q, int flow);
/* Moves m's bytes up to now at its old rate, then takes the new one; when it changed, queues the
 * flow's new finish. */
void sim_motion_rerate(sim_motion_t *m, double rate, double now, sim_queue_t *q, int flow);

/* sim_links.c: the per-link state both simulators share, and their rate computation. The flows
 * stay the simulator's: sim_flows_t says how many there are (numbered from 0), which are active
 * on a link (on_link), what flow f crosses and its connection's limit (path: the links, *cap 0
 * for none; one call, since every re-rating asks both of every flow of its component).
 * Optionally (classes_on not NULL) it says their route classes: flows of one class cross the same
 * links in the same order under the same limit, so they get the same max-min rate, and the
 * solver takes each class once with its count of flows. Then the component is gathered class by
 * class, not flow by flow: classes_on gives the classes with active flows on a link (a class
 * perhaps more than once, once per time its route crosses the link),
 * class_flows a class's active flows in the order they became active, and seq per flow its place
 * in that order among all the flows; every link's flows, on_link, are in that order too, and may
 * hold flows no longer active (sim.c drops them from a link in batches), which are passed over. */
typedef struct sim_flows {
    const void *ctx;
    int nflows;
    const int *(*on_link)(const void *ctx, int l, int *n);
    const int *(*path)(const void *ctx, int f, int *nlinks, double *cap);
    int nclasses;
    const int *(*classes_on)(const void *ctx, int l, int *n);
    const int *(*class_flows)(const void *ctx, int c, int *n);
    const unsigned *seq;
    /* with classes, optionally: the links of class c's route that the solver takes (NULL: every
     * link of its route); the component is still gathered over the whole routes */
    const int *(*solver_route)(const void *ctx, int c, int *n);
    /* with solver_route, optionally: per link, the first of its twins (sim_twins_t's first),
     * whose classes are its own; a re-rating looks at the classes of one link of each set */
    const int *twin_first;
} sim_flows_t;

/* A flow of the component and its solver entry. */
typedef struct sim_flow_at {
    int flow, entry;
} sim_flow_at_t;

typedef struct sim_links {
    int nlinks;
    double *cap;                /* per link: its bandwidth */
    mc_sched_maxmin_t *mm;
    unsigned epoch, *link_mark;
    uint64_t *flow_met;         /* per flow a bit: met in this re-rating's component (cleared
                                 * after it; a bit per flow keeps the marks in the cache that a
                                 * word per flow spilled) */
    int flow_met_cap;
    int *touched, ntouched;     /* the links an event touched, this epoch */
    /* after sim_links_rerate: the links the component crosses, its flows' count, and the solver's
     * entries: one per route class met (with classes), else one per flow; each with its links
     * from off[c] in clinks, its connection limit, its count of flows, its rate; with classes,
     * its class (ent_cls) and the place in comp_links of the link where it was met (ent_from);
     * without, the flows re-rated (comp_flows) and their rates */
    int *comp_links, ncomp_links, ncomp_flows;
    int *off, off_cap, *clinks, clink_cap;
    double *fcap, *crate;
    int *ccount, *ent_cls, *ent_from, ncls;
    unsigned *ent_seq;          /* scratch: per entry, when its class's oldest flow became active */
    int *comp_flows, flow_cap;
    double *rates;
    unsigned *cls_mark;         /* per class: the epoch it was last met in */
    unsigned *twins_met;        /* per first link of a set of twins: the epoch its classes were
                                 * met in */
    int cls_cap;
    sim_flow_at_t *order, *run; /* scratch: the component's flows in its order (solve_capped);
                                 * a run of them (sim_links_order) */
    int order_cap, run_cap;
    int *flow_pos, flow_pos_cap; /* scratch: per flow its place in a run (sim_links_order) */
    double *cap_left;
    char *held, *newly;         /* per entry: held at its connection's limit; held this round */
    int held_cap;
} sim_links_t;

void sim_links_init(sim_links_t *lk, const mc_topo_t *topo);
void sim_links_free(sim_links_t *lk);
/* A new epoch: no link touched yet. */
void sim_links_begin(sim_links_t *lk);
void sim_links_touch(sim_links_t *lk, int l);
/* Max-min fair rates, with connection limits, for the flows sharing links with the touched links,
 * directly or through other flows (comp_links and the entries' rates; without classes,
 * comp_flows and rates). */
void sim_links_rerate(sim_links_t *lk, const sim_flows_t *fl);
/* Puts n flows of the component (with classes), given in the order of their entries and each
 * entry's flows in the order they became active, in the order a gathering flow by flow meets
 * them, the order in which the component's flows are re-rated, their finishes queued and their
 * held capacities taken: by the link where their class was met, then in that link's order (the
 * order they became active). */
void sim_links_order(sim_links_t *lk, const sim_flows_t *fl, sim_flow_at_t *at, int n);

/* sim_twins.c: per route class of a group, the links of its route that the solver takes: of
 * each set of twin links (crossed by the same classes, each as many times), one. */
typedef struct sim_twins {
    int *route_at, *route_n, cls_cap; /* per class: its links for the solver, in routes[] */
    int *routes, routes_cap;
    /* per link: the first of its twins met (itself if none came before, or if no class of the
     * group crosses it), which holds the best of them (the one the solver takes) */
    int *first, *best;
    /* scratch, per link: crossings and their list in crossers[] */
    int *count, *start, *touched, ntouched, link_cap;
    unsigned *mark, epoch;
    int *crossers, crossers_cap;
} sim_twins_t;

/* Sets up the solver's routes of the distinct classes ids[0..n) (of nclasses), whose routes are
 * links[off[c]..off[c+1]), on links of capacities cap[0..nlinks). */
void sim_twins_build(sim_twins_t *tw, int nlinks, const double *cap, const int *ids, int n,
                     const int *off, const int *links, int nclasses);
void sim_twins_free(sim_twins_t *tw);

/* A simulation in progress (sim.c). */
typedef struct sim_run sim_t;

/* mc_sim_run_until that also says, in *nflows, how many flows the run had to simulate (those of
 * the distinct groups: an allowance below 4 per flow is not started), and that can stop and go
 * on. With run not NULL: *run NULL begins a run; *run not NULL is a run of the same trees (as the
 * simulator reads them, perhaps another copy) that its allowance stopped with no horizon, and it
 * goes on from where it stopped, charged its work from the start: the outcome, makespan and work
 * of a run begun afresh under this allowance and horizon, without simulating again what it had.
 * Then *run gets the run when its allowance (or the cut, floor_s > 0: sim.c's stop_here) stops it
 * with no horizon (for sim_run_free or to go on), else NULL; a run goes on with no cut. */
mc_status_t sim_run_until_counted(const mc_sched_t *s, const mc_topo_t *topo, int64_t *work_left,
                                  double horizon_s, double floor_s, int64_t *nflows, sim_t **run,
                                  mc_sim_result_t *res, mc_err_t *err);
void sim_run_free(sim_t *run);

/* The cut's margin (sim.c, stop_here): a run is cut once its pace would take it to less than
 * floor / SIM_CUT_MARGIN by the end of its allowance. */
#define SIM_CUT_MARGIN 5.0

/* What a run made ahead (sim_ahead.c) saw at its batches of events, so that its stops under
 * another allowance and horizon can be told (sim_seen_batch): each batch at which the latest of
 * its times so far (the last event that moved something, or a least end from its links' loads)
 * grew to `from` or more, and its slowest pace (time reached per unit of work) in each of
 * SIM_SEEN_PACES spans of work up to its most. */
typedef struct sim_seen_at {
    int64_t work;
    double now, last, end; /* end: its links' least end, or -1 where not looked at */
} sim_seen_at_t;

#define SIM_SEEN_MAX 16384
#define SIM_SEEN_PACES 64

typedef struct sim_seen {
    double from, most;       /* the least time recorded; the latest seen */
    int64_t work;            /* the most work the run makes (it stops past it) */
    int64_t last_work;       /* the work of the last batch recorded */
    int n, overflow;         /* at[0..n); overflow: more than SIM_SEEN_MAX were due */
    sim_seen_at_t at[SIM_SEEN_MAX];
    /* per span: the batch of its slowest pace, its work (0: none) and the time it reached */
    int64_t slow_work[SIM_SEEN_PACES];
    double slow_reached[SIM_SEEN_PACES];
} sim_seen_t;

/* Decides the run made ahead a under the allowance *work_left, horizon_s and floor_s as
 * sim_run_until_counted would: returns 1 with *st, *res, *nflows, the work taken from *work_left
 * and, with no horizon, *paused the run where its allowance (or the cut) stopped it (else left
 * as it is); or 0 where it cannot tell (sim_ahead.c). */
int sim_ahead_decide(mc_sim_ahead_t *a, int64_t *work_left, double horizon_s, double floor_s,
                     int64_t *nflows, sim_t **paused, mc_sim_result_t *res, mc_status_t *st,
                     mc_err_t *err);

/* Records a batch that passed the allowance's check (stop_here): its work, times and the time it
 * reached (what the cut weighs). */
void sim_seen_batch(sim_seen_t *seen, int64_t work, double now, double last, double end,
                    double reached);

/* Begins a run of s made ahead within the allowance work_max, up to horizon_s (> 0), with no cut,
 * recording its batches into *seen, stopped as soon as *cancel is set. *run gets the run, ended
 * or stopped, for sim_run_until_counted to go on with where its allowance stopped it
 * (sim_run_can_go_on), or for sim_run_free. */
mc_status_t sim_run_ahead(const mc_sched_t *s, const mc_topo_t *topo, int64_t work_max,
                          double horizon_s, sim_seen_t *seen, const atomic_int *cancel,
                          sim_t **run, mc_sim_result_t *res, mc_err_t *err);
/* The work a run has taken so far, and the flows it has to simulate. */
int64_t sim_run_work(const sim_t *run);
int64_t sim_run_flows(const sim_t *run);
/* Whether the run stopped at a batch of events before its checks (by *cancel or its allowance):
 * it can go on from there under another allowance and horizon. */
int sim_run_can_go_on(const sim_t *run);

/* One phase's trees in link-disjoint groups (sim_groups.c). */
typedef struct sim_groups {
    int ngroups, ndistinct;
    int *tree_off, *trees;   /* per group: its trees, in schedule order */
    int *link_off, *links;   /* per group: its links, in order of first use */
    int *same_as;            /* per group: -1, or the earlier group it is a copy of */
} sim_groups_t;

void sim_groups_build(const mc_sched_t *s, const mc_topo_t *topo, int phase, sim_groups_t *g);
void sim_groups_free(sim_groups_t *g);

#endif
