/* The checks of DESIGN.md section 4, one line per violation: every tree is well formed (its range
 * lies in its piece, each edge's parent is already in the tree, each route is a path of existing
 * links from the parent to the child); a tree's root holds its range when its phase starts; every
 * destination receives every byte of its pieces exactly once; the trees of one phase stay within
 * link capacity; memory stays within the stated bound. A schedule read with its instances compact
 * is checked without expanding them where sched_compact.c proves that the expansion would pass. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched_internal.h"

typedef struct vctx {
    const mc_sched_t *s;
    const mc_topo_t *topo;
    mc_buf_t *out;
    int n;
} vctx_t;

__attribute__((format(printf, 2, 3))) static void violation(vctx_t *v, const char *fmt, ...)
{
    v->n++;
    if (!v->out)
        return;
    char line[2048]; /* node names are short; a longer line would only lose its tail */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    mc_buf_printf(v->out, "%s\n", line);
}

static const char *node_name(const mc_topo_t *t, int node)
{
    return t->nodes[node].name;
}

/* A received range: GPU gpu gets [lo, hi) of piece in phase by tree. */
typedef struct recv_rec {
    int piece, gpu;
    uint64_t lo, hi;
    int phase, tree;
} recv_rec_t;

static int cmp_recv(const void *a, const void *b)
{
    const recv_rec_t *x = a, *y = b;
    if (x->piece != y->piece)
        return x->piece < y->piece ? -1 : 1;
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    if (x->phase != y->phase)
        return x->phase < y->phase ? -1 : 1;
    return (x->tree > y->tree) - (x->tree < y->tree);
}

/* Sorts the records into cmp_recv's order: two stable counting passes (by GPU, then by piece)
 * group them by (piece, gpu), and only each group, a destination's few ranges of one piece, is
 * sorted by comparison (a sort of every record by comparison was a quarter of validate's time on
 * the 8192-GPU schedule). Records are distinct or equal in every field, so the order is cmp_recv's
 * whatever the passes. */
static void sort_recv(recv_rec_t *r, int n, int npieces, int ngpus)
{
    recv_rec_t *tmp = mc_xmalloc(sizeof *tmp * ((size_t)n + 1));
    int nb = (npieces > ngpus ? npieces : ngpus) + 1;
    int *at = mc_xmalloc(sizeof(int) * (size_t)nb);
    for (int pass = 0; pass < 2; pass++) {
        recv_rec_t *from = pass ? tmp : r, *to = pass ? r : tmp;
        memset(at, 0, sizeof(int) * (size_t)nb);
        for (int i = 0; i < n; i++)
            at[(pass ? from[i].piece : from[i].gpu) + 1]++;
        for (int b = 1; b < nb; b++)
            at[b] += at[b - 1];
        for (int i = 0; i < n; i++)
            to[at[pass ? from[i].piece : from[i].gpu]++] = from[i];
    }
    for (int i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && r[j].piece == r[i].piece && r[j].gpu == r[i].gpu; j++)
            ;
        mc_sort(r + i, (size_t)(j - i), sizeof *r, cmp_recv);
    }
    free(at);
    free(tmp);
}

/* The first record of (piece, gpu) in the sorted records, or n. */
static int recv_first(const recv_rec_t *r, int n, int piece, int gpu)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (r[mid].piece < piece || (r[mid].piece == piece && r[mid].gpu < gpu))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int is_holder(const mc_piece_t *p, int gpu)
{
    for (int i = 0; i < p->nholders; i++)
        if (p->holders[i] == gpu)
            return 1;
    return 0;
}

static void check_route(vctx_t *v, int ti, const mc_tree_edge_t *e)
{
    const mc_topo_t *t = v->topo;
    if (e->nlinks < 1) {
        violation(v, "tree %d, edge %d -> %d: the route has no links", ti, e->parent, e->child);
        return;
    }
    int at = t->gpu_node[e->parent];
    for (int j = 0; j < e->nlinks; j++) {
        int l = e->links[j];
        if (l < 0 || l >= t->nlinks)
            return; /* reported when the file was read */
        if (t->links[l].src != at) {
            violation(v, "tree %d, edge %d -> %d: the route jumps from %s to %s", ti, e->parent,
                      e->child, node_name(t, at), node_name(t, t->links[l].src));
            return;
        }
        at = t->links[l].dst;
    }
    if (at != t->gpu_node[e->child])
        violation(v, "tree %d, edge %d -> %d: the route ends at %s, not at GPU %d (%s)", ti,
                  e->parent, e->child, node_name(t, at), e->child,
                  node_name(t, t->gpu_node[e->child]));
}

/* Range, chunking and the shape of tree ti, and its routes unless it is an instance's tree rebuilt
 * without them (a relabeling keeps a route a path from parent to child); returns 0 when the tree
 * is too broken to go on. */
static int check_tree_shape(vctx_t *v, int ti, const mc_tree_t *tr, char *in_tree)
{
    const mc_task_t *task = v->s->task;
    int g = v->topo->ngpus;
    if (tr->piece < 0 || tr->piece >= task->npieces) {
        violation(v, "tree %d: piece %d does not exist (the task has %d)", ti, tr->piece,
                  task->npieces);
        return 0;
    }
    if (tr->root < 0 || tr->root >= g || tr->phase < 0) {
        violation(v, "tree %d: root GPU %d or phase %d is out of range", ti, tr->root, tr->phase);
        return 0;
    }
    const mc_piece_t *p = &task->pieces[tr->piece];
    if (tr->bytes == 0 || tr->offset > p->bytes || tr->bytes > p->bytes - tr->offset) {
        violation(v, "tree %d: %" PRIu64 " bytes from offset %" PRIu64 " are not inside piece %d's %"
                  PRIu64 " bytes", ti, tr->bytes, tr->offset, tr->piece, p->bytes);
        return 0;
    }
    if (!mc_tree_chunks_valid(tr))
        violation(v, "tree %d: %" PRIu64 " bytes cannot be cut into %d non-empty chunks%s", ti,
                  tr->bytes, tr->nchunks, tr->ramp ? " of its ramp" : "");
    in_tree[tr->root] = 1;
    for (int e = 0; e < tr->nedges; e++) {
        const mc_tree_edge_t *ed = &tr->edges[e];
        if (ed->parent < 0 || ed->parent >= g || ed->child < 0 || ed->child >= g) {
            violation(v, "tree %d, edge %d -> %d: no such GPU", ti, ed->parent, ed->child);
            continue;
        }
        if (!in_tree[ed->parent])
            violation(v, "tree %d, edge %d -> %d: GPU %d is not in the tree yet (edges must come "
                      "after the edge that reaches their parent)", ti, ed->parent, ed->child,
                      ed->parent);
        if (in_tree[ed->child])
            violation(v, "tree %d, edge %d -> %d: GPU %d is already in the tree", ti, ed->parent,
                      ed->child, ed->child);
        in_tree[ed->child] = 1;
        if (ti < v->s->ntrees)
            check_route(v, ti, ed);
    }
    in_tree[tr->root] = 0;
    for (int e = 0; e < tr->nedges; e++)
        if (tr->edges[e].child >= 0 && tr->edges[e].child < g)
            in_tree[tr->edges[e].child] = 0;
    return 1;
}

/* Does gpu hold [lo, hi) of piece before phase starts? */
static int root_holds(const recv_rec_t *r, int n, const mc_piece_t *p, int piece, int gpu,
                      uint64_t lo, uint64_t hi, int phase)
{
    if (is_holder(p, gpu))
        return 1;
    uint64_t cur = lo;
    for (int i = recv_first(r, n, piece, gpu); i < n && r[i].piece == piece && r[i].gpu == gpu; i++)
        if (r[i].phase < phase && r[i].lo <= cur && r[i].hi > cur)
            cur = r[i].hi;
    return cur >= hi;
}

/* Every destination of every piece gets each byte exactly once. */
static void check_coverage(vctx_t *v, const recv_rec_t *r, int n)
{
    const mc_task_t *task = v->s->task;
    for (int pi = 0; pi < task->npieces; pi++) {
        const mc_piece_t *p = &task->pieces[pi];
        for (int d = 0; d < p->ndests; d++) {
            uint64_t cur = 0;
            int i = recv_first(r, n, pi, p->dests[d]);
            for (; i < n && r[i].piece == pi && r[i].gpu == p->dests[d]; i++) {
                if (r[i].lo > cur)
                    violation(v, "piece %d: GPU %d never receives bytes [%" PRIu64 ", %" PRIu64 ")",
                              pi, p->dests[d], cur, r[i].lo);
                else if (r[i].lo < cur)
                    violation(v, "piece %d: GPU %d receives bytes [%" PRIu64 ", %" PRIu64
                              ") more than once (again in tree %d)", pi, p->dests[d], r[i].lo,
                              r[i].hi < cur ? r[i].hi : cur, r[i].tree);
                if (r[i].hi > cur)
                    cur = r[i].hi;
            }
            if (cur < p->bytes)
                violation(v, "piece %d: GPU %d never receives bytes [%" PRIu64 ", %" PRIu64 ")", pi,
                          p->dests[d], cur, p->bytes);
        }
    }
}

/* A link's use by the trees of the phase being checked: a tree crossing it k times loads it k
 * times its rate. */
typedef struct link_use {
    double load;
    int ntrees, first, last, unrated; /* ntrees 0: unused in this phase */
} link_use_t;

/* A tree and its phase, to visit trees in order of phase, then index. */
typedef struct phase_tree {
    int phase, tree;
} phase_tree_t;

static int cmp_phase(const void *a, const void *b)
{
    const phase_tree_t *x = a, *y = b;
    if (x->phase != y->phase)
        return x->phase < y->phase ? -1 : 1;
    return (x->tree > y->tree) - (x->tree < y->tree);
}

/* Trees of one phase must not share a link unless they all state rates that fit. Phase by phase,
 * the links the phase's trees cross add up their rates (trees in index order), and only the links
 * used are looked at and reset: linear in the crossings (a sort of every crossing was a third of
 * validate's time on the 8192-GPU schedule, and as much memory as the edges). */
static void check_capacity(vctx_t *v)
{
    const mc_sched_t *s = v->s;
    const mc_topo_t *t = v->topo;
    link_use_t *use = mc_xcalloc((size_t)t->nlinks + 1, sizeof *use);
    int *used = mc_xmalloc(sizeof(int) * ((size_t)t->nlinks + 1));
    phase_tree_t *order = mc_xmalloc(sizeof *order * ((size_t)s->ntrees + 1));
    for (int i = 0; i < s->ntrees; i++)
        order[i] = (phase_tree_t){s->trees[i].phase, i};
    mc_sort(order, (size_t)s->ntrees, sizeof *order, cmp_phase);
    for (int i = 0, j; i < s->ntrees; i = j) {
        int phase = order[i].phase, nused = 0;
        for (j = i; j < s->ntrees && order[j].phase == phase; j++) {
            int ti = order[j].tree;
            const mc_tree_t *tr = &s->trees[ti];
            for (int e = 0; e < tr->nedges; e++)
                for (int k = 0; k < tr->edges[e].nlinks; k++) {
                    int l = tr->edges[e].links[k];
                    if (l < 0 || l >= t->nlinks)
                        continue;
                    link_use_t *u = &use[l];
                    if (!u->ntrees) {
                        used[nused++] = l;
                        *u = (link_use_t){0, 0, ti, -1, -1};
                    }
                    if (u->last != ti)
                        u->ntrees++;
                    u->last = ti;
                    u->load += tr->rate;
                    if (!(tr->rate > 0) && u->unrated < 0)
                        u->unrated = ti;
                }
        }
        mc_sort_ints(used, (size_t)nused);
        for (int k = 0; k < nused; k++) {
            link_use_t *u = &use[used[k]];
            const mc_link_t *l = &t->links[used[k]];
            if (u->ntrees > 1 && u->unrated >= 0)
                violation(v, "phase %d: link %s -> %s is shared by %d trees and tree %d states no "
                          "rate (trees %d and %d use it)", phase, node_name(t, l->src),
                          node_name(t, l->dst), u->ntrees, u->unrated, u->first, u->last);
            else if (u->ntrees > 1 && u->load > l->bw * (1 + 1e-9))
                violation(v, "phase %d: link %s -> %s is planned at %.6g GB/s, above its %.6g GB/s",
                          phase, node_name(t, l->src), node_name(t, l->dst), u->load / 1e9,
                          l->bw / 1e9);
            u->ntrees = 0;
        }
    }
    free(order);
    free(used);
    free(use);
}

/* relay: per GPU, the bytes it receives only to relay. */
static void check_memory(vctx_t *v, const uint64_t *relay)
{
    if (!v->s->mem_limit)
        return;
    int g = v->topo->ngpus;
    for (int gpu = 0; gpu < g; gpu++) {
        uint64_t peak = mc_sched_shard_mem(v->s, gpu) + relay[gpu];
        if (peak > v->s->mem_limit)
            violation(v, "GPU %d: peak memory %" PRIu64 " bytes is above the stated bound of %" PRIu64,
                      gpu, peak, v->s->mem_limit);
    }
}

/* Walks the trees as the expanded schedule numbers them: the listed ones, then each compact
 * instance's trees rebuilt on its GPUs (without routes) into scratch. */
typedef struct cursor {
    int ti, inst, j;
    mc_tree_t scratch;
    mc_tree_edge_t *edges;
    int ecap;
} cursor_t;

static const mc_tree_t *next_tree(const vctx_t *v, cursor_t *c)
{
    const mc_sched_t *s = v->s;
    int ti = c->ti++;
    if (ti < s->ntrees)
        return &s->trees[ti];
    if (c->inst < s->ninst && c->j == s->tmpl[s->inst[c->inst].tmpl].ntrees) {
        c->inst++;
        c->j = 0;
    }
    if (c->inst >= s->ninst)
        return NULL;
    const mc_sched_tmpl_t *t = &s->tmpl[s->inst[c->inst].tmpl];
    MC_GROW(c->edges, c->ecap, s->trees[t->trees[c->j]].nedges + 1);
    mc_sched_inst_tree(s, v->topo, c->inst, c->j++, &c->scratch, c->edges);
    return &c->scratch;
}

/* Every check, over the listed trees and the instances' trees; link capacity over the listed trees
 * only (an instance's links are its template's, when mc_sched_sym_relabels says so). */
static int validate_trees(const mc_sched_t *s, const mc_topo_t *topo, mc_buf_t *out)
{
    vctx_t v = {.s = s, .topo = topo, .out = out};
    if (!s->task || !s->task->pieces) {
        violation(&v, "the schedule has no split task");
        return v.n;
    }
    for (int i = 0; i < s->nnotes; i++)
        violation(&v, "%s", s->notes[i]);
    int ntrees = s->ntrees + s->inst_trees;
    char *in_tree = mc_xcalloc((size_t)topo->ngpus, 1);
    char *ok = mc_xcalloc((size_t)ntrees + 1, 1);
    uint64_t *relay = mc_xcalloc((size_t)topo->ngpus + 1, sizeof(uint64_t));
    recv_rec_t *r = NULL;
    int n = 0, cap = 0;
    cursor_t c = {0};
    for (const mc_tree_t *tr; (tr = next_tree(&v, &c));) {
        int ti = c.ti - 1;
        ok[ti] = (char)check_tree_shape(&v, ti, tr, in_tree);
        for (int e = 0; e < tr->nedges; e++) {
            int child = tr->edges[e].child;
            if (child < 0 || child >= topo->ngpus)
                continue;
            relay[child] += mc_sched_relayed(s, tr, child);
            if (!ok[ti])
                continue;
            MC_GROW(r, cap, n + 1);
            r[n++] = (recv_rec_t){tr->piece, child, tr->offset, tr->offset + tr->bytes,
                                  tr->phase, ti};
        }
    }
    sort_recv(r, n, s->task->npieces, topo->ngpus);
    c = (cursor_t){.edges = c.edges, .ecap = c.ecap};
    for (const mc_tree_t *tr; (tr = next_tree(&v, &c));) {
        int ti = c.ti - 1;
        if (ok[ti] && !root_holds(r, n, &s->task->pieces[tr->piece], tr->piece, tr->root,
                                  tr->offset, tr->offset + tr->bytes, tr->phase))
            violation(&v, "tree %d: root GPU %d does not hold bytes [%" PRIu64 ", %" PRIu64
                      ") of piece %d when phase %d starts", ti, tr->root, tr->offset,
                      tr->offset + tr->bytes, tr->piece, tr->phase);
    }
    check_coverage(&v, r, n);
    check_capacity(&v);
    check_memory(&v, relay);
    free(c.edges);
    free(r);
    free(relay);
    free(ok);
    free(in_tree);
    return v.n;
}

int mc_sched_validate(const mc_sched_t *s, const mc_topo_t *topo, mc_buf_t *out)
{
    if (!s->ninst)
        return validate_trees(s, topo, out);
    if (validate_trees(s, topo, NULL) == 0 && mc_sched_sym_relabels(s, topo))
        return 0;
    mc_sched_t *x = mc_sched_sym_expanded(s, topo);
    int n = validate_trees(x, topo, out);
    mc_sched_free(x);
    return n;
}
