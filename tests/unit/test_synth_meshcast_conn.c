/* Tests for the per-connection rate limit as the synthesizer and the simulator share it
 * (topo/topo_conn.c): the table's figures by architecture and route, planned tree rates that hold
 * it as the simulator does, and meshcast schedules on an
 * H100 host that is not in the benchmark suites (OCI BM.GPU.H100.8, a real NCCL dump) carrying a
 * transfer over enough parallel connections to reach the NVLink rate that one connection (180
 * GB/s) cannot. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "sim/sim.h"
#include "synth/synth.h"

#define H100 "../shared/topo-xml/oci-bm-gpu-h100.8-topo.xml"

static mc_topo_t *load(const char *path)
{
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    if (mc_topo_load(path, &t, &err) != MC_OK)
        fail_msg("loading %s: %s", path, err.msg);
    return t;
}

static double route_cap(const mc_topo_t *t, int a, int b)
{
    mc_route_t r;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_route(t, a, b, &r, &err), MC_OK);
    return mc_topo_conn_cap(t, a, b, r.links, r.nlinks);
}

/* 180 GB/s between two H100 over NVLink (nccl-tests sendrecv_perf); nothing between two A100
 * (no published figure) nor between H100 of two hosts (the route crosses PCIe and the network). */
static void test_cap_by_architecture_and_route(void **state)
{
    (void)state;
    mc_topo_t *h = load(H100), *a = load("topologies/dgx-a100-x4.xml");
    mc_topo_t *pod = load("topologies/dgx-h100-x4.xml");
    assert_true(route_cap(h, 0, 1) == 180e9);
    assert_true(route_cap(h, 7, 3) == 180e9);
    assert_true(route_cap(a, 0, 1) == 0);
    assert_true(route_cap(pod, 0, 1) == 180e9);
    assert_true(route_cap(pod, 0, 8) == 0);
    mc_topo_free(h);
    mc_topo_free(a);
    mc_topo_free(pod);
}

/* A schedule of `copies` identical trees 0 -> 1, each moving `bytes`, in one phase. */
static mc_sched_t *copies_0_to_1(const mc_topo_t *topo, int copies, uint64_t bytes)
{
    mc_sched_t *s = mc_sched_new(NULL, topo, "test");
    mc_err_t err = {0};
    for (int i = 0; i < copies; i++) {
        int t = mc_sched_add_tree(s, 0, (uint64_t)i * bytes, bytes, 0, 0, 1);
        assert_int_equal(mc_sched_add_edge(s, topo, t, 0, 1, &err), MC_OK);
    }
    s->nphases = 1;
    mc_sched_plan_rates(s, topo);
    return s;
}

/* Planned rates respect the limit as the simulator does: one tree 0 -> 1 is planned at 180 GB/s
 * (not the link's bandwidth) and simulates in bytes / 180e9 plus its message overhead; four
 * copies share the link, a quarter each, below the limit. */
static void test_planned_rates_hold_the_limit(void **state)
{
    (void)state;
    mc_topo_t *topo = load(H100);
    mc_route_t r;
    mc_err_t err = {0};
    mc_sim_result_t res = {0};
    assert_int_equal(mc_topo_route(topo, 0, 1, &r, &err), MC_OK);
    assert_true(r.bw > 2 * 180e9);
    mc_sched_t *one = copies_0_to_1(topo, 1, 1000000000), *four = copies_0_to_1(topo, 4, 1000);
    assert_true(one->trees[0].rate == 180e9);
    assert_int_equal(mc_sim_run(one, topo, &res, &err), MC_OK);
    double want = 1e9 / 180e9 + mc_topo_links_delay(topo, r.links, r.nlinks);
    assert_true(fabs(res.makespan_s - want) <= 1e-9 * want);
    for (int i = 0; i < 4; i++)
        assert_true(fabs(four->trees[i].rate - r.bw / 4) <= 1e-6 * r.bw);
    mc_sim_result_free(&res);
    mc_sched_free(one);
    mc_sched_free(four);
    mc_topo_free(topo);
}

/* Synthesizes (Z3 bounded by rlimit) and simulates; returns the makespan over the bound. */
static double synth_ratio(const mc_topo_t *topo, const char *m1, const char *m2, const char *move,
                          mc_sched_t **out)
{
    mc_task_t *t = mc_task_new();
    mc_err_t err = {0};
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    mc_sim_result_t res = {0};
    mc_bound_t b;
    opts.rlimit = 2000000;
    assert_int_equal(mc_task_add_mesh(t, m1, &err), MC_OK);
    assert_int_equal(mc_task_add_mesh(t, m2, &err), MC_OK);
    assert_int_equal(mc_task_add_move(t, move, &err), MC_OK);
    if (mc_synth_meshcast(t, topo, &opts, out, &err) != MC_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(mc_sched_validate(*out, topo, NULL), 0);
    assert_int_equal(mc_task_bound(t, topo, &b, &err), MC_OK);
    assert_int_equal(mc_sim_run(*out, topo, &res, &err), MC_OK);
    double ratio = res.makespan_s / b.seconds;
    mc_sim_result_free(&res);
    mc_task_free(t);
    return ratio;
}

/* Connections (tree edges, over all trees) into GPU g. */
static int edges_into(const mc_sched_t *s, int g)
{
    int n = 0;
    for (int t = 0; t < s->ntrees; t++)
        for (int e = 0; e < s->trees[t].nedges; e++)
            n += s->trees[t].edges[e].child == g;
    return n;
}

/* 1 GiB from GPU 0 to GPU 1: one connection would take 1 GiB / 180 GB/s, 2.09x the bound (the
 * 370.8 GB/s NVLink); the schedule spreads it over at least ceil(370.8 / 180) = 3 connections and
 * lands within 5% of the bound. */
static void test_one_pair_uses_parallel_connections(void **state)
{
    (void)state;
    mc_topo_t *topo = load(H100);
    mc_sched_t *s = NULL;
    double ratio = synth_ratio(topo, "A={gpu:1}@[0]", "B={gpu:1}@[1]",
                               "i32[268435456] A[_] -> B[_]", &s);
    assert_true(edges_into(s, 1) >= 3);
    if (ratio > 1.05)
        fail_msg("one pair: %.3f x the bound", ratio);
    mc_sched_free(s);
    mc_topo_free(topo);
}

/* Four pairs swap 256 MiB each (pytorch #131210's (S1,S1) -> (S1,S2) on 8 GPUs): every GPU sends
 * to one peer, so every pair needs three connections, and the swap lands within 5% of the bound
 * (the max-flow between the pair, the NVLink rate), where one connection per pair took 2.09x. */
static void test_pair_swaps_reach_the_link_rate(void **state)
{
    (void)state;
    mc_topo_t *topo = load(H100);
    mc_sched_t *s = NULL;
    double ratio = synth_ratio(topo, "M={x:4,y:2}@0..7", "N={x:4,y:2}@0..7",
                               "f32[64,4096,4096] M[_,(x,y),_] -> N[_,x,y]", &s);
    for (int g = 0; g < 8; g++)
        assert_true(edges_into(s, g) >= 3);
    if (ratio > 1.05)
        fail_msg("pair swaps: %.3f x the bound", ratio);
    mc_sched_free(s);
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_by_architecture_and_route),
        cmocka_unit_test(test_planned_rates_hold_the_limit),
        cmocka_unit_test(test_one_pair_uses_parallel_connections),
        cmocka_unit_test(test_pair_swaps_reach_the_link_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
