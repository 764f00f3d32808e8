/* NCCL's ring collectives written as a schedule, for the calibration suite (bench/calib.cases,
 * docs/simulator.md): every piece moves from its first holder around the ring of its destination
 * mesh (with the holder, when it is outside the mesh, as NCCL's communicator for a broadcast
 * holds its root), visiting its destinations in the ring's order from the holder's position on,
 * as NCCL's ring broadcast moves the buffer and its ring all-gather moves each rank's block. NCCL
 * runs a ring collective on several channels at once, each its own connection on its own ring:
 * the rings and their number are topo/topo_rings.c's (on a host with direct links, the rings
 * NCCL's search finds; on an NVSwitch host the mesh's order, a channel per NVLink lane; across
 * hosts a ring per channel entering each host at the GPU next to NIC c). The bytes are split
 * evenly over the channels, each pipelined in NCCL's steps, 8 in flight (synth_chain_chunks,
 * synth_inflight). A yardstick, not a resharding system: bench runs it only where a case asks
 * for it. */
#include <stdlib.h>

#include "synth/synth_internal.h"
#include "topo/topo_rings.h"

mc_status_t mc_synth_nccl_ring(mc_task_t *task, const mc_topo_t *topo,
                               const mc_synth_opts_t *opts, mc_sched_t **out, mc_err_t *err)
{
    mc_status_t st = synth_check_one_consumer(task, "nccl-ring", err);
    if (st != MC_OK)
        return st;
    mc_sched_t *s = mc_sched_new(task, topo, "nccl-ring");
    int *chain = mc_xmalloc(sizeof(int) * (size_t)(topo->ngpus + 1)), moving = 0;
    int *order = mc_xmalloc(sizeof(int) * (size_t)(topo->ngpus + 1));
    mc_topo_ring_cache_t *cache = mc_topo_ring_cache_new();
    synth_ranks_t ranks;
    synth_ranks_init(&ranks, task);
    for (int pi = 0; pi < task->npieces; pi++)
        moving += task->pieces[pi].ndests > 0;
    for (int pi = 0; pi < task->npieces && st == MC_OK; pi++) {
        const mc_piece_t *p = &task->pieces[pi];
        const mc_mesh_t *mesh = &task->meshes[task->tensors[p->tensor].dst.mesh];
        if (!p->ndests)
            continue;
        int *holders = synth_holders_in_mesh_order(task, &ranks, pi), root = holders[0];
        free(holders);
        mc_topo_rings_t *r = NULL;
        st = mc_topo_rings_new(topo, mesh->devices, mesh->ndevices, root, cache, &r, err);
        if (st != MC_OK)
            break;
        int channels = mc_topo_rings_channels(topo, r, root);
        /* every channel of every piece's ring moves at once */
        int sharers = mc_topo_rings_sharing(r, channels) * moving;
        uint64_t esize = (uint64_t)mc_dtype_size(task->tensors[p->tensor].src.dtype), off = 0;
        for (int c = 0; c < channels && st == MC_OK; c++) {
            uint64_t part = synth_even_part(p->bytes, esize, channels, c);
            int n = mc_topo_rings_chain(r, root, p->dests, p->ndests, c, order, chain);
            if (part)
                st = synth_add_chain(s, topo, pi, off, part, 0, chain, n, opts->chunk_bytes,
                                     sharers, synth_inflight(opts), err);
            off += part;
        }
        mc_topo_rings_free(r);
    }
    if (st != MC_OK)
        goto out;
    s->nphases = s->ntrees > 0;
    s->mem_limit = opts->memory_limit;
    mc_sched_plan_rates(s, topo);
    snprintf(s->params, sizeof(s->params),
             "ring=nccl-search-or-mesh-order-per-nic channels=searched-or-nvlink-lanes chunks=%s",
             opts->chunk_bytes ? "fixed" : "best-pipelined");
    *out = s;
    s = NULL;
out:
    mc_sched_free(s);
    mc_topo_ring_cache_free(cache);
    synth_ranks_free(&ranks);
    free(chain);
    free(order);
    return st;
}
