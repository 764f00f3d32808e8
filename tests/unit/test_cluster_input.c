/* Tests for the cluster XML loader on hand-written inputs (tests/data/cluster/): the fabric
 * options (leaves, spines with oversubscription, per-link bandwidth and latency, port speed
 * overrides, mixed node types, a single host) and one test per kind of bad input, each expecting
 * exit status 1's error with the file, the line and what was expected. */
#include <stdlib.h>

#include "test_cluster.h"

/* 6 DGX A100 in leaves of 2 hosts: 3 leaves of 16 ports at 25 GB/s (400 GB/s down each); 2
 * spines at 2:1, so each leaf-spine link is 400 / 2 / 2 = 100 GB/s. */
static void test_leaves_spines(void **state)
{
    mc_topo_t *t = load_ok(DATA "leaves-spines.xml");
    assert_int_equal(t->nhosts, 6);
    assert_int_equal(t->ngpus, 48);
    assert_int_equal(mc_topo_find_node(t, "leaf3"), -1);
    assert_int_equal(mc_topo_find_node(t, "spine2"), -1);
    assert_float_equal(named_link(t, "h0/NET7", "leaf0")->bw, 25 * GB, 1);
    assert_float_equal(named_link(t, "h3/NET0", "leaf1")->bw, 25 * GB, 1);
    assert_float_equal(named_link(t, "h5/NET4", "leaf2")->latency, 0.5e-6, 1e-12);
    assert_float_equal(named_link(t, "leaf2", "spine1")->bw, 100 * GB, 1);
    assert_float_equal(named_link(t, "spine0", "leaf1")->bw, 100 * GB, 1);
    assert_float_equal(named_link(t, "spine0", "leaf1")->latency, 0.75e-6, 1e-12);
    assert_int_equal(t->nodes[mc_topo_find_node(t, "leaf1")].host, -1);
    assert_int_equal(t->nodes[mc_topo_find_node(t, "leaf1")].kind, MC_NODE_SWITCH);
    mc_topo_free(t);
}

/* 2 DGX H100 with 200 Gb/s ports then a p3.8xlarge (hosts 0, 1, 2); switch links at 20 GB/s cut
 * the H100 ports (25 GB/s) and are capped at the p3's 1.25 GB/s with a warning. */
static void test_mixed_nic_bw(void **state)
{
    mc_topo_t *t = load_ok(DATA "mixed-nic-bw.xml");
    assert_int_equal(t->nhosts, 3);
    assert_int_equal(t->ngpus, 20);
    assert_int_equal(t->nodes[t->gpu_node[16]].sm, 70);
    assert_int_equal(mc_topo_gpu_host(t, 16), 2);
    assert_float_equal(t->nodes[mc_topo_find_node(t, "h1/NET3")].bw, 25 * GB, 1);
    assert_float_equal(named_link(t, "h1/NIC3", "h1/NET3")->bw, 25 * GB, 1);
    assert_float_equal(named_link(t, "h1/NET3", "switch")->bw, 20 * GB, 1);
    assert_float_equal(named_link(t, "h2/NET0", "switch")->bw, 1.25 * GB, 1);
    assert_float_equal(named_link(t, "switch", "h2/NET0")->latency, 2e-6, 1e-12);
    assert_float_equal(mc_topo_host_net_bw(t, 0), 160 * GB, 1);
    assert_float_equal(mc_topo_host_net_bw(t, 2), 1.25 * GB, 1);
    assert_int_equal(t->nwarnings, 1);
    assert_non_null(strstr(t->warnings[0], "mixed-nic-bw.xml:9:"));
    assert_non_null(strstr(t->warnings[0], "h2/NET0"));
    mc_topo_free(t);
}

/* One host needs no network; its ports link to nothing. */
static void test_single_host(void **state)
{
    mc_topo_t *t = load_ok(DATA "single.xml");
    assert_int_equal(t->nhosts, 1);
    assert_int_equal(t->ngpus, 8);
    assert_int_equal(t->nnodes, 35);
    assert_int_equal(t->nlinks, 82);
    assert_float_equal(mc_topo_host_net_bw(t, 0), 0, 1);
    mc_topo_free(t);
}

typedef struct bad_case {
    const char *file;
    const char *where;   /* "file:line:" the message must start with */
    const char *what[2]; /* phrases it must contain */
} bad_case_t;

static const bad_case_t bad_cases[] = {
    {"bad-schema-unknown-element.xml", DATA "bad-schema-unknown-element.xml:5:",
     {"cluster.rng", "core"}},
    {"bad-no-type.xml", DATA "bad-no-type.xml:3:", {"exactly one of type", "file"}},
    {"bad-type-and-file.xml", DATA "bad-type-and-file.xml:2:", {"exactly one of type", "file"}},
    {"bad-schema-version.xml", DATA "bad-schema-version.xml:1:", {"cluster.rng", "cluster"}},
    {"bad-schema-count-zero.xml", DATA "bad-schema-count-zero.xml:3:", {"cluster.rng", "nodes"}},
    {"bad-unit.xml", DATA "bad-unit.xml:4:", {"bw=\"400Gbit\"", "Gb/s"}},
    {"bad-latency-unit.xml", DATA "bad-latency-unit.xml:4:", {"3 fortnights", "us"}},
    {"bad-zero-bw.xml", DATA "bad-zero-bw.xml:4:", {"0 Gb/s", "> 0"}},
    {"bad-negative-bw.xml", DATA "bad-negative-bw.xml:5:", {"<spines bw=\"-100GB/s\">", "> 0"}},
    {"bad-negative-latency.xml", DATA "bad-negative-latency.xml:4:", {"-1us", ">= 0"}},
    {"bad-node-type.xml", DATA "bad-node-type.xml:3:", {"dgx-z100", "dgx-h100, pcie-8gpu"}},
    {"bad-missing-file.xml", DATA "bad-missing-file.xml:2:", {"no-such-topo.xml", "file"}},
    {"bad-absurd-count.xml", DATA "bad-absurd-count.xml:3:", {"16390 hosts", "at most 16384"}},
    {"bad-huge-count.xml", DATA "bad-huge-count.xml:2:", {"99999999999999999999999", "16384"}},
    {"bad-absurd-spines.xml", DATA "bad-absurd-spines.xml:5:", {"1200000 uplinks", "at most"}},
    {"bad-no-network.xml", DATA "bad-no-network.xml:1:", {"3 hosts", "<network>"}},
    {"bad-spines-bw-and-ratio.xml", DATA "bad-spines-bw-and-ratio.xml:5:",
     {"bw", "oversubscription, not both"}},
    {"bad-ratio.xml", DATA "bad-ratio.xml:5:", {"2:0", "ratio"}},
    {"bad-nccl-root.xml", DATA "bad-nccl-root.xml:2:", {"root <system>", "got <cluster>"}},
};

static void test_bad_input(void **state)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        char *path = mc_xasprintf(DATA "%s", bad_cases[i].file);
        expect_load_error(path, bad_cases[i].where, bad_cases[i].what[0], bad_cases[i].what[1]);
        free(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leaves_spines),
        cmocka_unit_test(test_mixed_nic_bw),
        cmocka_unit_test(test_single_host),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests_name("cluster_input", tests, NULL, NULL);
}
