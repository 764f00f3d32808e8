/* Side trees on idle links (docs/synthesis.md, "Session 42: side trees on idle links"). A
 * winner can fill some links and leave others idle: NCCL's rings on the DGX-1 load every NVLink
 * and none of the PCIe routes between the GPUs that no NVLink joins. Each piece here gets one
 * more tree, the cheapest Steiner tree to its destinations under prices that grow steeply with
 * the winner's link loads (mc_steiner_tree), and a fraction of its bytes moves from its trees to
 * that one: the fraction, one for every piece whose side tree is cheaper than its trees, that
 * minimizes the busiest link's load at full bandwidth (the loads are linear in it, their maximum
 * convex). The winner's trees keep their shapes, chunk counts and channels; only their ranges
 * shrink. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

/* The GPUs a side tree may use are those of the winner's trees; past this many the all-pairs
 * cheapest paths (one Dijkstra per GPU over the complete graph) cost more than they gain. */
#define SIDE_GPUS_MAX 64
/* At most this much work over the pieces, each counted as its destinations and root times the
 * GPUs squared (about the most its Steiner tree and the local search after it cost): the 4,032
 * pieces of an uneven reshuffle over eight DGX-1 hosts (one destination each) count 33 M, and
 * their side trees took it from 1.125 to 1.047 of the bound for 0.15 s more synthesis. */
#define SIDE_WORK_MAX (1 << 28)
/* A link's price is its load over the busiest's to this power: near 1 on the busiest links,
 * near 0 on the idle ones. Over RCCL's 810 cases, 4 and 16 each lost more cases than they won
 * against 8 (18 and 16 slower, 12 and 14 faster). */
#define SIDE_PRICE_POWER 8
/* Added to every price, so that among idle routes the shorter is cheaper. */
#define SIDE_PRICE_EPS 0.01
/* The side trees are made only where they take the busiest link's load down by this fraction:
 * less is within what the trees' message overheads and pipeline fill give back. */
#define SIDE_GAIN 1e-3
/* Ranges are cut at multiples of this many bytes. */
#define SIDE_GRANULE 4096u
/* Steps of the golden-section search over the fraction: (0.618)^60 of the unit interval. */
#define SIDE_SEARCH_STEPS 60

/* What mc_sched_side works from: the winner, its trees by piece (piece p's are
 * tree[first[p] .. first[p + 1])), its link loads in seconds at full bandwidth, their prices,
 * and how the loads change per unit of the fraction (delta). */
typedef struct side_ctx {
    const mc_sched_t *s;
    const mc_topo_t *topo;
    int *first, *tree;
    double *load, *price, *delta;
} side_ctx_t;

/* One piece's side tree: its root and phase, its edges (parents first), and whether it is
 * taken (cheaper under the prices than the piece's own trees). */
typedef struct side {
    int root, phase, ne, taken;
    int *parent, *child;
} side_t;

/* Indexes s's trees by piece, sums the links' loads and prices them (side_ctx_t). */
static void ctx_init(side_ctx_t *c, const mc_sched_t *s, const mc_topo_t *topo)
{
    int np = s->task->npieces;
    *c = (side_ctx_t){.s = s, .topo = topo};
    c->first = mc_xcalloc((size_t)np + 2, sizeof(int));
    c->tree = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    for (int t = 0; t < s->ntrees; t++)
        c->first[s->trees[t].piece + 1]++;
    for (int p = 0; p < np; p++)
        c->first[p + 1] += c->first[p];
    int *at = mc_xmalloc(sizeof(int) * (size_t)(np + 1));
    memcpy(at, c->first, sizeof(int) * (size_t)np);
    for (int t = 0; t < s->ntrees; t++)
        c->tree[at[s->trees[t].piece]++] = t;
    free(at);
    c->load = mc_sched_link_loads(s, topo);
    c->price = mc_xcalloc((size_t)topo->nlinks + 1, sizeof(double));
    c->delta = mc_xcalloc((size_t)topo->nlinks + 1, sizeof(double));
    double most = 0;
    for (int l = 0; l < topo->nlinks; l++)
        most = c->load[l] > most ? c->load[l] : most;
    for (int l = 0; l < topo->nlinks && most > 0; l++)
        c->price[l] = pow(c->load[l] / most, SIDE_PRICE_POWER) + SIDE_PRICE_EPS;
}

static void ctx_free(side_ctx_t *c)
{
    free(c->first);
    free(c->tree);
    free(c->load);
    free(c->price);
    free(c->delta);
}

/* Whether piece p can take a side tree, with its root and phase into *sd: all its trees in one
 * phase, the largest rooted at a holder, and its range wide enough to cut. */
static int eligible(const side_ctx_t *c, int p, side_t *sd)
{
    const mc_piece_t *pc = &c->s->task->pieces[p];
    const mc_tree_t *largest = NULL;
    for (int i = c->first[p]; i < c->first[p + 1]; i++) {
        const mc_tree_t *tr = &c->s->trees[c->tree[i]];
        if (largest && tr->phase != largest->phase)
            return 0;
        if (!largest || tr->bytes > largest->bytes)
            largest = tr;
    }
    if (!largest || pc->ndests == 0 || pc->bytes < 2 * SIDE_GRANULE)
        return 0;
    for (int h = 0; h < pc->nholders; h++)
        if (pc->holders[h] == largest->root) {
            sd->root = largest->root;
            sd->phase = largest->phase;
            return 1;
        }
    return 0;
}

/* The GPUs of s's trees (roots and edge ends), ascending, into gpus; their count. */
static int tree_gpus(const mc_sched_t *s, const mc_topo_t *topo, int *gpus)
{
    char *in = mc_xcalloc((size_t)topo->ngpus + 1, 1);
    int n = 0;
    for (int t = 0; t < s->ntrees; t++) {
        in[s->trees[t].root] = 1;
        for (int e = 0; e < s->trees[t].nedges; e++)
            in[s->trees[t].edges[e].parent] = in[s->trees[t].edges[e].child] = 1;
    }
    for (int g = 0; g < topo->ngpus; g++)
        if (in[g])
            gpus[n++] = g;
    free(in);
    return n;
}

/* The priced cost of side tree sd per byte into *cost; with take, a piece of `bytes` bytes on
 * it adds its loads to c->delta. */
static mc_status_t side_cost(side_ctx_t *c, const side_t *sd, double bytes, int take,
                             double *cost, mc_err_t *err)
{
    *cost = 0;
    for (int e = 0; e < sd->ne; e++) {
        mc_route_t r;
        mc_status_t st = mc_topo_route(c->topo, sd->parent[e], sd->child[e], &r, err);
        if (st != MC_OK)
            return st;
        for (int i = 0; i < r.nlinks; i++) {
            double bw = c->topo->links[r.links[i]].bw;
            if (bw <= 0)
                continue;
            *cost += c->price[r.links[i]] / bw;
            if (take)
                c->delta[r.links[i]] += bytes / bw;
        }
    }
    return MC_OK;
}

/* The priced cost of piece p's trees per byte of the piece; with take, their loads leave
 * c->delta. */
static double own_cost(side_ctx_t *c, int p, int take)
{
    double cost = 0, bytes = (double)c->s->task->pieces[p].bytes;
    for (int i = c->first[p]; i < c->first[p + 1]; i++) {
        const mc_tree_t *tr = &c->s->trees[c->tree[i]];
        for (int e = 0; e < tr->nedges; e++)
            for (int j = 0; j < tr->edges[e].nlinks; j++) {
                int l = tr->edges[e].links[j];
                double bw = c->topo->links[l].bw;
                if (bw <= 0)
                    continue;
                cost += c->price[l] * (double)tr->bytes / bytes / bw;
                if (take)
                    c->delta[l] -= (double)tr->bytes / bw;
            }
    }
    return cost;
}

/* Finds each eligible piece's side tree (sides[p]) over the GPUs of the winner's trees and
 * takes those cheaper than their pieces' trees; whether any is taken. */
static mc_status_t find_sides(side_ctx_t *c, side_t *sides, int *any, mc_err_t *err)
{
    const mc_topo_t *topo = c->topo;
    mc_status_t st = MC_OK;
    int *gpus = mc_xmalloc(sizeof(int) * (size_t)(topo->ngpus + 1));
    int n = tree_gpus(c->s, topo, gpus), np = c->s->task->npieces;
    mc_steiner_t g = {0};
    *any = 0;
    double work = 0;
    for (int p = 0; p < np; p++)
        work += (double)(c->s->task->pieces[p].ndests + 1) * n * n;
    if (n > SIDE_GPUS_MAX || work > SIDE_WORK_MAX)
        goto out;
    MC_CHECK_GOTO(mc_steiner_init(&g, topo, gpus, n, c->price, 0, err), out, st);
    for (int p = 0; p < np; p++) {
        side_t *sd = &sides[p];
        const mc_piece_t *pc = &c->s->task->pieces[p];
        double cost;
        if (!eligible(c, p, sd))
            continue;
        sd->parent = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
        sd->child = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
        sd->ne = mc_steiner_tree(&g, sd->root, pc->dests, pc->ndests, sd->parent, sd->child,
                                 &cost);
        if (sd->ne <= 0)
            continue;
        MC_CHECK_GOTO(side_cost(c, sd, 0, 0, &cost, err), out, st);
        if (cost >= own_cost(c, p, 0))
            continue;
        sd->taken = *any = 1;
        MC_CHECK_GOTO(side_cost(c, sd, (double)pc->bytes, 1, &cost, err), out, st);
        own_cost(c, p, 1);
    }
out:
    mc_steiner_free(&g);
    free(gpus);
    return st;
}

/* The busiest link's load with fraction f of the taken pieces on their side trees. */
static double busiest_at(const side_ctx_t *c, double f)
{
    double most = 0;
    for (int l = 0; l < c->topo->nlinks; l++)
        most = c->load[l] + f * c->delta[l] > most ? c->load[l] + f * c->delta[l] : most;
    return most;
}

/* The fraction in [0, 1] that minimizes busiest_at (convex: a maximum of linear functions). */
static double best_fraction(const side_ctx_t *c)
{
    const double g = (sqrt(5) - 1) / 2;
    double a = 0, b = 1;
    for (int i = 0; i < SIDE_SEARCH_STEPS; i++) {
        double x = b - g * (b - a), y = a + g * (b - a);
        if (busiest_at(c, x) <= busiest_at(c, y))
            b = y;
        else
            a = x;
    }
    return (a + b) / 2;
}

/* x of [0, bytes) mapped onto [0, keep): floored to SIDE_GRANULE, bytes onto keep exactly. */
static uint64_t shrunk(uint64_t x, uint64_t bytes, uint64_t keep)
{
    return x >= bytes ? keep
                      : (uint64_t)((double)x * (double)keep / (double)bytes) / SIDE_GRANULE *
                            SIDE_GRANULE;
}

/* Whether every tree of piece p keeps a byte when the piece's range shrinks to keep. */
static int keeps_trees(const side_ctx_t *c, int p, uint64_t keep)
{
    uint64_t bytes = c->s->task->pieces[p].bytes;
    for (int i = c->first[p]; i < c->first[p + 1]; i++) {
        const mc_tree_t *tr = &c->s->trees[c->tree[i]];
        if (shrunk(tr->offset, bytes, keep) >= shrunk(tr->offset + tr->bytes, bytes, keep))
            return 0;
    }
    return 1;
}

/* Into d (a copy of the winner, its trees in the same order), piece p's trees on [0, keep) and
 * its side tree on the rest, in as many chunks as its trees' average chunk gives (none below
 * min_chunk). */
static mc_status_t move_piece(const side_ctx_t *c, mc_sched_t *d, int p, uint64_t keep,
                              const side_t *sd, uint64_t min_chunk, mc_err_t *err)
{
    uint64_t bytes = d->task->pieces[p].bytes, chunks = 0;
    for (int i = c->first[p]; i < c->first[p + 1]; i++) {
        mc_tree_t *tr = &d->trees[c->tree[i]];
        uint64_t from = shrunk(tr->offset, bytes, keep),
                 to = shrunk(tr->offset + tr->bytes, bytes, keep);
        chunks += (uint64_t)tr->nchunks;
        tr->offset = from;
        tr->bytes = to - from;
        tr->nchunks = (int)mc_chunks_within((uint64_t)tr->nchunks, tr->bytes, 1);
        while (tr->ramp > 0 && !mc_tree_chunks_valid(tr))
            tr->ramp--;
    }
    uint64_t rest = bytes - keep, want = (rest * chunks + bytes - 1) / bytes;
    int ti = mc_sched_add_tree(d, p, keep, rest, sd->root, sd->phase,
                               (int)mc_chunks_within(want < MC_CHUNKS_MAX ? want : MC_CHUNKS_MAX,
                                                     rest, min_chunk));
    mc_status_t st = MC_OK;
    for (int e = 0; e < sd->ne && st == MC_OK; e++)
        st = mc_sched_add_edge(d, c->topo, ti, sd->parent[e], sd->child[e], err);
    return st;
}

mc_status_t mc_sched_side(const mc_sched_t *s, const mc_topo_t *topo, double scale,
                          uint64_t min_chunk, mc_sched_t **out, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int np = s->task->npieces, any = 0, moved = 0;
    side_ctx_t c;
    side_t *sides = mc_xcalloc((size_t)np + 1, sizeof(side_t));
    *out = NULL;
    if (s->ninst) /* a compact schedule: many GPUs, its trees not all in s->trees */
        goto done;
    ctx_init(&c, s, topo);
    MC_CHECK_GOTO(find_sides(&c, sides, &any, err), out, st);
    double f = any ? best_fraction(&c) : 0;
    if (!any || busiest_at(&c, f) > (1 - SIDE_GAIN) * busiest_at(&c, 0))
        goto out;
    f *= scale;
    *out = mc_sched_sym_expanded(s, topo);
    (*out)->nphases = s->nphases;
    for (int p = 0; p < np; p++) {
        uint64_t bytes = s->task->pieces[p].bytes;
        /* rounded up: the side tree takes no more than its part of the links it fills */
        uint64_t keep = ((uint64_t)((1 - f) * (double)bytes) + SIDE_GRANULE - 1) / SIDE_GRANULE *
                        SIDE_GRANULE;
        if (!sides[p].taken || keep == 0 || keep >= bytes || !keeps_trees(&c, p, keep))
            continue;
        MC_CHECK_GOTO(move_piece(&c, *out, p, keep, &sides[p], min_chunk, err), out, st);
        moved = 1;
    }
    if (moved)
        mc_sched_plan_rates(*out, topo);
out:
    ctx_free(&c);
    if ((st != MC_OK || !moved) && *out) {
        mc_sched_free(*out);
        *out = NULL;
    }
done:
    for (int p = 0; p < np; p++) {
        free(sides[p].parent);
        free(sides[p].child);
    }
    free(sides);
    return st;
}
