/* Walking a collective program over the cells of its tensor (see coll_walk in
 * collective_internal.h). Cells, not elements: every layout of the program is a grid of whole
 * cells, so the walk costs cells x devices per step whatever the tensor's size. A device that
 * already has a cell's bytes receives nothing: the runtime keeps the source shard, so what the
 * collective would move onto a device that holds it is a local copy. */
#include <stdlib.h>
#include <string.h>

#include "synth/collectives/collective_internal.h"

/* Most cells times devices tracked. */
#define COLL_MAX_CELL_STATE (1 << 24)

typedef struct span {
    int lo[MC_MAX_DIMS], hi[MC_MAX_DIMS]; /* cell index ranges of a tile */
} span_t;

/* The walk's working state. */
typedef struct wstate {
    coll_walk_t *w;
    const mc_task_t *task;
    const mc_topo_t *topo;
    int tensor, nlayouts;
    span_t *spans;      /* nlayouts x ndev */
    char *have;         /* ncells x ndev: the device has the cell's bytes */
    uint64_t *load;     /* bytes each device sends in the current step */
    uint64_t esz;
} wstate_t;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Index of boundary v in cut[d] (v is one of them). */
static int cut_index(const coll_walk_t *w, int d, int64_t v)
{
    int lo = 0, hi = w->ncut[d];
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (w->cut[d][mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void box_span(const coll_walk_t *w, const mc_box_t *b, span_t *sp)
{
    for (int d = 0; d < w->nd; d++) {
        sp->lo[d] = cut_index(w, d, b->lo[d]);
        sp->hi[d] = cut_index(w, d, b->hi[d]);
    }
}

/* The cuts of every dimension and every tile's span of cells. */
static mc_status_t build_cells(wstate_t *x, const char *strategy, mc_err_t *err)
{
    coll_walk_t *w = x->w;
    int ntiles = x->nlayouts * w->ndev;
    mc_box_t *tiles = mc_xmalloc(sizeof(mc_box_t) * (size_t)ntiles);
    for (int l = 0; l < x->nlayouts; l++)
        for (int i = 0; i < w->ndev; i++) {
            mc_box_t *t = &tiles[l * w->ndev + i];
            mc_layout_tile(w->p->space, coll_prog_layout(w->p, l), w->devices[i], t);
            uint64_t b = mc_box_elems(t, w->nd) * x->esz;
            if (b > w->live_peak_bytes[i])
                w->live_peak_bytes[i] = b;
        }
    w->ncells = 1;
    for (int d = w->nd - 1; d >= 0; d--) {
        int64_t *c = mc_xmalloc(sizeof(int64_t) * (size_t)(2 * ntiles + 2));
        int k = 0, u = 0;
        c[k++] = 0;
        c[k++] = w->p->src.shape[d];
        for (int t = 0; t < ntiles; t++) {
            c[k++] = tiles[t].lo[d];
            c[k++] = tiles[t].hi[d];
        }
        mc_sort(c, (size_t)k, sizeof(int64_t), cmp_i64);
        for (int i = 0; i < k; i++)
            if (!u || c[i] != c[u - 1])
                c[u++] = c[i];
        w->cut[d] = c;
        w->ncut[d] = u - 1;
        w->stride[d] = w->ncells;
        w->ncells *= u - 1 > 0 ? u - 1 : 1;
    }
    x->spans = mc_xmalloc(sizeof(span_t) * (size_t)ntiles);
    for (int t = 0; t < ntiles; t++)
        box_span(w, &tiles[t], &x->spans[t]);
    free(tiles);
    if (w->ncells * w->ndev > COLL_MAX_CELL_STATE)
        return mc_err_set(err, MC_ERR_UNSUPPORTED, "strategy %s: tensor %s passes through layouts "
                          "that cut it into %lld cells on %d devices; expected at most %d cell "
                          "states", strategy, x->task->tensors[x->tensor].name,
                          (long long)w->ncells, w->ndev, COLL_MAX_CELL_STATE);
    return MC_OK;
}

/* Calls fn for every cell of span sp (last dimension fastest). */
static void for_cells(wstate_t *x, const span_t *sp, void (*fn)(wstate_t *, int64_t, void *),
                      void *arg)
{
    const coll_walk_t *w = x->w;
    int idx[MC_MAX_DIMS];
    for (int d = 0; d < w->nd; d++) {
        if (sp->lo[d] >= sp->hi[d])
            return;
        idx[d] = sp->lo[d];
    }
    for (;;) {
        int64_t c = 0;
        for (int d = 0; d < w->nd; d++)
            c += idx[d] * w->stride[d];
        fn(x, c, arg);
        int d = w->nd - 1;
        for (; d >= 0 && ++idx[d] == sp->hi[d]; d--)
            idx[d] = sp->lo[d];
        if (d < 0)
            return;
    }
}

static int cell_in(const coll_walk_t *w, int64_t c, const span_t *sp)
{
    for (int d = 0; d < w->nd; d++) {
        int i = (int)(c / w->stride[d] % w->ncut[d]);
        if (i < sp->lo[d] || i >= sp->hi[d])
            return 0;
    }
    return 1;
}

void coll_walk_cell_box(const coll_walk_t *w, int64_t c, mc_box_t *b)
{
    for (int d = 0; d < w->nd; d++) {
        int i = (int)(c / w->stride[d] % w->ncut[d]);
        b->lo[d] = w->cut[d][i];
        b->hi[d] = w->cut[d][i + 1];
    }
}

static void mark_piece(wstate_t *x, int64_t c, void *arg)
{
    x->w->cell_piece[c] = *(int *)arg;
}

static void init_state(wstate_t *x)
{
    coll_walk_t *w = x->w;
    w->cell_piece = mc_xmalloc(sizeof(int) * (size_t)w->ncells);
    for (int64_t c = 0; c < w->ncells; c++)
        w->cell_piece[c] = -1;
    for (int pi = 0; pi < x->task->npieces; pi++) {
        if (x->task->pieces[pi].tensor != x->tensor)
            continue;
        span_t sp;
        box_span(w, &x->task->pieces[pi].box, &sp);
        for_cells(x, &sp, mark_piece, &pi);
    }
    x->have = mc_xcalloc((size_t)(w->ncells * w->ndev), 1);
    for (int i = 0; i < w->ndev; i++)
        for (int64_t c = 0; c < w->ncells; c++)
            x->have[c * w->ndev + i] = (char)cell_in(w, c, &x->spans[i]);
    x->load = mc_xcalloc((size_t)w->ndev, sizeof(uint64_t));
}

/* Does position q differ from r only on the axes in group? */
static int in_group(const coll_walk_t *w, int q, int r, unsigned group)
{
    const mc_mesh_t *m = &w->p->space->meshes[0];
    for (int a = m->naxes - 1; a >= 0; a--) {
        int sz = m->axis_sizes[a];
        if (q % sz != r % sz && !((group >> a) & 1u))
            return 0;
        q /= sz;
        r /= sz;
    }
    return 1;
}

/* One step's receiver walk. */
typedef struct step_ctx {
    int step, r;
    const span_t *from;  /* the layout before the step, ndev spans */
    unsigned group;
    int first;           /* the step's first transfer */
    int broken;          /* a cell had no holder with its bytes: a bug in the program */
} step_ctx_t;

static void receive_cell(wstate_t *x, int64_t c, void *arg)
{
    step_ctx_t *sc = arg;
    coll_walk_t *w = x->w;
    int r = sc->r;
    if (w->cell_piece[c] < 0 || cell_in(w, c, &sc->from[r]) || x->have[c * w->ndev + r])
        return;
    int best = -1, best_key[2] = {0, 0};
    int rhost = mc_topo_gpu_host(x->topo, w->devices[r]);
    for (int q = 0; q < w->ndev; q++) {
        if (q == r || !cell_in(w, c, &sc->from[q]))
            continue;
        int key[2] = {!in_group(w, q, r, sc->group),
                      mc_topo_gpu_host(x->topo, w->devices[q]) != rhost};
        if (best < 0 || key[0] < best_key[0] ||
            (key[0] == best_key[0] && (key[1] < best_key[1] ||
                                       (key[1] == best_key[1] && x->load[q] < x->load[best])))) {
            best = q;
            memcpy(best_key, key, sizeof key);
        }
    }
    if (best < 0 || !x->have[c * w->ndev + best]) {
        sc->broken = 1;
        return;
    }
    mc_box_t b;
    coll_walk_cell_box(w, c, &b);
    uint64_t bytes = mc_box_elems(&b, w->nd) * x->esz;
    x->load[best] += bytes;
    w->recv_bytes[r] += bytes;
    MC_GROW(w->xf, w->xf_cap, w->nxf + 1);
    w->xf[w->nxf++] = (coll_xfer_t){c, sc->step, best, r};
}

static mc_status_t walk_step(wstate_t *x, int step, const char *strategy, mc_err_t *err)
{
    coll_walk_t *w = x->w;
    step_ctx_t sc = {step, 0, &x->spans[step * w->ndev], w->p->steps[step].group, w->nxf, 0};
    const span_t *to = &x->spans[(step + 1) * w->ndev];
    memset(x->load, 0, sizeof(uint64_t) * (size_t)w->ndev);
    for (sc.r = 0; sc.r < w->ndev && !sc.broken; sc.r++)
        for_cells(x, &to[sc.r], receive_cell, &sc);
    if (sc.broken)
        return mc_err_set(err, MC_ERR_INTERNAL, "strategy %s: step %d (%s) of tensor %s needs a "
                          "cell no device holds", strategy, step + 1,
                          coll_kind_name(w->p->steps[step].kind),
                          x->task->tensors[x->tensor].name);
    /* Only now: a device that receives in this step cannot send the same bytes in it. */
    for (int i = sc.first; i < w->nxf; i++)
        x->have[w->xf[i].cell * w->ndev + w->xf[i].to] = 1;
    return MC_OK;
}

mc_status_t coll_walk(coll_walk_t *w, const mc_task_t *task, int t, const coll_prog_t *p,
                      const mc_topo_t *topo, const char *strategy, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    const mc_mesh_t *m = &p->space->meshes[0];
    memset(w, 0, sizeof(*w));
    w->p = p;
    w->nd = p->src.ndims;
    w->ndev = m->ndevices;
    w->devices = m->devices;
    w->recv_bytes = mc_xcalloc((size_t)w->ndev, sizeof(uint64_t));
    w->live_peak_bytes = mc_xcalloc((size_t)w->ndev, sizeof(uint64_t));
    wstate_t x = {w, task, topo, t, p->nsteps + 1, NULL, NULL, NULL,
                  (uint64_t)mc_dtype_size(task->tensors[t].src.dtype)};
    MC_CHECK_GOTO(build_cells(&x, strategy, err), out, st);
    init_state(&x);
    for (int i = 0; i < p->nsteps; i++)
        MC_CHECK_GOTO(walk_step(&x, i, strategy, err), out, st);
out:
    free(x.spans);
    free(x.have);
    free(x.load);
    if (st != MC_OK)
        coll_walk_free(w);
    return st;
}

void coll_walk_free(coll_walk_t *w)
{
    for (int d = 0; d < MC_MAX_DIMS; d++)
        free(w->cut[d]);
    free(w->cell_piece);
    free(w->xf);
    free(w->recv_bytes);
    free(w->live_peak_bytes);
    memset(w, 0, sizeof(*w));
}
