/* topo: the hardware graph meshcast plans on. A topology is a directed graph of GPUs, PCIe
 * switches, CPUs, NVSwitches, NICs (and their network ports) and network switches, joined by
 * directed links with a bandwidth (bytes/s per direction), a latency and a kind. It is loaded from
 * NCCL topology XML (one host, or a multi-host NVLink dump), RCCL's AMD variant of it (xGMI) or
 * meshcast's cluster XML, and
 * answers "which links does a transfer from GPU a to GPU b take", the way NCCL would route it.
 *
 * The structure is open for reading: nodes[] and links[] are indexed by node id and link id, and
 * link ids are also the edge ids of the igraph graph. Build one with mc_topo_new(), add nodes and
 * links, then mc_topo_finalize(); loaders do exactly that. */
#ifndef MC_TOPO_H
#define MC_TOPO_H

#include <igraph.h>
#include <stdint.h>

#include "util/util.h"

typedef enum {
    MC_NODE_GPU,
    MC_NODE_PCI,    /* PCIe switch or bridge */
    MC_NODE_NVS,    /* one NVSwitch vertex per NVLink domain, as NCCL collapses them */
    MC_NODE_CPU,    /* a NUMA node / root complex */
    MC_NODE_NIC,    /* a NIC (PCI function); its ports are NET nodes */
    MC_NODE_NET,    /* one network port (NCCL <net>) */
    MC_NODE_SWITCH, /* a network switch (leaf, rail or spine) */
    MC_NODE__COUNT
} mc_node_kind_t;

typedef enum {
    MC_LINK_LOC, /* inside a device, "infinite" (NCCL LOC_BW) */
    MC_LINK_NVL, /* NVLink, GPU to GPU or GPU to NVSwitch */
    MC_LINK_C2C, /* NVLink-C2C, GPU to Grace CPU */
    MC_LINK_PCI, /* PCIe */
    MC_LINK_SYS, /* CPU to CPU (QPI, xGMI, ...) */
    MC_LINK_NET, /* NIC port to network, switch to switch */
    MC_LINK_XGMI, /* AMD Infinity Fabric (xGMI), GPU to GPU, CPU or switch: routed like NVLink */
    MC_LINK__COUNT
} mc_link_kind_t;

typedef struct mc_node {
    mc_node_kind_t kind;
    int host;       /* host index 0..nhosts-1; -1 for network switches */
    int gpu;        /* global GPU index for GPUs, else -1 (set by mc_topo_finalize) */
    int64_t busid;  /* NCCL bus id as an integer (hex digits concatenated), -1 if none */
    int sm;         /* NVIDIA GPUs: compute capability x 10; 0 for AMD GPUs */
    char arch[16];  /* AMD GPUs: the gfx architecture RCCL reads from gcn ("gfx942"), else "" */
    int dev;        /* GPUs: NVML index in the host; NETs: plugin device index; else -1 */
    int rail;       /* NETs and switches: rail index, -1 if unknown */
    double bw;      /* NETs: port speed in bytes/s */
    char name[64];  /* stable, unique label, e.g. "h0/GPU3", "h1/NET2", "rail5" */
    int line;       /* source line it came from, 0 if built-in */
} mc_node_t;

typedef struct mc_link {
    int src, dst;         /* node ids */
    mc_link_kind_t kind;
    double bw;            /* bytes/s, in this direction */
    double latency;       /* seconds */
    int count;            /* NVLink lanes bundled in this edge (1 otherwise) */
} mc_link_t;

typedef struct mc_topo {
    char *source;         /* file it was loaded from, or a description */
    int nhosts;
    int nnodes, nlinks;
    mc_node_t *nodes;
    mc_link_t *links;
    int ngpus;
    int *gpu_node;        /* global GPU index -> node id (hosts in order, then dev) */
    int nwarnings;
    char **warnings;      /* what the loader assumed or found odd, one line each */
    uint64_t fingerprint; /* stable hash of the normalized graph (mc_topo_finalize) */
    igraph_t graph;       /* directed; edge id == link id */
    int graph_ready;
    int node_cap, link_cap, warn_cap;
    int *link_index, link_index_cap;    /* open hash of (src, dst, kind) -> link id, -1 empty */
    struct mc_route_cache *route_cache;       /* owned by topo_route.c */
    struct mc_host_spt_cache *host_spt_cache; /* owned by topo_host_spt.c */
} mc_topo_t;

/* Software overhead per message on a link kind (seconds), and the default hop latency. The
 * simulator and the lower bounds both use these so that they agree (NCCL figures; see
 * docs/topology-format.md). */
double mc_topo_alpha(mc_link_kind_t kind);
double mc_topo_default_latency(mc_link_kind_t kind);

/* Fixed cost of one message along links[0..n): the largest alpha of their kinds (a message pays
 * one software overhead, that of its slowest kind) plus the sum of their latencies. */
double mc_topo_links_delay(const mc_topo_t *t, const int *links, int n);

/* The most one connection (one NCCL point-to-point send, one tree edge) moves between GPUs a and
 * b over the route links[0..nlinks), bytes/s; 0 for no limit beyond the links'. Set, by GPU
 * architecture, for routes over NVLink alone (topo_conn.c); the simulator holds every tree edge
 * at it and meshcast emits enough parallel connections to carry a tree's planned rate. */
double mc_topo_conn_cap(const mc_topo_t *t, int a, int b, const int *links, int nlinks);

const char *mc_node_kind_str(mc_node_kind_t k);
const char *mc_link_kind_str(mc_link_kind_t k);
/* True for the GPU fabrics NCCL and RCCL route over directly: NVLink and xGMI. */
int mc_link_is_gpu_fabric(mc_link_kind_t k);

/* ---- building ---- */
mc_topo_t *mc_topo_new(const char *source);
/* Adds a node (copied from proto); returns its id. */
int mc_topo_add_node(mc_topo_t *t, const mc_node_t *proto);
/* Adds a directed link; a second link between the same two nodes of the same kind adds its
 * bandwidth and count to the first (NCCL does the same). Returns the link id. */
int mc_topo_add_link(mc_topo_t *t, int src, int dst, mc_link_kind_t kind, double bw,
                     double latency, int count);
/* Both directions with the same figures. */
void mc_topo_add_link_pair(mc_topo_t *t, int a, int b, mc_link_kind_t kind, double bw,
                           double latency, int count);
void mc_topo_warn(mc_topo_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Numbers the GPUs (host by host, by dev inside a host), builds the igraph graph and the
 * fingerprint. Fails when there is no GPU or a link has no bandwidth. */
mc_status_t mc_topo_finalize(mc_topo_t *t, mc_err_t *err);
void mc_topo_free(mc_topo_t *t);

/* ---- loading ---- */
/* What a loader may be told that a file does not say. */
typedef struct mc_topo_load_opts {
    /* NVLinks from each GPU whose <gpu> lists none (NCCL would ask the driver) to the NVSwitch;
     * 0: none, PCIe only; -1: infer them from the PCI device id, with a warning. */
    int assume_nvlink;
    /* The NVIDIA PCI device id a skeleton file's GPUs are taken for where the file gives none
     * that is known (mc_topo_gpu_model); 0: such a file is refused. */
    unsigned assume_gpu;
    /* The speed (Mb/s) of each NIC port whose speed the file does not give (a skeleton's NIC
     * of unknown device id, a <net> without speed); 0: NCCL's default, 10 Gb/s, with a warning. */
    int assume_nic_mbps;
} mc_topo_load_opts_t;
#define MC_TOPO_LOAD_OPTS_DEFAULT ((mc_topo_load_opts_t){.assume_nvlink = -1})
/* The PCI device id of a GPU model meshcast knows, by device id ("0x20b2") or model name
 * ("A100-SXM4-80GB", any case), into *device; returns 0, or -1 for one it does not know. */
int mc_topo_gpu_model(const char *name, unsigned *device);
/* The GPU models mc_topo_gpu_model knows, as "NAME (0xID), ..." for messages. */
const char *mc_topo_gpu_models(void);
/* NVLinks per GPU one may assume: NVLink 5 has 18; more is a typo. */
#define MC_TOPO_MAX_ASSUMED_NVLINKS 64

/* Loads NCCL (or RCCL) topology XML or cluster XML (told apart by the root element). */
mc_status_t mc_topo_load(const char *path, mc_topo_t **out, mc_err_t *err);
/* The same with options (NULL: the defaults). */
mc_status_t mc_topo_load_with(const char *path, const mc_topo_load_opts_t *opts, mc_topo_t **out,
                              mc_err_t *err);
mc_status_t mc_topo_load_memory(const char *buf, size_t len, const char *name, mc_topo_t **out,
                                mc_err_t *err);

/* ---- queries ---- */
int mc_topo_gpu_host(const mc_topo_t *t, int gpu);
/* The GPUs of host h: *first and the count (GPU ids go host by host), in O(log GPUs). */
int mc_topo_host_gpus(const mc_topo_t *t, int h, int *first);
/* The shortest-path tree from GPU src over the GPUs of its host (every route between two of them
 * an edge weighted by its time per byte, plus a little per link so that among equal rates fewer
 * relays win). *g0 gets the host's first GPU and *parent its n = mc_topo_host_gpus entries:
 * parent[v] is the index (from *g0) of GPU *g0 + v's parent, negative for src. Computed once per
 * GPU and cached inside t. */
mc_status_t mc_topo_host_spt(const mc_topo_t *t, int src, int *g0, const int **parent,
                             mc_err_t *err);
/* igraph keeps state of its own (the stack its error handling unwinds: Debian's 0.10.2 is built
 * with IGRAPH_THREAD_SAFE 0), so code that may run beside another thread (synthesis) calls it
 * between these, one thread at a time. */
void mc_topo_igraph_lock(void);
void mc_topo_igraph_unlock(void);
/* The GPU of host h with device index dev (its rail), or -1. */
int mc_topo_host_gpu_on_dev(const mc_topo_t *t, int h, int dev);
/* Node id of a node by its name, -1 if none. */
int mc_topo_find_node(const mc_topo_t *t, const char *name);
/* Link id from src to dst (any kind), -1 if none. */
int mc_topo_find_link(const mc_topo_t *t, int src, int dst);

/* Sum of the bandwidths of the links into / out of a GPU (bytes/s). */
double mc_topo_gpu_ingress_bw(const mc_topo_t *t, int gpu);
double mc_topo_gpu_egress_bw(const mc_topo_t *t, int gpu);
/* Sum of a host's network port bandwidths towards the network (bytes/s); 0 for a single host
 * with no network. */
double mc_topo_host_net_bw(const mc_topo_t *t, int host);
/* Per GPU, the network port (node id) of its own host NCCL picks for it: the one reached in the
 * fewest hops, the lowest id on ties; -1 where the host has none. A new array (free it). */
int *mc_topo_nearest_nics(const mc_topo_t *t);

/* What a GPU has, for reports. */
typedef struct mc_gpu_summary {
    double nvlink_bw;      /* sum of its outgoing NVLink or xGMI bandwidth, bytes/s */
    int nvlinks;           /* NVLink or xGMI lanes */
    mc_link_kind_t fabric; /* MC_LINK_NVL, MC_LINK_XGMI, or MC_LINK__COUNT when it has none */
    double pcie_bw;        /* its upstream PCIe link, bytes/s (0 if none) */
    int domain;            /* NVLink domain index, -1 when it has no NVLink or xGMI */
} mc_gpu_summary_t;

/* Fills one summary per GPU (array of t->ngpus) and returns the number of NVLink domains: sets of
 * GPUs joined by NVLink or xGMI, directly or through switches, numbered by their lowest GPU. */
int mc_topo_summarize(const mc_topo_t *t, mc_gpu_summary_t *gpus);

#define MC_ROUTE_MAX_LINKS 32

typedef struct mc_route {
    int src_gpu, dst_gpu;
    int nlinks;
    int links[MC_ROUTE_MAX_LINKS]; /* link ids in order from src to dst */
    int via_gpu;                   /* GPU the data passes through (NCCL PXN), else -1 */
    double bw;                     /* bottleneck bandwidth, bytes/s */
    double latency;                /* sum of hop latencies, seconds */
} mc_route_t;

/* The links a transfer from GPU a to GPU b takes (DESIGN.md section 2). a == b gives an empty
 * route. The result is cached inside t. */
mc_status_t mc_topo_route(const mc_topo_t *t, int gpu_a, int gpu_b, mc_route_t *route,
                          mc_err_t *err);
/* Only mc_topo_route's links (*nlinks of them into links[MC_ROUTE_MAX_LINKS]) and via_gpu, read
 * from the cache where the pair's route is kept there (no bandwidth or latency summed). */
mc_status_t mc_topo_route_links(const mc_topo_t *t, int gpu_a, int gpu_b, int *nlinks, int *links,
                                int *via_gpu, mc_err_t *err);
/* The bytes the fabric search trees cached inside t hold: one int per switch (and per port with
 * several ways in) for every NIC port that routes have left from so far. */
size_t mc_topo_route_cache_bytes(const mc_topo_t *t);

/* How GPU a reaches GPU b, in the terms of nvidia-smi topo -m and rocm-smi --showtopo: MC_LINK_NVL
 * or MC_LINK_XGMI when the route is on that fabric, MC_LINK_NET across hosts, MC_LINK_SYS through
 * the CPU interconnect, MC_LINK_PCI inside one PCIe tree, MC_LINK_LOC for a == b. */
mc_status_t mc_topo_pair_kind(const mc_topo_t *t, int a, int b, mc_link_kind_t *kind,
                              mc_err_t *err);

#endif
