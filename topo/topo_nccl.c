/* NCCL topology XML (<system version="1">, as NCCL_TOPO_DUMP_FILE writes it) into the topology
 * graph, the way NCCL's ncclTopoGetSystemFromXml builds its own: CPUs per NUMA node grouped into
 * hosts by host_hash, the PCIe tree with each <pci>'s link_speed/link_width as its upstream link,
 * GPUs, NICs and their <net> ports, NVLinks to GPUs, NVSwitches (one NVS per document) or CPUs,
 * C2C, <pcilink>, and Broadcom switch folding. RCCL's dialect (<system version="2">) is read the
 * way RCCL reads it: <xgmi> rows instead of <nvlink>, speeds by the GPU's gcn, GPUs of class
 * 0x120000, and the functions of one NIC card merged. Skeleton files (PCI ids only) are
 * completed from known device ids with a warning per assumption, or refused with what is
 * missing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo_nccl.h"

#define MAX_ELEMENTS 100000   /* far beyond any real host file (NCCL reads 255) */
#define MAX_PCI_DEPTH 64

typedef enum { PCI_BRIDGE, PCI_GPU, PCI_NIC, PCI_DROP, PCI_BARE } pci_role_t;

static int is_elem(xmlNodePtr x, const char *name)
{
    return x->type == XML_ELEMENT_NODE && !strcmp((const char *)x->name, name);
}

static xmlNodePtr first_child(xmlNodePtr x, const char *name)
{
    for (xmlNodePtr k = x->children; k; k = k->next)
        if (is_elem(k, name))
            return k;
    return NULL;
}

static int line_of(xmlNodePtr x)
{
    return (int)xmlGetLineNo(x);
}

static const char *dialect_name(const mc_nccl_ctx_t *c)
{
    return c->dialect == MC_DIALECT_RCCL ? "RCCL" : "NCCL";
}

static void ignore_elem(mc_nccl_ctx_t *c, xmlNodePtr x, const char *where)
{
    mc_topo_warn(c->t, "%s:%d: ignoring element <%s> inside <%s> (%s ignores it too)", c->path,
                 line_of(x), (const char *)x->name, where, dialect_name(c));
}

/* GPU classes: display controllers, and for RCCL processing accelerators (MI300). */
static int gpu_class(const mc_nccl_ctx_t *c, int64_t cls)
{
    return MC_PCI_BASE(cls) == MC_PCI_BASE_DISPLAY ||
           (c->dialect == MC_DIALECT_RCCL && cls == MC_PCI_CLASS_ACCEL);
}

static mc_status_t count_element(mc_nccl_ctx_t *c, int host, xmlNodePtr x, mc_err_t *err)
{
    if (++c->total_elements > MAX_ELEMENTS)
        return mc_err_set(err, MC_ERR_INVALID, "%s:%d: more than %d elements: not a topology file",
                          c->path, line_of(x), MAX_ELEMENTS);
    c->elements[host - c->host_base]++;
    return MC_OK;
}

static int add_node(mc_nccl_ctx_t *c, mc_node_kind_t kind, int host, int64_t busid, int line,
                    const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int add_node(mc_nccl_ctx_t *c, mc_node_kind_t kind, int host, int64_t busid, int line,
                    const char *fmt, ...)
{
    mc_node_t n = {.kind = kind, .host = host, .busid = busid, .dev = -1, .rail = -1,
                   .line = line};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n.name, sizeof n.name, fmt, ap);
    va_end(ap);
    int id = mc_topo_add_node(c->t, &n);
    mc_nccl_track(c, id, -1, 0);
    return id;
}

/* Appends "#2", "#3", ... to a node name until no node has it: a <pci> or <net> that repeats a
 * bus id or dev index is its own device, as NCCL and RCCL create it, and needs a name of its own.
 * Called only for repeats, so normal files pay no name search. */
static void unique_name(const mc_nccl_ctx_t *c, char *name, size_t len)
{
    char base[64];
    snprintf(base, sizeof base, "%s", name);
    for (int k = 2; mc_topo_find_node(c->t, name) >= 0; k++)
        snprintf(name, len, "%.50s#%d", base, k);
}

/* The <pci> elements of the host read so far with this bus id; *gpu (unless NULL) says whether
 * one became a GPU. */
static int bus_repeats(const mc_nccl_ctx_t *c, int host, int64_t busid, int *gpu)
{
    int n = 0, any_gpu = 0;
    for (int i = 0; i < c->nbus; i++)
        if (c->bus[i].host == host && c->bus[i].busid == busid) {
            n++;
            any_gpu |= c->bus[i].node >= 0 && c->t->nodes[c->bus[i].node].kind == MC_NODE_GPU;
        }
    if (gpu)
        *gpu = any_gpu;
    return n;
}

/* Records a bus id. One equal to an enclosing <pci> is a cycle, and two GPUs with one bus id are
 * refused (NVLink rows name GPUs by bus id). Other repeats are separate devices, as
 * ncclTopoAddPci creates a node per element (RCCL ships models that repeat a switch's id), except
 * a NIC's functions, which join one NIC; they are counted for one warning. */
static mc_status_t add_bus(mc_nccl_ctx_t *c, xmlNodePtr x, int host, int64_t busid, int node,
                           int is_gpu, mc_err_t *err)
{
    char b[32];
    for (int i = 0; i < c->depth; i++)
        if (c->stack[i] == busid)
            return mc_err_set(err, MC_ERR_INVALID,
                              "%s:%d: <pci busid=\"%s\"> is inside itself: a cycle in the PCIe "
                              "tree", c->path, line_of(x), mc_nccl_busid_str(busid, b, sizeof b));
    int had_gpu;
    if (bus_repeats(c, host, busid, &had_gpu) > 0) {
        if (is_gpu && had_gpu)
            return mc_err_set(err, MC_ERR_INVALID,
                              "%s:%d: duplicate bus id %s on host %d: a second GPU (expected each "
                              "GPU's bus id once: NVLink rows name GPUs by it)", c->path,
                              line_of(x), mc_nccl_busid_str(busid, b, sizeof b), host);
        if (c->repeated_bus++ == 0) {
            c->repeated_line = line_of(x);
            c->repeated_example = busid;
        }
    }
    MC_GROW(c->bus, c->bus_cap, c->nbus + 1);
    c->bus[c->nbus++] = (mc_nccl_bus_t){.host = host, .busid = busid, .node = node};
    return MC_OK;
}

static int nvs_node(mc_nccl_ctx_t *c)
{
    if (c->nvs < 0)
        c->nvs = add_node(c, MC_NODE_NVS, c->host_base, -1, 0, "h%d/NVS", c->host_base);
    return c->nvs;
}

void mc_nccl_add_nvs_lanes(mc_nccl_ctx_t *c, int gpu, int lanes)
{
    mc_topo_add_link_pair(c->t, gpu, nvs_node(c), MC_LINK_NVL,
                          lanes * mc_nccl_nvlink_bw(c->t->nodes[gpu].sm) * MC_GBPS,
                          mc_topo_default_latency(MC_LINK_NVL), lanes);
    c->nvl_rows[gpu - c->first_node] = 1;
}

static void link_up(mc_nccl_ctx_t *c, int node, int parent, double gbps, mc_link_kind_t kind)
{
    mc_topo_add_link_pair(c->t, node, parent, kind, gbps * MC_GBPS, mc_topo_default_latency(kind),
                          1);
    mc_nccl_track(c, node, parent, gbps);
}

/* A count or bandwidth: zero or negative would make a link that carries nothing. */
static mc_status_t positive_int(mc_nccl_ctx_t *c, xmlNodePtr x, const char *name, int64_t hi,
                                int64_t *out, mc_err_t *err)
{
    mc_status_t st = mc_nccl_attr_int(c, x, name, 1, INT64_MIN, INT64_MAX, 0, out, err);
    if (st == MC_OK && *out <= 0)
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: <%s %s=\"%lld\">: zero or negative "
                        "bandwidth; expected a positive number", c->path, line_of(x),
                        (const char *)x->name, name, (long long)*out);
    else if (st == MC_OK && *out > hi)
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: <%s %s=\"%lld\">: absurd value, expected "
                        "at most %lld", c->path, line_of(x), (const char *)x->name, name,
                        (long long)*out, (long long)hi);
    return st;
}

/* One <nvlink> (NCCL) or <xgmi> (RCCL) row: both programs read them alike (ncclTopoAddNvLinks,
 * ncclTopoAddXGMI), with per-link bandwidth link_gbps and kind as the link's kind. */
static mc_status_t read_nvlink(mc_nccl_ctx_t *c, xmlNodePtr x, int gpu, int64_t own_bus,
                               mc_link_kind_t kind, double link_gbps, int cpu, mc_err_t *err)
{
    mc_status_t st;
    int64_t count, tclass;
    MC_CHECK_GOTO(positive_int(c, x, "count", 64, &count, err), out, st);
    MC_CHECK_GOTO(mc_nccl_attr_int(c, x, "tclass", 1, 0, 0xffffff, 0, &tclass, err), out, st);
    c->nvl_rows[gpu - c->first_node]++;
    double gbps = (double)count * link_gbps;
    const char *what = kind == MC_LINK_XGMI ? "xGMI" : "NVLink";
    if (gpu_class(c, tclass)) {
        int64_t target;
        MC_CHECK_GOTO(mc_nccl_attr_busid(c, x, "target", &target, err), out, st);
        if (target == own_bus) {
            mc_topo_warn(c->t, "%s:%d: %s lists an %s to itself (count %lld); ignored, it "
                         "connects nothing", c->path, line_of(x), c->t->nodes[gpu].name, what,
                         (long long)count);
            goto out;
        }
        MC_GROW(c->nvl, c->nvl_cap, c->nnvl + 1);
        c->nvl[c->nnvl++] = (mc_nccl_nvl_t){gpu, target, (int)count, line_of(x), kind, gbps};
    } else if (tclass == MC_PCI_CLASS_CPU) {
        mc_topo_add_link_pair(c->t, gpu, cpu, kind, gbps * MC_GBPS,
                              mc_topo_default_latency(kind), (int)count);
    } else {
        if (tclass != MC_PCI_CLASS_NVSWITCH)
            mc_topo_warn(c->t, "%s:%d: %s target class 0x%06llx is neither a GPU nor a CPU; "
                         "treated as a switch, as %s does", c->path, line_of(x), what,
                         (long long)tclass, dialect_name(c));
        mc_topo_add_link_pair(c->t, gpu, nvs_node(c), kind, gbps * MC_GBPS,
                              mc_topo_default_latency(kind), (int)count);
    }
out:
    return st;
}

static mc_status_t read_c2c(mc_nccl_ctx_t *c, xmlNodePtr x, int gpu, int cpu, mc_err_t *err)
{
    mc_status_t st;
    int64_t bw, count;
    MC_CHECK_GOTO(positive_int(c, x, "bw", 10000000, &bw, err), out, st);
    MC_CHECK_GOTO(positive_int(c, x, "count", 64, &count, err), out, st);
    /* bw is MB/s per link */
    mc_topo_add_link_pair(c->t, gpu, cpu, MC_LINK_C2C, (double)bw * (double)count * 1e6,
                          mc_topo_default_latency(MC_LINK_C2C), (int)count);
out:
    return st;
}

static int find_dev(const mc_nccl_ctx_t *c, mc_node_kind_t kind, int host, int64_t dev)
{
    for (int i = c->first_node; i < c->t->nnodes; i++) {
        const mc_node_t *n = &c->t->nodes[i];
        if (n->kind == kind && n->host == host && n->dev == dev)
            return i;
    }
    return -1;
}

/* The next free dev index on a host, for devices a skeleton does not number. */
static int next_dev(const mc_nccl_ctx_t *c, mc_node_kind_t kind, int host)
{
    int next = 0;
    for (int i = c->first_node; i < c->t->nnodes; i++) {
        const mc_node_t *n = &c->t->nodes[i];
        if (n->kind == kind && n->host == host && n->dev >= next)
            next = n->dev + 1;
    }
    return next;
}

/* The GPU's per-link bandwidth: NCCL's by sm; RCCL's by gcn (RCCL's sm is a CU count). */
static mc_status_t gpu_link_bw(mc_nccl_ctx_t *c, xmlNodePtr x, mc_node_t *n, double *gbps,
                               mc_err_t *err)
{
    if (c->dialect == MC_DIALECT_NCCL) {
        *gbps = mc_nccl_nvlink_bw(n->sm);
        return MC_OK;
    }
    char *gcn = mc_nccl_attr_str(x, "gcn");
    if (!gcn || !*gcn) {
        free(gcn);
        return mc_err_set(err, MC_ERR_INVALID, "%s:%d: <gpu> needs the attribute gcn (the gfx "
                          "architecture, e.g. gfx942) in RCCL's dialect (<system version=\"2\">)",
                          c->path, line_of(x));
    }
    *gbps = mc_rccl_xgmi_bw(gcn, n->arch, sizeof n->arch);
    n->sm = 0;
    free(gcn);
    return MC_OK;
}

static mc_status_t read_gpu(mc_nccl_ctx_t *c, xmlNodePtr x, int host, int64_t bus, int parent,
                            double bw, int cpu, int *out_gpu, mc_err_t *err)
{
    mc_status_t st;
    int64_t dev, sm, rank;
    double link_gbps = 0;
    MC_CHECK_GOTO(count_element(c, host, x, err), out, st);
    MC_CHECK_GOTO(mc_nccl_attr_int(c, x, "dev", 1, 0, 1023, 0, &dev, err), out, st);
    MC_CHECK_GOTO(mc_nccl_attr_int(c, x, "sm", 1, 10, 1000, 0, &sm, err), out, st);
    MC_CHECK_GOTO(mc_nccl_attr_int(c, x, "rank", 0, 0, 1 << 24, -1, &rank, err), out, st);
    if (find_dev(c, MC_NODE_GPU, host, dev) >= 0) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: duplicate <gpu dev=\"%lld\"> on host %d",
                        c->path, line_of(x), (long long)dev, host);
        goto out;
    }
    int gpu = add_node(c, MC_NODE_GPU, host, bus, line_of(x), "h%d/GPU%lld", host, (long long)dev);
    c->t->nodes[gpu].dev = (int)dev;
    c->t->nodes[gpu].sm = (int)sm;
    *out_gpu = gpu;
    MC_CHECK_GOTO(gpu_link_bw(c, x, &c->t->nodes[gpu], &link_gbps, err), out, st);
    if (rank < 0)
        mc_topo_warn(c->t, "%s:%d: <gpu dev=\"%lld\"> has no rank; NCCL would skip it, meshcast "
                     "keeps it as %s", c->path, line_of(x), (long long)dev,
                     c->t->nodes[gpu].name);
    link_up(c, gpu, parent, bw, MC_LINK_PCI);
    for (xmlNodePtr k = x->children; k; k = k->next) {
        if (k->type != XML_ELEMENT_NODE)
            continue;
        MC_CHECK_GOTO(count_element(c, host, k, err), out, st);
        int rccl = c->dialect == MC_DIALECT_RCCL;
        if (is_elem(k, rccl ? "xgmi" : "nvlink"))
            MC_CHECK_GOTO(read_nvlink(c, k, gpu, bus, rccl ? MC_LINK_XGMI : MC_LINK_NVL,
                                      link_gbps, cpu, err), out, st);
        else if (!rccl && is_elem(k, "c2c"))
            MC_CHECK_GOTO(read_c2c(c, k, gpu, cpu, err), out, st);
        else
            ignore_elem(c, k, "gpu");
    }
out:
    return st;
}

/* The network port already hanging off a NIC, -1 if none yet. */
static int port_of(const mc_nccl_ctx_t *c, int nic)
{
    for (int i = c->first_node; i < c->t->nnodes; i++)
        if (c->t->nodes[i].kind == MC_NODE_NET && c->up[i - c->first_node] == nic)
            return i;
    return -1;
}

/* A port's speed in Mb/s as ncclTopoAddNet reads it: a speed of 0 or below (some NICs report -1)
 * or none is NCCL's 10 Gb/s unless --assume-nic-gbps states one; above 10 Tb/s it is taken with
 * a warning (RCCL ships a model at 200 Tb/s, which its PCIe links bound), up to the 100 TB/s
 * every link of a topology is held to (topo_bounds.c). */
static mc_status_t read_net_speed(mc_nccl_ctx_t *c, xmlNodePtr x, int64_t dev, int64_t *speed,
                                  mc_err_t *err)
{
    char *given = mc_nccl_attr_str(x, "speed");
    mc_status_t st = mc_nccl_attr_int(c, x, "speed", 0, INT32_MIN, INT32_MAX, 0, speed, err);
    if (st != MC_OK)
        goto out;
    if (*speed > MC_NCCL_MAX_NET_MBPS) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: <net speed=\"%s\">: expected at most %d Mb/s "
                        "(100 TB/s, the most meshcast takes for any link)", c->path, line_of(x),
                        given, MC_NCCL_MAX_NET_MBPS);
        goto out;
    }
    if (*speed > MC_NCCL_MAX_PLAUSIBLE_MBPS)
        mc_topo_warn(c->t, "%s:%d: <net dev=\"%lld\" speed=\"%s\">: %.0f Gb/s, beyond any NIC; "
                     "taken as given, as NCCL and RCCL do",
                     c->path, line_of(x), (long long)dev, given, (double)*speed / 1000);
    if (*speed > 0)
        goto out;
    if (c->assume_nic_mbps > 0) {
        *speed = c->assume_nic_mbps;
        goto out;
    }
    *speed = MC_NCCL_DEFAULT_NET_MBPS;
    if (given)
        mc_topo_warn(c->t, "%s:%d: <net dev=\"%lld\" speed=\"%s\">: NCCL reads a speed of 0 or "
                     "below as 10 Gb/s, and so does meshcast (--assume-nic-gbps N states it)",
                     c->path, line_of(x), (long long)dev, given);
    else
        mc_topo_warn(c->t, "%s:%d: <net dev=\"%lld\"> has no speed; NCCL assumes 10 Gb/s "
                     "(--assume-nic-gbps N states it)", c->path, line_of(x), (long long)dev);
out:
    free(given);
    return st;
}

/* One <net>. With fuse, a second port of the same NIC joins the first as one device of their
 * summed speed: NCCL 2.28 merges ports whose path is PATH_PORT (one <nic>, or functions of one
 * card) into a virtual NIC at run time by default (NCCL_NET_MERGE_LEVEL=PORT, ncclTopoMakeVNics),
 * and only a dump shows them apart. */
static mc_status_t read_net(mc_nccl_ctx_t *c, xmlNodePtr x, int host, int nic, int fuse,
                            mc_err_t *err)
{
    mc_status_t st;
    int64_t dev, speed, rail, is_net;
    MC_CHECK_GOTO(count_element(c, host, x, err), out, st);
    MC_CHECK_GOTO(mc_nccl_attr_int(c, x, "dev", 0, 0, 1023, -1, &dev, err), out, st);
    if (dev < 0) {
        mc_topo_warn(c->t, "%s:%d: <net> without dev is ignored, as NCCL does", c->path,
                     line_of(x));
        goto out;
    }
    MC_CHECK_GOTO(mc_nccl_attr_int(c, x, "net", 0, INT32_MIN, INT32_MAX, 1, &is_net, err), out,
                  st);
    if (!is_net) {
        mc_topo_warn(c->t, "%s:%d: <net dev=\"%lld\" net=\"0\"> is no device of NCCL's network "
                     "transport (a GIN, RMA or CollNet device of NCCL 2.29's dumps); ignored, as "
                     "NCCL does", c->path, line_of(x), (long long)dev);
        goto out;
    }
    MC_CHECK_GOTO(read_net_speed(c, x, dev, &speed, err), out, st);
    MC_CHECK_GOTO(mc_nccl_attr_int(c, x, "rail", 0, -1, 65535, -1, &rail, err), out, st);
    double bw = MC_NCCL_NET_BW(speed);
    int net = fuse ? port_of(c, nic) : -1;
    if (net >= 0) {
        if (c->t->links[mc_topo_find_link(c->t, nic, net)].count == 1 && c->fused_nics++ == 0)
            c->fused_example = nic;
        c->t->nodes[net].bw += bw;
    } else {
        char name[64];
        snprintf(name, sizeof name, "h%d/NET%lld", host, (long long)dev);
        int same = find_dev(c, MC_NODE_NET, host, dev);
        if (same >= 0) {
            unique_name(c, name, sizeof name);
            mc_topo_warn(c->t, "%s:%d: a second <net dev=\"%lld\"> on host %d (the first at "
                         "line %d); NCCL and RCCL keep both as network devices, and so does "
                         "meshcast, as %s", c->path, line_of(x), (long long)dev, host,
                         c->t->nodes[same].line, name);
        }
        net = add_node(c, MC_NODE_NET, host, -1, line_of(x), "%s", name);
        c->t->nodes[net].dev = (int)dev;
        c->t->nodes[net].rail = (int)rail;
        c->t->nodes[net].bw = bw;
        mc_nccl_track(c, net, nic, bw / MC_GBPS);
    }
    mc_topo_add_link_pair(c->t, nic, net, MC_LINK_NET, bw, mc_topo_default_latency(MC_LINK_NET),
                          1);
out:
    return st;
}

static mc_status_t read_nic(mc_nccl_ctx_t *c, xmlNodePtr x, int host, int nic, int fuse,
                            mc_err_t *err)
{
    mc_status_t st = MC_OK;
    MC_CHECK_GOTO(count_element(c, host, x, err), out, st);
    for (xmlNodePtr k = x->children; k; k = k->next) {
        if (is_elem(k, "net"))
            MC_CHECK_GOTO(read_net(c, k, host, nic, fuse, err), out, st);
        else if (k->type == XML_ELEMENT_NODE)
            ignore_elem(c, k, "nic");
    }
out:
    return st;
}

/* A skeleton's GPU: a class 0x03 <pci> without <gpu>. Known device ids, or where the file gives
 * none known the model the user states (--assume-gpu, NCCL files only), are completed with a
 * warning; the others are counted and the file refused at the end. Returns the GPU, or -1. */
static int skeleton_gpu(mc_nccl_ctx_t *c, xmlNodePtr x, int host, int64_t bus, int parent,
                         double bw, unsigned vendor, unsigned device)
{
    char b[32];
    const mc_gpu_profile_t *p = mc_nccl_gpu_profile(vendor, device);
    int stated = !p && c->assume_gpu && c->dialect == MC_DIALECT_NCCL;
    if (stated)
        p = mc_nccl_gpu_profile(0x10de, c->assume_gpu);
    if (!p) {
        if (c->skeleton_gpus++ == 0) {
            c->skeleton_line = line_of(x);
            c->skeleton_bus = bus;
        }
        return -1;
    }
    int dev = next_dev(c, MC_NODE_GPU, host);
    int gpu = add_node(c, MC_NODE_GPU, host, bus, line_of(x), "h%d/GPU%d", host, dev);
    c->t->nodes[gpu].dev = dev;
    c->t->nodes[gpu].sm = p->sm;
    link_up(c, gpu, parent, bw, MC_LINK_PCI);
    int lanes = c->assume_nvlink >= 0 ? c->assume_nvlink : p->nvs_links;
    if (lanes > 0)
        mc_nccl_add_nvs_lanes(c, gpu, lanes);
    mc_topo_warn(c->t, "%s:%d: <pci busid=\"%s\"> is a GPU with no <gpu> element (a skeleton file); "
                 "assuming %s (device 0x%04x%s) as %s: sm %d, %d NVLinks to the NVSwitch%s",
                 c->path, line_of(x), mc_nccl_busid_str(bus, b, sizeof b), p->model, p->device,
                 stated ? ", as stated" : "", c->t->nodes[gpu].name, p->sm, lanes,
                 c->assume_nvlink >= 0 ? " (as stated)" : "");
    return gpu;
}

static void skeleton_nic(mc_nccl_ctx_t *c, xmlNodePtr x, int host, int nic, unsigned vendor,
                         unsigned device)
{
    const mc_nic_profile_t *p = mc_nccl_nic_profile(vendor, device);
    int dev = next_dev(c, MC_NODE_NET, host);
    int net = add_node(c, MC_NODE_NET, host, -1, line_of(x), "h%d/NET%d", host, dev);
    c->t->nodes[net].dev = dev;
    int mbps = p                        ? p->speed_mbps
               : c->assume_nic_mbps > 0 ? c->assume_nic_mbps
                                        : MC_NCCL_DEFAULT_NET_MBPS;
    c->t->nodes[net].bw = MC_NCCL_NET_BW(mbps);
    mc_topo_add_link_pair(c->t, nic, net, MC_LINK_NET, c->t->nodes[net].bw,
                          mc_topo_default_latency(MC_LINK_NET), 1);
    mc_topo_warn(c->t, "%s:%d: NIC %s has no <nic>/<net> (a skeleton file); assuming one port %s "
                 "at %d Gb/s (%s)", c->path, line_of(x), c->t->nodes[nic].name,
                 c->t->nodes[net].name, mbps / 1000,
                 p                        ? p->model
                 : c->assume_nic_mbps > 0 ? "as stated"
                                          : "unknown device id: NCCL's default speed; "
                                            "--assume-nic-gbps N states it");
}

typedef struct pci_attrs {
    int64_t bus, cls;
    int has_class;
    uint64_t word; /* vendor, device, subsystem vendor, subsystem device */
    double bw;
} pci_attrs_t;

static mc_status_t read_pci_attrs(mc_nccl_ctx_t *c, xmlNodePtr x, pci_attrs_t *a, mc_err_t *err)
{
    static const char *ids[] = {"vendor", "device", "subsystem_vendor", "subsystem_device"};
    mc_status_t st;
    char *speed = NULL;
    int64_t width, v;
    MC_CHECK_GOTO(mc_nccl_attr_busid(c, x, "busid", &a->bus, err), out, st);
    a->has_class = xmlHasProp(x, BAD_CAST "class") != NULL;
    MC_CHECK_GOTO(mc_nccl_attr_int(c, x, "class", 0, 0, 0xffffff, -1, &a->cls, err), out, st);
    a->word = 0;
    for (int i = 0; i < 4; i++) {
        MC_CHECK_GOTO(mc_nccl_attr_int(c, x, ids[i], 0, 0, 0xffff, 0, &v, err), out, st);
        a->word = a->word << 16 | (uint64_t)v;
    }
    char *w = mc_nccl_attr_str(x, "link_width");
    int empty_width = w && !*w; /* NCCL reads an empty width as 0, i.e. x16 */
    free(w);
    width = 0;
    if (!empty_width)
        MC_CHECK_GOTO(mc_nccl_attr_int(c, x, "link_width", 0, 0, 32, 0, &width, err), out, st);
    speed = mc_nccl_attr_str(x, "link_speed");
    int known;
    a->bw = mc_nccl_pci_bw(speed, (int)width, &known);
    if (a->bw < 0) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: <pci link_speed=\"%s\">: %s, expected a rate "
                        "like \"16.0 GT/s PCIe\"", c->path, line_of(x), speed,
                        a->bw == -2 ? "the rate is not above 0 GT/s" : "unknown unit");
        goto out;
    }
    if (!a->has_class && !x->children)
        goto out; /* a bare bus id: reported once for the whole file */
    if (!known)
        mc_topo_warn(c->t, "%s:%d: link_speed \"%s\"%s is not in NCCL's table; NCCL reads it as "
                     "Gen3 (8 GT/s)", c->path, line_of(x), speed ? speed : "",
                     speed ? "" : " (missing)");
    if (width == 0)
        mc_topo_warn(c->t, "%s:%d: link_width %s; NCCL reads it as x16", c->path, line_of(x),
                     empty_width ? "empty" : xmlHasProp(x, BAD_CAST "link_width") ? "0" : "missing");
out:
    free(speed);
    return st;
}

/* ncclTopoAddPci's order: a <gpu> child makes a GPU and a <nic> child a NIC whatever the class
 * (NICs sit on host bridges in VMs, on ConnectX-8 functions in GB300 trays); only then does the
 * class decide, with every class NCCL does not list read as a bridge. */
static pci_role_t pci_role(mc_nccl_ctx_t *c, xmlNodePtr x, const pci_attrs_t *a)
{
    pci_role_t r = first_child(x, "gpu") ? PCI_GPU : first_child(x, "nic") ? PCI_NIC : PCI_BARE;
    if (!a->has_class) {
        if (r == PCI_BARE && first_child(x, "pci"))
            r = PCI_BRIDGE;
        if (r != PCI_BARE)
            c->classless++;
        return r;
    }
    if (r != PCI_BARE)
        return r;
    if (a->cls == MC_PCI_CLASS_BRIDGE || a->cls == MC_PCI_CLASS_CX8_DIRECT)
        return PCI_BRIDGE;
    if (gpu_class(c, a->cls))
        return PCI_GPU;
    if (MC_PCI_BASE(a->cls) == MC_PCI_BASE_NETWORK)
        return PCI_NIC;
    if (a->cls == MC_PCI_CLASS_NVSWITCH || a->cls == MC_PCI_CLASS_CPU)
        return PCI_DROP;
    return PCI_BRIDGE;
}

static mc_status_t read_pci(mc_nccl_ctx_t *c, xmlNodePtr x, int parent, int cpu, int host,
                            int absorb_gen, mc_err_t *err);

static mc_status_t read_bridge(mc_nccl_ctx_t *c, xmlNodePtr x, const pci_attrs_t *a, int parent,
                               int cpu, int host, int absorb_gen, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    char b[32];
    int node = parent, gen = 0;
    /* NCCL folds a Broadcom sub-switch into the switch above it: both levels are one switch. */
    if (!(absorb_gen && mc_nccl_bcm_gen(a->word, 1) == absorb_gen)) {
        char name[64];
        snprintf(name, sizeof name, "h%d/PCI/%s", host, mc_nccl_busid_str(a->bus, b, sizeof b));
        if (bus_repeats(c, host, a->bus, NULL) > 0)
            unique_name(c, name, sizeof name);
        node = add_node(c, MC_NODE_PCI, host, a->bus, line_of(x), "%s", name);
        link_up(c, node, parent, a->bw, MC_LINK_PCI);
        gen = mc_nccl_bcm_gen(a->word, 0);
    }
    MC_CHECK_GOTO(add_bus(c, x, host, a->bus, node == parent ? -1 : node, 0, err), out, st);
    if (c->depth == MAX_PCI_DEPTH) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: PCIe tree deeper than %d levels", c->path,
                        line_of(x), MAX_PCI_DEPTH);
        goto out;
    }
    c->stack[c->depth++] = a->bus;
    for (xmlNodePtr k = x->children; k; k = k->next) {
        if (is_elem(k, "pci")) {
            MC_CHECK_GOTO(read_pci(c, k, node, cpu, host, gen, err), pop, st);
        } else if (c->dialect == MC_DIALECT_NCCL && is_elem(k, "pcilink")) {
            int64_t target;
            MC_CHECK_GOTO(count_element(c, host, k, err), pop, st);
            MC_CHECK_GOTO(mc_nccl_attr_busid(c, k, "target", &target, err), pop, st);
            MC_GROW(c->nvl, c->nvl_cap, c->nnvl + 1);
            c->nvl[c->nnvl++] =
                (mc_nccl_nvl_t){node, target, 0, line_of(k), MC_LINK_LOC, MC_NCCL_LOC_BW};
        } else if (k->type == XML_ELEMENT_NODE) {
            ignore_elem(c, k, "pci");
        }
    }
pop:
    c->depth--;
out:
    return st;
}

/* The NIC an earlier function of the same PCI card became, -1 if none. */
static int card_nic(const mc_nccl_ctx_t *c, int host, int64_t bus)
{
    for (int i = c->first_node; i < c->t->nnodes; i++) {
        const mc_node_t *n = &c->t->nodes[i];
        if (n->kind == MC_NODE_NIC && n->host == host && n->busid >= 0 && n->busid >> 4 == bus >> 4)
            return i;
    }
    return -1;
}

static mc_status_t read_pci(mc_nccl_ctx_t *c, xmlNodePtr x, int parent, int cpu, int host,
                            int absorb_gen, mc_err_t *err)
{
    mc_status_t st;
    char b[32];
    pci_attrs_t a;
    MC_CHECK_GOTO(count_element(c, host, x, err), out, st);
    MC_CHECK_GOTO(read_pci_attrs(c, x, &a, err), out, st);
    unsigned vendor = (unsigned)(a.word >> 48), device = (unsigned)(a.word >> 32) & 0xffff;
    pci_role_t role = pci_role(c, x, &a);
    if (role == PCI_BRIDGE)
        return read_bridge(c, x, &a, parent, cpu, host, absorb_gen, err);
    int node = -1;
    MC_CHECK_GOTO(add_bus(c, x, host, a.bus, -1, role == PCI_GPU, err), out, st);
    if (role == PCI_GPU) {
        xmlNodePtr g = first_child(x, "gpu");
        if (!g) {
            node = skeleton_gpu(c, x, host, a.bus, parent, a.bw, vendor, device);
        } else {
            MC_CHECK_GOTO(read_gpu(c, g, host, a.bus, parent, a.bw, cpu, &node, err), out, st);
            for (xmlNodePtr k = g->next; k; k = k->next)
                if (is_elem(k, "gpu"))
                    mc_topo_warn(c->t, "%s:%d: a second <gpu> under one <pci> (a partitioned "
                                 "GPU); only the first is used", c->path, line_of(k));
        }
    } else if (role == PCI_NIC) {
        /* The functions of one card are one NIC: RCCL masks the function digit (busId &=
         * ~0xf); NCCL 2.28 fuses their ports at run time into a device under the first. */
        node = card_nic(c, host, a.bus);
        if (node < 0) {
            node = add_node(c, MC_NODE_NIC, host, a.bus, line_of(x), "h%d/NIC/%s", host,
                            mc_nccl_busid_str(a.bus, b, sizeof b));
            link_up(c, node, parent, a.bw, MC_LINK_PCI);
        }
        xmlNodePtr n = first_child(x, "nic");
        if (n)
            MC_CHECK_GOTO(read_nic(c, n, host, node, c->dialect == MC_DIALECT_NCCL, err), out,
                          st);
        else
            skeleton_nic(c, x, host, node, vendor, device);
    } else if (role == PCI_DROP) {
        mc_topo_warn(c->t, "%s:%d: <pci class=\"0x%06llx\"> (an NVSwitch or CPU bridge) creates "
                     "no node; NCCL drops it and what it holds", c->path, line_of(x),
                     (long long)a.cls);
    } else {
        c->bare_pci++;
    }
    if (node >= 0) /* the bus record points at the device it became */
        c->bus[c->nbus - 1].node = node;
    c->bus[c->nbus - 1].vendor = vendor;
    c->bus[c->nbus - 1].device = device;
out:
    return st;
}

static int host_index(mc_nccl_ctx_t *c, uint64_t hash)
{
    for (int i = 0; i < c->nhosts; i++)
        if (c->hashes[i] == hash)
            return c->host_base + i;
    MC_GROW(c->hashes, c->hash_cap, c->nhosts + 1);
    MC_GROW(c->elements, c->elem_cap, c->nhosts + 1);
    c->hashes[c->nhosts] = hash;
    c->elements[c->nhosts] = 0;
    return c->host_base + c->nhosts++;
}

static mc_status_t read_cpu_nic(mc_nccl_ctx_t *c, xmlNodePtr x, int cpu, int host, mc_err_t *err)
{
    /* Every <nic> directly under a <cpu> feeds one NIC node with no PCI path. */
    char name[80];
    snprintf(name, sizeof name, "%.59s/NIC", c->t->nodes[cpu].name);
    int nic = mc_topo_find_node(c->t, name);
    if (nic < 0) {
        nic = add_node(c, MC_NODE_NIC, host, -1, line_of(x), "%s", name);
        mc_topo_add_link_pair(c->t, nic, cpu, MC_LINK_LOC, MC_NCCL_LOC_BW * MC_GBPS, 0, 1);
        mc_nccl_track(c, nic, cpu, MC_NCCL_LOC_BW);
    }
    return read_nic(c, x, host, nic, 0, err); /* socket NICs: NCCL's socket transport fuses none */
}

static mc_status_t read_cpu(mc_nccl_ctx_t *c, xmlNodePtr x, mc_err_t *err)
{
    mc_status_t st;
    int64_t numa, family, model;
    uint64_t hash = 0;
    char *arch = NULL, *vendor = NULL, *hs = mc_nccl_attr_str(x, "host_hash");
    if (hs && mc_parse_u64(hs, &hash) != 0) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: <cpu host_hash=\"%s\">: expected a hex "
                        "number like 0x5ef3a1", c->path, line_of(x), hs);
        goto out;
    }
    int host = host_index(c, hash);
    MC_CHECK_GOTO(count_element(c, host, x, err), out, st);
    MC_CHECK_GOTO(mc_nccl_attr_int(c, x, "numaid", 1, -1, 4095, 0, &numa, err), out, st);
    MC_CHECK_GOTO(mc_nccl_attr_int(c, x, "familyid", 0, 0, 0xffff, 0, &family, err), out, st);
    MC_CHECK_GOTO(mc_nccl_attr_int(c, x, "modelid", 0, 0, 0xffff, 0, &model, err), out, st);
    arch = mc_nccl_attr_str(x, "arch");
    vendor = mc_nccl_attr_str(x, "vendor");
    char name[64];
    snprintf(name, sizeof name, "h%d/CPU%lld", host, (long long)numa);
    if (mc_topo_find_node(c->t, name) >= 0) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: duplicate <cpu numaid=\"%lld\"> on host %d",
                        c->path, line_of(x), (long long)numa, host);
        goto out;
    }
    int cpu = add_node(c, MC_NODE_CPU, host, -1, line_of(x), "%s", name);
    c->cpu_bw[cpu - c->first_node] =
        mc_nccl_cpu_bw(c->dialect, arch, vendor, (int)family, (int)model);
    for (xmlNodePtr k = x->children; k; k = k->next) {
        if (is_elem(k, "pci"))
            MC_CHECK_GOTO(read_pci(c, k, cpu, cpu, host, 0, err), out, st);
        else if (is_elem(k, "nic"))
            MC_CHECK_GOTO(read_cpu_nic(c, k, cpu, host, err), out, st);
        else if (k->type == XML_ELEMENT_NODE)
            ignore_elem(c, k, "cpu");
    }
out:
    free(hs);
    free(arch);
    free(vendor);
    return st;
}

/* What a file without usable GPUs lacks, and how to get a full one. */
static mc_status_t refuse_skeleton(mc_nccl_ctx_t *c, int line, mc_err_t *err)
{
    static const char *how = "dump a full topology on the machine with NCCL_TOPO_DUMP_FILE=topo.xml "
                             "while any NCCL program runs (e.g. all_reduce_perf -g 8)";
    char b[32];
    if (c->skeleton_gpus > 0)
        return mc_err_set(err, MC_ERR_UNSUPPORTED,
                          "%s:%d: skeleton topology: %d GPU(s), first <pci busid=\"%s\">, are "
                          "given only by PCI class, without <gpu> (sm, NVLinks) and without a "
                          "known device id to infer them from; %s, or state the model with "
                          "--assume-gpu MODEL (one of: %s)", c->path, c->skeleton_line,
                          c->skeleton_gpus, mc_nccl_busid_str(c->skeleton_bus, b, sizeof b), how,
                          mc_topo_gpu_models());
    if (c->bare_pci > 0)
        return mc_err_set(err, MC_ERR_UNSUPPORTED,
                          "%s:%d: skeleton topology: it lists only PCI bus ids (%d <pci> without "
                          "class or <gpu>), no GPUs, NVLinks or NICs; %s", c->path, line,
                          c->bare_pci, how);
    return mc_err_set(err, MC_ERR_INVALID, "%s:%d: no GPUs in the topology (expected <gpu> "
                      "elements under <pci>); %s", c->path, line, how);
}

static mc_status_t check_root(xmlNodePtr root, const char *path, mc_dialect_t *dialect,
                              mc_err_t *err)
{
    if (is_elem(root, "graphs"))
        return mc_err_set(err, MC_ERR_INVALID,
                          "%s:%d: this is an NCCL graph file (<graphs>: the rings and trees of "
                          "NCCL_GRAPH_FILE), not a topology; give the file NCCL_TOPO_DUMP_FILE "
                          "writes (<system>)", path, line_of(root));
    if (!is_elem(root, "system"))
        return mc_err_set(err, MC_ERR_INVALID, "%s:%d: root element <%s>: expected <system> (NCCL "
                          "topology) or <cluster>", path, line_of(root),
                          (const char *)root->name);
    char *v = mc_nccl_attr_str(root, "version");
    mc_status_t st = MC_OK;
    if (v && !strcmp(v, "1"))
        *dialect = MC_DIALECT_NCCL;
    else if (v && !strcmp(v, "2"))
        *dialect = MC_DIALECT_RCCL;
    else
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: <system version=\"%s\">: expected version "
                        "\"1\" (NCCL's format) or \"2\" (RCCL's)", path, line_of(root),
                        v ? v : "");
    free(v);
    return st;
}

static void ctx_free(mc_nccl_ctx_t *c)
{
    free(c->hashes);
    free(c->elements);
    free(c->up);
    free(c->up_bw);
    free(c->cpu_bw);
    free(c->nvl_rows);
    free(c->bus);
    free(c->nvl);
}

mc_status_t mc_nccl_xml_add(mc_topo_t *t, xmlDocPtr doc, const char *path, int host_base,
                            const mc_topo_load_opts_t *opts, int *nhosts, mc_err_t *err)
{
    mc_status_t st;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    mc_nccl_ctx_t c = {.t = t, .path = path, .host_base = host_base, .nvs = -1,
                       .first_node = t->nnodes, .assume_nvlink = opts->assume_nvlink,
                       .assume_gpu = opts->assume_gpu, .assume_nic_mbps = opts->assume_nic_mbps};
    int ngpus = 0;
    char busbuf[32];
    MC_CHECK_GOTO(check_root(root, path, &c.dialect, err), out, st);
    for (xmlNodePtr k = root->children; k; k = k->next) {
        if (is_elem(k, "cpu"))
            MC_CHECK_GOTO(read_cpu(&c, k, err), out, st);
        else if (k->type == XML_ELEMENT_NODE)
            ignore_elem(&c, k, "system");
    }
    if (c.nhosts == 0) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: <system> holds no <cpu>: expected the "
                        "NUMA nodes with their PCI devices", path, line_of(root));
        goto out;
    }
    for (int i = c.first_node; i < t->nnodes; i++)
        ngpus += t->nodes[i].kind == MC_NODE_GPU;
    if (ngpus == 0 || c.skeleton_gpus > 0) {
        st = refuse_skeleton(&c, line_of(root), err);
        goto out;
    }
    if (c.classless > 0)
        mc_topo_warn(t, "%s: %d <pci> elements have no class; inferred from what they hold", path,
                     c.classless);
    if (c.repeated_bus > 0)
        mc_topo_warn(t, "%s:%d: %d <pci> elements repeat a bus id already read on their host "
                     "(first %s); each is its own device, as NCCL and RCCL read them (a NIC's "
                     "functions join one NIC)", path, c.repeated_line, c.repeated_bus,
                     mc_nccl_busid_str(c.repeated_example, busbuf, sizeof busbuf));
    if (c.fused_nics > 0)
        mc_topo_warn(t, "%s: %d NICs have several ports (first %s); each NIC's ports are one "
                     "network device of their summed speed, as NCCL 2.28 fuses them at run time "
                     "(NCCL_NET_MERGE_LEVEL=PORT)", path, c.fused_nics,
                     t->nodes[c.fused_example].name);
    MC_CHECK_GOTO(mc_nccl_finish_links(&c, err), out, st);
    *nhosts = c.nhosts;
out:
    ctx_free(&c);
    return st;
}
