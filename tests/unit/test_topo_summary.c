/* mc_topo_summarize and mc_topo_pair_kind: per-GPU NVLink/xGMI and PCIe figures, NVLink domains
 * numbered by their lowest GPU, and the kind of connection between two GPUs as nvidia-smi topo -m
 * names it, on real dumps and shipped clusters (figures read off the files by hand). */
#include "test_topo_helpers.h"

static mc_link_kind_t pair(const mc_topo_t *t, int a, int b)
{
    mc_link_kind_t k = MC_LINK__COUNT;
    mc_err_t err = {0};
    if (mc_topo_pair_kind(t, a, b, &k, &err) != MC_OK)
        fail_msg("pair %d-%d: %s", a, b, err.msg);
    return k;
}

/* DGX-1: 6 links of 20 GB/s per GPU, one domain; GPU 0 has NVLink to 1-4 and reaches 5-7 across
 * the two Broadwell sockets; PCIe Gen3 x16 = 12 GB/s. */
static void test_dgx1(void **state)
{
    mc_topo_t *t = load_ok(SHARED "dgx1-v100-hybrid-cube-mesh-topo.xml");
    mc_gpu_summary_t g[8];
    assert_int_equal(mc_topo_summarize(t, g), 1);
    for (int i = 0; i < 8; i++) {
        assert_float_equal(g[i].nvlink_bw, 120e9, 1);
        assert_int_equal(g[i].nvlinks, 6);
        assert_int_equal(g[i].fabric, MC_LINK_NVL);
        assert_int_equal(g[i].domain, 0);
        assert_float_equal(g[i].pcie_bw, 12e9, 1);
    }
    static const mc_link_kind_t row0[8] = {MC_LINK_LOC, MC_LINK_NVL, MC_LINK_NVL, MC_LINK_NVL,
                                           MC_LINK_NVL, MC_LINK_SYS, MC_LINK_SYS, MC_LINK_SYS};
    for (int b = 0; b < 8; b++)
        assert_int_equal(pair(t, 0, b), row0[b]);
    mc_topo_free(t);
}

/* The RTX 3090 box: no NVLink, so no domain; GPUs 0-3 share a switch (PCI), GPU 4 is on the
 * other socket (SYS). */
static void test_pcie_box(void **state)
{
    mc_topo_t *t = load_ok(SHARED "pcie-rtx3090x8-1nic-topo.xml");
    mc_gpu_summary_t g[8];
    assert_int_equal(mc_topo_summarize(t, g), 0);
    assert_int_equal(g[3].domain, -1);
    assert_int_equal(g[3].fabric, MC_LINK__COUNT);
    assert_float_equal(g[3].pcie_bw, 24e9, 1);
    assert_int_equal(pair(t, 0, 1), MC_LINK_PCI);
    assert_int_equal(pair(t, 0, 4), MC_LINK_SYS);
    mc_topo_free(t);
}

/* Four DGX H100 hosts: one NVSwitch domain per host, numbered in GPU order (GPU 8 opens domain
 * 1); GPUs of two hosts meet over the network. */
static void test_cluster_domains(void **state)
{
    mc_topo_t *t = load_ok("topologies/dgx-h100-x4.xml");
    mc_gpu_summary_t *g = mc_xcalloc((size_t)t->ngpus, sizeof *g);
    assert_int_equal(mc_topo_summarize(t, g), 4);
    assert_int_equal(g[7].domain, 0);
    assert_int_equal(g[8].domain, 1);
    assert_int_equal(g[31].domain, 3);
    assert_float_equal(g[31].nvlink_bw, 18 * 20.6e9, 1);
    assert_int_equal(pair(t, 0, 7), MC_LINK_NVL);
    assert_int_equal(pair(t, 0, 9), MC_LINK_NET);
    free(g);
    mc_topo_free(t);
}

/* Two NVLink islands in one host (GPUs 0-1 and 2-3, A100 pairs of 4 links = 80 GB/s): two
 * domains; GPU 1 reaches GPU 2 over PCIe only. */
static void test_two_islands(void **state)
{
#define G(bus, dev, peer)                                                                       \
    "<pci busid=\"" bus "\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">" \
    "<gpu dev=\"" dev "\" sm=\"80\" rank=\"" dev "\" gdr=\"1\"><nvlink target=\"" peer            \
    "\" count=\"4\" tclass=\"0x030200\"/></gpu></pci>"
    mc_topo_t *t = load_text_ok(
        "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">"
        G("0000:01:00.0", "0", "0000:02:00.0") G("0000:02:00.0", "1", "0000:01:00.0")
        G("0000:03:00.0", "2", "0000:04:00.0") G("0000:04:00.0", "3", "0000:03:00.0")
        "</cpu></system>");
    mc_gpu_summary_t g[4];
    assert_int_equal(mc_topo_summarize(t, g), 2);
    assert_int_equal(g[1].domain, 0);
    assert_int_equal(g[2].domain, 1);
    assert_float_equal(g[2].nvlink_bw, 80e9, 1);
    assert_int_equal(pair(t, 1, 2), MC_LINK_PCI);
    assert_int_equal(pair(t, 2, 3), MC_LINK_NVL);
    mc_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dgx1),
        cmocka_unit_test(test_pcie_box),
        cmocka_unit_test(test_cluster_domains),
        cmocka_unit_test(test_two_islands),
    };
    return cmocka_run_group_tests_name("topo_summary", tests, NULL, NULL);
}
