/* Alpa's unit tasks and the order it submits them in (ReshardingTaskSpec.generate_naive_order),
 * expressed over meshcast's pieces: a piece is Alpa's (destination tile, source slice) pair. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth_internal.h"

int synth_mesh_rank(const mc_mesh_t *mesh, int gpu)
{
    for (int i = 0; i < mesh->ndevices; i++)
        if (mesh->devices[i] == gpu)
            return i;
    return -1;
}

void synth_ranks_init(synth_ranks_t *r, const mc_task_t *task)
{
    r->stride = 1;
    for (int m = 0; m < task->nmeshes; m++)
        for (int i = 0; i < task->meshes[m].ndevices; i++)
            if (task->meshes[m].devices[i] >= r->stride)
                r->stride = task->meshes[m].devices[i] + 1;
    r->rank = mc_xmalloc(sizeof(int) * (size_t)task->nmeshes * (size_t)r->stride + 1);
    for (size_t i = 0; i < (size_t)task->nmeshes * (size_t)r->stride; i++)
        r->rank[i] = -1;
    for (int m = 0; m < task->nmeshes; m++)
        for (int i = task->meshes[m].ndevices - 1; i >= 0; i--)
            r->rank[(size_t)m * (size_t)r->stride + (size_t)task->meshes[m].devices[i]] = i;
}

void synth_ranks_free(synth_ranks_t *r)
{
    free(r->rank);
    r->rank = NULL;
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/* Sorted by rank in the mesh, those outside it last in their own order: each holder's key is its
 * rank (or one past every rank) above its index. The 8192-GPU scale case has 512 holders per
 * piece in a mesh of 4096, where a scan of the holders per device took alpa-p2p 49 s. */
int *synth_holders_in_mesh_order(const mc_task_t *task, const synth_ranks_t *ranks, int piece)
{
    const mc_piece_t *p = &task->pieces[piece];
    int m = task->tensors[p->tensor].src.mesh;
    int64_t *key = mc_xmalloc(sizeof(int64_t) * (size_t)(p->nholders + 1));
    for (int h = 0; h < p->nholders; h++) {
        int g = p->holders[h];
        int rank = g < ranks->stride ? ranks->rank[(size_t)m * (size_t)ranks->stride + (size_t)g]
                                     : -1;
        key[h] = ((int64_t)(rank >= 0 ? rank : INT32_MAX) << 32) | h;
    }
    mc_sort(key, (size_t)p->nholders, sizeof(int64_t), cmp_i64);
    int *out = mc_xmalloc(sizeof(int) * (size_t)p->nholders);
    for (int h = 0; h < p->nholders; h++)
        out[h] = p->holders[key[h] & 0xffffffff];
    free(key);
    return out;
}

uint64_t synth_piece_elems(const mc_task_t *task, int piece)
{
    const mc_piece_t *p = &task->pieces[piece];
    return p->bytes / (uint64_t)mc_dtype_size(task->tensors[p->tensor].src.dtype);
}

static int cmp_lo(const int64_t *a, const int64_t *b)
{
    for (int d = 0; d < MC_MAX_DIMS; d++)
        if (a[d] != b[d])
            return a[d] < b[d] ? -1 : 1;
    return 0;
}

static int cmp_unit(const void *pa, const void *pb)
{
    const synth_unit_t *a = pa, *b = pb;
    int c;
    if (a->tensor != b->tensor)
        return a->tensor < b->tensor ? -1 : 1;
    if ((c = cmp_lo(a->tile_lo, b->tile_lo)))
        return c;
    if (a->dest_rank != b->dest_rank)
        return a->dest_rank < b->dest_rank ? -1 : 1;
    if ((c = cmp_lo(a->piece_lo, b->piece_lo)))
        return c;
    return a->piece < b->piece ? -1 : a->piece > b->piece;
}

static void fill_unit(const mc_task_t *task, int piece, int dest, synth_unit_t *u)
{
    const mc_piece_t *p = &task->pieces[piece];
    /* Every destination of a piece inside one consumer holds the same destination tile, so the
     * first names it when the unit is the whole piece. */
    int who = dest < 0 ? p->dests[0] : dest;
    const mc_layout_t *dst = mc_task_dst_layout(task, p->tensor, who);
    mc_box_t tile;
    memset(u, 0, sizeof(*u));
    u->piece = piece;
    u->dest = dest;
    u->tensor = p->tensor;
    mc_layout_tile(task, dst, who, &tile);
    for (int d = 0; d < dst->ndims; d++) {
        u->tile_lo[d] = tile.lo[d];
        u->piece_lo[d] = p->box.lo[d];
    }
    u->dest_rank = dest < 0 ? 0 : synth_mesh_rank(&task->meshes[dst->mesh], dest);
}

void synth_sort_units(synth_unit_t *units, int n)
{
    mc_sort(units, (size_t)n, sizeof(*units), cmp_unit);
}

int synth_least_loaded(const int *holders, int n, const uint64_t *load)
{
    int best = holders[0];
    for (int i = 1; i < n; i++)
        if (load[holders[i]] < load[best])
            best = holders[i];
    return best;
}

mc_status_t synth_check_disjoint(const mc_task_t *task, const char *strategy, mc_err_t *err)
{
    for (int t = 0; t < task->ntensors; t++) {
        int moves = 0;
        for (int p = 0; p < task->npieces && !moves; p++)
            moves = task->pieces[p].tensor == t && task->pieces[p].ndests > 0;
        if (!moves)
            continue;
        const mc_mesh_t *a = &task->meshes[task->tensors[t].src.mesh];
        for (int k = 0; k <= task->tensors[t].nmore; k++) {
            const mc_mesh_t *b = &task->meshes[mc_tensor_consumer(&task->tensors[t], k)->mesh];
            for (int i = 0; i < a->ndevices; i++)
                if (synth_mesh_rank(b, a->devices[i]) >= 0)
                    return mc_err_set(err, MC_ERR_UNSUPPORTED,
                                      "strategy %s: tensor %s moves from mesh %s to mesh %s, "
                                      "which share GPU %d; expected disjoint meshes (Alpa's "
                                      "cross-mesh resharding runs between pipeline stages)",
                                      strategy, task->tensors[t].name, a->name, b->name,
                                      a->devices[i]);
        }
    }
    return MC_OK;
}

mc_status_t synth_check_one_consumer(const mc_task_t *task, const char *strategy, mc_err_t *err)
{
    for (int t = 0; t < task->ntensors; t++)
        if (task->tensors[t].nmore > 0)
            return mc_err_set(err, MC_ERR_UNSUPPORTED, "strategy %s: tensor %s has %d consumers; "
                              "expected one (not modelled yet)", strategy,
                              task->tensors[t].name, task->tensors[t].nmore + 1);
    return MC_OK;
}

synth_unit_t *synth_naive_order(const mc_task_t *task, int per_dest, int *n)
{
    int count = 0;
    for (int p = 0; p < task->npieces; p++)
        count += per_dest ? task->pieces[p].ndests : task->pieces[p].ndests > 0;
    synth_unit_t *units = mc_xcalloc((size_t)(count ? count : 1), sizeof(*units));
    int k = 0;
    for (int p = 0; p < task->npieces; p++) {
        const mc_piece_t *pc = &task->pieces[p];
        if (!pc->ndests)
            continue;
        if (!per_dest) {
            fill_unit(task, p, -1, &units[k++]);
            continue;
        }
        for (int d = 0; d < pc->ndests; d++)
            fill_unit(task, p, pc->dests[d], &units[k++]);
    }
    synth_sort_units(units, count);
    *n = count;
    return units;
}
