/* Each group's transfer time: its task synthesized with the chosen strategy (mc_synth validates
 * the schedule), timed by the flow-level simulator, and the links the schedule loads, which the
 * event simulation holds while the transfer runs. */
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"
#include "sim/sim.h"

static mc_status_t time_group(const mc_pipe_t *p, mc_pipe_group_t *g, const mc_topo_t *topo,
                              const char *strategy, const mc_synth_opts_t *opts, mc_err_t *err)
{
    mc_sched_t *s = NULL;
    mc_sim_result_t res = {0};
    mc_bound_t bound;
    mc_status_t st;
    if (mc_task_check_topo(g->task, topo, err) != MC_OK) {
        char msg[sizeof(err->msg)];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        return mc_err_set(err, MC_ERR_INVALID, "%s:%d: %s", p->name, g->line, msg);
    }
    MC_CHECK_GOTO(mc_task_split(g->task, err), out, st);
    MC_CHECK_GOTO(mc_task_bound(g->task, topo, &bound, err), out, st);
    MC_CHECK_GOTO(mc_synth(strategy, g->task, topo, opts, &s, err), out, st);
    MC_CHECK_GOTO(mc_sim_run_totals(s, topo, &res, err), out, st);
    g->seconds = res.makespan_s;
    g->bound_s = bound.seconds;
    g->bytes = mc_task_total_bytes(g->task);
    g->links = mc_xmalloc(sizeof(int) * (size_t)(res.nlinks + 1));
    g->nlinks = 0;
    for (int l = 0; l < res.nlinks; l++)
        if (res.link_bytes[l] > 0)
            g->links[g->nlinks++] = l;
out:
    mc_sim_result_free(&res);
    mc_sched_free(s);
    return st;
}

mc_status_t mc_pipe_time_comm(mc_pipe_t *p, const mc_topo_t *topo, const char *strategy,
                              const mc_synth_opts_t *opts, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    for (int g = 0; g < p->ngroups && st == MC_OK; g++) {
        free(p->groups[g].links);
        p->groups[g].links = NULL;
        st = time_group(p, &p->groups[g], topo, strategy, opts, err);
    }
    p->timed = st == MC_OK;
    return st;
}
