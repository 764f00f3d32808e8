/* Splitting a task into pieces. Along each tensor dimension the source and destination shard
 * boundaries refine the dimension into intervals; a cell of the refined grid lies in exactly one
 * source tile group (the devices that hold the same source tile) and one destination tile group.
 * All cells of one (source group, destination group) pair form the box where the two tiles
 * intersect, and no two pairs share both sets, so these intersections are exactly the maximal
 * boxes with one holder set and one destination set. Work is per pair of overlapping shards,
 * never per element. */
#include <stdlib.h>
#include <string.h>

#include "layout/layout_internal.h"

/* Devices of a layout grouped by tile: group g lists the GPUs whose shard indices, read as a
 * mixed-radix number over the dimensions, equal g; each list ascending. */
typedef struct groups {
    int64_t ngroups;
    int64_t stride[MC_MAX_DIMS];
    int64_t *start; /* ngroups+1 offsets into gpus */
    int *gpus;
} groups_t;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void groups_build(const mc_task_t *task, const mc_layout_t *l, groups_t *g)
{
    const mc_mesh_t *m = &task->meshes[l->mesh];
    g->ngroups = 1;
    for (int k = l->ndims - 1; k >= 0; k--) {
        g->stride[k] = g->ngroups;
        g->ngroups *= mc_layout_nshards(task, l, k);
    }
    g->start = mc_xcalloc((size_t)g->ngroups + 1, sizeof(int64_t));
    g->gpus = mc_xmalloc(sizeof(int) * (size_t)m->ndevices);
    int64_t *gid = mc_xmalloc(sizeof(int64_t) * (size_t)m->ndevices);
    for (int p = 0; p < m->ndevices; p++) {
        gid[p] = 0;
        for (int k = 0; k < l->ndims; k++)
            gid[p] += mc_layout_shard_of(task, l, k, p) * g->stride[k];
        g->start[gid[p] + 1]++;
    }
    for (int64_t i = 0; i < g->ngroups; i++)
        g->start[i + 1] += g->start[i];
    int64_t *fill = mc_xmalloc(sizeof(int64_t) * (size_t)g->ngroups);
    memcpy(fill, g->start, sizeof(int64_t) * (size_t)g->ngroups);
    for (int p = 0; p < m->ndevices; p++)
        g->gpus[fill[gid[p]]++] = m->devices[p];
    for (int64_t i = 0; i < g->ngroups; i++)
        mc_sort(g->gpus + g->start[i], (size_t)(g->start[i + 1] - g->start[i]), sizeof(int),
              cmp_int);
    free(fill);
    free(gid);
}

static void groups_free(groups_t *g)
{
    free(g->start);
    free(g->gpus);
}

/* One overlap of a source shard s and a destination shard t along a dimension. */
typedef struct overlap {
    int64_t s, t, lo, hi;
} overlap_t;

/* The nonempty intersections of the source and destination shards along dim, in order. Both
 * shard sequences tile [0, N) left to right, so one sweep finds them all. */
static overlap_t *dim_overlaps(const mc_task_t *task, const mc_tensor_move_t *mv, int dim, int *n)
{
    int64_t ks = mc_layout_nshards(task, &mv->src, dim), kd = mc_layout_nshards(task, &mv->dst, dim);
    overlap_t *ov = NULL;
    int cap = 0;
    *n = 0;
    int64_t s = 0, t = 0, slo, shi, tlo, thi;
    mc_layout_shard(task, &mv->src, dim, s, &slo, &shi);
    mc_layout_shard(task, &mv->dst, dim, t, &tlo, &thi);
    while (s < ks && t < kd) {
        int64_t lo = slo > tlo ? slo : tlo, hi = shi < thi ? shi : thi;
        if (lo < hi) {
            MC_GROW(ov, cap, *n + 1);
            ov[(*n)++] = (overlap_t){s, t, lo, hi};
        }
        /* Advance whichever shard ends first (an empty one ends where it starts); once the
         * source shards are used up, the rest of the destination shards lie beyond N. */
        if (shi <= thi) {
            if (++s < ks)
                mc_layout_shard(task, &mv->src, dim, s, &slo, &shi);
        } else if (++t < kd) {
            mc_layout_shard(task, &mv->dst, dim, t, &tlo, &thi);
        }
    }
    return ov;
}

/* Writes a \ b (both ascending) into out; returns its length. */
static int set_minus(const int *a, int na, const int *b, int nb, int *out)
{
    int n = 0, j = 0;
    for (int i = 0; i < na; i++) {
        while (j < nb && b[j] < a[i])
            j++;
        if (j == nb || b[j] != a[i])
            out[n++] = a[i];
    }
    return n;
}

typedef struct split_state {
    mc_task_t *task;
    int piece_cap, copy_cap;
    int *scratch;
} split_state_t;

static void emit_pair(split_state_t *ss, int tensor, const mc_box_t *box, uint64_t bytes,
                      const int *hold, int nhold, const int *need, int nneed)
{
    mc_task_t *task = ss->task;
    int ndest = set_minus(need, nneed, hold, nhold, ss->scratch);
    if (ndest > 0) {
        MC_GROW(task->pieces, ss->piece_cap, task->npieces + 1);
        mc_piece_t *p = &task->pieces[task->npieces++];
        p->tensor = tensor;
        p->box = *box;
        p->bytes = bytes;
        p->nholders = nhold;
        p->holders = mc_xmalloc(sizeof(int) * (size_t)nhold);
        memcpy(p->holders, hold, sizeof(int) * (size_t)nhold);
        p->ndests = ndest;
        p->dests = mc_xmalloc(sizeof(int) * (size_t)ndest);
        memcpy(p->dests, ss->scratch, sizeof(int) * (size_t)ndest);
    }
    if (ndest == nneed)
        return;
    /* need minus the dests is need intersected with hold: those copy locally. */
    for (int i = 0, j = 0; i < nneed; i++) {
        while (j < ndest && ss->scratch[j] < need[i])
            j++;
        if (j < ndest && ss->scratch[j] == need[i])
            continue;
        MC_GROW(task->copies, ss->copy_cap, task->ncopies + 1);
        task->copies[task->ncopies++] = (mc_local_copy_t){tensor, need[i], *box, bytes};
    }
}

static void split_tensor(split_state_t *ss, int tensor)
{
    const mc_task_t *task = ss->task;
    const mc_tensor_move_t *mv = &task->tensors[tensor];
    int nd = mv->src.ndims;
    groups_t gs, gd;
    groups_build(task, &mv->src, &gs);
    groups_build(task, &mv->dst, &gd);
    overlap_t *ov[MC_MAX_DIMS];
    int nov[MC_MAX_DIMS], idx[MC_MAX_DIMS] = {0}, any = 1;
    for (int k = 0; k < nd; k++) {
        ov[k] = dim_overlaps(task, mv, k, &nov[k]);
        any = any && nov[k] > 0;
    }
    ss->scratch = mc_xrealloc(ss->scratch, sizeof(int) * (size_t)(task->meshes[mv->dst.mesh].ndevices));
    /* Odometer over the per-dimension overlap lists, last dimension fastest. */
    while (any) {
        mc_box_t box = {{0}, {0}};
        int64_t g = 0, h = 0;
        for (int k = 0; k < nd; k++) {
            const overlap_t *o = &ov[k][idx[k]];
            box.lo[k] = o->lo;
            box.hi[k] = o->hi;
            g += o->s * gs.stride[k];
            h += o->t * gd.stride[k];
        }
        emit_pair(ss, tensor, &box, mc_layout_box_bytes(&mv->src, &box), gs.gpus + gs.start[g],
                  (int)(gs.start[g + 1] - gs.start[g]), gd.gpus + gd.start[h],
                  (int)(gd.start[h + 1] - gd.start[h]));
        int k = nd - 1;
        while (k >= 0 && ++idx[k] == nov[k])
            idx[k--] = 0;
        any = k >= 0;
    }
    for (int k = 0; k < nd; k++)
        free(ov[k]);
    groups_free(&gs);
    groups_free(&gd);
}

/* Largest first; equal sizes keep the order they were made in (tensor, then box order). */
typedef struct order {
    uint64_t bytes;
    int index;
} order_t;

static int cmp_order(const void *a, const void *b)
{
    const order_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static void sort_pieces(mc_task_t *task)
{
    order_t *ord = mc_xmalloc(sizeof(order_t) * (size_t)(task->npieces + 1));
    for (int i = 0; i < task->npieces; i++)
        ord[i] = (order_t){task->pieces[i].bytes, i};
    mc_sort(ord, (size_t)task->npieces, sizeof(order_t), cmp_order);
    mc_piece_t *sorted = mc_xmalloc(sizeof(mc_piece_t) * (size_t)(task->npieces + 1));
    for (int i = 0; i < task->npieces; i++)
        sorted[i] = task->pieces[ord[i].index];
    free(task->pieces);
    task->pieces = sorted;
    free(ord);
}

mc_status_t mc_task_split(mc_task_t *task, mc_err_t *err)
{
    mc_task_clear_split(task);
    split_state_t ss = {task, 0, 0, NULL};
    for (int t = 0; t < task->ntensors; t++)
        split_tensor(&ss, t);
    free(ss.scratch);
    sort_pieces(task);
    uint64_t total = 0;
    for (int i = 0; i < task->npieces; i++) {
        uint64_t b;
        if (__builtin_mul_overflow(task->pieces[i].bytes, (uint64_t)task->pieces[i].ndests, &b) ||
            __builtin_add_overflow(total, b, &total)) {
            mc_task_clear_split(task);
            return mc_err_set(err, MC_ERR_USAGE,
                              "the task moves more than 2^64 bytes in total; expected less");
        }
    }
    return MC_OK;
}
