/* Tests for the cluster XML loader: every shipped topology in topologies/ loads with the host,
 * GPU, port, switch and link counts and the bandwidths worked out by hand from the built-in node
 * types (topo/topo_nodes.c) and docs/topology-format.md; the embedded schema is the one in
 * topologies/schema/. Run from the repository root (tests/run.sh does). */
#include <stdlib.h>
#include <string.h>

#include "topo/topo_cluster.h"
#include "test_cluster.h"

static double link_bw(const mc_topo_t *t, const char *a, const char *b)
{
    return named_link(t, a, b)->bw;
}

static void expect_shape(const mc_topo_t *t, int hosts, int gpus, int nets, int switches,
                         int nodes, int links)
{
    assert_int_equal(t->nhosts, hosts);
    assert_int_equal(t->ngpus, gpus);
    assert_int_equal(count_nodes(t, MC_NODE_NET), nets);
    assert_int_equal(count_nodes(t, MC_NODE_SWITCH), switches);
    assert_int_equal(t->nnodes, nodes);
    assert_int_equal(t->nlinks, links);
}

static void test_schema_is_current(void **state)
{
    char *disk;
    size_t len, elen;
    mc_err_t err = {0};
    assert_int_equal(mc_read_file("topologies/schema/cluster.rng", &disk, &len, &err), MC_OK);
    const char *embedded = mc_cluster_schema_text(&elen);
    if (elen != len || memcmp(disk, embedded, len))
        fail_msg("the schema built into the library differs from topologies/schema/cluster.rng: "
                 "rebuild topo/topo_cluster_schema.o (make clean; make)");
    assert_int_equal(embedded[elen], '\0');
    free(disk);
}

/* 5 x p3.8xlarge: per host 1 CPU, 2 PCIe switches, 4 GPUs, 1 NIC, 1 port = 9 nodes and 14 link
 * pairs (2 switch-CPU, 4 GPU-switch, 6 NVLink, NIC-CPU, NIC-port); plus one switch and 5 port
 * pairs: 46 nodes, 150 directed links. */
static void test_aws_p3(void **state)
{
    mc_topo_t *t = load_ok("topologies/aws-p3.8xlarge-x5.xml");
    expect_shape(t, 5, 20, 5, 1, 46, 150);
    /* NVLink lanes inside GPUs 0-3 of the DGX-1 file: GPU0 1+1+2, GPU1 1+2+1, GPU2 1+2+2,
     * GPU3 2+1+2, 20 GB/s each (sm 70). */
    static const double nvl[4] = {80, 80, 100, 100};
    for (int g = 0; g < 20; g++) {
        assert_int_equal(mc_topo_gpu_host(t, g), g / 4);
        assert_int_equal(t->nodes[t->gpu_node[g]].sm, 70);
        assert_float_equal(nvlink_gbps(t, g), nvl[g % 4], 1e-9);
    }
    assert_float_equal(link_bw(t, "h4/GPU0", "h4/GPU3"), 40 * GB, 1);
    assert_float_equal(link_bw(t, "h4/GPU1", "h4/GPU3"), 20 * GB, 1);
    assert_int_equal(mc_topo_find_link(t, mc_topo_find_node(t, "h0/GPU0"),
                                       mc_topo_find_node(t, "h1/GPU0")), -1);
    for (int h = 0; h < 5; h++)
        assert_float_equal(mc_topo_host_net_bw(t, h), 1.25 * GB, 1); /* 10 Gb/s */
    assert_float_equal(link_bw(t, "h2/NET0", "switch"), 1.25 * GB, 1);
    assert_float_equal(link_bw(t, "switch", "h2/NET0"), 1.25 * GB, 1);
    assert_float_equal(t->links[mc_topo_find_link(t, mc_topo_find_node(t, "h2/NET0"),
                                                  mc_topo_find_node(t, "switch"))].latency,
                       1e-6, 1e-12);
    /* GPU egress: its NVLinks and its Gen3 x16 link (12 GB/s). */
    assert_float_equal(mc_topo_gpu_egress_bw(t, 0), 92 * GB, 1);
    assert_int_equal(t->nwarnings, 0);
    mc_topo_free(t);
}

/* Rails: NIC i of every host on switch rail<i>, at the port's speed. */
static void expect_rails(const mc_topo_t *t, int hosts, double port_bw)
{
    char net[32], rail[32];
    for (int h = 0; h < hosts; h++) {
        for (int r = 0; r < 8; r++) {
            snprintf(net, sizeof net, "h%d/NET%d", h, r);
            snprintf(rail, sizeof rail, "rail%d", r);
            assert_float_equal(link_bw(t, net, rail), port_bw, 1);
            assert_int_equal(t->nodes[mc_topo_find_node(t, net)].rail, r);
        }
        assert_float_equal(mc_topo_host_net_bw(t, h), 8 * port_bw, 1);
    }
    assert_int_equal(t->nodes[mc_topo_find_node(t, "rail7")].rail, 7);
    assert_int_equal(mc_topo_find_link(t, mc_topo_find_node(t, "h0/NET0"),
                                       mc_topo_find_node(t, "rail1")), -1);
}

/* A 4-node DGX pod on rails: every GPU's sm and NVLink total, NIC i on rail i at the port's
 * speed, and the PCIe link of GPU5 and NIC5 to their switch. */
static void expect_dgx_pod(const char *path, int nodes, int links, int sm, double nvl_gbps,
                           double port_bw, const char *pci_switch, double pci_bw)
{
    mc_topo_t *t = load_ok(path);
    expect_shape(t, 4, 32, 32, 8, nodes, links);
    for (int g = 0; g < 32; g++) {
        assert_int_equal(t->nodes[t->gpu_node[g]].sm, sm);
        assert_float_equal(nvlink_gbps(t, g), nvl_gbps, 1e-9);
    }
    expect_rails(t, 4, port_bw);
    assert_float_equal(link_bw(t, "h3/GPU5", pci_switch), pci_bw, 1);
    assert_float_equal(link_bw(t, "h3/NIC5", pci_switch), pci_bw, 1);
    mc_topo_free(t);
}

/* 4 x DGX A100: per host 2 CPUs, 4 PCIe switches, 8 GPUs, 1 NVS, 8 NICs, 8 ports = 31 nodes and
 * 37 link pairs (SYS, 4 switch-CPU, 8 GPU-switch, 8 GPU-NVS, 8 NIC-switch, 8 NIC-port); plus 8
 * rails and 32 port pairs: 132 nodes, 360 links. NVLink 12 x 20 GB/s, 200 Gb/s ports, GPUs 4-5
 * and NICs 4-5 on PCIe Gen4 switch 2 (24 GB/s). */
static void test_dgx_a100(void **state)
{
    expect_dgx_pod("topologies/dgx-a100-x4.xml", 132, 360, 80, 240, 25 * GB, "h3/PCI2",
                   24 * GB);
}

/* 4 x DGX H100: per host 2 CPUs, 8 PCIe switches, 8 GPUs, 1 NVS, 8 NICs, 8 ports = 35 nodes and
 * 41 link pairs; plus 8 rails and 32 port pairs: 148 nodes, 392 links. NVLink 18 x 20.6 GB/s,
 * 400 Gb/s ports, GPU5 and NIC5 on PCIe Gen5 switch 5 (48 GB/s). */
static void test_dgx_h100(void **state)
{
    expect_dgx_pod("topologies/dgx-h100-x4.xml", 148, 392, 90, 370.8, 50 * GB, "h3/PCI5",
                   48 * GB);
}

/* One DGX H100 on its own rails: 35 nodes + 8 rails, 82 links + 8 port pairs. */
static void test_dgx_h100_x1(void **state)
{
    mc_topo_t *t = load_ok("topologies/dgx-h100-x1.xml");
    expect_shape(t, 1, 8, 8, 8, 43, 98);
    assert_float_equal(link_bw(t, "h0/NET6", "rail6"), 50 * GB, 1);
    assert_float_equal(mc_topo_host_net_bw(t, 0), 400 * GB, 1);
    mc_topo_free(t);
}

/* 128 x DGX H100: 128 x 35 nodes + 8 rails + 4 spines = 4492 nodes; 128 x 82 links + 1024 port
 * pairs + 8 x 4 rail-spine pairs = 12608 links. Each rail has 128 x 50 GB/s down, so at 1:1 each
 * of its 4 uplinks carries 1600 GB/s. */
static void test_dgx_h100_x128(void **state)
{
    mc_topo_t *t = load_ok("topologies/dgx-h100-x128.xml");
    expect_shape(t, 128, 1024, 1024, 12, 4492, 12608);
    assert_int_equal(mc_topo_gpu_host(t, 1023), 127);
    assert_int_equal(t->nodes[t->gpu_node[1023]].dev, 7);
    assert_string_equal(t->nodes[t->gpu_node[1023]].name, "h127/GPU7");
    assert_float_equal(link_bw(t, "h127/NET7", "rail7"), 50 * GB, 1);
    assert_float_equal(link_bw(t, "rail3", "spine2"), 1600 * GB, 1);
    assert_float_equal(link_bw(t, "spine2", "rail3"), 1600 * GB, 1);
    assert_float_equal(mc_topo_host_net_bw(t, 100), 400 * GB, 1);
    mc_topo_free(t);
}

/* 2 PCIe boxes: per host 2 CPUs, 2 switches, 8 GPUs, 1 NIC, 1 port = 14 nodes and 13 link pairs
 * (SYS, 2 switch-CPU, 8 GPU-switch, NIC-switch, NIC-port); plus one switch and 2 port pairs: 29
 * nodes, 56 links. No NVLink at all. */
static void test_pcie(void **state)
{
    mc_topo_t *t = load_ok("topologies/pcie-8gpu-1nic.xml");
    expect_shape(t, 2, 16, 2, 1, 29, 56);
    for (int i = 0; i < t->nlinks; i++)
        assert_int_not_equal(t->links[i].kind, MC_LINK_NVL);
    for (int g = 0; g < 16; g++)
        assert_int_equal(t->nodes[t->gpu_node[g]].sm, 86);
    assert_float_equal(mc_topo_host_net_bw(t, 1), 7 * GB, 1); /* 56 Gb/s */
    assert_float_equal(link_bw(t, "h1/NIC0", "h1/PCI1"), 24 * GB, 1);
    assert_float_equal(link_bw(t, "h1/CPU0", "h1/CPU1"), 10 * GB, 1);
    mc_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_is_current),
        cmocka_unit_test(test_aws_p3),
        cmocka_unit_test(test_dgx_a100),
        cmocka_unit_test(test_dgx_h100),
        cmocka_unit_test(test_dgx_h100_x1),
        cmocka_unit_test(test_dgx_h100_x128),
        cmocka_unit_test(test_pcie),
    };
    return cmocka_run_group_tests_name("cluster", tests, NULL, NULL);
}
