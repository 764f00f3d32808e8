/* Splits a task into components for the meshcast strategy (docs/synthesis.md, "Scale"): shares
 * whose candidate trees share a link belong together; components share no link, so each is solved
 * alone and their phases run side by side. Plan links are numbered in order of first use, so two
 * components whose plans are equal number for number (same_plan) are the same model (symmetric
 * hosts, identical pieces of other tensors), and Z3 solves it once. */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

int mc_piece_units(uint64_t bytes, int fine, uint64_t *unit_bytes)
{
    uint64_t n = fine > 1 ? (uint64_t)fine : fine ? MC_PIECE_UNITS_FINE : MC_PIECE_UNITS;
    if (bytes == 0)
        bytes = 1;
    uint64_t u = (bytes + n - 1) / n;
    *unit_bytes = u;
    return (int)((bytes + u - 1) / u);
}

static int find(int *up, int x)
{
    while (up[x] != x)
        x = up[x] = up[up[x]];
    return x;
}

static void join(int *up, int a, int b)
{
    a = find(up, a);
    b = find(up, b);
    if (a != b)
        up[a > b ? a : b] = a < b ? a : b;
}

static int64_t to_ps(double s)
{
    double ps = s * 1e12;
    return (int64_t)ps + (ps > (double)(int64_t)ps);
}

/* The bytes a tree of share s carries in a typical part of the fractional split: the piece over
 * the number of its trees the split uses. */
static uint64_t typical_bytes(const mc_shares_t *sh, int s, uint64_t bytes, const int *first,
                              const int *count, const double *frac)
{
    int used = 0;
    for (int j = 0; frac && sh->s[s].fine && j < count[s]; j++)
        used += frac[first[s] + j] > 0;
    return used > 1 ? bytes / (uint64_t)used : bytes;
}

/* The edges of candidate c into q (its links already numbered in local[]). */
static void plan_edges(mc_pcand_t *q, const mc_cand_t *c, const mc_topo_t *topo, const int *local)
{
    q->nedges = c->nedges;
    q->edge_up = mc_xmalloc(sizeof(int) * (size_t)c->nedges);
    q->edge_hop_ps = mc_xmalloc(sizeof(int64_t) * (size_t)c->nedges);
    q->edge_at = mc_xcalloc((size_t)c->nedges + 1, sizeof(int));
    q->edge_links = mc_xmalloc(sizeof(int) * (size_t)c->nedges * MC_ROUTE_MAX_LINKS);
    for (int e = 0; e < c->nedges; e++) {
        mc_route_t r;
        mc_err_t err = {0};
        q->edge_up[e] = c->edge_up[e];
        q->edge_hop_ps[e] = to_ps(c->edge_hop[e]);
        q->edge_at[e + 1] = q->edge_at[e];
        /* the route was found when the candidate was built; it is cached */
        if (mc_topo_route(topo, c->parent[e], c->child[e], &r, &err) == MC_OK)
            for (int i = 0; i < r.nlinks; i++)
                q->edge_links[q->edge_at[e + 1]++] = local[r.links[i]];
    }
}

/* Fills comp's plan from its pieces' candidates; link ids become plan-local in order of first
 * use, which is what makes the key independent of where in the cluster the component sits. */
static void build_plan(mc_comp_t *cp, const mc_task_t *task, const mc_topo_t *topo,
                       const mc_shares_t *sh, const mc_cands_t *cs, const int *piece_first,
                       const int *piece_count, uint64_t chunk_bytes, const double *frac,
                       int *local)
{
    mc_plan_t *pl = &cp->plan;
    pl->npieces = cp->npieces;
    pl->units = mc_xmalloc(sizeof(int) * (size_t)cp->npieces);
    cp->unit_bytes = mc_xmalloc(sizeof(uint64_t) * (size_t)cp->npieces);
    int total = 0;
    for (int i = 0; i < cp->npieces; i++)
        total += piece_count[cp->pieces[i]];
    pl->cands = mc_xcalloc((size_t)total + 1, sizeof(mc_pcand_t));
    cp->cand_ids = mc_xmalloc(sizeof(int) * (size_t)(total + 1));
    int nl = 0, cap = 0;
    cp->link_ids = NULL;
    for (int i = 0; i < cp->npieces; i++) {
        const mc_piece_t *pc = &task->pieces[sh->s[cp->pieces[i]].piece];
        uint64_t ub;
        pl->units[i] = mc_piece_units(pc->bytes, sh->s[cp->pieces[i]].fine, &ub);
        cp->unit_bytes[i] = ub;
        uint64_t typical = typical_bytes(sh, cp->pieces[i], pc->bytes, piece_first, piece_count,
                                         frac);
        for (int j = 0; j < piece_count[cp->pieces[i]]; j++) {
            int gc = piece_first[cp->pieces[i]] + j;
            const mc_cand_t *c = &cs->c[gc];
            mc_pcand_t *q = &pl->cands[pl->ncands];
            cp->cand_ids[pl->ncands++] = gc;
            q->piece = i;
            /* the overhead of the bytes the tree is expected to carry: the whole piece (an upper
             * bound for any part of it), or for a priced share its part in the fractional
             * split (a typical part for a tree the split leaves out) */
            uint64_t bytes = pc->bytes;
            if (frac && sh->s[cp->pieces[i]].fine)
                bytes = frac[gc] > 0 ? (uint64_t)(frac[gc] * (double)pc->bytes) + 1 : typical;
            q->fixed_ps = to_ps(mc_cand_overhead_s(c, bytes, chunk_bytes));
            q->nlinks = c->nlinks;
            q->links = mc_xmalloc(sizeof(int) * (size_t)(c->nlinks + 1));
            q->link_ps = mc_xmalloc(sizeof(int64_t) * (size_t)(c->nlinks + 1));
            for (int k = 0; k < c->nlinks; k++) {
                int l = c->links[k];
                if (local[l] < 0) {
                    MC_GROW(cp->link_ids, cap, nl + 1);
                    cp->link_ids[nl] = l;
                    local[l] = nl++;
                }
                q->links[k] = local[l];
                q->link_ps[k] = to_ps(c->mult[k] * (double)ub / topo->links[l].bw);
                if (q->link_ps[k] > q->unit_ps)
                    q->unit_ps = q->link_ps[k];
            }
            if (frac && sh->s[cp->pieces[i]].fine)
                plan_edges(q, c, topo, local);
        }
    }
    pl->nlinks = nl;
    for (int l = 0; l < nl; l++)
        local[cp->link_ids[l]] = -1;
}

/* Whether arrays a and b of n elements of size bytes each are equal. */
static int same_array(const void *a, const void *b, size_t n, size_t size)
{
    return n == 0 || !memcmp(a, b, n * size);
}

/* Whether candidates p and q are the same, number for number (a tree's time per unit follows
 * from its links'). */
static int same_cand(const mc_pcand_t *p, const mc_pcand_t *q)
{
    return p->piece == q->piece && p->fixed_ps == q->fixed_ps && p->nlinks == q->nlinks &&
           same_array(p->links, q->links, (size_t)p->nlinks, sizeof(int)) &&
           same_array(p->link_ps, q->link_ps, (size_t)p->nlinks, sizeof(int64_t)) &&
           p->nedges == q->nedges &&
           same_array(p->edge_up, q->edge_up, (size_t)p->nedges, sizeof(int)) &&
           same_array(p->edge_hop_ps, q->edge_hop_ps, (size_t)p->nedges, sizeof(int64_t)) &&
           (p->nedges == 0 ||
            (same_array(p->edge_at, q->edge_at, (size_t)p->nedges + 1, sizeof(int)) &&
             same_array(p->edge_links, q->edge_links, (size_t)p->edge_at[p->nedges],
                        sizeof(int))));
}

/* Whether components a and b have the same plan: the same pieces in units of the same bytes, the
 * same candidates (compared in place of a text key of all of it, which was written number by
 * number: a twentieth of the synthesis of an uneven all-to-all over 64 GPUs). */
static int same_plan(const mc_comp_t *a, const mc_comp_t *b)
{
    const mc_plan_t *p = &a->plan, *q = &b->plan;
    if (p->npieces != q->npieces || p->ncands != q->ncands ||
        !same_array(p->units, q->units, (size_t)p->npieces, sizeof(int)) ||
        !same_array(a->unit_bytes, b->unit_bytes, (size_t)p->npieces, sizeof(uint64_t)))
        return 0;
    for (int c = 0; c < p->ncands; c++)
        if (!same_cand(&p->cands[c], &q->cands[c]))
            return 0;
    return 1;
}

void mc_comps_build(const mc_task_t *task, const mc_topo_t *topo, const mc_shares_t *sh,
                    const mc_cands_t *cs, const int *first, const int *count, uint64_t chunk_bytes,
                    const double *frac, mc_comp_t **out, int *ncomps)
{
    int np = sh->n;
    int *up = mc_xmalloc(sizeof(int) * (size_t)(np + 1));
    int *owner = mc_xmalloc(sizeof(int) * (size_t)(topo->nlinks + 1));
    for (int p = 0; p < np; p++)
        up[p] = p;
    for (int l = 0; l < topo->nlinks; l++)
        owner[l] = -1;
    for (int p = 0; p < np; p++)
        for (int c = first[p]; c < first[p] + count[p]; c++)
            for (int k = 0; k < cs->c[c].nlinks; k++) {
                int l = cs->c[c].links[k];
                if (owner[l] < 0)
                    owner[l] = p;
                else
                    join(up, owner[l], p);
            }
    int n = 0;
    int *comp_of = mc_xmalloc(sizeof(int) * (size_t)(np + 1));
    /* each component's shares, sized by counting (512 components x every share: 75 MB at 8192
     * GPUs, heaptrack) */
    int *size = mc_xcalloc((size_t)np + 1, sizeof(int));
    for (int p = 0; p < np; p++)
        size[find(up, p)]++;
    mc_comp_t *comps = mc_xcalloc((size_t)np + 1, sizeof(mc_comp_t));
    for (int p = 0; p < np; p++) {
        int r = find(up, p);
        if (r == p) {
            comp_of[p] = n;
            comps[n].pieces = mc_xmalloc(sizeof(int) * (size_t)size[p]);
            comps[n++].same_as = -1;
        } else {
            comp_of[p] = comp_of[r];
        }
        mc_comp_t *cp = &comps[comp_of[p]];
        cp->pieces[cp->npieces++] = p;
    }
    for (int l = 0; l < topo->nlinks; l++)
        owner[l] = -1; /* reused as the plan-local link numbering */
    for (int i = 0; i < n; i++) {
        build_plan(&comps[i], task, topo, sh, cs, first, count, chunk_bytes, frac, owner);
        for (int j = 0; j < i && comps[i].same_as < 0; j++)
            if (comps[j].same_as < 0 && same_plan(&comps[i], &comps[j]))
                comps[i].same_as = j;
    }
    free(up);
    free(owner);
    free(comp_of);
    free(size);
    *out = comps;
    *ncomps = n;
}

void mc_comps_free(mc_comp_t *comps, int n)
{
    for (int i = 0; i < n; i++) {
        free(comps[i].pieces);
        free(comps[i].cand_ids);
        free(comps[i].link_ids);
        free(comps[i].unit_bytes);
        mc_plan_free(&comps[i].plan);
        for (int k = 0; k < MC_PLAN_KINDS; k++)
            mc_plan_sol_free(&comps[i].plans[k]);
    }
    free(comps);
}
