/* Tests for how the meshcast strategy cuts a piece into shares (synth_meshcast_shares.c) where
 * the network has a bottleneck: the capacity between groups of hosts (mc_host_flow) against its
 * closed forms, and a piece held on two hosts and needed on two others, which get a share each
 * on a non-blocking switch but one share when both sit under one leaf whose uplinks carry a
 * quarter of its hosts' NICs (as session 33's random task: 371 us before, 226 us after, against a
 * bound of 188 us). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"
#include "test_synth_helpers.h"
#include "test_task_helpers.h"
#include "test_topo_helpers.h"

/* Four DGX H100 (8 NICs of 50 GB/s each) on the given network. */
static mc_topo_t *dgx_h100_x4(const char *network)
{
    char xml[512];
    snprintf(xml, sizeof xml,
             "<cluster version=\"1\"><nodes type=\"dgx-h100\" count=\"4\"/>"
             "<network>%s</network></cluster>",
             network);
    return load_text_ok(xml);
}

static const char *leaves_4to1 =
    "<leaves hosts=\"2\"/><spines count=\"1\" oversubscription=\"4:1\"/>";

/* Under leaves of two hosts at 4:1, a leaf's uplinks carry 2 x 8 x 50 / 4 = 200 GB/s: all a
 * host of the other leaf gets, and all both hosts of one leaf get together; inside a leaf a host
 * gets what its 8 NICs take from its GPUs over PCIe (8 x 48 = 384 GB/s), as every host does on a
 * switch. */
static void test_host_flow(void **state)
{
    (void)state;
    mc_topo_t *leaves = dgx_h100_x4(leaves_4to1), *sw = dgx_h100_x4("<switch/>");
    mc_host_flow_t *hl = mc_host_flow_new(leaves), *hs = mc_host_flow_new(sw);
    int far[] = {2, 3}, near[] = {0, 1};
    assert_float_equal(mc_host_flow(hl, far, 1, near, 1), 200e9, 1e6);
    assert_float_equal(mc_host_flow(hl, far, 2, near, 2), 200e9, 1e6);
    assert_float_equal(mc_host_flow(hl, near, 1, near + 1, 1), 384e9, 1e6);
    assert_float_equal(mc_host_flow(hs, far, 1, near, 1), 384e9, 1e6);
    assert_float_equal(mc_host_flow(hs, far, 2, near, 2), 768e9, 1e6);
    mc_host_flow_free(hl);
    mc_host_flow_free(hs);
    mc_topo_free(leaves);
    mc_topo_free(sw);
}

/* 32 MiB on GPU 0 of hosts 2 and 3, needed on two GPUs of hosts 0 and 1. */
static mc_task_t *two_holder_hosts(void)
{
    return task_of("A={g:2}@[16,24]", "B={g:4}@[1,2,9,10]", "f32[4096,2048] A[_,_] -> B[_,_]");
}

/* The shares of the task's piece that reach hosts 0 and 1, into out[] (at most 2); returns
 * their number, failing on a share that reaches any other host. */
static int remote_shares(const mc_shares_t *sh, const mc_topo_t *topo, const mc_share_t **out)
{
    int n = 0;
    for (int i = 0; i < sh->n; i++) {
        for (int d = 0; d < sh->s[i].ndests; d++)
            assert_true(mc_topo_gpu_host(topo, sh->s[i].dests[d]) <= 1);
        assert_true(n < 2);
        out[n++] = &sh->s[i];
    }
    return n;
}

/* On a switch each of hosts 0 and 1 is a share of its own, served by its own holder host; under
 * the leaf both are one share open to both holder hosts, so the bytes cross the leaf's uplinks
 * once and are relayed inside it. */
static void test_shares_behind_leaf(void **state)
{
    (void)state;
    const mc_share_t *got[2];
    mc_task_t *task = two_holder_hosts();
    mc_topo_t *sw = dgx_h100_x4("<switch/>"), *leaves = dgx_h100_x4(leaves_4to1);
    mc_shares_t sh = {0};
    mc_shares_build(task, sw, &sh);
    assert_int_equal(remote_shares(&sh, sw, got), 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(got[i]->ndests, 2);
        assert_false(got[i]->open);
    }
    mc_shares_free(&sh);
    mc_shares_build(task, leaves, &sh);
    assert_int_equal(remote_shares(&sh, leaves, got), 1);
    assert_int_equal(got[0]->ndests, 4);
    assert_true(got[0]->open);
    mc_shares_free(&sh);
    char plan[64];
    double bound_s, t = synth_sim(leaves, task, &bound_s, plan);
    assert_true(t <= 1.4 * bound_s);
    mc_topo_free(sw);
    mc_topo_free(leaves);
    mc_task_free(task);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_flow),
        cmocka_unit_test(test_shares_behind_leaf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
