/* The looped-back schedule (docs/synthesis.md, "Session 18"): a tree that leaves its root's host
 * from the root's own NIC and also fans its bytes out inside the root's host sends them over the
 * root's NVLinks as well, so the root's GPU links carry every byte of the piece (the root's own
 * rail stripe once more than the others). Its GPUs there can get them back over their own NICs
 * instead, each from the tree's first host across the network, on its rail: the hosts' NIC ports
 * that a broadcast's hub trees leave partly idle send them, and the root host's NIC ports, which
 * a broadcast from it never receives on, take them. Over eight MI300X hosts (1 GiB from GPU 0)
 * this takes the busiest link's load from 1.13 to 1.01 of the bound (an xGMI link of the root's
 * host before, a hub host's PCIe link to its NIC after). */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

/* The GPU of host h on g's device: where g gets its bytes back from. */
static int back_from(const mc_topo_t *topo, int h, int g)
{
    return mc_topo_host_gpu_on_dev(topo, h, topo->nodes[topo->gpu_node[g]].dev);
}

/* Whether tree t of s loops back: its root sends to another host (the first such edge's child is
 * *entry), and the GPUs of the root's host it reaches send to none outside it (they only take
 * the bytes, or pass them on inside), each with a GPU on its device at the entry's host in the
 * tree. */
static int loops_back(const mc_tree_t *t, const mc_topo_t *topo, int *entry)
{
    int rhost = mc_topo_gpu_host(topo, t->root), local = 0;
    *entry = -1;
    for (int e = 0; e < t->nedges; e++) {
        const mc_tree_edge_t *x = &t->edges[e];
        int ph = mc_topo_gpu_host(topo, x->parent), ch = mc_topo_gpu_host(topo, x->child);
        if (ph == rhost && ch != rhost && x->parent != t->root)
            return 0;
        if (*entry < 0 && x->parent == t->root && ch != rhost)
            *entry = x->child;
        local += ch == rhost;
    }
    if (*entry < 0 || local == 0)
        return 0;
    int h = mc_topo_gpu_host(topo, *entry);
    for (int e = 0; e < t->nedges; e++) {
        int g = t->edges[e].child;
        if (mc_topo_gpu_host(topo, g) != rhost)
            continue;
        int from = back_from(topo, h, g), held = 0;
        for (int f = 0; f < t->nedges && !held; f++)
            held = t->edges[f].child == from;
        mc_route_t rt;
        mc_err_t ignored = {0};
        if (!held || mc_topo_route(topo, from, g, &rt, &ignored) != MC_OK)
            return 0;
    }
    return 1;
}

/* Appends tree t of s to d, looped back when it can be (*looped counts those). */
static mc_status_t copy_tree(mc_sched_t *d, const mc_topo_t *topo, const mc_tree_t *t,
                             int *looped, mc_err_t *err)
{
    int entry, loop = loops_back(t, topo, &entry);
    int rhost = mc_topo_gpu_host(topo, t->root);
    int u = mc_sched_add_tree(d, t->piece, t->offset, t->bytes, t->root, t->phase, t->nchunks);
    mc_tree_t *dst = &d->trees[u];
    dst->edges = mc_xmalloc(sizeof(mc_tree_edge_t) * (size_t)(t->nedges + 1));
    dst->edge_cap = t->nedges;
    dst->nedges = 0;
    /* the edges that stay, in order, then the ones that bring the root's host its bytes back */
    for (int e = 0; e < t->nedges; e++)
        if (!loop || mc_topo_gpu_host(topo, t->edges[e].child) != rhost)
            dst->edges[dst->nedges++] = t->edges[e];
    *looped += loop;
    int h = loop ? mc_topo_gpu_host(topo, entry) : -1;
    for (int e = 0; e < t->nedges && loop; e++) {
        int g = t->edges[e].child;
        if (mc_topo_gpu_host(topo, g) != rhost)
            continue;
        mc_status_t st = mc_sched_add_edge(d, topo, u, back_from(topo, h, g), g, err);
        if (st != MC_OK)
            return st;
    }
    return MC_OK;
}

mc_status_t mc_sched_looped(const mc_sched_t *s, const mc_topo_t *topo, mc_sched_t **out,
                            mc_err_t *err)
{
    mc_sched_t *d = mc_sched_new(s->task, topo, s->strategy);
    mc_status_t st = MC_OK;
    int looped = 0;
    d->mem_limit = s->mem_limit;
    d->nphases = s->nphases > 0 ? s->nphases : 1;
    for (int t = 0; t < s->ntrees && st == MC_OK; t++)
        st = copy_tree(d, topo, &s->trees[t], &looped, err);
    if (st != MC_OK || looped == 0) {
        mc_sched_free(d);
        *out = NULL;
        return st;
    }
    mc_sched_plan_rates(d, topo);
    *out = d;
    return MC_OK;
}
