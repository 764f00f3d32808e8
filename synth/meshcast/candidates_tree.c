/* One candidate tree of the meshcast strategy: a set of GPU edges from a root, turned into what
 * the optimizer needs (the topology links its routes cross and how often, its pipelined rate, its
 * hop overhead), and the intra-host shortest-path trees the generators use (mc_topo_host_spt). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

void mc_cands_truncate(mc_cands_t *cs, int n)
{
    for (int i = n; i < cs->n; i++) {
        free(cs->c[i].parent);
        free(cs->c[i].child);
        free(cs->c[i].links);
        free(cs->c[i].mult);
        free(cs->c[i].edge_spb);
        free(cs->c[i].edge_hop);
        free(cs->c[i].edge_up);
        free(cs->c[i].edge_conn_spb);
    }
    cs->n = n < cs->n ? n : cs->n;
}

void mc_cands_free(mc_cands_t *cs)
{
    mc_cands_truncate(cs, 0);
    free(cs->c);
    memset(cs, 0, sizeof(*cs));
}

/* The earlier candidate of the same piece with the same edges, or -1. */
static int duplicate(const mc_cands_t *cs, int p, int root, int n, const int *parent,
                     const int *child)
{
    for (int i = cs->n - 1; i >= 0 && cs->c[i].piece == p; i--) {
        const mc_cand_t *c = &cs->c[i];
        if (c->root != root || c->nedges != n)
            continue;
        int same = 1;
        for (int e = 0; e < n && same; e++)
            same = c->parent[e] == parent[e] && c->child[e] == child[e];
        if (same)
            return i;
    }
    return -1;
}

/* Per edge: the edge into its parent, its slowest link (counting the tree's other crossings) and
 * its overhead; and the tree's slowest connection limit. */
static mc_status_t edge_costs(mc_cand_t *c, const mc_topo_t *topo, mc_err_t *err)
{
    c->edge_spb = mc_xcalloc((size_t)c->nedges, sizeof(double));
    c->edge_hop = mc_xcalloc((size_t)c->nedges, sizeof(double));
    c->edge_up = mc_xmalloc(sizeof(int) * (size_t)c->nedges);
    c->edge_conn_spb = mc_xcalloc((size_t)c->nedges, sizeof(double));
    for (int e = 0; e < c->nedges; e++) {
        mc_route_t r;
        mc_status_t st = mc_topo_route(topo, c->parent[e], c->child[e], &r, err);
        if (st != MC_OK)
            return st;
        c->edge_hop[e] = mc_topo_links_delay(topo, r.links, r.nlinks);
        double cap = mc_topo_conn_cap(topo, c->parent[e], c->child[e], r.links, r.nlinks);
        c->edge_conn_spb[e] = cap > 0 ? 1 / cap : 0;
        if (c->edge_conn_spb[e] > c->conn_spb)
            c->conn_spb = c->edge_conn_spb[e];
        for (int i = 0; i < r.nlinks; i++) {
            int at = mc_find_int(c->links, c->nlinks, r.links[i]);
            double spb = c->mult[at] / topo->links[r.links[i]].bw;
            if (spb > c->edge_spb[e])
                c->edge_spb[e] = spb;
        }
        c->edge_up[e] = -1;
        for (int u = 0; u < e; u++)
            if (c->child[u] == c->parent[e])
                c->edge_up[e] = u;
    }
    return MC_OK;
}

/* Appends the tree at cs->c[cs->n]. */
static mc_status_t append(mc_cands_t *cs, const mc_topo_t *topo, int p, int root, int nedges,
                          const int *parent, const int *child, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int *all = mc_xmalloc(sizeof(int) * (size_t)nedges * MC_ROUTE_MAX_LINKS);
    int *depth = mc_xcalloc((size_t)topo->ngpus, sizeof(int));
    int nall = 0, maxdepth = 0;
    for (int e = 0; e < nedges; e++) {
        mc_route_t r;
        MC_CHECK_GOTO(mc_topo_route(topo, parent[e], child[e], &r, err), out, st);
        memcpy(all + nall, r.links, sizeof(int) * (size_t)r.nlinks);
        nall += r.nlinks;
        depth[child[e]] = depth[parent[e]] + 1;
        if (depth[child[e]] > maxdepth)
            maxdepth = depth[child[e]];
    }
    mc_sort_ints(all, (size_t)nall);

    MC_GROW(cs->c, cs->cap, cs->n + 1);
    mc_cand_t *c = &cs->c[cs->n++];
    memset(c, 0, sizeof(*c));
    c->piece = p;
    c->root = root;
    c->nedges = nedges;
    c->parent = mc_xmalloc(sizeof(int) * (size_t)nedges);
    c->child = mc_xmalloc(sizeof(int) * (size_t)nedges);
    memcpy(c->parent, parent, sizeof(int) * (size_t)nedges);
    memcpy(c->child, child, sizeof(int) * (size_t)nedges);
    c->depth = maxdepth;
    c->links = mc_xmalloc(sizeof(int) * (size_t)(nall + 1));
    c->mult = mc_xmalloc(sizeof(int) * (size_t)(nall + 1));
    for (int i = 0; i < nall; i++) {
        if (c->nlinks && c->links[c->nlinks - 1] == all[i]) {
            c->mult[c->nlinks - 1]++;
            continue;
        }
        c->links[c->nlinks] = all[i];
        c->mult[c->nlinks++] = 1;
    }
    for (int i = 0; i < c->nlinks; i++) {
        double s = c->mult[i] / topo->links[c->links[i]].bw;
        if (s > c->sec_per_byte)
            c->sec_per_byte = s;
    }
    st = edge_costs(c, topo, err);
out:
    free(all);
    free(depth);
    return st;
}

mc_status_t mc_cands_push(mc_cands_t *cs, const mc_topo_t *topo, int p, int root, int nedges,
                          const int *parent, const int *child, int *index, mc_err_t *err)
{
    *index = nedges > 0 ? duplicate(cs, p, root, nedges, parent, child) : -1;
    if (nedges <= 0 || *index >= 0)
        return MC_OK;
    *index = cs->n;
    return append(cs, topo, p, root, nedges, parent, child, err);
}

int mc_cands_append(mc_cands_t *cs, const mc_topo_t *topo, int p, int root, int nedges,
                    const int *parent, const int *child, mc_err_t *err)
{
    return append(cs, topo, p, root, nedges, parent, child, err) == MC_OK ? cs->n - 1 : -1;
}

static double max2(double a, double b)
{
    return a > b ? a : b;
}

/* The seconds per byte each edge of the tree is taken at (spb[e]), no edge faster than min_spb:
 * the tree's planned share of the link it shares with other trees. Trees that share a link
 * progress together and finish together, so their last chunks also cross the later hops together:
 * every hop, not only the shared one, is taken at no more than the tree's share. With capped,
 * the tree is one copy, one connection per edge, and no hop is faster than its limit. */
static void edge_paces(const mc_cand_t *c, double min_spb, int capped, double *spb)
{
    for (int e = 0; e < c->nedges; e++)
        spb[e] = max2(max2(c->edge_spb[e], capped ? c->edge_conn_spb[e] : 0), min_spb);
}

/* Modelled time of the tree moving bytes in n chunks, its edges at spb (edge_paces; at: scratch,
 * one per edge). */
static double pipelined_s(const mc_cand_t *c, const double *spb, double bytes, int n, double *at)
{
    double chunk = bytes / n, first = 0, slowest = 0;
    for (int e = 0; e < c->nedges; e++) {
        double t = c->edge_hop[e] + chunk * spb[e];
        at[e] = t + (c->edge_up[e] >= 0 ? at[c->edge_up[e]] : 0);
        if (at[e] > first)
            first = at[e];
        if (t > slowest)
            slowest = t;
    }
    return first + (n - 1) * slowest;
}

/* The chunk count that minimizes pipelined_s: a fill term falling as 1/n and an overhead term
 * growing with n, convex, so a ternary search on the integers finds it; its time into *best_s.
 * The edges' paces are taken once for the search (per chunk count, they were a third of it). */
static int best_chunks(const mc_cand_t *c, double bytes, double min_spb, int cap, double *best_s)
{
    double *spb = mc_xmalloc(sizeof(double) * (2 * (size_t)c->nedges + 1)), *at = spb + c->nedges;
    edge_paces(c, min_spb, cap, spb);
    int lo = 1, hi = MC_CHUNKS_MAX;
    while (hi - lo > 2) {
        int m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
        if (pipelined_s(c, spb, bytes, m1, at) <= pipelined_s(c, spb, bytes, m2, at))
            hi = m2;
        else
            lo = m1;
    }
    int best = lo;
    *best_s = pipelined_s(c, spb, bytes, lo, at);
    for (int n = lo + 1; n <= hi; n++) {
        double s = pipelined_s(c, spb, bytes, n, at);
        if (s < *best_s) {
            best = n;
            *best_s = s;
        }
    }
    free(spb);
    return best;
}

int mc_cand_chunks(const mc_cand_t *c, uint64_t bytes, uint64_t chunk_bytes, double rate)
{
    if (chunk_bytes) {
        uint64_t n = (bytes + chunk_bytes - 1) / chunk_bytes;
        return n < 1 ? 1 : n > MC_CHUNKS_MAX ? MC_CHUNKS_MAX : (int)n;
    }
    double t;
    return best_chunks(c, (double)bytes, rate > 0 ? 1.0 / rate : 0, 1, &t);
}

int mc_cand_copies(const mc_cand_t *c, double rate)
{
    double need = c->conn_spb * rate;
    return need > 1 ? (int)ceil(need - 1e-9) : 1;
}

/* The plan's fixed cost models the tree as copies carrying its link rate: no connection limit
 * (counted, it made Z3's relaxation of h100-case3 in `modern` take 0.55 s instead of 0.14 s, past
 * its wall-clock cap, for a worse plan). */
double mc_cand_overhead_s(const mc_cand_t *c, uint64_t bytes, uint64_t chunk_bytes)
{
    double t;
    if (chunk_bytes) {
        double *spb = mc_xmalloc(sizeof(double) * (2 * (size_t)c->nedges + 1));
        edge_paces(c, 0, 0, spb);
        t = pipelined_s(c, spb, (double)bytes, mc_cand_chunks(c, bytes, chunk_bytes, 0),
                        spb + c->nedges);
        free(spb);
    } else {
        best_chunks(c, (double)bytes, 0, 0, &t);
    }
    t -= (double)bytes * c->sec_per_byte;
    return t > 0 ? t : 0;
}

int mc_cands_host_spt(const mc_topo_t *topo, int src, const int *want, int nwant, int *parent,
                      int *child, mc_err_t *err)
{
    int g0;
    const int *par;
    if (mc_topo_host_spt(topo, src, &g0, &par, err) != MC_OK)
        return -1;
    int n = mc_topo_host_gpus(topo, mc_topo_gpu_host(topo, src), &g0);
    int *keep = mc_xcalloc((size_t)n, sizeof(int));
    int *depth = mc_xcalloc((size_t)n, sizeof(int));
    /* keep every GPU on the way from src to a wanted one: those not wanted are relays */
    for (int i = 0; i < nwant; i++)
        for (int v = want[i] - g0; v != src - g0 && v >= 0 && !keep[v]; v = par[v])
            keep[v] = 1;
    for (int v = 0; v < n; v++)
        for (int u = v; keep[v] && u != src - g0 && u >= 0; u = par[u])
            depth[v]++;
    /* parents before children: by depth, then by GPU id */
    int ne = 0;
    for (int d = 1; d <= n; d++)
        for (int v = 0; v < n; v++)
            if (keep[v] && depth[v] == d) {
                parent[ne] = g0 + par[v];
                child[ne++] = g0 + v;
            }
    free(keep);
    free(depth);
    return ne;
}
