/* RCCL's dialect of the topology XML (<system version="2">, <xgmi> rows, gcn, GPU class
 * 0x120000), read as RCCL reads it (ROCm/rccl src/graph/topo.cc ncclTopoAddXGMI, src/graph/topo.h
 * ncclTopoXGMISpeed, at 0cbce2a7571c907554199fad7e905f16ec0a565c). Per link, RCCL gives xGMI
 * GFX94X_XGMI_WIDTH = 48 GB/s for gfx94*, MI200_XGMI_WIDTH = 36 for gfx90a (gcn "910") and
 * VEGA_XGMI_WIDTH = 24 for anything else (gcn "908" is gfx908, MI100); a row is count links from
 * the listing GPU to the target, one direction; NICs are speed / 8000 GB/s. */
#include "test_topo_helpers.h"

static void assert_xgmi(const mc_topo_t *t, int gpu, const char *arch, double gbps)
{
    const mc_node_t *n = &t->nodes[t->gpu_node[gpu]];
    assert_string_equal(n->arch, arch);
    assert_int_equal(n->sm, 0); /* RCCL's sm is a CU count, not a compute capability */
    assert_float_equal(kind_gbps(t, gpu, MC_LINK_XGMI), gbps, 1e-9);
    assert_float_equal(nvlink_gbps(t, gpu), 0, 0);
}

/* MI300X (gfx942, class 0x120000): a full mesh, 7 rows of count 1 per GPU = 7 x 48 = 336 GB/s;
 * 8 NICs at 400000 Mb/s = 50 GB/s; Gen5 x16 = 48 GB/s; Sapphire Rapids (model 143), which
 * RCCL's older table reads as Skylake: SKL_QPI_BW 10 GB/s. */
static void test_mi300x(void **state)
{
    mc_topo_t *t = load_ok(SHARED "rccl-topo_8p_940.xml");
    assert_int_equal(t->ngpus, 8);
    for (int g = 0; g < 8; g++)
        assert_xgmi(t, g, "gfx942", 336.0);
    assert_nets(t, 8, 50.0);
    assert_float_equal(kind_link_gbps(t, "h0/GPU0", "h0/GPU7", MC_LINK_XGMI), 48.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/PCI/0000:0a:00.0"), 48.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/CPU0", "h0/CPU1"), 10.0, 1e-9);
    assert_int_equal(count_nodes(t, MC_NODE_NVS), 0);
    assert_int_equal(t->nwarnings, 0);
    /* routed like a direct NVLink: one hop */
    mc_route_t r;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_route(t, 2, 5, &r, &err), MC_OK);
    assert_int_equal(r.nlinks, 1);
    assert_int_equal(t->links[r.links[0]].kind, MC_LINK_XGMI);
    assert_float_equal(r.bw / 1e9, 48.0, 1e-9);
    mc_topo_free(t);
}

/* MI100 (gcn "908" = gfx908, class 0x038000): 3 rows of count 1 per GPU = 3 x 24 = 72 GB/s;
 * one 10000 Mb/s NIC (1.25 GB/s) behind a 2.5 GT/s x1 link, and one under the CPU. */
static void test_mi100(void **state)
{
    mc_topo_t *t = load_ok(SHARED "rccl-topo_4p3l.xml");
    assert_int_equal(t->ngpus, 4);
    for (int g = 0; g < 4; g++)
        assert_xgmi(t, g, "gfx908", 72.0);
    assert_nets(t, 2, 1.25);
    assert_float_equal(link_gbps(t, "h0/NIC/0000:60:00.0", "h0/PCI/0000:5e:00.0"), 0.1875, 1e-12);
    assert_true(has_warning(t, "h0/NIC/0000:60:00.0 sits behind a 0.19 GB/s PCIe link"));
    mc_topo_free(t);
}

/* MI250 (gcn "910" = gfx90a): rows of count 4, 2 and 1 (7 links = 252 GB/s) or 4, 1 and 1 (6 =
 * 216 GB/s) at 36 GB/s each; GPU 0 and GPU 3 share no row, so they meet over PCIe; 4 NICs at
 * 200000 Mb/s = 25 GB/s; two AMD NUMA nodes (AMD_BW 16 GB/s). */
static void test_mi250(void **state)
{
    static const double want[8] = {252, 216, 252, 216, 252, 216, 252, 216};
    mc_topo_t *t = load_ok(SHARED "rccl-topo_8p1h.xml");
    assert_int_equal(t->ngpus, 8);
    for (int g = 0; g < 8; g++)
        assert_xgmi(t, g, "gfx90a", want[g]);
    assert_nets(t, 4, 25.0);
    assert_float_equal(kind_link_gbps(t, "h0/GPU0", "h0/GPU1", MC_LINK_XGMI), 144.0, 1e-9);
    assert_float_equal(kind_link_gbps(t, "h0/GPU0", "h0/GPU4", MC_LINK_XGMI), 72.0, 1e-9);
    assert_float_equal(link_gbps(t, "h0/GPU0", "h0/GPU3"), -1, 0);
    assert_float_equal(link_gbps(t, "h0/CPU1", "h0/CPU3"), 16.0, 1e-9);
    mc_link_kind_t k;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_pair_kind(t, 0, 1, &k, &err), MC_OK);
    assert_int_equal(k, MC_LINK_XGMI);
    assert_int_equal(mc_topo_pair_kind(t, 0, 3, &k, &err), MC_OK);
    assert_int_equal(k, MC_LINK_PCI);
    mc_topo_free(t);
}

/* The rest of the dialect (tests/data/topo/rccl-rows.xml): a CPU row and a switch row are joined
 * both ways, like NCCL's NVLink rows; RCCL reads no <nvlink>; the functions of one NIC card are
 * one NIC with two ports (2 x 25 GB/s); a GPU without gcn is refused. */
#define RCPU \
    "<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\" familyid=\"25\" modelid=\"1\">"
#define RPCI(bus, cls) "<pci busid=\"" bus "\" class=\"" cls "\" link_speed=\"16.0 GT/s PCIe\" " \
                       "link_width=\"16\">"
static void test_dialect_rows(void **state)
{
    mc_topo_t *t = load_ok(DATA "rccl-rows.xml");
    assert_xgmi(t, 0, "gfx940", 3 * 48.0);
    assert_float_equal(kind_link_gbps(t, "h0/CPU0", "h0/GPU0", MC_LINK_XGMI), 96.0, 1e-9);
    assert_float_equal(kind_link_gbps(t, "h0/NVS", "h0/GPU0", MC_LINK_XGMI), 48.0, 1e-9);
    assert_xgmi(t, 1, "gfx1100", 2 * 24.0);
    assert_true(has_warning(t, "rccl-rows.xml:11: ignoring element <nvlink> inside <gpu> (RCCL "
                               "ignores it too)"));
    assert_int_equal(count_nodes(t, MC_NODE_NIC), 1);
    assert_float_equal(link_gbps(t, "h0/NIC/0000:05:00.0", "h0/NET1"), 25.0, 1e-9);
    mc_route_t r;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_route(t, 0, 1, &r, &err), MC_OK);
    assert_int_equal(r.nlinks, 2); /* through the switch */
    assert_float_equal(r.bw / 1e9, 48.0, 1e-9);
    mc_topo_free(t);

    const char *nogcn = "<system version=\"2\">" RCPU RPCI("0000:03:00.0", "0x120000")
                        "<gpu dev=\"0\" sm=\"304\" rank=\"0\" gdr=\"1\"/></pci></cpu></system>";
    mc_err_t e = {0};
    mc_topo_t *bad = NULL;
    assert_int_equal(mc_topo_load_memory(nogcn, strlen(nogcn), "nogcn.xml", &bad, &e),
                     MC_ERR_INVALID);
    assert_non_null(strstr(e.msg, "nogcn.xml:1: <gpu> needs the attribute gcn"));
}

/* An NCCL file ignores <xgmi> rows and does not take class 0x120000 for a GPU. */
static void test_nccl_ignores_rccl(void **state)
{
    mc_topo_t *t = load_text_ok(
        "<system version=\"1\">" RCPU
        RPCI("0000:03:00.0", "0x030200") "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\">"
        "<xgmi target=\"0000:04:00.0\" count=\"1\" tclass=\"0x030200\"/></gpu></pci>"
        RPCI("0000:04:00.0", "0x120000") "</pci></cpu></system>");
    assert_int_equal(t->ngpus, 1);
    assert_true(has_warning(t, "ignoring element <xgmi> inside <gpu> (NCCL ignores it too)"));
    assert_int_equal(t->nodes[t->gpu_node[0]].arch[0], '\0');
    mc_topo_free(t);
}

/* Cluster XML takes an RCCL file as a node type: 2 MI300X hosts, 8 rails; GPU 0 of host 0
 * reaches GPU 1 of host 1 over xGMI to its GPU 1, then rail 1 (PXN). */
static void test_cluster_of_mi300x(void **state)
{
    mc_topo_t *t = load_ok("tests/data/cluster/mi300x-x2.xml");
    assert_int_equal(t->nhosts, 2);
    assert_int_equal(t->ngpus, 16);
    for (int g = 0; g < 16; g++)
        assert_xgmi(t, g, "gfx942", 336.0);
    assert_float_equal(mc_topo_host_net_bw(t, 1), 8 * 50e9, 1);
    mc_route_t r;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_route(t, 0, 9, &r, &err), MC_OK);
    assert_int_equal(r.via_gpu, 1);
    assert_int_equal(t->links[r.links[0]].kind, MC_LINK_XGMI);
    mc_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mi300x),          cmocka_unit_test(test_mi100),
        cmocka_unit_test(test_mi250),           cmocka_unit_test(test_dialect_rows),
        cmocka_unit_test(test_nccl_ignores_rccl), cmocka_unit_test(test_cluster_of_mi300x),
    };
    return cmocka_run_group_tests_name("topo_rccl", tests, NULL, NULL);
}
