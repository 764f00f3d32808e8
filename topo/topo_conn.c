/* The rate limit of one connection between two GPUs, shared by the simulator (which holds every
 * tree edge's flows at it) and the meshcast synthesizer (which emits a tree as enough parallel
 * connections to carry its planned rate). Every tree edge is one NCCL point-to-point connection
 * (the runtime sends it with ncclSend/ncclRecv), and NCCL drives a connection to one peer with
 * only a few channels (two per peer by default), so a lone send between two GPUs of one NVLink
 * domain moves at well under the NVLink bandwidth that a ring collective, spread over all
 * channels, reaches. The limits are nccl-tests sendrecv_perf plateaus between two GPUs of one
 * host, by GPU architecture; an architecture with no published figure gets no limit
 * (docs/simulator.md, "Calibration"). A new limit is one row of the table. */
#include "topo/topo.h"

static const struct {
    int sm;     /* compute capability x 10 */
    double bw;  /* bytes/s */
} conn_limits[] = {
    /* H100: sendrecv_perf between two H100 over NVLink plateaus near 180 GB/s from 4 GB on, where
     * ring collectives reach 370 GB/s (github.com/NVIDIA/nccl-tests/issues/268 and /212) */
    {90, 180e9},
};

double mc_topo_conn_cap(const mc_topo_t *t, int a, int b, const int *links, int nlinks)
{
    int sa = t->nodes[t->gpu_node[a]].sm, sb = t->nodes[t->gpu_node[b]].sm;
    for (int i = 0; i < nlinks; i++)
        if (t->links[links[i]].kind != MC_LINK_NVL)
            return 0;
    for (size_t i = 0; i < sizeof(conn_limits) / sizeof(conn_limits[0]); i++)
        if (sa == conn_limits[i].sm && sb == conn_limits[i].sm)
            return conn_limits[i].bw;
    return 0;
}
