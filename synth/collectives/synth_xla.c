/* The 'xla' strategy: the baseline users have today, XLA's SPMD partitioner's decision ladder
 * (xla/service/spmd/spmd_partitioner.cc, PartitionedHlo::ReshardNoCache; research note
 * array-redistribution.md section 2.1), first match wins:
 *   - the same tiles everywhere: nothing moves;
 *   - identical tile counts per dimension, other devices: one collective-permute
 *     (CanReshardWithCollectivePermute);
 *   - the same number of tiles and the same multiset of tile counts over the dimensions that
 *     differ: all-to-all (GetReshardAllToAllSourceTargetDims; XLA merges the per-dimension
 *     all-to-alls, TryMultipleSourceTargetDims, and fixes the device order with a permute; it is
 *     modelled as one all-to-all straight to the target, which never moves more than XLA does);
 *   - the source partially replicated: a local dynamic-slice over the replicated axes, then a
 *     collective-permute if devices differ (ReshardFromPartialReplicateWithDynamicSlice), else
 *     ReshardPartialReplicateWithAllToAll;
 *   - the target partially replicated: a collective-permute to a compatible layout if needed,
 *     then an all-gather within the replication groups (ReshardToPartialReplicateWithAllGather),
 *     else ReshardPartialReplicateWithAllToAll;
 *   - both tiled: TryComplexReshardHandling (split/merge a dimension pair, replicate one
 *     dimension first, move the source's replication onto a dimension), then the grouping of the
 *     dimensions whose shard counts already match, resharding inside each group;
 *   - otherwise full replication: all-gather everything, then slice locally ("involuntary full
 *     rematerialization"). */
#include <string.h>

#include "synth/collectives/collective_internal.h"

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

/* ---- layouts as XLA sees them ---- */

static int64_t shards(const coll_prog_t *p, const mc_layout_t *l, int d)
{
    return coll_dim_shards(p, &l->dims[d]);
}

/* The replicas of each tile: the product of the mesh axes the layout does not use. */
static int64_t replicas(const coll_prog_t *p, const mc_layout_t *l)
{
    const mc_mesh_t *m = &p->space->meshes[0];
    unsigned used = coll_layout_axes(l);
    int64_t r = 1;
    for (int a = 0; a < m->naxes; a++)
        if (!((used >> a) & 1u))
            r *= m->axis_sizes[a];
    return r;
}

/* HloSharding::IsReplicated / ReplicateOnLastTileDim. */
static int replicated(const coll_prog_t *p, const mc_layout_t *l)
{
    return replicas(p, l) == p->space->meshes[0].ndevices;
}

static int partial(const coll_prog_t *p, const mc_layout_t *l)
{
    return replicas(p, l) > 1 && !replicated(p, l);
}

static int same_axes(const mc_dim_spec_t *a, const mc_dim_spec_t *b)
{
    return a->naxes == b->naxes && !memcmp(a->axes, b->axes, sizeof(int) * (size_t)a->naxes);
}

/* Appends a step unless the program is full or the step changes nothing; 0 when full. */
static int push(coll_prog_t *p, coll_kind_t kind, unsigned group, const mc_layout_t *to)
{
    if (coll_same_tiles(p, coll_prog_layout(p, p->nsteps), to))
        return 1;
    if (p->nsteps == COLL_MAX_STEPS)
        return 0;
    coll_prog_push(p, kind, group, to);
    return 1;
}

static int ladder(coll_prog_t *p, const mc_layout_t *S, const mc_layout_t *D, int allow_full,
                  int depth);

/* Runs the ladder from the program's current layout to D; on failure the program is left as it
 * was. */
static int reshard(coll_prog_t *p, const mc_layout_t *D, int allow_full, int depth)
{
    int mark = p->nsteps;
    mc_layout_t S = *coll_prog_layout(p, p->nsteps);
    if (depth > 4 || !ladder(p, &S, D, allow_full, depth + 1)) {
        p->nsteps = mark;
        return 0;
    }
    return 1;
}

/* ReshardPartialReplicateWithAllToAll: the partially replicated side P and the tiled side T
 * (no replication) have tile dimensions [1, T0, ..., T(n-2)] + replicas T(n-1) against
 * [T0, ..., T(n-1)] on the same device order: here P's dimension d+1 has T's dimension d's axes
 * and P's replicated axes, in mesh order, are T's last dimension's. From P: an all-to-all to
 * T with its last dimension replicated, then a local slice; to P: that all-gather, then the
 * all-to-all. */
static int shifted(const coll_prog_t *p, const mc_layout_t *P, const mc_layout_t *T,
                   mc_layout_t *mid)
{
    int n = T->ndims;
    const mc_mesh_t *m = &p->space->meshes[0];
    if (!partial(p, P) || replicas(p, T) != 1 || P->dims[0].naxes || n < 2)
        return 0;
    for (int d = 0; d + 1 < n; d++)
        if (!same_axes(&P->dims[d + 1], &T->dims[d]))
            return 0;
    unsigned rep = ~coll_layout_axes(P) & ((1u << m->naxes) - 1);
    const mc_dim_spec_t *last = &T->dims[n - 1];
    for (int i = 0, a = 0; i < last->naxes; i++, a++) {
        while (a < m->naxes && !((rep >> a) & 1u))
            a++;
        if (a == m->naxes || last->axes[i] != a)
            return 0;
        rep &= ~(1u << a);
    }
    if (rep || !last->naxes)
        return 0;
    *mid = *T;
    mid->dims[n - 1].naxes = 0;
    return 1;
}

static int partial_with_alltoall(coll_prog_t *p, const mc_layout_t *S, const mc_layout_t *D)
{
    mc_layout_t mid;
    if (shifted(p, S, D, &mid))
        return push(p, COLL_ALLTOALL, coll_layout_axes(S) | coll_layout_axes(D), &mid) &&
               push(p, COLL_SLICE, coll_layout_axes(D) & ~coll_layout_axes(&mid), D);
    if (shifted(p, D, S, &mid))
        return push(p, COLL_ALLGATHER, coll_layout_axes(S) & ~coll_layout_axes(&mid), &mid) &&
               push(p, COLL_ALLTOALL, coll_layout_axes(&mid) | coll_layout_axes(D), D);
    return 0;
}

/* PatternMatchMergeOrSplitSharding, the pairs it accepts ("exactly one of the four counts is
 * 1"): dimensions i and j with S_i * S_j = D_i * D_j, [.., X, .., Y, ..] <-> [.., X*Y, .., 1, ..]
 * (either side, either order), the split dimension divisible by the split. XLA splits dimension
 * i into two, reshards without replication (the pair's counts then match as a multiset) and merges
 * back: one all-to-all when the other differing dimensions match as a multiset too. The pairs
 * with no count 1 need S_i = D_i * D_j, which leaves S_j = 1: never reached. Returns -1 when no
 * pair matches, else whether the first matching pair reshards without replication. */
static int merge_or_split(const coll_prog_t *p, const mc_layout_t *S, const mc_layout_t *D)
{
    int n = S->ndims, diff[MC_MAX_DIMS], nd = 0;
    if (replicas(p, S) != replicas(p, D) || replicated(p, S) || replicated(p, D))
        return -1;
    for (int d = 0; d < n; d++)
        if (shards(p, S, d) != shards(p, D, d))
            diff[nd++] = d;
    for (int a = 0; a < nd; a++)
        for (int b = a + 1; b < nd; b++) {
            int i = diff[a], j = diff[b];
            int64_t si = shards(p, S, i), sj = shards(p, S, j), di = shards(p, D, i),
                    dj = shards(p, D, j);
            if ((si == 1) + (sj == 1) + (di == 1) + (dj == 1) != 1 || si * sj != di * dj)
                continue;
            if (si == 1 || di == 1) {
                int t = i;
                i = j;
                j = t;
                si = shards(p, S, i);
                sj = shards(p, S, j);
                dj = shards(p, D, j);
            }
            int64_t len = S->shape[i], local = (len + si - 1) / si;
            if (dj == 1 ? local % sj : len % si)
                continue;
            /* the other differing dimensions: the same counts as a multiset */
            int64_t cs[MC_MAX_DIMS], cd[MC_MAX_DIMS];
            int k = 0, ok = 1;
            for (int c = 0; c < nd; c++)
                if (diff[c] != i && diff[c] != j) {
                    cs[k] = shards(p, S, diff[c]);
                    cd[k++] = shards(p, D, diff[c]);
                }
            for (int x = 0; x < k && ok; x++) {
                int y = 0;
                while (y < k && cd[y] != cs[x])
                    y++;
                ok = y < k;
                if (ok)
                    cd[y] = -1;
            }
            return ok;
        }
    return -1;
}

/* S with dimension d's axes dropped (XLA: PartiallyReplicateTiledShardingOnDims). */
static void drop_dim(const mc_layout_t *S, int d, mc_layout_t *out)
{
    *out = *S;
    out->dims[d].naxes = 0;
}

/* TryComplexReshardHandling, in XLA's order. */
static int complex_reshard(coll_prog_t *p, const mc_layout_t *S, const mc_layout_t *D, int depth)
{
    const mc_mesh_t *m = &p->space->meshes[0];
    int mark = p->nsteps;
    mc_layout_t mid;
    int split = merge_or_split(p, S, D);
    if (split >= 0)
        return split && push(p, COLL_ALLTOALL, used_axes(S, D), D);
    /* PatternMatchPartiallyReplicateDim: the first source dimension whose shards times the
     * source's replicas make the target's replicas is gathered first. */
    if (partial(p, D))
        for (int d = 0; d < S->ndims; d++) {
            if (shards(p, S, d) == 1 || shards(p, S, d) * replicas(p, S) != replicas(p, D))
                continue;
            drop_dim(S, d, &mid);
            if (reshard(p, &mid, 1, depth) && reshard(p, D, 0, depth))
                return 1;
            p->nsteps = mark;
            return 0;
        }
    /* Partially replicated to tiled: the first dimension unsplit in the source whose target
     * count the replicas divide takes the replicated axes (a local slice), then reshard. */
    if (partial(p, S) && !partial(p, D))
        for (int d = 0; d < S->ndims; d++) {
            int64_t r = replicas(p, S);
            if (shards(p, D, d) == shards(p, S, d) || shards(p, S, d) != 1 ||
                shards(p, D, d) % r)
                continue;
            mid = *S;
            unsigned used = coll_layout_axes(S);
            for (int a = 0; a < m->naxes; a++)
                if (!((used >> a) & 1u))
                    mid.dims[d].axes[mid.dims[d].naxes++] = a;
            if (reshard(p, &mid, 1, depth) && reshard(p, D, 0, depth))
                return 1;
            p->nsteps = mark;
            return 0;
        }
    return 0;
}

/* Grouping the dimensions whose shard counts already match (GroupShardingOnDims): inside each
 * group of devices that share those tiles the rest is resharded on its own, replicating only
 * within the group if it must. Modelled when the matching dimensions use the same axes on both
 * sides, so the groups are the same devices (AlignGroupsWith has nothing to reorder): the inner
 * program's layouts get those axes back as the major axes of their dimensions. */
static int group_equal_dims(coll_prog_t *p, const mc_layout_t *S, const mc_layout_t *D,
                            int depth)
{
    int eq[MC_MAX_DIMS] = {0}, any = 0;
    for (int d = 0; d < S->ndims; d++) {
        int64_t c = shards(p, S, d);
        if (c == 1 || c != shards(p, D, d))
            continue;
        if (!same_axes(&S->dims[d], &D->dims[d]))
            return 0;
        eq[d] = any = 1;
    }
    if (!any)
        return 0;
    coll_prog_t inner = *p;
    mc_layout_t s2 = *S, d2 = *D;
    for (int d = 0; d < S->ndims; d++)
        if (eq[d])
            s2.dims[d].naxes = d2.dims[d].naxes = 0;
    inner.src = s2;
    inner.nsteps = 0;
    if (depth > 4 || !ladder(&inner, &s2, &d2, 1, depth + 1))
        return 0;
    int mark = p->nsteps;
    for (int i = 0; i < inner.nsteps; i++) {
        mc_layout_t to = inner.steps[i].to;
        for (int d = 0; d < S->ndims; d++) {
            if (!eq[d])
                continue;
            mc_dim_spec_t *o = &to.dims[d];
            memmove(o->axes + S->dims[d].naxes, o->axes, sizeof(int) * (size_t)o->naxes);
            memcpy(o->axes, S->dims[d].axes, sizeof(int) * (size_t)S->dims[d].naxes);
            o->naxes += S->dims[d].naxes;
        }
        if (!push(p, inner.steps[i].kind, inner.steps[i].group, &to)) {
            p->nsteps = mark;
            return 0;
        }
    }
    return reshard(p, D, 1, depth);
}

static int ladder(coll_prog_t *p, const mc_layout_t *S, const mc_layout_t *D, int allow_full,
                  int depth)
{
    const mc_mesh_t *m = &p->space->meshes[0];
    unsigned all = (1u << m->naxes) - 1, us = coll_layout_axes(S), ud = coll_layout_axes(D),
             added;
    mc_layout_t mid;
    if (coll_same_tiles(p, S, D))
        return 1;
    if (coll_same_tile_shapes(p, S, D))
        return push(p, COLL_PERMUTE, used_axes(S, D), D);
    if (alltoall_applies(p, S, D))
        return push(p, COLL_ALLTOALL, used_axes(S, D), D);
    if (!replicated(p, D) && (all & ~us)) {
        if (extend_to_counts(p, S, D, D, all & ~us, &mid, &added))
            return push(p, COLL_SLICE, added, &mid) &&
                   push(p, COLL_PERMUTE, used_axes(&mid, D), D);
        if (partial_with_alltoall(p, S, D))
            return 1;
    }
    if (!replicated(p, S) && (all & ~ud)) {
        if (extend_to_counts(p, D, S, S, all & ~ud, &mid, &added))
            return push(p, COLL_PERMUTE, used_axes(S, &mid), &mid) &&
                   push(p, COLL_ALLGATHER, added, D);
        if (partial_with_alltoall(p, S, D))
            return 1;
    }
    if (!replicated(p, S) && !replicated(p, D)) {
        int mark = p->nsteps;
        if (complex_reshard(p, S, D, depth) || group_equal_dims(p, S, D, depth))
            return 1;
        p->nsteps = mark;
        if (!allow_full)
            return 0;
    }
    mc_layout_t rep = *S;
    for (int d = 0; d < rep.ndims; d++)
        rep.dims[d].naxes = 0;
    return push(p, COLL_ALLGATHER, us, &rep) && push(p, COLL_SLICE, ud, D);
}

void coll_plan_xla(coll_prog_t *p)
{
    mc_layout_t S = p->src, D = p->dst;
    if (!ladder(p, &S, &D, 1, 0)) {
        /* a program longer than COLL_MAX_STEPS: XLA's last resort */
        p->nsteps = 0;
        mc_layout_t rep = S;
        for (int d = 0; d < rep.ndims; d++)
            rep.dims[d].naxes = 0;
        push(p, COLL_ALLGATHER, coll_layout_axes(&S), &rep);
        push(p, COLL_SLICE, coll_layout_axes(&D), &D);
    }
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
