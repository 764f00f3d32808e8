/* Built-in node types for cluster XML: the machines a cluster is usually made of, described with
 * NCCL's own bandwidth model (../shared/research/topology-xml.md sections 2 and 5) so that a
 * built-in node loads exactly as NCCL's dump of that machine would: NVLink per link by sm
 * (SM70/SM80 20 GB/s, SM86 12, SM90 20.6), PCIe width x rate / 80 (Gen3 x16 12 GB/s, Gen4 24,
 * Gen5 48), NIC speed / 8000 and NCCL's inter-socket figures (AMD 16, Sapphire Rapids 22,
 * Ice Lake 10, Broadwell 6). */
#include <string.h>

#include "topo/topo_cluster.h"

#define MAX_GPUS 8
#define MAX_SW 8
#define MAX_NICS 8

typedef struct node_type {
    const char *name;
    int ngpus, sm;
    double nvl_bw;     /* GB/s per NVLink lane (NCCL SMxx_NVLINK_BW) */
    int nvs_lanes;     /* lanes from every GPU to the NVSwitch fabric; 0: none */
    const unsigned char (*nvl)[MAX_GPUS]; /* direct GPU-GPU lane counts, or NULL */
    int ncpus;
    double sys_bw;     /* GB/s between CPU sockets (NCCL *_QPI_BW / AMD_BW) */
    int nsw;           /* PCIe switches */
    int sw_cpu[MAX_SW];    /* CPU each switch hangs from */
    int gpu_sw[MAX_GPUS];  /* switch each GPU hangs from */
    int nnics;
    int nic_sw[MAX_NICS];  /* switch each NIC hangs from; -1: straight under CPU 0 */
    double pci_bw;     /* GB/s of every PCIe link (one generation and width per machine) */
    double nic_gbps;   /* NIC port speed, Gb/s (NCCL <net speed> / 1000) */
} node_type_t;

/* AWS p3.8xlarge: GPUs 0-3 of the DGX-1 hybrid cube-mesh with their NVLink lane counts from
 * ../shared/topo-xml/dgx1-v100-hybrid-cube-mesh-topo.xml (0-1 1, 0-2 1, 0-3 2, 1-2 2, 1-3 1,
 * 2-3 2), its two PLX switches on one Broadwell socket, and one 10 Gb/s ENA port. */
static const unsigned char p3_nvl[MAX_GPUS][MAX_GPUS] = {
    {0, 1, 1, 2},
    {1, 0, 2, 1},
    {1, 2, 0, 2},
    {2, 1, 2, 0},
};

static const node_type_t types[] = {
    {.name = "p3.8xlarge", .ngpus = 4, .sm = 70, .nvl_bw = 20.0, .nvl = p3_nvl, .ncpus = 1,
     .sys_bw = 6.0, .nsw = 2, .sw_cpu = {0, 0}, .gpu_sw = {0, 0, 1, 1}, .nnics = 1,
     .nic_sw = {-1}, .pci_bw = 12.0, .nic_gbps = 10},
    /* DGX A100: 6 NVSwitches, 2 lanes from each GPU to each (12 lanes); 4 PCIe Gen4 switches,
     * each with 2 GPUs and their 2 HDR NICs; 2 AMD Rome sockets. */
    {.name = "dgx-a100", .ngpus = 8, .sm = 80, .nvl_bw = 20.0, .nvs_lanes = 12, .ncpus = 2,
     .sys_bw = 16.0, .nsw = 4, .sw_cpu = {0, 0, 1, 1}, .gpu_sw = {0, 0, 1, 1, 2, 2, 3, 3},
     .nnics = 8, .nic_sw = {0, 0, 1, 1, 2, 2, 3, 3}, .pci_bw = 24.0, .nic_gbps = 200},
    /* DGX H100: 4 NVSwitches, 5+5+4+4 = 18 lanes per GPU; one PCIe Gen5 switch per GPU with its
     * NDR NIC (1:1, as in the Azure NDv5 file); 2 Sapphire Rapids sockets. */
    {.name = "dgx-h100", .ngpus = 8, .sm = 90, .nvl_bw = 20.6, .nvs_lanes = 18, .ncpus = 2,
     .sys_bw = 22.0, .nsw = 8, .sw_cpu = {0, 0, 0, 0, 1, 1, 1, 1},
     .gpu_sw = {0, 1, 2, 3, 4, 5, 6, 7}, .nnics = 8, .nic_sw = {0, 1, 2, 3, 4, 5, 6, 7},
     .pci_bw = 48.0, .nic_gbps = 400},
    /* An 8-GPU PCIe box with one NIC, shaped like ../shared/topo-xml/pcie-rtx3090x8-1nic-topo.xml:
     * GA102 (sm 86) cards, a Gen4 switch with 4 GPUs per Ice Lake socket, one 56 Gb/s FDR port
     * on the second switch. */
    {.name = "pcie-8gpu", .ngpus = 8, .sm = 86, .ncpus = 2, .sys_bw = 10.0, .nsw = 2,
     .sw_cpu = {0, 1}, .gpu_sw = {0, 0, 0, 0, 1, 1, 1, 1}, .nnics = 1, .nic_sw = {1},
     .pci_bw = 24.0, .nic_gbps = 56},
};

#define NTYPES (int)(sizeof types / sizeof types[0])

const char *mc_node_type_names(void)
{
    static char names[256];
    if (!names[0]) {
        size_t used = 0;
        for (int i = 0; i < NTYPES; i++)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                                     types[i].name);
    }
    return names;
}

static int add(mc_topo_t *t, mc_node_kind_t kind, int host, const char *what, int index)
{
    mc_node_t n = {.kind = kind, .host = host, .busid = -1, .dev = -1, .rail = -1};
    if (index >= 0)
        snprintf(n.name, sizeof n.name, "h%d/%s%d", host, what, index);
    else
        snprintf(n.name, sizeof n.name, "h%d/%s", host, what);
    return mc_topo_add_node(t, &n);
}

static void pair(mc_topo_t *t, int a, int b, mc_link_kind_t kind, double gbs, int count)
{
    mc_topo_add_link_pair(t, a, b, kind, gbs * 1e9, mc_topo_default_latency(kind), count);
}

static void build(mc_topo_t *t, const node_type_t *ty, int host)
{
    int cpu[2], sw[MAX_SW], gpu[MAX_GPUS];
    for (int c = 0; c < ty->ncpus; c++)
        cpu[c] = add(t, MC_NODE_CPU, host, "CPU", c);
    for (int c = 1; c < ty->ncpus; c++)
        pair(t, cpu[0], cpu[c], MC_LINK_SYS, ty->sys_bw, 1);
    for (int s = 0; s < ty->nsw; s++) {
        sw[s] = add(t, MC_NODE_PCI, host, "PCI", s);
        pair(t, sw[s], cpu[ty->sw_cpu[s]], MC_LINK_PCI, ty->pci_bw, 1);
    }
    for (int g = 0; g < ty->ngpus; g++) {
        gpu[g] = add(t, MC_NODE_GPU, host, "GPU", g);
        t->nodes[gpu[g]].sm = ty->sm;
        t->nodes[gpu[g]].dev = g;
        pair(t, gpu[g], sw[ty->gpu_sw[g]], MC_LINK_PCI, ty->pci_bw, 1);
    }
    if (ty->nvs_lanes) {
        int nvs = add(t, MC_NODE_NVS, host, "NVS", -1);
        for (int g = 0; g < ty->ngpus; g++)
            pair(t, gpu[g], nvs, MC_LINK_NVL, ty->nvs_lanes * ty->nvl_bw, ty->nvs_lanes);
    }
    for (int a = 0; ty->nvl && a < ty->ngpus; a++)
        for (int b = a + 1; b < ty->ngpus; b++)
            if (ty->nvl[a][b])
                pair(t, gpu[a], gpu[b], MC_LINK_NVL, ty->nvl[a][b] * ty->nvl_bw, ty->nvl[a][b]);
    for (int i = 0; i < ty->nnics; i++) {
        int nic = add(t, MC_NODE_NIC, host, "NIC", i);
        pair(t, nic, ty->nic_sw[i] < 0 ? cpu[0] : sw[ty->nic_sw[i]], MC_LINK_PCI, ty->pci_bw, 1);
        int net = add(t, MC_NODE_NET, host, "NET", i);
        t->nodes[net].dev = i;
        t->nodes[net].rail = i;
        t->nodes[net].bw = ty->nic_gbps * 1e9 / 8;
        pair(t, nic, net, MC_LINK_NET, ty->nic_gbps / 8, 1);
    }
}

mc_status_t mc_node_type_add(mc_topo_t *t, const char *type, int host, mc_err_t *err)
{
    for (int i = 0; i < NTYPES; i++) {
        if (!strcmp(types[i].name, type)) {
            build(t, &types[i], host);
            return MC_OK;
        }
    }
    return mc_err_set(err, MC_ERR_INVALID, "unknown node type \"%s\" (built-in types: %s)", type,
                      mc_node_type_names());
}
