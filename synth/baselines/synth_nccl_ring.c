/* NCCL's ring collectives written as a schedule, for the calibration suite (bench/calib.cases,
 * docs/simulator.md): every piece moves from its first holder around the ring of its destination
 * mesh, visiting its destinations in the mesh's order from the holder's position on, as NCCL's
 * ring broadcast moves the buffer and its ring all-gather moves each rank's block. NCCL runs a
 * ring collective on several channels at once, each its own connection: its ring search sets a
 * channel's bandwidth to one NVLink's, so an NVLink GPU gets a channel per NVLink lane (at most
 * NCCL's MAXCHANNELS, 32). The bytes are split evenly over that many chains along the same ring,
 * each pipelined in NCCL's steps (synth_chain_chunks). A yardstick, not a resharding system:
 * bench runs it only where a case asks for it. */
#include <stdlib.h>

#include "synth/synth_internal.h"

#define NCCL_MAX_CHANNELS 32

/* Channels of a ring rooted at gpu: its NVLink lanes, 1 without NVLink. */
static int ring_channels(const mc_topo_t *topo, int gpu)
{
    int node = topo->gpu_node[gpu], lanes = 0;
    for (int l = 0; l < topo->nlinks; l++)
        if (topo->links[l].src == node && topo->links[l].kind == MC_LINK_NVL)
            lanes += topo->links[l].count;
    return lanes < 1 ? 1 : lanes > NCCL_MAX_CHANNELS ? NCCL_MAX_CHANNELS : lanes;
}

/* The chain of piece p: its first holder, then its destinations in ring order from there. */
static int ring_chain(const mc_task_t *task, const mc_piece_t *p, int *out)
{
    const mc_mesh_t *ring = &task->meshes[task->tensors[p->tensor].dst.mesh];
    int *holders = synth_holders_in_mesh_order(task, (int)(p - task->pieces));
    int n = 0, root = holders[0], start = synth_mesh_rank(ring, root);
    free(holders);
    out[n++] = root;
    for (int k = 1; k <= ring->ndevices; k++) {
        int g = ring->devices[(start + k + ring->ndevices) % ring->ndevices];
        for (int d = 0; d < p->ndests; d++)
            if (p->dests[d] == g && g != root)
                out[n++] = g;
    }
    return n;
}

mc_status_t mc_synth_nccl_ring(mc_task_t *task, const mc_topo_t *topo,
                               const mc_synth_opts_t *opts, mc_sched_t **out, mc_err_t *err)
{
    mc_status_t st = synth_check_one_consumer(task, "nccl-ring", err);
    if (st != MC_OK)
        return st;
    mc_sched_t *s = mc_sched_new(task, topo, "nccl-ring");
    int *chain = mc_xmalloc(sizeof(int) * (size_t)(topo->ngpus + 1)), moving = 0;
    for (int pi = 0; pi < task->npieces; pi++)
        moving += task->pieces[pi].ndests > 0;
    for (int pi = 0; pi < task->npieces && st == MC_OK; pi++) {
        const mc_piece_t *p = &task->pieces[pi];
        if (!p->ndests)
            continue;
        int n = ring_chain(task, p, chain), channels = ring_channels(topo, chain[0]);
        uint64_t esize = (uint64_t)mc_dtype_size(task->tensors[p->tensor].src.dtype), off = 0;
        for (int c = 0; c < channels && st == MC_OK; c++) {
            uint64_t part = synth_even_part(p->bytes, esize, channels, c);
            if (part)
                /* every channel of every piece's ring moves at once over the same hops */
                st = synth_add_chain(s, topo, pi, off, part, 0, chain, n, opts->chunk_bytes,
                                     channels * moving, err);
            off += part;
        }
    }
    if (st != MC_OK)
        goto out;
    s->nphases = s->ntrees > 0;
    s->mem_limit = opts->memory_limit;
    /* The channels of one ring share every hop. */
    mc_sched_plan_rates(s, topo);
    snprintf(s->params, sizeof(s->params), "ring=mesh-order channels=nvlink-lanes chunks=%s",
             opts->chunk_bytes ? "fixed" : "best-pipelined");
    *out = s;
    s = NULL;
out:
    mc_sched_free(s);
    free(chain);
    return st;
}
