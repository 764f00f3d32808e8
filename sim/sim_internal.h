/* Internals of sim/: the event queue, ordered by time and then by insertion, so that runs are
 * deterministic whatever the order in which equal times were computed; the connection limits. */
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
