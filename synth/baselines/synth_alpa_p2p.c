/* Alpa's default cross-mesh resharding (alpa/global_env.py: resharding_mode="send_recv",
 * resharding_loadbalance_mode="normal", use_local_allgather=True): where
 * CrossMeshCommunicator._rewrite_allgather_spec applies, a destination replicated inside its hosts
 * is rewritten into a fully sharded one, so each replica receives a distinct 1/r of its tile over
 * the network (send/recv with the least-loaded sender), and an all-gather inside the destination
 * mesh (ReshardingTask's allgather, NCCL's ring) restores the replication. Each part is one
 * message, as Alpa slices it into a contiguous buffer before it sends. Tensors the rewrite does
 * not apply to are plain send/recv, as in p2p-lb. */
#include <stdlib.h>
#include <string.h>

#include "synth/synth_internal.h"

/* What the rewrite did to one tensor: chunks[k] more shards on dimension dims[k] (the first one
 * major), and the replicas the chunks leave (1 when the tile is fully sharded). */
typedef struct rewrite {
    int nchunks;
    int dims[MC_MAX_DIMS];
    int64_t chunks[MC_MAX_DIMS];
    int64_t leftover;
} rewrite_t;

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int64_t stride_of(const mc_mesh_t *m, int a)
{
    int64_t s = 1;
    for (int i = a + 1; i < m->naxes; i++)
        s *= m->axis_sizes[i];
    return s;
}

/* Alpa reads a sharding from XLA's tile assignment (auto_sharding.py,
 * _hlo_sharding_to_sharding_spec_no_tuple): one mesh-mapping entry per split tensor dimension
 * and one for the replicas, each needing its devices to be an arithmetic sequence (axes of size
 * > 1 that follow each other in the mesh), ordered by decreasing step. Sets *step to the entry's
 * step (the stride of its minor axis); returns 0 when the axes are not such a sequence. */
static int entry_step(const mc_mesh_t *m, const int *axes, int n, int64_t *step)
{
    int prev = -1;
    *step = 0;
    for (int i = 0; i < n; i++) {
        if (m->axis_sizes[axes[i]] == 1)
            continue;
        for (int a = prev + 1; prev >= 0 && a < axes[i]; a++)
            if (m->axis_sizes[a] != 1)
                return 0;
        if (prev >= 0 && axes[i] < prev)
            return 0;
        prev = axes[i];
        *step = stride_of(m, axes[i]);
    }
    return 1;
}

static int distinct_hosts(const mc_topo_t *topo, const mc_mesh_t *m)
{
    int n = 0;
    for (int i = 0; i < m->ndevices; i++) {
        int h = mc_topo_gpu_host(topo, m->devices[i]), seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = mc_topo_gpu_host(topo, m->devices[j]) == h;
        n += !seen;
    }
    return n;
}

/* CrossMeshCommunicator._rewrite_allgather_spec on tensor t's destination layout: returns 1 and
 * fills *rw when Alpa rewrites it. The conditions are Alpa's: the layout is replicated; the
 * mesh-mapping entry with the largest step (mapping[0], the "node" entry) splits a tensor
 * dimension into at least as many shards as the destination mesh has hosts (a replicated node
 * entry counts 1), so the all-gather stays inside hosts; then, for each tensor dimension in order,
 * gcd(replicas left, shard length) more shards, until no replica is left. Layouts Alpa cannot
 * express (explicit or uneven shard sizes, axes that are not an arithmetic sequence of devices)
 * are not rewritten. */
static int alpa_rewrite(const mc_task_t *task, const mc_topo_t *topo, int t, rewrite_t *rw)
{
    const mc_layout_t *l = &task->tensors[t].dst;
    const mc_mesh_t *m = &task->meshes[l->mesh];
    int raxes[MC_MAX_AXES], nr = 0, node_dim = -1;
    int64_t replicas = 1, best = -1, step;
    unsigned used = 0;
    for (int d = 0; d < l->ndims; d++) {
        int64_t shards = 1;
        for (int i = 0; i < l->dims[d].naxes; i++) {
            used |= 1u << l->dims[d].axes[i];
            shards *= m->axis_sizes[l->dims[d].axes[i]];
        }
        if (l->dims[d].sizes || l->shape[d] % shards)
            return 0;
        if (shards == 1)
            continue;
        if (!entry_step(m, l->dims[d].axes, l->dims[d].naxes, &step))
            return 0;
        if (step > best) {
            best = step;
            node_dim = d;
        }
    }
    for (int a = 0; a < m->naxes; a++)
        if (!((used >> a) & 1u) && m->axis_sizes[a] > 1) {
            raxes[nr++] = a;
            replicas *= m->axis_sizes[a];
        }
    if (replicas == 1 || !entry_step(m, raxes, nr, &step))
        return 0;
    if (step > best)
        node_dim = -1;
    int64_t node_chunk = 1;
    for (int i = 0; node_dim >= 0 && i < l->dims[node_dim].naxes; i++)
        node_chunk *= m->axis_sizes[l->dims[node_dim].axes[i]];
    if (node_chunk < distinct_hosts(topo, m))
        return 0;
    memset(rw, 0, sizeof(*rw));
    for (int d = 0; d < l->ndims && replicas > 1; d++) {
        int64_t shards = 1;
        for (int i = 0; i < l->dims[d].naxes; i++)
            shards *= m->axis_sizes[l->dims[d].axes[i]];
        int64_t c = gcd64(replicas, l->shape[d] / shards);
        if (c == 1)
            continue;
        rw->dims[rw->nchunks] = d;
        rw->chunks[rw->nchunks++] = c;
        replicas /= c;
    }
    rw->leftover = replicas;
    return rw->nchunks > 0;
}

/* The destinations of a piece in destination-mesh order: the replicas of its tile in the order
 * of XLA's replication dimension. Returns the count. */
static int replicas_in_order(const mc_task_t *task, const mc_piece_t *p, int *out)
{
    const mc_mesh_t *m = &task->meshes[task->tensors[p->tensor].dst.mesh];
    int n = 0;
    for (int i = 0; i < m->ndevices; i++)
        for (int d = 0; d < p->ndests; d++)
            if (p->dests[d] == m->devices[i])
                out[n++] = m->devices[i];
    return n;
}

/* The part of its destination tile that replica number idx receives: the chunks split the tile
 * (first chunk major); the leftover replicas are minor, so replicas idx / leftover alike get the
 * same part. */
static void rewritten_part(const mc_task_t *task, const mc_piece_t *p, const rewrite_t *rw,
                           int gpu, int idx, mc_box_t *out)
{
    mc_layout_tile(task, &task->tensors[p->tensor].dst, gpu, out);
    int64_t ci = idx / rw->leftover;
    for (int k = rw->nchunks - 1; k >= 0; k--) {
        int d = rw->dims[k];
        int64_t part = (out->hi[d] - out->lo[d]) / rw->chunks[k], digit = ci % rw->chunks[k];
        ci /= rw->chunks[k];
        out->lo[d] += digit * part;
        out->hi[d] = out->lo[d] + part;
    }
}

/* The parts the rewrite cuts a tile into. */
static int64_t parts_of(const rewrite_t *rw)
{
    int64_t n = 1;
    for (int k = 0; k < rw->nchunks; k++)
        n *= rw->chunks[k];
    return n;
}

/* Alpa slices each part into a contiguous buffer (jax indexing) and moves it as one message, in
 * the send/recv and in the all-gather ring alike. The piece's parts, in chunk order, are laid end
 * to end: part ci of piece p is bytes [off[ci], off[ci + 1]) of the piece, the size of Alpa's
 * strided slice. A tensor that is not rewritten has one part, the whole piece. off has
 * parts_of(rw) + 1 entries. */
static void part_offsets(const mc_task_t *task, const mc_piece_t *p, const rewrite_t *rw, int on,
                         uint64_t *off)
{
    const mc_layout_t *dst = &task->tensors[p->tensor].dst;
    uint64_t esize = (uint64_t)mc_dtype_size(task->tensors[p->tensor].src.dtype);
    int64_t n = on ? parts_of(rw) : 1;
    off[0] = 0;
    for (int64_t ci = 0; ci < n; ci++) {
        mc_box_t part, q;
        uint64_t elems = mc_box_elems(&p->box, dst->ndims);
        if (on) {
            rewritten_part(task, p, rw, p->dests[0], (int)(ci * rw->leftover), &part);
            elems = mc_box_intersect(&p->box, &part, dst->ndims, &q)
                        ? mc_box_elems(&q, dst->ndims) : 0;
        }
        off[ci + 1] = off[ci] + elems * esize;
    }
}

/* What dest receives of piece p over the network: *part gets its (rewritten) destination tile,
 * the result is the index of its part of the piece (0 when the tensor is not rewritten). reps is
 * scratch for the piece's replicas. */
static int64_t dest_part(const mc_task_t *task, const mc_piece_t *p, const rewrite_t *rw,
                         const int *on, int dest, int *reps, mc_box_t *part)
{
    mc_layout_tile(task, &task->tensors[p->tensor].dst, dest, part);
    if (!on[p->tensor])
        return 0;
    int n = replicas_in_order(task, p, reps), idx = 0;
    while (idx < n && reps[idx] != dest)
        idx++;
    rewritten_part(task, p, &rw[p->tensor], dest, idx, part);
    return idx / rw[p->tensor].leftover;
}

typedef struct p2p_ctx {
    mc_task_t *task;
    const mc_topo_t *topo;
    const mc_synth_opts_t *opts;
    mc_sched_t *s;
    int piece, phase, *ring, nring;
    int sender, dest;
    mc_err_t *err;
    mc_status_t st;
} p2p_ctx_t;

static void add_send(p2p_ctx_t *c, uint64_t off, uint64_t len)
{
    if (c->st != MC_OK)
        return;
    /* One message per send: NCCL pipelines a send internally. */
    int nchunks = c->opts->chunk_bytes ? synth_forced_chunks(len, c->opts->chunk_bytes) : 1;
    int ti = mc_sched_add_tree(c->s, c->piece, off, len, c->sender, c->phase, nchunks);
    c->st = mc_sched_add_edge(c->s, c->topo, ti, c->sender, c->dest, c->err);
}

static void add_ring(p2p_ctx_t *c, uint64_t off, uint64_t len)
{
    if (c->st == MC_OK)
        /* every part of the ring moves at once: each hop carries nring of them */
        c->st = synth_add_chain(c->s, c->topo, c->piece, off, len, c->phase, c->ring, c->nring,
                                c->opts->chunk_bytes, c->nring, synth_inflight(c->opts),
                                c->err);
}

/* NCCL's ring all-gather inside the replicas of piece p's tile: the part replica number idx
 * received (bytes [off[ci], off[ci + 1]) of the piece, ci = idx / leftover) travels the ring
 * idx -> idx+1 -> ... among the replicas that hold other parts (those with the same index modulo
 * the leftover replicas). */
static void emit_allgather(p2p_ctx_t *c, const rewrite_t *rw, const uint64_t *off,
                           const int *reps, int nreps)
{
    for (int idx = 0; idx < nreps && c->st == MC_OK; idx++) {
        int64_t ci = idx / rw->leftover;
        if (off[ci + 1] == off[ci])
            continue;
        c->nring = 0;
        for (int k = 0; k < nreps; k++) {
            int j = (idx + k) % nreps;
            if (j % rw->leftover == idx % rw->leftover)
                c->ring[c->nring++] = reps[j];
        }
        if (c->nring > 1)
            add_ring(c, off[ci], off[ci + 1] - off[ci]);
    }
}

mc_status_t mc_synth_alpa_p2p(mc_task_t *task, const mc_topo_t *topo, const mc_synth_opts_t *opts,
                              mc_sched_t **out, mc_err_t *err)
{
    /* Alpa reshards to each consumer independently; only one consumer per tensor is written. */
    mc_status_t st = synth_check_disjoint(task, "alpa-p2p", err);
    if (st == MC_OK)
        st = synth_check_one_consumer(task, "alpa-p2p", err);
    if (st != MC_OK)
        return st;
    int ntens = task->ntensors, nunits = 0, maxd = 1, any = 0;
    int64_t maxparts = 1;
    rewrite_t *rw = mc_xcalloc((size_t)(ntens ? ntens : 1), sizeof(*rw));
    int *on = mc_xcalloc((size_t)(ntens ? ntens : 1), sizeof(int));
    for (int t = 0; t < ntens; t++)
        if ((on[t] = alpa_rewrite(task, topo, t, &rw[t])) != 0) {
            any = 1;
            maxparts = parts_of(&rw[t]) > maxparts ? parts_of(&rw[t]) : maxparts;
        }
    /* every piece's part offsets, once: piece pi's at offs + pi * stride */
    size_t stride = (size_t)maxparts + 1;
    uint64_t *offs = mc_xmalloc(sizeof(uint64_t) * stride * (size_t)(task->npieces + 1));
    for (int pi = 0; pi < task->npieces; pi++) {
        int t = task->pieces[pi].tensor;
        part_offsets(task, &task->pieces[pi], &rw[t], on[t] && task->pieces[pi].ndests,
                     offs + (size_t)pi * stride);
    }
    for (int p = 0; p < task->npieces; p++)
        if (task->pieces[p].ndests > maxd)
            maxd = task->pieces[p].ndests;
    /* Alpa's unit tasks on the rewritten destination: (rewritten tile, replica, source slice). */
    synth_unit_t *units = synth_naive_order(task, 1, &nunits);
    int *reps = mc_xmalloc(sizeof(int) * (size_t)maxd);
    uint64_t *load = mc_xcalloc((size_t)topo->ngpus, sizeof(uint64_t));
    p2p_ctx_t c = {task, topo, opts, mc_sched_new(task, topo, "alpa-p2p"), 0, 0,
                   mc_xmalloc(sizeof(int) * (size_t)maxd), 0, 0, 0, err, MC_OK};
    c.s->mem_limit = opts->memory_limit;
    synth_ranks_t ranks;
    synth_ranks_init(&ranks, task);
    for (int u = 0; u < nunits; u++) {
        mc_box_t part;
        dest_part(task, &task->pieces[units[u].piece], rw, on, units[u].dest, reps, &part);
        memcpy(units[u].tile_lo, part.lo, sizeof(units[u].tile_lo));
    }
    synth_sort_units(units, nunits);
    for (int u = 0; u < nunits && c.st == MC_OK; u++) {
        const mc_piece_t *p = &task->pieces[units[u].piece];
        mc_box_t part;
        int64_t ci = dest_part(task, p, rw, on, units[u].dest, reps, &part);
        const uint64_t *off = offs + (size_t)units[u].piece * stride;
        if (off[ci + 1] == off[ci])
            continue;
        int *holders = synth_holders_in_mesh_order(task, &ranks, units[u].piece);
        c.sender = synth_least_loaded(holders, p->nholders, load);
        free(holders);
        load[c.sender] += (off[ci + 1] - off[ci]) /
                          (uint64_t)mc_dtype_size(task->tensors[p->tensor].src.dtype);
        c.piece = units[u].piece;
        c.dest = units[u].dest;
        c.phase = 0;
        add_send(&c, off[ci], off[ci + 1] - off[ci]);
    }
    for (int pi = 0; pi < task->npieces && c.st == MC_OK; pi++) {
        const mc_piece_t *p = &task->pieces[pi];
        if (!p->ndests || !on[p->tensor])
            continue;
        c.piece = pi;
        c.phase = 1;
        emit_allgather(&c, &rw[p->tensor], offs + (size_t)pi * stride, reps,
                       replicas_in_order(task, p, reps));
    }
    MC_CHECK_GOTO(c.st, out, st);
    c.s->nphases = c.s->ntrees ? 1 + any : 0;
    /* Sends share NICs and PCIe links, the rings NVLink: each tree gets its max-min fair share. */
    mc_sched_plan_rates(c.s, topo);
    mc_buf_t b = {0};
    mc_buf_printf(&b, "sender=least-loaded order=alpa-naive local-allgather=");
    for (int t = 0, n = 0; t < ntens; t++) {
        if (!on[t])
            continue;
        mc_buf_printf(&b, "%s%s:", n++ ? "," : "", task->tensors[t].name);
        for (int k = 0; k < rw[t].nchunks; k++)
            mc_buf_printf(&b, "%sd%dx%lld", k ? "+" : "", rw[t].dims[k],
                          (long long)rw[t].chunks[k]);
    }
    if (!any)
        mc_buf_printf(&b, "none");
    snprintf(c.s->params, sizeof(c.s->params), "%s", b.data);
    mc_buf_free(&b);
    *out = c.s;
    c.s = NULL;
out:
    mc_sched_free(c.s);
    synth_ranks_free(&ranks);
    free(c.ring);
    free(units);
    free(reps);
    free(load);
    free(rw);
    free(on);
    free(offs);
    return st;
}
