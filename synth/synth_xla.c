/* The 'xla' strategy: the baseline users have today, XLA's SPMD partitioner's decision ladder
 * (PartitionedHlo::ReshardNoCache; research note array-redistribution.md section 2.1), first
 * match wins:
 *   - the same tiles everywhere: nothing moves;
 *   - identical tile counts per dimension, other devices: one collective-permute;
 *   - the same number of tiles and the same multiset of tile counts over the dimensions that
 *     differ: all-to-all (XLA merges the per-dimension all-to-alls and fixes the device order
 *     with a permute; it is modelled as one all-to-all straight to the target, which never
 *     moves more than XLA does);
 *   - the target's tiling refines the source's and the source is partially replicated: a local
 *     dynamic-slice over the replicated axes, then a collective-permute if devices differ;
 *   - the source's tiling refines the target's: a collective-permute to a compatible layout if
 *     needed, then an all-gather within the replication groups;
 *   - otherwise full replication: all-gather everything, then slice locally ("involuntary full
 *     rematerialization"). XLA's TryComplexReshardHandling patterns are not modelled; they fall
 *     to this rung. */
#include <string.h>

#include "synth/collective_internal.h"

/* Is the multiset of tile counts over the dimensions where a and b differ the same? */
static int alltoall_applies(const coll_prog_t *p, const mc_layout_t *a, const mc_layout_t *b)
{
    int64_t ca[MC_MAX_DIMS], cb[MC_MAX_DIMS], ta = 1, tb = 1;
    int n = 0;
    for (int d = 0; d < a->ndims; d++) {
        int64_t x = coll_dim_shards(p, &a->dims[d]), y = coll_dim_shards(p, &b->dims[d]);
        ta *= x;
        tb *= y;
        if (x != y) {
            ca[n] = x;
            cb[n++] = y;
        }
    }
    if (ta != tb)
        return 0;
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < n && cb[j] != ca[i])
            j++;
        if (j == n)
            return 0;
        cb[j] = -1;
    }
    return 1;
}

/* A layout with base's axes per dimension followed by axes from the pool (axes neither uses),
 * preferring those hint has in that dimension, so that every dimension has the tile count of
 * shape's; returns 0 when the pool cannot make the counts. */
static int extend_to_counts(const coll_prog_t *p, const mc_layout_t *base, const mc_layout_t *hint,
                            const mc_layout_t *shape, unsigned pool, mc_layout_t *out,
                            unsigned *added)
{
    const mc_mesh_t *m = &p->space->meshes[0];
    *out = *base;
    *added = 0;
    for (int d = 0; d < base->ndims; d++) {
        int64_t have = coll_dim_shards(p, &base->dims[d]), want = coll_dim_shards(p, &shape->dims[d]);
        if (want % have)
            return 0;
        int64_t need = want / have;
        mc_dim_spec_t *o = &out->dims[d];
        for (int pass = 0; pass < 2 && need > 1; pass++)
            for (int a = 0; a < m->naxes && need > 1; a++) {
                int in_hint = 0;
                for (int i = 0; i < hint->dims[d].naxes; i++)
                    in_hint |= hint->dims[d].axes[i] == a;
                if (!((pool >> a) & 1u) || (pass == 0 && !in_hint) ||
                    need % m->axis_sizes[a])
                    continue;
                o->axes[o->naxes++] = a;
                need /= m->axis_sizes[a];
                pool &= ~(1u << a);
                *added |= 1u << a;
            }
        if (need != 1)
            return 0;
    }
    return 1;
}

/* A permute or all-to-all prefers senders at the same place on the axes neither layout uses. */
static unsigned used_axes(const mc_layout_t *a, const mc_layout_t *b)
{
    return coll_layout_axes(a) | coll_layout_axes(b);
}

void coll_plan_xla(coll_prog_t *p)
{
    const mc_layout_t *S = &p->src, *D = &p->dst;
    unsigned all = (1u << p->space->meshes[0].naxes) - 1, us = coll_layout_axes(S),
             ud = coll_layout_axes(D), added;
    mc_layout_t mid;
    if (coll_same_tiles(p, S, D))
        return;
    if (coll_same_tile_shapes(p, S, D)) {
        coll_prog_push(p, COLL_PERMUTE, used_axes(S, D), D);
        return;
    }
    if (alltoall_applies(p, S, D)) {
        coll_prog_push(p, COLL_ALLTOALL, used_axes(S, D), D);
        return;
    }
    if ((all & ~us) && extend_to_counts(p, S, D, D, all & ~us, &mid, &added)) {
        coll_prog_push(p, COLL_SLICE, added, &mid);
        if (!coll_same_tiles(p, &mid, D))
            coll_prog_push(p, COLL_PERMUTE, used_axes(&mid, D), D);
        return;
    }
    if (extend_to_counts(p, D, S, S, all & ~ud, &mid, &added)) {
        if (!coll_same_tiles(p, S, &mid))
            coll_prog_push(p, COLL_PERMUTE, used_axes(S, &mid), &mid);
        coll_prog_push(p, COLL_ALLGATHER, added, D);
        return;
    }
    mc_layout_t rep = *S;
    for (int d = 0; d < rep.ndims; d++)
        rep.dims[d].naxes = 0;
    coll_prog_push(p, COLL_ALLGATHER, us, &rep);
    coll_prog_push(p, COLL_SLICE, ud, D);
}

mc_status_t mc_synth_xla(mc_task_t *task, const mc_topo_t *topo, const mc_synth_opts_t *opts,
                         mc_sched_t **out, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_sched_t *s = NULL;
    MC_CHECK_GOTO(coll_synth(task, topo, opts, "xla", coll_plan_xla, &s, err), out, st);
    MC_CHECK_GOTO(mc_synth_check_memory(s, topo, opts->memory_limit, err), out, st);
    s->mem_limit = opts->memory_limit;
    *out = s;
    s = NULL;
out:
    mc_sched_free(s);
    return st;
}
