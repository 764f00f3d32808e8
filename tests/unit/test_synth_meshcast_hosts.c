/* Tests for schedules where several hosts send at once and for small broadcasts between hosts
 * (docs/synthesis.md, "Schedules between hosts"): on 4 DGX H100 hosts, each host's replicated
 * 32 MiB piece to 2 GPUs of each other host (intra's x4-paper-replace), the striped hub trees
 * bring the whole strategy within 1.20 of the bound (1.58 before); the stripes are taken back
 * where their split is above the other trees' fractional optimum (two DGX-1 boxes) and kept where
 * it is not (two MI300X boxes, two MI250 boxes); a 4 MiB broadcast over two OCI H100 boxes takes the split
 * trees, within 1.6 of its bound (2.05 before); small shards gathered over six MI300X boxes
 * take the spread trees (one network hop from the root's host to each other); shards for two
 * hosts under an oversubscribed leaf relay through its third host, which comes in over the other
 * spine; an all-gather over four p4d boxes, whose balanced plan is simulated apart, repeats
 * to the byte; uneven shards over seven MI300X boxes, whose components repeat, take a plan
 * other than the solved one; over two hosts of bridged H100 PCIe GPUs, an all-gather whose
 * priced plan is too large to simulate is timed and won in a coarser form, and an all-to-all
 * sends bytes between the sockets of one host through the other host. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"
#include "test_synth_helpers.h"
#include "test_task_helpers.h"
#include "test_topo_helpers.h"

static mc_task_t *replace_task(void)
{
    return task_of("M={X:2,Y:2,Z:4,W:2}@0..31", "N={X:2,Y:2,Z:4,W:2}@0..31",
                   "bf16[8192,8192] M[(X,Y),_] -> N[Z,_]");
}

/* Four hosts each send their piece over all 8 rails: hub trees (each host's NICs forward 2/3 of
 * a stripe of each other piece, as in a chain, but two network hops deep instead of three). */
static void test_replace_near_bound(void **state)
{
    (void)state;
    char plan[64];
    synth_within("topologies/dgx-h100-x4.xml", replace_task(), 1.20, plan);
}

/* 4 MiB from GPU 0 to the other 15 GPUs of two OCI H100 boxes: the root's host and the other
 * apart (the network trees straight from the root by each rail's GPU while the host's relay
 * trees use the root's NVLink during the network's message wait). */
static void test_small_broadcast_split(void **state)
{
    (void)state;
    char plan[64];
    synth_within("topologies/oci-h100-x2.xml",
                 task_of("S={g:1}@0", "D={g:15}@1..15", "f32[1024,1024] S[_,_] -> D[_,_]"), 1.6,
                 plan);
    assert_true(strncmp(plan, "split", 5) == 0);
}

/* The stripe split of a broadcast of 64 MiB over two DGX-1 boxes loads its busiest link for
 * 5.59 ms where the other trees, priced ones among them, reach 2.74 ms: the stripes are taken
 * back; over two MI300X boxes the split (0.20 ms) beats the others (0.70 ms) and stays; over two
 * MI250 boxes it is the fractional optimum (0.70 ms; 3.6 ms on a PCIe link between the root's
 * switches before the root host's trees were planned together, and taken back) and stays. */
static void test_unstripe(void **state)
{
    (void)state;
    static const struct {
        const char *topo;
        int striped;
    } cases[] = {{"topologies/mi250-x2.xml", 1}, {"topologies/mi300x-x2.xml", 1}, {"topologies/dgx1-x2.xml", 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        mc_topo_t *topo = load_ok(cases[k].topo);
        mc_task_t *task =
            task_of("S={g:1}@0", "D={g:15}@1..15", "f32[4096,4096] S[_,_] -> D[_,_]");
        mc_shares_t sh = {0};
        mc_cands_t cs = {0};
        mc_err_t err = {0};
        char taken[64] = {0};
        int units = 0, first = 0, count;
        mc_shares_build(task, topo, &sh);
        assert_int_equal(sh.n, 1);
        mc_piece_t view = task->pieces[sh.s[0].piece];
        assert_int_equal(mc_cands_add_share(&cs, task, topo, &sh.s[0], 0, 0, 0, &err), MC_OK);
        assert_int_equal(mc_cands_add_rails(&cs, topo, 0, &view, 0, 1, 1, taken, &units, &err),
                         MC_OK);
        assert_true(units > 1);
        sh.s[0].fine = units;
        count = cs.n;
        double *frac[MC_SPLITS] = {NULL};
        mc_price_stats_t ps;
        assert_int_equal(mc_cands_price(&cs, task, topo, &sh, &first, &count, 0, frac, &ps, &err),
                         MC_OK);
        mc_rails_unstripe(&cs, task, topo, &sh, &first, &count, ps.frac_s);
        for (int i = 0; i < MC_SPLITS; i++)
            free(frac[i]);
        assert_int_equal(sh.s[0].fine > 1, cases[k].striped);
        double sum = 0;
        for (int c = 0; c < cs.n; c++)
            sum += cs.c[c].stripe;
        assert_true(cases[k].striped ? sum > 1 - 1e-9 : sum == 0);
        mc_cands_free(&cs);
        mc_shares_free(&sh);
        mc_task_free(task);
        mc_topo_free(topo);
    }
}

/* Whether cs holds a tree that crosses hosts as one chain entering hosts[0..n) in that order. */
static int has_chain(const mc_cands_t *cs, const mc_topo_t *topo, const int *hosts, int n)
{
    for (int c = 0; c < cs->n; c++) {
        int k = 0, last = cs->c[c].root, chain = 1;
        for (int e = 0; e < cs->c[c].nedges && chain; e++) {
            int a = cs->c[c].parent[e], b = cs->c[c].child[e];
            if (mc_topo_gpu_host(topo, a) == mc_topo_gpu_host(topo, b))
                continue;
            chain = a == last && k < n && mc_topo_gpu_host(topo, b) == hosts[k];
            last = b;
            k++;
        }
        if (chain && k == n)
            return 1;
    }
    return 0;
}

/* An all-gather over four p4d boxes: the chains across hosts of the shard on host 2 enter hosts
 * 0, 1, 3 in ascending order, or, wrapped around (the balanced synthesis), 3, 0, 1: with every
 * host sending, each host's NICs then forward the shards of all other hosts but one. */
static void test_wrapped_chains(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok("topologies/p4d-x4.xml");
    mc_task_t *task = task_of("M={g:32}@0..31", "N={g:1}@0", "f32[4096,4096] M[g,_] -> M[_,_]");
    mc_shares_t sh = {0};
    mc_err_t err = {0};
    mc_shares_build(task, topo, &sh);
    int share = -1;
    for (int i = 0; i < sh.n; i++)
        if (task->pieces[sh.s[i].piece].holders[0] == 16)
            share = i;
    assert_true(share >= 0);
    for (int wrap = 0; wrap <= 1; wrap++) {
        mc_cands_t cs = {0};
        assert_int_equal(mc_cands_add_share(&cs, task, topo, &sh.s[share], 0, 0, wrap, &err),
                         MC_OK);
        assert_int_equal(has_chain(&cs, topo, (int[]){0, 1, 3}, 3), !wrap);
        assert_int_equal(has_chain(&cs, topo, (int[]){3, 0, 1}, 3), wrap);
        mc_cands_free(&cs);
    }
    mc_shares_free(&sh);
    mc_task_free(task);
    mc_topo_free(topo);
}

/* Whether cs holds a tree that leaves its root's host through n different GPUs, each network
 * hop from the root's host into another host (one network hop deep). */
static int has_spread(const mc_cands_t *cs, const mc_topo_t *topo, int n)
{
    for (int c = 0; c < cs->n; c++) {
        int rh = mc_topo_gpu_host(topo, cs->c[c].root), k = 0, ok = 1;
        int *from = mc_xcalloc((size_t)topo->ngpus, sizeof(int));
        int *into = mc_xcalloc((size_t)topo->nhosts, sizeof(int));
        for (int e = 0; e < cs->c[c].nedges && ok; e++) {
            int a = cs->c[c].parent[e], b = cs->c[c].child[e];
            int ha = mc_topo_gpu_host(topo, a), hb = mc_topo_gpu_host(topo, b);
            if (ha == hb)
                continue;
            ok = ha == rh && !from[a]++ && !into[hb]++;
            k++;
        }
        free(from);
        free(into);
        if (ok && k == n)
            return 1;
    }
    return 0;
}

/* A piece on GPU 3 of four DGX H100 hosts, needed by one GPU of each other host: the share's
 * candidates cross the hosts as a chain; the spread tree (raced for small shares) leaves through
 * three GPUs of host 0 instead, each NIC sending the piece once, one network hop deep. */
static void test_spread_over_nics(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok("topologies/dgx-h100-x4.xml");
    mc_task_t *task = task_of("S={g:1}@3", "D={g:3}@[8,16,24]", "f32[1024,1024] S[_,_] -> D[_,_]");
    mc_shares_t sh = {0};
    mc_cands_t cs = {0};
    mc_err_t err = {0};
    mc_shares_build(task, topo, &sh);
    assert_int_equal(sh.n, 1);
    assert_int_equal(mc_cands_add_share(&cs, task, topo, &sh.s[0], 0, 0, 0, &err), MC_OK);
    assert_true(has_chain(&cs, topo, (int[]){1, 2, 3}, 3));
    assert_false(has_spread(&cs, topo, 3));
    int n = cs.n;
    assert_int_equal(mc_cands_add_spread(&cs, task, topo, &sh.s[0], 3, &err), MC_OK);
    assert_int_equal(cs.n, n + 1);
    assert_true(has_spread(&cs, topo, 3));
    mc_cands_free(&cs);
    mc_shares_free(&sh);
    mc_task_free(task);
    mc_topo_free(topo);
}

/* Ten shards of 0.77 MiB on ten GPUs spread over six MI300X boxes under leaves, each gathered
 * by all ten (session 32's random task): the shares are small enough that every network
 * message's wait counts, and the spread trees, one network hop from each shard to every other
 * host, beat the chains and the rail trees (2.55 of the bound before, 2.01 with them). */
static void test_small_gather_spread(void **state)
{
    (void)state;
    char plan[64];
    synth_within("tests/data/cluster/mi300x-x6-leaves.xml",
                 task_of("A={a:10}@[32,31,13,3,16,38,12,45,2,41]", "N={g:1}@0",
                         "f32[518,3696] A[a,_] -> A[_,_]"),
                 2.1, plan);
    assert_true(strncmp(plan, "spread", 6) == 0);
}

/* Sixteen 1 MiB shards on hosts 0 and 1 of six one-NIC PCIe boxes under leaves of three at 3:1,
 * each for one GPU of hosts 3 and 5, which both come in over spine 1 (D-mod-k): the priced
 * trees relay through host 4, their leaf's third host, which comes in over spine 0 (2.00 of the
 * bound with relays only on the hosts a share touches, 1.08 with relays anywhere). */
static void test_relay_beside_leaf(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok("tests/data/cluster/pcie8-x6-leaves3.xml");
    mc_task_t *task = task_of("A={g:16}@0..15",
                              "B={g:16}@[24,25,26,27,28,29,30,31,"
                              "40,41,42,43,44,45,46,47]",
                              "f32[4096,1024] A[g,_] -> B[g,_]");
    mc_sched_t *s = NULL;
    mc_sim_result_t res = {0};
    mc_bound_t b;
    mc_err_t err = {0};
    synth_rlimit(topo, task, &s);
    assert_int_equal(mc_sim_run(s, topo, &res, &err), MC_OK);
    assert_int_equal(mc_task_bound(task, topo, &b, &err), MC_OK);
    assert_true(res.makespan_s <= 1.25 * b.seconds);
    int through4 = 0;
    for (int t = 0; t < s->ntrees; t++)
        for (int e = 0; e < s->trees[t].nedges; e++)
            through4 |= mc_topo_gpu_host(topo, s->trees[t].edges[e].child) == 4;
    assert_true(through4);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_task_free(task);
    mc_topo_free(topo);
}

/* Whether a candidate tree of cs passes through host h. */
static int cands_touch(const mc_cands_t *cs, const mc_topo_t *topo, int h)
{
    for (int c = 0; c < cs->n; c++)
        for (int e = 0; e < cs->c[c].nedges; e++)
            if (mc_topo_gpu_host(topo, cs->c[c].child[e]) == h)
                return 1;
    return 0;
}

/* Relays anywhere (candidates_price.c) on two tasks with an idle host: under the 4:1 leaves of
 * four OCI H100 boxes (session 33's random task: 18 GPUs of hosts 1-3 to 9 of hosts 1-2) they
 * lower the fractional optimum by 0.4% only, so those rounds are undone and no tree passes
 * through host 0; on the one-NIC boxes of test_relay_beside_leaf they halve it and stay. */
static void test_relays_anywhere_undone(void **state)
{
    (void)state;
    static const struct {
        const char *topo, *task;
        int idle, kept;
    } cases[] = {
        {"tests/data/cluster/oci-h100-x4-leaves2.xml",
         "mesh A={r:2,g:9}@12..29\nmesh B={dp:3,tp:3}@8..16\n"
         "move t: f32[82688,1024] A[_,_] -> B[_,(dp,tp)]\n"
         "move w: f32[1880,408] A[_,(r,g)] -> B[_,_]\n",
         0, 0},
        {"tests/data/cluster/pcie8-x6-leaves3.xml",
         "mesh A={g:16}@0..15\nmesh B={g:16}@[24,25,26,27,28,29,30,31,40,41,42,43,44,45,46,47]\n"
         "move t: f32[4096,1024] A[g,_] -> B[g,_]\n",
         4, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        mc_topo_t *topo = load_ok(cases[k].topo);
        mc_task_t *task = NULL;
        mc_shares_t sh = {0};
        mc_cands_t cs = {0};
        mc_err_t err = {0};
        mc_bound_t b;
        assert_int_equal(mc_task_parse_text(cases[k].task, "inline", &task, &err), MC_OK);
        assert_int_equal(mc_task_split(task, &err), MC_OK);
        mc_shares_build(task, topo, &sh);
        int *first = mc_xmalloc(sizeof(int) * (size_t)sh.n);
        int *count = mc_xmalloc(sizeof(int) * (size_t)sh.n);
        for (int i = 0; i < sh.n; i++) {
            first[i] = cs.n;
            assert_int_equal(mc_cands_add_share(&cs, task, topo, &sh.s[i], 0, 0, 0, &err), MC_OK);
            count[i] = cs.n - first[i];
        }
        assert_false(cands_touch(&cs, topo, cases[k].idle));
        assert_int_equal(mc_task_bound(task, topo, &b, &err), MC_OK);
        double *frac[MC_SPLITS] = {NULL};
        mc_price_stats_t ps;
        assert_int_equal(mc_cands_price(&cs, task, topo, &sh, first, count,
                                        b.seconds - b.latency_s, frac, &ps, &err),
                         MC_OK);
        assert_int_equal(cands_touch(&cs, topo, cases[k].idle), cases[k].kept);
        for (int i = 0; i < MC_SPLITS; i++)
            free(frac[i]);
        free(first);
        free(count);
        mc_cands_free(&cs);
        mc_shares_free(&sh);
        mc_task_free(task);
        mc_topo_free(topo);
    }
}

static mc_task_t *allgather_p4d_x4(void)
{
    return task_of("M={g:32}@0..31", "N={g:1}@0", "f32[16384,16384] M[g,_] -> M[_,_]");
}

/* A 1 GiB all-gather over four p4d boxes: the balanced synthesis wins, its plan simulated on a
 * thread of its own while the others are synthesized (docs/synthesis.md, "Session 24"); three
 * syntheses give the same schedule, byte for byte. */
static void test_balanced_apart_repeats(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok("topologies/p4d-x4.xml");
    synth_repeats(topo, allgather_p4d_x4, 3, "plan=balanced", NULL);
    mc_topo_free(topo);
}

/* Uneven shards of 47 MiB on 37 GPUs of seven MI300X boxes under one switch, cut again unevenly
 * (session 32's random task): 21 components, three of them copies of others. Where components
 * repeat, the referee raced only the solved plan and its whole form (1.70 of the bound); it now
 * races the other kinds too, and one of them wins (1.51). */
static void test_copied_components_race_every_kind(void **state)
{
    (void)state;
    char plan[64];
    synth_within(
        "tests/data/cluster/mi300x-x7-switch.xml",
        task_of("A={x:37}@18..54", "N={g:1}@0",
                "bf16[1352,18392] A[x,_] -> A[x{42,7,42,0,28,57,42,57,7,102,42,0,0,28,7,42,85,14,"
                "28,42,28,0,57,7,14,57,28,7,85,57,85,14,57,14,28,57,85},_]"),
        1.55, plan);
    assert_true(strncmp(plan, "z3", 2) != 0 && strncmp(plan, "whole", 5) != 0);
}

/* A 1 GiB all-gather over two hosts of eight bridged H100 PCIe GPUs: each socket needs more than
 * its link to the other socket brings, so the priced plan sends bytes between a host's sockets
 * through the network. That plan is too large to simulate within the allowance and lost, known
 * only by its estimate, to the balanced plan simulated at 1.27 of the bound, which crosses the
 * socket link; it is now timed in coarser forms (time_estimated, race_fitted), and one wins. */
static void test_unsimulated_winner_timed_coarser(void **state)
{
    (void)state;
    char plan[64];
    synth_within("tests/data/cluster/h100pcie-bridged-x2.xml",
                 task_of("M={g:16}@0..15", "N={g:1}@0", "f32[16384,16384] M[g,_] -> M[_,_]"),
                 1.15, plan);
    assert_non_null(strstr(plan, "+fit"));
}

/* Trees of s that carry a piece whose destinations are all on the root's host through a GPU of
 * another host. */
static int relayed_away(const mc_topo_t *topo, const mc_task_t *task, const mc_sched_t *s)
{
    int n = 0;
    for (int t = 0; t < s->ntrees; t++) {
        const mc_tree_t *tr = &s->trees[t];
        const mc_piece_t *pc = &task->pieces[tr->piece];
        int h = mc_topo_gpu_host(topo, tr->root), local = 1, away = 0;
        for (int d = 0; d < pc->ndests; d++)
            local &= mc_topo_gpu_host(topo, pc->dests[d]) == h;
        for (int e = 0; e < tr->nedges; e++)
            away |= mc_topo_gpu_host(topo, tr->edges[e].child) != h;
        n += local && away;
    }
    return n;
}

/* A 256 MiB all-to-all over the same two hosts: a quarter of each GPU's bytes goes to the other
 * socket of its own host, over a link slower than the socket's NICs. Relays anywhere now also
 * widen the shares inside one host, so those bytes go out to the other host and back (1.38 of
 * the bound before, over the socket link). */
static void test_relays_anywhere_inside_host(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok("tests/data/cluster/h100pcie-bridged-x2.xml");
    mc_task_t *task = task_of("M={g:16}@0..15", "N={g:1}@0", "f32[8192,8192] M[g,_] -> M[_,g]");
    mc_sched_t *s = NULL;
    double bound_s;
    synth_rlimit(topo, task, &s);
    assert_true(checked_sim(topo, task, s, &bound_s) <= 1.2 * bound_s);
    assert_true(relayed_away(topo, task, s) > 0);
    mc_sched_free(s);
    mc_task_free(task);
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replace_near_bound),
        cmocka_unit_test(test_small_broadcast_split),
        cmocka_unit_test(test_unstripe),
        cmocka_unit_test(test_wrapped_chains),
        cmocka_unit_test(test_spread_over_nics),
        cmocka_unit_test(test_small_gather_spread),
        cmocka_unit_test(test_relay_beside_leaf),
        cmocka_unit_test(test_relays_anywhere_undone),
        cmocka_unit_test(test_balanced_apart_repeats),
        cmocka_unit_test(test_copied_components_race_every_kind),
        cmocka_unit_test(test_unsimulated_winner_timed_coarser),
        cmocka_unit_test(test_relays_anywhere_inside_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
