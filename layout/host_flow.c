/* The capacity between groups of hosts, as the lower bounds count it (bound_net.c): the maximum
 * flow from every GPU of some hosts into every GPU of others over the topology's links. The
 * meshcast strategy asks it whether two destination hosts sit behind one bottleneck (a leaf's
 * oversubscribed uplinks) before it gives them shares of their own. */
#include <stdlib.h>

#include "layout/bound_internal.h"

struct mc_host_flow {
    const mc_topo_t *topo;
    mc_bound_index_t index;
    mc_bound_net_t net; /* the whole topology, solved again for each query */
};

mc_host_flow_t *mc_host_flow_new(const mc_topo_t *topo)
{
    /* above, the bounds' networks contract the switches, where the bottlenecks asked about are */
    if (topo->nlinks > MC_BOUND_WHOLE_LINKS)
        return NULL;
    mc_host_flow_t *hf = mc_xcalloc(1, sizeof(*hf));
    hf->topo = topo;
    mc_bound_index_init(&hf->index, topo);
    mc_bound_net_init(&hf->net, topo, &hf->index, NULL);
    return hf;
}

void mc_host_flow_free(mc_host_flow_t *hf)
{
    if (!hf)
        return;
    mc_bound_net_free(&hf->net);
    mc_bound_index_free(&hf->index);
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
    mc_bound_net_clear(&hf->net);
    set_hosts(&hf->net, hf->topo, from, nfrom, mc_bound_net_source);
    set_hosts(&hf->net, hf->topo, to, nto, mc_bound_net_sink);
    return mc_bound_net_value(&hf->net);
}
