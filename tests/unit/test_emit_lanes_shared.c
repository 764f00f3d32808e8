/* Tests for lanes shared by estimated lockstep cost (emit/lane_share.c): schedules that meshcast
 * synthesized for direct-connect hosts, with more trees on a GPU in one phase than the nccl
 * backend has lanes (MC_RT_MAX_LANES), run on the lanes within 3% of the schedule's simulated
 * time. Before, the trees left without a lane took the least used one (an MI250 all-gather of
 * 4 MiB: 1.383 x), an overflowing broadcast shared with a tree of another pace (MI300X, 1 GiB:
 * 1.259 x), and a DGX-1 all-gather whose edges were 7 too many at a GPU went to a lane per tree,
 * parent and width (64 MiB: 1.070 x). The schedules are `meshcast synth --rlimit 2000000`'s (main
 * at 8151de8) for the tasks they hold. Run from the repository root (tests/run.sh does). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>

#include "emit/emit.h"
#include "sim/sim.h"
#include "sim/sim_exec.h"

/* The most tree edges that start or end at one GPU in one phase of s: a lane per edge needs as
 * many lanes. */
static int most_edges_at_a_gpu(const mc_sched_t *s)
{
    int ngpus = 0, most = 0;
    for (int t = 0; t < s->ntrees; t++)
        for (int e = 0; e < s->trees[t].nedges; e++) {
            const mc_tree_edge_t *ed = &s->trees[t].edges[e];
            ngpus = ed->child >= ngpus ? ed->child + 1 : ngpus;
            ngpus = ed->parent >= ngpus ? ed->parent + 1 : ngpus;
        }
    int *n = calloc((size_t)ngpus + 1, sizeof *n);
    for (int ph = 0; ph < s->nphases; ph++) {
        for (int g = 0; g < ngpus; g++)
            n[g] = 0;
        for (int t = 0; t < s->ntrees; t++)
            for (int e = 0; s->trees[t].phase == ph && e < s->trees[t].nedges; e++) {
                n[s->trees[t].edges[e].parent]++;
                n[s->trees[t].edges[e].child]++;
            }
        for (int g = 0; g < ngpus; g++)
            most = n[g] > most ? n[g] : most;
    }
    free(n);
    return most;
}

/* Schedule `sched` on topology `topo_path`: more edges than lanes at a GPU, and its plans on the
 * nccl lanes end within 3% of its simulated makespan, on `lanes` lanes. */
static void expect_within(const char *topo_path, const char *sched, uint32_t lanes)
{
    mc_err_t err = {0};
    mc_topo_t *topo = NULL;
    mc_sched_t *s = NULL;
    mc_emit_plans_t *P = NULL;
    mc_sim_result_t r;
    mc_sim_exec_result_t x;
    assert_int_equal(mc_topo_load(topo_path, &topo, &err), MC_OK);
    if (mc_sched_load(sched, topo, 0, &s, &err) != MC_OK)
        fail_msg("%s", err.msg);
    assert_true(most_edges_at_a_gpu(s) > MC_RT_MAX_LANES);
    assert_int_equal(mc_sim_run_totals(s, topo, &r, &err), MC_OK);
    assert_int_equal(mc_emit_lower_on(s, topo, &P, &err), MC_OK);
    assert_int_equal(mc_rt_plan_lanes(&P->plans[0]), lanes);
    assert_int_equal(mc_sim_exec(s, topo, P->nranks, P->plans, P->gpus, MC_RT_ORDER_NCCL, &x, &err),
                     MC_OK);
    if (x.makespan_s > 1.03 * r.makespan_s)
        fail_msg("%s: executed on the lanes in %.4g s, %.3f x the schedule's %.4g s", sched,
                 x.makespan_s, x.makespan_s / r.makespan_s, r.makespan_s);
    mc_sim_exec_result_free(&x);
    mc_sim_result_free(&r);
    mc_emit_plans_free(P);
    mc_sched_free(s);
    mc_topo_free(topo);
}

/* 16 GPUs on two MI250 hosts, 195 trees of one chunk each, every one on every GPU: 67 must share
 * a lane, and those estimated shortest go where they wait least. */
static void test_mi250_allgather(void **state)
{
    (void)state;
    expect_within("topologies/mi250-x2.xml", "tests/data/sched/mi250-x2-allgather-4m.xml", 128);
}

/* 136 trees from GPU 0 over two MI300X hosts; 8 of them left without a lane of their own have no
 * tree of their pace to share one with, so edges of one pace share lanes (46 of them). */
static void test_mi300x_broadcast(void **state)
{
    (void)state;
    expect_within("topologies/mi300x-x2.xml", "tests/data/sched/mi300x-x2-bcast-1g.xml", 46);
}

/* 70 trees on the DGX-1, 135 edges at its busiest GPU: a lane per edge, 7 of them sharing. */
static void test_dgx1_allgather(void **state)
{
    (void)state;
    expect_within("topologies/dgx1-v100-hybrid-cube-mesh-topo.xml",
                  "tests/data/sched/dgx1-allgather-64m.xml", 128);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mi250_allgather),
        cmocka_unit_test(test_mi300x_broadcast),
        cmocka_unit_test(test_dgx1_allgather),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
