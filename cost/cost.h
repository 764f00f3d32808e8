/* cost: an analytic estimate of how long a strategy's schedule for a task takes on a topology,
 * for planners that compare thousands of candidate layouts and cannot run the synthesizer or the
 * simulator for each (docs/cost-model.md). It lays the traffic the strategy would send onto the
 * topology's routes (no Z3, no simulation): the busiest link's bytes over its bandwidth, plus the
 * per-message overheads and hop latencies along the deepest store-and-forward path, plus the
 * pipeline fill of the chunk count that minimizes the two.
 *
 * Reuse: a topology is loaded once and wrapped once in an mc_cost_topo_t, which keeps the per-host
 * GPU lists, the scratch arrays and every GPU-to-GPU route it has looked up (an open hash keyed
 * by the GPU pair). Later estimates on that topology reuse all of it, so a call costs the task's
 * pieces times their destinations, not the topology's size. An mc_cost_topo_t is not thread-safe;
 * use one per thread. */
#ifndef MC_COST_H
#define MC_COST_H

#include "layout/layout.h"
#include "topo/topo.h"
#include "util/util.h"

typedef enum {
    MC_COST_MESHCAST,   /* multicast trees: each byte crosses into a host once, then fans out */
    MC_COST_P2P,        /* every destination pulls every piece from its first holder at once */
    MC_COST_ALPA_BCAST, /* one pipelined chain broadcast per piece through its destinations */
    MC_COST__COUNT
} mc_cost_strategy_t;

/* The strategy named like synth's ("meshcast", "p2p", "alpa-bcast"); returns 0 when known. */
int mc_cost_strategy_parse(const char *name, mc_cost_strategy_t *out);
const char *mc_cost_strategy_name(mc_cost_strategy_t s);

typedef struct mc_cost_opts {
    mc_cost_strategy_t strategy;
    int fast;   /* meshcast on hosts without an NVSwitch: skip the lower bound's fluid term
                 * (mc_task_bound's cuts, max-flows and LP, 0.4-11 ms a task) and keep the
                 * traffic model alone, which is then less accurate there */
} mc_cost_opts_t;

typedef enum {
    MC_COST_BIND_NONE,      /* nothing moves */
    MC_COST_BIND_LINK,      /* the busiest link's bandwidth time dominates */
    MC_COST_BIND_LATENCY,   /* message overheads, hop latencies and pipeline fill dominate */
    MC_COST_BIND_CONN,      /* one connection held at its rate limit (mc_topo_conn_cap) dominates:
                             * its links could move its bytes faster */
} mc_cost_bind_t;

const char *mc_cost_bind_str(mc_cost_bind_t b);

typedef struct mc_cost {
    double seconds;         /* the estimate */
    double bandwidth_s;     /* busiest link: its bytes over its bandwidth, or the busiest
                             * connection's bytes over its rate limit when that is longer */
    double overhead_s;      /* what the estimate adds to bandwidth_s */
    mc_cost_bind_t binding;
    int link;               /* the busiest link's id, -1 if none */
    int depth;              /* store-and-forward hops on the deepest path */
    int chunks;             /* chunk count the pipelining term assumes */
    double confidence;      /* in (0, 1]: bandwidth_s / seconds, the share of the estimate that
                             * is exact link arithmetic rather than overhead modelling */
} mc_cost_t;

typedef struct mc_cost_topo mc_cost_topo_t;

/* Wraps a loaded topology (borrowed: it must outlive the wrapper). */
mc_cost_topo_t *mc_cost_topo_new(const mc_topo_t *topo);
void mc_cost_topo_free(mc_cost_topo_t *ct);

/* Estimates the time of opts->strategy on a split task (mc_task_split) whose devices exist in the
 * topology. Errors (a GPU out of range, no route) are MC_ERR_INVALID with a message. */
mc_status_t mc_cost_estimate(mc_cost_topo_t *ct, const mc_task_t *task, const mc_cost_opts_t *opts,
                             mc_cost_t *out, mc_err_t *err);

#endif
