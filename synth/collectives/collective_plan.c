/* The normal form of Rink et al. (arXiv 2112.01075 section 4.3; research note
 * array-redistribution.md section 1.4): slices first, then flat steps (all-to-alls and at most one
 * permute), then all-gathers. Local size falls, stays, then rises, so on even shapes no device
 * ever holds a tile larger than max(source tile, destination tile).
 *
 * Built directly rather than by rewriting the "easy" program to a fixpoint: axes only the
 * destination uses are sliced in (appended as minor axes where the destination has them), axes
 * only the source uses are kept as minor axes of their dimension until the final all-gather drops
 * them, and between those two layouts, which split over the same axes, each all-to-all moves a
 * block of minor axes of one dimension to extend another dimension's correct prefix. When no
 * such move is left, one permute (or, if tile shapes differ, one all-to-all over the rest) ends
 * the flat part. An axis to gather and an axis to slice of equal size are swapped by that permute
 * instead (the paper's "replace by an unused axis of the same size"), which keeps tiles whole. */
#include <string.h>

#include "synth/collectives/collective_internal.h"

static int axis_size(const coll_prog_t *p, int a)
{
    return p->space->meshes[0].axis_sizes[a];
}

static int has_axis(unsigned mask, int a)
{
    return (mask >> a) & 1u;
}

/* Appends to every dimension of l the axes in mask that dimension has in from, in from's order. */
static void append_axes(mc_layout_t *l, const mc_layout_t *from, unsigned mask)
{
    for (int d = 0; d < l->ndims; d++)
        for (int i = 0; i < from->dims[d].naxes; i++)
            if (has_axis(mask, from->dims[d].axes[i]))
                l->dims[d].axes[l->dims[d].naxes++] = from->dims[d].axes[i];
}

static int same_spec(const mc_dim_spec_t *a, const mc_dim_spec_t *b)
{
    return a->naxes == b->naxes && !memcmp(a->axes, b->axes, sizeof(int) * (size_t)a->naxes);
}

static int same_specs(const mc_layout_t *a, const mc_layout_t *b)
{
    for (int d = 0; d < a->ndims; d++)
        if (!same_spec(&a->dims[d], &b->dims[d]))
            return 0;
    return 1;
}

/* Is a a proper prefix of b? */
static int proper_prefix(const mc_dim_spec_t *a, const mc_dim_spec_t *b)
{
    return a->naxes < b->naxes && !memcmp(a->axes, b->axes, sizeof(int) * (size_t)a->naxes);
}

/* One all-to-all that extends the correct prefix of some dimension j with a block of minor axes
 * of another dimension i, the longest such block; returns 0 when there is none. */
static int alltoall_move(coll_prog_t *p, mc_layout_t *cur, const mc_layout_t *flat)
{
    for (int j = 0; j < cur->ndims; j++) {
        mc_dim_spec_t *cj = &cur->dims[j];
        const mc_dim_spec_t *fj = &flat->dims[j];
        if (!proper_prefix(cj, fj))
            continue;
        for (int i = 0; i < cur->ndims; i++) {
            mc_dim_spec_t *ci = &cur->dims[i];
            if (i == j)
                continue;
            for (int len = fj->naxes - cj->naxes; len >= 1; len--) {
                if (len > ci->naxes ||
                    memcmp(ci->axes + ci->naxes - len, fj->axes + cj->naxes,
                           sizeof(int) * (size_t)len))
                    continue;
                unsigned group = 0;
                for (int k = 0; k < len; k++) {
                    group |= 1u << fj->axes[cj->naxes + k];
                    cj->axes[cj->naxes + k] = fj->axes[cj->naxes + k];
                }
                cj->naxes += len;
                ci->naxes -= len;
                coll_prog_push(p, COLL_ALLTOALL, group, cur);
                return 1;
            }
        }
    }
    return 0;
}

/* Axes whose place (dimension and rank in it) differs between a and b. */
static unsigned misplaced_axes(const mc_layout_t *a, const mc_layout_t *b)
{
    unsigned m = 0;
    for (int d = 0; d < a->ndims; d++) {
        const mc_dim_spec_t *x = &a->dims[d], *y = &b->dims[d];
        for (int i = 0; i < x->naxes || i < y->naxes; i++) {
            int ax = i < x->naxes ? x->axes[i] : -1, ay = i < y->naxes ? y->axes[i] : -1;
            if (ax == ay)
                continue;
            if (ax >= 0)
                m |= 1u << ax;
            if (ay >= 0)
                m |= 1u << ay;
        }
    }
    return m;
}

void coll_plan_normal_form(coll_prog_t *p)
{
    unsigned us = coll_layout_axes(&p->src), ud = coll_layout_axes(&p->dst);
    unsigned gather = us & ~ud, slice = ud & ~us, paired_g = 0, paired_s = 0;
    int naxes = p->space->meshes[0].naxes;
    for (int g = 0; g < naxes; g++)
        for (int z = 0; has_axis(gather, g) && z < naxes; z++)
            if (has_axis(slice & ~paired_s, z) && axis_size(p, z) == axis_size(p, g)) {
                paired_g |= 1u << g;
                paired_s |= 1u << z;
                break;
            }
    gather &= ~paired_g;
    slice &= ~paired_s;
    mc_layout_t cur = p->src, flat = p->dst;
    if (slice) {
        append_axes(&cur, &p->dst, slice);
        coll_prog_push(p, COLL_SLICE, slice, &cur);
    }
    append_axes(&flat, &p->src, gather);
    while (!same_specs(&cur, &flat) && alltoall_move(p, &cur, &flat))
        ;
    if (!same_specs(&cur, &flat))
        coll_prog_push(p, coll_same_tile_shapes(p, &cur, &flat) ? COLL_PERMUTE : COLL_ALLTOALL,
                       misplaced_axes(&cur, &flat), &flat);
    if (gather)
        coll_prog_push(p, COLL_ALLGATHER, gather, &p->dst);
}

/* Consecutive flat steps fused into one exchange over the union of their axes, as XLA
 * (TryMultipleSourceTargetDims), Shardy and DTensor (#172610) fuse collectives: the tile size
 * still never changes in between, no device stages bytes for a later all-to-all, and each
 * device receives exactly what the last flat layout needs, not what every typed step moves
 * (448 instead of 640 elements per device on the research note's worked case). */
void coll_plan_fuse_flat(coll_prog_t *p)
{
    int k = 0;
    for (int i = 0; i < p->nsteps; i++) {
        const coll_step_t *s = &p->steps[i];
        coll_step_t *prev = k ? &p->steps[k - 1] : NULL;
        int flat = s->kind == COLL_ALLTOALL || s->kind == COLL_PERMUTE;
        if (flat && prev && (prev->kind == COLL_ALLTOALL || prev->kind == COLL_PERMUTE)) {
            prev->group |= s->group;
            prev->to = s->to;
            prev->kind = coll_same_tile_shapes(p, coll_prog_layout(p, k - 1), &s->to) ? COLL_PERMUTE
                                                                                 : COLL_ALLTOALL;
        } else {
            p->steps[k++] = *s;
        }
    }
    p->nsteps = k;
}

void coll_plan_collectives(coll_prog_t *p)
{
    coll_plan_normal_form(p);
    coll_plan_fuse_flat(p);
}
