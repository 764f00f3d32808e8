/* Each group's transfer time: its task synthesized with the chosen strategy (mc_synth validates
 * the schedule), timed by the flow-level simulator, and the links the schedule loads, which the
 * event simulation holds while the transfer runs. */
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"
#include "sim/sim.h"

/* Every stage's GPUs exist on the topology; an error names the stage's line. */
static mc_status_t check_stages(const mc_pipe_t *p, const mc_topo_t *topo, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    for (int s = 0; s < p->nstages && st == MC_OK; s++) {
        mc_task_t *t = mc_task_new();
        st = mc_task_add_mesh(t, p->stages[s].mesh_text, err);
        if (st == MC_OK && (st = mc_task_check_topo(t, topo, err)) != MC_OK) {
            char msg[sizeof(err->msg)];
            snprintf(msg, sizeof(msg), "%s", err->msg);
            st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: %s", p->name, p->stages[s].line, msg);
        }
        mc_task_free(t);
    }
    return st;
}

static mc_status_t time_group(mc_pipe_group_t *g, const mc_topo_t *topo,
                              const char *strategy, const mc_synth_opts_t *opts, mc_err_t *err)
{
    mc_sched_t *s = NULL;
    mc_sim_result_t res = {0};
    mc_bound_t bound;
    mc_status_t st;
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
    mc_status_t st = check_stages(p, topo, err);
    for (int g = 0; g < p->ngroups && st == MC_OK; g++) {
        free(p->groups[g].links);
        p->groups[g].links = NULL;
        st = time_group(&p->groups[g], topo, strategy, opts, err);
    }
    p->timed = st == MC_OK;
    return st;
}
