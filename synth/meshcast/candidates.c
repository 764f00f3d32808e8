/* The candidate trees of one piece (docs/synthesis.md, "Candidates"): one tree per rail (entering
 * every destination host at the GPU on that rail, a relay if it needs nothing, then an NVLink
 * chain inside the host; across hosts as a chain when several destination hosts need the piece),
 * the intra-host shortest-path tree and the direct star from the first holder, and trees rooted
 * on other holder hosts. The optimizer picks among them and splits bytes over them. For the
 * races of small shares, the other hosts spread over the root host's NICs (mc_cands_add_spread). */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

/* Holder hosts tried as roots. */
#define MC_ROOT_HOSTS 3

typedef struct gen {
    mc_cands_t *cs;
    const mc_topo_t *topo;
    int p;
    int root_host;        /* holder host tried first, -1 for none */
    int open;             /* other holder hosts may root trees too */
    int rot;              /* where root choices start, so that pieces sharing hosts spread out */
    const mc_piece_t *pc;
    int no_relays;
    int rail;             /* dev index trees enter destination hosts at, -1: the sender's */
    int wrap;             /* chains visit the hosts from the root's on, wrapping around */
    int ndh;              /* destination hosts, ascending */
    int *dh_host, *dh_first, *dh_count; /* their dests: pc->dests[first .. first+count) */
    int *parent, *child;  /* edge buffers */
    int ne;
    int *seen;            /* per GPU: already in the tree being built */
} gen_t;

static int gpu_dev(const mc_topo_t *t, int g)
{
    return t->nodes[t->gpu_node[g]].dev;
}

static void edge(gen_t *g, int a, int b)
{
    if (g->seen[b])
        return;
    g->parent[g->ne] = a;
    g->child[g->ne++] = b;
    g->seen[b] = 1;
}

/* Where a tree from `from` enters destination host d: the destination on the tree's rail (from's
 * unless the generator fixed one), else the GPU on that rail as a relay, else the host's first
 * destination. */
static int entry(const gen_t *g, int d, int from)
{
    const int *dst = g->pc->dests + g->dh_first[d];
    int rail = g->rail >= 0 ? g->rail : gpu_dev(g->topo, from);
    int r = mc_topo_host_gpu_on_dev(g->topo, g->dh_host[d], rail);
    for (int i = 0; i < g->dh_count[d]; i++)
        if (dst[i] == r)
            return r;
    if (r >= 0 && !g->no_relays)
        return r;
    return dst[0];
}

/* Reaches the destinations of host d from src (already in the tree) by a chain in rail order
 * starting after src, or by the host's shortest-path tree. */
static mc_status_t fan_out(gen_t *g, int d, int src, int chain, mc_err_t *err)
{
    const int *dst = g->pc->dests + g->dh_first[d];
    int n = g->dh_count[d];
    if (chain) {
        int last = src;
        int sdev = gpu_dev(g->topo, src);
        /* rail order after src's rail wraps around, so that two trees entering on different
         * rails chain through the host in different orders */
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < n; i++) {
                int dv = gpu_dev(g->topo, dst[i]);
                if ((pass == 0) != (dv > sdev) || g->seen[dst[i]])
                    continue;
                edge(g, last, dst[i]);
                last = dst[i];
            }
        return MC_OK;
    }
    int *par = mc_xmalloc(sizeof(int) * (size_t)(g->topo->ngpus + 1));
    int *chi = mc_xmalloc(sizeof(int) * (size_t)(g->topo->ngpus + 1));
    int k = mc_cands_host_spt(g->topo, src, dst, n, par, chi, err);
    for (int i = 0; i < k; i++)
        edge(g, par[i], chi[i]);
    free(par);
    free(chi);
    return k < 0 ? MC_ERR_INTERNAL : MC_OK;
}

/* TREE_HOSTS: each destination host entered from the root; TREE_CHAIN: the hosts in a chain;
 * TREE_STAR: each destination from the root; TREE_SPREAD: each destination host entered from
 * its own GPU of the root's host, the j-th other host through the j-th NIC after the root's, so
 * that the piece crosses the network once per host and every hop leaves through another NIC
 * (one network hop deep, where a chain is as deep as it has hosts). */
enum { TREE_HOSTS, TREE_CHAIN, TREE_STAR, TREE_SPREAD };

/* Builds one tree of the given shape from root and appends it when it reaches every
 * destination (and, without relays allowed, passes through nothing else). */
static mc_status_t build(gen_t *g, int root, int shape, int chain, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int rhost = mc_topo_gpu_host(g->topo, root);
    memset(g->seen, 0, sizeof(int) * (size_t)g->topo->ngpus);
    g->ne = 0;
    g->seen[root] = 1;
    int prev = root, d0 = 0, away = 0; /* away: other hosts entered so far (TREE_SPREAD) */
    while (g->wrap && d0 < g->ndh && g->dh_host[d0] < rhost)
        d0++;
    for (int j = 0; j < g->ndh; j++) {
        int d = (d0 + j) % g->ndh;
        if (shape == TREE_STAR) {
            for (int i = 0; i < g->dh_count[d]; i++)
                edge(g, root, g->pc->dests[g->dh_first[d] + i]);
            continue;
        }
        int e = root;
        if (g->dh_host[d] != rhost) {
            int from = shape == TREE_CHAIN ? prev : root;
            if (shape == TREE_SPREAD) {
                int first, ndev = mc_topo_host_gpus(g->topo, rhost, &first);
                int nic = mc_topo_host_gpu_on_dev(g->topo, rhost,
                                                  (gpu_dev(g->topo, root) + away++) % ndev);
                if (nic >= 0 && nic != root) {
                    edge(g, root, nic);
                    from = nic;
                }
            }
            e = entry(g, d, from);
            edge(g, from, e);
            prev = e;
        }
        MC_CHECK_GOTO(fan_out(g, d, e, chain, err), out, st);
    }
    for (int i = 0; i < g->pc->ndests; i++)
        if (!g->seen[g->pc->dests[i]])
            return MC_OK;
    if (g->no_relays)
        for (int e = 0; e < g->ne; e++)
            if (!mc_ints_contain(g->pc->dests, g->pc->ndests, g->child[e]))
                return MC_OK;
    int at;
    st = mc_cands_push(g->cs, g->topo, g->p, root, g->ne, g->parent, g->child, &at, err);
    if (st == MC_OK && at >= 0 && shape == TREE_STAR)
        g->cs->c[at].direct = 1;
out:
    return st;
}

/* Holder hosts to root trees at: the share's own when it has one; else those that also hold
 * destinations, then the others starting at the share's rotation, so that shares leave through
 * different hosts. */
static int root_hosts(const gen_t *g, int *hosts)
{
    const mc_piece_t *pc = g->pc;
    int nh = 0, *hh = mc_xmalloc(sizeof(int) * (size_t)(pc->nholders + 1));
    for (int i = 0; i < pc->nholders; i++) {
        int h = mc_topo_gpu_host(g->topo, pc->holders[i]);
        if (!mc_ints_contain(hh, nh, h))
            hh[nh++] = h;
    }
    int n = 0;
    if (mc_ints_contain(hh, nh, g->root_host)) {
        /* a share has its own holder host: trees from others would tie its component to the
         * other shares', unless it is open to them */
        hosts[n++] = g->root_host;
        if (!g->open) {
            free(hh);
            return n;
        }
    }
    for (int i = 0; i < nh; i++)
        for (int d = 0; d < g->ndh; d++)
            if (g->dh_host[d] == hh[i] && n < MC_ROOT_HOSTS && !mc_ints_contain(hosts, n, hh[i]))
                hosts[n++] = hh[i];
    for (int j = 0; j < nh && n < MC_ROOT_HOSTS; j++) {
        int h = hh[(j + g->rot) % nh];
        if (!mc_ints_contain(hosts, n, h))
            hosts[n++] = h;
    }
    free(hh);
    return n;
}

/* The k-th holder on host h, counting from the piece's rotation (-1 if none). */
static int holder_on(const gen_t *g, int h, int k)
{
    const mc_piece_t *pc = g->pc;
    int n = 0;
    for (int i = 0; i < pc->nholders; i++)
        n += mc_topo_gpu_host(g->topo, pc->holders[i]) == h;
    if (k >= n)
        return -1;
    int want = (k + g->rot) % n;
    for (int i = 0; i < pc->nholders; i++)
        if (mc_topo_gpu_host(g->topo, pc->holders[i]) == h && want-- == 0)
            return pc->holders[i];
    return -1;
}

static void group_dests(gen_t *g)
{
    const mc_piece_t *pc = g->pc;
    g->dh_host = mc_xmalloc(sizeof(int) * (size_t)(pc->ndests + 1));
    g->dh_first = mc_xmalloc(sizeof(int) * (size_t)(pc->ndests + 1));
    g->dh_count = mc_xmalloc(sizeof(int) * (size_t)(pc->ndests + 1));
    g->ndh = 0;
    for (int i = 0; i < pc->ndests; i++) {
        int h = mc_topo_gpu_host(g->topo, pc->dests[i]);
        if (g->ndh == 0 || g->dh_host[g->ndh - 1] != h) {
            g->dh_host[g->ndh] = h;
            g->dh_first[g->ndh] = i;
            g->dh_count[g->ndh++] = 0;
        }
        g->dh_count[g->ndh - 1]++;
    }
}

/* A generator of share sh's trees into cs; pc is the share seen as a piece (its destinations
 * only). */
static void gen_open(gen_t *g, mc_cands_t *cs, const mc_task_t *task, const mc_topo_t *topo,
                     const mc_share_t *sh, mc_piece_t *pc)
{
    *pc = task->pieces[sh->piece];
    pc->ndests = sh->ndests;
    pc->dests = (int *)sh->dests; /* read only: the generators see the share as the piece */
    *g = (gen_t){.cs = cs, .topo = topo, .p = sh->piece, .root_host = sh->root_host,
                 .open = sh->open, .pc = pc, .rail = -1};
    group_dests(g);
    g->parent = mc_xmalloc(sizeof(int) * (size_t)(2 * topo->ngpus + 1));
    g->child = mc_xmalloc(sizeof(int) * (size_t)(2 * topo->ngpus + 1));
    g->seen = mc_xcalloc((size_t)topo->ngpus, sizeof(int));
}

static void gen_close(gen_t *g)
{
    free(g->dh_host);
    free(g->dh_first);
    free(g->dh_count);
    free(g->parent);
    free(g->child);
    free(g->seen);
}

mc_status_t mc_cands_add_spread(mc_cands_t *cs, const mc_task_t *task, const mc_topo_t *topo,
                                const mc_share_t *sh, int root, mc_err_t *err)
{
    gen_t g;
    mc_piece_t pc;
    gen_open(&g, cs, task, topo, sh, &pc);
    mc_status_t st = build(&g, root, TREE_SPREAD, 0, err);
    gen_close(&g);
    return st;
}

mc_status_t mc_cands_add_share(mc_cands_t *cs, const mc_task_t *task, const mc_topo_t *topo,
                               const mc_share_t *sh, int rot, int no_relays, int wrap,
                               mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_piece_t pc;
    int p = sh->piece;
    gen_t g;
    gen_open(&g, cs, task, topo, sh, &pc);
    g.rot = rot;
    g.no_relays = no_relays;
    g.wrap = wrap;
    int first = cs->n;
    int hosts[MC_ROOT_HOSTS];
    int nh = root_hosts(&g, hosts);
    if (nh == 0) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: piece %d has destinations but no holder",
                        __FILE__, __LINE__, p);
        goto out;
    }
    int remote = g.ndh - mc_ints_contain(g.dh_host, g.ndh, hosts[0]);
    int shape = remote >= 2 ? TREE_CHAIN : TREE_HOSTS;
    int r0 = holder_on(&g, hosts[0], 0);
    /* one tree per rail, so that the optimizer can stripe the piece over every NIC: rooted at
     * the holder on that rail, or relayed by the route's PXN hop from the first holder */
    int host_first, ndev = mc_topo_host_gpus(topo, g.dh_host[0], &host_first);
    for (int k = 0; k < ndev; k++) {
        int r = mc_topo_host_gpu_on_dev(topo, hosts[0], k);
        if (r < 0 || !mc_ints_contain(g.pc->holders, g.pc->nholders, r))
            r = r0;
        g.rail = k;
        /* inside each destination host: a chain (every link once) or the shortest-path tree
         * (shallow: less pipeline fill, but the entry GPU sends several times) */
        MC_CHECK_GOTO(build(&g, r, shape, 1, err), out, st);
        MC_CHECK_GOTO(build(&g, r, shape, 0, err), out, st);
    }
    g.rail = -1;
    MC_CHECK_GOTO(build(&g, r0, TREE_HOSTS, 0, err), out, st);
    MC_CHECK_GOTO(build(&g, r0, TREE_STAR, 0, err), out, st);
    if (remote >= 2)
        MC_CHECK_GOTO(build(&g, r0, TREE_HOSTS, 1, err), out, st);
    for (int i = 1; i < nh && cs->n - first < MC_CAND_MAX; i++) {
        int r = holder_on(&g, hosts[i], 0);
        MC_CHECK_GOTO(build(&g, r, TREE_HOSTS, 1, err), out, st);
        if (remote >= 2)
            MC_CHECK_GOTO(build(&g, r, TREE_CHAIN, 1, err), out, st);
    }
    if (cs->n == first)
        st = mc_err_set(err, MC_ERR_INTERNAL, "%s:%d: no candidate tree reaches the %d "
                        "destinations of piece %d", __FILE__, __LINE__, g.pc->ndests, p);
out:
    gen_close(&g);
    return st;
}
