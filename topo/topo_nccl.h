/* Internals of the NCCL topology XML loader (topo_nccl*.c), which also reads RCCL's dialect of
 * the same format (<system version="2">): NCCL's and RCCL's hardware constants, the attribute
 * readers that turn a missing or malformed attribute into a "file:line" error, and the
 * loader's working state shared by the tree walk and the passes that follow it. */
#ifndef MC_TOPO_NCCL_H
#define MC_TOPO_NCCL_H

#include <libxml/tree.h>
#include <stdint.h>

#include "topo/topo_internal.h"

#define MC_GBPS 1e9 /* NCCL's GB/s: 1e9 bytes per second */
#define MC_NCCL_LOC_BW 5000.0 /* NCCL LOC_BW in GB/s: "infinite" */
/* A <net> with no speed, or speed <= 0, runs at 10 Gb/s in NCCL and RCCL (ncclTopoAddNet). */
#define MC_NCCL_DEFAULT_NET_MBPS 10000
#define MC_NCCL_MAX_PLAUSIBLE_MBPS 10000000 /* 10 Tb/s: a port above it gets a warning */
#define MC_NCCL_MAX_NET_MBPS 800000000       /* 100 TB/s, topo_bounds.c's largest bandwidth */
/* A <net speed> in Mb/s as bytes/s: NCCL's bw = speed / 8000 GB/s. */
#define MC_NCCL_NET_BW(mbps) ((double)(mbps) / 8000.0 * MC_GBPS)

/* PCI class codes as NCCL's and RCCL's kvDictPciClass match them: base class (the top byte) for
 * GPUs and NICs, the full code for the rest; anything unlisted is a PCI switch or bridge. */
#define MC_PCI_BASE(cls) ((cls) >> 16)
#define MC_PCI_BASE_NETWORK 0x02    /* NIC: Ethernet 0x020000, InfiniBand 0x020700 */
#define MC_PCI_BASE_DISPLAY 0x03    /* GPU: VGA 0x030000, 3D controller 0x030200, 0x038000 */
#define MC_PCI_CLASS_BRIDGE 0x060400
#define MC_PCI_CLASS_NVSWITCH 0x068000
#define MC_PCI_CLASS_CPU 0x068001    /* POWER9 NVLink bridge: an <nvlink> row to the CPU */
#define MC_PCI_CLASS_CX8_DIRECT 0x080100 /* ConnectX-8 "data direct": a bridge since NCCL 2.28 */
#define MC_PCI_CLASS_ACCEL 0x120000  /* processing accelerator: an AMD GPU for RCCL only */

/* Which program's reading of the format applies: the root's version says (1 NCCL, 2 RCCL). */
typedef enum { MC_DIALECT_NCCL = 1, MC_DIALECT_RCCL = 2 } mc_dialect_t;

/* ---- hardware constants (topo_nccl_hw.c), all in NCCL's GB/s per direction ---- */
double mc_nccl_nvlink_bw(int sm);
/* Bandwidth of a PCIe link from NCCL's prefix table (width x rate / 80). *known is 0 when NCCL
 * would fall back to Gen3; returns -1 when speed is not a "<number> GT/s" string at all, -2 when
 * the number is not above 0. */
double mc_nccl_pci_bw(const char *speed, int width, int *known);
/* Inter-socket bandwidth of a CPU, by arch, vendor, family and model (NCCL's table). */
double mc_nccl_cpu_bw(mc_dialect_t dialect, const char *arch, const char *vendor, int family,
                      int model); /* MC_DIALECT_RCCL: RCCL's table, Intel stops at Skylake */
/* Broadcom PEX generation of a PCI switch from its device word (0 if not one); level 0 is the
 * upper switch, 1 the sub-switch NCCL folds into it. */
int mc_nccl_bcm_gen(uint64_t device_word, int level);
/* RCCL's per-link xGMI bandwidth for a gcn attribute (ncclTopoXGMISpeed), and the gfx name RCCL
 * turns a legacy numeric gcn ("908", "910") into, written to arch (at least 16 bytes). */
double mc_rccl_xgmi_bw(const char *gcn, char *arch, size_t len);

/* What a skeleton's bare PCI device id tells us. */
typedef struct mc_gpu_profile {
    unsigned device;
    const char *model;
    int sm;
    int nvs_links; /* NVLinks to the NVSwitch, 0 when the board has none or its wiring is unknown */
    int pcie_card; /* 1: a PCIe card, no NVLink to speak of (a 2-GPU bridge aside) */
} mc_gpu_profile_t;
const mc_gpu_profile_t *mc_nccl_gpu_profile(unsigned vendor, unsigned device);
typedef struct mc_nic_profile {
    unsigned vendor, device;
    const char *model;
    int speed_mbps;
} mc_nic_profile_t;
const mc_nic_profile_t *mc_nccl_nic_profile(unsigned vendor, unsigned device);

/* ---- loader state (topo_nccl.c, topo_nccl_links.c) ---- */
/* A link to a bus id that may come later in the file: a GPU-to-GPU <nvlink> or <xgmi>, or a
 * <pcilink>. */
typedef struct mc_nccl_nvl {
    int from;       /* node id of the GPU or PCI switch that lists the row */
    int64_t target; /* bus id of the remote end */
    int count;      /* NVLink or xGMI lanes; 0 for a <pcilink> */
    int line;
    mc_link_kind_t kind; /* MC_LINK_NVL or MC_LINK_XGMI for GPU rows */
    double gbps;    /* bandwidth of the whole row, GB/s */
} mc_nccl_nvl_t;

typedef struct mc_nccl_bus {
    int host;
    int64_t busid;
    int node; /* node it became, -1 when NCCL creates none (folded switch, skipped device) */
    unsigned vendor, device; /* PCI ids, 0 when the file gives none */
} mc_nccl_bus_t;

typedef struct mc_nccl_ctx {
    mc_topo_t *t;
    const char *path;
    mc_dialect_t dialect;
    int assume_nvlink; /* mc_topo_load_opts_t's: -1 infer, else NVSwitch lanes */
    unsigned assume_gpu; /* mc_topo_load_opts_t's: a skeleton's GPUs' device id, 0 none */
    int assume_nic_mbps; /* mc_topo_load_opts_t's: the speed of ports the file leaves out, 0 */
    int host_base, nhosts;
    uint64_t *hashes; /* host_hash of each host, in order of first appearance */
    int hash_cap;
    int *elements;    /* XML elements per host (NCCL reads at most 255) */
    int elem_cap;
    int total_elements;
    int nvs;          /* the NVS node of this document, -1 until a GPU links to one */
    int first_node;   /* nodes from first_node on belong to this document */
    int *up;          /* per node (minus first_node): the node above it in the PCIe tree */
    double *up_bw;    /* and that link's bandwidth, GB/s */
    int up_cap;
    double *cpu_bw;   /* per node: inter-socket bandwidth when the node is a CPU */
    mc_nccl_bus_t *bus;
    int nbus, bus_cap;
    mc_nccl_nvl_t *nvl;
    int nnvl, nvl_cap;
    int *nvl_rows;    /* per node: NVLink rows the GPU listed (any target class) */
    int64_t stack[64];/* bus ids of the <pci> elements enclosing the one being read */
    int depth;
    int skeleton_gpus, skeleton_line; /* GPUs given only as a PCI class, not inferable */
    int64_t skeleton_bus;
    int bare_pci;     /* <pci> elements with neither a class nor children */
    int fused_nics, fused_example; /* NICs whose ports were fused, and the first of them */
    int repeated_bus, repeated_line; /* <pci> elements repeating a bus id on their host */
    int64_t repeated_example;        /* and the first such bus id */
    int classless;    /* <pci> elements whose class was inferred from their children */
} mc_nccl_ctx_t;

/* Attribute readers: a missing required attribute, a malformed number or a value outside
 * [lo, hi] is an error naming the file, the line, the element and the attribute. */
mc_status_t mc_nccl_attr_int(mc_nccl_ctx_t *c, xmlNodePtr x, const char *name, int required,
                             int64_t lo, int64_t hi, int64_t dflt, int64_t *out, mc_err_t *err);
/* The attribute as a C string (caller frees), or NULL when absent. */
char *mc_nccl_attr_str(xmlNodePtr x, const char *name);
/* A bus id "DDDD:BB:DD.F" as NCCL turns it into an integer (hex digits concatenated). */
mc_status_t mc_nccl_attr_busid(mc_nccl_ctx_t *c, xmlNodePtr x, const char *name, int64_t *out,
                               mc_err_t *err);
/* Formats a bus id integer back to NCCL's text form into buf (at least 20 bytes). */
const char *mc_nccl_busid_str(int64_t busid, char *buf, size_t len);

/* Per-node bookkeeping arrays grow with the topology. */
void mc_nccl_track(mc_nccl_ctx_t *c, int node, int up, double up_bw);

/* Joins a GPU to the document's NVSwitch with lanes NVLinks of its sm's bandwidth. */
void mc_nccl_add_nvs_lanes(mc_nccl_ctx_t *c, int gpu, int lanes);

/* After the tree walk: GPU-to-GPU NVLinks, GPUs that list none, CPU-to-CPU links and
 * bottleneck warnings. */
mc_status_t mc_nccl_finish_links(mc_nccl_ctx_t *c, mc_err_t *err);

#endif
