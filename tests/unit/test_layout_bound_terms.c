/* Tests for the flow, cut and lp terms of the lower bound, against figures derived by hand: the
 * Edmonds bound of a one-GPU broadcast on the DGX-1 hybrid cube-mesh (the NCCL dump in
 * topologies/), a hand-built host where two fat pairs of GPUs are joined by thin links, so that
 * the cut between the pairs binds and no single GPU's links do, four hosts where two share a thin
 * uplink, so that the cut around both binds and no host's does, a host of 20 GPUs whose cut
 * is found over grouped GPUs, a one-way ring where relays
 * spend link capacity twice, which only the lp term sees, and an MI100 hive whose PCIe links no
 * route between two GPUs takes, which no term counts. */
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
#include "tests/unit/test_topo_helpers.h"

#define DGX1 "topologies/dgx1-v100-hybrid-cube-mesh-topo.xml"

static mc_bound_t bound_of(const mc_topo_t *topo, const char *text)
{
    mc_task_t *t = task_of(text);
    mc_bound_t b, fast;
    mc_err_t err = {0};
    if (mc_task_bound_terms(t, topo, &b, &err) != MC_OK || mc_task_bound(t, topo, &fast, &err))
        fail_msg("%s\n%s", text, err.msg);
    /* Skipping what cannot exceed the larger terms changes neither the bound nor what binds. */
    assert_true(fast.seconds == b.seconds && fast.binding == b.binding && fast.where == b.where);
    mc_task_free(t);
    return b;
}

static void expect_close(double got, double want, const char *what)
{
    if (got < want * (1 - 1e-12) || got > want * (1 + 1e-12))
        fail_msg("%s: %.12g, expected %.12g", what, got, want);
}

/* The cut term binds, on the set (host, mask, into) of the two GPUs g0 and g1. */
static void expect_cut_set(const mc_topo_t *topo, const mc_bound_t *b, int host, uint64_t mask,
                           int into, int g0, int g1)
{
    assert_int_equal(b->binding, MC_BOUND_CUT);
    assert_int_equal(b->cut_set.host, host);
    assert_int_equal(b->cut_set.mask, mask);
    assert_int_equal(b->cut_set.into, into);
    int gpus[64];
    assert_int_equal(mc_bound_set_gpus(topo, &b->cut_set, gpus), 2);
    assert_int_equal(gpus[0], g0);
    assert_int_equal(gpus[1], g1);
}

/* The DGX-1 dump: every GPU has 6 NVLinks (sm 70: 20e9 B/s each, NCCL's SM70_NVLINK_BW) and a
 * Gen3 x16 PCIe link (12e9 B/s) to its switch; switches hang off CPU 0 (GPUs 0-3) and CPU 1
 * (GPUs 4-7), joined by QPI (family 6, model 79 is Broadwell: BDW_QPI_BW, 6e9 B/s). The NVLinks
 * between the two quads, read from the file's <nvlink count>: 0-4 x2 (line 9), 1-5 x2 (line 14),
 * 2-6 x1 (line 24), 3-7 x1 (line 35): 6 links, 120e9 B/s. So the least max-flow from GPU 0 to a
 * GPU of the other quad is 120e9 + 6e9 (PCIe up, QPI, PCIe down), and GPU 0's own links carry
 * 132e9: Edmonds' bound for a broadcast from GPU 0 is bytes / 126e9, above egress and ingress.
 * Nothing leaves GPU 0 before a message's NVLink alpha and the 0.5 us latency of the direct
 * NVLink it then crosses (its PCIe messages pay more). */
static void test_edmonds_dgx1_broadcast(void **state)
{
    mc_topo_t *topo = load_ok(DGX1);
    const double bytes = 256.0 * 1048576, alpha_nvl = 3.4e-6 + 0.5e-6;
    mc_bound_t b = bound_of(topo, "mesh S={g:1}@0\nmesh D={g:7}@1..7\n"
                                  "move f32[8192,8192] S[_,_] -> D[_,_]\n");
    expect_close(b.egress_s, bytes / 132e9, "egress");
    expect_close(b.flow_s, bytes / 126e9, "flow");
    expect_close(b.seconds, bytes / 126e9 + alpha_nvl, "bound");
    assert_int_equal(b.binding, MC_BOUND_FLOW);
    assert_int_equal(b.flow_holder, 0);
    assert_true(b.where >= 4 && b.where <= 7); /* a GPU of the other quad */
    /* From GPU 5 to GPUs 0-3 only: the same cut between the quads, from the other side. */
    b = bound_of(topo,
                 "mesh S={g:1}@5\nmesh D={g:4}@0..3\nmove bf16[6144,8192] S[_,_] -> D[_,_]\n");
    expect_close(b.flow_s, 96.0 * 1048576 / 126e9, "flow from GPU 5");
    assert_int_equal(b.binding, MC_BOUND_FLOW);
    mc_topo_free(topo);
}

/* RCCL's MI100 model (topologies/rccl-topo_4p3l.xml): 4 GPUs (gfx908), each joined to each
 * other by one xGMI link of 24e9 B/s (RCCL's figure for gfx908), and each with a Gen4 PCIe link
 * (24e9 B/s up to a 12e9 B/s switch port) to CPU 0. Every pair of GPUs talks over its xGMI link
 * (mc_topo_route), so no schedule puts a byte on the PCIe links: a broadcast of 64 MiB from GPU
 * 0 is bounded by GPU 0's three xGMI links, bytes / 72e9 (Edmonds: three two-level trees reach
 * it), where counting the PCIe path through the CPU gave bytes / 84e9. The link into a GPU from
 * GPU 0 can carry bytes after one message's wait d (the xGMI alpha and the 0.5 us latency of the
 * route's one link), those from the two other GPUs only after 2d, once they hold some: the bound
 * is bytes / 72e9 plus the mean of d, 2d and 2d (the reach term). */
static void test_route_caps_mi100_broadcast(void **state)
{
    mc_topo_t *topo = load_ok("topologies/rccl-topo_4p3l.xml");
    const double bytes = 64.0 * 1048576, alpha_xgmi = 3.4e-6 + 0.5e-6;
    mc_bound_t b = bound_of(topo, "mesh S={g:1}@0\nmesh D={g:3}@1..3\n"
                                  "move f32[4096,4096] S[_,_] -> D[_,_]\n");
    expect_close(b.flow_s, bytes / 72e9, "flow");
    expect_close(b.egress_s, bytes / 72e9, "egress");
    expect_close(b.ingress_s, bytes / 72e9, "ingress");
    expect_close(b.seconds, bytes / 72e9 + alpha_xgmi * 5 / 3, "bound");
    assert_int_equal(b.binding, MC_BOUND_REACH);
    mc_topo_free(topo);
}

static int add_node(mc_topo_t *t, mc_node_kind_t kind, int host, int dev, const char *name)
{
    mc_node_t n = {.kind = kind, .host = host, .gpu = -1, .busid = -1, .sm = 90, .dev = dev,
                   .rail = -1};
    snprintf(n.name, sizeof(n.name), "%s", name);
    return mc_topo_add_node(t, &n);
}

static int add_gpu(mc_topo_t *t, int dev)
{
    char name[32];
    snprintf(name, sizeof(name), "h0/GPU%d", dev);
    return add_node(t, MC_NODE_GPU, 0, dev, name);
}

/* One host: GPUs 0-1 and 2-3 joined in pairs by 100e9 B/s links, the pairs by two 10e9 B/s
 * links (0-2 and 1-3), nothing else. */
static mc_topo_t *two_pairs(void)
{
    mc_topo_t *t = mc_topo_new("two fat pairs joined by thin links");
    int g[4];
    for (int i = 0; i < 4; i++)
        g[i] = add_gpu(t, i);
    mc_topo_add_link_pair(t, g[0], g[1], MC_LINK_NVL, 100e9, 0, 1);
    mc_topo_add_link_pair(t, g[2], g[3], MC_LINK_NVL, 100e9, 0, 1);
    mc_topo_add_link_pair(t, g[0], g[2], MC_LINK_NVL, 10e9, 0, 1);
    mc_topo_add_link_pair(t, g[1], g[3], MC_LINK_NVL, 10e9, 0, 1);
    mc_err_t err = {0};
    assert_int_equal(mc_topo_finalize(t, &err), MC_OK);
    return t;
}

/* GPUs 0 and 1 hold one half each of a 1e9-byte tensor that GPUs 2 and 3 both need. Every GPU
 * has 110e9 B/s of links: ingress is 1e9 / 110e9, egress 0.5e9 / 110e9. From GPU 0 to GPU 2 the
 * max-flow is 20e9 (direct, and over 1 and 3), so the flow term is 0.5e9 / 20e9. But the whole
 * tensor must cross between the pairs over 20e9 B/s: the cut term, 1e9 / 20e9, binds, on the
 * set {0, 1} with the bytes going out (the first set of the enumeration to reach it). */
static void test_cut_between_pairs(void **state)
{
    mc_topo_t *topo = two_pairs();
    mc_bound_t b = bound_of(topo, "mesh A={g:2}@0..1\nmesh B={g:2}@2..3\n"
                                  "move u8[1000000000] A[g] -> B[_]\n");
    expect_close(b.ingress_s, 1e9 / 110e9, "ingress");
    expect_close(b.egress_s, 0.5e9 / 110e9, "egress");
    expect_close(b.flow_s, 0.5e9 / 20e9, "flow");
    expect_close(b.cut_s, 1e9 / 20e9, "cut");
    expect_close(b.seconds, 1e9 / 20e9 + 3.4e-6, "bound");
    expect_cut_set(topo, &b, 0, 0x3, 0, 0, 1);
    /* Only GPU 2 needs it: the whole tensor still crosses, into {2}, and the max-flow from
     * {0, 1} to GPU 2 is 10e9 direct plus 10e9 over GPU 3, while each half alone (the flow
     * term) is 0.5e9 over the same 20e9. */
    b = bound_of(topo, "mesh A={g:2}@0..1\nmesh B={g:1}@2\nmove u8[1000000000] A[g] -> B[_]\n");
    expect_close(b.cut_s, 1e9 / 20e9, "cut to GPU 2");
    expect_close(b.flow_s, 0.5e9 / 20e9, "flow to GPU 2");
    assert_int_equal(b.binding, MC_BOUND_CUT);
    mc_topo_free(topo);
}

/* Three GPUs on a one-way ring (0 -> 1 -> 2 -> 0, 1e9 B/s each) exchange 1e6 bytes between every
 * ordered pair. A byte for the GPU behind the next one crosses two links, so the 6 transfers
 * need 9e6 byte-hops over 3 links: 3 ms. Every cut is 2 ms (each GPU receives 2e6 bytes over its
 * one incoming link; any set of GPUs has one link in and one out), the flow term 1 ms. The lp
 * term's optimum is 3 ms less its 1e-6 margin for the simplex's tolerance. */
static void test_lp_one_way_ring(void **state)
{
    mc_topo_t *t = mc_topo_new("one-way ring of three GPUs");
    int g[3];
    for (int i = 0; i < 3; i++)
        g[i] = add_gpu(t, i);
    for (int i = 0; i < 3; i++)
        mc_topo_add_link(t, g[i], g[(i + 1) % 3], MC_LINK_NVL, 1e9, 0, 1);
    mc_err_t err = {0};
    assert_int_equal(mc_topo_finalize(t, &err), MC_OK);
    mc_bound_t b = bound_of(t, "mesh M={g:3}@0..2\nmove u8[3,3000000] M[g,_] -> M[_,g]\n");
    expect_close(b.ingress_s, 2e-3, "ingress");
    expect_close(b.cut_s, 2e-3, "cut");
    expect_close(b.flow_s, 1e-3, "flow");
    if (b.lp_s < 3e-3 * (1 - 2e-6) || b.lp_s > 3e-3)
        fail_msg("lp: %.12g, expected 3e-3 less at most 2e-6 of it", b.lp_s);
    assert_int_equal(b.binding, MC_BOUND_LP);
    expect_close(b.seconds, b.lp_s + 3.4e-6, "bound");
    mc_topo_free(t);
}

/* Four hosts of one GPU, each behind a 10e9 B/s port; hosts 0 and 3 under leaf switch 0, hosts 1
 * and 2 under leaf 1, whose uplink to the spine carries only 1e9 B/s. GPU 0 sends 1e9 distinct
 * bytes to each of GPUs 1, 2 and 3. Host 0's port passes the 3e9 bytes in 0.3 s (host-cut, and
 * mesh-cut around the source mesh; the destination mesh's three ports take them in 0.1 s, since
 * mesh-cut contracts the switches); the flow from GPU 0 to GPU 1 takes 1 s through the uplink,
 * but hosts 1 and 2 together need 2e9 bytes through it: the cut over the union of hosts 1 and 2
 * binds at 2 s. */
static void test_cut_union_of_hosts(void **state)
{
    mc_topo_t *t = mc_topo_new("two leaves, one thin uplink");
    int leaf[2] = {add_node(t, MC_NODE_SWITCH, -1, -1, "leaf0"),
                   add_node(t, MC_NODE_SWITCH, -1, -1, "leaf1")};
    int spine = add_node(t, MC_NODE_SWITCH, -1, -1, "spine");
    mc_topo_add_link_pair(t, leaf[0], spine, MC_LINK_NET, 100e9, 0, 1);
    mc_topo_add_link_pair(t, leaf[1], spine, MC_LINK_NET, 1e9, 0, 1);
    for (int h = 0; h < 4; h++) {
        char name[32];
        snprintf(name, sizeof(name), "h%d/GPU0", h);
        int gpu = add_node(t, MC_NODE_GPU, h, 0, name);
        snprintf(name, sizeof(name), "h%d/NET0", h);
        int net = add_node(t, MC_NODE_NET, h, 0, name);
        mc_topo_add_link_pair(t, gpu, net, MC_LINK_PCI, 100e9, 0, 1);
        mc_topo_add_link_pair(t, net, leaf[h == 1 || h == 2], MC_LINK_NET, 10e9, 0, 1);
    }
    mc_err_t err = {0};
    assert_int_equal(mc_topo_finalize(t, &err), MC_OK);
    mc_bound_t b = bound_of(t, "mesh S={g:1}@0\nmesh D={g:3}@1..3\n"
                               "move u8[3000000000] S[_] -> D[g]\n");
    expect_close(b.host_cut_s, 0.3, "host-cut (3e9 bytes out of host 0)");
    expect_close(b.mesh_cut_s, 0.3, "mesh-cut");
    expect_close(b.flow_s, 1, "flow");
    expect_close(b.cut_s, 2, "cut");
    expect_cut_set(t, &b, -1, 0x6, 1, 1, 2);
    mc_topo_free(t);
}

/* One host of 20 GPUs: two cliques of 10, the even GPUs and the odd ones (links of 10e9 B/s
 * between every pair inside each), joined only by a 1e9 B/s link between GPUs 18 and 19. The even
 * GPUs send the odd ones a transpose of 1e9 bytes, all of it across the thin link: the cut out of
 * the even GPUs binds at 1 s. With 20 GPUs in play the host has more than the 16 units
 * enumerated, so its GPUs are grouped first, by link capacity (grouping neighbours by index
 * would pair an even GPU with an odd one, and no set would be the cliques'): the set is found. */
static void test_cut_in_large_host(void **state)
{
    mc_topo_t *t = mc_topo_new("two interleaved cliques of ten GPUs, one thin link");
    int g[20];
    for (int i = 0; i < 20; i++)
        g[i] = add_gpu(t, i);
    for (int i = 0; i < 20; i++)
        for (int j = i + 1; j < 20; j++)
            if (i % 2 == j % 2)
                mc_topo_add_link_pair(t, g[i], g[j], MC_LINK_NVL, 10e9, 0, 1);
    mc_topo_add_link_pair(t, g[18], g[19], MC_LINK_NVL, 1e9, 0, 1);
    mc_err_t err = {0};
    assert_int_equal(mc_topo_finalize(t, &err), MC_OK);
    mc_bound_t b = bound_of(t, "mesh A={g:10}@[0,2,4,6,8,10,12,14,16,18]\n"
                               "mesh B={g:10}@[1,3,5,7,9,11,13,15,17,19]\n"
                               "move u8[10,100000000] A[g,_] -> B[_,g]\n");
    expect_close(b.cut_s, 1, "cut between the cliques");
    expect_close(b.flow_s, 1e7 / 1e9, "flow (one piece over the thin link)");
    assert_int_equal(b.binding, MC_BOUND_CUT);
    int gpus[64];
    int n = mc_bound_set_gpus(t, &b.cut_set, gpus);
    assert_int_equal(n, 10);
    for (int i = 0; i < n; i++)
        assert_int_equal(gpus[i], 2 * i + b.cut_set.into);
    mc_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edmonds_dgx1_broadcast),
        cmocka_unit_test(test_cut_between_pairs),
        cmocka_unit_test(test_cut_union_of_hosts),
        cmocka_unit_test(test_cut_in_large_host),
        cmocka_unit_test(test_lp_one_way_ring),
        cmocka_unit_test(test_route_caps_mi100_broadcast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
