/* Tests for cluster XML hosts given as NCCL topology files (../shared/topo-xml/): replication of
 * a real dump, a real dump next to the built-in type that imitates it (same figures), the
 * p3.8xlarge type against GPUs 0-3 of the DGX-1 dump it copies, and the errors a node file can
 * cause (a GPU with no way to the network, a graph file instead of a topology). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

#define GB 1e9
#define DATA "tests/data/cluster/"

static mc_topo_t *load(const char *path)
{
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    if (mc_topo_load(path, &t, &err) != MC_OK)
        fail_msg("%s: %s", path, err.msg);
    return t;
}

static const mc_link_t *link_of(const mc_topo_t *t, int a, int b)
{
    int l = mc_topo_find_link(t, a, b);
    if (l < 0)
        fail_msg("no link %s -> %s", t->nodes[a].name, t->nodes[b].name);
    return &t->links[l];
}

static double nvlink_out(const mc_topo_t *t, int gpu)
{
    double bw = 0;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == t->gpu_node[gpu] && t->links[i].kind == MC_LINK_NVL)
            bw += t->links[i].bw;
    return bw;
}

/* Two copies of the DGX-1 dump: 16 GPUs, each with 6 NVLink lanes of 20 GB/s; host 1 is a
 * renamed copy of host 0; its three ports (1, 10 and 10 Gb/s) reach the switch. */
static void test_dgx1_copies(void **state)
{
    mc_topo_t *t = load(DATA "dgx1-x2.xml");
    assert_int_equal(t->nhosts, 2);
    assert_int_equal(t->ngpus, 16);
    for (int g = 0; g < 16; g++) {
        assert_int_equal(mc_topo_gpu_host(t, g), g / 8);
        assert_float_equal(nvlink_out(t, g), 120 * GB, 1);
    }
    assert_float_equal(link_of(t, t->gpu_node[8], t->gpu_node[11])->bw, 40 * GB, 1);
    assert_float_equal(link_of(t, t->gpu_node[8], t->gpu_node[9])->bw, 20 * GB, 1);
    assert_int_equal(mc_topo_find_link(t, t->gpu_node[0], t->gpu_node[8]), -1);
    int sw = mc_topo_find_node(t, "switch");
    int net = mc_topo_find_node(t, "h1/NET0");
    assert_true(sw >= 0 && net >= 0);
    assert_float_equal(link_of(t, net, sw)->bw, 0.125 * GB, 1);
    for (int h = 0; h < 2; h++)
        assert_float_equal(mc_topo_host_net_bw(t, h), (0.125 + 1.25 + 1.25) * GB, 1);
    mc_topo_free(t);
}

/* The built-in p3.8xlarge has GPUs 0-3 of the DGX-1 dump with the same NVLink lanes. */
static void test_p3_matches_dgx1(void **state)
{
    mc_topo_t *dgx1 = load(DATA "dgx1-x2.xml");
    mc_topo_t *p3 = load("topologies/aws-p3.8xlarge-x5.xml");
    for (int a = 0; a < 4; a++) {
        for (int b = 0; b < 4; b++) {
            if (a == b)
                continue;
            int l1 = mc_topo_find_link(dgx1, dgx1->gpu_node[a], dgx1->gpu_node[b]);
            int l2 = mc_topo_find_link(p3, p3->gpu_node[a], p3->gpu_node[b]);
            assert_true(l1 >= 0 && l2 >= 0);
            assert_int_equal(dgx1->links[l1].count, p3->links[l2].count);
            assert_float_equal(dgx1->links[l1].bw, p3->links[l2].bw, 1);
        }
    }
    mc_topo_free(dgx1);
    mc_topo_free(p3);
}

/* Host 0 from the RTX 3090 dump, host 1 the built-in pcie-8gpu: the same sm, the same PCIe and
 * NVLink-free GPU bandwidth (24 GB/s Gen4 x16), the same 56 Gb/s port, both on rail0. */
static void test_pcie_builtin_matches_dump(void **state)
{
    mc_topo_t *t = load(DATA "pcie-nccl-and-builtin.xml");
    assert_int_equal(t->nhosts, 2);
    assert_int_equal(t->ngpus, 16);
    for (int g = 0; g < 8; g++) {
        assert_int_equal(t->nodes[t->gpu_node[g]].sm, 86);
        assert_int_equal(t->nodes[t->gpu_node[g + 8]].sm, 86);
        assert_float_equal(mc_topo_gpu_egress_bw(t, g), 24 * GB, 1);
        assert_float_equal(mc_topo_gpu_egress_bw(t, g + 8), 24 * GB, 1);
    }
    assert_float_equal(mc_topo_host_net_bw(t, 0), 7 * GB, 1);
    assert_float_equal(mc_topo_host_net_bw(t, 1), 7 * GB, 1);
    int rail = mc_topo_find_node(t, "rail0");
    assert_true(rail >= 0);
    assert_int_equal(mc_topo_find_node(t, "rail1"), -1);
    assert_float_equal(link_of(t, mc_topo_find_node(t, "h0/NET0"), rail)->bw, 7 * GB, 1);
    assert_float_equal(link_of(t, mc_topo_find_node(t, "h1/NET0"), rail)->bw, 7 * GB, 1);
    mc_topo_free(t);
}

static void expect_error(const char *path, const char *where, const char *what)
{
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    mc_status_t st = mc_topo_load(path, &t, &err);
    if (st == MC_OK)
        fail_msg("%s loaded", path);
    assert_null(t);
    assert_int_equal(mc_status_exit_code(st), MC_EXIT_INVALID);
    if (strncmp(err.msg, where, strlen(where)) || !strstr(err.msg, what))
        fail_msg("%s: unexpected message: %s", path, err.msg);
}

static void test_node_file_errors(void **state)
{
    /* Host 1 (line 3) has GPUs but no NIC at all. */
    expect_error(DATA "bad-no-nic-path.xml", DATA "bad-no-nic-path.xml:3: h1/GPU0",
                 "no path to a network port");
    expect_error(DATA "bad-graph-file.xml", DATA "bad-graph-file.xml:2:", "got <graphs>");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dgx1_copies),
        cmocka_unit_test(test_p3_matches_dgx1),
        cmocka_unit_test(test_pcie_builtin_matches_dump),
        cmocka_unit_test(test_node_file_errors),
    };
    return cmocka_run_group_tests_name("cluster_nccl", tests, NULL, NULL);
}
