/* Tests for the looped-back schedule (synth_meshcast_loopback.c, docs/synthesis.md "Session 18"):
 * a tree that leaves its root's host from the root and fans out inside it reaches that host's
 * GPUs back from its first host across the network instead, each from the GPU there on its
 * device; trees whose GPUs of the root's host send elsewhere are left as they are. On two MI300X
 * hosts (a NIC port per GPU, topologies/mi300x-x2.xml). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/meshcast/mc_meshcast.h"
#include "tests/unit/test_layout_random.h"
#include "tests/unit/test_topo_helpers.h"

#define MI300X2 "topologies/mi300x-x2.xml"
#define BCAST "mesh S={g:1}@0\nmesh D={g:15}@1..15\nmove t: f32[4096,4096] S[_,_] -> D[_,_]\n"

/* Adds a tree of bytes [off, off + len) of the piece from GPU 0, built from (parent, child) pairs,
 * in 8 chunks. */
static void add_tree(mc_sched_t *s, const mc_topo_t *topo, uint64_t off, uint64_t len,
                     const int (*edges)[2], int n)
{
    mc_err_t err = {0};
    int t = mc_sched_add_tree(s, 0, off, len, 0, 0, 8);
    for (int e = 0; e < n; e++)
        assert_int_equal(mc_sched_add_edge(s, topo, t, edges[e][0], edges[e][1], &err), MC_OK);
}

/* A valid schedule of the n trees in trees[] (15 edges each), the piece split evenly over them. */
static mc_sched_t *sched_of(mc_task_t *task, const mc_topo_t *topo, const int (*const *trees)[2],
                            int n)
{
    mc_sched_t *s = mc_sched_new(task, topo, "meshcast");
    uint64_t part = task->pieces[0].bytes / (uint64_t)n;
    for (int i = 0; i < n; i++)
        add_tree(s, topo, part * (uint64_t)i, part, trees[i], 15);
    s->nphases = 1;
    mc_sched_plan_rates(s, topo);
    assert_int_equal(mc_sched_validate(s, topo, NULL), 0);
    return s;
}

/* Rail 0: 0 -> 8 across, 8 -> 9..15 at host 1, and 0 -> 1 -> 2..7 at home. */
static const int rail0[15][2] = {{0, 8},  {8, 9},  {8, 10}, {8, 11}, {8, 12},
                                 {8, 13}, {8, 14}, {8, 15}, {0, 1},  {1, 2},
                                 {1, 3},  {1, 4},  {1, 5},  {1, 6},  {1, 7}};
/* Rail 1: 0 -> 1, which sends across to 9 (fanning out at host 1) and on to 2..7 at home. */
static const int rail1[15][2] = {{0, 1},  {1, 9},  {9, 8},  {9, 10}, {9, 11},
                                 {9, 12}, {9, 13}, {9, 14}, {9, 15}, {1, 2},
                                 {1, 3},  {1, 4},  {1, 5},  {1, 6},  {1, 7}};

/* The piece striped over rails 0 and 1: rail 0's tree looped, its home part is 9 -> 1, ...,
 * 15 -> 7 (host 1's GPU on each one's device) after the edges that stay, the same bytes and
 * chunks; rail 1's is left as it is (GPU 1 sends across); valid. The busiest link's time drops:
 * the xGMI link 0 -> 1 carried both halves, now one, and each NIC port one half each way. */
static void test_looped_tree(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok(MI300X2);
    mc_task_t *task = task_of(BCAST);
    const int (*const trees[])[2] = {rail0, rail1};
    mc_sched_t *s = sched_of(task, topo, trees, 2), *d = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_sched_looped(s, topo, &d, &err), MC_OK);
    assert_non_null(d);
    assert_int_equal(d->ntrees, 2);
    const mc_tree_t *t = &d->trees[0];
    assert_int_equal(t->nedges, 15);
    assert_int_equal(t->bytes, s->trees[0].bytes);
    assert_int_equal(t->nchunks, 8);
    for (int e = 0; e < 8; e++) {
        assert_int_equal(t->edges[e].parent, rail0[e][0]);
        assert_int_equal(t->edges[e].child, rail0[e][1]);
    }
    for (int e = 8; e < 15; e++) {
        assert_int_equal(t->edges[e].parent, e + 1);
        assert_int_equal(t->edges[e].child, e - 7);
    }
    for (int e = 0; e < 15; e++)
        assert_int_equal(d->trees[1].edges[e].child, rail1[e][1]);
    assert_int_equal(mc_sched_validate(d, topo, NULL), 0);
    assert_true(mc_sched_busiest_link_s(d, topo) < 0.6 * mc_sched_busiest_link_s(s, topo));
    mc_sched_free(d);
    mc_sched_free(s);
    mc_task_free(task);
    mc_topo_free(topo);
}

/* Left as they are: rail 1's tree alone (its root does not cross itself), and one like rail 0's
 * with GPU 1 sending across too (1 -> 9 in place of 8 -> 9); with no tree looped the copy is
 * NULL. */
static void test_not_looped(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok(MI300X2);
    mc_task_t *task = task_of(BCAST);
    static const int both[15][2] = {{0, 8},  {0, 1},  {1, 9},  {8, 10}, {8, 11},
                                    {8, 12}, {8, 13}, {8, 14}, {8, 15}, {1, 2},
                                    {1, 3},  {1, 4},  {1, 5},  {1, 6},  {1, 7}};
    const int (*const alone[])[2] = {rail1}, (*const crossing[])[2] = {both};
    const int (*const *cases[])[2] = {alone, crossing};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mc_sched_t *s = sched_of(task, topo, cases[i], 1), *d = NULL;
        mc_err_t err = {0};
        assert_int_equal(mc_sched_looped(s, topo, &d, &err), MC_OK);
        assert_null(d);
        mc_sched_free(s);
    }
    mc_task_free(task);
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_looped_tree),
        cmocka_unit_test(test_not_looped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
