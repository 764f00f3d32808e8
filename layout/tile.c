/* Tiles: which block of a tensor each device of a mesh holds in a layout. A dimension split over
 * axes (a1..am), major to minor, has shard index ((c[a1]*|a2| + c[a2])*|a3| + ...) + c[am] for
 * a device at mesh coordinates c; the shard's interval follows the ceil rule (XLA, torch.chunk:
 * trailing shards may be short or empty) or the explicit sizes. */
#include "layout/layout_internal.h"

int64_t mc_layout_nshards(const mc_task_t *task, const mc_layout_t *layout, int dim)
{
    const mc_mesh_t *mesh = &task->meshes[layout->mesh];
    const mc_dim_spec_t *d = &layout->dims[dim];
    int64_t n = 1;
    for (int i = 0; i < d->naxes; i++)
        n *= mesh->axis_sizes[d->axes[i]];
    return n;
}

void mc_layout_shard(const mc_task_t *task, const mc_layout_t *layout, int dim, int64_t s,
                     int64_t *lo, int64_t *hi)
{
    const mc_dim_spec_t *d = &layout->dims[dim];
    int64_t n = layout->shape[dim];
    if (d->sizes) {
        int64_t start = 0;
        for (int64_t i = 0; i < s; i++)
            start += d->sizes[i];
        *lo = start;
        *hi = start + d->sizes[s];
        return;
    }
    int64_t k = mc_layout_nshards(task, layout, dim);
    int64_t q = n / k + (n % k != 0), start;
    /* n may be close to 2^63, so neither s*q nor start+q may be formed when past n. */
    if (__builtin_mul_overflow(s, q, &start) || start > n)
        start = n;
    *lo = start;
    *hi = q < n - start ? start + q : n;
}

int64_t mc_layout_shard_of(const mc_task_t *task, const mc_layout_t *layout, int dim, int pos)
{
    const mc_mesh_t *mesh = &task->meshes[layout->mesh];
    const mc_dim_spec_t *d = &layout->dims[dim];
    int coord[MC_MAX_AXES];
    for (int a = mesh->naxes - 1; a >= 0; a--) {
        coord[a] = pos % mesh->axis_sizes[a];
        pos /= mesh->axis_sizes[a];
    }
    int64_t s = 0;
    for (int i = 0; i < d->naxes; i++)
        s = s * mesh->axis_sizes[d->axes[i]] + coord[d->axes[i]];
    return s;
}

void mc_layout_tile_at(const mc_task_t *task, const mc_layout_t *layout, int pos, mc_box_t *tile)
{
    *tile = (mc_box_t){{0}, {0}};
    for (int k = 0; k < layout->ndims; k++)
        mc_layout_shard(task, layout, k, mc_layout_shard_of(task, layout, k, pos), &tile->lo[k],
                        &tile->hi[k]);
}

int mc_layout_tile(const mc_task_t *task, const mc_layout_t *layout, int gpu, mc_box_t *tile)
{
    int pos = mc_mesh_position(&task->meshes[layout->mesh], gpu);
    if (pos < 0) {
        *tile = (mc_box_t){{0}, {0}};
        return 0;
    }
    mc_layout_tile_at(task, layout, pos, tile);
    return 1;
}

const mc_layout_t *mc_tensor_consumer(const mc_tensor_move_t *mv, int c)
{
    return c == 0 ? &mv->dst : &mv->more[c - 1];
}

const mc_layout_t *mc_task_dst_layout(const mc_task_t *task, int tensor, int gpu)
{
    const mc_tensor_move_t *mv = &task->tensors[tensor];
    for (int c = 0; c <= mv->nmore; c++) {
        const mc_layout_t *l = mc_tensor_consumer(mv, c);
        if (mc_mesh_position(&task->meshes[l->mesh], gpu) >= 0)
            return l;
    }
    return NULL;
}
