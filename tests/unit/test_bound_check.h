/* The check the bound's property tests share: a strategy's schedule for a task, simulated, never
 * finishes before the task's lower bound (DESIGN.md section 6: if it does, the simulator or the
 * bound is wrong). */
#ifndef TEST_BOUND_CHECK_H
#define TEST_BOUND_CHECK_H

#include "layout/layout.h"
#include "sim/sim.h"
#include "synth/synth.h"

/* Simulates strategy's schedule for t; returns 1 when it was timed (a strategy that does not
 * take the task is its own tests' business). Fails when the time is below the bound. */
static inline int check_strategy(const char *strategy, mc_task_t *t, const mc_topo_t *topo,
                                 const mc_bound_t *b, const char *text)
{
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    opts.rlimit = 200000;
    opts.budget_s = 1000; /* only the rlimit may stop Z3 */
    mc_sched_t *s = NULL;
    mc_sim_result_t res;
    mc_err_t err = {0};
    if (mc_synth(strategy, t, topo, &opts, &s, &err) != MC_OK)
        return 0;
    if (mc_sim_run(s, topo, &res, &err) != MC_OK)
        fail_msg("%s\n%s on %s: %s", text, strategy, topo->source, err.msg);
    if (res.makespan_s < b->seconds * (1 - 1e-9))
        fail_msg("%s\n%s on %s simulated %.9g s, below the bound %.9g s (%s)", text, strategy,
                 topo->source, res.makespan_s, b->seconds, mc_bound_kind_str(b->binding));
    mc_sim_result_free(&res);
    mc_sched_free(s);
    return 1;
}

#endif
