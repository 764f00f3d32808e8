/* The striped schedule (docs/synthesis.md, "Small pieces"): a schedule with the trees of some
 * pieces replaced by their relay trees (candidates_relay.c), each piece's bytes split evenly over
 * them, the scatter + all-gather broadcast, or over rail trees by their stripes. The other pieces
 * keep their trees and phases. */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"
#include "synth/meshcast/synth_meshcast_run.h"

/* A relay tree's part of its piece is a multiple of this many bytes (the last takes the rest). */
#define STRIPE_GRANULE 4096u

/* Which pieces have relay trees: one flag per piece of the task (a scan of relays per tree was
 * quadratic, a fifth of the synthesis of an all-to-all over 64 GPUs: 4,032 pieces). */
static char *pieces_of(const mc_task_t *task, const mc_cands_t *relays)
{
    char *has = mc_xcalloc((size_t)task->npieces + 1, 1);
    for (int c = 0; c < relays->n; c++)
        has[relays->c[c].piece] = 1;
    return has;
}

/* Whether trees a and b of one piece reach the same of its destinations. */
static int same_dests(const mc_task_t *task, const mc_cand_t *a, const mc_cand_t *b)
{
    const mc_piece_t *pc = &task->pieces[a->piece];
    for (int i = 0; i < pc->ndests; i++)
        if (mc_ints_contain(a->child, a->nedges, pc->dests[i]) !=
            mc_ints_contain(b->child, b->nedges, pc->dests[i]))
            return 0;
    return 1;
}

/* Tree c's best chunk count carrying bytes at rate (0: alone): the races build a striped form of
 * every schedule they try from the same relay trees, 57,088 searches for 2,039 counts in an
 * all-gather over 64 GPUs (a tenth of its synthesis). */
static int chunks_of(mc_chunk_memo_t *chunks, const mc_cand_t *c, uint64_t bytes, double rate)
{
    return chunks ? mc_chunk_memo_get(chunks, c, bytes, rate) : mc_cand_chunks(c, bytes, 0, rate);
}

static mc_status_t add_tree(mc_sched_t *d, const mc_topo_t *topo, const mc_cand_t *c,
                            uint64_t off, uint64_t len, mc_chunk_memo_t *chunks, mc_err_t *err)
{
    int t = mc_sched_add_tree(d, c->piece, off, len, c->root, 0, chunks_of(chunks, c, len, 0));
    for (int e = 0; e < c->nedges; e++) {
        mc_status_t st = mc_sched_add_edge(d, topo, t, c->parent[e], c->child[e], err);
        if (st != MC_OK)
            return st;
    }
    return MC_OK;
}

mc_status_t mc_sched_striped(const mc_sched_t *s, const mc_topo_t *topo, const mc_cands_t *relays,
                             uint64_t min_chunk, mc_chunk_memo_t *chunks, mc_sched_t **out,
                             mc_err_t *err)
{
    mc_sched_t *d = mc_sched_new(s->task, topo, s->strategy);
    mc_status_t st = MC_OK;
    char *relayed = pieces_of(s->task, relays);
    /* per tree of d, the relay tree it was made from */
    int *cand_of = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + relays->n + 1));
    d->mem_limit = s->mem_limit;
    d->nphases = s->nphases > 0 ? s->nphases : 1;
    for (int t = 0; t < s->ntrees; t++) {
        const mc_tree_t *src = &s->trees[t];
        if (relayed[src->piece])
            continue;
        int u = mc_sched_add_tree(d, src->piece, src->offset, src->bytes, src->root, src->phase,
                                  src->nchunks);
        mc_tree_t *dst = &d->trees[u];
        dst->edges = mc_xmalloc(sizeof(mc_tree_edge_t) * (size_t)(src->nedges + 1));
        memcpy(dst->edges, src->edges, sizeof(mc_tree_edge_t) * (size_t)src->nedges);
        dst->nedges = dst->edge_cap = src->nedges;
    }
    /* relays holds each piece's trees together, those reaching the same destinations in a run
     * (mc_cands_add_split: the root's host, then the others) */
    for (int a = 0, b; a < relays->n; a = b) {
        for (b = a + 1; b < relays->n && relays->c[b].piece == relays->c[a].piece &&
                        same_dests(s->task, &relays->c[a], &relays->c[b]);
             b++)
            ;
        uint64_t bytes = s->task->pieces[relays->c[a].piece].bytes, off = 0;
        int weighed = 0, last = b - 1;
        for (int c = a; c < b; c++)
            weighed |= relays->c[c].stripe > 0;
        while (weighed && relays->c[last].stripe <= 0)
            last--;
        /* rail trees (mc_cands_add_rails_small) carry their stripe of it, rounded down to
         * granules, and the granules that leaves over go one each to the last trees (all to the
         * last, 56 stripes of 4 MiB left it 136 KiB where the others had 72 KiB, and its hub's
         * NIC the slowest; spread in turn, the trees of 1 GiB stripes lost their lockstep and
         * the channel race its allowance); the others an even part; the last tree with a part
         * takes the rest */
        uint64_t spare = 0;
        for (int c = a; c <= last && weighed; c++)
            spare += (uint64_t)(relays->c[c].stripe * (double)bytes) / STRIPE_GRANULE;
        spare = weighed && spare < bytes / STRIPE_GRANULE ? bytes / STRIPE_GRANULE - spare : 0;
        for (int c = a; c <= last && st == MC_OK; c++) {
            uint64_t part = (weighed ? (uint64_t)(relays->c[c].stripe * (double)bytes) /
                                               STRIPE_GRANULE +
                                           ((uint64_t)(last - c) < spare)
                                     : bytes / (uint64_t)(b - a) / STRIPE_GRANULE) *
                            STRIPE_GRANULE;
            uint64_t len = c == last ? bytes - off : part;
            if (len > 0) {
                st = add_tree(d, topo, &relays->c[c], off, len, chunks, err);
                cand_of[d->ntrees - 1] = c;
            }
            off += len;
        }
    }
    if (st != MC_OK) {
        free(cand_of);
        free(relayed);
        mc_sched_free(d);
        return st;
    }
    mc_sched_plan_rates(d, topo);
    /* the relay trees share the root's links: each is pipelined at its planned share, in more
     * chunks than alone (none below min_chunk) */
    for (int t = 0; t < d->ntrees; t++) {
        mc_tree_t *tr = &d->trees[t];
        if (!relayed[tr->piece])
            continue;
        uint64_t most = tr->bytes / min_chunk;
        int n = chunks_of(chunks, &relays->c[cand_of[t]], tr->bytes, tr->rate);
        tr->nchunks = (uint64_t)n <= most ? n : most > (uint64_t)tr->nchunks ? (int)most
                                                                             : tr->nchunks;
    }
    free(cand_of);
    free(relayed);
    *out = d;
    return MC_OK;
}
