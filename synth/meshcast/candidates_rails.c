/* Rail-stripe candidate trees (docs/synthesis.md, "Rail stripes"): for a share that leaves its
 * root host, per rail k it is given, trees whose root hands the bytes once to the GPU x on rail
 * k of its own host; x sends them out on its own NIC, as a chain across the destination hosts or
 * through one hub host that sends them to every other one (entering each host at its GPU on rail
 * k, which fans out inside it), and the root host's destinations get them on the way. Striped
 * over the rails, the root's links carry each byte once and every NIC sends each stripe at most
 * once per hop: the host's whole NIC rate. The shape trees (candidates.c) send every stripe out
 * of the root twice (its own fan-out beside the PXN hop), which bounds a one-GPU broadcast at the
 * root's NVLink rate over two. Where the share has several rails, the root host's part of every
 * rail's trees is planned with the others' load (candidates_home.c); on the root's own rail its
 * trees start at another GPU each, so that the split spreads that stripe too. Each tree's stripe
 * is its part in that split. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

/* Two-level trees are generated up to this many remote hosts (one per rail and hub host). */
#define MC_RAIL_HUBS_MAX 16
/* The most units a striped share is cut into (beyond, MC_PIECE_UNITS_FINE). */
#define MC_RAIL_UNITS_MAX 1024
/* The fewest bytes a unit of a striped share carries: NCCL's network P2P chunk (units of 1/168
 * of a small share would be messages whose overhead outweighs their bytes). */
#define MC_RAIL_UNIT_MIN (128u * 1024u)
/* The fewest bytes a tree of the stripe split carries: 8 network chunks. An all-gather of 64 MiB
 * over 4 DGX A100 (2 MiB shares, 683 KiB per two-level tree) went from 1.24 to 1.40 of the
 * bound striped; a broadcast of 64 MiB over 8 OCI A100 boxes (1.1 MiB per tree) from 2.70 to
 * 1.75, host 0's shards to those boxes (1.1 MiB) from 2.47 to 1.48. */
#define MC_RAIL_TREE_MIN (1024.0 * 1024.0)
/* A port counts as fed when its GPUs' routes to it reach this share of its rate (a NIC of 25 GB/s
 * behind a 24 GB/s PCIe link is fed by one GPU of 24). */
#define MC_RAIL_FED 0.9

typedef struct rails {
    mc_cands_t *cs;
    const mc_topo_t *topo;
    const mc_piece_t *pc; /* the share seen as a piece */
    int p;
    int *parent, *child, ne;
    int *seen;
    int *want;            /* scratch: destinations of one host still to reach */
    int *spar, *schi;     /* scratch: one host's shortest-path tree */
    int *hosts, nhosts;   /* the remote destination hosts, ascending */
    int *entries;         /* scratch: the remote hosts' entry GPUs, in the order a tree enters */
    int *made, nmade, capmade; /* the trees of the rail being built (candidate indices) */
    int local;            /* the share has destinations in the root host */
    int fanout;           /* without a hub, each remote entry's parent: the previous entry (1: a
                           * chain) or, above 1, a tree of that fan-out below the rail's GPU */
    int stride, ndev;     /* the root host's trees (candidates_home.c): that of rail k whose */
    int *slot;            /* first GPU has dev d at slot[k x ndev + d] x stride (-1: none) */
    int *hpar, *hchi, *hne, *hpath;
    double fan_bytes, fan_chunk; /* small shares: each tree's bytes and chunk, and the rail's */
    double fan_bw;               /* bandwidth, for its fan-out inside a host (0: shortest paths) */
    int small;                   /* a small share's trees (mc_cands_add_rails_small) */
    int *in;                      /* scratch: one host's GPUs already in the tree */
} rails_t;

static void edge(rails_t *r, int a, int b)
{
    if (r->seen[b])
        return;
    r->parent[r->ne] = a;
    r->child[r->ne++] = b;
    r->seen[b] = 1;
}

/* Reaches the destinations of host h not yet in the tree from src (in the tree) by the host's
 * shortest-path tree: a star over a switch, relays over a partial mesh. */
static mc_status_t fan_out(rails_t *r, int h, int src, mc_err_t *err)
{
    int nwant = 0;
    for (int i = 0; i < r->pc->ndests; i++)
        if (mc_topo_gpu_host(r->topo, r->pc->dests[i]) == h && !r->seen[r->pc->dests[i]])
            r->want[nwant++] = r->pc->dests[i];
    if (nwant == 0)
        return MC_OK;
    int nin = 0, g0, n = mc_topo_host_gpus(r->topo, h, &g0);
    if (r->fan_bytes > 0)
        for (int g = g0; g < g0 + n; g++)
            if (r->seen[g])
                r->in[nin++] = g;
    int k = mc_cands_host_spt(r->topo, src, r->want, nwant, r->spar, r->schi, err);
    /* a small share's: where the shortest-path tree's busiest link takes longer than the rail
     * that feeds the host (over a PCIe box), the one built by alpha-beta cost if cheaper */
    double most = 0, spt = 0;
    if (k > 0 && nin > 0 && r->fan_bytes > 0)
        spt = mc_cands_fanout_cost(r->topo, r->spar, r->schi, k, r->fan_bytes, r->fan_chunk,
                                   &most);
    if (spt > 0 && most * r->fan_bw > r->fan_bytes) {
        int *p2 = r->spar + k, *c2 = r->schi + k;
        int k2 = mc_cands_host_fanout(r->topo, r->in, nin, r->want, nwant, r->fan_bytes,
                                      r->fan_chunk, p2, c2);
        if (k2 > 0 && mc_cands_fanout_cost(r->topo, p2, c2, k2, r->fan_bytes, r->fan_chunk,
                                           &most) < spt * (1 - 1e-9)) {
            memmove(r->spar, p2, sizeof(int) * (size_t)k2);
            memmove(r->schi, c2, sizeof(int) * (size_t)k2);
            k = k2;
        }
    }
    if (k < 0)
        return MC_ERR_INTERNAL;
    for (int i = 0; i < k; i++)
        edge(r, r->spar[i], r->schi[i]);
    return MC_OK;
}

/* Reaches g (in src's host) from src (in the tree) by the host's shortest-path tree: over a
 * partial mesh (MI250: GPU 0 has xGMI to 1, 4 and 6 only) through xGMI relays rather than the
 * direct route, which would cross both GPUs' PCIe bridges and the switch their NICs hang from. */
static mc_status_t reach(rails_t *r, int src, int g, mc_err_t *err)
{
    if (src == g)
        return MC_OK;
    int k = mc_cands_host_spt(r->topo, src, &g, 1, r->spar, r->schi, err);
    if (k < 0)
        return MC_ERR_INTERNAL;
    for (int i = 0; i < k; i++)
        edge(r, r->spar[i], r->schi[i]);
    return MC_OK;
}

/* Where the stripe of rail k enters host h: its GPU on that rail (a relay when it needs
 * nothing), else the host's first destination. */
static int entry(const rails_t *r, int h, int k)
{
    int g = mc_topo_host_gpu_on_dev(r->topo, h, k);
    if (g >= 0)
        return g;
    for (int i = 0; i < r->pc->ndests; i++)
        if (mc_topo_gpu_host(r->topo, r->pc->dests[i]) == h)
            return r->pc->dests[i];
    return -1;
}

/* The hosts, other than h0, of the share's destinations (ascending); returns their count. */
static int remote_hosts(const rails_t *r, int h0, int *hosts)
{
    int n = 0;
    for (int i = 0; i < r->pc->ndests; i++) {
        int h = mc_topo_gpu_host(r->topo, r->pc->dests[i]);
        if (h != h0 && (n == 0 || hosts[n - 1] != h))
            hosts[n++] = h;
    }
    return n;
}

/* One tree: its part in the root host (with several rails, a home tree: from the root first to
 * the host's GPU of dev d, the rail GPU x unless x is the root, then to its destinations; with
 * one, root -> x and x's shortest-path tree there, as at every other host); from x on rail k, a
 * chain over the remote hosts (hub < 0) or the hub host first and from its entry every other
 * remote host (a two-level star: the hub's NIC sends to each, a NIC per rail). Appended when it
 * is complete. */
static mc_status_t build(rails_t *r, int root, int x, int d, int k, int hub, mc_err_t *err)
{
    const mc_topo_t *t = r->topo;
    int h0 = mc_topo_gpu_host(t, root);
    memset(r->seen, 0, sizeof(int) * (size_t)t->ngpus);
    r->ne = 0;
    r->seen[root] = 1;
    mc_status_t st = MC_OK;
    int ht = r->slot ? r->slot[k * r->ndev + d] : -1;
    /* a home tree's path to x first, its other edges in the root host's place among the hosts
     * (all of them there on the root's own rail), as the shapes of candidates.c order theirs */
    int lead = ht >= 0 && x != root ? r->hpath[ht] : 0;
    /* without destinations in the root host, x is only the route's PXN hop (mc_topo_route
     * passes through it): as a relay it would add a store-and-forward */
    if (r->local && ht >= 0)
        for (int i = 0; i < lead; i++)
            edge(r, r->hpar[ht * r->stride + i], r->hchi[ht * r->stride + i]);
    else if (r->local)
        st = reach(r, root, x, err);
    else
        x = root;
    int prev = x, from = x, nent = 0;
    if (hub >= 0 && st == MC_OK) {
        from = entry(r, r->hosts[hub], k);
        edge(r, x, from);
        st = fan_out(r, r->hosts[hub], from, err);
    }
    /* the hosts in ascending order, the root host's fan-out in its place, as the shapes of
     * candidates.c list them: a tree they already have is found again, not added twice */
    for (int i = 0, mine = !r->local; i <= r->nhosts && st == MC_OK; i++) {
        if (!mine && (i == r->nhosts || r->hosts[i] > h0)) {
            for (int j = lead; ht >= 0 && j < r->hne[ht]; j++)
                edge(r, r->hpar[ht * r->stride + j], r->hchi[ht * r->stride + j]);
            st = fan_out(r, h0, x, err);
            mine = 1;
        }
        if (i == r->nhosts || i == hub || st != MC_OK)
            continue;
        int e = entry(r, r->hosts[i], k);
        /* entries numbered in order below x: entry j's parent is x for j < fanout, else entry
         * j / fanout - 1 (a heap; the entries so far are the tree's edges into other hosts) */
        int up = r->fanout > 1 && nent >= r->fanout ? r->entries[nent / r->fanout - 1] : x;
        edge(r, hub >= 0 ? from : r->fanout > 1 ? up : prev, e);
        r->entries[nent++] = e;
        prev = e;
        st = fan_out(r, r->hosts[i], e, err);
    }
    if (st != MC_OK)
        return st;
    for (int i = 0; i < r->pc->ndests; i++)
        if (!r->seen[r->pc->dests[i]])
            return MC_OK;
    int at;
    mc_status_t pst = mc_cands_push(r->cs, t, r->p, root, r->ne, r->parent, r->child, &at, err);
    if (pst == MC_OK && at >= 0 && r->nmade < r->capmade)
        r->made[r->nmade++] = at;
    return pst;
}

/* The dev of the first GPU in the root host of rail k's tree for hub (-1: a chain, the j-th):
 * the rail GPU's own, unless it is the root (own): then its trees start at each other GPU in
 * turn (hub h at the (h + 2)-th GPU after the root's, the root's own turn going to the next), so
 * that the root's links carry each byte of its own stripe once. */
static int first_dev(int k, int own, int hub, int j, int ndev)
{
    int d = hub >= 0 ? (k + hub + 2) % ndev : (k + 1 + j) % ndev;
    return !own ? k : d == k ? (k + 1) % ndev : d;
}

/* How many chains rail k has: one per first GPU where they carry the root's own stripe (no
 * hubs), else one. */
static int nchains(int own, int hubs, int ndev)
{
    return own && !hubs ? ndev - 1 : 1;
}

/* The root host's trees of the rails given (mine), for each rail and first GPU its trees use
 * (first_dev), weighted by the part of the rail's stripe they carry (hubs: how many two-level
 * trees a rail has, 0: the chains carry it). */
static mc_status_t home(rails_t *r, int h0, int r0, int ndev, const char *mine, int hubs,
                        mc_err_t *err)
{
    const mc_topo_t *t = r->topo;
    int nwant = 0, n = 0, ndep = 0;
    for (int i = 0; i < r->pc->ndests; i++)
        if (mc_topo_gpu_host(t, r->pc->dests[i]) == h0)
            r->want[nwant++] = r->pc->dests[i];
    int cap = ndev * ndev + 1;
    int *roots = mc_xmalloc(sizeof(int) * (size_t)(4 * cap)), *firsts = roots + cap;
    int *dep_from = firsts + cap, *dep_to = dep_from + cap;
    double *ws = mc_xcalloc((size_t)cap, sizeof(double));
    r->ndev = ndev;
    r->slot = mc_xmalloc(sizeof(int) * (size_t)cap);
    for (int i = 0; i < cap; i++)
        r->slot[i] = -1;
    for (int k = 0; k < ndev; k++) {
        int x = mc_topo_host_gpu_on_dev(t, h0, k);
        if (!mine[k] || x < 0)
            continue;
        int root = mc_ints_contain(r->pc->holders, r->pc->nholders, x) ? x : r0, own = root == x;
        dep_from[ndep] = x;
        dep_to[ndep] = mc_topo_host_gpu_on_dev(t, r->hosts[0], k);
        ndep += dep_to[ndep] >= 0;
        /* the chains carry the stripe without hubs, else (weight 0) the two-level trees */
        for (int hub = -1; hub < hubs; hub++)
            for (int j = 0; j < (hub < 0 ? nchains(own, hubs, ndev) : 1); j++) {
                int d = first_dev(k, own, hub, j, ndev), g = mc_topo_host_gpu_on_dev(t, h0, d);
                if (g < 0)
                    continue;
                if (r->slot[k * ndev + d] < 0) {
                    roots[n] = root;
                    firsts[n] = g;
                    r->slot[k * ndev + d] = n++;
                }
                ws[r->slot[k * ndev + d]] +=
                    (hub < 0) == !hubs ? 1.0 / (hubs ? hubs : nchains(own, hubs, ndev)) : 0;
            }
    }
    r->stride = nwant + 2;
    r->hpar = mc_xmalloc(sizeof(int) * (size_t)(n + 1) * (size_t)r->stride);
    r->hchi = mc_xmalloc(sizeof(int) * (size_t)(n + 1) * (size_t)r->stride);
    r->hne = mc_xcalloc((size_t)n + 1, sizeof(int));
    r->hpath = mc_xcalloc((size_t)n + 1, sizeof(int));
    mc_home_t h = {.n = n, .roots = roots, .firsts = firsts, .ws = ws, .dests = r->want,
                   .ndests = nwant, .dep_from = dep_from, .dep_to = dep_to, .ndep = ndep};
    mc_status_t st = MC_OK;
    if (mc_cands_home_trees(t, &h, r->hpar, r->hchi, r->hne, r->hpath) < 0)
        st = mc_err_set(err, MC_ERR_INTERNAL, "%s:%d: a GPU of host %d is unreachable from %d",
                        __FILE__, __LINE__, h0, r0);
    free(roots);
    free(ws);
    return st;
}

int mc_rails_host(const mc_task_t *task, const mc_topo_t *topo, const mc_share_t *sh)
{
    if (sh->root_host >= 0)
        return sh->root_host;
    const mc_piece_t *pc = &task->pieces[sh->piece];
    int h = pc->nholders > 0 ? mc_topo_gpu_host(topo, pc->holders[0]) : -1;
    for (int i = 1; i < pc->nholders && h >= 0; i++)
        if (mc_topo_gpu_host(topo, pc->holders[i]) != h)
            h = -1;
    return h;
}

/* Marks in mine[] the rails (dev indices of host h) share s of the host's nshares stripes
 * over: ndev / nshares of them (at least one), the first free ones from its root's rail on
 * (taken[]: per GPU of the host, its rail already given to an earlier share; all freed again when
 * too few are left), so that shares leaving one host divide its NICs, each on its own root's rail
 * where it can. */
static void assign_rails(const mc_topo_t *topo, int h, int r0, int nshares, const char *usable,
                         char *taken, char *mine)
{
    int first, ndev = mc_topo_host_gpus(topo, h, &first), nrails = 0, nfree = 0;
    for (int k = 0; k < ndev; k++) {
        nrails += usable[k];
        nfree += usable[k] && !taken[first + k];
    }
    int span = nshares > 1 ? nrails / nshares : nrails, d0 = r0 - first;
    span = span < 1 ? 1 : span;
    if (nfree < span)
        memset(taken + first, 0, (size_t)ndev);
    memset(mine, 0, (size_t)ndev);
    for (int i = 0, got = 0; i < ndev && got < span; i++) {
        int k = (d0 + i) % ndev;
        if (usable[k] && !taken[first + k]) {
            taken[first + k] = mine[k] = 1;
            got++;
        }
    }
}

static int span_of(const char *mine, int ndev)
{
    int n = 0;
    for (int k = 0; k < ndev; k++)
        n += mine[k];
    return n;
}

/* Marks in usable[] the rails of host h0 that a NIC port needs to send at its rate: on each port
 * (by the route to the first remote host's GPU on the rail), the root's own rail r0 when it is
 * on it, then the others in order while the GPUs taken so far feed the port less than its rate
 * (the slowest link of a GPU's route before the port). One GPU per port where a GPU's PCIe is as
 * fast as its NIC (two GPUs per NIC on a p4d: the second would only share the port); two where it
 * is half as fast (MI250: 12 GB/s x8 bridges under a 24 GB/s NIC, so one rail per port left half
 * of each NIC idle and a broadcast over 8 hosts at 2.45 of the bound). Returns how many. A host
 * with one NIC whose GPUs each fill it (the paper's p3.8xlarge) has one rail: nothing to stripe. */
static int usable_rails(const rails_t *r, int h0, int ndev, int r0, char *usable)
{
    const mc_topo_t *t = r->topo;
    mc_err_t ignored = {0};
    int *port = mc_xmalloc(sizeof(int) * (size_t)(ndev + 1)), n = 0;
    double *feed = mc_xmalloc(sizeof(double) * (size_t)(ndev + 1));
    double *fed = mc_xcalloc((size_t)t->nlinks + 1, sizeof(double));
    int *order = mc_xmalloc(sizeof(int) * (size_t)(ndev + 1)), norder = 0;
    memset(usable, 0, (size_t)ndev);
    for (int k = 0; k < ndev; k++) {
        int x = mc_topo_host_gpu_on_dev(t, h0, k);
        int to = mc_topo_host_gpu_on_dev(t, r->hosts[0], k);
        mc_route_t rt;
        port[k] = -1;
        feed[k] = HUGE_VAL;
        if (x < 0 || to < 0 || mc_topo_route(t, x, to, &rt, &ignored) != MC_OK)
            continue;
        for (int i = 0; i < rt.nlinks && port[k] < 0; i++) {
            if (t->links[rt.links[i]].kind == MC_LINK_NET)
                port[k] = rt.links[i];
            else if (t->links[rt.links[i]].bw < feed[k])
                feed[k] = t->links[rt.links[i]].bw;
        }
        if (x == r0)
            order[norder++] = k;
    }
    for (int k = 0; k < ndev; k++)
        if (norder == 0 || order[0] != k)
            order[norder++] = k;
    /* a small share's on a host of one NIC port: the best fed GPUs first, the root first among
     * equals: on a PCIe box the GPUs behind the link between its CPUs would send every stripe
     * over it, to the NIC and again to their own host's GPUs (insertion sort, stable; with
     * several ports the shares' rails stay their roots', a DGX-1 host broadcast 1.49 -> 1.62 of
     * the bound otherwise) */
    int one_port = 1;
    for (int k = 0; k < ndev; k++)
        one_port &= port[k] < 0 || port[k] == port[order[0]];
    for (int i = 1; i < norder && r->small && one_port; i++)
        for (int j = i; j > 0 && port[order[j]] >= 0 && port[order[j]] == port[order[j - 1]] &&
                        feed[order[j]] > feed[order[j - 1]];
             j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    for (int i = 0; i < norder; i++) {
        int k = order[i];
        if (port[k] < 0 || fed[port[k]] >= t->links[port[k]].bw * MC_RAIL_FED)
            continue;
        fed[port[k]] += feed[k];
        usable[k] = 1;
        n++;
    }
    free(port);
    free(feed);
    free(fed);
    free(order);
    return n;
}

/* The alpha-beta time of a store-and-forward tree `levels` deep whose every level sends `load`
 * bytes over a link of bw bytes/s, each message waiting hop first, in c chunks (at most `most`):
 * (c + levels - 1) (hop + load / (c bw)), at the best c. */
static double pipelined(int levels, double load, double bw, double hop, double most)
{
    double best = HUGE_VAL;
    for (int c = 1; c <= (most > 1 ? most : 1) && c <= MC_CHUNKS_MAX; c++) {
        double t = (c + levels - 1) * (hop + load / (c * bw));
        best = t < best ? t : best;
    }
    return best;
}

/* How the rail trees cross between hosts: hubs -1 as the rule in add_rails says, 0 none (chains
 * or trees of the fan-out), 1 every remote host a hub; fanout 0: both chosen by choose_shape;
 * trees of the stripe split below tree_min bytes drop the share's trees again (0: never). */
typedef struct shape {
    int hubs, fanout;
    double tree_min;
} shape_t;

/* Chooses the crossing of a small share's stripes by the alpha-beta cost of one rail's stripe,
 * s = bytes / rails, to the n remote hosts over the rail's network route from the root's rail
 * (bottleneck bw, message wait hop = alpha + latency, mc_topo_links_delay): through n hubs, two
 * waits, the sending NIC moving s and each hub's (n - 1) s / n (as a two-level tree whose levels
 * move s); or a tree of fan-out f (1 a chain, n a star), each of its levels a NIC sending f s.
 * A star pays one wait and n s of bytes, a chain n waits and s; the hubs two waits and about
 * 2 s. The least wins (ties: the first of star, fan-out n - 1 .. 1, hubs). Chunks of at least
 * NCCL's network chunk. */
static double choose_shape(const rails_t *r, int h0, int k0, int rails, shape_t *shp)
{
    const mc_topo_t *t = r->topo;
    mc_route_t rt;
    mc_err_t ignored = {0};
    int x = mc_topo_host_gpu_on_dev(t, h0, k0), to = entry(r, r->hosts[0], k0), n = r->nhosts;
    shp->hubs = 0;
    shp->fanout = 1;
    if (x < 0 || to < 0 || rails < 1 || mc_topo_route(t, x, to, &rt, &ignored) != MC_OK)
        return 0;
    double bw = HUGE_VAL, hop = mc_topo_links_delay(t, rt.links, rt.nlinks);
    for (int i = 0; i < rt.nlinks; i++)
        bw = t->links[rt.links[i]].bw < bw ? t->links[rt.links[i]].bw : bw;
    double s = (double)r->pc->bytes / rails, chunks = s / MC_RAIL_UNIT_MIN, best = HUGE_VAL;
    for (int f = n; f >= 1; f--) {
        int levels = 0;
        for (double reach = 0, w = 1; reach < n; levels++) {
            w *= f;
            reach += w;
        }
        double c = pipelined(levels, f * s, bw, hop, chunks);
        if (c < best) {
            best = c;
            shp->fanout = f;
        }
    }
    if (n >= 2 && n <= MC_RAIL_HUBS_MAX && pipelined(2, s, bw, hop, chunks / n) < best) {
        shp->hubs = 1;
        shp->fanout = 1;
    }
    return bw;
}

static mc_status_t add_rails(mc_cands_t *cs, const mc_topo_t *topo, int p, const mc_piece_t *pc,
                             int root_host, int nshares, int senders, char *taken, shape_t shp,
                             int *units, mc_err_t *err)
{
    *units = 0;
    int remote = 0, local = 0, h0first;
    for (int i = 0; i < pc->ndests; i++) {
        if (mc_topo_gpu_host(topo, pc->dests[i]) != root_host)
            remote = 1;
        else
            local = 1;
    }
    int ndev = mc_topo_host_gpus(topo, root_host, &h0first), r0 = -1;
    for (int i = 0; i < pc->nholders && r0 < 0; i++)
        if (mc_topo_gpu_host(topo, pc->holders[i]) == root_host)
            r0 = pc->holders[i];
    if (!remote || r0 < 0 || ndev < 2)
        return MC_OK;
    int n = topo->ngpus;
    rails_t r = {.cs = cs, .topo = topo, .pc = pc, .p = p, .local = local};
    r.small = shp.fanout == 0;
    int before = cs->n;
    r.parent = mc_xmalloc(sizeof(int) * (size_t)(2 * n + 2));
    r.child = mc_xmalloc(sizeof(int) * (size_t)(2 * n + 2));
    r.seen = mc_xcalloc((size_t)n, sizeof(int));
    r.want = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    r.spar = mc_xmalloc(sizeof(int) * (size_t)(2 * n + 2));
    r.schi = mc_xmalloc(sizeof(int) * (size_t)(2 * n + 2));
    r.hosts = mc_xmalloc(sizeof(int) * (size_t)(topo->nhosts + 1));
    r.entries = mc_xmalloc(sizeof(int) * (size_t)(topo->nhosts + 1));
    r.in = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    r.nhosts = remote_hosts(&r, root_host, r.hosts);
    char *mine = mc_xcalloc((size_t)ndev + 1, 1), *usable = mc_xcalloc((size_t)ndev + 1, 1);
    mc_status_t st = MC_OK;
    /* two rails at least to stripe over; a small share's trees also on one (a host of one NIC:
     * its crossing between hosts is chosen all the same, choose_shape) where no other host sends:
     * where every host's one NIC sends its own shares (an all-gather over 8 RTX 3090 boxes) they
     * cost the 1 GiB all-gather 11% more synthesis (3.21 -> 3.58 s of CPU) and won nothing */
    int fewest = r.small && senders == 1 ? 1 : 2;
    if (r.nhosts > 0 && usable_rails(&r, root_host, ndev, r0, usable) >= fewest)
        assign_rails(topo, root_host, r0, nshares, usable, taken, mine);
    else
        ndev = 0;
    if (shp.fanout == 0 && ndev > 0) {
        int rails = span_of(mine, ndev);
        r.fan_bw = choose_shape(&r, root_host, r0 - h0first, rails, &shp);
        r.fan_bytes = (double)pc->bytes / rails / (shp.hubs ? r.nhosts : 1);
        r.fan_chunk = r.fan_bytes < MC_RAIL_UNIT_MIN ? r.fan_bytes : MC_RAIL_UNIT_MIN;
    }
    /* hubs: the two-level trees, one per rail and remote host, while they stay few (each hub's
     * NIC sends its part to every other host: balanced when every host is a hub), where one host
     * sends or where the share has several rails of its own. Not where several hosts each send
     * shares of one rail (an all-gather): there they were slower than the chains (1 GiB over 8
     * OCI A100 boxes: 1.060 of the bound with chains, 1.105 with hubs). Where each host sends
     * one share over all its rails (32 MiB from each of 4 DGX H100 to the 3 others), the shapes'
     * chains, hosts in ascending order, have host 0's NICs forward 3 stripes and host 3's none
     * (1.58 of the bound); hubs forward 2/3 of a stripe of every other share on every host's
     * NICs, two network hops deep (1.16) */
    r.fanout = shp.fanout;
    int hubs = r.nhosts >= 2 && r.nhosts <= MC_RAIL_HUBS_MAX && shp.hubs != 0 &&
                       (shp.hubs > 0 || senders == 1 || span_of(mine, ndev) >= 2)
                   ? r.nhosts
                   : 0;
    r.capmade = ndev + hubs + 2;
    r.made = mc_xmalloc(sizeof(int) * (size_t)r.capmade);
    /* the root host's trees planned together where several rails load its links */
    if (local && span_of(mine, ndev) >= 2)
        st = home(&r, root_host, r0, ndev, mine, hubs, err);
    int *per_rail = mc_xcalloc((size_t)(ndev + 1) * (size_t)r.capmade, sizeof(int));
    int *nper = mc_xcalloc((size_t)ndev + 1, sizeof(int)), nrails = 0;
    for (int k = 0; k < ndev && st == MC_OK; k++) {
        int x = mc_topo_host_gpu_on_dev(topo, root_host, k);
        if (!mine[k] || x < 0)
            continue;
        int root = mc_ints_contain(pc->holders, pc->nholders, x) ? x : r0;
        int own = root == x && r.slot; /* its trees start in turn (home trees only) */
        for (int hub = -1; hub < hubs && st == MC_OK; hub++) {
            r.nmade = 0;
            for (int j = 0; j < (hub < 0 ? nchains(own, hubs, ndev) : 1) && st == MC_OK; j++)
                st = build(&r, root, x, first_dev(k, own, hub, j, ndev), k, hub, err);
            /* the rail's part goes to its two-level trees, or to its chains without hubs */
            if (hub < 0 && hubs > 0)
                continue;
            memcpy(per_rail + (size_t)k * (size_t)r.capmade + nper[k], r.made,
                   sizeof(int) * (size_t)r.nmade);
            nper[k] += r.nmade;
        }
        nrails += nper[k] > 0;
    }
    /* units: a multiple of every rail's count of trees times the rails, so that the split
     * rounds to whole units exactly (a NIC carrying one unit more than the others is the
     * bottleneck) */
    uint64_t lcm = 1;
    double least = 1;
    for (int k = 0; k < ndev && st == MC_OK; k++) {
        for (int i = 0; i < nper[k]; i++)
            cs->c[per_rail[(size_t)k * (size_t)r.capmade + i]].stripe += 1.0 / nrails / nper[k];
        if (nper[k] && 1.0 / nrails / nper[k] < least)
            least = 1.0 / nrails / nper[k];
        uint64_t m = (uint64_t)nrails * (uint64_t)(nper[k] ? nper[k] : 1), a = lcm, b = m;
        while (b) {
            uint64_t t = a % b;
            a = b;
            b = t;
        }
        lcm = lcm / a * m;
    }
    /* whole stripes, in units of at least one network chunk */
    uint64_t most = pc->bytes / MC_RAIL_UNIT_MIN, fill = (MC_PIECE_UNITS_FINE + lcm - 1) / lcm;
    uint64_t times = lcm * fill <= most ? fill : most / lcm;
    *units = shp.tree_min <= 0          ? 0
             : lcm > MC_RAIL_UNITS_MAX ? MC_PIECE_UNITS_FINE
                                       : (int)(lcm * times);
    /* trees the shapes already had (one rail host reached from a holder on every rail), or
     * stripe trees too small to pipeline over their hops: the share is left as it was, its plan
     * found as before (kept as mere candidates, the trees moved a 4 MiB broadcast over 4 p4d
     * hosts from 2.83 to 3.29 of the bound) */
    if (cs->n == before ||
        (shp.tree_min > 0 && (times == 0 || least * (double)pc->bytes < shp.tree_min))) {
        *units = 0;
        for (int k = 0; k < ndev; k++)
            for (int i = 0; i < nper[k]; i++)
                cs->c[per_rail[(size_t)k * (size_t)r.capmade + i]].stripe = 0;
        mc_cands_truncate(cs, before);
    }
    free(per_rail);
    free(nper);
    free(r.made);
    free(mine);
    free(usable);
    free(r.parent);
    free(r.child);
    free(r.seen);
    free(r.want);
    free(r.spar);
    free(r.schi);
    free(r.hosts);
    free(r.entries);
    free(r.in);
    free(r.slot);
    free(r.hpar);
    free(r.hchi);
    free(r.hne);
    free(r.hpath);
    return st;
}

mc_status_t mc_cands_add_rails(mc_cands_t *cs, const mc_topo_t *topo, int p,
                               const mc_piece_t *pc, int root_host, int nshares, int senders,
                               char *taken, int *units, mc_err_t *err)
{
    shape_t shp = {-1, 1, MC_RAIL_TREE_MIN};
    return add_rails(cs, topo, p, pc, root_host, nshares, senders, taken, shp, units, err);
}

mc_status_t mc_cands_add_rails_small(mc_cands_t *cs, const mc_topo_t *topo, int p,
                                     const mc_piece_t *pc, int root_host, int nshares,
                                     int senders, char *taken, mc_err_t *err)
{
    shape_t shp = {0, 0, 0};
    int units;
    return add_rails(cs, topo, p, pc, root_host, nshares, senders, taken, shp, &units, err);
}

/* The stripe split is kept where its busiest link is within this of the other trees' optimum
 * (the fractional solve's own gap, MC_FRAC_GAP, is 0.2%). */
#define MC_RAIL_KEEP 1.01

void mc_rails_unstripe(mc_cands_t *cs, const mc_task_t *task, const mc_topo_t *topo,
                       mc_shares_t *sh, const int *first, const int *count, double frac_s)
{
    double *demand = mc_xmalloc(sizeof(double) * (size_t)(sh->n + 1)), value[2] = {0, 0};
    int striped = 0;
    for (int i = 0; i < sh->n; i++) {
        demand[i] = (double)task->pieces[sh->s[i].piece].bytes;
        striped += sh->s[i].fine > 1;
    }
    /* 0: the stripe split of the striped shares; 1: the optimum over every share's other trees,
     * solved only where the split is above the optimum over all trees, frac_s (else it is within
     * MC_RAIL_KEEP of the others' too: the 1024-GPU scale case's stripes, 0.2 s of CPU) */
    for (int k = 0; k < 2 && striped && (k == 0 || value[0] > MC_RAIL_KEEP * frac_s); k++) {
        mc_frac_t f;
        mc_frac_init(&f, cs, topo, sh->n, demand);
        for (int i = 0; i < sh->n; i++)
            for (int c = first[i]; c < first[i] + count[i]; c++)
                if (k ? cs->c[c].stripe <= 0 : cs->c[c].stripe > 0 && sh->s[i].fine > 1) {
                    mc_frac_add(&f, i, c);
                    f.x[c] = k ? 0 : cs->c[c].stripe;
                }
        mc_frac_solve(&f, k ? mc_frac_steps(&f) : 0);
        value[k] = f.value_s;
        mc_frac_free(&f);
    }
    for (int i = 0; i < sh->n && value[1] > 0 && value[0] > MC_RAIL_KEEP * value[1]; i++) {
        if (sh->s[i].fine <= 1)
            continue;
        for (int c = first[i]; c < first[i] + count[i]; c++)
            cs->c[c].stripe = 0;
        sh->s[i].fine = 1;
    }
    free(demand);
}
