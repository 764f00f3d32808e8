/* NCCL's ring collectives written as a schedule, for the calibration suite (bench/calib.cases,
 * docs/simulator.md): every piece moves from its first holder around the ring of its destination
 * mesh (with the holder, when it is outside the mesh, as NCCL's communicator for a broadcast
 * holds its root), visiting its destinations in the ring's order from the holder's position on,
 * as NCCL's ring broadcast moves the buffer and its ring all-gather moves each rank's block. NCCL
 * runs a ring collective on several channels at once, each its own connection on its own ring:
 * the rings and their number are topo/topo_rings.c's (on a host with direct links, the rings
 * NCCL's search finds; on an NVSwitch host the mesh's order, a channel per NVLink lane; across
 * hosts a ring per channel entering each host at the GPU next to NIC c). The bytes are split
 * evenly over the channels, each pipelined in NCCL's steps (synth_chain_chunks). A yardstick,
 * not a resharding system: bench runs it only where a case asks for it. */
#include <stdlib.h>

#include "synth/synth_internal.h"
#include "topo/topo_rings.h"

/* The rings of a mesh (and of a root outside it), found once per call. */
typedef struct mesh_rings {
    int mesh, root;
    mc_topo_rings_t *rings;
    struct mesh_rings *next;
} mesh_rings_t;

static void mesh_rings_free(mesh_rings_t *m)
{
    while (m) {
        mesh_rings_t *next = m->next;
        mc_topo_rings_free(m->rings);
        free(m);
        m = next;
    }
}

static mc_status_t mesh_rings_get(const mc_topo_t *topo, const mc_mesh_t *mesh, int mi, int root,
                                  mesh_rings_t **list, mc_topo_rings_t **out, mc_err_t *err)
{
    for (mesh_rings_t *m = *list; m; m = m->next)
        if (m->mesh == mi && m->root == root) {
            *out = m->rings;
            return MC_OK;
        }
    mesh_rings_t *m = mc_xcalloc(1, sizeof(*m));
    m->mesh = mi;
    m->root = root;
    m->next = *list;
    *list = m;
    mc_status_t st = mc_topo_rings_new(topo, mesh->devices, mesh->ndevices, root, &m->rings, err);
    *out = m->rings;
    return st;
}

/* The chain of piece p from root on channel c: root, then p's destinations in the channel's
 * ring order from root's position on (from the ring's first GPU when root is off the ring). */
static int ring_chain(const mc_topo_rings_t *r, const mc_piece_t *p, int root, int c, int *order,
                      int *out)
{
    int n = 0, start = 0;
    mc_topo_rings_order(r, c, order);
    while (start < r->n - 1 && order[start] != root)
        start++;
    out[n++] = root;
    for (int k = 1; k <= r->n; k++) {
        int g = order[(start + k) % r->n];
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
    int *order = mc_xmalloc(sizeof(int) * (size_t)(topo->ngpus + 1));
    mesh_rings_t *rings = NULL;
    mc_topo_rings_t *m;
    for (int pi = 0; pi < task->npieces; pi++)
        moving += task->pieces[pi].ndests > 0;
    for (int pi = 0; pi < task->npieces && st == MC_OK; pi++) {
        const mc_piece_t *p = &task->pieces[pi];
        int mesh = task->tensors[p->tensor].dst.mesh;
        if (!p->ndests)
            continue;
        int *holders = synth_holders_in_mesh_order(task, pi), root = holders[0];
        free(holders);
        int outside = synth_mesh_rank(&task->meshes[mesh], root) < 0 ? root : -1;
        st = mesh_rings_get(topo, &task->meshes[mesh], mesh, outside, &rings, &m, err);
        if (st != MC_OK)
            break;
        int channels = mc_topo_rings_channels(topo, m, root);
        /* the channels that share a hop: those on one ring (a searched host's rings are apart)
         * of every piece */
        int apart = m->nruns == 1 && m->search[0].nrings ? m->search[0].nrings : 1;
        int sharers = (channels + apart - 1) / apart * moving;
        uint64_t esize = (uint64_t)mc_dtype_size(task->tensors[p->tensor].src.dtype), off = 0;
        for (int c = 0; c < channels && st == MC_OK; c++) {
            uint64_t part = synth_even_part(p->bytes, esize, channels, c);
            int n = ring_chain(m, p, root, c, order, chain);
            if (part)
                /* every channel of every piece's ring moves at once */
                st = synth_add_chain(s, topo, pi, off, part, 0, chain, n, opts->chunk_bytes,
                                     sharers, err);
            off += part;
        }
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
    mesh_rings_free(rings);
    free(chain);
    free(order);
    return st;
}
