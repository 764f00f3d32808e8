/* The real NCCL topology files in ../shared/topo-xml/: each loads with the GPU, NIC and NVLink
 * figures read off the file by hand, or is refused saying what is missing. */
#include "test_topo_helpers.h"

/* 8 V100 (sm 70), GPU-to-GPU NVLink rows of count 1 or 2 (6 links = 6 x 20 GB/s per GPU), PLX
 * switches at 8 GT/s x16 (12 GB/s), two Broadwell sockets (model 79: 6 GB/s), a 1 GbE NIC on
 * PCIe and two 10 Gb/s bridges as a <nic> directly under CPU 0. */
static void test_dgx1(void **state)
{
    mc_topo_t *t = load_ok(SHARED "dgx1-v100-hybrid-cube-mesh-topo.xml");
    assert_int_equal(t->nhosts, 1);
    assert_all_nvlink(t, 8, 70, 120.0);
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/GPU3"), 40.0, 1e-9); /* count 2 */
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/GPU1"), 20.0, 1e-9); /* count 1 */
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/GPU5"), -1, 0);       /* not wired */
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/PCI/0000:03:00.0"), 12.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/CPU0", "h0/CPU1"), 6.0, 1e-9);
    assert_int_equal(count_nodes(t, MC_NODE_NET), 3);
    assert_float_equal(t->nodes[mc_topo_find_node(t, "h0/NET0")].bw, 0.125e9, 1);
    assert_float_equal(t->nodes[mc_topo_find_node(t, "h0/NET1")].bw, 1.25e9, 1);
    assert_float_equal(link_gbps(t, "h0/CPU0/NIC", "h0/NET2"), 1.25, 1e-9);
    assert_float_equal(link_gbps(t, "h0/CPU0/NIC", "h0/CPU0"), 5000.0, 1e-9);
    assert_int_equal(count_nodes(t, MC_NODE_NVS), 0);
    /* 2 CPUs, 4 switches, 8 GPUs, 2 NICs, 3 ports */
    assert_int_equal(t->nnodes, 19);
    assert_int_equal(t->nwarnings, 0);
    mc_topo_free(t);
}

/* 8 A100 (sm 80), each with 6 NVSwitch rows of count 2 (12 x 20 = 240 GB/s), 8 dual-port NICs =
 * 16 ports at 100 Gb/s, fused per NIC as NCCL 2.28 does (2 x 12.5 = 25 GB/s), Gen4 x16
 * (24 GB/s), 4 AMD NUMA nodes (16 GB/s). */
static void test_oci_a100(void **state)
{
    mc_topo_t *t = load_ok(SHARED "oci-bm-gpu4.8-a100-topo.xml");
    assert_int_equal(t->nhosts, 1);
    assert_all_nvlink(t, 8, 80, 240.0);
    assert_nets(t, 8, 25.0);
    assert_int_equal(t->links[mc_topo_find_link(t, mc_topo_find_node(t, "h0/NIC/0000:0c:00.0"),
                                                mc_topo_find_node(t, "h0/NET0"))].count, 2);
    assert_true(has_warning(t, "8 NICs have several ports (first h0/NIC/0000:0c:00.0)"));
    assert_int_equal(count_nodes(t, MC_NODE_NVS), 1);
    assert_int_equal(count_nodes(t, MC_NODE_CPU), 4);
    assert_int_equal(count_nodes(t, MC_NODE_NIC), 8);
    assert_float_equal(link_gbps(t, "h0/CPU3", "h0/CPU1"), 16.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/NVS"), 240.0, 1e-9);
    assert_int_equal(t->links[mc_topo_find_link(t, t->gpu_node[0], mc_topo_find_node(t, "h0/NVS"))]
                         .count, 12);
    /* Broadcom Gen4: 0000:01 folds 0000:03 into itself, and 0000:05 folds 0000:0a and 0000:11 */
    assert_int_equal(mc_topo_find_node(t, "h0/PCI/0000:03:00.0"), -1);
    assert_int_equal(mc_topo_find_node(t, "h0/PCI/0000:0a:00.0"), -1);
    assert_float_equal(link_gbps(t, "h0/PCI/0000:05:00.0", "h0/PCI/0000:01:00.0"), 24.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/NIC/0000:0c:00.0", "h0/PCI/0000:05:00.0"), 24.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/PCI/0000:0d:00.0"), 24.0, 1e-9);
    mc_topo_free(t);
}

/* 8 H100 (sm 90), NVSwitch rows 5/5/4/4 (18 x 20.6 = 370.8 GB/s), 16 ports at 180 Gb/s fused
 * per dual-port NIC (2 x 22.5 = 45 GB/s), Gen5 x16 (48 GB/s), top switches at 5.0 GT/s x16
 * (6 GB/s), Sapphire Rapids (model 143: 22 GB/s). */
static void test_oci_h100(void **state)
{
    mc_topo_t *t = load_ok(SHARED "oci-bm-gpu-h100.8-topo.xml");
    assert_all_nvlink(t, 8, 90, 370.8);
    assert_nets(t, 8, 45.0);
    assert_float_equal(link_gbps(t, "h0/CPU0", "h0/CPU1"), 22.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/PCI/0000:08:00.0", "h0/CPU0"), 6.0, 1e-9);
    /* Gen5 sub-switch 0000:0d (subsystem 0x1003) folds into 0000:08 (subsystem 0x0072) */
    assert_int_equal(mc_topo_find_node(t, "h0/PCI/0000:0d:00.0"), -1);
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/PCI/0000:08:00.0"), 48.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/NIC/0000:0c:00.0", "h0/PCI/0000:08:00.0"), 48.0, 1e-9);
    assert_int_equal(t->nwarnings, 1); /* the fused ports */
    mc_topo_free(t);
}

/* 8 GA102 (sm 86, class 0x030000) and no NVLink, Gen4 x16 (24 GB/s), one 56 Gb/s NIC (7 GB/s),
 * Ice Lake (model 106: 10 GB/s). */
static void test_rtx3090(void **state)
{
    mc_topo_t *t = load_ok(SHARED "pcie-rtx3090x8-1nic-topo.xml");
    assert_all_nvlink(t, 8, 86, 0.0);
    assert_nets(t, 1, 7.0);
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/PCI/0000:0c:00.0"), 24.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/CPU1", "h0/CPU0"), 10.0, 1e-9);
    mc_topo_free(t);
}

/* A skeleton whose GPUs (0x10de:0x20b0, A100-SXM4-40GB) and NICs (0x1d0f:0xefa0, EFA) have known
 * device ids: completed as 8 A100 on an NVSwitch (12 links, 240 GB/s) and 4 EFA ports at
 * 100 Gb/s, with one warning per assumption; the switches are 8 GT/s x16 (12 GB/s). */
static void test_p4d_skeleton(void **state)
{
    mc_topo_t *t = load_ok(SHARED "aws-p4d-24xlarge-topo.xml");
    assert_all_nvlink(t, 8, 80, 240.0);
    assert_nets(t, 4, 12.5);
    assert_int_equal(t->nwarnings, 12);
    assert_true(has_warning(t, "assuming A100-SXM4-40GB (device 0x20b0) as h0/GPU0"));
    assert_true(has_warning(t, "assuming one port h0/NET3 at 100 Gb/s (AWS EFA)"));
    /* GPUs are numbered in file order: GPU 2 is the first GPU behind the second switch */
    assert_int_equal(t->nodes[t->gpu_node[2]].busid, 0x201c0);
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/PCI/ffff:ff:01.0"), 12.0, 1e-9);
    mc_topo_free(t);
}

static void test_refused_skeletons(void **state)
{
    assert_refused(SHARED "aws-g5-48xlarge-topo.xml", MC_ERR_UNSUPPORTED, "topo.xml:12:",
                   "lists only PCI bus ids (9 <pci>");
    assert_refused(SHARED "aws-p5-48xlarge-topo-2023-skeleton.xml", MC_ERR_UNSUPPORTED,
                   "skeleton.xml:15:", "lists only PCI bus ids (32 <pci>");
    assert_refused(SHARED "azure-ndv2-topo.xml", MC_ERR_UNSUPPORTED, "ndv2-topo.xml:3:",
                   "8 GPU(s), first <pci busid=\"0001:00:00.0\">");
    assert_refused(SHARED "azure-ndv4-topo.xml", MC_ERR_UNSUPPORTED, "ndv4-topo.xml:4:",
                   "8 GPU(s), first <pci busid=\"0003:00:00.0\">");
    assert_refused(SHARED "azure-ndv5-topo.xml", MC_ERR_UNSUPPORTED, "ndv5-topo.xml:4:",
                   "NCCL_TOPO_DUMP_FILE");
    assert_refused(SHARED "azure-ncv4-graph.xml", MC_ERR_INVALID, "graph.xml:1:",
                   "NCCL graph file");
}

static void test_fingerprint(void **state)
{
    mc_topo_t *a = load_ok(SHARED "dgx1-v100-hybrid-cube-mesh-topo.xml");
    mc_topo_t *b = load_ok(SHARED "dgx1-v100-hybrid-cube-mesh-topo.xml");
    mc_topo_t *c = load_ok(SHARED "pcie-rtx3090x8-1nic-topo.xml");
    assert_true(a->fingerprint == b->fingerprint);
    assert_true(a->fingerprint != c->fingerprint);
    mc_topo_free(a);
    mc_topo_free(b);
    mc_topo_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dgx1),          cmocka_unit_test(test_oci_a100),
        cmocka_unit_test(test_oci_h100),      cmocka_unit_test(test_rtx3090),
        cmocka_unit_test(test_p4d_skeleton),  cmocka_unit_test(test_refused_skeletons),
        cmocka_unit_test(test_fingerprint),
    };
    return cmocka_run_group_tests_name("topo_nccl", tests, NULL, NULL);
}
