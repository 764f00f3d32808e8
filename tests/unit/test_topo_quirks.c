/* What real dumps get wrong and NCCL tolerates: each loads the way NCCL reads it, with a warning
 * saying what was assumed. Also the rarer elements: multi-host NVLink dumps, C2C, NVLink to a
 * CPU, <pcilink>, NICs without PCI. */
#include "test_topo_helpers.h"

#define CPU "<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"85\">"
#define PCI(bus, cls, speed, width) \
    "<pci busid=\"" bus "\" class=\"" cls "\" link_speed=\"" speed "\" link_width=\"" width "\">"
#define GEN4 "16.0 GT/s PCIe"

/* A100 (sm 80): a row to itself (count 12) is dropped; the row to GPU 1 (count 2) stays. */
static void test_self_nvlink(void **state)
{
    mc_topo_t *t = load_text_ok(
        "<system version=\"1\">" CPU
        PCI("0000:07:00.0", "0x030200", GEN4, "16") "<gpu dev=\"0\" sm=\"80\" rank=\"0\" gdr=\"1\">"
        "<nvlink target=\"0000:07:00.0\" count=\"12\" tclass=\"0x030200\"/>"
        "<nvlink target=\"0000:08:00.0\" count=\"2\" tclass=\"0x030200\"/></gpu></pci>"
        PCI("0000:08:00.0", "0x030200", GEN4, "16") "<gpu dev=\"1\" sm=\"80\" rank=\"1\" gdr=\"1\">"
        "<nvlink target=\"0000:07:00.0\" count=\"2\" tclass=\"0x030200\"/></gpu></pci>"
        "</cpu></system>");
    assert_float_equal(nvlink_gbps(t, 0), 40.0, 1e-9);
    assert_float_equal(nvlink_gbps(t, 1), 40.0, 1e-9);
    assert_int_equal(t->nwarnings, 1);
    assert_true(has_warning(t, "inline.xml:1: h0/GPU0 lists an NVLink to itself (count 12)"));
    mc_topo_free(t);
}

/* Empty link_speed and width 0 read as Gen3 x16 (12 GB/s); "16.0 GT/s" without " PCIe" matches
 * nothing in NCCL's table either, so it is Gen3 too (x8: 6 GB/s); an empty width is x16. */
static void test_pci_fallbacks(void **state)
{
    mc_topo_t *t = load_text_ok(
        "<system version=\"1\">" CPU
        PCI("0000:03:00.0", "0x060400", "", "0")
        PCI("0000:07:00.0", "0x030200", "16.0 GT/s", "8") "<gpu dev=\"0\" sm=\"80\" rank=\"0\" gdr=\"1\"/>"
        "</pci>" PCI("0000:08:00.0", "0x030200", "32.0 GT/s PCIe", "")
        "<gpu dev=\"1\" sm=\"80\" rank=\"1\" gdr=\"1\"/></pci></pci></cpu></system>");
    assert_float_equal(link_gbps(t, "h0/PCI/0000:03:00.0", "h0/CPU0"), 12.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/PCI/0000:03:00.0"), 6.0, 1e-9);
    assert_true(has_warning(t, "link_speed \"\" is not in NCCL's table"));
    assert_true(has_warning(t, "link_width 0; NCCL reads it as x16"));
    assert_true(has_warning(t, "link_speed \"16.0 GT/s\" is not in NCCL's table"));
    /* an empty width is x16 too: Gen5 x16 = 48 GB/s */
    assert_float_equal(link_gbps(t, "h0/GPU1", "h0/PCI/0000:03:00.0"), 48.0, 1e-9);
    assert_true(has_warning(t, "inline.xml:1: link_width empty; NCCL reads it as x16"));
    mc_topo_free(t);
}

/* H100 (sm 90): GPUs 0 and 1 list 5+5+4+4 NVSwitch links, GPU 2 lists none and is assumed to
 * match them (18 x 20.6 = 370.8 GB/s). */
static void test_gpu_without_nvlinks(void **state)
{
#define H100_ROWS                                                          \
    "<nvlink target=\"0000:1a:00.0\" count=\"5\" tclass=\"0x068000\"/>"   \
    "<nvlink target=\"0000:1b:00.0\" count=\"5\" tclass=\"0x068000\"/>"   \
    "<nvlink target=\"0000:1c:00.0\" count=\"4\" tclass=\"0x068000\"/>"   \
    "<nvlink target=\"0000:1d:00.0\" count=\"4\" tclass=\"0x068000\"/>"
    mc_topo_t *t = load_text_ok(
        "<system version=\"1\">" CPU
        PCI("0000:07:00.0", "0x030200", "32.0 GT/s PCIe", "16")
        "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\">" H100_ROWS "</gpu></pci>"
        PCI("0000:08:00.0", "0x030200", "32.0 GT/s PCIe", "16")
        "<gpu dev=\"1\" sm=\"90\" rank=\"1\" gdr=\"1\">" H100_ROWS "</gpu></pci>"
        PCI("0000:09:00.0", "0x030200", "32.0 GT/s PCIe", "16")
        "<gpu dev=\"2\" sm=\"90\" rank=\"2\" gdr=\"1\"/></pci>"
        "</cpu></system>");
    assert_all_nvlink(t, 3, 90, 370.8);
    assert_int_equal(count_nodes(t, MC_NODE_NVS), 1);
    assert_true(has_warning(t, "h0/GPU2 lists no NVLinks (NCCL would ask the driver); assuming "
                               "18 NVLinks to the NVSwitch like h0/GPU0"));
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/PCI/0000:07:00.0"), -1, 0);
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/CPU0"), 48.0, 1e-9);
    mc_topo_free(t);
}

/* A 2.5 GT/s x1 bridge (0.1875 GB/s) in front of a GPU and a NIC. */
static void test_slow_bridge(void **state)
{
    mc_topo_t *t = load_text_ok(
        "<system version=\"1\">" CPU
        PCI("0000:03:00.0", "0x060400", "2.5 GT/s PCIe", "1")
        PCI("0000:07:00.0", "0x030200", GEN4, "16") "<gpu dev=\"0\" sm=\"80\" rank=\"0\" gdr=\"1\"/></pci>"
        PCI("0000:08:00.0", "0x020700", GEN4, "16") "<nic><net name=\"mlx5_0\" dev=\"0\" "
        "speed=\"200000\" port=\"1\" gdr=\"1\"/></nic></pci>"
        "</pci></cpu></system>");
    assert_float_equal(link_gbps(t, "h0/PCI/0000:03:00.0", "h0/CPU0"), 0.1875, 1e-12);
    assert_true(has_warning(t, "h0/GPU0 sits behind a 0.19 GB/s PCIe link (h0/PCI/0000:03:00.0 "
                               "-> h0/CPU0)"));
    assert_true(has_warning(t, "h0/NIC/0000:08:00.0 sits behind a 0.19 GB/s PCIe link"));
    assert_nets(t, 1, 25.0);
    mc_topo_free(t);
}

/* A two-tray multi-node NVLink dump: host_hash 0xb appears first, so it is host 0; each tray has
 * one arm64 CPU and 2 GB300-like GPUs (sm 103) with 18 links to the invisible NVSwitch
 * (fffffff:ff:ff.0; 18 x 40.1 = 721.8 GB/s) and C2C 44712 MB/s x 5 = 223.56 GB/s. */
static void test_multi_host_nvlink(void **state)
{
#define TRAY_GPU(bus, dev)                                                                 \
    PCI(bus, "0x030200", "32.0 GT/s PCIe", "16") "<gpu dev=\"" dev "\" sm=\"103\" rank=\"" dev \
    "\" gdr=\"1\"><nvlink target=\"fffffff:ff:ff.0\" count=\"18\" tclass=\"0x068000\"/>"      \
    "<c2c bw=\"44712\" count=\"5\"/></gpu></pci>"
    mc_topo_t *t = load_text_ok(
        "<system version=\"1\">"
        "<cpu host_hash=\"0xb\" numaid=\"0\" arch=\"arm64\">"
        TRAY_GPU("0008:01:00.0", "1") TRAY_GPU("0009:01:00.0", "0") "</cpu>"
        "<cpu host_hash=\"0xa\" numaid=\"0\" arch=\"arm64\">"
        TRAY_GPU("0008:01:00.0", "0") TRAY_GPU("0009:01:00.0", "1") "</cpu>"
        "</system>");
    assert_int_equal(t->nhosts, 2);
    assert_all_nvlink(t, 4, 103, 721.8);
    assert_int_equal(count_nodes(t, MC_NODE_NVS), 1);
    /* host 0 (0xb) lists dev 1 first; GPU 0 is still its dev 0 */
    assert_string_equal(t->nodes[t->gpu_node[0]].name, "h0/GPU0");
    assert_int_equal(t->nodes[t->gpu_node[0]].busid, 0x901000);
    assert_string_equal(t->nodes[t->gpu_node[3]].name, "h1/GPU1");
    assert_float_equal(kind_link_gbps(t, "h1/GPU1", "h1/CPU0", MC_LINK_C2C), 223.56, 1e-9);
    assert_float_equal(kind_link_gbps(t, "h1/GPU1", "h1/CPU0", MC_LINK_PCI), 48.0, 1e-9);
    mc_route_t r;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_route(t, 0, 3, &r, &err), MC_OK);
    assert_int_equal(r.nlinks, 2);
    assert_string_equal(t->nodes[t->links[r.links[0]].dst].name, "h0/NVS");
    assert_float_equal(r.bw / 1e9, 721.8, 1e-9);
    mc_topo_free(t);
}

/* Rows that disagree (2 links one way, 1 back) are kept per direction, with a warning; a GPU
 * without rank is kept; a <net> without dev is skipped; unknown elements are ignored. */
static void test_tolerated_oddities(void **state)
{
    mc_topo_t *t = load_text_ok(
        "<system version=\"1\"><extra/>" CPU
        PCI("0000:07:00.0", "0x030200", GEN4, "16") "<gpu dev=\"0\" sm=\"70\" rank=\"0\" gdr=\"1\">"
        "<nvlink target=\"0000:08:00.0\" count=\"2\" tclass=\"0x030200\"/><foo/></gpu></pci>"
        PCI("0000:08:00.0", "0x030200", GEN4, "16") "<gpu dev=\"1\" sm=\"70\" gdr=\"1\">"
        "<nvlink target=\"0000:07:00.0\" count=\"1\" tclass=\"0x030200\"/></gpu></pci>"
        PCI("0000:09:00.0", "0x020700", GEN4, "16") "<nic><net name=\"mlx5_0\" speed=\"100000\"/>"
        "<net name=\"mlx5_1\" dev=\"3\"/></nic></pci>"
        "</cpu></system>");
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/GPU1"), 40.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/GPU1", "h0/GPU0"), 20.0, 1e-9);
    assert_true(has_warning(t, "h0/GPU0 lists 2 NVLinks to h0/GPU1, which lists 1 back"));
    assert_true(has_warning(t, "<gpu dev=\"1\"> has no rank"));
    assert_true(has_warning(t, "<net> without dev is ignored"));
    assert_true(has_warning(t, "<net dev=\"3\"> has no speed; NCCL assumes 10 Gb/s"));
    assert_true(has_warning(t, "ignoring element <extra> inside <system>"));
    assert_true(has_warning(t, "ignoring element <foo> inside <gpu>"));
    assert_nets(t, 1, 1.25);
    mc_topo_free(t);
}

/* Ids a file repeats, read the way ncclTopoAddPci and ncclTopoAddNet create a node per element
 * (RCCL's own models repeat a switch's bus id and a <net> dev): a switch's bus id twice is two
 * switches, named apart; a GPU may share a switch's bus id, and NVLink rows find the GPU; a
 * second <net dev="0"> is a second port. NCCL's speeds: -1 is 10 Gb/s, 200 Tb/s is taken with
 * a warning, and a <net net="0"> (no device of the network transport in NCCL 2.29) is none. */
static void test_repeated_ids(void **state)
{
#define NIC_PCI(bus, net) PCI(bus, "0x020700", GEN4, "16") "<nic>" net "</nic></pci>"
    mc_topo_t *t = load_text_ok(
        "<system version=\"1\">" CPU
        PCI("0000:05:00.0", "0x060400", GEN4, "16")
        PCI("0000:07:00.0", "0x030200", GEN4, "16") "<gpu dev=\"0\" sm=\"80\" rank=\"0\" gdr=\"1\">"
        "<nvlink target=\"0000:05:00.0\" count=\"2\" tclass=\"0x030200\"/></gpu></pci>"
        NIC_PCI("0000:08:00.0", "<net name=\"eth0\" dev=\"0\" speed=\"-1\"/>") "</pci>"
        PCI("0000:05:00.0", "0x060400", "8 GT/s", "16")
        NIC_PCI("0000:09:00.0", "<net name=\"mlx5_0\" dev=\"0\" speed=\"100000\"/>") "</pci>"
        PCI("0000:05:00.0", "0x030200", GEN4, "16") "<gpu dev=\"1\" sm=\"80\" rank=\"1\" gdr=\"1\">"
        "<nvlink target=\"0000:07:00.0\" count=\"2\" tclass=\"0x030200\"/></gpu></pci>"
        NIC_PCI("0000:0a:00.0", "<net name=\"cxi0\" dev=\"1\" speed=\"200000000\"/>")
        NIC_PCI("0000:0b:00.0", "<net name=\"gin0\" dev=\"2\" speed=\"400000\" net=\"0\" gin=\"1\"/>")
        "</cpu></system>");
#undef NIC_PCI
    assert_int_equal(count_nodes(t, MC_NODE_PCI), 2);
    assert_float_equal(link_gbps(t, "h0/PCI/0000:05:00.0", "h0/CPU0"), 24.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/PCI/0000:05:00.0#2", "h0/CPU0"), 12.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/NIC/0000:09:00.0", "h0/PCI/0000:05:00.0#2"), 24.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/GPU1", "h0/CPU0"), 24.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/GPU1"), 40.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/GPU1", "h0/GPU0"), 40.0, 1e-9);
    assert_true(has_warning(t, "2 <pci> elements repeat a bus id already read on their host "
                               "(first 0000:05:00.0)"));
    assert_int_equal(count_nodes(t, MC_NODE_NET), 3);
    assert_float_equal(t->nodes[mc_topo_find_node(t, "h0/NET0")].bw / 1e9, 1.25, 1e-9);
    assert_float_equal(t->nodes[mc_topo_find_node(t, "h0/NET0#2")].bw / 1e9, 12.5, 1e-9);
    assert_float_equal(t->nodes[mc_topo_find_node(t, "h0/NET1")].bw / 1e9, 25000.0, 1e-9);
    assert_int_equal(mc_topo_find_node(t, "h0/NET2"), -1);
    assert_true(has_warning(t, "<net dev=\"0\" speed=\"-1\">: NCCL reads a speed of 0 or below "
                               "as 10 Gb/s"));
    assert_true(has_warning(t, "a second <net dev=\"0\"> on host 0 (the first at line 1)"));
    assert_true(has_warning(t, "<net dev=\"1\" speed=\"200000000\">: 200000 Gb/s, beyond any NIC"));
    assert_true(has_warning(t, "<net dev=\"2\" net=\"0\"> is no device of NCCL's network "
                               "transport"));
    mc_topo_free(t);
}

/* POWER9: NVLink rows to the CPU (tclass 0x068001) join GPU and its CPU (3 x 20 GB/s for sm 70);
 * a row of another class counts as an NVSwitch; <pcilink> joins two switches one way each at
 * NCCL's LOC bandwidth; a <pci> of NVSwitch class creates no node. */
static void test_rare_elements(void **state)
{
    mc_topo_t *t = load_text_ok(
        "<system version=\"1\"><cpu numaid=\"0\" arch=\"ppc64\">"
        PCI("0000:03:00.0", "0x060400", "8 GT/s", "16") "<pcilink target=\"0000:04:00.0\"/>"
        PCI("0000:07:00.0", "0x030200", "8 GT/s", "16") "<gpu dev=\"0\" sm=\"70\" rank=\"0\" gdr=\"1\">"
        "<nvlink target=\"0000:00:00.0\" count=\"3\" tclass=\"0x068001\"/>"
        "<nvlink target=\"0000:0a:00.0\" count=\"2\" tclass=\"0x060400\"/></gpu></pci></pci>"
        PCI("0000:04:00.0", "0x060400", "8 GT/s", "16") "<pcilink target=\"0000:03:00.0\"/></pci>"
        PCI("0000:0a:00.0", "0x068000", "8 GT/s", "16") "</pci>"
        "</cpu><cpu numaid=\"1\" arch=\"ppc64\"/></system>");
    assert_float_equal(kind_link_gbps(t, "h0/GPU0", "h0/CPU0", MC_LINK_NVL), 60.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/NVS"), 40.0, 1e-9);
    assert_true(has_warning(t, "NVLink target class 0x060400 is neither a GPU nor a CPU"));
    assert_float_equal(link_gbps(t, "h0/PCI/0000:03:00.0", "h0/PCI/0000:04:00.0"), 5000.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/PCI/0000:04:00.0", "h0/PCI/0000:03:00.0"), 5000.0, 1e-9);
    assert_true(has_warning(t, "<pci class=\"0x068000\"> (an NVSwitch or CPU bridge) creates no"));
    assert_float_equal(link_gbps(t, "h0/CPU0", "h0/CPU1"), 32.0, 1e-9);
    mc_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_nvlink),       cmocka_unit_test(test_pci_fallbacks),
        cmocka_unit_test(test_gpu_without_nvlinks), cmocka_unit_test(test_slow_bridge),
        cmocka_unit_test(test_multi_host_nvlink), cmocka_unit_test(test_tolerated_oddities),
        cmocka_unit_test(test_rare_elements),       cmocka_unit_test(test_repeated_ids),
    };
    return cmocka_run_group_tests_name("topo_quirks", tests, NULL, NULL);
}
