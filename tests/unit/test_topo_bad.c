/* Bad topology input: each kind gets one clear message naming the file and line, the right
 * status, and never a crash (these run under ASan in make check). */
#include "test_topo_helpers.h"

static void test_malformed(void **state)
{
    assert_refused(DATA "malformed.xml", MC_ERR_PARSE, "malformed.xml:8:", "malformed XML");
    assert_refused(DATA "empty.xml", MC_ERR_PARSE, "empty.xml:1:", "Document is empty");
}

static void test_wrong_root(void **state)
{
    assert_refused(DATA "wrong-root.xml", MC_ERR_INVALID, "wrong-root.xml:1:",
                   "root element <topology>: expected <system>");
    assert_refused(DATA "wrong-version.xml", MC_ERR_INVALID, "wrong-version.xml:1:",
                   "expected version \"1\"");
}

static void test_missing_attribute(void **state)
{
    assert_refused(DATA "missing-attr.xml", MC_ERR_INVALID, "missing-attr.xml:4:",
                   "<gpu> needs the attribute sm");
}

static void test_unknown_unit(void **state)
{
    assert_refused(DATA "unknown-unit.xml", MC_ERR_INVALID, "unknown-unit.xml:3:",
                   "link_speed=\"16 Gbps\">: unknown unit");
}

static void test_zero_or_negative_bandwidth(void **state)
{
    assert_refused(DATA "zero-bandwidth.xml", MC_ERR_INVALID, "zero-bandwidth.xml:5:",
                   "<c2c bw=\"0\">: zero or negative bandwidth");
    assert_refused(DATA "negative-count.xml", MC_ERR_INVALID, "negative-count.xml:5:",
                   "<nvlink count=\"-2\">: zero or negative bandwidth");
}

static void test_duplicate_busid(void **state)
{
    assert_refused(DATA "duplicate-busid.xml", MC_ERR_INVALID, "duplicate-busid.xml:6:",
                   "duplicate bus id 0000:07:00.0");
    assert_refused(DATA "bad-busid.xml", MC_ERR_INVALID, "bad-busid.xml:3:",
                   "expected a PCI bus id");
}

static void test_nvlink_unknown_target(void **state)
{
    assert_refused(DATA "nvlink-unknown-target.xml", MC_ERR_INVALID,
                   "nvlink-unknown-target.xml:5:", "NVLink from h0/GPU0 to unknown target "
                   "0000:09:00.0");
}

static void test_pci_cycle(void **state)
{
    assert_refused(DATA "pci-cycle.xml", MC_ERR_INVALID, "pci-cycle.xml:5:",
                   "a cycle in the PCIe tree");
}

static void test_absurd_sizes(void **state)
{
    assert_refused(DATA "absurd-width.xml", MC_ERR_INVALID, "absurd-width.xml:3:",
                   "link_width=\"4096\">: expected a value from 0 to 32");
    /* A port faster than any link may be (100 TB/s). */
    assert_refused(DATA "absurd-speed.xml", MC_ERR_INVALID, "absurd-speed.xml:5:",
                   "<net speed=\"900000000\">: expected at most 800000000 Mb/s (100 TB/s");
    /* A document far larger than any topology is refused before it is parsed. */
    size_t len = (64u << 20) + 1;
    char *big = mc_xmalloc(len);
    memset(big, ' ', len);
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_load_memory(big, len, "big.xml", &t, &err), MC_ERR_INVALID);
    assert_non_null(strstr(err.msg, "too large"));
    free(big);
}

static void test_entities(void **state)
{
    assert_refused(DATA "billion-laughs.xml", MC_ERR_PARSE, "billion-laughs.xml:13:",
                   "entity reference loop");
    assert_refused(DATA "external-entity.xml", MC_ERR_PARSE, "external-entity.xml:5:",
                   "external entity");
    assert_refused(DATA "declared-entity.xml", MC_ERR_INVALID, "declared-entity.xml:3:",
                   "the DOCTYPE declares entities");
}

static void test_no_gpus_or_file(void **state)
{
    assert_refused(DATA "no-gpus.xml", MC_ERR_INVALID, "no-gpus.xml:1:", "no GPUs");
    assert_refused(DATA "does-not-exist.xml", MC_ERR_IO, "does-not-exist.xml", "cannot open");
}

/* Every prefix of a real file is either refused or loads; none may crash or leak. */
static void test_truncations(void **state)
{
    char *data;
    size_t len;
    mc_err_t err = {0};
    assert_int_equal(mc_read_file(SHARED "dgx1-v100-hybrid-cube-mesh-topo.xml", &data, &len, &err),
                     MC_OK);
    int loaded = 0;
    for (size_t n = 0; n <= len; n += 97) {
        mc_topo_t *t = NULL;
        if (mc_topo_load_memory(data, n, "cut.xml", &t, &err) == MC_OK)
            loaded++;
        mc_topo_free(t);
    }
    assert_int_equal(loaded, 0); /* only the whole file closes </system> */
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_wrong_root),
        cmocka_unit_test(test_missing_attribute),
        cmocka_unit_test(test_unknown_unit),
        cmocka_unit_test(test_zero_or_negative_bandwidth),
        cmocka_unit_test(test_duplicate_busid),
        cmocka_unit_test(test_nvlink_unknown_target),
        cmocka_unit_test(test_pci_cycle),
        cmocka_unit_test(test_absurd_sizes),
        cmocka_unit_test(test_entities),
        cmocka_unit_test(test_no_gpus_or_file),
        cmocka_unit_test(test_truncations),
    };
    return cmocka_run_group_tests_name("topo_bad", tests, NULL, NULL);
}
