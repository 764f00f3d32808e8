/* <pci> elements decided in NCCL's order (ncclTopoAddPci: a <gpu> child, then a <nic> child, then
 * the class) and multi-port NICs fused the way NCCL 2.28 does at run time. Before this order, a
 * NIC under a host bridge or a ConnectX-8 function was dropped with "NCCL ignores it too". */
#include "test_topo_helpers.h"

/* A B200 VM: NICs on host bridges (class 0x060000) with link_speed "" and width 0, which NCCL
 * reads as Gen3 x16 = 12 GB/s; ports of 400 and 100 Gb/s = 50 and 12.5 GB/s; the GPU has 18 links
 * of 40.1 GB/s (sm 100) = 721.8 GB/s. */
static void test_nic_on_host_bridge(void **state)
{
    mc_topo_t *t = load_ok(DATA "nic-host-bridge.xml");
    assert_all_nvlink(t, 1, 100, 721.8);
    assert_int_equal(count_nodes(t, MC_NODE_NIC), 2);
    assert_float_equal(link_gbps(t, "h0/NIC/0000:18:00.0", "h0/CPU0"), 12.0, 1e-9);
    assert_float_equal(t->nodes[mc_topo_find_node(t, "h0/NET0")].bw / 1e9, 50.0, 1e-9);
    assert_float_equal(t->nodes[mc_topo_find_node(t, "h0/NET1")].bw / 1e9, 12.5, 1e-9);
    assert_false(has_warning(t, "ignoring element <nic>"));
    /* the 0x060000 bridge above the GPU stays a bridge */
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/PCI/0000:1a:00.0"), 48.0, 1e-9);
    mc_topo_free(t);
}

/* A GB300 tray: a CX-8 data-direct function (0x080100) holding a <nic> is that NIC (800 Gb/s =
 * 100 GB/s, Gen6 x16 = 96 GB/s up); another holding a <pci> is a bridge, as NCCL 2.28 lists the
 * class; the CX-8 switch's own upstream is 16 GT/s x1 = 1.5 GB/s. */
static void test_nic_on_cx8_function(void **state)
{
    mc_topo_t *t = load_ok(DATA "nic-cx8-function.xml");
    assert_all_nvlink(t, 1, 103, 721.8);
    assert_nets(t, 2, 100.0);
    assert_float_equal(link_gbps(t, "h0/NIC/0000:04:00.0", "h0/PCI/0000:01:00.0"), 96.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/NIC/0000:06:00.0", "h0/PCI/0000:05:00.0"), 96.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/PCI/0000:05:00.0", "h0/PCI/0000:01:00.0"), 96.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/PCI/0000:00:00.0", "h0/CPU0"), 1.5, 1e-9);
    assert_false(has_warning(t, "ignoring element"));
    mc_topo_free(t);
}

/* Multi-port NICs as NCCL 2.28 presents them (PATH_PORT merges, NCCL_NET_MERGE_LEVEL=PORT): the
 * two functions of card 0000:12:00 (2 x 400 Gb/s) are one NIC with one 100 GB/s device reached
 * over function .0's link (48 GB/s); the two ports of 0000:13:00.0 (2 x 100 Gb/s) one 25 GB/s
 * device; the single-port NIC stays 200 Gb/s = 25 GB/s. One warning says what was fused. */
static void test_multiport_fused(void **state)
{
    mc_topo_t *t = load_ok(DATA "nic-functions.xml");
    assert_int_equal(count_nodes(t, MC_NODE_NIC), 3);
    assert_int_equal(count_nodes(t, MC_NODE_NET), 3);
    assert_float_equal(t->nodes[mc_topo_find_node(t, "h0/NET0")].bw / 1e9, 100.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/NIC/0000:12:00.0", "h0/NET0"), 100.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/NIC/0000:12:00.0", "h0/PCI/0000:10:00.0"), 48.0, 1e-9);
    assert_int_equal(mc_topo_find_node(t, "h0/NIC/0000:12:00.1"), -1);
    assert_float_equal(t->nodes[mc_topo_find_node(t, "h0/NET2")].bw / 1e9, 25.0, 1e-9);
    assert_float_equal(t->nodes[mc_topo_find_node(t, "h0/NET4")].bw / 1e9, 25.0, 1e-9);
    assert_int_equal(t->nwarnings, 1);
    assert_true(has_warning(t, "nic-functions.xml: 2 NICs have several ports (first "
                               "h0/NIC/0000:12:00.0)"));
    assert_float_equal(mc_topo_host_net_bw(t, 0), 0, 0); /* no network outside a single host */
    mc_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nic_on_host_bridge),
        cmocka_unit_test(test_nic_on_cx8_function),
        cmocka_unit_test(test_multiport_fused),
    };
    return cmocka_run_group_tests_name("topo_pci", tests, NULL, NULL);
}
