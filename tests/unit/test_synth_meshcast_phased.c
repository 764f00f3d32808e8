/* Tests for channels out of phase (synth_meshcast_phased.c, docs/synthesis.md "Session 41") on
 * four GH200 hosts under one switch (bench/shapes/gh200-x4.xml): a 1 GiB chain from host 0 through
 * hosts 1 and 2 to host 3, cut into 8 channels. Channels in one chunk count move in lockstep and
 * pay their message overheads together; staggered counts drift in and out of step; out of phase
 * (the j-th ramped j, all in one count) they stay apart, and the simulator finds them fastest.
 * Trees that share no edges with another are left alone, and the synthesis takes the phased
 * channels where they win, its own or every tree cut into channels first (a 4 MiB broadcast in a
 * PCIe box, topologies/pcie-8gpu-1nic.xml). */
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
#include "test_task_helpers.h"
#include "test_topo_helpers.h"

#define TOPO "bench/shapes/gh200-x4.xml"

static mc_task_t *chain_task(void)
{
    return task_of("S={g:1}@0", "D={g:3}@1..3", "f32[16384,16384] S[_,_] -> D[_,_]");
}

/* The task's 1 GiB as one chain 0 -> 1 -> 2 -> 3 in 64 chunks, cut into 8 channels of spread
 * `spread` (mc_sched_channels). */
static mc_sched_t *chain_channels(const mc_topo_t *topo, mc_task_t *task, int spread)
{
    mc_sched_t *s = mc_sched_new(task, topo, "meshcast");
    mc_err_t err = {0};
    int t = mc_sched_add_tree(s, 0, 0, task->pieces[0].bytes, 0, 0, 64);
    for (int g = 0; g < 3; g++)
        assert_int_equal(mc_sched_add_edge(s, topo, t, g, g + 1, &err), MC_OK);
    mc_sched_channels(s, topo, 8, spread, 0, 0, 0);
    assert_int_equal(s->ntrees, 8);
    return s;
}

/* Out of phase, four times the most chunks of the set: every channel in 4 x 64 chunks, the j-th
 * by offset ramped j; faster than the same channels in lockstep and than them staggered. */
static void test_phased_channels_beat_lockstep(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok(TOPO);
    mc_task_t *task = chain_task();
    mc_sched_t *lockstep = chain_channels(topo, task, 0), *spread = chain_channels(topo, task, 2);
    mc_sched_t *phased = chain_channels(topo, task, 0);
    assert_true(mc_sched_phased(phased, topo, 4, MC_NET_CHUNK_BYTES, MC_HOST_CHUNK_BYTES));
    for (int t = 0; t < phased->ntrees; t++) {
        const mc_tree_t *tr = &phased->trees[t];
        assert_int_equal(tr->nchunks, 4 * 64);
        assert_int_equal(tr->ramp, (int)(tr->offset / phased->trees[0].bytes));
    }
    double t_lock = valid_makespan(topo, lockstep), t_spread = valid_makespan(topo, spread);
    double t_phased = valid_makespan(topo, phased);
    assert_true(t_spread < t_lock);
    assert_true(t_phased < t_spread);
    mc_sched_free(lockstep);
    mc_sched_free(spread);
    mc_sched_free(phased);
    mc_task_free(task);
    mc_topo_free(topo);
}

/* Trees with edges of their own are not touched, and the smallest chunk holds: a chain and the
 * same chain's edges in another order, 1 MiB each, stay as they are; two channels of 96 KiB
 * across the network, four times 8 chunks wanted, get the 3 chunks MC_NET_CHUNK_BYTES allows,
 * ramped 0 and 1 (the second's end chunks still a byte or more). */
static void test_phased_only_alike_trees(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok(TOPO);
    mc_task_t *task = chain_task();
    mc_sched_t *s = mc_sched_new(task, topo, "meshcast");
    mc_err_t err = {0};
    static const int order[2][3] = {{1, 2, 3}, {2, 1, 3}};
    for (int k = 0; k < 2; k++) {
        int t = mc_sched_add_tree(s, 0, (uint64_t)k << 20, 1u << 20, 0, 0, 8);
        assert_int_equal(mc_sched_add_edge(s, topo, t, 0, order[k][0], &err), MC_OK);
        assert_int_equal(mc_sched_add_edge(s, topo, t, order[k][0], order[k][1], &err), MC_OK);
        assert_int_equal(mc_sched_add_edge(s, topo, t, order[k][1], order[k][2], &err), MC_OK);
    }
    assert_false(mc_sched_phased(s, topo, 4, MC_NET_CHUNK_BYTES, MC_HOST_CHUNK_BYTES));
    for (int k = 0; k < 2; k++) {
        int t = mc_sched_add_tree(s, 0, (2u << 20) + (uint64_t)k * 96 * 1024, 96 * 1024, 0, 0, 8);
        assert_int_equal(mc_sched_add_edge(s, topo, t, 0, 1, &err), MC_OK);
    }
    assert_true(mc_sched_phased(s, topo, 4, MC_NET_CHUNK_BYTES, MC_HOST_CHUNK_BYTES));
    for (int t = 0; t < 2; t++) {
        assert_int_equal(s->trees[t].nchunks, 8);
        assert_int_equal(s->trees[t].ramp, 0);
    }
    for (int t = 2; t < 4; t++) {
        assert_int_equal(s->trees[t].nchunks, 3);
        assert_int_equal(s->trees[t].ramp, t - 2);
    }
    mc_sched_free(s);
    mc_task_free(task);
    mc_topo_free(topo);
}

/* The synthesis takes the chain's channels out of phase: within 1.004 of the bound (1.0165 with
 * the staggered channels that won before). */
static void test_synthesis_takes_phased(void **state)
{
    (void)state;
    char plan[64];
    synth_within(TOPO, chain_task(), 1.004, plan);
    assert_non_null(strstr(plan, "+phased"));
}

/* 4 MiB from GPU 0 to the 7 others of a PCIe box: the winner's trees, cut into 4 channels out of
 * phase, within 1.17 of the bound (1.258 as the winner was, `whole+ch2s1big+ramp1`). */
static void test_synthesis_cuts_channels_out_of_phase(void **state)
{
    (void)state;
    char plan[64];
    synth_within("topologies/pcie-8gpu-1nic.xml",
                 task_of("S={g:1}@0", "D={g:7}@1..7", "f32[1024,1024] S[_,_] -> D[_,_]"), 1.17,
                 plan);
    assert_non_null(strstr(plan, "+ch4+phased"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phased_channels_beat_lockstep),
        cmocka_unit_test(test_phased_only_alike_trees),
        cmocka_unit_test(test_synthesis_takes_phased),
        cmocka_unit_test(test_synthesis_cuts_channels_out_of_phase),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
