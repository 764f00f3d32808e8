/* Splitting a task into pieces. Along each tensor dimension the source and destination shard
 * boundaries refine the dimension into intervals; a cell of the refined grid lies in exactly one
 * source tile group (the devices that hold the same source tile) and one destination tile group.
 * All cells of one (source group, destination group) pair form the box where the two tiles
 * intersect, and no two pairs share both sets, so these intersections are exactly the maximal
 * boxes with one holder set and one destination set. With several consumers a cell lies in one
 * tile group of each, and its destinations are their union: one piece reaches every consumer
 * that needs its bytes. Work is per tuple of overlapping shards, never per element. */
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

/* One cell of a dimension's refinement: [lo, hi) and the shard holding it in each layout (the
 * source, then each consumer). */
typedef struct overlap {
    int64_t shard[MC_MAX_CONSUMERS + 1], lo, hi;
} overlap_t;

/* The cells of dimension dim: the nonempty intersections of one shard of every layout, in
 * order. Every layout's shards tile [0, N) left to right, so one sweep finds them all. */
static overlap_t *dim_overlaps(const mc_task_t *task, const mc_layout_t *const *ls, int nl, int dim,
                               int *n)
{
    int64_t k[MC_MAX_CONSUMERS + 1], lo[MC_MAX_CONSUMERS + 1], hi[MC_MAX_CONSUMERS + 1];
    int64_t cur[MC_MAX_CONSUMERS + 1] = {0};
    overlap_t *ov = NULL;
    int cap = 0, live = 1;
    *n = 0;
    for (int i = 0; i < nl; i++) {
        k[i] = mc_layout_nshards(task, ls[i], dim);
        mc_layout_shard(task, ls[i], dim, 0, &lo[i], &hi[i]);
    }
    while (live) {
        int64_t a = lo[0], b = hi[0];
        for (int i = 1; i < nl; i++) {
            a = lo[i] > a ? lo[i] : a;
            b = hi[i] < b ? hi[i] : b;
        }
        if (a < b) {
            MC_GROW(ov, cap, *n + 1);
            overlap_t *o = &ov[(*n)++];
            memcpy(o->shard, cur, sizeof(cur));
            o->lo = a;
            o->hi = b;
        }
        /* Advance every shard that ends first (an empty one ends where it starts); once one
         * layout's shards are used up, the rest of the others' lie beyond N. */
        for (int i = 0; i < nl; i++)
            if (hi[i] == b && live) {
                if (++cur[i] < k[i])
                    mc_layout_shard(task, ls[i], dim, cur[i], &lo[i], &hi[i]);
                else
                    live = 0;
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
    int nd = mv->src.ndims, nl = mv->nmore + 2, nneed_max = 0;
    const mc_layout_t *ls[MC_MAX_CONSUMERS + 1];
    groups_t g[MC_MAX_CONSUMERS + 1];
    ls[0] = &mv->src;
    for (int i = 0; i < nl; i++) {
        if (i)
            ls[i] = mc_tensor_consumer(mv, i - 1);
        groups_build(task, ls[i], &g[i]);
        if (i)
            nneed_max += task->meshes[ls[i]->mesh].ndevices;
    }
    overlap_t *ov[MC_MAX_DIMS];
    int nov[MC_MAX_DIMS], idx[MC_MAX_DIMS] = {0}, any = 1;
    for (int k = 0; k < nd; k++) {
        ov[k] = dim_overlaps(task, ls, nl, k, &nov[k]);
        any = any && nov[k] > 0;
    }
    ss->scratch = mc_xrealloc(ss->scratch, sizeof(int) * (size_t)nneed_max);
    int *need = mc_xmalloc(sizeof(int) * (size_t)nneed_max);
    /* Odometer over the per-dimension cells, last dimension fastest. */
    while (any) {
        mc_box_t box = {{0}, {0}};
        int64_t gid[MC_MAX_CONSUMERS + 1] = {0};
        for (int k = 0; k < nd; k++) {
            const overlap_t *o = &ov[k][idx[k]];
            box.lo[k] = o->lo;
            box.hi[k] = o->hi;
            for (int i = 0; i < nl; i++)
                gid[i] += o->shard[i] * g[i].stride[k];
        }
        /* One consumer's group is the set; several consumers' meshes are disjoint, so their
         * groups concatenate into one. */
        const int *dests = g[1].gpus + g[1].start[gid[1]];
        int nneed = (int)(g[1].start[gid[1] + 1] - g[1].start[gid[1]]);
        if (nl > 2) {
            memcpy(need, dests, sizeof(int) * (size_t)nneed);
            for (int i = 2; i < nl; i++) {
                int64_t len = g[i].start[gid[i] + 1] - g[i].start[gid[i]];
                memcpy(need + nneed, g[i].gpus + g[i].start[gid[i]], sizeof(int) * (size_t)len);
                nneed += (int)len;
            }
            mc_sort(need, (size_t)nneed, sizeof(int), cmp_int);
            dests = need;
        }
        emit_pair(ss, tensor, &box, mc_layout_box_bytes(&mv->src, &box),
                  g[0].gpus + g[0].start[gid[0]],
                  (int)(g[0].start[gid[0] + 1] - g[0].start[gid[0]]), dests, nneed);
        int k = nd - 1;
        while (k >= 0 && ++idx[k] == nov[k])
            idx[k--] = 0;
        any = k >= 0;
    }
    free(need);
    for (int k = 0; k < nd; k++)
        free(ov[k]);
    for (int i = 0; i < nl; i++)
        groups_free(&g[i]);
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
