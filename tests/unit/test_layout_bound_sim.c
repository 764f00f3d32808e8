/* The flow, cut and lp terms must stay lower bounds where they bind most, on direct-connect
 * hardware: random tasks on the DGX-1 hybrid cube-mesh, the 8-GPU PCIe box and two DGX-1 under
 * one switch, scheduled by p2p, by meshcast (Z3 bounded by an rlimit) and by the baselines that
 * keep NCCL's 8 chunks in flight (alpa-bcast between disjoint meshes, collectives on one) and
 * timed by the simulator, never finish before mc_task_bound says they can; and skipping what cannot exceed
 * the larger terms (mc_task_bound: cut sets, flow pairs, the lp term's simplex) never changes the
 * bound, its term, where it binds nor its latency from what the full search
 * (mc_task_bound_terms) finds. The lp term, which rarely binds on random tasks, is checked on
 * two bench cases where it does. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "layout/layout.h"
#include "sim/sim.h"
#include "synth/synth.h"
#include "tests/unit/test_bound_check.h"
#include "tests/unit/test_layout_random.h"

static void test_sim_never_beats_bound_direct(void **state)
{
    static const char *topos[] = {"topologies/dgx1-v100-hybrid-cube-mesh-topo.xml",
                                  "topologies/pcie-rtx3090x8-1nic-topo.xml",
                                  "topologies/dgx1-x2.xml"};
    static const char *strategies[] = {"p2p", "meshcast", "alpa-bcast", "collectives"};
    int timed = 0, new_terms = 0, lp_skipped = 0, inflight = 0;
    for (size_t k = 0; k < sizeof(topos) / sizeof(topos[0]); k++) {
        mc_topo_t *topo = NULL;
        mc_err_t err = {0};
        if (mc_topo_load(topos[k], &topo, &err) != MC_OK)
            fail_msg("%s", err.msg);
        for (int iter = 0; iter < 30; iter++) {
            char text[4096];
            random_task(text, sizeof(text), topo->ngpus, topo->ngpus, 1 << 20);
            mc_task_t *t = task_of(text);
            mc_bound_t b, all;
            if (mc_task_bound(t, topo, &b, &err) != MC_OK ||
                mc_task_bound_terms(t, topo, &all, &err) != MC_OK)
                fail_msg("%s\n%s", text, err.msg);
            if (all.seconds != b.seconds || all.binding != b.binding || all.where != b.where ||
                all.latency_s != b.latency_s)
                fail_msg("%s\nfull search %a s (%s at %d), skipping %a s (%s at %d)", text,
                         all.seconds, mc_bound_kind_str(all.binding), all.where, b.seconds,
                         mc_bound_kind_str(b.binding), b.where);
            new_terms += b.binding >= MC_BOUND_FLOW && b.binding <= MC_BOUND_LP;
            lp_skipped += all.term_where[MC_BOUND_LP] >= 0 && b.term_where[MC_BOUND_LP] < 0;
            for (size_t s = 0; s < sizeof(strategies) / sizeof(strategies[0]) && t->npieces; s++) {
                int ok = check_strategy(strategies[s], t, topo, &b, text);
                timed += ok;
                inflight += ok && s >= 2;
            }
            mc_task_free(t);
        }
        mc_topo_free(topo);
    }
    /* The comparison must really have happened, and on tasks where the new terms bind. */
    assert_true(timed >= 120);
    assert_true(inflight >= 20);
    assert_true(new_terms >= 20);
    /* ... and where mc_task_bound left the lp term's simplex unsolved because a feasible point
     * showed it could not exceed the other terms (34 of these 90 tasks), nothing changed. */
    assert_true(lp_skipped >= 20);
}

/* Where the lp term reaches the bound (two `intra` bench cases on one DGX H100: a gather over
 * one mesh axis and tensor parallel to fully sharded; it binds alone where the GPUs' PCIe links,
 * which no route between two GPUs of the host takes, count, and ties ingress where they do not),
 * every strategy's simulated time stays above it. */
static void test_sim_never_beats_lp(void **state)
{
    static const char *tasks[] = {
        "mesh M={a:2,b:2,c:2}@0..7\nmove f32[256,256,256] M[(b,c),a,_] -> M[(b,c),_,_]\n",
        "mesh M={dp:2,tp:4}@0..7\nmove bf16[11008,4096] M[tp,_] -> M[(dp,tp),_]\n"};
    static const char *strategies[] = {"p2p", "p2p-lb", "xla", "collectives", "meshcast"};
    mc_topo_t *topo = NULL;
    mc_err_t err = {0};
    if (mc_topo_load("topologies/dgx-h100-x1.xml", &topo, &err) != MC_OK)
        fail_msg("%s", err.msg);
    for (size_t k = 0; k < sizeof(tasks) / sizeof(tasks[0]); k++) {
        mc_task_t *t = task_of(tasks[k]);
        mc_bound_t b, all;
        if (mc_task_bound(t, topo, &b, &err) != MC_OK ||
            mc_task_bound_terms(t, topo, &all, &err) != MC_OK)
            fail_msg("%s\n%s", tasks[k], err.msg);
        /* the lp term is solved LP_MARGIN (1e-6) low, so it ties within that */
        double top = fmax(fmax(all.ingress_s, all.egress_s), fmax(all.cut_s, all.flow_s));
        assert_int_equal(all.term_where[MC_BOUND_LP], 0);
        assert_true(all.lp_s >= top * (1 - 1e-5));
        int timed = 0;
        for (size_t s = 0; s < sizeof(strategies) / sizeof(strategies[0]); s++)
            timed += check_strategy(strategies[s], t, topo, &b, tasks[k]);
        assert_int_equal(timed, 5);
        mc_task_free(t);
    }
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_never_beats_bound_direct),
        cmocka_unit_test(test_sim_never_beats_lp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
