/* Lowering a collective program to schedule trees. The tensor is cut into cells: along each
 * dimension, the boundaries of every layout the program passes through. A tile of any of those
 * layouts is a box of whole cells, and a cell lies inside at most one piece of the task (piece
 * boundaries are source and destination boundaries). Walking the program step by step, a device
 * whose next tile holds a cell its current tile does not receives the cell from a device that
 * holds it now: one of its group for the step when there is one, on its own host if possible,
 * the least loaded otherwise. A device that already has the bytes (a source holder of the piece,
 * or it received them at an earlier step) receives nothing: the runtime keeps the source shard,
 * so that is a local copy, not a transfer. Cells are then turned into byte ranges of their piece,
 * runs with the same piece, sender and range become one multicast tree, and a tree that reaches
 * several GPUs of another host crosses the network once and fans out over NVLink there. */
#include <stdlib.h>
#include <string.h>

#include "synth/collective_internal.h"
#include "synth/synth_internal.h"

/* Most byte ranges one program may produce: beyond this the cells cut pieces too finely for
 * one tree per range. */
#define COLL_MAX_RUNS (1 << 20)
/* Most cells times devices tracked. */
#define COLL_MAX_CELL_STATE (1 << 26)

typedef struct span {
    int lo[MC_MAX_DIMS], hi[MC_MAX_DIMS]; /* cell index ranges of a tile */
} span_t;

typedef struct run {
    int piece, src, dst;
    uint64_t off, len;
} run_t;

typedef struct lower {
    const coll_prog_t *p;
    const mc_topo_t *topo;
    mc_sched_t *s;
    int tensor, nd, ndev, nlayouts;
    const int *devices;     /* global GPU id of each mesh position */
    int ncut[MC_MAX_DIMS];  /* intervals per dimension */
    int64_t *cut[MC_MAX_DIMS];
    int64_t stride[MC_MAX_DIMS], ncells;
    span_t *spans;          /* nlayouts x ndev */
    int *cell_piece;        /* piece of each cell, -1 when no device needs it from another */
    char *have;             /* ncells x ndev: the device has the cell's bytes */
    uint64_t *load;         /* bytes each device sends in the current step */
    run_t *runs;
    int nruns, run_cap;
} lower_t;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Index of boundary v in cut[d] (v is one of them). */
static int cut_index(const lower_t *L, int d, int64_t v)
{
    int lo = 0, hi = L->ncut[d];
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (L->cut[d][mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void box_span(const lower_t *L, const mc_box_t *b, span_t *sp)
{
    for (int d = 0; d < L->nd; d++) {
        sp->lo[d] = cut_index(L, d, b->lo[d]);
        sp->hi[d] = cut_index(L, d, b->hi[d]);
    }
}

static mc_status_t build_cells(lower_t *L, mc_err_t *err)
{
    const mc_task_t *sp = L->p->space;
    int n = L->nlayouts * L->ndev * 2 + 2;
    mc_box_t *tiles = mc_xmalloc(sizeof(mc_box_t) * (size_t)(L->nlayouts * L->ndev));
    for (int l = 0; l < L->nlayouts; l++)
        for (int i = 0; i < L->ndev; i++)
            mc_layout_tile(sp, coll_prog_layout(L->p, l), L->devices[i], &tiles[l * L->ndev + i]);
    L->ncells = 1;
    for (int d = L->nd - 1; d >= 0; d--) {
        int64_t *c = mc_xmalloc(sizeof(int64_t) * (size_t)n);
        int k = 0;
        c[k++] = 0;
        c[k++] = L->p->src.shape[d];
        for (int t = 0; t < L->nlayouts * L->ndev; t++) {
            c[k++] = tiles[t].lo[d];
            c[k++] = tiles[t].hi[d];
        }
        qsort(c, (size_t)k, sizeof(int64_t), cmp_i64);
        int u = 0;
        for (int i = 0; i < k; i++)
            if (!u || c[i] != c[u - 1])
                c[u++] = c[i];
        L->cut[d] = c;
        L->ncut[d] = u - 1;
        L->stride[d] = L->ncells;
        L->ncells *= u - 1 > 0 ? u - 1 : 1;
    }
    L->spans = mc_xmalloc(sizeof(span_t) * (size_t)(L->nlayouts * L->ndev));
    for (int t = 0; t < L->nlayouts * L->ndev; t++)
        box_span(L, &tiles[t], &L->spans[t]);
    free(tiles);
    if (L->ncells * L->ndev > COLL_MAX_CELL_STATE)
        return mc_err_set(err, MC_ERR_UNSUPPORTED, "strategy %s: tensor %s passes through layouts "
                          "that cut it into %lld cells on %d devices; expected at most %d cell "
                          "states", L->s->strategy, L->s->task->tensors[L->tensor].name,
                          (long long)L->ncells, L->ndev, COLL_MAX_CELL_STATE);
    return MC_OK;
}

/* Calls fn for every cell of span sp (last dimension fastest). */
static void for_cells(const lower_t *L, const span_t *sp, void (*fn)(lower_t *, int64_t, void *),
                      void *arg)
{
    int idx[MC_MAX_DIMS];
    for (int d = 0; d < L->nd; d++) {
        if (sp->lo[d] >= sp->hi[d])
            return;
        idx[d] = sp->lo[d];
    }
    for (;;) {
        int64_t c = 0;
        for (int d = 0; d < L->nd; d++)
            c += idx[d] * L->stride[d];
        fn((lower_t *)L, c, arg);
        int d = L->nd - 1;
        for (; d >= 0 && ++idx[d] == sp->hi[d]; d--)
            idx[d] = sp->lo[d];
        if (d < 0)
            return;
    }
}

static int cell_in(const lower_t *L, int64_t c, const span_t *sp)
{
    for (int d = 0; d < L->nd; d++) {
        int i = (int)(c / L->stride[d] % L->ncut[d]);
        if (i < sp->lo[d] || i >= sp->hi[d])
            return 0;
    }
    return 1;
}

static void cell_box(const lower_t *L, int64_t c, mc_box_t *b)
{
    for (int d = 0; d < L->nd; d++) {
        int i = (int)(c / L->stride[d] % L->ncut[d]);
        b->lo[d] = L->cut[d][i];
        b->hi[d] = L->cut[d][i + 1];
    }
}

static void mark_piece(lower_t *L, int64_t c, void *arg)
{
    L->cell_piece[c] = *(int *)arg;
}

static void init_state(lower_t *L)
{
    L->cell_piece = mc_xmalloc(sizeof(int) * (size_t)L->ncells);
    for (int64_t c = 0; c < L->ncells; c++)
        L->cell_piece[c] = -1;
    for (int pi = 0; pi < L->s->task->npieces; pi++) {
        if (L->s->task->pieces[pi].tensor != L->tensor)
            continue;
        span_t sp;
        box_span(L, &L->s->task->pieces[pi].box, &sp);
        for_cells(L, &sp, mark_piece, &pi);
    }
    L->have = mc_xcalloc((size_t)(L->ncells * L->ndev), 1);
    for (int i = 0; i < L->ndev; i++)
        for (int64_t c = 0; c < L->ncells; c++)
            L->have[c * L->ndev + i] = (char)cell_in(L, c, &L->spans[i]);
    L->load = mc_xcalloc((size_t)L->ndev, sizeof(uint64_t));
}

/* Does position q differ from r only on the axes in group? */
static int in_group(const lower_t *L, int q, int r, unsigned group)
{
    const mc_mesh_t *m = &L->p->space->meshes[0];
    for (int a = m->naxes - 1; a >= 0; a--) {
        int sz = m->axis_sizes[a];
        if (q % sz != r % sz && !((group >> a) & 1u))
            return 0;
        q /= sz;
        r /= sz;
    }
    return 1;
}

/* Appends the byte ranges of cell c inside its piece, sent from position q to position r. */
static void add_runs(lower_t *L, int64_t c, int q, int r)
{
    const mc_piece_t *pc = &L->s->task->pieces[L->cell_piece[c]];
    uint64_t esz = (uint64_t)mc_dtype_size(L->s->task->tensors[L->tensor].src.dtype);
    uint64_t stride[MC_MAX_DIMS];
    mc_box_t cb;
    cell_box(L, c, &cb);
    for (int d = L->nd - 1; d >= 0; d--)
        stride[d] = d == L->nd - 1 ? esz : stride[d + 1] * (uint64_t)(pc->box.hi[d + 1] -
                                                                      pc->box.lo[d + 1]);
    /* Dimensions after j are whole in the cell, so a run spans dimension j's part of the cell. */
    int j = L->nd - 1;
    while (j > 0 && cb.lo[j] == pc->box.lo[j] && cb.hi[j] == pc->box.hi[j])
        j--;
    int64_t idx[MC_MAX_DIMS];
    for (int d = 0; d < j; d++)
        idx[d] = cb.lo[d];
    for (;;) {
        uint64_t off = (uint64_t)(cb.lo[j] - pc->box.lo[j]) * stride[j];
        for (int d = 0; d < j; d++)
            off += (uint64_t)(idx[d] - pc->box.lo[d]) * stride[d];
        MC_GROW(L->runs, L->run_cap, L->nruns + 1);
        L->runs[L->nruns++] = (run_t){L->cell_piece[c], L->devices[q], L->devices[r], off,
                                      (uint64_t)(cb.hi[j] - cb.lo[j]) * stride[j]};
        int d = j - 1;
        for (; d >= 0 && ++idx[d] == cb.hi[d]; d--)
            idx[d] = cb.lo[d];
        if (d < 0)
            return;
    }
}

/* The state of one step's receiver walk. */
typedef struct step_ctx {
    const span_t *from, *to; /* layouts before and after the step, ndev spans each */
    unsigned group;
    int r;
    int64_t *got;            /* cells received in this step (set once the step is planned) */
    int ngot, got_cap;
    int broken;              /* a cell had no holder with its bytes: a bug in the program */
} step_ctx_t;

static void receive_cell(lower_t *L, int64_t c, void *arg)
{
    step_ctx_t *x = arg;
    int r = x->r;
    if (L->cell_piece[c] < 0 || cell_in(L, c, &x->from[r]) || L->have[c * L->ndev + r])
        return;
    int best = -1, best_key[2] = {0, 0};
    int rhost = mc_topo_gpu_host(L->topo, L->devices[r]);
    for (int q = 0; q < L->ndev; q++) {
        if (q == r || !cell_in(L, c, &x->from[q]))
            continue;
        int key[2] = {!in_group(L, q, r, x->group),
                      mc_topo_gpu_host(L->topo, L->devices[q]) != rhost};
        if (best < 0 || key[0] < best_key[0] ||
            (key[0] == best_key[0] && (key[1] < best_key[1] ||
                                       (key[1] == best_key[1] && L->load[q] < L->load[best])))) {
            best = q;
            memcpy(best_key, key, sizeof key);
        }
    }
    if (best < 0 || !L->have[c * L->ndev + best]) {
        x->broken = 1;
        return;
    }
    int before = L->nruns;
    add_runs(L, c, best, r);
    for (int i = before; i < L->nruns; i++)
        L->load[best] += L->runs[i].len;
    MC_GROW(x->got, x->got_cap, x->ngot + 2);
    x->got[x->ngot++] = c;
    x->got[x->ngot++] = r;
}

static int cmp_run_pair(const void *a, const void *b)
{
    const run_t *x = a, *y = b;
    if (x->piece != y->piece)
        return x->piece < y->piece ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    return (x->off > y->off) - (x->off < y->off);
}

static int cmp_run_range(const void *a, const void *b)
{
    const run_t *x = a, *y = b;
    if (x->piece != y->piece)
        return x->piece < y->piece ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return (x->dst > y->dst) - (x->dst < y->dst);
}

/* Merges ranges that continue each other between the same two devices. */
static void merge_runs(lower_t *L)
{
    qsort(L->runs, (size_t)L->nruns, sizeof(run_t), cmp_run_pair);
    int k = 0;
    for (int i = 0; i < L->nruns; i++) {
        run_t *prev = k ? &L->runs[k - 1] : NULL;
        const run_t *r = &L->runs[i];
        if (prev && prev->piece == r->piece && prev->src == r->src && prev->dst == r->dst &&
            prev->off + prev->len == r->off)
            prev->len += r->len;
        else
            L->runs[k++] = *r;
    }
    L->nruns = k;
}

/* One multicast tree for runs[first..last) (same piece, sender and range, receivers ascending):
 * receivers on the sender's host directly, each other host through its first receiver, which
 * forwards chunk by chunk. */
static mc_status_t add_tree(lower_t *L, int first, int last, int phase, uint64_t chunk_bytes,
                            mc_err_t *err)
{
    mc_status_t st = MC_OK;
    const run_t *r0 = &L->runs[first];
    int root = r0->src, rhost = mc_topo_gpu_host(L->topo, root), relayed = 0;
    int *parent = mc_xmalloc(sizeof(int) * (size_t)(last - first));
    for (int i = first; i < last; i++) {
        int h = mc_topo_gpu_host(L->topo, L->runs[i].dst);
        parent[i - first] = root;
        for (int k = first; k < i && h != rhost; k++)
            if (mc_topo_gpu_host(L->topo, L->runs[k].dst) == h) {
                parent[i - first] = L->runs[k].dst;
                relayed = 1;
                break;
            }
    }
    int nchunks = synth_forced_chunks(r0->len, chunk_bytes || !relayed ? chunk_bytes
                                                                       : SYNTH_NCCL_STEP_BYTES);
    int ti = mc_sched_add_tree(L->s, r0->piece, r0->off, r0->len, root, phase, nchunks);
    for (int i = first; i < last; i++)
        MC_CHECK_GOTO(mc_sched_add_edge(L->s, L->topo, ti, parent[i - first], L->runs[i].dst, err),
                      out, st);
out:
    free(parent);
    return st;
}

static mc_status_t emit_trees(lower_t *L, int phase, uint64_t chunk_bytes, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    merge_runs(L);
    qsort(L->runs, (size_t)L->nruns, sizeof(run_t), cmp_run_range);
    for (int i = 0; i < L->nruns;) {
        int j = i + 1;
        while (j < L->nruns && L->runs[j].piece == L->runs[i].piece &&
               L->runs[j].src == L->runs[i].src && L->runs[j].off == L->runs[i].off &&
               L->runs[j].len == L->runs[i].len)
            j++;
        MC_CHECK_GOTO(add_tree(L, i, j, phase, chunk_bytes, err), out, st);
        i = j;
    }
out:
    return st;
}

static mc_status_t lower_step(lower_t *L, int step, int phase, uint64_t chunk_bytes,
                              coll_stats_t *stats, int *used, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    step_ctx_t x = {&L->spans[step * L->ndev], &L->spans[(step + 1) * L->ndev],
                    L->p->steps[step].group, 0, NULL, 0, 0, 0};
    memset(L->load, 0, sizeof(uint64_t) * (size_t)L->ndev);
    L->nruns = 0;
    for (x.r = 0; x.r < L->ndev && !x.broken; x.r++)
        for_cells(L, &x.to[x.r], receive_cell, &x);
    if (x.broken) {
        st = mc_err_set(err, MC_ERR_INTERNAL, "strategy %s: step %d (%s) of tensor %s needs a "
                        "cell no device holds", L->s->strategy, step + 1,
                        coll_kind_name(L->p->steps[step].kind),
                        L->s->task->tensors[L->tensor].name);
        goto out;
    }
    if (L->nruns > COLL_MAX_RUNS) {
        st = mc_err_set(err, MC_ERR_UNSUPPORTED, "strategy %s: step %d (%s) of tensor %s cuts its "
                        "pieces into %d byte ranges; expected at most %d", L->s->strategy,
                        step + 1, coll_kind_name(L->p->steps[step].kind),
                        L->s->task->tensors[L->tensor].name, L->nruns, COLL_MAX_RUNS);
        goto out;
    }
    for (int i = 0; i < x.ngot; i += 2)
        L->have[x.got[i] * L->ndev + x.got[i + 1]] = 1;
    if (stats)
        for (int i = 0; i < L->nruns; i++)
            for (int q = 0; q < L->ndev; q++)
                if (L->devices[q] == L->runs[i].dst)
                    stats->recv_bytes[q] += L->runs[i].len;
    *used = L->nruns > 0;
    if (*used)
        MC_CHECK_GOTO(emit_trees(L, phase, chunk_bytes, err), out, st);
out:
    free(x.got);
    return st;
}

static void fill_live_peak(const lower_t *L, coll_stats_t *stats)
{
    const mc_layout_t *l0 = &L->s->task->tensors[L->tensor].src;
    for (int q = 0; q < L->ndev; q++)
        for (int l = 0; l < L->nlayouts; l++) {
            mc_box_t tile;
            mc_layout_tile(L->p->space, coll_prog_layout(L->p, l), L->devices[q], &tile);
            uint64_t b = mc_box_elems(&tile, L->nd) * (uint64_t)mc_dtype_size(l0->dtype);
            if (b > stats->live_peak_bytes[q])
                stats->live_peak_bytes[q] = b;
        }
}

void coll_stats_free(coll_stats_t *st)
{
    free(st->recv_bytes);
    free(st->live_peak_bytes);
    st->recv_bytes = st->live_peak_bytes = NULL;
}

mc_status_t coll_lower(mc_sched_t *s, const mc_topo_t *topo, int t, const coll_prog_t *p,
                       int first_phase, uint64_t chunk_bytes, coll_stats_t *stats,
                       mc_err_t *err)
{
    mc_status_t st = MC_OK;
    const mc_mesh_t *m = &p->space->meshes[0];
    lower_t L = {.p = p, .topo = topo, .s = s, .tensor = t, .nd = p->src.ndims,
                 .ndev = m->ndevices, .nlayouts = p->nsteps + 1, .devices = m->devices};
    if (stats) {
        stats->nphases = 0;
        stats->recv_bytes = mc_xcalloc((size_t)L.ndev, sizeof(uint64_t));
        stats->live_peak_bytes = mc_xcalloc((size_t)L.ndev, sizeof(uint64_t));
    }
    MC_CHECK_GOTO(build_cells(&L, err), out, st);
    init_state(&L);
    int phase = first_phase;
    for (int i = 0; i < p->nsteps; i++) {
        int used = 0;
        MC_CHECK_GOTO(lower_step(&L, i, phase, chunk_bytes, stats, &used, err), out, st);
        phase += used;
    }
    if (stats) {
        stats->nphases = phase - first_phase;
        fill_live_peak(&L, stats);
    }
out:
    for (int d = 0; d < L.nd; d++)
        free(L.cut[d]);
    free(L.spans);
    free(L.cell_piece);
    free(L.have);
    free(L.load);
    free(L.runs);
    return st;
}
