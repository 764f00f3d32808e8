/* Shallow striped trees for pieces whose per-message overheads matter (docs/synthesis.md, "Small
 * pieces"): the root sends to one destination e of its own host, and e fans the bytes out, to the
 * other destinations of the host by the host's shortest-path tree from e and to the other hosts
 * from e's own rail. One such tree per destination e of the root's host, the bytes split evenly
 * over them, is the scatter + all-gather broadcast: every GPU sends about the bytes once, as a
 * chain does, but every destination is two hops from the root instead of up to seven, so a small
 * piece pays two per-message overheads where a chain pays one per hop. */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

/* A share's per-message overheads matter when its best candidate alone takes more than this
 * fraction over its bandwidth time (the pipeline fill and per-chunk overheads of its depth). */
#define MC_RELAY_FILL 0.10

typedef struct tree {
    int *parent, *child, n;
    int *seen;
} tree_t;

static void add(tree_t *t, int a, int b)
{
    if (t->seen[b] || !t->seen[a])
        return;
    t->parent[t->n] = a;
    t->child[t->n++] = b;
    t->seen[b] = 1;
}

/* Reaches dests[0..n) of src's host from src (in the tree) by the host's shortest-path tree. */
static mc_status_t fan_out(tree_t *t, const mc_topo_t *topo, int src, const int *dests, int n,
                           int *par, int *chi, mc_err_t *err)
{
    int k = mc_cands_host_spt(topo, src, dests, n, par, chi, err);
    if (k < 0)
        return MC_ERR_INTERNAL;
    for (int i = 0; i < k; i++)
        add(t, par[i], chi[i]);
    return MC_OK;
}

/* The tree root -> e -> the rest, the other hosts as a tree of the given fan-out over their entry
 * GPUs below e (1: a chain, 0: each straight from e); appended unless it repeats a candidate. (A
 * stripe of the root's own, root -> its NIC and root -> its host, was slower: the root's NVLinks
 * then send the bytes nearly twice; oci-h100-x2, 4 MiB from GPU 0 to the other 15: 2.05 -> 2.22
 * of the bound.) */
static mc_status_t relay_tree(mc_cands_t *cs, const mc_topo_t *topo, const mc_share_t *sh,
                              int root, int e, int fanout, tree_t *t, int *par, int *chi,
                              mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int rhost = mc_topo_gpu_host(topo, root), edev = topo->nodes[topo->gpu_node[e]].dev;
    memset(t->seen, 0, sizeof(int) * (size_t)topo->ngpus);
    t->n = 0;
    t->seen[root] = 1;
    add(t, root, e);
    /* destinations are ascending, so each host's are contiguous; entry[k]: where the k-th other
     * host was entered, its parent entry[k / fanout - 1] (a heap below entry[-1] = e) */
    int nremote = 0, *entry = (int *)mc_xmalloc(sizeof(int) * (size_t)(sh->ndests + 1)) + 1;
    entry[-1] = e;
    for (int i = 0; i < sh->ndests;) {
        int h = mc_topo_gpu_host(topo, sh->dests[i]), j = i;
        while (j < sh->ndests && mc_topo_gpu_host(topo, sh->dests[j]) == h)
            j++;
        int src = e;
        if (h != rhost) {
            /* enter on e's rail (a relay there when that GPU needs nothing); a chain sends once
             * from e's NIC but crosses the network once per host in turn, a star sends from e's
             * NIC once per host */
            int in = mc_topo_host_gpu_on_dev(topo, h, edev);
            src = in >= 0 ? in : sh->dests[i];
            add(t, entry[fanout ? nremote / fanout - 1 : -1], src);
            entry[nremote++] = src;
        }
        MC_CHECK_GOTO(fan_out(t, topo, src, sh->dests + i, j - i, par, chi, err), out, st);
        i = j;
    }
    for (int i = 0; i < sh->ndests; i++)
        if (!t->seen[sh->dests[i]])
            goto out;
    int at;
    st = mc_cands_push(cs, topo, sh->piece, root, t->n, t->parent, t->child, &at, err);
out:
    free(entry - 1);
    return st;
}

int mc_cands_small(const mc_cands_t *cs, int first, int n, uint64_t bytes, int *root)
{
    double best = -1, fluid = 0;
    *root = n > 0 ? cs->c[first].root : -1;
    for (int c = first; c < first + n; c++) {
        double b = (double)bytes * cs->c[c].sec_per_byte;
        double t = b + mc_cand_overhead_s(&cs->c[c], bytes, 0);
        if (best < 0 || t < best) {
            best = t;
            fluid = b;
        }
        if (cs->c[c].direct)
            *root = cs->c[c].root;
    }
    return best > (1 + MC_RELAY_FILL) * fluid;
}

int mc_cands_hosts_away(const mc_topo_t *topo, const mc_share_t *sh, int root, int *nlocal)
{
    int rhost = mc_topo_gpu_host(topo, root), remote = 0;
    *nlocal = 0;
    for (int i = 0; i < sh->ndests; i++) {
        int h = mc_topo_gpu_host(topo, sh->dests[i]);
        *nlocal += h == rhost;
        remote += h != rhost && (i == 0 || mc_topo_gpu_host(topo, sh->dests[i - 1]) != h);
    }
    return remote;
}

int mc_cands_relay_hosts(const mc_topo_t *topo, const mc_share_t *sh, int root)
{
    int nlocal, remote = mc_cands_hosts_away(topo, sh, root, &nlocal);
    /* one relay tree is no stripe: the rail trees already enter other hosts that way */
    return nlocal < 2 ? -1 : remote;
}

mc_status_t mc_cands_add_relays(mc_cands_t *cs, const mc_topo_t *topo, const mc_share_t *sh,
                                int root, int fanout, mc_err_t *err)
{
    int rhost = mc_topo_gpu_host(topo, root);
    if (mc_cands_relay_hosts(topo, sh, root) < 0)
        return MC_OK;
    mc_status_t st = MC_OK;
    size_t room = sizeof(int) * (size_t)(2 * topo->ngpus + 1);
    tree_t t = {mc_xmalloc(room), mc_xmalloc(room), 0,
                mc_xcalloc((size_t)topo->ngpus, sizeof(int))};
    int *par = mc_xmalloc(room), *chi = mc_xmalloc(room);
    for (int i = 0; i < sh->ndests && st == MC_OK; i++)
        if (mc_topo_gpu_host(topo, sh->dests[i]) == rhost)
            st = relay_tree(cs, topo, sh, root, sh->dests[i], fanout, &t, par, chi, err);
    free(t.parent);
    free(t.child);
    free(t.seen);
    free(par);
    free(chi);
    return st;
}

/* The first network link of the route from a to b, -1 when it has none. */
static int first_net(const mc_topo_t *topo, int a, int b)
{
    mc_route_t rt;
    mc_err_t ignored = {0};
    if (mc_topo_route(topo, a, b, &rt, &ignored) != MC_OK)
        return -1;
    for (int i = 0; i < rt.nlinks; i++)
        if (topo->links[rt.links[i]].kind == MC_LINK_NET)
            return rt.links[i];
    return -1;
}

mc_status_t mc_cands_add_split(mc_cands_t *cs, const mc_topo_t *topo, const mc_share_t *sh,
                               int root, int fanout, int hubs, mc_err_t *err)
{
    int rhost = mc_topo_gpu_host(topo, root), nlocal = 0, first_remote = -1;
    int *local = mc_xmalloc(sizeof(int) * (size_t)(sh->ndests + 1));
    int *remote = mc_xmalloc(sizeof(int) * (size_t)(sh->ndests + 1)), nremote = 0;
    for (int i = 0; i < sh->ndests; i++) {
        if (mc_topo_gpu_host(topo, sh->dests[i]) == rhost)
            local[nlocal++] = sh->dests[i];
        else
            remote[nremote++] = sh->dests[i];
    }
    mc_share_t in = *sh, out = *sh;
    in.dests = local;
    in.ndests = nlocal;
    out.dests = remote;
    out.ndests = nremote;
    if (nremote > 0)
        first_remote = mc_topo_gpu_host(topo, remote[0]);
    mc_status_t st = MC_OK;
    size_t room = sizeof(int) * (size_t)(2 * topo->ngpus + 1);
    tree_t t = {mc_xmalloc(room), mc_xmalloc(room), 0,
                mc_xcalloc((size_t)topo->ngpus, sizeof(int))};
    int *par = mc_xmalloc(room), *chi = mc_xmalloc(room);
    int first, ndev = nremote > 0 ? mc_topo_host_gpus(topo, rhost, &first) : 0;
    int *ports = mc_xmalloc(sizeof(int) * (size_t)(ndev + 1)), nports = 0;
    /* the root's host: the scatter + all-gather among its destinations */
    for (int i = 0; i < nlocal && ndev > 0 && st == MC_OK; i++)
        st = relay_tree(cs, topo, &in, root, local[i], fanout, &t, par, chi, err);
    /* the other hosts: one tree per NIC port of the root's host, straight from the root to the
     * first remote host's GPU on that rail (the route's PXN hop on the rail's GPU is no relay),
     * or with hubs one per port and remote host, from that host's GPU on the rail */
    for (int k = 0; k < ndev && st == MC_OK; k++) {
        int e = mc_topo_host_gpu_on_dev(topo, first_remote, k), port;
        if (e < 0 || (port = first_net(topo, root, e)) < 0 || mc_ints_contain(ports, nports, port))
            continue;
        ports[nports++] = port;
        for (int i = 0; i < nremote && st == MC_OK; i++) {
            int h = mc_topo_gpu_host(topo, remote[i]), hub = mc_topo_host_gpu_on_dev(topo, h, k);
            if (i == 0 || (hubs && h != mc_topo_gpu_host(topo, remote[i - 1]) && hub >= 0))
                st = relay_tree(cs, topo, &out, root, i == 0 ? e : hub, fanout, &t, par, chi,
                                err);
        }
    }
    free(ports);
    free(t.parent);
    free(t.child);
    free(t.seen);
    free(par);
    free(chi);
    free(local);
    free(remote);
    return st;
}
