/* Per-GPU NVLink and PCIe figures and NVLink domains, for 'meshcast topo show' and 'dot'. */
#include <stdlib.h>

#include "cli/topo_cli.h"

static int find(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

static int nvlink_node(const mc_node_t *n)
{
    return n->kind == MC_NODE_GPU || n->kind == MC_NODE_NVS;
}

int topo_summarize(const mc_topo_t *t, topo_gpu_summary_t *gpus)
{
    int *parent = mc_xmalloc(sizeof(int) * (size_t)t->nnodes);
    for (int i = 0; i < t->nnodes; i++)
        parent[i] = i;
    for (int g = 0; g < t->ngpus; g++)
        gpus[g] = (topo_gpu_summary_t){0, 0, 0, -1};
    for (int i = 0; i < t->nlinks; i++) {
        const mc_link_t *l = &t->links[i];
        const mc_node_t *s = &t->nodes[l->src];
        if (s->kind == MC_NODE_GPU && l->kind == MC_LINK_PCI)
            gpus[s->gpu].pcie_bw = l->bw;
        if (l->kind != MC_LINK_NVL || !nvlink_node(s) || !nvlink_node(&t->nodes[l->dst]))
            continue;
        parent[find(parent, l->src)] = find(parent, l->dst);
        if (s->kind == MC_NODE_GPU) {
            gpus[s->gpu].nvlink_bw += l->bw;
            gpus[s->gpu].nvlinks += l->count;
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
