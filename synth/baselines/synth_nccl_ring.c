/* NCCL's ring collectives written as a schedule, for the calibration suite (bench/calib.cases,
 * docs/simulator.md): every piece moves from its first holder around the ring of its destination
 * mesh, visiting its destinations in the mesh's order from the holder's position on, as NCCL's
 * ring broadcast moves the buffer and its ring all-gather moves each rank's block. NCCL runs a
 * ring collective on several channels at once, each its own connection: its ring search sets a
 * channel's bandwidth to one NVLink's, so an NVLink GPU gets a channel per NVLink lane (at most
 * NCCL's MAXCHANNELS, 32). The bytes are split evenly over that many chains along the same ring,
 * each pipelined in NCCL's steps (synth_chain_chunks). Across hosts NCCL gives every channel a
 * ring of its own that leaves and enters each host through one NIC, channel c's through NIC c
 * (its rings are searched per NIC, then duplicated), so the channels' bytes cross on every rail:
 * here channel c visits each host's GPUs from the c-th on, the last of them sending through the
 * next host's c-th GPU's rail (the route's PXN hop), and a ring over several hosts has a whole
 * number of channels per NIC. A yardstick, not a resharding system: bench runs it only where a
 * case asks for it. */
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

/* Channel c's ring over the mesh (order[0..ndevices)): the mesh's order, each run of
 * consecutive devices on one host rotated to start at its c-th. On one host that is the same
 * cycle for every channel. Returns the number of runs (hosts the ring crosses into). */
static int ring_order(const mc_topo_t *topo, const mc_mesh_t *ring, int c, int *order)
{
    int runs = 0;
    for (int a = 0, b; a < ring->ndevices; a = b) {
        int h = mc_topo_gpu_host(topo, ring->devices[a]);
        for (b = a + 1; b < ring->ndevices && mc_topo_gpu_host(topo, ring->devices[b]) == h; b++)
            ;
        for (int i = a; i < b; i++)
            order[i] = ring->devices[a + (i - a + c) % (b - a)];
        runs++;
    }
    return runs;
}

/* The chain of piece p on channel c: its first holder, then its destinations in the channel's
 * ring order from there. */
static int ring_chain(const mc_task_t *task, const mc_topo_t *topo, const mc_piece_t *p, int c,
                      int *order, int *out)
{
    const mc_mesh_t *ring = &task->meshes[task->tensors[p->tensor].dst.mesh];
    int *holders = synth_holders_in_mesh_order(task, (int)(p - task->pieces));
    int n = 0, root = holders[0], start = 0;
    free(holders);
    ring_order(topo, ring, c, order);
    while (order[start] != root && start < ring->ndevices - 1)
        start++;
    out[n++] = root;
    for (int k = 1; k <= ring->ndevices; k++) {
        int g = order[(start + k) % ring->ndevices];
        for (int d = 0; d < p->ndests; d++)
            if (p->dests[d] == g && g != root)
                out[n++] = g;
    }
    return n;
}

/* Channels of piece p's ring: its root's NVLink lanes; over several hosts, rounded up to a
 * multiple of the root host's NICs (each NIC carries as many channels). */
static int piece_channels(const mc_task_t *task, const mc_topo_t *topo, const mc_piece_t *p,
                          int root, int *order)
{
    const mc_mesh_t *ring = &task->meshes[task->tensors[p->tensor].dst.mesh];
    int lanes = ring_channels(topo, root), nics = 0, h = mc_topo_gpu_host(topo, root);
    if (ring_order(topo, ring, 0, order) < 2)
        return lanes;
    for (int i = 0; i < topo->nnodes; i++)
        nics += topo->nodes[i].kind == MC_NODE_NET && topo->nodes[i].host == h;
    if (nics < 1)
        return lanes;
    int per = (lanes + nics - 1) / nics;
    while (per > 1 && per * nics > NCCL_MAX_CHANNELS)
        per--;
    return per * nics;
}

mc_status_t mc_synth_nccl_ring(mc_task_t *task, const mc_topo_t *topo,
                               const mc_synth_opts_t *opts, mc_sched_t **out, mc_err_t *err)
{
    mc_status_t st = synth_check_one_consumer(task, "nccl-ring", err);
    if (st != MC_OK)
        return st;
    mc_sched_t *s = mc_sched_new(task, topo, "nccl-ring");
    int *chain = mc_xmalloc(sizeof(int) * (size_t)(topo->ngpus + 1)), moving = 0;
    int *order = mc_xmalloc(sizeof(int) * (size_t)(topo->ngpus + 1));
    for (int pi = 0; pi < task->npieces; pi++)
        moving += task->pieces[pi].ndests > 0;
    for (int pi = 0; pi < task->npieces && st == MC_OK; pi++) {
        const mc_piece_t *p = &task->pieces[pi];
        if (!p->ndests)
            continue;
        int n = ring_chain(task, topo, p, 0, order, chain);
        int channels = piece_channels(task, topo, p, chain[0], order);
        uint64_t esize = (uint64_t)mc_dtype_size(task->tensors[p->tensor].src.dtype), off = 0;
        for (int c = 0; c < channels && st == MC_OK; c++) {
            uint64_t part = synth_even_part(p->bytes, esize, channels, c);
            n = ring_chain(task, topo, p, c, order, chain);
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
    snprintf(s->params, sizeof(s->params), "ring=mesh-order-per-nic channels=nvlink-lanes-per-nic chunks=%s",
             opts->chunk_bytes ? "fixed" : "best-pipelined");
    *out = s;
    s = NULL;
out:
    mc_sched_free(s);
    free(chain);
    free(order);
    return st;
}
