/* GPUs whose <gpu> lists no NVLink rows in a full dump (NCCL fills them from the driver on the
 * machine): inferred from the PCI device id with one warning, stated with --assume-nvlink
 * (mc_topo_load_opts_t) or <nodes assume_nvlink>, or loaded as PCIe-only with a message that
 * says how to state them. Before, such an H100 box loaded as PCIe-only without a word. And the
 * skeletons that name GPUs and NICs by PCI class alone (Azure's), completed from the model and
 * port speed stated with --assume-gpu and --assume-nic-gbps, or <nodes assume_gpu nic_bw>. */
#include "test_topo_helpers.h"

#define CLUSTER "tests/data/cluster/"

static mc_topo_t *load_assuming(const char *path, int lanes)
{
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    mc_topo_load_opts_t o = {.assume_nvlink = lanes};
    if (mc_topo_load_with(path, &o, &t, &err) != MC_OK)
        fail_msg("loading %s: %s", path, err.msg);
    return t;
}

/* Device 0x2330 is an H100 SXM5: 18 NVLinks to the NVSwitch at 20.6 GB/s = 370.8 GB/s each, one
 * warning for the four GPUs. */
static void test_inferred_from_device_id(void **state)
{
    mc_topo_t *t = load_ok(DATA "h100-no-nvlink-rows.xml");
    assert_all_nvlink(t, 4, 90, 370.8);
    assert_int_equal(count_nodes(t, MC_NODE_NVS), 1);
    assert_int_equal(t->nwarnings, 1);
    assert_true(has_warning(t, "h100-no-nvlink-rows.xml:7: 4 GPU(s), first h0/GPU0, list no "
                               "NVLinks (NCCL would ask the driver); assuming 18 NVLinks each "
                               "to the NVSwitch, as on every H100-SXM5-80GB (device 0x2330)"));
    mc_route_t r;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_route(t, 0, 3, &r, &err), MC_OK);
    assert_float_equal(r.bw / 1e9, 370.8, 1e-9);
    mc_topo_free(t);
}

/* Stated: 12 links (12 x 20.6 = 247.2 GB/s) or none, without a warning, for known and unknown
 * device ids alike. */
static void test_stated(void **state)
{
    mc_topo_t *t = load_assuming(DATA "h100-no-nvlink-rows.xml", 12);
    assert_all_nvlink(t, 4, 90, 247.2);
    assert_int_equal(t->nwarnings, 0);
    mc_topo_free(t);
    t = load_assuming(DATA "unknown-gpu-no-nvlink-rows.xml", 0);
    assert_all_nvlink(t, 2, 90, 0.0);
    assert_int_equal(t->nwarnings, 0);
    mc_topo_free(t);
}

/* An unknown device id: PCIe only, and the one warning says how to state the NVLinks. A known
 * PCIe card (the RTX 3090 dump, device 0x2204) needs no warning. */
static void test_unknown_device(void **state)
{
    mc_topo_t *t = load_ok(DATA "unknown-gpu-no-nvlink-rows.xml");
    assert_all_nvlink(t, 2, 90, 0.0);
    assert_int_equal(t->nwarnings, 1);
    assert_true(has_warning(t, "unknown-gpu-no-nvlink-rows.xml:6: 2 GPU(s), first h0/GPU0 "
                               "(device 0x2399, not one meshcast can tell), list no NVLinks, so "
                               "they are reached over PCIe only; if they have NVLinks to an "
                               "NVSwitch, give their number with --assume-nvlink N"));
    mc_topo_free(t);
    t = load_ok(SHARED "pcie-rtx3090x8-1nic-topo.xml");
    assert_false(has_warning(t, "list no NVLinks"));
    mc_topo_free(t);
    /* V100 SXM2 boards are cube-meshes that differ: nothing is assumed */
    t = load_text_ok("<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" "
                     "vendor=\"GenuineIntel\"><pci busid=\"0000:07:00.0\" class=\"0x030200\" vendor=\"0x10de\" "
                     "device=\"0x1db5\" link_speed=\"8 GT/s\" link_width=\"16\">"
                     "<gpu dev=\"0\" sm=\"70\" rank=\"0\" gdr=\"1\"/></pci></cpu></system>");
    assert_all_nvlink(t, 1, 70, 0.0);
    assert_true(has_warning(t, "1 GPU(s), first h0/GPU0 (V100-SXM2-32GB, wired differently by "
                               "board), list no NVLinks"));
    mc_topo_free(t);
}

/* <nodes assume_nvlink="12">: 12 x 20.6 = 247.2 GB/s per GPU; on a built-in type the attribute
 * is refused. */
static void test_cluster_attribute(void **state)
{
    mc_topo_t *t = load_ok(CLUSTER "assume-nvlink.xml");
    assert_all_nvlink(t, 2, 90, 247.2);
    assert_false(has_warning(t, "list no NVLinks"));
    mc_topo_free(t);
    assert_refused(CLUSTER "bad-assume-nvlink-type.xml", MC_ERR_INVALID,
                   "bad-assume-nvlink-type.xml:4:", "a built-in node type has known NVLinks");
}

/* Azure's skeletons name their GPUs and NICs by PCI class alone; stated as A100-SXM4-80GB
 * (--assume-gpu) with 200 Gb/s HDR ports (--assume-nic-gbps), ND96asr_v4 is 8 A100 on an NVSwitch
 * (12 links, 240 GB/s) and 8 ports of 25 GB/s, one warning per assumption. Stated NVLinks win
 * over the model's. The refusal of the file without them names the option. */
static void test_azure_stated(void **state)
{
    mc_topo_load_opts_t o = MC_TOPO_LOAD_OPTS_DEFAULT;
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_gpu_model("a100-sxm4-80gb", &o.assume_gpu), 0);
    o.assume_nic_mbps = 200000;
    if (mc_topo_load_with(SHARED "azure-ndv4-topo.xml", &o, &t, &err) != MC_OK)
        fail_msg("%s", err.msg);
    assert_all_nvlink(t, 8, 80, 240.0);
    assert_nets(t, 8, 25.0);
    assert_int_equal(t->nwarnings, 16);
    assert_true(has_warning(t, "assuming A100-SXM4-80GB (device 0x20b2, as stated) as h0/GPU0"));
    assert_true(has_warning(t, "assuming one port h0/NET7 at 200 Gb/s (as stated)"));
    mc_topo_free(t);
    o.assume_nvlink = 6;
    assert_int_equal(mc_topo_gpu_model("0x2330", &o.assume_gpu), 0);
    if (mc_topo_load_with(SHARED "azure-ndv5-topo.xml", &o, &t, &err) != MC_OK)
        fail_msg("%s", err.msg);
    assert_all_nvlink(t, 8, 90, 6 * 20.6);
    assert_true(has_warning(t, "sm 90, 6 NVLinks to the NVSwitch (as stated)"));
    mc_topo_free(t);
    assert_refused(SHARED "azure-ndv4-topo.xml", MC_ERR_UNSUPPORTED, "ndv4-topo.xml:4:",
                   "or state the model with --assume-gpu MODEL (one of: V100-SXM2-32GB (0x1db5)");
}

/* GPU models by name (any case) or PCI device id (with or without 0x); a family name alone or
 * an unknown id is not one. */
static void test_gpu_models(void **state)
{
    unsigned d = 0;
    assert_int_equal(mc_topo_gpu_model("H100-SXM5-80GB", &d), 0);
    assert_int_equal(d, 0x2330);
    assert_int_equal(mc_topo_gpu_model("20b0", &d), 0);
    assert_int_equal(d, 0x20b0);
    assert_int_equal(mc_topo_gpu_model("A100", &d), -1);
    assert_int_equal(mc_topo_gpu_model("0x1234", &d), -1);
    assert_int_equal(mc_topo_gpu_model("", &d), -1);
    assert_non_null(strstr(mc_topo_gpu_models(), "B200 (0x2901)"));
    (void)state;
}

/* Four ND96asr_v4 in a cluster file that states their model and port speed: 32 A100 with 240 GB/s
 * of NVLink, 32 ports of 25 GB/s, each assumption warned at what it became. The attribute is
 * refused on a built-in type and for a model meshcast does not know. */
static void test_cluster_assume_gpu(void **state)
{
    mc_topo_t *t = load_ok("topologies/azure-ndv4-x4.xml");
    assert_int_equal(t->nhosts, 4);
    assert_all_nvlink(t, 32, 80, 240.0);
    assert_nets(t, 32, 25.0);
    assert_true(has_warning(t, "assuming one port h0/NET7 at 200 Gb/s (as stated)"));
    mc_topo_free(t);
    assert_refused(CLUSTER "bad-assume-gpu-type.xml", MC_ERR_INVALID, "bad-assume-gpu-type.xml:4:",
                   "a built-in node type has known GPUs");
    assert_refused(CLUSTER "bad-assume-gpu-model.xml", MC_ERR_INVALID,
                   "bad-assume-gpu-model.xml:4:", "<nodes assume_gpu=\"A100\">: expected a GPU "
                   "model or its PCI device id, one of: V100-SXM2-32GB (0x1db5)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inferred_from_device_id),
        cmocka_unit_test(test_stated),
        cmocka_unit_test(test_unknown_device),
        cmocka_unit_test(test_cluster_attribute),
        cmocka_unit_test(test_azure_stated),
        cmocka_unit_test(test_gpu_models),
        cmocka_unit_test(test_cluster_assume_gpu),
    };
    return cmocka_run_group_tests_name("topo_assume", tests, NULL, NULL);
}
