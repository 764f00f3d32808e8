/* Lowering: a schedule becomes one runtime plan per rank. Phases run one after the other; inside
 * a phase every tree moves chunk t-l over its edges of depth l at micro-step t, so a relay
 * receives chunk c while it forwards chunk c-1 (two staging slots; the whole tree when it is no
 * destination of the piece, so that it receives ahead of a slow child), a root packs chunk c while
 * chunk c-1 may still be on its way to a slow child (two slots: its children need not keep pace
 * with each other) and a leaf unpacks what it just received (one slot). A node whose part of the
 * piece is contiguous in its shard sends from or receives into the shard itself, without
 * staging. Staging is reused from phase to phase, so the workspace is the largest phase's.
 *
 * Besides the steps, every op gets the ops of its own rank it must wait for (the dependency graph
 * of runtime.h): a send waits for the receive or pack that gives it its chunk and for the previous
 * chunk on its edge, a receive for the previous chunk on its edge and for the last users of the
 * staging slot it overwrites, a pack for the last users of its slot, an unpack for its receive.
 * The first ops of a phase on a rank wait for the last ops of the rank's previous phase, since
 * staging is reused and a root may send what it received in an earlier phase. Every dependency
 * points to an earlier step (or to an earlier stage of the same step), so the steps stay a valid
 * order of the graph. Chunks are mc_tree_chunk's, as in the simulator and validate. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit.h"
#include "emit/emit_internal.h"

/* An op on its way into a plan: sorted by step, then stage (pre, comm, post), then order made. */
typedef struct pending {
    uint32_t step;
    int stage;
    uint32_t seq;
    int local_deps, has_succ; /* within its phase: whether it waits for / is waited for by an op */
    uint16_t lane;
    mc_rt_op_t op;
} pending_t;

/* Op seq waits for op dep (both creation indices of one rank). */
typedef struct dep_pair {
    uint32_t op, dep;
} dep_pair_t;

typedef struct rank_build {
    int counted;        /* only counts its ops: lowering another rank (mc_emit_lower_rank) */
    pending_t *ops;
    int nops, ops_cap;
    dep_pair_t *deps;
    int ndeps, deps_cap;
    int phase_first;    /* first op of the current phase */
    uint32_t *fence;    /* the last ops of the latest phase that had ops here */
    int nfence, fence_cap;
    mc_rt_box_t *boxes;
    int nboxes, boxes_cap;
    uint64_t ws_phase; /* staging used by the current phase */
    uint64_t ws_max;
} rank_build_t;

/* Where an edge of the schedule starts and ends in the plans: its first send (at the parent) and
 * its last receive (at the child), -1 when it moves nothing. */
typedef struct edge_ends {
    int64_t first_send, last_send, last_recv;
    mc_rt_ref_t send_ref, last_send_ref, recv_ref;
    int parent, child;
} edge_ends_t;

typedef struct lower {
    const mc_sched_t *s;
    const mc_task_t *t;
    mc_emit_shards_t sh;
    rank_build_t *rb;
    edge_ends_t *ends;  /* per edge, numbered tree by tree */
    int *gid0;          /* per tree: the number of its first edge */
    uint16_t *lane;     /* per edge, numbered as ends: its lane (assign_lanes) */
    int nlanes;
    int some;           /* only the plans of the GPUs not `counted` are made */
} lower_t;

static int box_equal(const mc_rt_box_t *a, const mc_rt_box_t *b)
{
    if (a->buf != b->buf || a->ndims != b->ndims || a->base != b->base)
        return 0;
    for (int d = 0; d < a->ndims; d++)
        if (a->extent[d] != b->extent[d] || (d + 1 < a->ndims && a->stride[d] != b->stride[d]))
            return 0;
    return 1;
}

/* Index of box in the rank's table, added when new. */
static int intern_box(rank_build_t *rb, const mc_rt_box_t *box)
{
    if (rb->counted)
        return 0;
    for (int i = 0; i < rb->nboxes; i++)
        if (box_equal(&rb->boxes[i], box))
            return i;
    MC_GROW(rb->boxes, rb->boxes_cap, rb->nboxes + 1);
    rb->boxes[rb->nboxes] = *box;
    return rb->nboxes++;
}

/* Adds an op in a lane; returns its creation index. */
static uint32_t add_op(rank_build_t *rb, uint32_t step, int stage, uint16_t lane,
                       const mc_rt_op_t *op)
{
    /* A counted rank's op keeps its number, so the ops of the rank being made still refer to
     * each other and to tokens exactly as in the full lowering. */
    if (rb->counted)
        return (uint32_t)rb->nops++;
    MC_GROW(rb->ops, rb->ops_cap, rb->nops + 1);
    pending_t *p = &rb->ops[rb->nops];
    memset(p, 0, sizeof *p);
    p->step = step;
    p->stage = stage;
    p->seq = (uint32_t)rb->nops;
    p->lane = lane;
    p->op = *op;
    return (uint32_t)rb->nops++;
}

/* A dependency on an op of an earlier phase: it orders, but leaves op a first op of its phase
 * (which still waits for the fence). */
static void add_dep_cross(rank_build_t *rb, uint32_t op, uint32_t dep)
{
    if (rb->counted)
        return;
    MC_GROW(rb->deps, rb->deps_cap, rb->ndeps + 1);
    rb->deps[rb->ndeps++] = (dep_pair_t){op, dep};
}

static void add_dep(rank_build_t *rb, uint32_t op, uint32_t dep)
{
    if (rb->counted)
        return;
    add_dep_cross(rb, op, dep);
    rb->ops[op].local_deps = 1;
    rb->ops[dep].has_succ = 1;
}

enum { STAGE_PRE, STAGE_COMM, STAGE_POST };

/* Where a node keeps the tree's bytes: a shard box (direct, when the tree's range is contiguous
 * there) or staging slots of the workspace. */
typedef struct place {
    int box;          /* shard box index, or -1 when staged */
    int shard_box;    /* the node's DST box of the piece when it is a destination, else -1 */
    uint64_t ws_off;  /* first slot in the workspace */
    int nslots;
    int whole;        /* staging holds the tree's whole range, chunk c at its offset */
} place_t;

/* A WS box that covers a slot: the whole workspace is one box, whose size is only known at the
 * end, so slots refer to box -2 until then. */
#define WS_BOX (-2)

static mc_status_t place_node(lower_t *L, const mc_tree_t *tr, int ti, int gpu, int depth,
                              int has_children, place_t *pl, mc_err_t *err)
{
    const mc_piece_t *pc = &L->t->pieces[tr->piece];
    rank_build_t *rb = &L->rb[gpu];
    mc_rt_box_t box;
    int dest = mc_ints_contain(pc->dests, pc->ndests, gpu);
    int holder = mc_ints_contain(pc->holders, pc->nholders, gpu);
    memset(pl, 0, sizeof *pl);
    pl->box = pl->shard_box = -1;
    if (depth == 0 && !holder && !dest)
        return mc_err_set(err, MC_ERR_UNSUPPORTED,
                          "tree %d: root GPU %d neither holds piece %d nor is one of its "
                          "destinations, so it has nothing to send",
                          ti, gpu, tr->piece);
    if (depth == 0 ? holder : dest) {
        int sbox = depth == 0 && holder;
        mc_emit_region_box(&L->sh, L->t, pc->tensor, gpu, sbox ? MC_RT_BUF_SRC : MC_RT_BUF_DST,
                           &pc->box, &box);
        int bi = intern_box(rb, &box);
        if (depth > 0)
            pl->shard_box = bi;
        uint64_t run;
        mc_rt_box_addr(&box, tr->offset, &run);
        if (run >= tr->bytes) {
            pl->box = bi;
            return MC_OK;
        }
    }
    /* Staged: a relay holds the chunk it forwards while the next one arrives, a root the chunk a
     * slow child still receives while it packs the next. A relay that is not a destination
     * stages the whole tree, as the simulator lets it receive ahead of a slower child (and as the
     * memory rule counts it, mc_sched_peak_mem): with two slots its receives would wait for its
     * sends, and a slow child would hold back the links into the relay. */
    pl->whole = depth > 0 && has_children && !dest;
    if (pl->whole)
        pl->nslots = tr->nchunks;
    else
        pl->nslots = (depth == 0 || has_children) && tr->nchunks > 1 ? 2 : 1;
    pl->ws_off = rb->ws_phase;
    rb->ws_phase += pl->whole ? tr->bytes : mc_tree_chunk_max(tr) * pl->nslots;
    return MC_OK;
}

static mc_rt_ref_t chunk_ref(const place_t *pl, const mc_tree_t *tr, int c)
{
    uint64_t off, len;
    mc_rt_ref_t r;
    mc_tree_chunk(tr, c, &off, &len);
    if (pl->box >= 0) {
        r.box = pl->box;
        r.off = tr->offset + off;
    } else {
        r.box = WS_BOX;
        r.off = pl->ws_off;
        r.off += pl->whole ? off : (uint64_t)(c % pl->nslots) * mc_tree_chunk_max(tr);
    }
    return r;
}

/* Depth of every GPU in the tree and its number of children, and the tree's largest depth;
 * edges list parents before children. On entry depth is -1 and nkids 0 for every GPU, as
 * tree_forget leaves them: a tree costs its size, not the cluster's. */
static mc_status_t tree_depths(const mc_tree_t *tr, int ti, int *depth, int *nkids, int *maxd,
                               mc_err_t *err)
{
    depth[tr->root] = 0;
    *maxd = 0;
    for (int e = 0; e < tr->nedges; e++) {
        const mc_tree_edge_t *ed = &tr->edges[e];
        if (depth[ed->parent] < 0 || depth[ed->child] >= 0)
            return mc_err_set(err, MC_ERR_INVALID,
                              "tree %d: edge %d->%d: the parent must be reached before the "
                              "child, and the child only once",
                              ti, ed->parent, ed->child);
        depth[ed->child] = depth[ed->parent] + 1;
        nkids[ed->parent]++;
        *maxd = depth[ed->child] > *maxd ? depth[ed->child] : *maxd;
    }
    return MC_OK;
}

static void tree_forget(const mc_tree_t *tr, int *depth, int *nkids)
{
    depth[tr->root] = -1;
    nkids[tr->root] = 0;
    for (int e = 0; e < tr->nedges; e++) {
        depth[tr->edges[e].child] = -1;
        nkids[tr->edges[e].child] = 0;
    }
}

/* The ops of the last three chunks of one tree, by chunk modulo 3 (a slot is reused two chunks
 * later at most): per node the op that gives it the chunk (receive or pack) and its unpack, per
 * edge its send. -1: none. */
typedef struct tree_ops {
    int64_t *got, *unpack; /* [gpu * 3 + c % 3] */
    int64_t *send;         /* [edge * 3 + c % 3] */
    int send_cap;
} tree_ops_t;

/* The op at a ring position, or -1 when the chunk is before the first. */
static int64_t ring(const int64_t *a, int i, int c)
{
    return c < 0 ? -1 : a[i * 3 + c % 3];
}

static void dep_on(rank_build_t *rb, uint32_t op, int64_t dep)
{
    if (dep >= 0)
        add_dep(rb, op, (uint32_t)dep);
}

/* Op `op` of GPU g overwrites g's slot of chunk c: it waits for the users of the chunk that held
 * the slot before (its sends onwards and its unpack). */
static void wait_slot(rank_build_t *rb, uint32_t op, const mc_tree_t *tr, const place_t *pl,
                      const tree_ops_t *to, int g, int c)
{
    int prev = c - pl->nslots;
    if (pl->box >= 0 || prev < 0)
        return;
    for (int e = 0; e < tr->nedges; e++)
        if (tr->edges[e].parent == g)
            dep_on(rb, op, ring(to->send, e, prev));
    dep_on(rb, op, ring(to->unpack, g, prev));
}

/* Adds the ops of one tree starting at global step base; returns its number of steps. */
static mc_status_t lower_tree(lower_t *L, int ti, uint32_t base, int *depth, int *nkids,
                              place_t *pl, tree_ops_t *to, uint32_t *nsteps, mc_err_t *err)
{
    const mc_tree_t *tr = &L->s->trees[ti];
    mc_status_t st;
    int maxd = 0;
    *nsteps = 0;
    if (tr->bytes == 0 || tr->nedges == 0)
        return MC_OK;
    MC_CHECK_GOTO(tree_depths(tr, ti, depth, nkids, &maxd, err), out, st);
    MC_CHECK_GOTO(place_node(L, tr, ti, tr->root, 0, nkids[tr->root] > 0, &pl[tr->root], err), out,
                  st);
    for (int e = 0; e < tr->nedges; e++) {
        int g = tr->edges[e].child;
        MC_CHECK_GOTO(place_node(L, tr, ti, g, depth[g], nkids[g] > 0, &pl[g], err), out, st);
    }
    MC_GROW(to->send, to->send_cap, 3 * tr->nedges);
    const mc_piece_t *pc = &L->t->pieces[tr->piece];
    rank_build_t *rrb = &L->rb[tr->root];
    for (int c = 0; c < tr->nchunks; c++) {
        uint64_t lo, n;
        mc_tree_chunk(tr, c, &lo, &n);
        if (!n)
            break;
        /* The root packs the chunk as soon as its slot is free: in the step after the one that
         * sent the chunk the slot held before (the first slots' chunks in the tree's first step).
         * Packed in the step of its send, chunk c's pack would follow the root's first edge's
         * send of chunk c-1 in that edge's lane (the nccl backend), and every other edge's send
         * of chunk c would wait for it: a fast child for a slow one. */
        const place_t *rp = &pl[tr->root];
        to->got[tr->root * 3 + c % 3] = to->unpack[tr->root * 3 + c % 3] = -1;
        if (rp->box < 0) {
            mc_rt_box_t sb;
            int src = mc_ints_contain(pc->holders, pc->nholders, tr->root);
            mc_emit_region_box(&L->sh, L->t, pc->tensor, tr->root,
                               src ? MC_RT_BUF_SRC : MC_RT_BUF_DST, &pc->box, &sb);
            mc_rt_op_t op = {MC_RT_OP_COPY, 0, 0, n, {0, 0}, chunk_ref(rp, tr, c)};
            op.src.box = intern_box(rrb, &sb);
            op.src.off = tr->offset + lo;
            /* in the lane of the root's first edge (edge 0: the root reaches it first) */
            uint32_t at = base + (c >= rp->nslots ? (uint32_t)(c - rp->nslots + 1) : 0);
            uint32_t id = add_op(rrb, at, STAGE_PRE, L->lane[L->gid0[ti]], &op);
            wait_slot(rrb, id, tr, rp, to, tr->root, c);
            to->got[tr->root * 3 + c % 3] = id;
        }
        for (int e = 0; e < tr->nedges; e++) {
            const mc_tree_edge_t *ed = &tr->edges[e];
            rank_build_t *prb = &L->rb[ed->parent], *crb = &L->rb[ed->child];
            uint32_t step = base + c + depth[ed->parent];
            mc_rt_op_t snd = {MC_RT_OP_SEND, ed->child, ti, n, chunk_ref(&pl[ed->parent], tr, c),
                              {0, 0}};
            mc_rt_op_t rcv = {MC_RT_OP_RECV, ed->parent, ti, n, {0, 0},
                              chunk_ref(&pl[ed->child], tr, c)};
            uint32_t sid = add_op(prb, step, STAGE_COMM, L->lane[L->gid0[ti] + e], &snd);
            dep_on(prb, sid, ring(to->got, ed->parent, c));
            dep_on(prb, sid, ring(to->send, e, c - 1));
            uint32_t rid = add_op(crb, step, STAGE_COMM, L->lane[L->gid0[ti] + e], &rcv);
            dep_on(crb, rid, ring(to->got, ed->child, c - 1));
            wait_slot(crb, rid, tr, &pl[ed->child], to, ed->child, c);
            to->send[e * 3 + c % 3] = sid;
            to->got[ed->child * 3 + c % 3] = rid;
            edge_ends_t *end = &L->ends[L->gid0[ti] + e];
            if (!c)
                end->first_send = sid, end->send_ref = snd.src;
            end->last_send = sid, end->last_send_ref = snd.src, end->parent = ed->parent;
            end->last_recv = rid, end->recv_ref = rcv.dst, end->child = ed->child;
            to->unpack[ed->child * 3 + c % 3] = -1;
            if (pl[ed->child].box < 0 && pl[ed->child].shard_box >= 0) {
                mc_rt_op_t unp = {MC_RT_OP_COPY, 0, 0, n, rcv.dst,
                                  {pl[ed->child].shard_box, tr->offset + lo}};
                uint32_t uid = add_op(crb, step, STAGE_POST, L->lane[L->gid0[ti] + e], &unp);
                add_dep(crb, uid, rid);
                to->unpack[ed->child * 3 + c % 3] = uid;
            }
        }
    }
    *nsteps = (uint32_t)(tr->nchunks + maxd - 1);
out:
    tree_forget(tr, depth, nkids);
    return st;
}

/* A tree that the one rank being made takes no part in: only its number of steps (the phase's
 * length) and which of its edges move anything (the link order between phases) matter. */
static mc_status_t count_tree(lower_t *L, int ti, int *depth, int *nkids, uint32_t *nsteps,
                              mc_err_t *err)
{
    const mc_tree_t *tr = &L->s->trees[ti];
    uint64_t off, n;
    int maxd;
    *nsteps = 0;
    if (tr->bytes == 0 || tr->nedges == 0)
        return MC_OK;
    mc_status_t st = tree_depths(tr, ti, depth, nkids, &maxd, err);
    tree_forget(tr, depth, nkids);
    if (st != MC_OK)
        return st;
    mc_tree_chunk(tr, 0, &off, &n);
    for (int e = 0; n && e < tr->nedges; e++) {
        edge_ends_t *end = &L->ends[L->gid0[ti] + e];
        end->first_send = 0; /* some op of a counted rank: never looked up */
        end->parent = tr->edges[e].parent;
        end->child = tr->edges[e].child;
    }
    *nsteps = (uint32_t)(tr->nchunks + maxd - 1);
    return MC_OK;
}

/* Whether the tree touches a GPU whose plan is made. */
static int tree_touches(const lower_t *L, const mc_tree_t *tr)
{
    if (!L->rb[tr->root].counted)
        return 1;
    for (int e = 0; e < tr->nedges; e++) /* GPU ids are below mc_emit_ngpus, not above -1 */
        if (tr->edges[e].child >= 0 && !L->rb[tr->edges[e].child].counted)
            return 1;
    return 0;
}

static void lower_copies(lower_t *L)
{
    for (int i = 0; i < L->t->ncopies; i++) {
        const mc_local_copy_t *cp = &L->t->copies[i];
        mc_rt_box_t sb, db;
        rank_build_t *rb = &L->rb[cp->gpu];
        mc_emit_region_box(&L->sh, L->t, cp->tensor, cp->gpu, MC_RT_BUF_SRC, &cp->box, &sb);
        mc_emit_region_box(&L->sh, L->t, cp->tensor, cp->gpu, MC_RT_BUF_DST, &cp->box, &db);
        mc_rt_op_t op = {MC_RT_OP_COPY, 0, 0, cp->bytes, {intern_box(rb, &sb), 0},
                         {intern_box(rb, &db), 0}};
        add_op(rb, 0, STAGE_PRE, 0, &op);
    }
}

static int pending_cmp(const void *a, const void *b)
{
    const pending_t *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->stage != y->stage)
        return x->stage - y->stage;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The plan's dependency table: op i waits for deps[dep_first[i] .. dep_first[i+1]), in final op
 * order (final[seq] is where op seq ended up). */
static void finish_deps(const rank_build_t *rb, const uint32_t *final, mc_rt_plan_t *p)
{
    uint32_t *first = mc_xcalloc(rb->nops + 1, sizeof *first);
    uint32_t *deps = mc_xcalloc(rb->ndeps + 1, sizeof *deps);
    for (int i = 0; i < rb->ndeps; i++)
        first[final[rb->deps[i].op] + 1]++;
    for (int i = 0; i < rb->nops; i++)
        first[i + 1] += first[i];
    uint32_t *at = mc_xcalloc(rb->nops + 1, sizeof *at);
    for (int i = 0; i < rb->ndeps; i++) {
        uint32_t o = final[rb->deps[i].op];
        deps[first[o] + at[o]++] = final[rb->deps[i].dep];
    }
    free(at);
    p->dep_first = first;
    p->deps = deps;
}

/* Turns GPU gpu's pending ops into the plan of its rank; peers become ranks too. */
static void finish_plan(rank_build_t *rb, int gpu, const int *rank_of, int nranks,
                        const lower_t *L, mc_rt_plan_t *p)
{
    mc_rt_op_t *ops = mc_xcalloc(rb->nops + 1, sizeof *ops);
    mc_rt_step_t *steps = mc_xcalloc(rb->nops + 1, sizeof *steps);
    uint32_t *final = mc_xcalloc(rb->nops + 1, sizeof *final);
    uint16_t *lane = mc_xcalloc(rb->nops + 1, sizeof *lane);
    int ws_box = -1;
    if (rb->ws_max) {
        mc_rt_box_t wb = {MC_RT_BUF_WS, 1, 0, {rb->ws_max}, {0}};
        ws_box = intern_box(rb, &wb);
    }
    if (rb->nops)
        mc_sort(rb->ops, rb->nops, sizeof *rb->ops, pending_cmp);
    uint32_t nsteps = 0;
    for (int i = 0; i < rb->nops; i++) {
        mc_rt_op_t op = rb->ops[i].op;
        final[rb->ops[i].seq] = (uint32_t)i;
        lane[i] = rb->ops[i].lane;
        if (op.kind != MC_RT_OP_COPY)
            op.peer = rank_of[op.peer];
        if (op.kind != MC_RT_OP_RECV && op.src.box == WS_BOX)
            op.src.box = ws_box;
        if (op.kind != MC_RT_OP_SEND && op.dst.box == WS_BOX)
            op.dst.box = ws_box;
        ops[i] = op;
        if (!nsteps || steps[nsteps - 1].index != rb->ops[i].step) {
            steps[nsteps].index = rb->ops[i].step;
            steps[nsteps].first = (uint32_t)i;
            nsteps++;
        }
        mc_rt_step_t *s = &steps[nsteps - 1];
        *(rb->ops[i].stage == STAGE_PRE ? &s->npre : rb->ops[i].stage == STAGE_COMM ? &s->ncomm
                                                                                   : &s->npost) += 1;
    }
    finish_deps(rb, final, p);
    free(final);
    p->rank = rank_of[gpu];
    p->nranks = nranks;
    p->src_bytes = L->sh.src_bytes[gpu];
    p->dst_bytes = L->sh.dst_bytes[gpu];
    p->ws_bytes = rb->ws_max;
    p->nboxes = (uint32_t)rb->nboxes;
    p->nops = (uint32_t)rb->nops;
    p->nsteps = nsteps;
    p->boxes = rb->boxes;
    p->ops = ops;
    p->steps = steps;
    p->lane = lane;
    p->nlanes = (uint32_t)L->nlanes;
    rb->boxes = NULL;
}

/* Closes a phase: its first ops on every rank wait for the last ops of the rank's previous phase
 * (staging is reused, a root may send what it received), and its own last ops become the fence
 * of the next phase. */
static void end_phase(lower_t *L, int ngpus)
{
    for (int g = 0; g < ngpus; g++) {
        rank_build_t *rb = &L->rb[g];
        int first = rb->phase_first, n = rb->nops;
        rb->ws_max = rb->ws_phase > rb->ws_max ? rb->ws_phase : rb->ws_max;
        rb->ws_phase = 0;
        rb->phase_first = n;
        if (first == n || rb->counted)
            continue;
        for (int i = first; i < n; i++)
            if (!rb->ops[i].local_deps)
                for (int k = 0; k < rb->nfence; k++)
                    add_dep(rb, (uint32_t)i, rb->fence[k]);
        rb->nfence = 0;
        for (int i = first; i < n; i++)
            if (!rb->ops[i].has_succ) {
                MC_GROW(rb->fence, rb->fence_cap, rb->nfence + 1);
                rb->fence[rb->nfence++] = (uint32_t)i;
            }
    }
}

/* Link order between phases. The schedule's phases run one after another, each link carrying one
 * phase at a time; without a global barrier the plans keep that per link: an edge's first send
 * waits until every edge of the latest earlier phase that shares a link with it has sent its last
 * chunk. When the edge's parent is that edge's parent or child it sees that itself; else it takes
 * a token, a message of 0 bytes from that edge's parent (the sender knows first, and is often on
 * the same host) to this edge's parent, one per pair of ranks and phase, sent and received in the
 * step reserved before the phase. */
/* A token of the current phase, kept by its receiving GPU. */
typedef struct token {
    int from;
    uint32_t send, recv; /* its ops */
} token_t;

typedef struct link_order {
    int **users, *nusers, *ucap, *uphase; /* per link: the edges of the latest phase using it */
    token_t **tok;                        /* per receiving GPU: its tokens of phase tphase[gpu] */
    int *ntok, *tcap, *tphase;
    int ntokens;
} link_order_t;

static void order_edge(lower_t *L, link_order_t *o, int ph, uint32_t step,
                       const mc_tree_edge_t *eb, const edge_ends_t *b, int ua)
{
    const edge_ends_t *a = &L->ends[ua];
    int c = a->parent, d = eb->parent;
    if (c == d || a->child == d) { /* the rank sees the edge end itself */
        add_dep_cross(&L->rb[d], (uint32_t)b->first_send,
                      (uint32_t)(c == d ? a->last_send : a->last_recv));
        return;
    }
    if (o->tphase[d] != ph)
        o->ntok[d] = 0, o->tphase[d] = ph;
    int k = 0;
    while (k < o->ntok[d] && o->tok[d][k].from != c)
        k++;
    if (k == o->ntok[d]) {
        int tag = L->s->ntrees + o->ntokens++;
        mc_rt_op_t snd = {MC_RT_OP_SEND, d, tag, 0, a->last_send_ref, {0, 0}};
        mc_rt_op_t rcv = {MC_RT_OP_RECV, c, tag, 0, {0, 0}, b->send_ref};
        MC_GROW(o->tok[d], o->tcap[d], k + 1);
        uint16_t lane = L->lane[b - L->ends]; /* the lane of the edge that waits for it */
        o->tok[d][k] = (token_t){c, add_op(&L->rb[c], step, STAGE_COMM, lane, &snd),
                                 add_op(&L->rb[d], step, STAGE_COMM, lane, &rcv)};
        o->ntok[d]++;
    }
    add_dep_cross(&L->rb[c], o->tok[d][k].send, (uint32_t)a->last_send);
    add_dep_cross(&L->rb[d], (uint32_t)b->first_send, o->tok[d][k].recv);
}

/* Orders phase ph's edges after the earlier phases' users of their links, then makes them the
 * users of those links. */
static void order_phase(lower_t *L, link_order_t *o, int ph, uint32_t step)
{
    const mc_sched_t *s = L->s;
    for (int ti = 0; ti < s->ntrees; ti++)
        for (int e = 0; s->trees[ti].phase == ph && e < s->trees[ti].nedges; e++) {
            const mc_tree_edge_t *eb = &s->trees[ti].edges[e];
            const edge_ends_t *b = &L->ends[L->gid0[ti] + e];
            for (int j = 0; b->first_send >= 0 && j < eb->nlinks; j++)
                for (int u = 0; eb->links[j] >= 0 && u < o->nusers[eb->links[j]]; u++)
                    order_edge(L, o, ph, step, eb, b, o->users[eb->links[j]][u]);
        }
    for (int ti = 0; ti < s->ntrees; ti++)
        for (int e = 0; s->trees[ti].phase == ph && e < s->trees[ti].nedges; e++) {
            const mc_tree_edge_t *eb = &s->trees[ti].edges[e];
            if (L->ends[L->gid0[ti] + e].first_send < 0)
                continue;
            for (int j = 0; j < eb->nlinks; j++) {
                int l = eb->links[j];
                if (l < 0)
                    continue;
                if (o->uphase[l] != ph)
                    o->nusers[l] = 0, o->uphase[l] = ph;
                MC_GROW(o->users[l], o->ucap[l], o->nusers[l] + 1);
                o->users[l][o->nusers[l]++] = L->gid0[ti] + e;
            }
        }
}

/* A hash of a tree's pace: the size of its chunks and its planned rate. In one lane, step t moves
 * chunk t-l at depth l of every tree, so trees of the same pace take about the same time per step
 * and lose little by sharing a lane, whatever their GPUs, links and chunk counts (a tree may move
 * faster than planned where links are free). A tree that states
 * no rate owns its links, so its routes set its pace and are hashed too. A collision only costs
 * pace, never correctness (both sides of a message take the tree's lane). Never 0. */
static uint64_t tree_pace(const mc_tree_t *tr)
{
    uint64_t rate, h = mc_hash_step(MC_HASH_SEED, mc_tree_chunk_max(tr));
    memcpy(&rate, &tr->rate, sizeof rate);
    h = mc_hash_step(h, rate);
    for (int e = 0; tr->rate <= 0 && e < tr->nedges; e++)
        for (int l = 0; l < tr->edges[e].nlinks; l++)
            h = mc_hash_step(h, (uint32_t)tr->edges[e].links[l]);
    h = mc_hash_fold(h);
    return h ? h : 1;
}

/* The bandwidth of the narrowest link on an edge's route. */
static double edge_bw(const mc_tree_edge_t *ed, const mc_topo_t *topo)
{
    double bw = HUGE_VAL;
    for (int l = 0; l < ed->nlinks; l++)
        if (ed->links[l] >= 0 && ed->links[l] < topo->nlinks && topo->links[ed->links[l]].bw < bw)
            bw = topo->links[ed->links[l]].bw;
    return bw;
}

/* The pace of an edge on topo: its tree's chunk size and planned rate, and the bandwidth of its
 * route's narrowest link, so that edges of one pace move at about one speed whatever their GPUs
 * (an NVLink edge and a NIC edge of one tree do not). Never 0. */
static uint64_t edge_pace(const mc_tree_t *tr, const mc_tree_edge_t *ed, const mc_topo_t *topo)
{
    double bw = edge_bw(ed, topo);
    int64_t v[3] = {(int64_t)mc_tree_chunk_max(tr), 0, 0};
    memcpy(&v[1], &tr->rate, sizeof v[1]);
    memcpy(&v[2], &bw, sizeof v[2]);
    uint64_t h = mc_hash_words(v, 3);
    return h ? h : 1;
}

/* The load of every link in phase ph: the bytes of the phase's trees that cross it over its
 * bandwidth. */
static void phase_load(const mc_sched_t *s, const mc_topo_t *topo, int ph, double *load)
{
    memset(load, 0, sizeof *load * ((size_t)topo->nlinks + 1));
    for (int ti = 0; ti < s->ntrees; ti++)
        for (int e = 0; s->trees[ti].phase == ph && e < s->trees[ti].nedges; e++)
            for (int l = 0; l < s->trees[ti].edges[e].nlinks; l++) {
                int k = s->trees[ti].edges[e].links[l];
                if (k >= 0 && k < topo->nlinks)
                    load[k] += (double)s->trees[ti].bytes / topo->links[k].bw;
            }
}

/* The bottleneck key of a tree in LANES_PER_TREE_SPREAD: its chunk size and the most loaded link
 * it crosses in its phase. Trees whose bottleneck is one link move at one max-min share of it, so
 * two of them in one lane lose little to lockstep (two trees of one pace but different
 * bottlenecks may not: one NVLink for one tree, another shared 65 ways). Never 0. */
static uint64_t tree_bottleneck(const mc_tree_t *tr, const mc_topo_t *topo, const double *load)
{
    int best = -1;
    for (int e = 0; e < tr->nedges; e++)
        for (int l = 0; l < tr->edges[e].nlinks; l++) {
            int k = tr->edges[e].links[l];
            if (k >= 0 && k < topo->nlinks && (best < 0 || load[k] > load[best]))
                best = k;
        }
    int64_t v[2] = {(int64_t)mc_tree_chunk_max(tr), (uint32_t)best};
    uint64_t h = mc_hash_words(v, 2);
    return h ? h : 1;
}

/* Whether a tree's edges can move in lockstep at no cost: every GPU of it sends to its children
 * over routes of one narrowest bandwidth (a chain, or a broadcast over one kind of link). In one
 * lane, a relay's receive of chunk c+1 and its send of chunk c are one group, and so are a
 * parent's sends of chunk c to its children: with one speed per parent they take about as long
 * each; a parent with an NVLink child and a NIC child would make the NVLink child wait for the
 * NIC at every chunk. */
static int tree_even(const mc_tree_t *tr, const mc_topo_t *topo)
{
    for (int e = 0; e < tr->nedges; e++)
        for (int f = e + 1; f < tr->nedges; f++)
            if (tr->edges[f].parent == tr->edges[e].parent &&
                edge_bw(&tr->edges[f], topo) != edge_bw(&tr->edges[e], topo))
                return 0;
    return 1;
}

/* A tree and its estimated time alone (share_units), ordered longest first. */
typedef struct tree_time {
    double t;
    int tree;
} tree_time_t;

static int tree_time_cmp(const void *a, const void *b)
{
    const tree_time_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t > y->t ? -1 : 1;
    return (x->tree > y->tree) - (x->tree < y->tree);
}

/* Per GPU and lane, in the current phase: how many edges or trees use it, and the pace and the
 * bottleneck key of the first (0: free). An entry whose stamp is not the phase's counts as free,
 * so a phase costs its edges, not the cluster's size. */
typedef struct lane_use {
    int *use, *stamp, cur;
    uint64_t *pace, *neck;
} lane_use_t;

/* Lane modes, tried in this order until one fits in MC_RT_MAX_LANES (assign_lanes). */
enum {
    LANES_PER_EDGE,       /* a lane per edge of a phase on each of its GPUs */
    LANES_EDGE_SHARED,    /* the same, a few left without sharing where it costs least */
    LANES_PER_TREE_BW,    /* a lane per tree, parent and narrowest bandwidth (edge_groups) */
    LANES_PER_TREE,       /* a lane per tree of a phase on each of its GPUs */
    LANES_PER_TREE_SPREAD,/* the same for even trees (tree_even), a tree with no lane free
                           * sharing one (a few per GPU at most) */
    LANES_PER_EDGE_PACE,  /* edges of one pace (edge_pace) share lanes */
    LANES_SHARED,         /* a lane per tree, those left without sharing where it costs least
                           * (lane_share.c); always fits, so the last on the topology */
    LANES_PER_PACE        /* without the topology: trees of one pace share lanes, else the least
                           * used lane */
};

/* The lane for GPUs gpus[0..n) and pace p: the lowest lane that they all have free for p (unused
 * there, or used by trees of that pace). LANES_PER_TREE_SPREAD takes an unused lane first; only
 * when none is left, a lane of pace p, first one whose users on those GPUs have bottleneck key q
 * too, and among those the least used (none of its pace: -1, as a tree in step with one of
 * another pace, say 73 chunks beside 37 of twice the size, ends far behind it).
 * LANES_PER_PACE, with no lane free below MC_RT_MAX_LANES, takes the one least used by them.
 * Else -1. *shared: whether one of the GPUs already uses the lane. */
static int first_fit(const lane_use_t *u, const int *gpus, int n, uint64_t p, uint64_t q, int how,
                     int *shared)
{
    int least = 0, least_load = -1, same = -1, same_cost = 0;
    for (int l = 0; l < MC_RT_MAX_LANES; l++) {
        int fits = 1, load = 0, other = 0;
        for (int k = 0; k < n; k++) {
            size_t at = (size_t)gpus[k] * MC_RT_MAX_LANES + l;
            int live = u->stamp[at] == u->cur;
            fits &= !live || u->pace[at] == p;
            other |= live && u->neck[at] != q;
            load += live ? u->use[at] : 0;
        }
        *shared = load > 0;
        if (fits && (how != LANES_PER_TREE_SPREAD || !load))
            return l;
        int cost = other * (INT_MAX / 2) + load;
        if (fits && (same < 0 || cost < same_cost))
            same = l, same_cost = cost;
        if (least_load < 0 || load < least_load)
            least = l, least_load = load;
    }
    *shared = 1;
    return same >= 0 ? same : how == LANES_PER_PACE ? least : -1;
}

/* Per lane: whether a user of it on GPUs gpus[0..n) has another bottleneck key than q. */
static void lanes_apart(const lane_use_t *u, const int *gpus, int n, uint64_t q,
                        unsigned char *apart)
{
    for (int l = 0; l < MC_RT_MAX_LANES; l++) {
        apart[l] = 0;
        for (int k = 0; !apart[l] && k < n; k++) {
            size_t at = (size_t)gpus[k] * MC_RT_MAX_LANES + l;
            apart[l] = u->stamp[at] == u->cur && u->neck[at] != q;
        }
    }
}

static void take(lane_use_t *u, const int *gpus, int n, int l, uint64_t p, uint64_t q)
{
    for (int k = 0; k < n; k++) {
        size_t at = (size_t)gpus[k] * MC_RT_MAX_LANES + l;
        if (u->stamp[at] != u->cur)
            u->stamp[at] = u->cur, u->use[at] = 0, u->pace[at] = p, u->neck[at] = q;
        u->use[at]++;
    }
}

/* The edges of tree tr that move in one lane in mode `how`, as groups: lead[e] is the first edge
 * of e's group, nxt[] chains a group's edges in order (-1 ends it). LANES_PER_EDGE and
 * LANES_PER_EDGE_PACE: e alone; LANES_PER_TREE_BW: the edges of e's parent in tr whose routes
 * have e's narrowest bandwidth, so that a parent's children over links of different widths do not
 * move in lockstep (the wide link's child waiting for the narrow one's at every chunk) and a
 * relay's receive and sends are in different lanes; else the whole tree. tail[] and alt[] are
 * scratch per edge (a group's last edge; the group of the same parent opened before), top[] and
 * top_st[] per GPU (the last group opened for it as a parent, in tree `stamp`). */
static void edge_groups(const mc_tree_t *tr, const mc_topo_t *topo, int how, int stamp, int *lead,
                        int *nxt, int *tail, int *alt, int *top, int *top_st)
{
    for (int e = 0; e < tr->nedges; e++) {
        int p = tr->edges[e].parent, g = -1;
        nxt[e] = -1, lead[e] = tail[e] = e;
        int bw_groups = how == LANES_PER_TREE_BW;
        if (bw_groups && top_st[p] == stamp)
            for (g = top[p]; g >= 0 && edge_bw(&tr->edges[g], topo) != edge_bw(&tr->edges[e], topo);)
                g = alt[g];
        else if (!bw_groups && how != LANES_PER_EDGE && how != LANES_EDGE_SHARED &&
                 how != LANES_PER_EDGE_PACE)
            g = e > 0 ? 0 : -1;
        if (g >= 0)
            lead[e] = g, nxt[tail[g]] = e, tail[g] = e;
        else if (bw_groups)
            alt[e] = top_st[p] == stamp ? top[p] : -1, top[p] = e, top_st[p] = stamp;
    }
}

/* The time of one micro-step of edge ed of tree tr, in a user of a lane that moves in `steps`
 * micro-steps, for lanes shared by estimated cost: its message overhead and latency plus its part
 * of the tree's time in the plan, the tree's bytes at its planned rate (without one, at the share
 * its bytes are of the load, seconds, the phase puts on the edge's busiest link). For an edge
 * that is a chunk at that rate; a whole tree spreads it over its hops too, where a chunk at the
 * rate, a rate over the phase, counted a tree of one chunk as long as the phase at each hop. */
static double edge_step_s(const mc_tree_t *tr, const mc_tree_edge_t *ed, const mc_topo_t *topo,
                          const double *load, int steps)
{
    double busiest = 0;
    for (int l = 0; l < ed->nlinks; l++)
        if (ed->links[l] >= 0 && ed->links[l] < topo->nlinks && load[ed->links[l]] > busiest)
            busiest = load[ed->links[l]];
    double rate = tr->rate > 0 ? tr->rate : busiest > 0 ? (double)tr->bytes / busiest : 0;
    return mc_topo_links_delay(topo, ed->links, ed->nlinks) +
           (rate > 0 ? (double)tr->bytes / rate / steps : 0);
}

/* For lanes shared by estimated cost: each group of tree ti's edges (lead[], nxt[]) becomes user
 * gid0 + its first edge of sh, moving from its first parent's depth to past the last parent's
 * depth plus the tree's chunks, each step as long as its slowest edge's (edge_step_s). dep[] and
 * dep_st[] are per GPU (stamped with the user numbers). Returns the tree's estimated time alone:
 * that of its longest user, its micro-steps times its step. */
static double share_units(const mc_tree_t *tr, int ti, const int *gid0, const mc_topo_t *topo,
                          const double *load, const int *lead, const int *nxt, int *dep,
                          int *dep_st, mc_emit_share_t *sh)
{
    int maxd = 0;
    double slowest = 0;
    dep[tr->root] = 0, dep_st[tr->root] = gid0[ti] + 1;
    for (int e = 0; e < tr->nedges; e++) {
        const mc_tree_edge_t *ed = &tr->edges[e];
        int pd = dep_st[ed->parent] == gid0[ti] + 1 ? dep[ed->parent] : 0;
        dep[ed->child] = pd + 1, dep_st[ed->child] = gid0[ti] + 1;
        maxd = pd + 1 > maxd ? pd + 1 : maxd;
    }
    for (int e = 0; e < tr->nedges; e++) {
        if (lead[e] != e)
            continue;
        int first = -1, last = 0;
        double step = 0;
        for (int f = e; f >= 0; f = nxt[f]) {
            int pd = dep[tr->edges[f].parent];
            first = first < 0 || pd < first ? pd : first;
            last = pd + tr->nchunks > last ? pd + tr->nchunks : last;
        }
        for (int f = e; f >= 0; f = nxt[f]) {
            double t = edge_step_s(tr, &tr->edges[f], topo, load, last - first);
            step = t > step ? t : step;
        }
        mc_emit_share_unit(sh, gid0[ti] + e, first, last, step);
        slowest = step * (last - first) > slowest ? step * (last - first) : slowest;
    }
    return slowest;
}

/* How many trees (LANES_PER_TREE_SPREAD) or edges (LANES_EDGE_SHARED) of a GPU in one phase may
 * share a lane: each one that does moves in lockstep with another. */
#define LANES_SPREAD_SHARED (MC_RT_MAX_LANES / 8)

/* Lanes of the edges, for the nccl backend, which runs each lane on its own communicator and
 * stream and a lane's steps one after the other: two edges of one phase that share a GPU must not
 * share a lane, or one waits for every step of the other (a fast tree for a slow one, a relay's
 * receive of chunk c+1 for its send of chunk c). First fit, edge by edge: the lowest lane that
 * both its GPUs have free. Phases share the lanes, as each GPU finishes a phase before it starts
 * the next anyway. When that needs more than MC_RT_MAX_LANES lanes, the same with a few edges of
 * the trees estimated shortest (at most LANES_SPREAD_SHARED on any GPU) sharing a lane where
 * their lockstep costs least (lane_share.c); then a lane per tree, parent and narrowest
 * bandwidth (edge_groups: siblings over links of one width in lockstep); then a lane per tree
 * (its edges moving in lockstep); then, when every tree is even (tree_even), the same with a few
 * trees per GPU sharing a lane of their pace (at most LANES_SPREAD_SHARED on any GPU); then edges
 * of the same pace on topo (edge_pace) share lanes; beyond that, a lane per tree, the trees
 * estimated shortest sharing where their lockstep costs least. Without the topology: a lane per
 * edge, per tree, then trees of the same pace (tree_pace) sharing, a tree with no lane free
 * taking the one least used by its GPUs. lane[] is per edge, numbered tree by tree (gid0).
 * Returns how many lanes there are, or -1 when there were not enough. */
static int assign_lanes(const mc_sched_t *s, const mc_topo_t *topo, int ngpus, const int *gid0,
                        int how, uint16_t *lane)
{
    size_t n = (size_t)ngpus * MC_RT_MAX_LANES;
    lane_use_t u = {mc_xcalloc(n + 1, sizeof(int)), mc_xcalloc(n + 1, sizeof(int)), 0,
                    mc_xcalloc(n + 1, sizeof(uint64_t)), mc_xcalloc(n + 1, sizeof(uint64_t))};
    int maxe = 0;
    for (int ti = 0; ti < s->ntrees; ti++)
        maxe = s->trees[ti].nedges > maxe ? s->trees[ti].nedges : maxe;
    int *gpus = mc_xcalloc((size_t)maxe + 2, sizeof *gpus), nlanes = 1;
    /* per edge of a tree, its group (edge_groups); per GPU, edge_groups' and the group (gid0[ti]
     * + its first edge + 1) that last listed it in gpus[] */
    int *grp = mc_xcalloc(4 * ((size_t)maxe + 1), sizeof *grp);
    int *lead = grp, *nxt = grp + maxe + 1, *tail = nxt + maxe + 1, *alt = tail + maxe + 1;
    int *top = mc_xcalloc(3 * ((size_t)ngpus + 1), sizeof *top);
    int *top_st = top + ngpus + 1, *mark = top_st + ngpus + 1;
    /* per GPU, in phase shared_ph[g]: how many of its trees share a lane (LANES_PER_TREE_SPREAD) */
    int *nshared = mc_xcalloc((size_t)ngpus + 1, sizeof *nshared);
    int *shared_ph = mc_xcalloc((size_t)ngpus + 1, sizeof *shared_ph);
    int est = how == LANES_SHARED || how == LANES_EDGE_SHARED;
    double *load = how == LANES_PER_TREE_SPREAD || est
                       ? mc_xcalloc((size_t)topo->nlinks + 1, sizeof *load) : NULL;
    /* LANES_SHARED_*: the estimates, per GPU the depths in a tree, the trees of a phase from the
     * longest estimated time alone to the shortest (those share, if any must) */
    mc_emit_share_t sh = {0};
    unsigned char apart[MC_RT_MAX_LANES];
    int *dep = est ? mc_xcalloc(2 * ((size_t)ngpus + 1), sizeof *dep) : NULL;
    int *order = mc_xcalloc((size_t)s->ntrees + 1, sizeof *order), norder;
    tree_time_t *tt = est ? mc_xcalloc((size_t)s->ntrees + 1, sizeof *tt) : NULL;
    if (est)
        mc_emit_share_init(&sh, ngpus, gid0[s->ntrees]);
    for (int ph = 0; ph < s->nphases; ph++) {
        u.cur = ph + 1;
        if (load)
            phase_load(s, topo, ph, load);
        norder = 0;
        for (int ti = 0; ti < s->ntrees; ti++) {
            const mc_tree_t *tr = &s->trees[ti];
            if (tr->phase != ph || tr->root < 0 || tr->root >= ngpus || !tr->nedges)
                continue;
            if (est) {
                /* stamped apart from the assignment's own call below */
                edge_groups(tr, topo, how, -(gid0[ti] + 1), lead, nxt, tail, alt, top, top_st);
                tt[norder].t = share_units(tr, ti, gid0, topo, load, lead, nxt, dep,
                                           dep + ngpus + 1, &sh);
                tt[norder].tree = ti;
            }
            order[norder++] = ti;
        }
        if (est) {
            mc_sort(tt, (size_t)norder, sizeof *tt, tree_time_cmp);
            for (int i = 0; i < norder; i++)
                order[i] = tt[i].tree;
        }
        for (int i = 0; i < norder; i++) {
            int ti = order[i];
            const mc_tree_t *tr = &s->trees[ti];
            if (how == LANES_PER_TREE_SPREAD && !tree_even(tr, topo)) {
                nlanes = -1;
                goto out;
            }
            edge_groups(tr, topo, how, gid0[ti] + 1, lead, nxt, tail, alt, top, top_st);
            for (int e = 0; e < tr->nedges; e++) {
                int l, shared, ng = 0;
                uint64_t q = load ? tree_bottleneck(tr, topo, load) : 0;
                uint64_t p = how == LANES_PER_PACE || how == LANES_PER_TREE_SPREAD ? tree_pace(tr)
                             : how == LANES_PER_EDGE_PACE ? edge_pace(tr, &tr->edges[e], topo)
                                                          : (uint64_t)gid0[ti] + lead[e] + 1;
                /* the group's GPUs, each once: its edges' children, and parents not among them */
                for (int f = lead[e] == e ? e : -1; f >= 0; f = nxt[f])
                    for (int k = 0; k < 2; k++) {
                        int g = k ? tr->edges[f].child : tr->edges[f].parent;
                        if (mark[g] != gid0[ti] + e + 1)
                            mark[g] = gid0[ti] + e + 1, gpus[ng++] = g;
                    }
                if (lead[e] != e)
                    l = lane[gid0[ti] + lead[e]];
                else {
                    if (est && (l = first_fit(&u, gpus, ng, p, q, LANES_PER_TREE, &shared)) < 0) {
                        lanes_apart(&u, gpus, ng, q, apart);
                        l = mc_emit_share_pick(&sh, gpus, ng, gid0[ti] + e, ph + 1, apart);
                    } else if (!est && (l = first_fit(&u, gpus, ng, p, q, how, &shared)) < 0) {
                        nlanes = -1;
                        goto out;
                    }
                    take(&u, gpus, ng, l, p, q);
                    if (est)
                        mc_emit_share_take(&sh, gpus, ng, l, gid0[ti] + e, ph + 1);
                    int capped = how == LANES_PER_TREE_SPREAD || how == LANES_EDGE_SHARED;
                    for (int k = 0; capped && shared && k < ng; k++) {
                        int g = gpus[k];
                        nshared[g] = shared_ph[g] == ph + 1 ? nshared[g] + 1 : 1;
                        shared_ph[g] = ph + 1;
                        if (nshared[g] > LANES_SPREAD_SHARED) {
                            nlanes = -1;
                            goto out;
                        }
                    }
                }
                lane[gid0[ti] + e] = (uint16_t)l;
                nlanes = l + 1 > nlanes ? l + 1 : nlanes;
            }
        }
    }
out:
    free(u.use);
    free(u.stamp);
    free(u.pace);
    free(u.neck);
    free(gpus);
    free(grp);
    free(top);
    free(nshared);
    free(shared_ph);
    free(load);
    free(dep);
    free(order);
    free(tt);
    if (est)
        mc_emit_share_free(&sh);
    return nlanes;
}

/* Lowers ranks r0 .. r1-1 (every rank when they are all): the other ranks' ops are then counted,
 * not made, and the trees that touch none of their GPUs are only measured (count_tree). The lanes
 * are chosen over every tree either way, so that a rank's plan is the full lowering's. only: the
 * plans say they are rank r0's alone (emit --rank). */
static mc_status_t lower_plans(const mc_sched_t *s, const mc_topo_t *topo, int r0, int r1,
                               int only, mc_emit_plans_t **out, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    lower_t L = {s, s->task, {0}, NULL, NULL, NULL, NULL, 0, 0};
    int ngpus = mc_emit_ngpus(s);
    int *rank_of = mc_xcalloc(ngpus, sizeof *rank_of);
    int *depth = mc_xcalloc(ngpus, sizeof *depth), *nkids = mc_xcalloc(ngpus, sizeof *nkids);
    place_t *pl = mc_xcalloc(ngpus, sizeof *pl);
    mc_emit_plans_t *P = mc_xcalloc(1, sizeof *P);
    *out = NULL;
    L.rb = mc_xcalloc(ngpus, sizeof *L.rb);
    P->nranks = mc_emit_ranks(s, ngpus, rank_of);
    P->only = only ? r0 : -1;
    P->gpus = mc_xcalloc(P->nranks, sizeof *P->gpus);
    for (int g = 0; g < ngpus; g++)
        if (rank_of[g] >= 0)
            P->gpus[rank_of[g]] = g;
    for (int g = 0; g < ngpus; g++)
        depth[g] = -1;
    mc_emit_shards_init(&L.sh, s->task, ngpus);
    tree_ops_t to = {mc_xcalloc(3 * (size_t)ngpus, sizeof(int64_t)),
                     mc_xcalloc(3 * (size_t)ngpus, sizeof(int64_t)), NULL, 0};
    L.gid0 = mc_xcalloc((size_t)s->ntrees + 1, sizeof *L.gid0);
    for (int ti = 0; ti < s->ntrees; ti++)
        L.gid0[ti + 1] = L.gid0[ti] + s->trees[ti].nedges;
    L.lane = mc_xcalloc((size_t)L.gid0[s->ntrees] + 1, sizeof *L.lane);
    for (int how = LANES_PER_EDGE;
         (L.nlanes = assign_lanes(s, topo, ngpus, L.gid0, how, L.lane)) < 0;)
        how = topo ? how + 1 : how == LANES_PER_EDGE ? LANES_PER_TREE
                             : how == LANES_PER_TREE ? LANES_PER_PACE : how + 1;
    L.ends = mc_xcalloc((size_t)L.gid0[s->ntrees] + 1, sizeof *L.ends);
    for (int i = 0; i < L.gid0[s->ntrees]; i++)
        L.ends[i].first_send = L.ends[i].last_send = L.ends[i].last_recv = -1;
    int nlinks = mc_emit_nlinks(s);
    link_order_t lo = {mc_xcalloc((size_t)nlinks + 1, sizeof(int *)),
                       mc_xcalloc((size_t)nlinks + 1, sizeof(int)),
                       mc_xcalloc((size_t)nlinks + 1, sizeof(int)),
                       mc_xcalloc((size_t)nlinks + 1, sizeof(int)),
                       mc_xcalloc((size_t)ngpus + 1, sizeof(token_t *)),
                       mc_xcalloc((size_t)ngpus + 1, sizeof(int)),
                       mc_xcalloc((size_t)ngpus + 1, sizeof(int)),
                       mc_xcalloc((size_t)ngpus + 1, sizeof(int)), 0};
    for (int l = 0; l < nlinks; l++)
        lo.uphase[l] = -1;
    for (int g = 0; g < ngpus; g++)
        lo.tphase[g] = -1;
    if (r0 >= P->nranks) {
        st = mc_err_set(err, MC_ERR_USAGE, "rank %d: the schedule has %d ranks (0 to %d)", r0,
                        P->nranks, P->nranks - 1);
        goto out;
    }
    if (r0 > 0 || r1 < P->nranks) {
        L.some = 1;
        for (int g = 0; g < ngpus; g++)
            L.rb[g].counted = rank_of[g] < r0 || rank_of[g] >= r1;
    }
    lower_copies(&L);
    for (int g = 0; g < ngpus; g++)
        L.rb[g].phase_first = L.rb[g].nops;
    uint32_t base = 0;
    for (int ph = 0; ph < s->nphases; ph++) {
        uint32_t len = 0;
        base += ph > 0; /* the step of the tokens */
        for (int ti = 0; ti < s->ntrees; ti++) {
            uint32_t n;
            if (s->trees[ti].phase != ph)
                continue;
            if (s->trees[ti].root < 0 || s->trees[ti].root >= ngpus || s->trees[ti].nchunks < 1) {
                st = mc_err_set(err, MC_ERR_INVALID, "tree %d: root %d or %d chunks out of range",
                                ti, s->trees[ti].root, s->trees[ti].nchunks);
                goto out;
            }
            if (!L.some || tree_touches(&L, &s->trees[ti]))
                MC_CHECK_GOTO(lower_tree(&L, ti, base, depth, nkids, pl, &to, &n, err), out, st);
            else
                MC_CHECK_GOTO(count_tree(&L, ti, depth, nkids, &n, err), out, st);
            len = n > len ? n : len;
        }
        order_phase(&L, &lo, ph, base - 1);
        end_phase(&L, ngpus);
        base += len;
    }
    P->nphase_steps = (int)base;
    P->plans = mc_xcalloc(P->nranks, sizeof *P->plans);
    for (int g = 0; g < ngpus; g++)
        if (rank_of[g] >= 0 && !L.rb[g].counted)
            finish_plan(&L.rb[g], g, rank_of, P->nranks, &L, &P->plans[rank_of[g]]);
    *out = P;
    P = NULL;
out:
    for (int g = 0; g < ngpus; g++) {
        free(L.rb[g].ops);
        free(L.rb[g].deps);
        free(L.rb[g].fence);
        free(L.rb[g].boxes);
    }
    free(to.got);
    free(to.unpack);
    free(to.send);
    for (int l = 0; l < nlinks; l++)
        free(lo.users[l]);
    free(lo.users);
    free(lo.nusers);
    free(lo.ucap);
    free(lo.uphase);
    for (int g = 0; g < ngpus; g++)
        free(lo.tok[g]);
    free(lo.tok);
    free(lo.ntok);
    free(lo.tcap);
    free(lo.tphase);
    free(L.ends);
    free(L.gid0);
    free(L.lane);
    free(L.rb);
    mc_emit_shards_free(&L.sh);
    mc_emit_plans_free(P);
    free(rank_of);
    free(depth);
    free(nkids);
    free(pl);
    return st;
}

mc_status_t mc_emit_lower(const mc_sched_t *s, mc_emit_plans_t **out, mc_err_t *err)
{
    return lower_plans(s, NULL, 0, INT_MAX, 0, out, err);
}

mc_status_t mc_emit_lower_on(const mc_sched_t *s, const mc_topo_t *topo, mc_emit_plans_t **out,
                             mc_err_t *err)
{
    return lower_plans(s, topo, 0, INT_MAX, 0, out, err);
}

mc_status_t mc_emit_lower_rank(const mc_sched_t *s, const mc_topo_t *topo, int rank,
                               mc_emit_plans_t **out, mc_err_t *err)
{
    if (rank < 0)
        return mc_err_set(err, MC_ERR_USAGE, "rank %d: expected 0 or more", rank);
    return lower_plans(s, topo, rank, rank + 1, 1, out, err);
}

mc_status_t mc_emit_lower_ranks(const mc_sched_t *s, const mc_topo_t *topo, int lo, int hi,
                                mc_emit_plans_t **out, mc_err_t *err)
{
    if (lo < 0 || hi <= lo)
        return mc_err_set(err, MC_ERR_USAGE, "ranks %d to %d: expected 0 <= first <= last", lo,
                          hi - 1);
    return lower_plans(s, topo, lo, hi, 0, out, err);
}

void mc_emit_plans_free(mc_emit_plans_t *p)
{
    if (!p)
        return;
    for (int g = 0; p->plans && g < p->nranks; g++) {
        free((void *)p->plans[g].boxes);
        free((void *)p->plans[g].ops);
        free((void *)p->plans[g].steps);
        free((void *)p->plans[g].dep_first);
        free((void *)p->plans[g].deps);
        free((void *)p->plans[g].lane);
    }
    free(p->plans);
    free(p->gpus);
    free(p);
}
