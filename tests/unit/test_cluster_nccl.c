/* Tests for cluster XML hosts given as NCCL topology files (../shared/topo-xml/): replication of
 * a real dump, a real dump next to the built-in type that imitates it (same figures), the
 * p3.8xlarge type against GPUs 0-3 of the DGX-1 dump it copies, and the errors a node file can
 * cause (a GPU with no way to the network, a graph file instead of a topology). */
#include "test_cluster.h"

/* Two copies of the DGX-1 dump: 16 GPUs, each with 6 NVLink lanes of 20 GB/s; host 1 is a
 * renamed copy of host 0; its three ports (1, 10 and 10 Gb/s) reach the switch. */
static void test_dgx1_copies(void **state)
{
    mc_topo_t *t = load_ok(DATA "dgx1-x2.xml");
    assert_int_equal(t->nhosts, 2);
    assert_int_equal(t->ngpus, 16);
    for (int g = 0; g < 16; g++) {
        assert_int_equal(mc_topo_gpu_host(t, g), g / 8);
        assert_float_equal(nvlink_gbps(t, g), 120, 1e-9);
    }
    assert_string_equal(t->nodes[t->gpu_node[11]].name, "h1/GPU3");
    assert_float_equal(named_link(t, "h1/GPU0", "h1/GPU3")->bw, 40 * GB, 1);
    assert_float_equal(named_link(t, "h1/GPU0", "h1/GPU1")->bw, 20 * GB, 1);
    assert_int_equal(mc_topo_find_link(t, t->gpu_node[0], t->gpu_node[8]), -1);
    assert_float_equal(named_link(t, "h1/NET0", "switch")->bw, 0.125 * GB, 1);
    for (int h = 0; h < 2; h++)
        assert_float_equal(mc_topo_host_net_bw(t, h), (0.125 + 1.25 + 1.25) * GB, 1);
    mc_topo_free(t);
}

/* The built-in p3.8xlarge has GPUs 0-3 of the DGX-1 dump with the same NVLink lanes. */
static void test_p3_matches_dgx1(void **state)
{
    mc_topo_t *dgx1 = load_ok(DATA "dgx1-x2.xml");
    mc_topo_t *p3 = load_ok("topologies/aws-p3.8xlarge-x5.xml");
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
    mc_topo_t *t = load_ok(DATA "pcie-nccl-and-builtin.xml");
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
    assert_int_equal(mc_topo_find_node(t, "rail1"), -1);
    assert_float_equal(named_link(t, "h0/NET0", "rail0")->bw, 7 * GB, 1);
    assert_float_equal(named_link(t, "h1/NET0", "rail0")->bw, 7 * GB, 1);
    mc_topo_free(t);
}

static void test_node_file_errors(void **state)
{
    /* Host 1 (line 3) has GPUs but no NIC at all. */
    expect_load_error(DATA "bad-no-nic-path.xml", DATA "bad-no-nic-path.xml:3: h1/GPU0",
                      "no path to a network port", NULL);
    expect_load_error(DATA "bad-graph-file.xml", DATA "bad-graph-file.xml:2:", "got <graphs>",
                      NULL);
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
