/* Tests for the lower bounds: the paper's nine many-to-many cases on a model of its cluster
 * (5 hosts x 4 V100, one 10 Gb/s NIC each), bounds written down by hand, plus topologies built so
 * that each term (ingress, egress, host cut, mesh cut, latency) binds in turn.
 *
 * The model: each GPU has an NVLink of 25e9 B/s to each of the 3 others and a PCIe link of 12e9
 * B/s to its host's PCIe switch (in = out = 87e9 B/s); the switch reaches the NIC port over PCIe,
 * and the port reaches the network switch at 1.25e9 B/s each way. So a host's cut is 1.25e9 B/s
 * in each direction; alpha is 3.4 us over NVLink and 14 us over the network. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout.h"
#include "tests/unit/test_layout_random.h"

#define NIC 1.25e9
#define GIB 1073741824.0

static int add(mc_topo_t *t, mc_node_kind_t kind, int host, int dev, const char *name)
{
    mc_node_t n = {.kind = kind, .host = host, .gpu = -1, .busid = -1, .dev = dev, .rail = -1};
    snprintf(n.name, sizeof(n.name), "%s", name);
    return mc_topo_add_node(t, &n);
}

/* Adds a host of ngpus NVLink-connected GPUs behind a PCIe switch and one NIC port to sw. */
static void add_host(mc_topo_t *t, int h, int ngpus, int sw)
{
    char name[64];
    int gpus[8];
    snprintf(name, sizeof(name), "h%d/PCI0", h);
    int pci = add(t, MC_NODE_PCI, h, -1, name);
    for (int g = 0; g < ngpus; g++) {
        snprintf(name, sizeof(name), "h%d/GPU%d", h, g);
        gpus[g] = add(t, MC_NODE_GPU, h, g, name);
        mc_topo_add_link_pair(t, gpus[g], pci, MC_LINK_PCI, 12e9, 0, 1);
        for (int o = 0; o < g; o++)
            mc_topo_add_link_pair(t, gpus[g], gpus[o], MC_LINK_NVL, 25e9, 0, 1);
    }
    snprintf(name, sizeof(name), "h%d/NET0", h);
    int net = add(t, MC_NODE_NET, h, 0, name);
    mc_topo_add_link_pair(t, pci, net, MC_LINK_PCI, 12e9, 0, 1);
    if (sw >= 0)
        mc_topo_add_link_pair(t, net, sw, MC_LINK_NET, NIC, 0, 1);
}

static mc_topo_t *paper_cluster(void)
{
    mc_topo_t *t = mc_topo_new("paper cluster model");
    int sw = add(t, MC_NODE_SWITCH, -1, -1, "switch");
    for (int h = 0; h < 5; h++)
        add_host(t, h, 4, sw);
    mc_err_t err = {0};
    assert_int_equal(mc_topo_finalize(t, &err), MC_OK);
    return t;
}

static void expect_bound(const mc_bound_t *b, double seconds, mc_bound_kind_t kind, int where,
                         const char *name)
{
    if (b->binding != kind || b->where != where || b->seconds < seconds * (1 - 1e-12) ||
        b->seconds > seconds * (1 + 1e-12))
        fail_msg("%s: bound %.10f s by %s at %d, expected %.10f s by %s at %d", name, b->seconds,
                 mc_bound_kind_str(b->binding), b->where, seconds, mc_bound_kind_str(kind), where);
}

#define TWO_BY_FOUR "mesh A={host:2,gpu:4}@0..7\nmesh B={host:2,gpu:4}@8..15\n"
#define ALPHA_NET 14e-6

static void test_paper_cases(void **state)
{
    mc_topo_t *topo = paper_cluster();
    /* case 1: each source host sends its 1 GiB half to one destination host over one NIC. */
    mc_bound_t b = task_bound(topo, TWO_BY_FOUR "move i32[1024,1024,512] A[host,_,_] -> B[host,_,_]");
    expect_bound(&b, GIB / NIC + ALPHA_NET, MC_BOUND_HOST_CUT, 0, "case 1");
    assert_float_equal(b.host_cut_s, 0.8589934592, 1e-12);
    assert_float_equal(b.mesh_cut_s, 2 * GIB / (2 * NIC), 1e-12); /* both meshes: 2 GiB, 2 NICs */
    assert_float_equal(b.ingress_s, GIB / 87e9, 1e-12);
    assert_float_equal(b.egress_s, GIB / (4 * 87e9), 1e-12);
    assert_float_equal(b.latency_s, ALPHA_NET, 1e-15);
    /* case 2: replicated on both source hosts, so no source host must send anything alone; each
     * destination host still needs 1 GiB. */
    b = task_bound(topo, TWO_BY_FOUR "move i32[1024,1024,512] A[_,_,_] -> B[host,_,_]");
    expect_bound(&b, GIB / NIC + ALPHA_NET, MC_BOUND_HOST_CUT, 2, "case 2");
    assert_float_equal(b.egress_s, 2 * GIB / (8 * 87e9), 1e-12);
    /* case 3: each destination host takes 0.5 GiB from each source host; each source host sends
     * its 1 GiB (dim 1 half) once. */
    b = task_bound(topo, TWO_BY_FOUR "move i32[1024,1024,512] A[_,host,_] -> B[host,_,_]");
    expect_bound(&b, GIB / NIC + ALPHA_NET, MC_BOUND_HOST_CUT, 0, "case 3");
    /* case 4: 8-way to 8-way; each destination GPU needs 256 MiB over its 87e9 B/s. */
    b = task_bound(topo, TWO_BY_FOUR "move i32[1024,1024,512] A[_,(host,gpu),_] -> B[(host,gpu),_,_]");
    expect_bound(&b, GIB / NIC + ALPHA_NET, MC_BOUND_HOST_CUT, 0, "case 4");
    assert_float_equal(b.ingress_s, GIB / 4 / 87e9, 1e-12);
    /* case 5: replicated across source hosts, so the destination hosts bind. */
    b = task_bound(topo, TWO_BY_FOUR "move i32[1024,1024,512] A[gpu,_,_] -> B[host,_,_]");
    expect_bound(&b, GIB / NIC + ALPHA_NET, MC_BOUND_HOST_CUT, 2, "case 5");
    /* case 6: 2 -> 3 hosts, (3072,1024,170) int32: a source host holds 1536 rows = 1,069,547,520
     * bytes that must all leave it (0.855638016 s); a destination host needs only 1024 rows =
     * 713,031,680 bytes (0.570425344 s). */
    b = task_bound(topo, "mesh A={host:2,gpu:4}@0..7\nmesh B={host:3,gpu:4}@8..19\n"
                       "move i32[3072,1024,170] A[host,_,_] -> B[host,_,_]");
    expect_bound(&b, 0.855638016 + ALPHA_NET, MC_BOUND_HOST_CUT, 0, "case 6");
    assert_float_equal(b.mesh_cut_s, 0.855638016, 1e-12); /* 2,139,095,040 B over 2 NICs */
    /* cases 7 and 8 (the suite repeats case 7): one source host holds all 2 GiB, and both
     * destination hosts need all of it: 2 GiB out of host 0. */
    for (int c = 7; c <= 8; c++) {
        b = task_bound(topo, "mesh A={host:1,gpu:4}@0..3\nmesh B={host:2,gpu:4}@4..11\n"
                           "move i32[1024,1024,512] A[gpu,_,_] -> B[_,_,_]");
        expect_bound(&b, 2 * GIB / NIC + ALPHA_NET, MC_BOUND_HOST_CUT, 0, c == 7 ? "case 7" : "case 8");
        assert_float_equal(b.mesh_cut_s, 2 * GIB / NIC, 1e-12); /* out of the source mesh */
    }
    /* case 9: dim 1 over hosts -> dim 2 over hosts: each source host sends 1 GiB once. */
    b = task_bound(topo, TWO_BY_FOUR "move i32[1024,1024,512] A[_,host,_] -> B[_,_,host]");
    expect_bound(&b, GIB / NIC + ALPHA_NET, MC_BOUND_HOST_CUT, 0, "case 9");
    mc_topo_free(topo);
}

static void test_host_bytes(void **state)
{
    mc_topo_t *topo = paper_cluster();
    mc_task_t *t = task_of("mesh A={host:2,gpu:4}@0..7\nmesh B={host:3,gpu:4}@8..19\n"
                           "move i32[3072,1024,170] A[host,_,_] -> B[host,_,_]");
    uint64_t in[5], out[5];
    mc_task_host_bytes(t, topo, in, out);
    static const uint64_t want_in[5] = {0, 0, 713031680, 713031680, 713031680};
    static const uint64_t want_out[5] = {1069547520, 1069547520, 0, 0, 0};
    for (int h = 0; h < 5; h++) {
        assert_int_equal(in[h], want_in[h]);
        assert_int_equal(out[h], want_out[h]);
    }
    /* The middle destination host takes half from each source host: rows 1024..2048. */
    assert_int_equal(t->npieces, 4);
    mc_task_free(t);
    mc_topo_free(topo);
}

static void test_inside_host(void **state)
{
    mc_topo_t *topo = paper_cluster();
    /* All-gather inside host 0: 16 MiB f32, each GPU needs 3/4 over 87e9 B/s; alpha NVLink. */
    mc_bound_t b = task_bound(topo, "mesh A={g:4}@0..3\nmove f32[4194304] A[g] -> A[_]");
    expect_bound(&b, 12582912 / 87e9 + 3.4e-6, MC_BOUND_INGRESS, 0, "all-gather");
    assert_float_equal(b.host_cut_s, 0, 0);
    assert_float_equal(b.egress_s, 4194304 / 87e9, 1e-15);
    /* The same all-gather plus 4 bytes to host 1: host 1 waits for the network alpha, but GPU 0's
     * ingress, which binds, only for NVLink's. */
    b = task_bound(topo, "mesh A={g:4}@0..3\nmesh C={g:4}@4..7\nmove f32[4194304] A[g] -> A[_]\n"
                       "move u8[4] A[g] -> C[_]");
    expect_bound(&b, 12582912 / 87e9 + 3.4e-6, MC_BOUND_INGRESS, 0, "all-gather and a crossing");
    assert_float_equal(b.host_cut_s, 4 / NIC, 1e-15);
    /* Three bytes: only the latency matters. */
    b = task_bound(topo, "mesh A={g:4}@0..3\nmove u8[4] A[g] -> A[_]");
    assert_int_equal(b.binding, MC_BOUND_LATENCY);
    assert_float_equal(b.seconds, 3 / 87e9 + 3.4e-6, 1e-15);
    /* Nothing moves. */
    b = task_bound(topo, "mesh A={g:4}@0..3\nmove u8[4] A[g] -> A[g]");
    assert_int_equal(b.binding, MC_BOUND_NONE);
    assert_int_equal(b.where, -1);
    assert_float_equal(b.seconds, 0, 0);
    mc_topo_free(topo);
}

/* GPU 0 reaches GPU 1 at 10e9 B/s; GPU 1 and GPU 2 share 50e9 B/s. A replicated copy of GPU
 * 0's tensor for GPUs 1 and 2 leaves GPU 0 once at 10e9 B/s: the egress term binds. */
static void test_egress_binds(void **state)
{
    mc_topo_t *topo = mc_topo_new("chain");
    int g0 = add(topo, MC_NODE_GPU, 0, 0, "GPU0"), g1 = add(topo, MC_NODE_GPU, 0, 1, "GPU1");
    int g2 = add(topo, MC_NODE_GPU, 0, 2, "GPU2");
    mc_topo_add_link_pair(topo, g0, g1, MC_LINK_NVL, 10e9, 0, 1);
    mc_topo_add_link_pair(topo, g1, g2, MC_LINK_NVL, 50e9, 0, 1);
    mc_err_t err = {0};
    assert_int_equal(mc_topo_finalize(topo, &err), MC_OK);
    mc_bound_t b = task_bound(topo, "mesh A={x:1}@[0]\nmesh B={x:2}@1..2\nmove u8[1000000] A[_] -> B[_]");
    expect_bound(&b, 1e6 / 10e9 + 3.4e-6, MC_BOUND_EGRESS, 0, "egress");
    assert_float_equal(b.ingress_s, 1e6 / 50e9, 1e-15);
    mc_topo_free(topo);
}

/* Hosts 1 and 2 share a direct 100e9 B/s link, so each alone has plenty of ingress, but together
 * they have only their two NICs: the cut around the destination mesh binds. The source is
 * replicated on hosts 0 and 3, so no single source host must send it alone either. Host 1's own
 * cut is its GPU's 12e9 B/s PCIe hop, not the NIC + 100e9 B/s of links leaving it: the data
 * starts and ends in GPUs, so the cut is the maximum flow from them. */
static void test_mesh_cut_binds(void **state)
{
    mc_topo_t *topo = mc_topo_new("pairs");
    int sw = add(topo, MC_NODE_SWITCH, -1, -1, "switch");
    for (int h = 0; h < 4; h++)
        add_host(topo, h, 1, sw);
    mc_topo_add_link_pair(topo, mc_topo_find_node(topo, "h1/NET0"),
                          mc_topo_find_node(topo, "h2/NET0"), MC_LINK_NET, 100e9, 0, 1);
    mc_err_t err = {0};
    assert_int_equal(mc_topo_finalize(topo, &err), MC_OK);
    mc_bound_t b = task_bound(topo, "mesh A={x:2}@[0,3]\nmesh B={x:2}@1..2\n"
                                  "move u8[1000000000] A[_] -> B[_]");
    expect_bound(&b, 1e9 / (2 * NIC) + ALPHA_NET, MC_BOUND_MESH_CUT, 0, "mesh cut");
    assert_float_equal(b.host_cut_s, 1e9 / 12e9, 1e-12);
    mc_topo_free(topo);
}

static void test_errors(void **state)
{
    mc_topo_t *topo = paper_cluster();
    mc_task_t *t = task_of("mesh A={x:2}@[0,20]\nmove u8[4] A[x] -> A[_]");
    mc_bound_t b;
    mc_err_t err = {0};
    assert_int_equal(mc_task_bound(t, topo, &b, &err), MC_ERR_INVALID);
    assert_non_null(strstr(err.msg, "device 20 of mesh A is outside the topology"));
    mc_task_free(t);
    mc_topo_free(topo);
    /* GPU 1 has an outgoing link only: nothing can reach it. */
    topo = mc_topo_new("one way");
    int g0 = add(topo, MC_NODE_GPU, 0, 0, "GPU0"), g1 = add(topo, MC_NODE_GPU, 0, 1, "GPU1");
    mc_topo_add_link(topo, g1, g0, MC_LINK_NVL, 10e9, 0, 1);
    assert_int_equal(mc_topo_finalize(topo, &err), MC_OK);
    t = task_of("mesh A={x:2}@0..1\nmove u8[4] A[x] -> A[_]");
    assert_int_equal(mc_task_bound(t, topo, &b, &err), MC_ERR_INVALID);
    assert_non_null(strstr(err.msg, "GPU 1 must pass 2 bytes but no link of one way can carry"));
    mc_task_free(t);
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paper_cases),   cmocka_unit_test(test_host_bytes),
        cmocka_unit_test(test_inside_host),   cmocka_unit_test(test_egress_binds),
        cmocka_unit_test(test_mesh_cut_binds), cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
