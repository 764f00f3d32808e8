/* Tests for the host-relay term of the lower bound (layout/bound_relay_hosts.c, docs/synthesis.md
 * "Lower bound", "Relays between hosts"): bytes held on one host reach each other host either
 * straight from it, all over its links out, or through a third host after two network waits.
 * Closed forms on four DGX H100 hosts, and random tasks from one host to several others, timed
 * by every strategy that takes them, never finish before the bound. */
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

/* Four DGX H100 hosts (topologies/dgx-h100-x4.xml): each host's GPUs reach the network at C =
 * 8 x 48e9 B/s (their PCIe links to the NICs), in and out; nothing crosses between hosts before
 * c = 20 us (test_between_hosts in test_layout_bound_latency.c). S bytes from GPU 0 to every
 * other GPU: the three other hosts need S each. 3S > c C, so some bytes are relayed by a third
 * host, and with all three hosts taking relayed bytes the term is
 * c + (3S + 3 c C) / (3C + C) = 3S / 4C + c (1 + 3/4): 43.19 us for S = 4 MiB, against 20 +
 * 4.4 (1 - 48/384) + S / C = 34.8 us from the cuts. Host 0's eight shards of 4 MiB are held on
 * one host too: the same term. */
/* GPUs 1-3 of host 0 each send S bytes to GPU 0 of hosts 1-3. Every route from host 0 to those
 * GPUs crosses host 0's NIC on rail 0 (the sender's side takes the receiver's rail), behind GPU
 * 0's PCIe link of cap = 48e9 B/s; what does not go that way is relayed inside the receiving
 * host, no sooner than c + w (w = 4.4 us, NVLink alpha and two 0.5 us links) and into a GPU's
 * links (in = 370.8e9 + 48e9 B/s). For S = 64 KiB the link moves all 3S within w: c + 3S / cap
 * = 24.10 us (the cuts: 21.37 us); for S = 256 KiB some is relayed: c + w + (3S - cap w) / (3 in
 * + cap) = 24.84 us. The term is found by bisection, its bytes rounded down. */
static void rail_closed_forms(const mc_topo_t *topo)
{
    const double c = 20e-6, w = 4.4e-6, cap = 48e9, in = 370.8e9 + 48e9;
    mc_bound_t b = task_bound(topo, "mesh A={g:3}@1..3\nmesh B={g:3}@[8,16,24]\n"
                                    "move f32[48,1024] A[g,_] -> B[g,_]\n");
    assert_true(fabs(b.seconds - (c + 3 * 65536 / cap)) < 1e-10);
    assert_int_equal(b.term_where[MC_BOUND_HOST_RELAY], 0);
    b = task_bound(topo, "mesh A={g:3}@1..3\nmesh B={g:3}@[8,16,24]\n"
                         "move f32[192,1024] A[g,_] -> B[g,_]\n");
    assert_true(fabs(b.seconds - (c + w + (3 * 262144 - cap * w) / (3 * in + cap))) < 1e-10);
}

static void test_closed_forms(void **state)
{
    (void)state;
    const double S = 4194304, C = 384e9, c = 20e-6;
    mc_topo_t *topo = load_ok("topologies/dgx-h100-x4.xml");
    mc_bound_t b = task_bound(
        topo, "mesh S={g:1}@0\nmesh D={g:31}@1..31\nmove f32[1024,1024] S[_,_] -> D[_,_]\n");
    double want = c + (3 * S + 3 * c * C) / (4 * C);
    assert_true(fabs(b.seconds - want) < 1e-15);
    assert_true(fabs(b.host_relay_s - 3 * S / (4 * C)) < 1e-15);
    assert_true(fabs(b.latency_s - c * 1.75) < 1e-15);
    assert_int_equal(b.binding, MC_BOUND_LATENCY);
    assert_int_equal(b.where, 0);
    assert_int_equal(b.term_where[MC_BOUND_HOST_RELAY], 0);
    b = task_bound(topo,
                   "mesh A={g:8}@0..7\nmesh B={h:3,g:8}@8..31\nmove f32[1024,1024] A[g,_] -> "
                   "B[_,_]\n");
    assert_true(fabs(b.seconds - want) < 1e-15);
    rail_closed_forms(topo);
    mc_topo_free(topo);
}

/* A task from GPUs of one host to GPUs of two or more others: holders a run of the host's GPUs
 * (the tensor replicated on them or sharded over them), destinations every GPU or the first few
 * of each chosen host, or one time in three the GPU of one index on each (one rail), the tensor
 * replicated or sharded over them; 64 KiB to 8 MiB. */
static void host_to_hosts(const mc_topo_t *topo, char *text, size_t len)
{
    int first, per = mc_topo_host_gpus(topo, 0, &first), nh = topo->nhosts;
    int a = rnd(nh), k = 1 + rnd(per), start = rnd(per - k + 1);
    int ndh = 2 + rnd(nh - 2), dests[256], nd = 0, rail = rnd(3) ? -1 : rnd(per);
    int rows = (16 << 3 * rnd(3)) << rnd(2); /* 64 KiB, 512 KiB or 4 MiB, or twice that */
    for (int i = 1; i <= ndh; i++) {
        int h = (a + i) % nh, take = rail >= 0 ? 1 : rnd(2) ? per : 1 + rnd(per);
        for (int g = 0; g < take; g++)
            dests[nd++] = h * per + (rail >= 0 ? rail : g);
    }
    int off = snprintf(text, len, "mesh S={g:%d}@%d..%d\nmesh D={g:%d}@[", k, a * per + start,
                       a * per + start + k - 1, nd);
    for (int i = 0; i < nd; i++)
        off += snprintf(text + off, len - (size_t)off, "%s%d", i ? "," : "", dests[i]);
    snprintf(text + off, len - (size_t)off, "]\nmove f32[%d,1024] S[%s,_] -> D[%s,_]\n", rows,
             rnd(2) ? "g" : "_", rnd(4) ? "_" : "g");
}

/* Random tasks from one host to several on hosts with a NIC per GPU, where the term binds on
 * many: no strategy's schedule is simulated faster than the bound. */
static void test_sim_never_beats_bound(void **state)
{
    (void)state;
    static const char *topos[] = {"topologies/dgx-h100-x4.xml", "topologies/dgx-a100-x4.xml"};
    static const char *strategies[] = {"p2p", "alpa-bcast", "nccl-ring", "meshcast"};
    int timed = 0, binds = 0;
    for (size_t k = 0; k < sizeof topos / sizeof topos[0]; k++) {
        mc_topo_t *topo = load_ok(topos[k]);
        for (int iter = 0; iter < 6; iter++) {
            char text[4096];
            host_to_hosts(topo, text, sizeof text);
            mc_task_t *t = task_of(text);
            mc_bound_t b;
            mc_err_t err = {0};
            if (mc_task_bound(t, topo, &b, &err) != MC_OK)
                fail_msg("%s\n%s", text, err.msg);
            binds += b.where == b.term_where[MC_BOUND_HOST_RELAY] && b.host_relay_s > 0 &&
                     fabs(b.seconds - b.host_relay_s - b.latency_s) < 1e-15;
            for (size_t s = 0; s < sizeof strategies / sizeof strategies[0]; s++) {
                mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
                opts.rlimit = 200000;
                opts.budget_s = 1000; /* only the rlimit may stop Z3 */
                mc_sched_t *sc = NULL;
                mc_sim_result_t res;
                if (mc_synth(strategies[s], t, topo, &opts, &sc, &err) != MC_OK)
                    continue;
                if (mc_sim_run(sc, topo, &res, &err) != MC_OK)
                    fail_msg("%s\n%s on %s: %s", text, strategies[s], topo->source, err.msg);
                if (res.makespan_s < b.seconds * (1 - 1e-9))
                    fail_msg("%s\n%s on %s simulated %.9g s, below the bound %.9g s", text,
                             strategies[s], topo->source, res.makespan_s, b.seconds);
                timed++;
                mc_sim_result_free(&res);
                mc_sched_free(sc);
            }
            mc_task_free(t);
        }
        mc_topo_free(topo);
    }
    print_message("timed %d schedules; the host-relay term bound %d of 12 tasks\n", timed, binds);
    assert_true(timed >= 40);
    assert_true(binds >= 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closed_forms),
        cmocka_unit_test(test_sim_never_beats_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
