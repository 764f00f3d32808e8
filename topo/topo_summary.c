/* What a topology offers each GPU, as 'meshcast topo show' and 'dot' report it and as users
 * compare it with nvidia-smi topo -m or rocm-smi --showtopo: per-GPU NVLink/xGMI and PCIe
 * bandwidth, NVLink domains (GPUs joined by NVLink or xGMI, directly or through a switch), and
 * the kind of connection between two GPUs. */
#include <stdlib.h>

#include "topo/topo.h"

static int find(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

static int fabric_node(const mc_node_t *n)
{
    return n->kind == MC_NODE_GPU || n->kind == MC_NODE_NVS;
}

int mc_topo_summarize(const mc_topo_t *t, mc_gpu_summary_t *gpus)
{
    int *parent = mc_xmalloc(sizeof(int) * (size_t)t->nnodes);
    for (int i = 0; i < t->nnodes; i++)
        parent[i] = i;
    for (int g = 0; g < t->ngpus; g++)
        gpus[g] = (mc_gpu_summary_t){.domain = -1, .fabric = MC_LINK__COUNT};
    for (int i = 0; i < t->nlinks; i++) {
        const mc_link_t *l = &t->links[i];
        const mc_node_t *s = &t->nodes[l->src];
        if (s->kind == MC_NODE_GPU && l->kind == MC_LINK_PCI)
            gpus[s->gpu].pcie_bw = l->bw;
        if (!mc_link_is_gpu_fabric(l->kind) || !fabric_node(s) ||
            !fabric_node(&t->nodes[l->dst]))
            continue;
        parent[find(parent, l->src)] = find(parent, l->dst);
        if (s->kind == MC_NODE_GPU) {
            gpus[s->gpu].nvlink_bw += l->bw;
            gpus[s->gpu].nvlinks += l->count;
            gpus[s->gpu].fabric = l->kind;
        }
    }
    /* Domains are numbered in GPU order, so the output does not depend on node order. */
    int *label = mc_xmalloc(sizeof(int) * (size_t)t->nnodes), ndomains = 0;
    for (int i = 0; i < t->nnodes; i++)
        label[i] = -1;
    for (int g = 0; g < t->ngpus; g++) {
        if (gpus[g].nvlinks == 0)
            continue;
        int root = find(parent, t->gpu_node[g]);
        if (label[root] < 0)
            label[root] = ndomains++;
        gpus[g].domain = label[root];
    }
    free(label);
    free(parent);
    return ndomains;
}

mc_status_t mc_topo_pair_kind(const mc_topo_t *t, int a, int b, mc_link_kind_t *kind,
                              mc_err_t *err)
{
    mc_route_t r;
    mc_status_t st = mc_topo_route(t, a, b, &r, err);
    if (st != MC_OK)
        return st;
    /* Across hosts the network decides, even when PXN starts on the fabric; inside a host a
     * fabric hop, then the CPU interconnect, then PCIe names the connection. */
    int has[MC_LINK__COUNT] = {0};
    for (int i = 0; i < r.nlinks; i++)
        has[t->links[r.links[i]].kind] = 1;
    *kind = has[MC_LINK_NET] ? MC_LINK_NET : has[MC_LINK_NVL] ? MC_LINK_NVL
            : has[MC_LINK_XGMI] ? MC_LINK_XGMI : has[MC_LINK_SYS] ? MC_LINK_SYS
            : r.nlinks > 0 ? MC_LINK_PCI : MC_LINK_LOC;
    return MC_OK;
}
