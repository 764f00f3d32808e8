/* The referee's memo of chunk counts: a tree's count (mc_cand_chunks, a search over its pipelined
 * time) depends only on the tree's per-edge costs, its bytes and its planned rate, and the
 * referee asks it of the same trees, or of trees of the same shape on other GPUs, for every form
 * of every plan it builds. The memo keys a count by exactly what the search reads (per edge: its
 * seconds per byte, its connection's, its hop, the edge above it; the bytes, the rate), compared
 * in full on a hit, so it returns what the search would. */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/synth_meshcast_run.h"
#include "util/index.h"
#include "util/util.h"

typedef struct chunk_entry {
    uint64_t bytes;
    double rate;
    int nedges, nchunks;
    int at;                 /* its edges' costs in the pool: spb, conn_spb, hop, then up */
} chunk_entry_t;

struct mc_chunk_memo {
    chunk_entry_t *e;
    int n, cap;
    mc_index_t index;
    double *pool;
    int npool, pool_cap;
};

mc_chunk_memo_t *mc_chunk_memo_new(void)
{
    return mc_xcalloc(1, sizeof(mc_chunk_memo_t));
}

void mc_chunk_memo_free(mc_chunk_memo_t *m)
{
    if (!m)
        return;
    free(m->e);
    mc_index_free(&m->index);
    free(m->pool);
    free(m);
}

static uint64_t bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* Four chains, one per edge array, so that their multiplications overlap (one chain of four
 * words an edge was most of a lookup); any hash finds the same entry, compared in full. */
static uint64_t cand_hash(const mc_cand_t *c, uint64_t bytes, double rate)
{
    uint64_t h = mc_hash_step(mc_hash_step(mc_hash_step(MC_HASH_SEED, bytes), bits(rate)),
                              (uint64_t)c->nedges);
    uint64_t conn = MC_HASH_SEED, hop = MC_HASH_SEED, up = MC_HASH_SEED;
    for (int i = 0; i < c->nedges; i++) {
        h = mc_hash_step(h, bits(c->edge_spb[i]));
        conn = mc_hash_step(conn, bits(c->edge_conn_spb[i]));
        hop = mc_hash_step(hop, bits(c->edge_hop[i]));
        up = mc_hash_step(up, (uint64_t)(int64_t)c->edge_up[i]);
    }
    return mc_hash_fold(mc_hash_step(mc_hash_step(mc_hash_step(h, conn), hop), up));
}

static int same(const mc_chunk_memo_t *m, const chunk_entry_t *e, const mc_cand_t *c,
                uint64_t bytes, double rate)
{
    if (e->bytes != bytes || bits(e->rate) != bits(rate) || e->nedges != c->nedges)
        return 0;
    const double *p = m->pool + e->at;
    size_t n = (size_t)c->nedges;
    for (size_t i = 0; i < n; i++)
        if (bits(p[i]) != bits(c->edge_spb[i]) || bits(p[n + i]) != bits(c->edge_conn_spb[i]) ||
            bits(p[2 * n + i]) != bits(c->edge_hop[i]) || p[3 * n + i] != (double)c->edge_up[i])
            return 0;
    return 1;
}

int mc_chunk_memo_size(const mc_chunk_memo_t *m)
{
    return m->n;
}

int mc_chunk_memo_get(mc_chunk_memo_t *m, const mc_cand_t *c, uint64_t bytes, double rate)
{
    uint64_t h = cand_hash(c, bytes, rate);
    size_t at = mc_index_start(&m->index, h);
    for (int k; (k = mc_index_next(&m->index, h, &at)) >= 0;)
        if (same(m, &m->e[k], c, bytes, rate))
            return m->e[k].nchunks;
    size_t n = (size_t)c->nedges;
    MC_GROW(m->e, m->cap, m->n + 1);
    MC_GROW(m->pool, m->pool_cap, m->npool + 4 * c->nedges);
    double *p = m->pool + m->npool;
    for (size_t i = 0; i < n; i++) {
        p[i] = c->edge_spb[i];
        p[n + i] = c->edge_conn_spb[i];
        p[2 * n + i] = c->edge_hop[i];
        p[3 * n + i] = c->edge_up[i];
    }
    m->e[m->n] = (chunk_entry_t){bytes, rate, c->nedges, mc_cand_chunks(c, bytes, 0, rate),
                                 m->npool};
    m->npool += 4 * c->nedges;
    mc_index_add(&m->index, h, m->n);
    return m->e[m->n++].nchunks;
}
