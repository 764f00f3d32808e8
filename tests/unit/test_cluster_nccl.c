/* Tests for cluster XML hosts given as NCCL topology files (../shared/topo-xml/): replication of
 * a real dump, a real dump next to the built-in type that imitates it (same figures), the
 * p3.8xlarge type against GPUs 0-3 of the DGX-1 dump it copies, the errors a node file can
 * cause (a GPU with no way to the network, a graph file instead of a topology), and routes over
 * rails that hosts of two kinds fill unevenly. */
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

/* A DGX H100 and a p4d dump on rails with nothing above them: every pair of GPUs has a route.
 * The p4d has no port on rails 4-7, so its bytes to GPU 4 cross on rail 0 and are staged
 * through the DGX's CPUs; GPU 4's to the p4d take the PXN hop to GPU 0, on rail 0. */
static void test_rails_of_two_kinds(void **state)
{
    mc_topo_t *t = load_ok(DATA "h100-p4d-rails.xml");
    assert_int_equal(t->ngpus, 16);
    mc_route_t r;
    mc_err_t err = {0};
    for (int a = 0; a < t->ngpus; a++)
        for (int b = 0; b < t->ngpus; b++)
            if (mc_topo_route(t, a, b, &r, &err) != MC_OK)
                fail_msg("route %d -> %d: %s", a, b, err.msg);
    assert_int_equal(mc_topo_route(t, 8, 4, &r, &err), MC_OK);
    assert_int_equal(r.via_gpu, -1);
    const char *want[] = {"h1/NET0", "rail0", "h0/NET0", "h0/CPU0", "h0/CPU1", "h0/GPU4"};
    for (int i = 0, k = 0; i < 6; i++) {
        while (k < r.nlinks && strcmp(t->nodes[t->links[r.links[k]].dst].name, want[i]))
            k++;
        assert_true(k < r.nlinks);
    }
    assert_int_equal(mc_topo_route(t, 4, 8, &r, &err), MC_OK);
    assert_int_equal(r.via_gpu, 0);
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
        cmocka_unit_test(test_rails_of_two_kinds),
    };
    return cmocka_run_group_tests_name("cluster_nccl", tests, NULL, NULL);
}
