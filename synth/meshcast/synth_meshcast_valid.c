/* The schedules the referee has found valid (mc_meshcast_certify): it builds the same schedule
 * from many recipes (on the uneven 4 MiB reshuffle over eight MI250 hosts, 113 races of 8
 * distinct schedules; the staggers and the plans made whole often change nothing), and
 * mc_sched_validate of each was 1.4-2.5 G instructions of those syntheses. A schedule equal to
 * one found valid, in everything validation reads, is valid: each is kept by all of that (the
 * task and topology it is for, its memory bound and workspace; per tree its range, root, phase,
 * chunks, rate and edges with their routes), compared in full, not by a hash alone. The key is
 * read from the schedule's own arrays only, so a malformed schedule is keyed without a fault,
 * found in no entry (only valid schedules are kept) and validated, which reports it. */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/synth_meshcast_run.h"
#include "util/index.h"
#include "util/util.h"

/* Words of keys kept at most (32 MB): larger schedules are validated every time. */
#define VALID_MAX_WORDS (4 << 20)

typedef struct valid_entry {
    size_t at, len; /* its key in keys[] */
} valid_entry_t;

struct mc_valid_memo {
    valid_entry_t *e;
    int n, cap;
    mc_index_t index;       /* of the entries by the hash of their key */
    int64_t *keys;
    size_t nkeys, keys_cap;
    int64_t *scratch;       /* the key of the schedule looked up */
    size_t nscratch, scratch_cap;
};

mc_valid_memo_t *mc_valid_memo_new(void)
{
    return mc_xcalloc(1, sizeof(mc_valid_memo_t));
}

void mc_valid_memo_free(mc_valid_memo_t *m)
{
    if (!m)
        return;
    free(m->e);
    mc_index_free(&m->index);
    free(m->keys);
    free(m->scratch);
    free(m);
}

/* The links of an edge the key holds: its route's, as far as the edge's array goes. */
static int route_len(const mc_tree_edge_t *e)
{
    return e->nlinks < 0 ? 0 : e->nlinks > MC_ROUTE_MAX_LINKS ? MC_ROUTE_MAX_LINKS : e->nlinks;
}

/* Everything mc_sched_validate reads of s (a schedule of listed trees, with no notes), into
 * m->scratch. */
static void key_of(mc_valid_memo_t *m, const mc_sched_t *s, const mc_topo_t *topo)
{
    size_t need = 5, n = 0;
    for (int t = 0; t < s->ntrees; t++) {
        need += 9;
        for (int e = 0; e < s->trees[t].nedges; e++)
            need += 4 + (size_t)route_len(&s->trees[t].edges[e]);
    }
    if (need > m->scratch_cap) {
        m->scratch_cap = 2 * need;
        m->scratch = mc_xrealloc(m->scratch, sizeof(int64_t) * m->scratch_cap);
    }
    int64_t *k = m->scratch;
    k[n++] = (int64_t)(intptr_t)s->task;
    k[n++] = (int64_t)(intptr_t)topo;
    k[n++] = (int64_t)s->mem_limit;
    k[n++] = (int64_t)s->workspace;
    k[n++] = s->ntrees;
    for (int t = 0; t < s->ntrees; t++) {
        const mc_tree_t *tr = &s->trees[t];
        k[n++] = tr->piece;
        k[n++] = (int64_t)tr->offset;
        k[n++] = (int64_t)tr->bytes;
        k[n++] = tr->root;
        k[n++] = tr->phase;
        k[n++] = tr->nchunks;
        memcpy(&k[n++], &tr->rate, sizeof tr->rate);
        k[n++] = tr->nedges;
        k[n++] = -1; /* between trees */
        for (int e = 0; e < tr->nedges; e++) {
            const mc_tree_edge_t *ed = &tr->edges[e];
            k[n++] = ed->parent;
            k[n++] = ed->child;
            k[n++] = ed->via_gpu;
            k[n++] = ed->nlinks;
            for (int j = 0; j < route_len(ed); j++)
                k[n++] = ed->links[j];
        }
    }
    m->nscratch = n;
}

/* Whether the schedule keyed in m->scratch (hash h) was found valid. */
static int known(const mc_valid_memo_t *m, uint64_t h)
{
    size_t at = mc_index_start(&m->index, h);
    for (int i; (i = mc_index_next(&m->index, h, &at)) >= 0;)
        if (m->e[i].len == m->nscratch &&
            memcmp(m->keys + m->e[i].at, m->scratch, sizeof(int64_t) * m->nscratch) == 0)
            return 1;
    return 0;
}

static void remember(mc_valid_memo_t *m, uint64_t h)
{
    if (m->nkeys + m->nscratch > VALID_MAX_WORDS)
        return;
    if (m->nkeys + m->nscratch > m->keys_cap) {
        m->keys_cap = 2 * (m->nkeys + m->nscratch);
        m->keys = mc_xrealloc(m->keys, sizeof(int64_t) * m->keys_cap);
    }
    memcpy(m->keys + m->nkeys, m->scratch, sizeof(int64_t) * m->nscratch);
    MC_GROW(m->e, m->cap, m->n + 1);
    m->e[m->n] = (valid_entry_t){m->nkeys, m->nscratch};
    mc_index_add(&m->index, h, m->n++);
    m->nkeys += m->nscratch;
}

int mc_valid_memo_check(mc_valid_memo_t *m, const mc_sched_t *s, const mc_topo_t *topo,
                        mc_buf_t *out)
{
    if (s->ninst || s->nnotes) /* compact or read from a file: not what the referee builds */
        return mc_sched_validate(s, topo, out);
    key_of(m, s, topo);
    uint64_t h = mc_hash_words(m->scratch, m->nscratch);
    if (known(m, h))
        return 0;
    int bad = mc_sched_validate(s, topo, out);
    if (!bad)
        remember(m, h);
    return bad;
}
