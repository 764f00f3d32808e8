/* Tests of the simulator's stop by link loads (sim/sim.c, group_end_least): a run with a horizon
 * stops as soon as the bytes its group's flows have still to move over some link, at that link's
 * bandwidth, end it past the horizon. That end is a lower bound on the run's makespan, so on
 * random trees over two-host clusters (mixed link speeds, several trees per link, one or two
 * phases) a horizon below the makespan stops the run at a time past the horizon and no later
 * than the makespan, and a horizon at the makespan or past it changes nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "sim/sim.h"

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ntrees random trees in nphases phases: each from a random root to 1-6 other GPUs, every GPU
 * joined to a random GPU already in the tree, 64 KiB to 8 MiB in 1-48 chunks. */
static mc_sched_t *random_trees(const mc_topo_t *topo, uint64_t *seed, int ntrees, int nphases)
{
    mc_sched_t *s = mc_sched_new(NULL, topo, "test");
    int n = topo->ngpus, in[64];
    assert_true(n <= 64);
    for (int t = 0; t < ntrees; t++) {
        int root = (int)(next_rand(seed) % (uint64_t)n), nin = 1;
        uint64_t bytes = (64 << 10) + next_rand(seed) % (8 << 20);
        int ti = mc_sched_add_tree(s, 0, 0, bytes, root, (int)(next_rand(seed) % (uint64_t)nphases),
                                   1 + (int)(next_rand(seed) % 48));
        int ndst = 1 + (int)(next_rand(seed) % 6);
        in[0] = root;
        for (int d = 0; d < ndst; d++) {
            int child = (int)(next_rand(seed) % (uint64_t)n), seen = 0;
            for (int i = 0; i < nin; i++)
                seen |= in[i] == child;
            if (seen)
                continue;
            mc_err_t err = {0};
            int parent = in[next_rand(seed) % (uint64_t)nin];
            if (mc_sched_add_edge(s, topo, ti, parent, child, &err) != MC_OK)
                fail_msg("%s", err.msg);
            in[nin++] = child;
        }
    }
    return s;
}

static void test_loads_stop_past_horizon_only(void **state)
{
    static const char *topos[] = {"topologies/mi250-x2.xml", "topologies/dgx1-x2.xml"};
    static const double at[] = {0.2, 0.6, 0.9, 0.99, 0.9999, 1.0, 1.001, 1.05, 1.3, 2.0};
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    int by_loads = 0, runs = 0;
    for (size_t k = 0; k < sizeof topos / sizeof topos[0]; k++) {
        mc_topo_t *topo = NULL;
        mc_err_t err = {0};
        if (mc_topo_load(topos[k], &topo, &err) != MC_OK)
            fail_msg("%s", err.msg);
        for (int iter = 0; iter < 40; iter++) {
            mc_sched_t *s = random_trees(topo, &seed, 2 + iter % 23, 1 + iter % 2);
            mc_sim_result_t full, res;
            assert_int_equal(mc_sim_run_totals(s, topo, &full, &err), MC_OK);
            double end = full.makespan_s;
            for (size_t h = 0; h < sizeof at / sizeof at[0]; h++) {
                int64_t work = INT64_MAX / 4;
                mc_status_t st = mc_sim_run_until(s, topo, &work, at[h] * end, &res, &err);
                runs++;
                if (at[h] >= 1) {
                    assert_int_equal(st, MC_OK);
                    assert_true(res.makespan_s == end);
                } else {
                    assert_int_equal(st, MC_ERR_TIMEOUT);
                    if (!(res.makespan_s > at[h] * end && res.makespan_s <= end * (1 + 1e-12)))
                        fail_msg("%s, schedule %d, horizon %g of %.12g s: stopped at %.12g s",
                                 topos[k], iter, at[h], end, res.makespan_s);
                    by_loads += strstr(err.msg, "loads") != NULL;
                }
                mc_sim_result_free(&res);
            }
            mc_sim_result_free(&full);
            mc_sched_free(s);
        }
        mc_topo_free(topo);
    }
    /* the loads stopped a good share of the runs below their makespan, not none */
    assert_true(by_loads > runs / 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loads_stop_past_horizon_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
