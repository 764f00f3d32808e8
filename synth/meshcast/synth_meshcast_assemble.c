/* The meshcast strategy's schedules from its plans (docs/synthesis.md): each component's plan of
 * one kind decoded into trees (copies of the components solved once, local copies, the pieces cut
 * evenly or as solved), their rates planned, re-chunked for them, and the schedules so made kept
 * by the plans they read, so that the referee's variants assemble each once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"
#include "synth/meshcast/synth_meshcast_run.h"

/* Trees a piece is cut into at most, when the trees are evened out. */
#define MC_EVEN_TREES 32

/* The fewest bytes any tree of the plan carries in phase k (0 if none). */
static uint64_t fewest_bytes(const run_t *r, const mc_comp_t *cp, const mc_plan_sol_t *sol, int k)
{
    const mc_plan_t *pl = &cp->plan;
    uint64_t fewest = 0;
    for (int c = 0; c < pl->ncands; c++) {
        int u = sol->units[c * sol->nphases + k], lp = pl->cands[c].piece;
        const mc_share_t *sh = &r->sh.s[cp->pieces[lp]];
        uint64_t ub;
        mc_piece_units(r->task->pieces[sh->piece].bytes, sh->fine, &ub);
        if (u > 0 && (fewest == 0 || (uint64_t)u * ub < fewest))
            fewest = (uint64_t)u * ub;
    }
    return fewest;
}

/* Copies of a tree are cut at multiples of this many bytes (aligned vector loads in the pack
 * kernels, as far as the tree's own offset allows). */
#define MC_COPY_ALIGN 64

/* Adds the bytes [off, off + len) of piece on candidate cand in phase k as parallel copies of the
 * tree, each its own connections carrying a slice: as many as carry the plan's rate for it, len
 * bytes in phase_s seconds, when one connection of its edges moves no faster than the topology's
 * limit (mc_topo_conn_cap, which the simulator holds every tree edge at); the link loads are
 * the plan's, whatever the count. */
static mc_status_t add_copies(run_t *r, mc_sched_t *s, const mc_cand_t *cand, int piece,
                              uint64_t off, uint64_t len, int k, double phase_s,
                              const mc_cand_t ***cand_of, int *cap, mc_err_t *err)
{
    uint64_t n = phase_s > 0 ? (uint64_t)mc_cand_copies(cand, (double)len / phase_s) : 1;
    uint64_t part = (len + n - 1) / n;
    part = (part + MC_COPY_ALIGN - 1) / MC_COPY_ALIGN * MC_COPY_ALIGN;
    for (uint64_t at = 0; at < len; at += part) {
        uint64_t l = len - at < part ? len - at : part;
        int t = mc_sched_add_tree(s, piece, off + at, l, cand->root, k,
                                  r->chunk ? mc_cand_chunks(cand, l, r->chunk, 0)
                                           : mc_chunk_memo_get(r->chunks, cand, l, 0));
        MC_GROW(*cand_of, *cap, t + 1);
        (*cand_of)[t] = cand;
        for (int e = 0; e < cand->nedges; e++) {
            mc_status_t st = mc_sched_add_edge(s, r->topo, t, cand->parent[e], cand->child[e], err);
            if (st != MC_OK)
                return st;
        }
    }
    return MC_OK;
}

/* Writes one component's solution (its own, or its symmetry class's) into the schedule. With
 * even, a candidate's units become several trees of about the bytes of the phase's smallest tree
 * (none below 1/MC_EVEN_TREES of its piece): the simulator shares a link equally among the trees
 * on it, so trees of equal bytes progress as the plan's split assumes, where one large tree
 * beside small ones would be left alone at the end, slowed by its other links. */
static mc_status_t decode(run_t *r, mc_sched_t *s, const mc_comp_t *cp, const mc_plan_sol_t *sol,
                          int even, const mc_cand_t ***cand_of, int *cap, mc_err_t *err)
{
    const mc_plan_t *pl = &cp->plan;
    int *done = mc_xcalloc((size_t)pl->npieces + 1, sizeof(int));
    mc_status_t st = MC_OK;
    for (int k = 0; k < sol->nphases; k++) {
        uint64_t fewest = fewest_bytes(r, cp, sol, k);
        double phase_s = (double)mc_plan_phase_ps(pl, sol, k) * 1e-12;
        for (int c = 0; c < pl->ncands; c++) {
            int u = sol->units[c * sol->nphases + k];
            if (u <= 0)
                continue;
            int lp = pl->cands[c].piece;
            int piece = r->sh.s[cp->pieces[lp]].piece;
            const mc_piece_t *pc = &r->task->pieces[piece];
            const mc_cand_t *cand = &r->cs.c[cp->cand_ids[c]];
            uint64_t ub;
            mc_piece_units(pc->bytes, r->sh.s[cp->pieces[lp]].fine, &ub);
            int q = even ? (int)((fewest + ub - 1) / ub) : u;
            int least = (pl->units[lp] + MC_EVEN_TREES - 1) / MC_EVEN_TREES;
            if (q < least)
                q = least;
            for (int j = 0; j < u; j += q) {
                uint64_t off = (uint64_t)(done[lp] + j) * ub;
                uint64_t len = (uint64_t)(u - j < q ? u - j : q) * ub;
                if (off >= pc->bytes)
                    break;
                if (off + len > pc->bytes)
                    len = pc->bytes - off;
                MC_CHECK_GOTO(add_copies(r, s, cand, piece, off, len, k, phase_s, cand_of, cap,
                                         err),
                              out, st);
            }
            done[lp] += u;
        }
    }
out:
    free(done);
    return st;
}

/* The schedule of one kind of plan (mc_plan_kind_t), in one form. */
static mc_status_t assemble(run_t *r, int kind, int form, mc_sched_t **out, mc_err_t *err)
{
    mc_sched_t *s = mc_sched_new(r->task, r->topo, "meshcast");
    mc_status_t st = MC_OK;
    int nphases = 0, cap = 0;
    const mc_cand_t **cand_of = NULL;
    s->mem_limit = r->opts->memory_limit;
    for (int i = 0; i < r->ncomps; i++) {
        const mc_comp_t *cp = &r->comps[i];
        const mc_comp_t *rep = cp->same_as >= 0 ? &r->comps[cp->same_as] : cp;
        const mc_plan_sol_t *sol = &rep->plans[kind];
        MC_CHECK_GOTO(decode(r, s, cp, sol, form & FORM_EVEN, &cand_of, &cap, err), out, st);
        if (sol->nphases > nphases)
            nphases = sol->nphases;
    }
    s->nphases = nphases;
    /* trees of one phase may share links: each states its max-min share so that the planned
     * load of every link stays within its bandwidth */
    mc_sched_plan_rates(s, r->topo);
    /* re-chunked, a tree slowed to its share is pipelined in more chunks than it would be alone
     * (its first chunk arrives later), none smaller than MC_MIN_CHUNK_BYTES; a tree of a rail
     * stripe split always is: the split puts several trees on every NIC by construction (7 on
     * 8 hosts), and the referee's allowance may run out before its re-chunked form (a broadcast
     * over 8 A100 rail hosts: 1.17 of the bound as decoded, 1.09 with 2.5 times the chunks) */
    for (int t = 0; t < s->ntrees && !r->chunk; t++) {
        mc_tree_t *tr = &s->trees[t];
        if (!(form & FORM_RECHUNK) && cand_of[t]->stripe <= 0)
            continue;
        int n = mc_chunk_memo_get(r->chunks, cand_of[t], tr->bytes, tr->rate);
        uint64_t most = tr->bytes / MC_MIN_CHUNK_BYTES;
        if ((uint64_t)n > most)
            n = most > (uint64_t)tr->nchunks ? (int)most : tr->nchunks;
        tr->nchunks = n;
    }
out:
    free(cand_of);
    if (st != MC_OK)
        mc_sched_free(s);
    else
        *out = s;
    return st;
}

/* Tree edges of the schedules assemble made that a run keeps at most (about 150 bytes each): a
 * larger schedule is assembled every time, one held at a time (build). */
#define MC_ASSEMBLED_EDGES (1 << 17)

/* A schedule assemble made, kept by what it read that changes: the form and each component's
 * plan of the kind (its phases and units). */
typedef struct assembled {
    int form, len, *key;
    mc_sched_t *s;
} assembled_t;

struct mc_assembled {
    assembled_t *e;
    int n, cap;
    int64_t edges;     /* over the schedules kept */
    int *key, keycap;  /* the key looked up */
};

void mc_assembled_free(mc_assembled_t *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->n; i++) {
        free(a->e[i].key);
        mc_sched_free(a->e[i].s);
    }
    free(a->e);
    free(a->key);
    free(a);
}

/* (synth_meshcast_run.h) */
mc_sched_t *mc_meshcast_copy(const mc_sched_t *s, const mc_topo_t *topo)
{
    mc_sched_t *d = mc_sched_sym_expanded(s, topo);
    d->nphases = s->nphases; /* as s states it, whatever its trees' phases */
    return d;
}

/* The key of kind's plans into a->key; its length. */
static int assembled_key(const run_t *r, mc_assembled_t *a, int kind)
{
    int n = 0;
    for (int i = 0; i < r->ncomps; i++) {
        const mc_comp_t *cp = &r->comps[i];
        const mc_plan_sol_t *sol = &(cp->same_as >= 0 ? &r->comps[cp->same_as] : cp)->plans[kind];
        int nunits = sol->units ? cp->plan.ncands * sol->nphases : 0;
        MC_GROW(a->key, a->keycap, n + 1 + nunits);
        a->key[n++] = sol->units ? sol->nphases : -1;
        memcpy(a->key + n, sol->units, sizeof(int) * (size_t)nunits);
        n += nunits;
    }
    return n;
}

/* assemble, or a copy of what it made of the same plans in the same form: the referee builds
 * the same plans again in each stagger and chunk step, and kinds whose plans are the same (the
 * plan made whole is often the solved plan): 113 builds of 8 schedules on the uneven 4 MiB
 * reshuffle over eight MI250 hosts, whose routes and planned rates were most of their 3.45 G
 * instructions. */
mc_status_t mc_meshcast_assembled(run_t *r, int kind, int form, mc_sched_t **out,
                                  mc_err_t *err)
{
    if (!r->assembled)
        r->assembled = mc_xcalloc(1, sizeof(mc_assembled_t));
    mc_assembled_t *a = r->assembled;
    int len = assembled_key(r, a, kind);
    for (int i = 0; i < a->n; i++)
        if (a->e[i].form == form && a->e[i].len == len &&
            !memcmp(a->e[i].key, a->key, sizeof(int) * (size_t)len)) {
            *out = mc_meshcast_copy(a->e[i].s, r->topo);
            return MC_OK;
        }
    mc_status_t st = assemble(r, kind, form, out, err);
    if (st != MC_OK)
        return st;
    int64_t edges = 0;
    for (int t = 0; t < (*out)->ntrees; t++)
        edges += (*out)->trees[t].nedges;
    if (a->edges + edges > MC_ASSEMBLED_EDGES)
        return MC_OK;
    MC_GROW(a->e, a->cap, a->n + 1);
    assembled_t *e = &a->e[a->n++];
    *e = (assembled_t){form, len, mc_xmalloc(sizeof(int) * (size_t)(len + 1)),
                       mc_meshcast_copy(*out, r->topo)};
    memcpy(e->key, a->key, sizeof(int) * (size_t)len);
    a->edges += edges;
    return MC_OK;
}
