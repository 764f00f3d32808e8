/* The mesh a collective program runs on. A same-mesh redistribution may name two meshes over the
 * same devices in the same order with different shapes (ReaL's training and generation layouts:
 * {pp:2,dp:2,tp:2} and {dp:2,tp:4} on GPUs 0..7). Both are row-major over one device list, so
 * their axes are groups of the axes of a common refinement: the axis sizes' running products of
 * both meshes, merged, must each divide the next. On that mesh every layout of the program is a
 * plain list of axes per dimension and a collective acts on whole axes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth/collectives/collective_internal.h"

const char *coll_kind_name(coll_kind_t k)
{
    static const char *names[] = {"slice", "all-to-all", "permute", "all-gather"};
    return names[k];
}

/* Running products of a mesh's axis sizes (major first), appended to prod. */
static int running_products(const mc_mesh_t *m, int64_t *prod, int n)
{
    int64_t c = 1;
    for (int a = 0; a < m->naxes; a++) {
        c *= m->axis_sizes[a];
        prod[n++] = c;
    }
    return n;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The refined chain of running products (without 1), or -1 when the meshes do not refine to a
 * common one within MC_MAX_AXES axes. */
static int common_chain(const mc_mesh_t *a, const mc_mesh_t *b, int64_t *chain)
{
    int64_t all[2 * MC_MAX_AXES];
    int n = running_products(b, all, running_products(a, all, 0)), k = 0;
    mc_sort(all, (size_t)n, sizeof(int64_t), cmp_i64);
    for (int i = 0; i < n; i++) {
        if (all[i] == 1 || (k && all[i] == chain[k - 1]))
            continue;
        if ((k ? all[i] % chain[k - 1] : 0) != 0 || k == MC_MAX_AXES)
            return -1;
        chain[k++] = all[i];
    }
    return k;
}

/* The refined axes [*first, *last) that make up axis a of mesh m. */
static void axis_span(const mc_mesh_t *m, int a, const int64_t *chain, int k, int *first,
                      int *last)
{
    int64_t before = 1;
    for (int i = 0; i < a; i++)
        before *= m->axis_sizes[i];
    int64_t after = before * m->axis_sizes[a];
    *first = *last = 0;
    for (int i = 0; i < k; i++) {
        if (chain[i] <= before)
            *first = i + 1;
        if (chain[i] <= after)
            *last = i + 1;
    }
}

/* Name of refined axis r: the source (else destination) axis it is all of, else "a<r>"; never
 * one already taken. */
static void refined_name(const mc_mesh_t *ms, const mc_mesh_t *md, const int64_t *chain, int k,
                         int r, char names[][MC_NAME_MAX])
{
    const mc_mesh_t *m[2] = {ms, md};
    snprintf(names[r], MC_NAME_MAX, "a%d", r);
    for (int w = 1; w >= 0; w--)
        for (int a = 0; a < m[w]->naxes; a++) {
            int f, l;
            axis_span(m[w], a, chain, k, &f, &l);
            if (f == r && l == r + 1)
                snprintf(names[r], MC_NAME_MAX, "%s", m[w]->axis_names[a]);
        }
    for (int i = 0; i < r; i++)
        if (!strcmp(names[i], names[r]))
            snprintf(names[r], MC_NAME_MAX, "a%d", r);
}

/* A layout of mesh m rewritten on the refined mesh. */
static void refine_layout(const mc_layout_t *in, const mc_mesh_t *m, const int64_t *chain, int k,
                          mc_layout_t *out)
{
    *out = *in;
    out->mesh = 0;
    for (int d = 0; d < in->ndims; d++) {
        mc_dim_spec_t *o = &out->dims[d];
        o->naxes = 0;
        o->sizes = NULL;
        for (int i = 0; i < in->dims[d].naxes; i++) {
            int f, l;
            axis_span(m, in->dims[d].axes[i], chain, k, &f, &l);
            for (int r = f; r < l; r++)
                o->axes[o->naxes++] = r;
        }
    }
}

static int has_explicit_sizes(const mc_layout_t *l)
{
    for (int d = 0; d < l->ndims; d++)
        if (l->dims[d].sizes)
            return 1;
    return 0;
}

mc_status_t coll_prog_init(coll_prog_t *p, const mc_task_t *task, int t, const char *strategy,
                           mc_err_t *err)
{
    const mc_tensor_move_t *mv = &task->tensors[t];
    const mc_mesh_t *ms = &task->meshes[mv->src.mesh], *md = &task->meshes[mv->dst.mesh];
    int64_t chain[MC_MAX_AXES];
    char names[MC_MAX_AXES][MC_NAME_MAX];
    mc_buf_t text = {0};
    mc_status_t st = MC_OK;
    memset(p, 0, sizeof(*p));
    if (mv->nmore)
        return mc_err_set(err, MC_ERR_UNSUPPORTED, "strategy %s: tensor %s has %d consumers; "
                          "expected one (collectives redistribute inside one mesh)", strategy,
                          mv->name, mv->nmore + 1);
    if (ms->ndevices != md->ndevices ||
        memcmp(ms->devices, md->devices, sizeof(int) * (size_t)ms->ndevices))
        return mc_err_set(err, MC_ERR_UNSUPPORTED, "strategy %s: tensor %s moves from mesh %s to "
                          "mesh %s, which are not the same devices in the same order; expected a "
                          "same-mesh redistribution", strategy, mv->name, ms->name, md->name);
    if (has_explicit_sizes(&mv->src) || has_explicit_sizes(&mv->dst))
        return mc_err_set(err, MC_ERR_UNSUPPORTED, "strategy %s: tensor %s has explicit shard "
                          "sizes; expected the ceil rule (collectives act on whole mesh axes)",
                          strategy, mv->name);
    int k = common_chain(ms, md, chain);
    if (k < 0)
        return mc_err_set(err, MC_ERR_UNSUPPORTED, "strategy %s: meshes %s and %s of tensor %s "
                          "have no common refinement of their axes (running products of axis "
                          "sizes must divide each other, at most %d axes)", strategy, ms->name,
                          md->name, mv->name, MC_MAX_AXES);
    mc_buf_printf(&text, "R={");
    for (int r = 0; r < k; r++) {
        refined_name(ms, md, chain, k, r, names);
        mc_buf_printf(&text, "%s%s:%lld", r ? "," : "", names[r],
                      (long long)(chain[r] / (r ? chain[r - 1] : 1)));
    }
    if (!k) /* one device: a single axis of size 1 */
        mc_buf_printf(&text, "one:1");
    mc_buf_printf(&text, "}@[");
    for (int i = 0; i < ms->ndevices; i++)
        mc_buf_printf(&text, "%s%d", i ? "," : "", ms->devices[i]);
    mc_buf_printf(&text, "]");
    p->space = mc_task_new();
    MC_CHECK_GOTO(mc_task_add_mesh(p->space, text.data, err), out, st);
    refine_layout(&mv->src, ms, chain, k, &p->src);
    refine_layout(&mv->dst, md, chain, k, &p->dst);
out:
    mc_buf_free(&text);
    if (st != MC_OK)
        coll_prog_free(p);
    return st;
}

void coll_prog_free(coll_prog_t *p)
{
    mc_task_free(p->space);
    p->space = NULL;
}

void coll_prog_push(coll_prog_t *p, coll_kind_t kind, unsigned group, const mc_layout_t *to)
{
    coll_step_t *s = &p->steps[p->nsteps++];
    s->kind = kind;
    s->group = group;
    s->to = *to;
}

const mc_layout_t *coll_prog_layout(const coll_prog_t *p, int i)
{
    return i ? &p->steps[i - 1].to : &p->src;
}

unsigned coll_layout_axes(const mc_layout_t *l)
{
    unsigned m = 0;
    for (int d = 0; d < l->ndims; d++)
        for (int i = 0; i < l->dims[d].naxes; i++)
            m |= 1u << l->dims[d].axes[i];
    return m;
}

int64_t coll_dim_shards(const coll_prog_t *p, const mc_dim_spec_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < d->naxes; i++)
        n *= p->space->meshes[0].axis_sizes[d->axes[i]];
    return n;
}

int coll_same_tile_shapes(const coll_prog_t *p, const mc_layout_t *a, const mc_layout_t *b)
{
    for (int d = 0; d < a->ndims; d++)
        if (coll_dim_shards(p, &a->dims[d]) != coll_dim_shards(p, &b->dims[d]))
            return 0;
    return 1;
}

int coll_same_tiles(const coll_prog_t *p, const mc_layout_t *a, const mc_layout_t *b)
{
    const mc_mesh_t *m = &p->space->meshes[0];
    for (int i = 0; i < m->ndevices; i++) {
        mc_box_t ta, tb;
        mc_layout_tile(p->space, a, m->devices[i], &ta);
        mc_layout_tile(p->space, b, m->devices[i], &tb);
        if (memcmp(ta.lo, tb.lo, sizeof(int64_t) * (size_t)a->ndims) ||
            memcmp(ta.hi, tb.hi, sizeof(int64_t) * (size_t)a->ndims))
            return 0;
    }
    return 1;
}

char *coll_prog_describe(const coll_prog_t *p)
{
    const mc_mesh_t *m = &p->space->meshes[0];
    mc_buf_t b = {0};
    for (int i = 0; i < p->nsteps; i++) {
        const coll_step_t *s = &p->steps[i];
        mc_buf_printf(&b, "%s%s", i ? "," : "", coll_kind_name(s->kind));
        if (s->kind == COLL_PERMUTE || !s->group)
            continue;
        mc_buf_printf(&b, "(");
        for (int a = 0, n = 0; a < m->naxes; a++)
            if (s->group & (1u << a))
                mc_buf_printf(&b, "%s%s", n++ ? "+" : "", m->axis_names[a]);
        mc_buf_printf(&b, ")");
    }
    if (!p->nsteps)
        mc_buf_printf(&b, "none");
    return b.data;
}
