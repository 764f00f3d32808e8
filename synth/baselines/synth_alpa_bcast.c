/* The paper's broadcast baseline (Alpa resharding_mode="broadcast" with
 * resharding_loadbalance_mode="loadbalance_order" and the greedy solver, "Ours" in the paper's
 * figures): one broadcast per piece from one holder to all of the piece's destinations; the
 * sender comes from Alpa's randomized greedy solver over its (mesh, host) workers, solved afresh
 * for every tensor and consumer; each broadcast runs as NCCL's pipelined ring broadcast
 * (synth_ring.c), one chain per NIC the group's hosts can drive, each as NCCL's two duplicated
 * channels. Alpa's workers issue every broadcast at once (no barrier between rounds), so all trees
 * share one phase; 'alpa-bcast-rounds' makes each round a phase instead. */
#include <stdlib.h>
#include <string.h>

#include "synth/synth_internal.h"

#define BCAST_SEED 0x5eed
#define BCAST_MAX_CHAINS 32

/* Distinct worker ids (first + index into hosts[0..nhosts)) of the hosts of gpus, ascending, into
 * out; returns the count. */
static int worker_ids(const mc_topo_t *topo, const int *hosts, int first, int nhosts,
                      const int *gpus, int n, int *out)
{
    int k = 0;
    for (int w = 0; w < nhosts; w++)
        for (int i = 0; i < n; i++)
            if (mc_topo_gpu_host(topo, gpus[i]) == hosts[w]) {
                out[k++] = first + w;
                break;
            }
    return k;
}

/* Distinct hosts of a mesh in the order its devices list them, appended to hosts; returns the new
 * count. */
static int mesh_hosts(const mc_topo_t *topo, const mc_mesh_t *mesh, int *hosts, int n)
{
    int first = n;
    for (int i = 0; i < mesh->ndevices; i++) {
        int h = mc_topo_gpu_host(topo, mesh->devices[i]), j = first;
        while (j < n && hosts[j] != h)
            j++;
        if (j == n)
            hosts[n++] = h;
    }
    return n;
}

/* Alpa's load-balancing workers (CrossMeshCommunicator._get_hardware_info_for_loadbalance:
 * nic_constraints = src_nic_constraints + dst_nic_constraints, one list per (mesh, host)): the
 * source mesh's hosts, then one consumer's mesh's, so that a host holding GPUs of both meshes is
 * two workers. Returns the count; *nsrc gets the source side's. */
static int tensor_workers(const mc_task_t *task, const mc_topo_t *topo, int tensor, int dst_mesh,
                          int *hosts, int *nsrc)
{
    *nsrc = mesh_hosts(topo, &task->meshes[task->tensors[tensor].src.mesh], hosts, 0);
    return mesh_hosts(topo, &task->meshes[dst_mesh], hosts, *nsrc);
}

/* Element count of the whole source tile the piece is cut from: Alpa's work duration
 * (src_tileslice.tile_size, not the slice's size). */
static double source_tile_elems(const mc_task_t *task, int piece, int holder)
{
    const mc_layout_t *src = &task->tensors[task->pieces[piece].tensor].src;
    mc_box_t tile;
    mc_layout_tile(task, src, holder, &tile);
    return (double)mc_box_elems(&tile, src->ndims);
}

/* The destinations of a piece inside one consumer's mesh, in that mesh's order (the
 * communicator's ranks); returns their count. */
static int dests_in_mesh_order(const mc_task_t *task, int piece, int dst_mesh, int *out)
{
    const mc_piece_t *p = &task->pieces[piece];
    const mc_mesh_t *mesh = &task->meshes[dst_mesh];
    int n = 0;
    for (int i = 0; i < mesh->ndevices; i++)
        for (int d = 0; d < p->ndests; d++)
            if (p->dests[d] == mesh->devices[i])
                out[n++] = p->dests[d];
    return n;
}

typedef struct bcast_ctx {
    mc_task_t *task;
    const mc_topo_t *topo;
    const mc_synth_opts_t *opts;
    mc_sched_t *s;
    synth_ring_t *ring;
    int *order, *dests;
    int rounds_as_phases;  /* the alpa-bcast-rounds variant: a global barrier after each round */
} bcast_ctx_t;

/* Emits the broadcast of one piece from sender to its destinations in one consumer's mesh in
 * the given phase, its bytes split on element boundaries over the ring's chains, each run twice:
 * NCCL duplicates every ring channel (ncclTopoPostset, src/graph/connect.cc: nChannels * 2), each
 * copy its own connection. */
static mc_status_t emit_broadcast(bcast_ctx_t *c, int piece, int dst_mesh, int sender, int phase,
                                  mc_err_t *err)
{
    const mc_piece_t *p = &c->task->pieces[piece];
    int nd = dests_in_mesh_order(c->task, piece, dst_mesh, c->dests);
    int nchains;
    mc_status_t st = synth_ring_plan(c->ring, sender, c->dests, nd, BCAST_MAX_CHAINS, c->order,
                                     &nchains, err);
    if (st != MC_OK)
        return st;
    uint64_t esize = (uint64_t)mc_dtype_size(c->task->tensors[p->tensor].src.dtype), offset = 0;
    for (int k = 0; k < 2 * nchains; k++) {
        uint64_t part = synth_even_part(p->bytes, esize, 2 * nchains, k);
        if (!part)
            continue;
        st = synth_add_chain(c->s, c->topo, piece, offset, part, phase,
                             c->order + (size_t)(k / 2) * (size_t)(nd + 1), nd + 1,
                             c->opts->chunk_bytes, 2, synth_inflight(c->opts), err);
        if (st != MC_OK)
            return st;
        offset += part;
    }
    return MC_OK;
}

/* Solves the broadcasts of one tensor to one consumer's mesh (one Alpa resharding: a tensor with
 * several consumers is resharded to each independently) and emits them from phase `base` on (in
 * phase 0 without rounds as phases); returns the rounds used in *nrounds. */
static mc_status_t bcast_tensor(bcast_ctx_t *c, int tensor, int dst_mesh, const synth_unit_t *units,
                                int nunits, int base, int *nrounds, mc_err_t *err)
{
    mc_task_t *task = c->task;
    mc_status_t st = MC_OK;
    int ngpus = c->topo->ngpus;
    int *hosts = mc_xmalloc(sizeof(int) * 2 * (size_t)(ngpus ? ngpus : 1)), nsrc;
    int nhosts = tensor_workers(task, c->topo, tensor, dst_mesh, hosts, &nsrc);
    synth_lb_work_t *works = mc_xcalloc((size_t)(nunits ? nunits : 1), sizeof(*works));
    int *ids = mc_xmalloc(sizeof(int) * 2 * (size_t)(nunits ? nunits : 1) * (size_t)nhosts);
    int *holders_of = mc_xcalloc((size_t)(nunits ? nunits : 1), sizeof(int));
    int **holders = mc_xcalloc((size_t)(nunits ? nunits : 1), sizeof(int *));
    synth_ranks_t ranks;
    synth_ranks_init(&ranks, task);
    int *sender = mc_xmalloc(sizeof(int) * (size_t)(nunits ? nunits : 1));
    int *round = mc_xmalloc(sizeof(int) * (size_t)(nunits ? nunits : 1));
    int nw = 0;
    for (int u = 0; u < nunits; u++) {
        int nd = units[u].tensor == tensor
                     ? dests_in_mesh_order(task, units[u].piece, dst_mesh, c->dests) : 0;
        if (!nd)
            continue;
        const mc_piece_t *p = &task->pieces[units[u].piece];
        int *snd = ids + (size_t)nw * 2 * (size_t)nhosts, *rcv = snd + nhosts;
        holders[nw] = synth_holders_in_mesh_order(task, &ranks, units[u].piece);
        holders_of[nw] = units[u].piece;
        works[nw].senders = snd;
        works[nw].nsenders = worker_ids(c->topo, hosts, 0, nsrc, holders[nw], p->nholders, snd);
        works[nw].receivers = rcv;
        works[nw].nreceivers = worker_ids(c->topo, hosts + nsrc, nsrc, nhosts - nsrc, c->dests, nd,
                                          rcv);
        works[nw].duration = source_tile_elems(task, units[u].piece, holders[nw][0]);
        nw++;
    }
    *nrounds = synth_lb_greedy(nhosts, nw, works, SYNTH_LB_TRIALS, BCAST_SEED, sender, round);
    for (int w = 0; w < nw; w++) {
        const mc_piece_t *p = &task->pieces[holders_of[w]];
        int dev = -1;
        /* Alpa maps the chosen host back to the first replica on it. */
        for (int h = 0; h < p->nholders && dev < 0 && sender[w] >= 0; h++)
            if (mc_topo_gpu_host(c->topo, holders[w][h]) == hosts[sender[w]])
                dev = holders[w][h];
        if (dev < 0) {
            st = mc_err_set(err, MC_ERR_INTERNAL, "%s:%d: no sender host found for piece %d",
                            __FILE__, __LINE__, holders_of[w]);
            goto out;
        }
        MC_CHECK_GOTO(emit_broadcast(c, holders_of[w], dst_mesh, dev,
                                     c->rounds_as_phases ? base + round[w] : 0, err),
                      out, st);
    }
out:
    for (int w = 0; w < nw; w++)
        free(holders[w]);
    synth_ranks_free(&ranks);
    free(holders);
    free(holders_of);
    free(hosts);
    free(works);
    free(ids);
    free(sender);
    free(round);
    return st;
}

/* Both readings of Alpa's order (docs/strategies.md, "alpa-bcast"): with rounds_as_phases every
 * solver round is a phase, else every broadcast is in phase 0. */
static mc_status_t alpa_bcast(mc_task_t *task, const mc_topo_t *topo, const mc_synth_opts_t *opts,
                              int rounds_as_phases, mc_sched_t **out, mc_err_t *err)
{
    const char *name = rounds_as_phases ? "alpa-bcast-rounds" : "alpa-bcast";
    /* Inside one mesh XLA's SPMD partitioner reshards (strategy xla); a tensor that only needs
     * local copies gets the empty schedule any system would run. */
    mc_status_t st = synth_check_disjoint(task, name, err);
    if (st != MC_OK)
        return st;
    int nunits = 0, maxd = 1, phases = 0;
    synth_unit_t *units = synth_naive_order(task, 0, &nunits);
    for (int p = 0; p < task->npieces; p++)
        if (task->pieces[p].ndests + 1 > maxd)
            maxd = task->pieces[p].ndests + 1;
    bcast_ctx_t c = {task, topo, opts, mc_sched_new(task, topo, name),
                     synth_ring_new(topo),
                     mc_xmalloc(sizeof(int) * (size_t)maxd * BCAST_MAX_CHAINS),
                     mc_xmalloc(sizeof(int) * (size_t)maxd), rounds_as_phases};
    c.s->mem_limit = opts->memory_limit;
    for (int t = 0; t < task->ntensors; t++)
        for (int k = 0; k <= task->tensors[t].nmore; k++) {
            int nrounds = 0, mesh = mc_tensor_consumer(&task->tensors[t], k)->mesh;
            MC_CHECK_GOTO(bcast_tensor(&c, t, mesh, units, nunits, phases, &nrounds, err), out,
                          st);
            phases += rounds_as_phases ? nrounds : 0;
        }
    c.s->nphases = rounds_as_phases ? phases : c.s->ntrees > 0;
    /* Broadcasts overlap (and even rounds are host-disjoint only: chains of one broadcast may share
     * NVLink inside a host), so every tree states its max-min fair share. */
    mc_sched_plan_rates(c.s, topo);
    snprintf(c.s->params, sizeof(c.s->params),
             "workers=mesh-host balance=greedy trials=%d seed=%d order=%s ring=nccl chunks=%s",
             SYNTH_LB_TRIALS, BCAST_SEED, rounds_as_phases ? "rounds" : "unbarriered",
             opts->chunk_bytes ? "fixed" : "best-pipelined");
    *out = c.s;
    c.s = NULL;
out:
    mc_sched_free(c.s);
    synth_ring_free(c.ring);
    free(c.order);
    free(c.dests);
    free(units);
    return st;
}

mc_status_t mc_synth_alpa_bcast(mc_task_t *task, const mc_topo_t *topo,
                                const mc_synth_opts_t *opts, mc_sched_t **out, mc_err_t *err)
{
    return alpa_bcast(task, topo, opts, 0, out, err);
}

mc_status_t mc_synth_alpa_bcast_rounds(mc_task_t *task, const mc_topo_t *topo,
                                       const mc_synth_opts_t *opts, mc_sched_t **out,
                                       mc_err_t *err)
{
    return alpa_bcast(task, topo, opts, 1, out, err);
}
