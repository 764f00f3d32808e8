/* Tests for side trees on idle links (synth_meshcast_side.c, docs/synthesis.md "Session 42").
 * NCCL's rings on the DGX-1 hybrid cube-mesh load every NVLink and leave idle the PCIe routes
 * between the GPUs no NVLink joins: the side trees take part of every piece there, and the
 * busiest link and the simulated time drop. On an NVSwitch host every route between two GPUs
 * crosses the same two NVLink ports the rings fill, so there is no side tree to take. And the
 * synthesis of the DGX-1 all-gather beats the rings NCCL runs, 8 steps in flight and all. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/meshcast/mc_meshcast.h"
#include "synth/meshcast/synth_meshcast_run.h"
#include "test_synth_helpers.h"

#define DGX1 "topologies/dgx1-v100-hybrid-cube-mesh-topo.xml"

/* The all-gather of f32[n, n] over the 8 GPUs, split. */
static mc_task_t *allgather(int n)
{
    char text[96];
    mc_task_t *task = NULL;
    mc_err_t err = {0};
    snprintf(text, sizeof text, "mesh M={g:8}@0..7\nmove f32[%d,%d] M[g,_] -> M[_,_]\n", n, n);
    if (mc_task_parse_text(text, "ag", &task, &err) != MC_OK || mc_task_split(task, &err) != MC_OK)
        fail_msg("%s", err.msg);
    return task;
}

/* NCCL's rings for task, one chunk in flight, as the meshcast referee races them. */
static mc_sched_t *rings(mc_task_t *task, const mc_topo_t *topo)
{
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    mc_sched_t *s = NULL;
    mc_err_t err = {0};
    opts.inflight = 1;
    if (mc_synth_nccl_ring(task, topo, &opts, &s, &err) != MC_OK)
        fail_msg("%s", err.msg);
    return s;
}

/* Whether any edge of tree t crosses link l. */
static int crosses(const mc_tree_t *t, int l)
{
    for (int e = 0; e < t->nedges; e++)
        for (int i = 0; i < t->edges[e].nlinks; i++)
            if (t->edges[e].links[i] == l)
                return 1;
    return 0;
}

/* The rings' 64 MiB all-gather with side trees: one more tree per piece, rooted at its holder,
 * its range after the piece's shrunk rings, over links no ring crosses; valid, faster in the
 * simulator, and its busiest link lower, at the fraction found (1.2% lower: the fractional
 * optimum of the priced trees, `frac_s` in the synthesis's params, is as far below the rings)
 * and less at half of it). */
static void test_side_trees_take_idle_links(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok(DGX1);
    mc_task_t *task = allgather(4096);
    mc_sched_t *ring = rings(task, topo);
    double t_ring = valid_makespan(topo, ring), busiest = mc_sched_busiest_link_s(ring, topo);
    static const double scales[] = {1, 0.5};
    for (int k = 0; k < 2; k++) {
        mc_sched_t *side = NULL;
        mc_err_t err = {0};
        assert_int_equal(mc_sched_side(ring, topo, scales[k], MC_MIN_CHUNK_BYTES, &side, &err),
                         MC_OK);
        assert_non_null(side);
        assert_int_equal(side->ntrees, ring->ntrees + 8);
        for (int t = ring->ntrees; t < side->ntrees; t++) {
            const mc_tree_t *st = &side->trees[t];
            const mc_piece_t *pc = &task->pieces[st->piece];
            assert_int_equal(st->root, pc->holders[0]);
            assert_int_equal(st->offset + st->bytes, pc->bytes);
            assert_int_equal(st->nedges, pc->ndests);
            for (int u = 0; u < ring->ntrees; u++) {
                const mc_tree_t *rt = &side->trees[u];
                if (rt->piece == st->piece)
                    assert_true(rt->offset + rt->bytes <= st->offset);
                for (int e = 0; e < st->nedges; e++)
                    for (int i = 0; i < st->edges[e].nlinks; i++)
                        assert_false(crosses(&ring->trees[u], st->edges[e].links[i]));
            }
        }
        assert_true(mc_sched_busiest_link_s(side, topo) < (1 - 0.006 * scales[k]) * busiest);
        assert_true(valid_makespan(topo, side) < t_ring);
        mc_sched_free(side);
    }
    mc_sched_free(ring);
    mc_task_free(task);
    mc_topo_free(topo);
}

/* In one DGX H100 every GPU reaches every other through its own NVLink ports, which the rings
 * fill both ways: a side tree would load them as much as the rings do, and none is made. */
static void test_no_side_trees_where_every_route_is_busy(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok("topologies/dgx-h100-x1.xml");
    mc_task_t *task = allgather(4096);
    mc_sched_t *ring = rings(task, topo), *side = (mc_sched_t *)1;
    mc_err_t err = {0};
    assert_int_equal(mc_sched_side(ring, topo, 1, MC_MIN_CHUNK_BYTES, &side, &err), MC_OK);
    assert_null(side);
    mc_sched_free(ring);
    mc_task_free(task);
    mc_topo_free(topo);
}

/* The `direct` suite's 256 MiB all-gather on the DGX-1: the synthesis puts side trees beside the
 * rings and beats the rings as NCCL runs them (`xla`, 8 chunks in flight per connection: 1.1008
 * of the bound), which one chunk in flight alone did not (1.1016). */
static void test_synthesis_beats_nccl_rings_on_dgx1(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok(DGX1);
    mc_task_t *task = allgather(8192);
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    mc_sched_t *xla = NULL;
    mc_err_t err = {0};
    char plan[64];
    if (mc_synth("xla", task, topo, &opts, &xla, &err) != MC_OK)
        fail_msg("%s", err.msg);
    double bound_s, t = synth_sim(topo, task, &bound_s, plan);
    assert_non_null(strstr(plan, "+side"));
    assert_true(t < valid_makespan(topo, xla));
    assert_true(t < 1.095 * bound_s);
    mc_sched_free(xla);
    mc_task_free(task);
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_side_trees_take_idle_links),
        cmocka_unit_test(test_no_side_trees_where_every_route_is_busy),
        cmocka_unit_test(test_synthesis_beats_nccl_rings_on_dgx1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
