/* sim_exec: times what the runtime executes rather than the schedule's idealized trees. It takes
 * the per-rank plans that emit/ lowers a schedule into (the ones `meshcast run` and generated code
 * run) and follows each rank's graph exactly as the backend does (runtime/graph.c: the dependency
 * table, or the lockstep steps), on the same link model as mc_sim_run: a send and its receive
 * become one flow over the schedule edge's route once both are posted; it waits the edge's message
 * overhead and then moves its bytes at its max-min fair share. Copies (packs, unpacks, local
 * copies) take no time, as in the schedule's model. */
#ifndef MC_SIM_EXEC_H
#define MC_SIM_EXEC_H

#include "runtime/runtime.h"
#include "sched/sched.h"
#include "topo/topo.h"
#include "util/util.h"

typedef struct mc_sim_exec_result {
    double makespan_s;
    long nflows;       /* sends simulated */
    int nranks;
    double *rank_end_s; /* per rank: when its last send or receive completed (0: it has none) */
} mc_sim_exec_result_t;

/* Times the plans of schedule s (plans[r] runs GPU gpus[r]; a send's tag is its tree's index in s)
 * in the given order (MC_RT_ORDER_DEPS or MC_RT_ORDER_STEPS). A send the schedule has no edge for
 * is MC_ERR_INVALID; plans that cannot finish are MC_ERR_INTERNAL, naming a rank and its op. */
mc_status_t mc_sim_exec(const mc_sched_t *s, const mc_topo_t *topo, int nranks,
                        const mc_rt_plan_t *plans, const int *gpus, int order,
                        mc_sim_exec_result_t *res, mc_err_t *err);
/* Whether the plans of s may be timed within an allowance of work_max (0: any allowance): every
 * send is a flow, which costs two events and two re-ratings at least, so plans with more sends
 * than a quarter of the allowance are not started (as mc_sim_run_bounded does), nor lowered. */
int mc_sim_exec_fits(const mc_sched_t *s, int64_t work_max);

/* mc_sim_exec within an allowance of work (events, the ranks and posted operations each step
 * looks at, plus the flows and links each re-rating
 * touches: mc_sim_run_bounded's units), taken from *work_left (NULL: none); past it, MC_ERR_TIMEOUT
 * and no time. bench gives the executed plans the allowance it gives the schedule's simulation. */
mc_status_t mc_sim_exec_bounded(const mc_sched_t *s, const mc_topo_t *topo, int nranks,
                                const mc_rt_plan_t *plans, const int *gpus, int order,
                                int64_t *work_left, mc_sim_exec_result_t *res, mc_err_t *err);
void mc_sim_exec_result_free(mc_sim_exec_result_t *res);

#endif
