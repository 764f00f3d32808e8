/* Routes between GPUs: NVLink direct and through the NVSwitch, PCIe and the CPU link inside a
 * host, across hosts over NICs and switches (equal paths over spines spread by destination), and
 * PXN on a two-rail build. Expected links and
 * figures are read off the DGX-1 file and the small builds below; the host's shortest-path trees. */
#include "test_topo_helpers.h"

#include "layout/layout.h"

#include <math.h>

static mc_route_t route_ok(const mc_topo_t *t, int a, int b)
{
    mc_route_t r;
    mc_err_t err = {0};
    if (mc_topo_route(t, a, b, &r, &err) != MC_OK)
        fail_msg("route %d -> %d: %s", a, b, err.msg);
    return r;
}

/* The route's hops as "a>b c>d ...". */
static const char *hops(const mc_topo_t *t, const mc_route_t *r, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < r->nlinks && off < len; i++) {
        const mc_link_t *l = &t->links[r->links[i]];
        off += (size_t)snprintf(buf + off, len - off, "%s%s>%s", i ? " " : "",
                                t->nodes[l->src].name, t->nodes[l->dst].name);
    }
    return buf;
}

static void test_dgx1_routes(void **state)
{
    char buf[1024];
    mc_topo_t *t = load_ok(SHARED "dgx1-v100-hybrid-cube-mesh-topo.xml");
    mc_route_t r = route_ok(t, 0, 3); /* two NVLinks */
    assert_string_equal(hops(t, &r, buf, sizeof buf), "h0/GPU0>h0/GPU3");
    assert_float_equal(r.bw / 1e9, 40.0, 1e-9);
    assert_float_equal(r.latency, 0.5e-6, 1e-15);
    assert_int_equal(r.via_gpu, -1);
    r = route_ok(t, 1, 0); /* one NVLink */
    assert_float_equal(r.bw / 1e9, 20.0, 1e-9);
    /* GPU 0 and GPU 5 share no NVLink: PCIe up, Broadwell QPI (6 GB/s), PCIe down */
    r = route_ok(t, 0, 5);
    assert_string_equal(hops(t, &r, buf, sizeof buf),
                        "h0/GPU0>h0/PCI/0000:03:00.0 h0/PCI/0000:03:00.0>h0/CPU0 h0/CPU0>h0/CPU1 "
                        "h0/CPU1>h0/PCI/0000:82:00.0 h0/PCI/0000:82:00.0>h0/GPU5");
    assert_float_equal(r.bw / 1e9, 6.0, 1e-9);
    assert_float_equal(r.latency, 2.5e-6, 1e-15);
    /* GPU 4 lists NVLinks to 06, 86, 89 and 8a only: 4 -> 2 (0a) crosses the sockets too */
    r = route_ok(t, 4, 2);
    assert_int_equal(r.nlinks, 5);
    r = route_ok(t, 2, 2);
    assert_int_equal(r.nlinks, 0);
    assert_true(isinf(r.bw));
    mc_err_t err = {0};
    assert_int_equal(mc_topo_route(t, 0, 8, &r, &err), MC_ERR_INVALID);
    assert_non_null(strstr(err.msg, "GPU 0 or 8 is not in 0..7"));
    mc_topo_free(t);
}

static void test_nvswitch_route(void **state)
{
    char buf[256];
    mc_topo_t *t = load_ok(SHARED "oci-bm-gpu-h100.8-topo.xml");
    mc_route_t r = route_ok(t, 0, 7);
    assert_string_equal(hops(t, &r, buf, sizeof buf), "h0/GPU0>h0/NVS h0/NVS>h0/GPU7");
    assert_float_equal(r.bw / 1e9, 370.8, 1e-9);
    mc_topo_free(t);
}

/* Two GPUs behind one PCIe switch in the RTX 3090 box: GPU, switch, GPU at 24 GB/s. */
static void test_pcie_switch_route(void **state)
{
    char buf[256];
    mc_topo_t *t = load_ok(SHARED "pcie-rtx3090x8-1nic-topo.xml");
    mc_route_t r = route_ok(t, 4, 7);
    assert_string_equal(hops(t, &r, buf, sizeof buf),
                        "h0/GPU4>h0/PCI/0000:98:00.0 h0/PCI/0000:98:00.0>h0/GPU7");
    assert_float_equal(r.bw / 1e9, 24.0, 1e-9);
    mc_topo_free(t);
}

static int node(mc_topo_t *t, mc_node_kind_t kind, int host, int dev, int rail, const char *fmt,
                ...) __attribute__((format(printf, 6, 7)));
static int node(mc_topo_t *t, mc_node_kind_t kind, int host, int dev, int rail, const char *fmt,
                ...)
{
    mc_node_t n = {.kind = kind, .host = host, .busid = -1, .dev = dev, .rail = rail, .sm = 90};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n.name, sizeof n.name, fmt, ap);
    va_end(ap);
    if (kind == MC_NODE_NET)
        n.bw = 25e9;
    return mc_topo_add_node(t, &n);
}

/* Two hosts; in each, GPU i and NIC i share PCIe switch i (24 GB/s, 0.5 us) and NIC i's port
 * (25 GB/s, 1 us) goes to rail switch i (25 GB/s, 1 us). Options: an NVSwitch per host
 * (300 GB/s), a spine joining the rails (50 GB/s, 1 us). */
static mc_topo_t *build_rails(int nrails, int nvswitch, int spine)
{
    mc_topo_t *t = mc_topo_new("rails");
    int rail[4], sp = spine ? node(t, MC_NODE_SWITCH, -1, -1, -1, "spine0") : -1;
    for (int i = 0; i < nrails; i++) {
        rail[i] = node(t, MC_NODE_SWITCH, -1, -1, i, "rail%d", i);
        if (spine)
            mc_topo_add_link_pair(t, rail[i], sp, MC_LINK_NET, 50e9, 1e-6, 1);
    }
    for (int h = 0; h < 2; h++) {
        int cpu = node(t, MC_NODE_CPU, h, -1, -1, "h%d/CPU0", h);
        int nvs = nvswitch ? node(t, MC_NODE_NVS, h, -1, -1, "h%d/NVS", h) : -1;
        for (int i = 0; i < nrails; i++) {
            int sw = node(t, MC_NODE_PCI, h, -1, -1, "h%d/PCI%d", h, i);
            int gpu = node(t, MC_NODE_GPU, h, i, -1, "h%d/GPU%d", h, i);
            int nic = node(t, MC_NODE_NIC, h, -1, -1, "h%d/NIC%d", h, i);
            int net = node(t, MC_NODE_NET, h, i, i, "h%d/NET%d", h, i);
            mc_topo_add_link_pair(t, sw, cpu, MC_LINK_PCI, 24e9, 0.5e-6, 1);
            mc_topo_add_link_pair(t, gpu, sw, MC_LINK_PCI, 24e9, 0.5e-6, 1);
            mc_topo_add_link_pair(t, nic, sw, MC_LINK_PCI, 24e9, 0.5e-6, 1);
            mc_topo_add_link_pair(t, nic, net, MC_LINK_NET, 25e9, 1e-6, 1);
            mc_topo_add_link_pair(t, net, rail[i], MC_LINK_NET, 25e9, 1e-6, 1);
            if (nvswitch)
                mc_topo_add_link_pair(t, gpu, nvs, MC_LINK_NVL, 300e9, 0.5e-6, 12);
        }
    }
    mc_err_t err = {0};
    if (mc_topo_finalize(t, &err) != MC_OK)
        fail_msg("finalize: %s", err.msg);
    return t;
}

static void test_cross_host(void **state)
{
    char buf[1024];
    mc_topo_t *t = build_rails(1, 0, 0);
    assert_int_equal(t->ngpus, 2);
    mc_route_t r = route_ok(t, 0, 1);
    assert_string_equal(hops(t, &r, buf, sizeof buf),
                        "h0/GPU0>h0/PCI0 h0/PCI0>h0/NIC0 h0/NIC0>h0/NET0 h0/NET0>rail0 "
                        "rail0>h1/NET0 h1/NET0>h1/NIC0 h1/NIC0>h1/PCI0 h1/PCI0>h1/GPU0");
    assert_float_equal(r.bw / 1e9, 24.0, 1e-9);
    assert_float_equal(r.latency, 4 * 0.5e-6 + 4 * 1e-6, 1e-15);
    assert_int_equal(r.via_gpu, -1);
    mc_topo_free(t);
}

static void test_pxn(void **state)
{
    char buf[1024];
    mc_topo_t *t = build_rails(2, 1, 0);
    /* GPU 0 (h0, rail 0) to GPU 3 (h1, rail 1): NVLink to GPU 1, whose NIC is on rail 1 */
    mc_route_t r = route_ok(t, 0, 3);
    assert_string_equal(hops(t, &r, buf, sizeof buf),
                        "h0/GPU0>h0/NVS h0/NVS>h0/GPU1 h0/GPU1>h0/PCI1 h0/PCI1>h0/NIC1 "
                        "h0/NIC1>h0/NET1 h0/NET1>rail1 rail1>h1/NET1 h1/NET1>h1/NIC1 "
                        "h1/NIC1>h1/PCI1 h1/PCI1>h1/GPU1");
    assert_int_equal(r.via_gpu, 1);
    assert_float_equal(r.bw / 1e9, 24.0, 1e-9);
    /* same rail: no relay */
    r = route_ok(t, 0, 2);
    assert_int_equal(r.via_gpu, -1);
    assert_int_equal(r.nlinks, 8);
    /* inside the host: the NVSwitch */
    r = route_ok(t, 1, 0);
    assert_string_equal(hops(t, &r, buf, sizeof buf), "h0/GPU1>h0/NVS h0/NVS>h0/GPU0");
    assert_float_equal(r.bw / 1e9, 300.0, 1e-9);
    /* asking again gives the cached answer */
    mc_route_t again = route_ok(t, 0, 3), first = route_ok(t, 0, 3);
    assert_memory_equal(&again, &first, sizeof again);
    mc_topo_free(t);
}

/* Without NVLink there is no relay: across rails the data takes the spine, and with no spine it
 * is staged through the sender's host (PCIe, the CPU) to its port on the receiver's rail. */
static void test_rails_without_nvlink(void **state)
{
    char buf[1024];
    mc_topo_t *t = build_rails(2, 0, 1);
    mc_route_t r = route_ok(t, 0, 3);
    assert_string_equal(hops(t, &r, buf, sizeof buf),
                        "h0/GPU0>h0/PCI0 h0/PCI0>h0/NIC0 h0/NIC0>h0/NET0 h0/NET0>rail0 "
                        "rail0>spine0 spine0>rail1 rail1>h1/NET1 h1/NET1>h1/NIC1 h1/NIC1>h1/PCI1 "
                        "h1/PCI1>h1/GPU1");
    assert_int_equal(r.via_gpu, -1);
    mc_topo_free(t);
    t = build_rails(2, 0, 0);
    r = route_ok(t, 0, 3);
    assert_string_equal(hops(t, &r, buf, sizeof buf),
                        "h0/GPU0>h0/PCI0 h0/PCI0>h0/CPU0 h0/CPU0>h0/PCI1 h0/PCI1>h0/NIC1 "
                        "h0/NIC1>h0/NET1 h0/NET1>rail1 rail1>h1/NET1 h1/NET1>h1/NIC1 "
                        "h1/NIC1>h1/PCI1 h1/PCI1>h1/GPU1");
    assert_int_equal(r.via_gpu, -1);
    mc_topo_free(t);
}

/* The fabric trees the route cache keeps grow with the ports routes leave from times the
 * switches, not with the ports: every GPU of host 0 of 128 DGX H100 to every GPU of the other
 * hosts leaves from host 0's 8 ports (PXN moves each transfer onto its rail first), so the cache
 * holds 8 trees over the 12 switches (the 1024 ports, entered by one link each, are in none):
 * 13 offsets, then the links into the switches on equal paths: one into the port's rail, one
 * into each of the 4 spines, one from each spine into each of the 7 other rails. */
static void test_route_cache_size(void **state)
{
    mc_topo_t *t = load_ok("topologies/dgx-h100-x128.xml");
    int nswitches = 0, nports = 0;
    assert_int_equal(mc_topo_route_cache_bytes(t), 0);
    for (int a = 0; a < 8; a++)
        for (int b = 8; b < t->ngpus; b++)
            route_ok(t, a, b);
    for (int i = 0; i < t->nnodes; i++) {
        nswitches += t->nodes[i].kind == MC_NODE_SWITCH;
        nports += t->nodes[i].kind == MC_NODE_NET;
    }
    assert_int_equal(nports, 1024);
    assert_true(nswitches > 8);
    assert_int_equal(nswitches, 12);
    assert_int_equal(mc_topo_route_cache_bytes(t), 8 * (13 + 1 + 4 + 7 * 4) * sizeof(int));
    mc_topo_free(t);
}

/* Equal paths over spines are spread by destination (InfiniBand's D-mod-k): 6 DGX A100 under 3
 * leaves of 2 hosts and 2 spines (tests/data/cluster/leaves-spines.xml), GPU 0 to the 16 GPUs of
 * the next leaf goes 8 times over each spine; and so the bound of an all-gather over the 48 GPUs
 * counts both: the 32 shards a leaf lacks come in over 2 links of 100 GB/s, and the 40 a host
 * lacks over its 8 ports, 24 GB/s each behind PCIe, which binds (over one spine, the leaf's
 * would). */
static void test_spines_spread(void **state)
{
    (void)state;
    mc_topo_t *t = load_ok("tests/data/cluster/leaves-spines.xml");
    int over[2] = {0, 0};
    for (int b = 16; b < 32; b++) {
        mc_route_t r = route_ok(t, 0, b);
        for (int i = 0; i < r.nlinks; i++) {
            const char *to = t->nodes[t->links[r.links[i]].dst].name;
            if (!strncmp(to, "spine", 5))
                over[to[5] - '0']++;
        }
    }
    assert_int_equal(over[0], 8);
    assert_int_equal(over[1], 8);
    mc_task_t *task = mc_task_new();
    mc_err_t err = {0};
    mc_bound_t b;
    assert_int_equal(mc_task_add_mesh(task, "M={g:48}@0..47", &err), MC_OK);
    assert_int_equal(mc_task_add_move(task, "f32[49152,5461] M[g,_] -> M[_,_]", &err), MC_OK);
    assert_int_equal(mc_task_split(task, &err), MC_OK);
    assert_int_equal(mc_task_bound(task, t, &b, &err), MC_OK);
    double shard = 4.0 * 49152 / 48 * 5461;
    assert_float_equal(b.cut_s, 40 * shard / 192e9, 1e-6 * b.cut_s);
    assert_true(b.cut_s < 32 * shard / 100e9);
    mc_task_free(task);
    mc_topo_free(t);
    /* two ports per leaf under three spines (tests/data/cluster/p3-leaves.xml): each leaf's ports
     * start on the spine after the last leaf's, so GPU 0's paths to the other hosts cross all
     * three, not only the first two */
    t = load_ok("tests/data/cluster/p3-leaves.xml");
    int spines[3] = {0, 0, 0};
    for (int g = 4; g < t->ngpus; g += 4) {
        mc_route_t r = route_ok(t, 0, g);
        for (int i = 0; i < r.nlinks; i++) {
            const char *to = t->nodes[t->links[r.links[i]].dst].name;
            if (!strncmp(to, "spine", 5))
                spines[to[5] - '0']++;
        }
    }
    for (int k = 0; k < 3; k++)
        assert_true(spines[k] > 0);
    assert_int_equal(spines[0] + spines[1] + spines[2], 6); /* the hosts of the other 3 leaves */
    mc_topo_free(t);
}

/* Routes between GPU pairs are kept once found (clusters up to 128 GPUs): every ordered pair of
 * four DGX A100 boxes and of two MI250 boxes, asked twice, gives the route a fresh copy of the
 * topology finds asked in the other order (links, relay, bottleneck and latency to the bit); a
 * kept route's figures are those of its links as they are now. */
static void test_route_pairs_kept(void **state)
{
    (void)state;
    const char *files[] = {"topologies/dgx-a100-x4.xml", "topologies/mi250-x2.xml"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        mc_topo_t *t = load_ok(files[f]), *fresh = load_ok(files[f]);
        for (int pass = 0; pass < 2; pass++)
            for (int a = 0; a < t->ngpus; a++)
                for (int b = 0; b < t->ngpus; b++) {
                    int fa = t->ngpus - 1 - a, fb = t->ngpus - 1 - b;
                    mc_route_t r = route_ok(t, a, b), w = route_ok(fresh, a, b);
                    (void)route_ok(fresh, fa, fb);
                    assert_int_equal(r.nlinks, w.nlinks);
                    assert_int_equal(r.via_gpu, w.via_gpu);
                    assert_memory_equal(r.links, w.links, sizeof(int) * (size_t)r.nlinks);
                    assert_memory_equal(&r.bw, &w.bw, sizeof r.bw);
                    assert_memory_equal(&r.latency, &w.latency, sizeof r.latency);
                }
        mc_route_t before = route_ok(t, 0, t->ngpus - 1);
        assert_true(before.nlinks > 0);
        t->links[before.links[0]].latency += 1e-6;
        mc_route_t after = route_ok(t, 0, t->ngpus - 1);
        assert_memory_equal(after.links, before.links, sizeof(int) * (size_t)before.nlinks);
        assert_true(fabs(after.latency - before.latency - 1e-6) < 1e-12);
        mc_topo_free(t);
        mc_topo_free(fresh);
    }
}

/* The host's shortest-path tree from a GPU on DGX-1: every GPU hangs off src by parents, no path
 * is slower per byte than the GPU's direct route (Dijkstra over the complete host graph), GPU 5
 * (6 GB/s across the sockets from GPU 0) is reached over NVLinks through a relay, and a second
 * call returns the cached tree. */
static void test_host_spt(void **state)
{
    mc_topo_t *t = load_ok(SHARED "dgx1-v100-hybrid-cube-mesh-topo.xml");
    mc_err_t err = {0};
    const int *par, *again;
    int g0 = -1, g0b = -1;
    assert_int_equal(mc_topo_host_spt(t, 0, &g0, &par, &err), MC_OK);
    assert_int_equal(g0, 0);
    assert_true(par[0] < 0);
    for (int v = 1; v < 8; v++) {
        double path = 0;
        int hops = 0;
        for (int u = v; u != 0; u = par[u], hops++) {
            assert_true(par[u] >= 0 && par[u] < 8 && hops < 8);
            path += 1.0 / route_ok(t, par[u], u).bw;
        }
        assert_true(path <= 1.0 / route_ok(t, 0, v).bw * (1 + 1e-9));
    }
    assert_int_not_equal(par[5], 0);
    assert_true(route_ok(t, par[5], 5).bw / 1e9 >= 20.0);
    assert_int_equal(mc_topo_host_spt(t, 0, &g0b, &again, &err), MC_OK);
    assert_ptr_equal(again, par);
    assert_int_equal(g0b, 0);
    mc_topo_free(t);
}

/* One thread's share of test_routes_two_threads: every ordered GPU pair's route (links through
 * mc_topo_route_links, whose known pairs are read without the lock) and every GPU's host tree,
 * walked forward or backward. */
typedef struct asker {
    const mc_topo_t *t;
    int backward, failed;
    int *nlinks, *links; /* per pair (a * ngpus + b): its link count, its links */
    const int **spt;     /* per GPU: its host tree */
} asker_t;

static void ask_all(void *arg)
{
    asker_t *a = arg;
    int n = a->t->ngpus;
    mc_err_t err = {0};
    for (int i = 0; i < n * n; i++) {
        int k = a->backward ? n * n - 1 - i : i, via, g0;
        a->failed |= mc_topo_route_links(a->t, k / n, k % n, &a->nlinks[k],
                                         a->links + (size_t)k * MC_ROUTE_MAX_LINKS, &via,
                                         &err) != MC_OK;
        if (k % n == 0)
            a->failed |= mc_topo_host_spt(a->t, k / n, &g0, &a->spt[k / n], &err) != MC_OK;
    }
}

static asker_t asker_new(const mc_topo_t *t, int backward)
{
    size_t n = (size_t)t->ngpus;
    return (asker_t){t, backward, 0, mc_xcalloc(n * n, sizeof(int)),
                     mc_xcalloc(n * n * MC_ROUTE_MAX_LINKS, sizeof(int)),
                     mc_xcalloc(n, sizeof(int *))};
}

static void asker_free(asker_t *a)
{
    free(a->nlinks);
    free(a->links);
    free(a->spt);
}

/* The plain synthesis asks for routes and host trees on a thread of its own while the caller
 * does too (synth_meshcast.c): two threads filling one topology's caches at once, one pair order
 * forward and one backward, get every route and host tree that one thread gets alone on a fresh
 * copy of the topology (run under valgrind --tool=helgrind, no race is reported). */
static void test_routes_two_threads(void **state)
{
    (void)state;
    mc_topo_t *t = load_ok("topologies/mi250-x2.xml"), *fresh = load_ok("topologies/mi250-x2.xml");
    asker_t one = asker_new(fresh, 0), fwd = asker_new(t, 0), back = asker_new(t, 1);
    ask_all(&one);
    mc_run_both(ask_all, &fwd, ask_all, &back);
    int n = t->ngpus;
    assert_false(one.failed || fwd.failed || back.failed);
    for (int k = 0; k < n * n; k++)
        for (int i = 0; i < 2; i++) {
            const asker_t *x = i ? &back : &fwd;
            assert_int_equal(x->nlinks[k], one.nlinks[k]);
            assert_memory_equal(x->links + (size_t)k * MC_ROUTE_MAX_LINKS,
                                one.links + (size_t)k * MC_ROUTE_MAX_LINKS,
                                sizeof(int) * MC_ROUTE_MAX_LINKS);
        }
    for (int g = 0; g < n; g++) {
        int g0, m = mc_topo_host_gpus(t, mc_topo_gpu_host(t, g), &g0);
        assert_ptr_equal(fwd.spt[g], back.spt[g]);
        assert_memory_equal(fwd.spt[g], one.spt[g], sizeof(int) * (size_t)m);
    }
    asker_free(&one);
    asker_free(&fwd);
    asker_free(&back);
    mc_topo_free(t);
    mc_topo_free(fresh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dgx1_routes),     cmocka_unit_test(test_nvswitch_route),
        cmocka_unit_test(test_pcie_switch_route), cmocka_unit_test(test_cross_host),
        cmocka_unit_test(test_pxn),             cmocka_unit_test(test_rails_without_nvlink),
        cmocka_unit_test(test_route_cache_size), cmocka_unit_test(test_spines_spread),
        cmocka_unit_test(test_host_spt),
        cmocka_unit_test(test_route_pairs_kept), cmocka_unit_test(test_routes_two_threads),
    };
    return cmocka_run_group_tests_name("topo_route", tests, NULL, NULL);
}
