/* The send/recv baselines, as Alpa runs them with use_local_allgather=False
 * (resharding_mode="send_recv"): one point-to-point send per (destination tile, destination
 * replica, source slice), all in flight at once. 'p2p' takes the first replica of the source slice
 * as the sender (Alpa's no_loadbalance); 'p2p-lb' takes the least-loaded replica, loads counted in
 * elements and carried across all tensors of the task (Alpa's default 'normal' balancing,
 * CrossMeshCommunicator._generate_send_recv_resharding_strategy_by_loads; Alpa's default also
 * rewrites the destination for a local all-gather: alpa-p2p). */
#include <stdlib.h>

#include "synth/synth_internal.h"

static mc_status_t p2p(mc_task_t *task, const mc_topo_t *topo, const mc_synth_opts_t *opts,
                       int balance, mc_sched_t **out, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int nunits = 0;
    synth_unit_t *units = synth_naive_order(task, 1, &nunits);
    uint64_t *load = mc_xcalloc((size_t)topo->ngpus, sizeof(uint64_t));
    mc_sched_t *s = mc_sched_new(task, topo, balance ? "p2p-lb" : "p2p");
    synth_ranks_t ranks;
    synth_ranks_init(&ranks, task);
    s->mem_limit = opts->memory_limit;
    s->nphases = nunits ? 1 : 0;
    for (int u = 0; u < nunits; u++) {
        const mc_piece_t *p = &task->pieces[units[u].piece];
        int *holders = synth_holders_in_mesh_order(task, &ranks, units[u].piece);
        int sender = balance ? synth_least_loaded(holders, p->nholders, load) : holders[0];
        free(holders);
        load[sender] += synth_piece_elems(task, units[u].piece);
        /* One message per send: NCCL pipelines a send internally, so it is one chunk unless the
         * user asks for chunking. */
        int nchunks = opts->chunk_bytes ? synth_forced_chunks(p->bytes, opts->chunk_bytes) : 1;
        int ti = mc_sched_add_tree(s, units[u].piece, 0, p->bytes, sender, 0, nchunks);
        MC_CHECK_GOTO(mc_sched_add_edge(s, topo, ti, sender, units[u].dest, err), out, st);
    }
    /* The sends share NICs and PCIe links: each gets its max-min fair share, stated as its rate. */
    mc_sched_plan_rates(s, topo);
    snprintf(s->params, sizeof(s->params), "sender=%s order=alpa-naive phases=1",
             balance ? "least-loaded" : "first-replica");
    *out = s;
    s = NULL;
out:
    mc_sched_free(s);
    synth_ranks_free(&ranks);
    free(load);
    free(units);
    return st;
}

mc_status_t mc_synth_p2p(mc_task_t *task, const mc_topo_t *topo, const mc_synth_opts_t *opts,
                         mc_sched_t **out, mc_err_t *err)
{
    return p2p(task, topo, opts, 0, out, err);
}

mc_status_t mc_synth_p2p_lb(mc_task_t *task, const mc_topo_t *topo, const mc_synth_opts_t *opts,
                            mc_sched_t **out, mc_err_t *err)
{
    return p2p(task, topo, opts, 1, out, err);
}
