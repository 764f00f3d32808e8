/* The 'collectives' strategy: same-mesh redistribution as the normal form of Rink et al. (arXiv
 * 2112.01075): slices, all-to-alls and at most one permute, all-gathers, each collective a phase
 * of trees mapped onto the topology, consecutive all-to-alls and the permute fused into one
 * exchange. The schedule states its memory bound (the two shards plus
 * one intermediate array of at most max(source tile, destination tile) per GPU) in mem-limit, so
 * 'validate' checks it; under --memory-limit the stated bound is the smaller of the two. */
#include "synth/collectives/collective_internal.h"

mc_status_t mc_synth_collectives(mc_task_t *task, const mc_topo_t *topo,
                                 const mc_synth_opts_t *opts, mc_sched_t **out, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_sched_t *s = NULL;
    MC_CHECK_GOTO(coll_synth(task, topo, opts, "collectives", coll_plan_collectives, &s,
                             err),
                  out, st);
    MC_CHECK_GOTO(mc_synth_check_memory(s, topo, opts->memory_limit, err), out, st);
    uint64_t bound = 0;
    for (int g = 0; g < topo->ngpus; g++)
        if (coll_mem_bound(s, g) > bound)
            bound = coll_mem_bound(s, g);
    s->mem_limit = opts->memory_limit && opts->memory_limit < bound ? opts->memory_limit : bound;
    *out = s;
    s = NULL;
out:
    mc_sched_free(s);
    return st;
}
