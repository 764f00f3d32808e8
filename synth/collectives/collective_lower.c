/* Lowering a walked collective program to schedule trees (see coll_lower in
 * collective_internal.h). The runtime lets a tree's root be only a holder or a destination of the
 * piece and keeps staging only inside a phase, so bytes a device receives just to pass on (the
 * first all-to-all of two) are forwarded in the same tree, pipelined chunk by chunk, rather than
 * from a new tree in a later phase. The memory accounted for them is the same: 'validate' counts
 * every byte a device receives without needing it. */
#include <stdlib.h>
#include <string.h>

#include "synth/collectives/collective_internal.h"
#include "synth/synth_internal.h"
#include "topo/topo_chain.h"
#include "topo/topo_rings.h"

/* Most byte ranges one program may produce: beyond this the cells cut pieces too finely for
 * one tree per range. */
#define COLL_MAX_RUNS (1 << 20)

typedef struct cedge {
    int tree, seq, step;
    int from;           /* the sender in the walk */
    int parent, child;  /* global GPU ids; parent is from unless the host fan-out moved it */
} cedge_t;

/* The tree of one cell from one root. */
typedef struct ctree {
    int64_t cell;
    int piece, step, root;
    int first, nedges;  /* its edges in the sorted edge array */
    int sig;            /* trees with the same piece, step, root and edges share it */
} ctree_t;

typedef struct crun {
    int sig;
    uint64_t off, len;
} crun_t;

typedef struct clower {
    const coll_walk_t *w;
    const mc_task_t *task;
    const mc_topo_t *topo;
    const mc_synth_opts_t *opts;
    mc_topo_ring_cache_t *rings; /* NCCL's searched rings, per group of an all-gather */
    ctree_t *trees;
    int ntrees, tree_cap;
    cedge_t *edges;
    int nedges, edge_cap;
    crun_t *runs;
    int nruns, run_cap;
} clower_t;

static int is_dest(const mc_piece_t *p, int gpu)
{
    for (int i = 0; i < p->ndests; i++)
        if (p->dests[i] == gpu)
            return 1;
    return 0;
}

static int is_holder(const mc_piece_t *p, int gpu)
{
    for (int i = 0; i < p->nholders; i++)
        if (p->holders[i] == gpu)
            return 1;
    return 0;
}

/* A tree per cell, root and step: an edge from a device that holds the cell only to pass it on
 * joins the tree that brought it there. via[] gives, per cell and position, the tree a relay
 * sits in, or the tree a holder or destination last rooted. */
static void build_trees(clower_t *L)
{
    const coll_walk_t *w = L->w;
    int *via = mc_xmalloc(sizeof(int) * (size_t)(w->ncells * w->ndev));
    for (int64_t i = 0; i < w->ncells * w->ndev; i++)
        via[i] = -1;
    for (int i = 0; i < w->nxf; i++) {
        const coll_xfer_t *x = &w->xf[i];
        int piece = w->cell_piece[x->cell], from = w->devices[x->from], to = w->devices[x->to];
        const mc_piece_t *pc = &L->task->pieces[piece];
        int *t = &via[x->cell * w->ndev + x->from];
        int relay = !is_holder(pc, from) && !is_dest(pc, from);
        if (*t < 0 || (!relay && L->trees[*t].step != x->step)) {
            MC_GROW(L->trees, L->tree_cap, L->ntrees + 1);
            *t = L->ntrees++;
            L->trees[*t] = (ctree_t){x->cell, piece, x->step, from, 0, 0, 0};
        }
        MC_GROW(L->edges, L->edge_cap, L->nedges + 1);
        L->edges[L->nedges] = (cedge_t){*t, L->nedges, x->step, from, from, to};
        L->nedges++;
        if (!is_dest(pc, to))
            via[x->cell * w->ndev + x->to] = *t;
    }
    free(via);
}

static int cmp_edge(const void *a, const void *b)
{
    const cedge_t *x = a, *y = b;
    if (x->tree != y->tree)
        return x->tree < y->tree ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int gpu_dev(const mc_topo_t *topo, int gpu)
{
    return topo->nodes[topo->gpu_node[gpu]].dev;
}

/* Children a sender reaches in one step on another host hang below one of them there, the one on
 * the sender's rail when there is one, so the network carries the bytes once per host. That one
 * moves first among its siblings, as a parent must come before its children. */
static void fan_out(clower_t *L, const ctree_t *t)
{
    cedge_t *e = &L->edges[t->first];
    for (int i = 0; i < t->nedges; i++) {
        int h = mc_topo_gpu_host(L->topo, e[i].child), lead = i;
        if (h == mc_topo_gpu_host(L->topo, e[i].from) || e[i].parent != e[i].from)
            continue;
        for (int k = i; k < t->nedges; k++)
            if (e[k].from == e[i].from && e[k].step == e[i].step &&
                mc_topo_gpu_host(L->topo, e[k].child) == h &&
                gpu_dev(L->topo, e[k].child) == gpu_dev(L->topo, e[i].from))
                lead = k;
        int c = e[lead].child;
        e[lead].child = e[i].child;
        e[i].child = c;
        for (int k = i + 1; k < t->nedges; k++)
            if (e[k].from == e[i].from && e[k].step == e[i].step &&
                mc_topo_gpu_host(L->topo, e[k].child) == h)
                e[k].parent = c;
    }
}

static const clower_t *sort_ctx;

static int cmp_shape(const void *a, const void *b)
{
    const ctree_t *x = &sort_ctx->trees[*(const int *)a], *y = &sort_ctx->trees[*(const int *)b];
    int kx[4] = {x->piece, x->step, x->root, x->nedges}, ky[4] = {y->piece, y->step, y->root,
                                                                  y->nedges};
    for (int i = 0; i < 4; i++)
        if (kx[i] != ky[i])
            return kx[i] < ky[i] ? -1 : 1;
    for (int i = 0; i < x->nedges; i++) {
        const cedge_t *ex = &sort_ctx->edges[x->first + i], *ey = &sort_ctx->edges[y->first + i];
        int ax[3] = {ex->step, ex->parent, ex->child}, ay[3] = {ey->step, ey->parent, ey->child};
        for (int k = 0; k < 3; k++)
            if (ax[k] != ay[k])
                return ax[k] < ay[k] ? -1 : 1;
    }
    return 0;
}

/* Numbers the trees' shapes; returns the index of one tree of each shape (caller frees). */
static int *assign_sigs(clower_t *L, int *nsigs)
{
    int *order = mc_xmalloc(sizeof(int) * (size_t)(L->ntrees + 1));
    int *rep = mc_xmalloc(sizeof(int) * (size_t)(L->ntrees + 1));
    for (int i = 0; i < L->ntrees; i++)
        order[i] = i;
    sort_ctx = L;
    mc_sort(order, (size_t)L->ntrees, sizeof(int), cmp_shape);
    *nsigs = 0;
    for (int i = 0; i < L->ntrees; i++) {
        if (!i || cmp_shape(&order[i - 1], &order[i]))
            rep[(*nsigs)++] = order[i];
        L->trees[order[i]].sig = *nsigs - 1;
    }
    free(order);
    return rep;
}

typedef struct run_ctx {
    clower_t *L;
    int sig;
} run_ctx_t;

static void add_run(void *arg, uint64_t off, uint64_t len)
{
    run_ctx_t *c = arg;
    MC_GROW(c->L->runs, c->L->run_cap, c->L->nruns + 1);
    c->L->runs[c->L->nruns++] = (crun_t){c->sig, off, len};
}

/* The byte ranges of a cell inside its piece. */
static void add_runs(clower_t *L, const ctree_t *t)
{
    const mc_piece_t *pc = &L->task->pieces[t->piece];
    mc_box_t cb;
    run_ctx_t c = {L, t->sig};
    coll_walk_cell_box(L->w, t->cell, &cb);
    synth_box_runs(&pc->box, &cb, L->w->nd,
                   (uint64_t)mc_dtype_size(L->task->tensors[pc->tensor].src.dtype), add_run, &c);
}

static int cmp_run(const void *a, const void *b)
{
    const crun_t *x = a, *y = b;
    if (x->sig != y->sig)
        return x->sig < y->sig ? -1 : 1;
    return (x->off > y->off) - (x->off < y->off);
}

/* Merges ranges of one shape that continue each other. */
static void merge_runs(clower_t *L)
{
    mc_sort(L->runs, (size_t)L->nruns, sizeof(crun_t), cmp_run);
    int k = 0;
    for (int i = 0; i < L->nruns; i++) {
        crun_t *prev = k ? &L->runs[k - 1] : NULL;
        if (prev && prev->sig == L->runs[i].sig && prev->off + prev->len == L->runs[i].off)
            prev->len += L->runs[i].len;
        else
            L->runs[k++] = L->runs[i];
    }
    L->nruns = k;
}

/* Whether a tree forwards: a device passes on what it received, by the walk (a relay of the
 * program, when by_walk) or by the lowering too (fan_out's hosts). */
static int forwards(const clower_t *L, const ctree_t *t, int by_walk)
{
    for (int i = 0; i < t->nedges; i++) {
        const cedge_t *e = &L->edges[t->first + i];
        if ((by_walk ? e->from : e->parent) != t->root)
            return 1;
    }
    return 0;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static mc_status_t emit_run(clower_t *L, mc_sched_t *s, const crun_t *r, const ctree_t *t,
                            int phase, mc_err_t *err)
{
    const cedge_t *e = &L->edges[t->first];
    uint64_t chunk_bytes = L->opts->chunk_bytes;
    /* A tree that forwards pipelines in NCCL-sized chunks; a direct send is one message. */
    int nchunks = synth_forced_chunks(r->len, chunk_bytes || !forwards(L, t, 0) ? chunk_bytes
                                                                            : MC_NCCL_STEP_BYTES);
    int ti = mc_sched_add_tree(s, t->piece, r->off, r->len, t->root, phase, nchunks);
    for (int i = 0; i < t->nedges; i++) {
        mc_status_t st = mc_sched_add_edge(s, L->topo, ti, e[i].parent, e[i].child, err);
        if (st != MC_OK)
            return st;
    }
    return MC_OK;
}

/* Whether an all-gather's block goes round NCCL's rings (emit_ring): its peers share the root's
 * host and one of them is neither one link nor one NVSwitch hop away. Checked before any ring
 * search, from the routes' cache. */
static int ring_worth(const clower_t *L, const ctree_t *t)
{
    const mc_topo_t *topo = L->topo;
    int far = 0;
    for (int i = 0; i < t->nedges; i++) {
        int child = L->edges[t->first + i].child;
        if (mc_topo_gpu_host(topo, child) != mc_topo_gpu_host(topo, t->root))
            return 0;
        int nlinks, links[MC_ROUTE_MAX_LINKS], via;
        mc_err_t ignored = {0};
        if (mc_topo_route_links(topo, t->root, child, &nlinks, links, &via, &ignored) != MC_OK)
            return 0;
        int mid = topo->links[links[0]].dst;
        far |= nlinks > 2 || (nlinks == 2 && topo->nodes[mid].kind != MC_NODE_NVS);
    }
    return far;
}

/* A block of an all-gather step inside one host where some peer is not one link away (ring_worth),
 * as NCCL's ring all-gather moves it: round the rings NCCL's search finds
 * over the group (the root and the peers it sends to, in rank order: the same rings for every
 * block of the step), pipelined in NCCL's steps, as nccl-ring runs them (topo/topo_rings.h).
 * NCCL splits a rank's block over the channels; here the block is the runs r[0..nruns) of one
 * tree's shape (byte ranges of the piece, strided where the tile is): with fewer runs than
 * channels each run is split evenly over them, else the runs are dealt to the channels in turn,
 * whole. Sent straight from the root to every peer, a block crossed whatever links join the root
 * to peers it has no direct link to (QPI on a DGX-1: 37.6 times the bound for an all-gather that
 * NCCL runs over NVLink rings). Elsewhere the straight sends stay (emit_run): where every peer is
 * one link or one NVSwitch hop away they move what a ring moves through each GPU's links (NVLS,
 * on an NVSwitch, less), across hosts each host's share crosses the network once (fan_out), as
 * NCCL's rings carry it, and so they do where NCCL's search finds no ring. sharing: the blocks
 * the step moves at once. */
static mc_status_t emit_ring(clower_t *L, mc_sched_t *s, const crun_t *r, int nruns,
                             const ctree_t *t, int phase, int sharing, mc_err_t *err)
{
    const mc_task_t *task = L->task;
    const mc_piece_t *pc = &task->pieces[t->piece];
    int n = t->nedges + 1, *buf = mc_xmalloc(sizeof(int) * (size_t)(2 * n + L->topo->ngpus));
    int *group = buf, *peers = buf + n, *order = buf + 2 * n;
    group[0] = t->root;
    for (int i = 0; i < t->nedges; i++)
        group[i + 1] = peers[i] = L->edges[t->first + i].child;
    mc_sort(group, (size_t)n, sizeof(int), cmp_int);
    mc_topo_rings_t *rings = NULL;
    int *chains = NULL, *len = NULL;
    mc_status_t st = mc_topo_rings_new(L->topo, group, n, -1, L->rings, &rings, err);
    if (st != MC_OK)
        goto out;
    if (!rings->found[0]->nrings) {
        for (int i = 0; i < nruns && st == MC_OK; i++)
            st = emit_run(L, s, &r[i], t, phase, err);
        goto free_rings;
    }
    int channels = mc_topo_rings_channels(L->topo, rings, t->root);
    int sharers = mc_topo_rings_sharing(rings, channels) * sharing;
    chains = mc_xmalloc(sizeof(int) * (size_t)channels * (size_t)n);
    len = mc_xmalloc(sizeof(int) * (size_t)channels);
    for (int c = 0; c < channels; c++)
        len[c] = mc_topo_rings_chain(rings, t->root, peers, t->nedges, c, order, chains + c * n);
    uint64_t esize = (uint64_t)mc_dtype_size(task->tensors[pc->tensor].src.dtype);
    for (int i = 0; i < nruns && st == MC_OK; i++) {
        int whole = nruns >= channels, parts = whole ? 1 : channels;
        uint64_t off = r[i].off;
        for (int k = 0; k < parts && st == MC_OK; k++) {
            int c = whole ? i % channels : k;
            uint64_t part = whole ? r[i].len : synth_even_part(r[i].len, esize, channels, k);
            if (part)
                st = synth_add_chain(s, L->topo, t->piece, off, part, phase, chains + c * n,
                                     len[c], L->opts->chunk_bytes, sharers,
                                     synth_inflight(L->opts), err);
            off += part;
        }
    }
free_rings:
    mc_topo_rings_free(rings);
out:
    free(chains);
    free(len);
    free(buf);
    return st;
}

void coll_stats_free(coll_stats_t *st)
{
    free(st->recv_bytes);
    free(st->live_peak_bytes);
    st->recv_bytes = st->live_peak_bytes = NULL;
}

/* Phase of each step that roots a tree: consecutive from first_phase. */
static int number_phases(const clower_t *L, int nsteps, int first_phase, int *phase_of)
{
    int n = 0;
    for (int k = 0; k < nsteps; k++) {
        int used = 0;
        for (int i = 0; i < L->ntrees && !used; i++)
            used = L->trees[i].step == k;
        phase_of[k] = first_phase + n;
        n += used;
    }
    return n;
}

/* The walk's transfers as schedule trees. */
static mc_status_t emit_trees(clower_t *L, mc_sched_t *s, int t, const coll_prog_t *p,
                              const int *phase_of, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int *rep = NULL, nsigs = 0, moving[COLL_MAX_STEPS] = {0};
    if (!L->nedges) /* only local slices */
        return MC_OK;
    mc_sort(L->edges, (size_t)L->nedges, sizeof(cedge_t), cmp_edge);
    for (int i = L->nedges - 1; i >= 0; i--) {
        L->trees[L->edges[i].tree].first = i;
        L->trees[L->edges[i].tree].nedges++;
    }
    for (int i = 0; i < L->ntrees; i++)
        fan_out(L, &L->trees[i]);
    rep = assign_sigs(L, &nsigs);
    for (int i = 0; i < L->ntrees; i++)
        add_runs(L, &L->trees[i]);
    if (L->nruns > COLL_MAX_RUNS) {
        st = mc_err_set(err, MC_ERR_UNSUPPORTED, "strategy %s: tensor %s's collectives cut its "
                        "pieces into %d byte ranges; expected at most %d", s->strategy,
                        s->task->tensors[t].name, L->nruns, COLL_MAX_RUNS);
        goto out;
    }
    merge_runs(L);
    for (int i = 0; i < L->nruns; i++) /* runs come by shape: count the shapes */
        moving[L->trees[rep[L->runs[i].sig]].step] += !i || L->runs[i].sig != L->runs[i - 1].sig;
    for (int i = 0, next; i < L->nruns; i = next) {
        const ctree_t *tr = &L->trees[rep[L->runs[i].sig]];
        next = i + 1;
        if (p->steps[tr->step].kind == COLL_ALLGATHER && !forwards(L, tr, 1) &&
            ring_worth(L, tr)) {
            while (next < L->nruns && L->runs[next].sig == L->runs[i].sig)
                next++;
            st = emit_ring(L, s, &L->runs[i], next - i, tr, phase_of[tr->step],
                           moving[tr->step], err);
        } else {
            st = emit_run(L, s, &L->runs[i], tr, phase_of[tr->step], err);
        }
        if (st != MC_OK)
            goto out;
    }
out:
    free(rep);
    return st;
}

mc_status_t coll_lower(mc_sched_t *s, const mc_topo_t *topo, int t, const coll_prog_t *p,
                       int first_phase, const mc_synth_opts_t *opts, coll_stats_t *stats,
                       mc_err_t *err)
{
    mc_status_t st = MC_OK;
    coll_walk_t w = {0};
    clower_t L = {.w = &w, .task = s->task, .topo = topo, .opts = opts,
                  .rings = mc_topo_ring_cache_new()};
    int phase_of[COLL_MAX_STEPS];
    MC_CHECK_GOTO(coll_walk(&w, s->task, t, p, topo, s->strategy, err), out, st);
    build_trees(&L);
    int nphases = number_phases(&L, p->nsteps, first_phase, phase_of);
    MC_CHECK_GOTO(emit_trees(&L, s, t, p, phase_of, err), out, st);
    if (stats) {
        stats->nphases = nphases;
        stats->recv_bytes = w.recv_bytes;
        stats->live_peak_bytes = w.live_peak_bytes;
        w.recv_bytes = w.live_peak_bytes = NULL;
    }
out:
    coll_walk_free(&w);
    mc_topo_ring_cache_free(L.rings);
    free(L.trees);
    free(L.edges);
    free(L.runs);
    return st;
}
