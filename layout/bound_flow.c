/* The flow term of the lower bound: the bytes a destination needs from a holder group can reach it
 * no faster than the maximum flow from the group's GPUs to it, relays anywhere (Edmonds: a
 * broadcast from one root runs at the smallest root-to-destination max-flow and no faster). The
 * pieces counted for a group H and destination d are those held only inside H (their holders are
 * a subset of H) that d needs, so one pair sums only bytes that must all cross every cut between
 * H and d; different pairs share links, so pairs are not summed, the largest is the term.
 *
 * A pair costs one max-flow on the topology, or on a large cluster on the hosts of its GPUs with
 * the rest contracted into one node (which can only add flow). Pairs are tried in decreasing
 * order of their bytes over the smaller of the group's egress and the destination's ingress (the
 * least the pair's term can be, since its max-flow passes both), within a fixed amount of work,
 * so the pairs likeliest to bind come first and a very large task stops early with a term that
 * is still valid. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layout/bound_internal.h"

/* Arcs scanned by the flow solves (mc_flow_t.work) before the term stops trying pairs; and the
 * most holder groups for which pieces of subset groups are added in. */
#define FLOW_MAX_WORK 3000000
#define FLOW_MAX_SUBSET_GROUPS 256
#define FLOW_NETS 64

typedef struct pair {
    int group, dest;
    uint64_t bytes;
    double potential;
} pair_t;

static int cmp_pair_key(const void *a, const void *b)
{
    const pair_t *x = a, *y = b;
    if (x->group != y->group)
        return x->group - y->group;
    return x->dest - y->dest;
}

static int cmp_pair_potential(const void *a, const void *b)
{
    const pair_t *x = a, *y = b;
    if (x->potential != y->potential)
        return x->potential > y->potential ? -1 : 1;
    return cmp_pair_key(a, b);
}

/* Whether ascending list a[0..na) is a subset of ascending list b[0..nb). */
static int subset(const int *a, int na, const int *b, int nb)
{
    int j = 0;
    for (int i = 0; i < na; i++) {
        while (j < nb && b[j] < a[i])
            j++;
        if (j == nb || b[j] != a[i])
            return 0;
    }
    return 1;
}

/* The (group, destination, bytes) pairs, merged, with their potentials. */
static int pairs_of(const mc_bound_ctx_t *al, const int *group_cls, const int *cls_group,
                    int ngroups, pair_t **out)
{
    int cap = 64, n = 0;
    pair_t *pr = mc_xmalloc(sizeof(pair_t) * (size_t)cap);
    int subsets = ngroups <= FLOW_MAX_SUBSET_GROUPS;
    for (int i = 0; i < al->ncls; i++) {
        const mc_piece_t *p = al->cls[i].p;
        int lo = subsets ? 0 : cls_group[i], hi = subsets ? ngroups : lo + 1;
        for (int gi = lo; gi < hi; gi++) {
            const mc_piece_t *h = al->cls[group_cls[gi]].p;
            if (gi != cls_group[i] && !subset(p->holders, p->nholders, h->holders, h->nholders))
                continue;
            for (int j = 0; j < p->ndests; j++) {
                if (mc_ints_contain(h->holders, h->nholders, p->dests[j]))
                    continue;
                if (n == cap) {
                    cap *= 2;
                    pr = mc_xrealloc(pr, sizeof(pair_t) * (size_t)cap);
                }
                pr[n++] = (pair_t){gi, p->dests[j], al->cls[i].bytes, 0};
            }
        }
    }
    mc_sort(pr, (size_t)n, sizeof(pair_t), cmp_pair_key);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && cmp_pair_key(&pr[m - 1], &pr[i]) == 0)
            pr[m - 1].bytes += pr[i].bytes;
        else
            pr[m++] = pr[i];
    }
    for (int i = 0; i < m; i++) {
        const mc_piece_t *h = al->cls[group_cls[pr[i].group]].p;
        double egress = 0;
        for (int j = 0; j < h->nholders; j++)
            egress += al->out_bw[h->holders[j]];
        double cap_max = fmin(egress, al->in_bw[pr[i].dest]);
        pr[i].potential = cap_max > 0 ? (double)pr[i].bytes / cap_max : HUGE_VAL;
    }
    mc_sort(pr, (size_t)m, sizeof(pair_t), cmp_pair_potential);
    *out = pr;
    return m;
}

/* Flow networks over the hosts of a pair on a large cluster (its holders' and its destination's,
 * everything else contracted), kept for the pairs that follow: pairs of one holder group share
 * them. */
typedef struct nets {
    int n;
    char *key[FLOW_NETS];
    mc_bound_net_t net[FLOW_NETS];
    long long work; /* of the networks dropped so far */
} nets_t;

static void nets_drop(nets_t *c)
{
    for (int i = 0; i < c->n; i++) {
        c->work += c->net[i].flow.work;
        mc_bound_net_free(&c->net[i]);
        free(c->key[i]);
    }
    c->n = 0;
}

static long long nets_work(const nets_t *c)
{
    long long w = c->work;
    for (int i = 0; i < c->n; i++)
        w += c->net[i].flow.work;
    return w;
}

/* The network over hosts (NULL: the whole topology, one network for every pair). */
static mc_bound_net_t *nets_get(nets_t *c, const mc_topo_t *topo, const mc_bound_ctx_t *al,
                                const char *hosts)
{
    for (int i = 0; i < c->n; i++)
        if (!hosts || memcmp(c->key[i], hosts, (size_t)topo->nhosts) == 0)
            return &c->net[i];
    if (c->n == FLOW_NETS)
        nets_drop(c);
    c->key[c->n] = hosts ? mc_xmalloc((size_t)topo->nhosts) : NULL;
    if (hosts)
        memcpy(c->key[c->n], hosts, (size_t)topo->nhosts);
    mc_bound_net_init(&c->net[c->n], topo, &al->index, hosts);
    return &c->net[c->n++];
}

mc_status_t mc_bound_flow(const mc_topo_t *topo, const mc_bound_ctx_t *al, double floor,
                          mc_best_t *best, int *holder, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int *order = mc_xmalloc(sizeof(int) * (size_t)al->ncls);
    int *start = mc_xmalloc(sizeof(int) * (size_t)(al->ncls + 1));
    int *cls_group = mc_xmalloc(sizeof(int) * (size_t)al->ncls);
    int *group_cls = mc_xmalloc(sizeof(int) * (size_t)al->ncls);
    char *hosts = mc_xmalloc((size_t)topo->nhosts);
    int ngroups = mc_bound_holder_groups(al, 0, order, start);
    for (int gi = 0; gi < ngroups; gi++) {
        group_cls[gi] = order[start[gi]];
        for (int j = start[gi]; j < start[gi + 1]; j++)
            cls_group[order[j]] = gi;
    }
    pair_t *pr;
    int npairs = pairs_of(al, group_cls, cls_group, ngroups, &pr);
    nets_t nets = {0};
    for (int i = 0; i < npairs && st == MC_OK && nets_work(&nets) < FLOW_MAX_WORK; i++) {
        const mc_piece_t *h = al->cls[group_cls[pr[i].group]].p;
        memset(hosts, 0, (size_t)topo->nhosts);
        for (int j = 0; j < h->nholders; j++)
            hosts[mc_topo_gpu_host(topo, h->holders[j])] = 1;
        int remote = !hosts[mc_topo_gpu_host(topo, pr[i].dest)];
        hosts[mc_topo_gpu_host(topo, pr[i].dest)] = 1;
        mc_bound_net_t *net =
            nets_get(&nets, topo, al, topo->nlinks <= MC_BOUND_WHOLE_LINKS ? NULL : hosts);
        double alpha = INFINITY;
        mc_bound_net_clear(net);
        for (int j = 0; j < h->nholders; j++) {
            mc_bound_net_source(net, h->holders[j]);
            alpha = fmin(alpha, al->out[h->holders[j]]);
        }
        mc_bound_net_sink(net, pr[i].dest);
        /* on a host that holds none of the group's pieces, the destination gets its first byte
         * after a cross-host alpha at the least, and then no more than the flow per second */
        if (remote)
            alpha = fmax(alpha, al->cross);
        if (mc_bound_skip(net, pr[i].bytes, alpha, floor, best))
            continue;
        int kept;
        st = mc_bound_term(best, pr[i].bytes, mc_bound_net_value(net), alpha, pr[i].dest,
                           "destination GPU", topo, &kept, err);
        if (kept)
            *holder = h->holders[0];
    }
    nets_drop(&nets);
    free(pr);
    free(order);
    free(start);
    free(cls_group);
    free(group_cls);
    free(hosts);
    return st;
}
