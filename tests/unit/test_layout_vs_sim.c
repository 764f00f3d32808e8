/* The lower bound is only useful if no schedule beats it: random tasks on the paper's cluster
 * (topologies/aws-p3.8xlarge-x5.xml), scheduled by every baseline strategy that accepts them and
 * timed by the simulator, never finish before mc_task_bound says they can. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "layout/layout.h"
#include "sim/sim.h"
#include "synth/synth.h"
#include "tests/unit/test_layout_random.h"

static void test_sim_never_beats_bound(void **state)
{
    mc_topo_t *topo = NULL;
    mc_err_t err = {0};
    if (mc_topo_load("topologies/aws-p3.8xlarge-x5.xml", &topo, &err) != MC_OK)
        fail_msg("%s", err.msg);
    static const char *strategies[] = {"p2p", "p2p-lb", "alpa-bcast"};
    int timed = 0;
    for (int iter = 0; iter < 40; iter++) {
        char text[4096];
        /* Bandwidth-bound sizes (dim 0 in multiples of 2^16) every other task. */
        random_task(text, sizeof(text), 8, topo->ngpus, iter % 2 ? 65536 : 1);
        mc_task_t *t = task_of(text);
        mc_bound_t b;
        if (mc_task_bound(t, topo, &b, &err) != MC_OK)
            fail_msg("%s\n%s", text, err.msg);
        for (size_t k = 0; k < sizeof(strategies) / sizeof(strategies[0]) && t->npieces; k++) {
            mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
            mc_sched_t *s = NULL;
            mc_sim_result_t res;
            if (mc_synth(strategies[k], t, topo, &opts, &s, &err) != MC_OK)
                continue; /* a strategy's own failure is its tests' business */
            if (mc_sim_run(s, topo, &res, &err) != MC_OK)
                fail_msg("%s\n%s: %s", text, strategies[k], err.msg);
            if (res.makespan_s < b.seconds * (1 - 1e-9))
                fail_msg("%s\n%s simulated %.9g s, below the bound %.9g s (%s)", text,
                         strategies[k], res.makespan_s, b.seconds, mc_bound_kind_str(b.binding));
            timed++;
            mc_sim_result_free(&res);
            mc_sched_free(s);
        }
        mc_task_free(t);
    }
    /* The comparison must really have happened for most tasks. */
    assert_true(timed >= 20);
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_never_beats_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
