/* Internals of sim/: the event queue, ordered by time and then by insertion, so that runs are
 * deterministic whatever the order in which equal times were computed; a flow's bytes in motion,
 * shared by both simulators; the link-disjoint groups of a phase. */
#ifndef MC_SIM_INTERNAL_H
#define MC_SIM_INTERNAL_H

#include "sched/sched.h"
#include "topo/topo.h"

typedef enum { SIM_EV_ACTIVATE, SIM_EV_FINISH } sim_ev_kind_t;

typedef struct sim_event {
    double t;
    long seq;
    sim_ev_kind_t kind;
    int flow;
    unsigned version; /* FINISH: the flow's rate version it was computed for */
} sim_event_t;

typedef struct sim_queue {
    sim_event_t *ev;
    int n, cap;
    long seq;
} sim_queue_t;

void sim_queue_push(sim_queue_t *q, double t, sim_ev_kind_t kind, int flow, unsigned version);
sim_event_t sim_queue_pop(sim_queue_t *q);
void sim_queue_free(sim_queue_t *q);

/* sim_motion.c: a flow's bytes in motion, as both simulators (sim.c, sim_exec.c) move them: what
 * is left at t_upd, moving at rate; version counts rate changes, so that a FINISH event computed
 * for an older rate is recognized and dropped. */
typedef struct sim_motion {
    double remaining, rate, t_upd;
    unsigned version;
} sim_motion_t;

/* Flow i's links, for sim_motion_pack. */
typedef const int *(*sim_path_fn)(const void *ctx, int i, int *nlinks);

/* The links of n flows end to end in *links (grown as needed, capacity *cap): flow i's are
 * (*links)[off[i] .. off[i + 1]); off holds n + 1 entries. The max-min solver's input. */
void sim_motion_pack(int n, sim_path_fn path, const void *ctx, int *off, int **links, int *cap);

/* Moves m's bytes up to now at its old rate, then takes the new one; when it changed, queues the
 * flow's new finish (flow is its index in the queue's events). */
void sim_motion_rerate(sim_motion_t *m, double rate, double now, sim_queue_t *q, int flow);

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
