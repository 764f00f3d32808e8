/* The choice the meshcast strategy makes on a same-mesh task (issue 7): the collective form when
 * memory is tight, whichever the simulator finds faster otherwise, and a params line that says
 * which and why. Kept here, next to the collective form, so that mc_synth_meshcast needs one call
 * to make it. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/collectives/collective_internal.h"

mc_status_t mc_synth_collectives_referee(mc_task_t *task, const mc_topo_t *topo,
                                         const mc_synth_opts_t *opts, mc_sched_t **s, double *t,
                                         mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_synth_opts_t o = *opts;
    mc_sched_t *c = NULL;
    mc_sim_result_t sim = {0};
    mc_err_t ignored = {0};
    o.memory_limit = 0; /* judged below, against the trees' own peak */
    if (mc_synth_collectives(task, topo, &o, &c, &ignored) != MC_OK)
        return MC_OK; /* not a same-mesh task: the trees stay */
    MC_CHECK_GOTO(mc_sim_run_totals(c, topo, &sim, err), out, st);
    uint64_t limit = opts->memory_limit, pt = coll_sched_peak(*s, topo, NULL),
             pc = coll_sched_peak(c, topo, NULL);
    const char *why = NULL;
    if (limit && pt > limit && pc <= limit)
        why = "memory";
    else if ((!limit || pc <= limit) && sim.makespan_s < *t)
        why = "faster";
    if (!why)
        goto out;
    char *params = mc_xasprintf("plan=collectives(%s) why=%s sim_s=%.6g peak=%" PRIu64
                                " trees_sim_s=%.6g trees_peak=%" PRIu64, c->params, why,
                                sim.makespan_s, pc, *t, pt);
    size_t n = strlen(params) < sizeof c->params ? strlen(params) : sizeof c->params - 1;
    memcpy(c->params, params, n);
    c->params[n] = '\0';
    free(params);
    memcpy(c->strategy, (*s)->strategy, sizeof c->strategy);
    if (limit && limit < c->mem_limit)
        c->mem_limit = limit;
    mc_sched_free(*s);
    *s = c;
    *t = sim.makespan_s;
    c = NULL;
out:
    mc_sim_result_free(&sim);
    mc_sched_free(c);
    return st;
}
