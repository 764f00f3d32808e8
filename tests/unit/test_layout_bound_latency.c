/* Tests for the latency part of the lower bound (layout/bound.c, docs/synthesis.md "Latency in
 * the bound"): every message waits the largest alpha of its route's link kinds plus the sum of
 * its links' latencies before its bytes move, so a term adds the least such wait of the links its
 * bytes must cross, counted with the least latency of a path from a GPU to that link and from it
 * to a GPU. Closed forms on an NVSwitch host and between two hosts of a rail-optimized pod, where
 * one small send is simulated exactly at the bound's latency plus its bytes' time; and random
 * small tasks on NVSwitch hosts and pods, scheduled by every strategy that takes them, never
 * finish before the bound. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "layout/layout.h"
#include "sim/sim.h"
#include "synth/synth.h"
#include "tests/unit/test_layout_random.h"
#include "tests/unit/test_topo_helpers.h"

/* Simulated time of strategy's schedule for text (Z3 bounded by an rlimit); -1 when the strategy
 * does not take the task. */
static double simulated(const char *strategy, const mc_topo_t *topo, const char *text)
{
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    opts.rlimit = 200000;
    opts.budget_s = 1000; /* only the rlimit may stop Z3 */
    mc_task_t *t = task_of(text);
    mc_sched_t *s = NULL;
    mc_sim_result_t res;
    mc_err_t err = {0};
    double makespan = -1;
    if (mc_synth(strategy, t, topo, &opts, &s, &err) == MC_OK) {
        if (mc_sim_run(s, topo, &res, &err) != MC_OK)
            fail_msg("%s\n%s on %s: %s", text, strategy, topo->source, err.msg);
        makespan = res.makespan_s;
        mc_sim_result_free(&res);
        mc_sched_free(s);
    }
    mc_task_free(t);
    return makespan;
}

/* DGX H100: every route between two GPUs is GPU -> NVSwitch -> GPU, two NVLinks of 0.5 us
 * (mc_topo_default_latency), NVLink alpha 3.4 us. Nothing reaches GPU 1 before 3.4 + 0.5 + 0.5
 * us: the least wait into it over its link from the NVSwitch, plus the least latency of a link
 * from a GPU into the NVSwitch. 64 bytes to every other GPU: that wait binds. */
static void test_nvswitch_host(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok("topologies/dgx-h100-x1.xml");
    mc_bound_t b =
        task_bound(topo, "mesh S={g:1}@0\nmesh D={g:7}@1..7\nmove f32[16] S[_] -> D[_]\n");
    assert_int_equal(b.binding, MC_BOUND_LATENCY);
    assert_true(fabs(b.latency_s - 4.4e-6) < 1e-15);
    assert_true(fabs(b.seconds - (b.ingress_s + 4.4e-6)) < 1e-15);
    mc_topo_free(topo);
}

/* DGX H100 pod: GPU 0 -> GPU 8 (next host) routes GPU -> PCIe switch -> NIC -> port -> rail
 * switch -> port -> NIC -> PCIe switch -> GPU: two PCIe links of 0.5 us each side, the NIC to port
 * link and the two network links of 1 us (docs/topology-format.md), network alpha 14 us. The
 * links between hosts are port -> rail switch and back; the least path from a GPU to a port is
 * 0.5 + 0.5 + 1 us, from a rail switch to a GPU 1 + 1 + 0.5 + 0.5 us: nothing crosses between
 * hosts before 14 + 2 + 1 + 3 = 20 us. One 64-byte send from GPU 0 to GPU 8 takes exactly that
 * plus its bytes over the route's 48e9 B/s PCIe bottleneck in the simulator, and the bound is
 * that wait plus the bytes over the host's capacity: the two within the bytes' time. */
static void test_between_hosts(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok("topologies/dgx-h100-x4.xml");
    const char *text = "mesh S={g:1}@0\nmesh D={g:1}@8\nmove f32[16] S[_] -> D[_]\n";
    mc_bound_t b = task_bound(topo, text);
    assert_int_equal(b.binding, MC_BOUND_LATENCY);
    assert_true(fabs(b.latency_s - 20e-6) < 1e-15);
    double t = simulated("p2p", topo, text);
    assert_true(fabs(t - (20e-6 + 64 / 48e9)) < 1e-15);
    assert_true(b.seconds <= t && t - b.seconds <= 64 / 48e9);
    mc_topo_free(topo);
}

/* Four DGX H100, each under a leaf of its own, with two spines at 4:1: a leaf's uplinks carry
 * 8 x 50e9 / 4 = 100e9 B/s, the most that flows from GPU 20 (host 2) into GPU 0 (host 0). Every
 * route between them crosses the network, so nothing reaches GPU 0 before the 20 us between
 * hosts (test_between_hosts): the flow term is that wait plus 8 MiB over 100e9 B/s (before
 * session 33 it added the least wait of GPU 20's own links, 4.4 us). One send crosses one
 * uplink of 50e9 B/s (197.8 us); meshcast's trees over both come within 1.2 of the bound. */
static void test_flow_after_crossing(void **state)
{
    (void)state;
    static const char *xml =
        "<cluster version=\"1\"><nodes type=\"dgx-h100\" count=\"4\"/><network>"
        "<leaves hosts=\"1\"/><spines count=\"2\" oversubscription=\"4:1\"/></network></cluster>";
    mc_topo_t *topo = load_text_ok(xml);
    const char *text = "mesh S={g:1}@20\nmesh D={g:1}@0\nmove f32[2048,1024] S[_,_] -> D[_,_]\n";
    mc_bound_t b = task_bound(topo, text);
    assert_int_equal(b.binding, MC_BOUND_FLOW);
    assert_true(fabs(b.flow_s - 8388608 / 100e9) < 1e-12);
    assert_true(fabs(b.latency_s - 20e-6) < 1e-15);
    assert_true(simulated("p2p", topo, text) >= b.seconds);
    double t = simulated("meshcast", topo, text);
    assert_true(b.seconds <= t && t <= 1.2 * b.seconds);
    mc_topo_free(topo);
}

/* Two OCI H100 hosts (8 NICs of 45e9 B/s a host, each behind its GPU's 48e9 B/s PCIe link; NVLink
 * alpha 3.4 us and two 0.5 us links between two GPUs of a host; nothing crosses between hosts
 * before 14 + 6 us). GPU 8 needs S bytes from host 0: they enter host 1 at 360e9 B/s at most,
 * reach GPU 8 straight over its PCIe link at 48e9 B/s at most, and what another GPU of host 1
 * relays waits 4.4 us after that GPU got it. So 4 MiB take at least 20 + 4.4 (1 - 48/360) us plus
 * S / 360e9 (the host cut alone: 20 us plus S / 360e9). 128 KiB, which GPU 9's PCIe link moves
 * within the relay's wait, take 21 us plus S / 48e9: the route from GPU 0 to GPU 9 passes GPU 1's
 * NVLink hop (PXN) and waits 14 us plus 7 us of latency, and what GPU 9 gets from its own host's
 * GPUs waits 4.4 us more after they received it, at 20 us at the earliest (the reach term,
 * test_layout_bound_relay.c; the relay's wait alone says 20 us plus S / 48e9). */
static void test_relay_wait(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok("topologies/oci-h100-x2.xml");
    mc_bound_t b = task_bound(
        topo, "mesh S={g:1}@0\nmesh D={g:8}@8..15\nmove f32[1024,1024] S[_,_] -> D[_,_]\n");
    double want = 20e-6 + 4.4e-6 * (1 - 48.0 / 360.0) + 4194304 / 360e9;
    assert_true(fabs(b.seconds - want) < 1e-12);
    b = task_bound(topo,
                   "mesh S={g:1}@0\nmesh D={g:8}@8..15\nmove f32[256,128] S[_,_] -> D[_,_]\n");
    assert_true(fabs(b.seconds - (21e-6 + 131072 / 48e9)) < 1e-12);
    mc_topo_free(topo);
}

/* Random tasks of at most 1 MiB per tensor (where the latency part weighs most) on an NVSwitch
 * host, meshcast and the baselines; on the 4-host pod, the baselines (the synthesis of 32-GPU
 * tasks is the bench's business); on two OCI H100 hosts, all of them, where the relay's wait binds
 * on some. */
static void test_sim_never_beats_bound_nvswitch(void **state)
{
    (void)state;
    static const struct {
        const char *topo;
        int meshcast;
    } cases[] = {{"topologies/dgx-h100-x1.xml", 1},
                 {"topologies/dgx-h100-x4.xml", 0},
                 {"topologies/oci-h100-x2.xml", 1}};
    static const char *strategies[] = {"p2p", "alpa-bcast", "nccl-ring", "meshcast"};
    int timed = 0, latency_binds = 0, relay_binds = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        mc_topo_t *topo = load_ok(cases[k].topo);
        for (int iter = 0; iter < 12; iter++) {
            char text[4096];
            random_task(text, sizeof text, topo->ngpus, topo->ngpus, 1 << 20);
            mc_task_t *t = task_of(text);
            mc_bound_t b;
            mc_err_t err = {0};
            if (mc_task_bound(t, topo, &b, &err) != MC_OK)
                fail_msg("%s\n%s", text, err.msg);
            int moves = t->npieces > 0;
            mc_task_free(t);
            latency_binds += b.binding == MC_BOUND_LATENCY;
            /* the relay's wait (test_relay_wait) binds: a wait above the 20 us between hosts */
            relay_binds += b.latency_s > 20e-6 * (1 + 1e-9);
            for (size_t s = 0; s < sizeof strategies / sizeof strategies[0] && moves; s++) {
                if (!strcmp(strategies[s], "meshcast") && !cases[k].meshcast)
                    continue;
                double m = simulated(strategies[s], topo, text);
                if (m >= 0 && m < b.seconds * (1 - 1e-9))
                    fail_msg("%s\n%s on %s simulated %.9g s, below the bound %.9g s (%s)", text,
                             strategies[s], topo->source, m, b.seconds,
                             mc_bound_kind_str(b.binding));
                timed += m >= 0;
            }
        }
        mc_topo_free(topo);
    }
    /* the comparison happened (57 schedules), and on tasks where the latency part binds (3) */
    assert_true(timed >= 50);
    assert_true(latency_binds >= 3);
    assert_true(relay_binds >= 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvswitch_host),
        cmocka_unit_test(test_between_hosts),
        cmocka_unit_test(test_flow_after_crossing),
        cmocka_unit_test(test_relay_wait),
        cmocka_unit_test(test_sim_never_beats_bound_nvswitch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
