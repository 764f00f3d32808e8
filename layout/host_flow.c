/* The capacity between groups of hosts, as the lower bounds count it (bound_net.c): the maximum
 * flow from every GPU of some hosts into every GPU of others over the topology's links. The
 * meshcast strategy asks it whether two destination hosts sit behind one bottleneck (a leaf's
 * oversubscribed uplinks) before it gives them shares of their own. */
#include <stdlib.h>

#include "layout/bound_internal.h"

struct mc_host_flow {
    const mc_topo_t *topo;
    mc_bound_index_t index;
    int whole;            /* the topology kept whole: one network for every query */
    mc_bound_net_t net;   /* that network, once built */
    int built;
    char *region;         /* per host, scratch of a query */
};

mc_host_flow_t *mc_host_flow_new(const mc_topo_t *topo)
{
    mc_host_flow_t *hf = mc_xcalloc(1, sizeof(*hf));
    hf->topo = topo;
    mc_bound_index_init(&hf->index, topo);
    hf->whole = topo->nlinks <= MC_BOUND_WHOLE_LINKS;
    hf->region = mc_xcalloc((size_t)topo->nhosts + 1, 1);
    return hf;
}

void mc_host_flow_free(mc_host_flow_t *hf)
{
    if (!hf)
        return;
    if (hf->built)
        mc_bound_net_free(&hf->net);
    mc_bound_index_free(&hf->index);
    free(hf->region);
    free(hf);
}

static void set_hosts(mc_bound_net_t *n, const mc_topo_t *topo, const int *hosts, int nh,
                      void (*mark)(mc_bound_net_t *, int))
{
    for (int i = 0; i < nh; i++) {
        int first, count = mc_topo_host_gpus(topo, hosts[i], &first);
        for (int g = first; g < first + count; g++)
            mark(n, g);
    }
}

double mc_host_flow(mc_host_flow_t *hf, const int *from, int nfrom, const int *to, int nto)
{
    mc_bound_net_t own, *n = &hf->net;
    if (hf->whole && !hf->built) {
        mc_bound_net_init(&hf->net, hf->topo, &hf->index, NULL);
        hf->built = 1;
    } else if (!hf->whole) {
        /* the hosts asked about in full, the rest (switches too) one node that only adds flow */
        for (int i = 0; i < nfrom; i++)
            hf->region[from[i]] = 1;
        for (int i = 0; i < nto; i++)
            hf->region[to[i]] = 1;
        mc_bound_net_init(&own, hf->topo, &hf->index, hf->region);
        for (int i = 0; i < nfrom; i++)
            hf->region[from[i]] = 0;
        for (int i = 0; i < nto; i++)
            hf->region[to[i]] = 0;
        n = &own;
    }
    mc_bound_net_clear(n);
    set_hosts(n, hf->topo, from, nfrom, mc_bound_net_source);
    set_hosts(n, hf->topo, to, nto, mc_bound_net_sink);
    double v = mc_bound_net_value(n);
    if (!hf->whole)
        mc_bound_net_free(&own);
    return v;
}
