/* The NIC NCCL picks for each GPU: the network port of its own host it reaches in the fewest
 * hops (PIX/PXB before SYS; NVLink detours cost hops), read by the ring broadcast baseline
 * (synth_ring.c) and by the cost model, which lays that baseline's chains (cost_traffic.c). */
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

/* Breadth-first search from a GPU over directed links (CSR out_start/out_links); the first
 * network port of the GPU's own host reached, the lowest node id among those at that depth. */
static int nearest_net(const mc_topo_t *t, const int *out_start, const int *out_links, int gpu,
                       int *dist, int *queue)
{
    int src = t->gpu_node[gpu], host = t->nodes[src].host, head = 0, tail = 0, best = -1;
    for (int i = 0; i < t->nnodes; i++)
        dist[i] = -1;
    dist[src] = 0;
    queue[tail++] = src;
    while (head < tail) {
        int u = queue[head++];
        if (best >= 0 && dist[u] > dist[best])
            break;
        if (t->nodes[u].kind == MC_NODE_NET && t->nodes[u].host == host && (best < 0 || u < best))
            best = u;
        for (int k = out_start[u]; k < out_start[u + 1]; k++) {
            int v = t->links[out_links[k]].dst;
            if (dist[v] < 0) {
                dist[v] = dist[u] + 1;
                queue[tail++] = v;
            }
        }
    }
    return best;
}

int *mc_topo_nearest_nics(const mc_topo_t *t)
{
    int n = t->nnodes;
    int *out_start = mc_xcalloc((size_t)n + 1, sizeof(int));
    int *out_links = mc_xmalloc(sizeof(int) * (size_t)(t->nlinks ? t->nlinks : 1));
    for (int l = 0; l < t->nlinks; l++)
        out_start[t->links[l].src + 1]++;
    for (int i = 0; i < n; i++)
        out_start[i + 1] += out_start[i];
    int *fill = mc_xmalloc(sizeof(int) * (size_t)(n ? n : 1));
    memcpy(fill, out_start, sizeof(int) * (size_t)n);
    for (int l = 0; l < t->nlinks; l++)
        out_links[fill[t->links[l].src]++] = l;
    int *dist = mc_xmalloc(sizeof(int) * (size_t)(n ? n : 1));
    int *queue = mc_xmalloc(sizeof(int) * (size_t)(n ? n : 1));
    int *nic = mc_xmalloc(sizeof(int) * (size_t)(t->ngpus ? t->ngpus : 1));
    for (int g = 0; g < t->ngpus; g++)
        nic[g] = nearest_net(t, out_start, out_links, g, dist, queue);
    free(out_start);
    free(out_links);
    free(fill);
    free(dist);
    free(queue);
    return nic;
}
