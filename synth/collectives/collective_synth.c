/* Turning a task into a schedule one collective program per tensor: the tensors move together,
 * step k of every program in phase k, and the trees that share links within a phase get planned
 * max-min fair rates. The programs' steps go into the schedule's params so that a reader of the
 * schedule (or of 'meshcast synth') sees which collectives it runs. */
#include <stdlib.h>
#include <string.h>

#include "synth/collectives/collective_internal.h"
#include "synth/synth_internal.h"

mc_status_t coll_synth(mc_task_t *task, const mc_topo_t *topo, const mc_synth_opts_t *opts,
                       const char *strategy, coll_plan_fn plan, mc_sched_t **out, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_sched_t *s = mc_sched_new(task, topo, strategy);
    mc_buf_t params = {0};
    *out = NULL;
    for (int t = 0; t < task->ntensors; t++) {
        coll_prog_t p;
        coll_stats_t stats = {0};
        MC_CHECK_GOTO(coll_prog_init(&p, task, t, strategy, err), out, st);
        plan(&p);
        st = coll_lower(s, topo, t, &p, 0, opts, &stats, err);
        char *desc = coll_prog_describe(&p);
        mc_buf_printf(&params, "%s%s=%s", t ? " " : "", task->tensors[t].name, desc);
        free(desc);
        if (stats.nphases > s->nphases)
            s->nphases = stats.nphases;
        coll_stats_free(&stats);
        coll_prog_free(&p);
        if (st != MC_OK)
            goto out;
    }
    snprintf(s->params, sizeof(s->params), "%s", params.data ? params.data : "");
    for (int i = 0; i < s->ntrees; i++)
        s->trees[i].inflight = synth_inflight(opts); /* NCCL's collective kernels run them */
    mc_sched_plan_rates(s, topo);
    *out = s;
    s = NULL;
out:
    mc_buf_free(&params);
    mc_sched_free(s);
    return st;
}
