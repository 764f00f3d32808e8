/* Tests for the host-relay and reach terms of the lower bound (layout/bound_relay_hosts.c,
 * layout/bound_reach.c, docs/synthesis.md "Lower bound"): bytes held on one host reach each other
 * host either straight from it, all over its links out, or through a third host after two network
 * waits; a GPU's incoming links carry nothing before the holders' bytes can reach their far ends.
 * Closed forms on four DGX H100 hosts and an MI300X box; random tasks from one host to several
 * others, and random small tasks on AMD boxes, timed by every strategy that takes them, never
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
#include "tests/unit/test_bound_check.h"
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

/* RCCL's MI300X box (topologies/rccl-topo_8p_940.xml): 8 GPUs, each joined to each other by
 * one xGMI link of 48e9 B/s, every pair routed over it; a message waits d = 3.4 + 0.5 us. 4 MiB
 * from GPU 0 to the others: the link from GPU 0 into a GPU carries bytes from d on, the six from
 * the other GPUs from 2d on, once those hold some, so S <= 48e9 ((T - d) + 6 (T - 2d)):
 * T = (S + 13 d 48e9) / (7 x 48e9) = 19.73 us, where the GPU's links alone give S / 336e9 + d =
 * 16.38 us. */
static void test_reach_closed_form(void **state)
{
    (void)state;
    const double S = 4194304, d = 3.9e-6, bw = 48e9;
    mc_topo_t *topo = load_ok("topologies/rccl-topo_8p_940.xml");
    mc_bound_t b = task_bound(
        topo, "mesh S={g:1}@0\nmesh D={g:7}@1..7\nmove f32[1024,1024] S[_,_] -> D[_,_]\n");
    assert_int_equal(b.binding, MC_BOUND_REACH);
    assert_true(fabs(b.seconds - (S + 13 * d * bw) / (7 * bw)) < 1e-15);
    assert_true(fabs(b.reach_s - S / (7 * bw)) < 1e-15);
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

/* Random small tasks on any of the topo's GPUs. */
static void small_task(const mc_topo_t *topo, char *text, size_t len)
{
    random_task(text, len, topo->ngpus, topo->ngpus, 1 << 20);
}

/* iters tasks of gen on each of the topologies, every strategy's schedule timed and never below
 * the bound; *timed counts the schedules, *binds the tasks where the term kind (host-relay or
 * reach, whose bytes' time is *term_s) sets the bound. */
static void never_beaten(const char *const *topos, size_t ntopos, int iters,
                         void (*gen)(const mc_topo_t *, char *, size_t), mc_bound_kind_t kind,
                         int *timed, int *binds)
{
    static const char *strategies[] = {"p2p", "alpa-bcast", "nccl-ring", "meshcast"};
    *timed = *binds = 0;
    for (size_t k = 0; k < ntopos; k++) {
        mc_topo_t *topo = load_ok(topos[k]);
        for (int iter = 0; iter < iters; iter++) {
            char text[4096];
            gen(topo, text, sizeof text);
            mc_task_t *t = task_of(text);
            mc_bound_t b;
            mc_err_t err = {0};
            if (mc_task_bound(t, topo, &b, &err) != MC_OK)
                fail_msg("%s\n%s", text, err.msg);
            double term_s = kind == MC_BOUND_REACH ? b.reach_s : b.host_relay_s;
            *binds += b.binding == kind || (b.where == b.term_where[kind] && term_s > 0 &&
                                            fabs(b.seconds - term_s - b.latency_s) < 1e-15);
            for (size_t s = 0; s < sizeof strategies / sizeof strategies[0] && t->npieces; s++)
                *timed += check_strategy(strategies[s], t, topo, &b, text);
            mc_task_free(t);
        }
        mc_topo_free(topo);
    }
}

/* Random tasks from one host to several on hosts with a NIC per GPU, where the host-relay term
 * binds on many. */
static void test_sim_never_beats_bound(void **state)
{
    (void)state;
    static const char *const topos[] = {"topologies/dgx-h100-x4.xml", "topologies/dgx-a100-x4.xml"};
    int timed, binds;
    never_beaten(topos, 2, 6, host_to_hosts, MC_BOUND_HOST_RELAY, &timed, &binds);
    print_message("timed %d schedules; the host-relay term bound %d of 12 tasks\n", timed, binds);
    assert_true(timed >= 40);
    assert_true(binds >= 3);
}

/* Random tasks of at most 1 MiB per tensor on the MI250 and MI100 boxes (partial xGMI meshes)
 * and the MI300X box, where the reach term binds on some. */
static void test_reach_never_beaten(void **state)
{
    (void)state;
    static const char *const topos[] = {"topologies/rccl-topo_8p1h.xml",
                                        "topologies/rccl-topo_4p3l.xml",
                                        "topologies/rccl-topo_8p_940.xml"};
    int timed, binds;
    never_beaten(topos, 3, 8, small_task, MC_BOUND_REACH, &timed, &binds);
    print_message("timed %d schedules; the reach term bound %d of 24 tasks\n", timed, binds);
    assert_true(timed >= 50);
    assert_true(binds >= 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closed_forms),
        cmocka_unit_test(test_reach_closed_form),
        cmocka_unit_test(test_sim_never_beats_bound),
        cmocka_unit_test(test_reach_never_beaten),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
