/* The NCCL loader's passes after the tree walk: GPU-to-GPU NVLinks and <pcilink>s resolved by bus
 * id, NVLink rows that disagree, GPUs that list no NVLinks, CPU-to-CPU links inside each host,
 * and warnings for slow upstream PCIe links in front of a GPU or NIC. */
#include <stdio.h>
#include <stdlib.h>

#include "topo/topo_nccl.h"

/* NCCL itself stops at 255 elements per host file. */
#define NCCL_MAX_ELEMENTS 255
/* An upstream PCIe link slower than this in front of a GPU or NIC is a VM artefact worth a
 * warning (a 2.5 GT/s x1 bridge gives 0.19 GB/s). */
#define SLOW_PCI_GBPS 3.0

void mc_nccl_track(mc_nccl_ctx_t *c, int node, int up, double up_bw)
{
    int i = node - c->first_node;
    if (i >= c->up_cap) { /* the four per-node arrays share one capacity */
        int old = c->up_cap, cap = old ? old : 16;
        while (cap <= i)
            cap *= 2;
        c->up = mc_xrealloc(c->up, sizeof(int) * (size_t)cap);
        c->up_bw = mc_xrealloc(c->up_bw, sizeof(double) * (size_t)cap);
        c->cpu_bw = mc_xrealloc(c->cpu_bw, sizeof(double) * (size_t)cap);
        c->nvl_rows = mc_xrealloc(c->nvl_rows, sizeof(int) * (size_t)cap);
        for (int k = old; k < cap; k++) {
            c->up[k] = -1;
            c->up_bw[k] = 0;
            c->cpu_bw[k] = 0;
            c->nvl_rows[k] = 0;
        }
        c->up_cap = cap;
    }
    c->up[i] = up;
    c->up_bw[i] = up_bw;
}

/* The first node of a kind with this bus id on the host, -1 if none: ncclTopoGetNode looks a
 * node up by type and id, and a file may repeat a bus id over devices of different kinds. */
static int find_bus(const mc_nccl_ctx_t *c, int host, int64_t busid, mc_node_kind_t kind)
{
    for (int i = 0; i < c->nbus; i++)
        if (c->bus[i].host == host && c->bus[i].busid == busid && c->bus[i].node >= 0 &&
            c->t->nodes[c->bus[i].node].kind == kind)
            return c->bus[i].node;
    return -1;
}

static int rows_between(const mc_nccl_ctx_t *c, int from, int to)
{
    for (int i = 0; i < c->nnvl; i++)
        if (c->nvl[i].count > 0 && c->nvl[i].from == from &&
            find_bus(c, c->t->nodes[from].host, c->nvl[i].target, c->t->nodes[to].kind) == to)
            return c->nvl[i].count;
    return 0;
}

static mc_status_t resolve_targets(mc_nccl_ctx_t *c, mc_err_t *err)
{
    mc_topo_t *t = c->t;
    char b[32];
    for (int i = 0; i < c->nnvl; i++) {
        const mc_nccl_nvl_t *r = &c->nvl[i];
        const mc_node_t *from = &t->nodes[r->from];
        int to = find_bus(c, from->host, r->target, r->count > 0 ? MC_NODE_GPU : MC_NODE_PCI);
        const char *what = r->kind == MC_LINK_XGMI ? "xGMI link" : "NVLink";
        if (to < 0 && r->count > 0)
            return mc_err_set(err, MC_ERR_INVALID,
                              "%s:%d: %s from %s to unknown target %s: expected the bus id "
                              "of a GPU on the same host", c->path, r->line, what, from->name,
                              mc_nccl_busid_str(r->target, b, sizeof b));
        if (to < 0) {
            mc_topo_warn(t, "%s:%d: <pcilink target=\"%s\"> names no PCI switch of the host; "
                         "dropped, as NCCL does", c->path, r->line,
                         mc_nccl_busid_str(r->target, b, sizeof b));
            continue;
        }
        if (r->count == 0) {
            mc_topo_add_link(t, r->from, to, MC_LINK_LOC, MC_NCCL_LOC_BW * MC_GBPS, 0, 1);
            continue;
        }
        mc_topo_add_link(t, r->from, to, r->kind, r->gbps * MC_GBPS,
                         mc_topo_default_latency(r->kind), r->count);
        int back = rows_between(c, to, r->from);
        if (back != r->count)
            mc_topo_warn(t, "%s:%d: %s lists %d %ss to %s, which lists %d back; each "
                         "direction is kept as listed", c->path, r->line, from->name, r->count,
                         what, t->nodes[to].name, back);
    }
    return MC_OK;
}

/* The NVSwitch link of a GPU, -1 if none. */
static int nvs_link(const mc_topo_t *t, int gpu)
{
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == gpu && t->links[i].kind == MC_LINK_NVL &&
            t->nodes[t->links[i].dst].kind == MC_NODE_NVS)
            return i;
    return -1;
}

/* The PCI ids of the <pci> a node came from. */
static const mc_nccl_bus_t *bus_of(const mc_nccl_ctx_t *c, int node)
{
    for (int i = 0; i < c->nbus; i++)
        if (c->bus[i].node == node)
            return &c->bus[i];
    return NULL;
}

/* GPUs of one kind of evidence, for one warning each. */
typedef struct nvl_guess {
    int n, first;
    const mc_gpu_profile_t *profile;
    unsigned device;
} nvl_guess_t;

static void guessed(nvl_guess_t *g, int gpu, const mc_gpu_profile_t *p, unsigned device)
{
    if (g->n++ == 0) {
        g->first = gpu;
        g->profile = p;
        g->device = device;
    }
}

/* NCCL asks the driver (NVML) for the NVLinks of a GPU whose <gpu> lists none. Offline the
 * evidence is, in order: what the user states (--assume-nvlink, <nodes assume_nvlink>), a peer
 * of the same model on the same host that lists NVSwitch links, and the PCI device id, completed
 * the way skeleton GPUs are. RCCL's models without <xgmi> rows are PCIe machines. */
static void complete_nvlinks(mc_nccl_ctx_t *c)
{
    mc_topo_t *t = c->t;
    int nodes = t->nnodes;
    nvl_guess_t by_id = {0}, unknown = {0};
    char *listed = mc_xcalloc((size_t)(nodes - c->first_node) + 1, 1); /* before this pass */
    for (int g = c->first_node; g < nodes; g++)
        listed[g - c->first_node] = c->nvl_rows[g - c->first_node] > 0;
    for (int g = c->first_node; g < nodes && c->dialect == MC_DIALECT_NCCL; g++) {
        if (t->nodes[g].kind != MC_NODE_GPU || listed[g - c->first_node])
            continue;
        if (c->assume_nvlink >= 0) {
            if (c->assume_nvlink > 0)
                mc_nccl_add_nvs_lanes(c, g, c->assume_nvlink);
            continue;
        }
        int peer = -1;
        for (int p = c->first_node; p < nodes && peer < 0; p++)
            if (t->nodes[p].kind == MC_NODE_GPU && t->nodes[p].host == t->nodes[g].host &&
                t->nodes[p].sm == t->nodes[g].sm && listed[p - c->first_node] &&
                nvs_link(t, p) >= 0)
                peer = p;
        const mc_nccl_bus_t *bus = bus_of(c, g);
        const mc_gpu_profile_t *prof = bus ? mc_nccl_gpu_profile(bus->vendor, bus->device) : NULL;
        if (peer >= 0) {
            mc_link_t l = t->links[nvs_link(t, peer)];
            mc_topo_add_link_pair(t, g, l.dst, MC_LINK_NVL, l.bw, l.latency, l.count);
            mc_topo_warn(t, "%s:%d: %s lists no NVLinks (NCCL would ask the driver); assuming "
                         "%d NVLinks to the NVSwitch like %s", c->path, t->nodes[g].line,
                         t->nodes[g].name, l.count, t->nodes[peer].name);
        } else if (prof && prof->nvs_links > 0 && prof->sm == t->nodes[g].sm) {
            mc_nccl_add_nvs_lanes(c, g, prof->nvs_links);
            guessed(&by_id, g, prof, bus->device);
        } else if (!(prof && prof->pcie_card)) {
            guessed(&unknown, g, prof && prof->sm == t->nodes[g].sm ? prof : NULL,
                    bus ? bus->device : 0);
        }
    }
    free(listed);
    if (by_id.n > 0)
        mc_topo_warn(t, "%s:%d: %d GPU(s), first %s, list no NVLinks (NCCL would ask the "
                     "driver); assuming %d NVLinks each to the NVSwitch, as on every %s "
                     "(device 0x%04x); --assume-nvlink N states the number instead", c->path,
                     t->nodes[by_id.first].line, by_id.n, t->nodes[by_id.first].name,
                     by_id.profile->nvs_links, by_id.profile->model, by_id.device);
    if (unknown.n > 0) {
        char what[64];
        if (unknown.profile)
            snprintf(what, sizeof what, "%s, wired differently by board", unknown.profile->model);
        else if (unknown.device)
            snprintf(what, sizeof what, "device 0x%04x, not one meshcast can tell", unknown.device);
        else
            snprintf(what, sizeof what, "no device id in the file");
        mc_topo_warn(t, "%s:%d: %d GPU(s), first %s (%s), list no NVLinks, so they are "
                     "reached over PCIe only; if they have NVLinks to an NVSwitch, give their "
                     "number with --assume-nvlink N (or <nodes assume_nvlink=\"N\"> in a "
                     "cluster file), or dump the file where NCCL can ask the driver", c->path,
                     t->nodes[unknown.first].line, unknown.n, t->nodes[unknown.first].name,
                     what);
    }
}

static void connect_cpus(mc_nccl_ctx_t *c)
{
    mc_topo_t *t = c->t;
    int nodes = t->nnodes;
    for (int a = c->first_node; a < nodes; a++)
        for (int b = c->first_node; b < nodes; b++)
            if (a != b && t->nodes[a].kind == MC_NODE_CPU && t->nodes[b].kind == MC_NODE_CPU &&
                t->nodes[a].host == t->nodes[b].host)
                mc_topo_add_link(t, a, b, MC_LINK_SYS, c->cpu_bw[a - c->first_node] * MC_GBPS,
                                 mc_topo_default_latency(MC_LINK_SYS), 1);
}

static void warn_slow_uplinks(mc_nccl_ctx_t *c)
{
    mc_topo_t *t = c->t;
    for (int n = c->first_node; n < t->nnodes; n++) {
        if (t->nodes[n].kind != MC_NODE_GPU && t->nodes[n].kind != MC_NODE_NIC)
            continue;
        for (int k = n; k >= 0 && c->up[k - c->first_node] >= 0; k = c->up[k - c->first_node]) {
            double bw = c->up_bw[k - c->first_node];
            if (bw < SLOW_PCI_GBPS) {
                mc_topo_warn(t, "%s:%d: %s sits behind a %.2f GB/s PCIe link (%s -> %s), a "
                             "bottleneck (a VM's virtual bridge?)", c->path, t->nodes[n].line,
                             t->nodes[n].name, bw, t->nodes[k].name,
                             t->nodes[c->up[k - c->first_node]].name);
                break;
            }
        }
    }
}

mc_status_t mc_nccl_finish_links(mc_nccl_ctx_t *c, mc_err_t *err)
{
    mc_status_t st;
    MC_CHECK_GOTO(resolve_targets(c, err), out, st);
    complete_nvlinks(c);
    connect_cpus(c);
    warn_slow_uplinks(c);
    for (int h = 0; h < c->nhosts; h++)
        if (c->elements[h] > NCCL_MAX_ELEMENTS)
            mc_topo_warn(c->t, "%s: host %d has %d XML elements; NCCL's own parser stops at %d",
                         c->path, c->host_base + h, c->elements[h], NCCL_MAX_ELEMENTS);
out:
    return st;
}
