/* Tests for sim/: the simulator against closed forms on hand-built topologies: one transfer, a
 * pipelined chain (equal and ramped chunks, chunks in flight), flows sharing a link (equal and unequal sizes, different bottlenecks), a tree
 * whose branches share the root's egress, phases in sequence, repeatability, and link-disjoint
 * groups simulated apart, identical ones once (and the least allowance that starts a run counts
 * them once); allowances, horizons, the memo and runs made apart. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "sim/sim.h"

#define B 100e9  /* bytes/s of every link unless a test says otherwise */
#define L 1e-6   /* latency of every link */

/* ngpus GPUs on host 0 plus nswitch PCI switches named "sw<i>"; no links yet. */
static mc_topo_t *topo_nodes(int ngpus, int nswitch)
{
    mc_topo_t *t = mc_topo_new("test");
    for (int i = 0; i < ngpus; i++) {
        mc_node_t n = {.kind = MC_NODE_GPU, .host = 0, .dev = i, .busid = -1, .rail = -1};
        snprintf(n.name, sizeof n.name, "h0/GPU%d", i);
        mc_topo_add_node(t, &n);
    }
    for (int i = 0; i < nswitch; i++) {
        mc_node_t n = {.kind = MC_NODE_PCI, .host = 0, .dev = -1, .busid = -1, .rail = -1};
        snprintf(n.name, sizeof n.name, "sw%d", i);
        mc_topo_add_node(t, &n);
    }
    return t;
}

static void finalize(mc_topo_t *t)
{
    mc_err_t err = {0};
    assert_int_equal(mc_topo_finalize(t, &err), MC_OK);
}

/* Adds edge a->b to tree ti along the given node ids. */
static void edge(mc_sched_t *s, const mc_topo_t *t, int ti, int a, int b, int nnodes, const int *nodes)
{
    mc_route_t r = {.src_gpu = a, .dst_gpu = b, .via_gpu = -1, .nlinks = nnodes - 1};
    for (int i = 0; i + 1 < nnodes; i++) {
        r.links[i] = mc_topo_find_link(t, nodes[i], nodes[i + 1]);
        assert_true(r.links[i] >= 0);
    }
    mc_err_t err = {0};
    assert_int_equal(mc_sched_add_edge_route(s, ti, &r, &err), MC_OK);
}

static double run(const mc_sched_t *s, const mc_topo_t *t, mc_sim_result_t *res)
{
    mc_err_t err = {0};
    assert_int_equal(mc_sim_run(s, t, res, &err), MC_OK);
    return res->makespan_s;
}

static void assert_close(double got, double want)
{
    if (!(got >= want * (1 - 1e-9) && got <= want * (1 + 1e-9)))
        fail_msg("got %.12g, want %.12g", got, want);
}

/* A connection between two H100 (sm 90) over NVLink moves at most 180 GB/s (NCCL's channels per
 * peer, mc_topo_conn_cap): 1 GB on a 370.8 GB/s NVLink takes 1e9 / 180e9 s, as sendrecv_perf measures;
 * between two A100 (sm 80, no published limit) the link's full rate. */
static void test_connection_limit(void **state)
{
    (void)state;
    for (int sm = 80; sm <= 90; sm += 10) {
        mc_topo_t *t = topo_nodes(2, 0);
        t->nodes[0].sm = t->nodes[1].sm = sm;
        mc_topo_add_link_pair(t, 0, 1, MC_LINK_NVL, 370.8e9, L, 1);
        finalize(t);
        mc_sched_t *s = mc_sched_new(NULL, t, "test");
        int ti = mc_sched_add_tree(s, 0, 0, 1000000000, 0, 0, 1);
        edge(s, t, ti, 0, 1, 2, (int[]){0, 1});
        mc_sim_result_t res;
        assert_close(run(s, t, &res), mc_topo_alpha(MC_LINK_NVL) + L +
                                          1e9 / (sm == 90 ? 180e9 : 370.8e9));
        mc_sim_result_free(&res);
        mc_sched_free(s);
        mc_topo_free(t);
    }
}

/* What a held connection leaves goes to the others: GPU 0 sends 1 GB to GPU 1 (sm 90, held at
 * 180 GB/s) and 1 GB to GPU 2 (sm 80, no limit) through one 400 GB/s link into a switch. Max-min
 * alone gives each 200; GPU 1's connection is held at 180, so GPU 2's gets 220 and is done after
 * 1e9 / 220e9 s, GPU 1's after 1e9 / 180e9 s. */
static void test_connection_limit_shares(void **state)
{
    (void)state;
    mc_topo_t *t = topo_nodes(3, 1);
    t->nodes[0].sm = t->nodes[1].sm = 90;
    t->nodes[2].sm = 80;
    for (int g = 0; g < 3; g++)
        mc_topo_add_link_pair(t, g, 3, MC_LINK_NVL, 400e9, L, 1);
    finalize(t);
    mc_sched_t *s = mc_sched_new(NULL, t, "test");
    for (int d = 1; d <= 2; d++) {
        int ti = mc_sched_add_tree(s, 0, 0, 1000000000, 0, 0, 1);
        edge(s, t, ti, 0, d, 3, (int[]){0, 3, d});
    }
    mc_sim_result_t res;
    double d = mc_topo_alpha(MC_LINK_NVL) + 2 * L;
    assert_close(run(s, t, &res), d + 1e9 / 180e9);
    assert_close(res.link_busy_s[mc_topo_find_link(t, 3, 2)], 1e9 / 220e9);
    assert_close(res.link_busy_s[mc_topo_find_link(t, 3, 1)], 1e9 / 180e9);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_topo_free(t);
}

static void test_one_transfer(void **state)
{
    mc_topo_t *t = topo_nodes(2, 0);
    mc_topo_add_link_pair(t, 0, 1, MC_LINK_NVL, B, L, 1);
    finalize(t);
    mc_sched_t *s = mc_sched_new(NULL, t, "test");
    int ti = mc_sched_add_tree(s, 0, 0, 1000000, 0, 0, 1);
    edge(s, t, ti, 0, 1, 2, (int[]){0, 1});
    mc_sim_result_t res;
    /* alpha(NVLink) + one hop + 1 MB at 100 GB/s */
    assert_close(run(s, t, &res), mc_topo_alpha(MC_LINK_NVL) + L + 1e6 / B);
    int l = mc_topo_find_link(t, 0, 1);
    assert_close(res.link_bytes[l], 1e6);
    assert_close(res.link_busy_s[l], 1e6 / B);
    assert_int_equal(res.nflows, 1);
    assert_int_equal(res.nintervals, 1);
    assert_close(res.intervals[0].rate, B);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* A chain of h NVLink hops from GPU 0 carrying S bytes in c chunks; the topology in *t. */
static mc_sched_t *chain(int h, int c, double S, mc_topo_t **t)
{
    *t = topo_nodes(h + 1, 0);
    for (int i = 0; i < h; i++)
        mc_topo_add_link_pair(*t, i, i + 1, MC_LINK_NVL, B, L, 1);
    finalize(*t);
    mc_sched_t *s = mc_sched_new(NULL, *t, "test");
    int ti = mc_sched_add_tree(s, 0, 0, (uint64_t)S, 0, 0, c);
    for (int i = 0; i < h; i++)
        edge(s, *t, ti, i, i + 1, 2, (int[]){i, i + 1});
    return s;
}

/* A chain of h hops with c chunks: (h + c - 1) steps of alpha + L + S/(cB). */
static void test_pipelined_chain(void **state)
{
    const int h = 3, c = 4;
    const double S = 8e6;
    mc_topo_t *t;
    mc_sched_t *s = chain(h, c, S, &t);
    mc_sim_result_t res;
    double step = mc_topo_alpha(MC_LINK_NVL) + L + S / c / B;
    assert_close(run(s, t, &res), (h + c - 1) * step);
    assert_int_equal(res.nflows, h * c);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* Chunks in flight: a chunk's message overhead overlaps the bytes of the chunks before it. With
 * two in flight and the overhead d below a chunk's time s, edge i's chunk k ends at
 * (i + 1) d + (i + 1 + k) s, so the chain takes h d + (h + c - 1) s; with one, (h + c - 1)(d + s).
 * With the overhead above a chunk's time the window binds: one hop (h = 1), four chunks, two in
 * flight: chunks 0 and 1 move after the first overhead, chunk 2's overhead starts when chunk 0
 * is through and chunk 3's when chunk 1 is, so the last ends at 2d + 3s; with one, 4 (d + s). */
static void test_chunks_in_flight(void **state)
{
    const int h = 3, c = 4;
    const double S = 8e6, d = mc_topo_alpha(MC_LINK_NVL) + L, s1 = S / c / B;
    mc_topo_t *t;
    mc_sched_t *s = chain(h, c, S, &t);
    mc_sim_result_t res;
    s->trees[0].inflight = 2;
    assert_true(d < s1);
    assert_close(run(s, t, &res), h * d + (h + c - 1) * s1);
    mc_sim_result_free(&res);
    s->trees[0].inflight = 8;
    assert_close(run(s, t, &res), h * d + (h + c - 1) * s1);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_topo_free(t);

    const double small = 1e5, s2 = small / c / B;
    s = chain(1, c, small, &t);
    assert_true(d > s2);
    s->trees[0].inflight = 2;
    assert_close(run(s, t, &res), 2 * d + 3 * s2);
    mc_sim_result_free(&res);
    s->trees[0].inflight = 1;
    assert_close(run(s, t, &res), c * (d + s2));
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* Ramped chunks (mc_tree_chunk) move in their own sizes: with one in flight, edge i's chunk k ends
 * at max(end(i - 1, k), end(i, k - 1)) + d + s_k / B. Closed form, two hops, five chunks, ramp 1
 * (S/8, S/4, S/4, S/4, S/8; u = S/B): the relay waits for each larger chunk, so the chain takes
 * 2 (d + u/8) + 4 (d + u/4) = 6d + 5u/4, where five equal chunks take 6 (d + u/5) = 6d + 6u/5: on
 * an idle chain of equal hops a ramp is slower; it pays where first chunks share links. */
static void test_ramped_chunks(void **state)
{
    const double S = 8e6, d = mc_topo_alpha(MC_LINK_NVL) + L, u = S / B;
    mc_topo_t *t;
    mc_sched_t *s = chain(2, 5, S, &t);
    mc_sim_result_t res;
    s->trees[0].ramp = 1;
    assert_close(run(s, t, &res), 6 * d + 1.25 * u);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_topo_free(t);
    for (int h = 1; h <= 4; h++)
        for (int ramp = 1; ramp <= 3; ramp++) {
            const int c = 9;
            double end[4][9];
            s = chain(h, c, S, &t);
            s->trees[0].ramp = ramp;
            for (int i = 0; i < h; i++)
                for (int k = 0; k < c; k++) {
                    uint64_t off, len;
                    mc_tree_chunk(&s->trees[0], k, &off, &len);
                    double ready = i ? end[i - 1][k] : 0, prev = k ? end[i][k - 1] : 0;
                    end[i][k] = (ready > prev ? ready : prev) + d + (double)len / B;
                }
            assert_close(run(s, t, &res), end[h - 1][c - 1]);
            mc_sim_result_free(&res);
            mc_sched_free(s);
            mc_topo_free(t);
        }
}

/* GPUs 0..n-1 each send to GPU n through switch sw0 (node n+1); the sw0 -> GPU n link is shared. */
static mc_topo_t *topo_incast(int n, const double *up_bw)
{
    mc_topo_t *t = topo_nodes(n + 1, 1);
    int sw = n + 1;
    for (int i = 0; i < n; i++)
        mc_topo_add_link_pair(t, i, sw, MC_LINK_PCI, up_bw ? up_bw[i] : B, L, 1);
    mc_topo_add_link_pair(t, sw, n, MC_LINK_PCI, B, L, 1);
    finalize(t);
    return t;
}

static mc_sched_t *incast(const mc_topo_t *t, int n, const double *bytes)
{
    mc_sched_t *s = mc_sched_new(NULL, t, "test");
    for (int i = 0; i < n; i++) {
        int ti = mc_sched_add_tree(s, 0, 0, (uint64_t)bytes[i], i, 0, 1);
        edge(s, t, ti, i, n, 3, (int[]){i, n + 1, n});
    }
    return s;
}

static void test_two_flows_share_a_link(void **state)
{
    mc_topo_t *t = topo_incast(2, NULL);
    mc_sched_t *s = incast(t, 2, (double[]){1e6, 1e6});
    mc_sim_result_t res;
    double t0 = mc_topo_alpha(MC_LINK_PCI) + 2 * L;
    /* each gets half of B: both finish after 2 MB / B */
    assert_close(run(s, t, &res), t0 + 2e6 / B);
    int shared = mc_topo_find_link(t, 3, 2);
    assert_close(res.link_bytes[shared], 2e6);
    assert_close(res.link_busy_s[shared], 2e6 / B);
    for (int i = 0; i < 2; i++)
        assert_close(res.link_busy_s[mc_topo_find_link(t, i, 3)], 2e6 / B);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* The three-flow incast within an allowance of work: enough gives the unbounded result and takes
 * what it used (each of the six events re-rates at most three flows and their five links); too
 * little stops the simulation with MC_ERR_TIMEOUT, the allowance spent, and only the time it
 * reached; less than four units per flow does not start it. */
static void test_bounded_work(void **state)
{
    mc_topo_t *t = topo_incast(3, NULL);
    mc_sched_t *s = incast(t, 3, (double[]){1e6, 2e6, 3e6});
    mc_sim_result_t full, res;
    mc_err_t err = {0};
    run(s, t, &full);
    int64_t left = 1000;
    assert_int_equal(mc_sim_run_bounded(s, t, &left, &res, &err), MC_OK);
    assert_true(res.makespan_s == full.makespan_s);
    assert_true(left < 1000 && left >= 1000 - 6 * 8);
    mc_sim_result_free(&res);
    left = 14;
    assert_int_equal(mc_sim_run_bounded(s, t, &left, &res, &err), MC_ERR_TIMEOUT);
    assert_true(left <= 0);
    assert_true(res.makespan_s >= 0 && res.makespan_s < full.makespan_s);
    assert_non_null(strstr(err.msg, "work limit"));
    assert_int_equal(mc_sim_least_work(s, t), 12);
    left = 11; /* under four units per flow: not started, nothing spent */
    assert_int_equal(mc_sim_run_bounded(s, t, &left, &res, &err), MC_ERR_TIMEOUT);
    assert_int_equal(left, 11);
    mc_sim_result_free(&full);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* The three-flow incast up to a simulated horizon: the 3 MB flow's first finish event, planned at
 * B/3 for t0 + 9 MB/B, is superseded and pops after the last flow ends at t0 + 6 MB/B, so a
 * horizon at the makespan itself still gives the full result. One below it (between the first
 * finish, t0 + 3 MB/B, and the second, t0 + 5 MB/B) stops the run at its first events, by the
 * loads: the shared link's 6 MB at B from t0 end it past the horizon, at t0 + 6 MB/B (less a
 * billionth), having spent less than the whole simulation. A chain of 3 hops and 4 chunks
 * (test_pipelined_chain: 6 steps, its links' loads 4 chunks' bytes from the first step on) with a
 * horizon at 4.5 steps stops at the first event past it, the end of step 5. */
static void test_horizon(void **state)
{
    mc_topo_t *t = topo_incast(3, NULL);
    mc_sched_t *s = incast(t, 3, (double[]){1e6, 2e6, 3e6});
    mc_sim_result_t full, res;
    mc_err_t err = {0};
    double t0 = mc_topo_alpha(MC_LINK_PCI) + 2 * L;
    int64_t all = 1000, some = 1000;
    assert_int_equal(mc_sim_run_bounded(s, t, &all, &full, &err), MC_OK);
    assert_int_equal(mc_sim_run_until(s, t, NULL, full.makespan_s, &res, &err), MC_OK);
    assert_true(res.makespan_s == full.makespan_s);
    mc_sim_result_free(&res);
    assert_int_equal(mc_sim_run_until(s, t, &some, t0 + 4e6 / B, &res, &err), MC_ERR_TIMEOUT);
    assert_true(res.makespan_s <= t0 + 6e6 / B && res.makespan_s > (t0 + 6e6 / B) * (1 - 1e-8));
    assert_true(some > all);
    assert_non_null(strstr(err.msg, "loads"));
    mc_sim_result_free(&full);
    mc_sched_free(s);
    mc_topo_free(t);
    s = chain(3, 4, 8e6, &t);
    double step = mc_topo_alpha(MC_LINK_NVL) + L + 8e6 / 4 / B;
    assert_int_equal(mc_sim_run_until(s, t, NULL, 4.5 * step, &res, &err), MC_ERR_TIMEOUT);
    assert_close(res.makespan_s, 5 * step);
    assert_non_null(strstr(err.msg, "stopped past its horizon"));
    mc_sched_free(s);
    mc_topo_free(t);
}

/* One run through the memo against the same run fresh: the same status, time and work taken,
 * and the same per-link figures where it simulated; returns whether the memo simulated (a
 * remembered outcome sets only the makespan). work < 0: no allowance. */
static int memo_matches(mc_sim_memo_t *m, const mc_sched_t *s, const mc_topo_t *t, int64_t work,
                        double horizon)
{
    mc_sim_result_t fresh, res;
    mc_err_t err = {0};
    int64_t a = work, b = work;
    mc_status_t want = mc_sim_run_until(s, t, work < 0 ? NULL : &a, horizon, &fresh, &err);
    assert_int_equal(mc_sim_run_memo(m, s, t, work < 0 ? NULL : &b, horizon, &res, &err), want);
    assert_true(res.makespan_s == fresh.makespan_s);
    assert_true(a == b);
    for (int l = 0; want == MC_OK && res.link_busy_s && l < t->nlinks; l++)
        assert_true(res.link_busy_s[l] == fresh.link_busy_s[l] &&
                    res.link_bytes[l] == fresh.link_bytes[l]);
    int simulated = want != MC_OK || res.link_busy_s != NULL;
    mc_sim_result_free(&fresh);
    mc_sim_result_free(&res);
    return simulated;
}

/* The memo (mc_sim_run_memo) on the three-flow incast: every outcome is the fresh run's; an ended
 * run decides a later one with as much allowance and no horizon or one past its end (not
 * simulated again), but not one with too little allowance (stopped at the work limit), nor one
 * with less than four units per flow, nor a horizon before its end; a schedule that differs in
 * one byte is simulated. */
static void test_memo(void **state)
{
    mc_topo_t *t = topo_incast(3, NULL);
    mc_sched_t *s = incast(t, 3, (double[]){1e6, 2e6, 3e6});
    mc_sched_t *other = incast(t, 3, (double[]){1e6, 2e6, 3e6 + 1});
    mc_sim_memo_t *m = mc_sim_memo_new();
    double t0 = mc_topo_alpha(MC_LINK_PCI) + 2 * L, end = t0 + 6e6 / B;
    assert_true(memo_matches(m, s, t, 1000, 0));
    assert_false(memo_matches(m, s, t, 1000, 0));
    assert_false(memo_matches(m, s, t, 100, end * 2));
    assert_true(memo_matches(m, s, t, 14, 0));
    assert_true(memo_matches(m, s, t, 11, 0));
    assert_true(memo_matches(m, s, t, 1000, t0 + 4e6 / B));
    assert_true(memo_matches(m, s, t, 1000, t0 + 4e6 / B));
    assert_true(memo_matches(m, other, t, 1000, 0));
    assert_false(memo_matches(m, other, t, 1000, 0));
    mc_sim_memo_free(m);
    mc_sched_free(other);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* The memo without an allowance (synth's summary under --sim-work 0): a run without one is not
 * remembered, a run stopped past its horizon does not decide it, and a run that ended does (the
 * same makespan, not simulated again). */
static void test_memo_unbounded(void **state)
{
    mc_topo_t *t = topo_incast(3, NULL);
    mc_sched_t *s = incast(t, 3, (double[]){1e6, 2e6, 3e6});
    mc_sim_memo_t *m = mc_sim_memo_new();
    double t0 = mc_topo_alpha(MC_LINK_PCI) + 2 * L;
    assert_true(memo_matches(m, s, t, -1, 0));
    assert_true(memo_matches(m, s, t, -1, 0));
    assert_true(memo_matches(m, s, t, 1000, t0 + 4e6 / B));
    assert_true(memo_matches(m, s, t, -1, 0));
    assert_true(memo_matches(m, s, t, 1000, 0));
    assert_false(memo_matches(m, s, t, -1, 0));
    assert_false(memo_matches(m, s, t, -1, t0 + 7e6 / B));
    mc_sim_memo_free(m);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* A run made apart (mc_sim_run_apart) on the three-flow incast: the same makespan, work and flows
 * as the same run through a memo; its end handed to a fresh memo (mc_sim_memo_put_ended) decides
 * a run of the same schedule under as much allowance, with no horizon or one at its end, without
 * simulating (no per-link figures), charging that work; not one under less allowance, nor one with
 * a horizon before its end. A run apart whose cancel is set stops at its first events. */
static void test_memo_apart(void **state)
{
    mc_topo_t *t = topo_incast(3, NULL);
    mc_sched_t *s = incast(t, 3, (double[]){1e6, 2e6, 3e6});
    mc_sim_result_t res, fresh;
    mc_err_t err = {0};
    atomic_int cancel = 0;
    int64_t left = 1000, fresh_left = 1000, flows = 0;
    assert_int_equal(mc_sim_run_apart(s, t, &left, 0, &cancel, &flows, &res, &err), MC_OK);
    assert_int_equal(mc_sim_run_bounded(s, t, &fresh_left, &fresh, &err), MC_OK);
    assert_true(res.makespan_s == fresh.makespan_s && left == fresh_left && flows == 3);
    mc_sim_memo_t *m = mc_sim_memo_new();
    mc_sim_memo_put_ended(m, s, res.makespan_s, 1000 - left, flows);
    int64_t w = 1000;
    mc_sim_result_t got;
    assert_int_equal(mc_sim_run_memo(m, s, t, &w, res.makespan_s, &got, &err), MC_OK);
    assert_true(got.makespan_s == res.makespan_s && got.link_busy_s == NULL && w == left);
    mc_sim_result_free(&got);
    assert_false(memo_matches(m, s, t, 1000, 0));
    assert_true(memo_matches(m, s, t, 1000 - left - 1, 0));
    assert_true(memo_matches(m, s, t, 1000, res.makespan_s * 0.9));
    mc_sim_memo_free(m);
    mc_sim_result_free(&res);
    mc_sim_result_free(&fresh);
    atomic_store(&cancel, 1);
    left = 1000;
    assert_int_equal(mc_sim_run_apart(s, t, &left, 0, &cancel, &flows, &res, &err),
                     MC_ERR_TIMEOUT);
    assert_non_null(strstr(err.msg, "cancelled"));
    assert_true(left > fresh_left);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* The three-flow incast in 8 chunks each, then a 1 MB tree in 4 chunks in a second phase: 28
 * flows. */
static mc_sched_t *incast_then_tree(const mc_topo_t *t)
{
    mc_sched_t *s = mc_sched_new(NULL, t, "test");
    for (int i = 0; i < 3; i++)
        edge(s, t, mc_sched_add_tree(s, 0, 0, (uint64_t)(i + 1) * 1000000, i, 0, 8), i, 3, 3,
             (int[]){i, 4, 3});
    edge(s, t, mc_sched_add_tree(s, 0, 0, 1000000, 0, 1, 4), 0, 3, 3, (int[]){0, 4, 3});
    return s;
}

/* memo_matches; returns how many runs the memo has taken on from where an allowance stopped
 * them. */
static long memo_resumes(mc_sim_memo_t *m, const mc_sched_t *s, const mc_topo_t *t, int64_t work,
                         double horizon)
{
    memo_matches(m, s, t, work, horizon);
    return mc_sim_memo_resumed(m);
}

/* A run its allowance stopped with no horizon goes on from where it stopped (synth's summary of a
 * plan the referee could only estimate): under a larger allowance it stops again or ends exactly
 * as a run begun afresh (status, time, per-link figures, work taken from the start), across the
 * phase boundary and on another copy of the schedule (the first freed); one ended is then
 * remembered; a smaller allowance, or a horizon, begins afresh; no allowance takes it on too. */
static void test_memo_resume(void **state)
{
    mc_topo_t *t = topo_incast(3, NULL);
    mc_sched_t *s = incast_then_tree(t), *copy = incast_then_tree(t);
    mc_sim_result_t res;
    mc_err_t err = {0};
    int64_t all = 1000000;
    assert_int_equal(mc_sim_run_bounded(s, t, &all, &res, &err), MC_OK);
    mc_sim_result_free(&res);
    int64_t used = 1000000 - all, least = 4 * 28;
    assert_true(used > least + 30);
    int64_t w1 = least + (used - least) / 3, w2 = least + 2 * (used - least) / 3;
    mc_sim_memo_t *m = mc_sim_memo_new();
    assert_int_equal(memo_resumes(m, s, t, w1, 0), 0);
    assert_int_equal(memo_resumes(m, s, t, w1 - 1, 0), 0);
    assert_int_equal(memo_resumes(m, s, t, w1, 1.0), 0);
    mc_sched_free(s);
    assert_int_equal(memo_resumes(m, copy, t, w2, 0), 1);
    assert_int_equal(memo_resumes(m, copy, t, 1000000, 0), 2);
    assert_int_equal(memo_resumes(m, copy, t, 1000000, 0), 2);
    mc_sim_memo_free(m);
    m = mc_sim_memo_new();
    assert_int_equal(memo_resumes(m, copy, t, w2, 0), 0);
    assert_int_equal(memo_resumes(m, copy, t, -1, 0), 1);
    assert_int_equal(memo_resumes(m, copy, t, -1, 0), 1);
    mc_sim_memo_free(m);
    mc_sched_free(copy);
    mc_topo_free(t);
}

/* Runs made on a memo of their own, handed on to another (mc_sim_memo_take: the priced races made
 * ahead on memos of their own, synth_meshcast.c): an ended run, one stopped past its horizon and
 * one stopped by its allowance and kept decide the later runs through the memo they were handed
 * to as through their own (the ended run not simulated again, the stopped one taken on from where
 * it stopped), beside the runs that memo had; every outcome the fresh run's; the memo handed on
 * is freed. */
static void test_memo_take(void **state)
{
    mc_topo_t *t = topo_incast(3, NULL);
    mc_sched_t *s = incast(t, 3, (double[]){1e6, 2e6, 3e6}), *long_s = incast_then_tree(t);
    mc_sim_memo_t *from = mc_sim_memo_new(), *m = mc_sim_memo_new();
    double t0 = mc_topo_alpha(MC_LINK_PCI) + 2 * L;
    mc_sim_result_t res;
    mc_err_t err = {0};
    int64_t all = 1000000;
    assert_int_equal(mc_sim_run_bounded(long_s, t, &all, &res, &err), MC_OK);
    mc_sim_result_free(&res);
    int64_t some = 4 * 28 + (1000000 - all - 4 * 28) / 2;
    assert_true(memo_matches(from, s, t, 1000, 0));
    assert_true(memo_matches(from, s, t, 1000, t0 + 4e6 / B));
    assert_true(memo_matches(from, long_s, t, some, 0));
    assert_true(memo_matches(m, s, t, 1000, t0 + 2e6 / B)); /* one m had: kept beside them */
    mc_sim_memo_take(m, from);
    assert_false(memo_matches(m, s, t, 1000, 0));
    assert_true(memo_matches(m, s, t, 1000, t0 + 4e6 / B)); /* decided: its outcome, stopped */
    assert_true(memo_matches(m, s, t, 1000, t0 + 2e6 / B));
    assert_int_equal(memo_resumes(m, long_s, t, 1000000, 0), 1);
    assert_false(memo_matches(m, long_s, t, 1000000, 0));
    mc_sim_memo_free(m);
    mc_sched_free(long_s);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* The cut (mc_sim_run_memo_cut) on the incast then tree (28 flows), under exactly the allowance
 * its run needs: with a floor at or below its makespan (a true one) it ends as without the cut;
 * with a floor far above it, it is cut once it has taken a quarter of the allowance: stopped
 * earlier than the allowance stops it (less time reached), charged the allowance and one unit
 * more, as the allowance would be; kept, it goes on, uncut, to the same end as a run begun afresh,
 * charged its work from the start; a floor of 0 cuts nothing. */
static void test_memo_cut(void **state)
{
    mc_topo_t *t = topo_incast(3, NULL);
    mc_sched_t *s = incast_then_tree(t);
    mc_sim_result_t res, short_res;
    mc_err_t err = {0};
    int64_t all = 1000000;
    assert_int_equal(mc_sim_run_bounded(s, t, &all, &res, &err), MC_OK);
    double end = res.makespan_s;
    mc_sim_result_free(&res);
    int64_t used = 1000000 - all, w = used, shorter = used - 1;
    assert_true(used > 4 * 28);
    mc_sim_memo_t *m = mc_sim_memo_new();
    assert_int_equal(mc_sim_run_memo_cut(m, s, t, &w, 0, end, &res, &err), MC_OK);
    assert_true(res.makespan_s == end && w == 0);
    mc_sim_result_free(&res);
    mc_sim_memo_free(m);
    m = mc_sim_memo_new();
    /* the allowance alone, one unit short: stopped near the end */
    assert_int_equal(mc_sim_run_memo(m, s, t, &shorter, 0, &short_res, &err), MC_ERR_TIMEOUT);
    mc_sim_memo_free(m);
    m = mc_sim_memo_new();
    w = used;
    assert_int_equal(mc_sim_run_memo_cut(m, s, t, &w, 0, 1000 * end, &res, &err), MC_ERR_TIMEOUT);
    assert_true(w == -1);
    assert_true(res.makespan_s > 0 && res.makespan_s < short_res.makespan_s);
    mc_sim_result_free(&res);
    w = used;
    assert_int_equal(mc_sim_run_memo(m, s, t, &w, 0, &res, &err), MC_OK);
    assert_true(res.makespan_s == end && w == 0);
    assert_int_equal(mc_sim_memo_resumed(m), 1);
    mc_sim_result_free(&res);
    mc_sim_memo_free(m);
    m = mc_sim_memo_new();
    w = used;
    assert_int_equal(mc_sim_run_memo_cut(m, s, t, &w, 0, 0, &res, &err), MC_OK);
    assert_true(res.makespan_s == end && w == 0);
    mc_sim_result_free(&res);
    mc_sim_result_free(&short_res);
    mc_sim_memo_free(m);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* The cut reads the time reached across a phase's groups: two link-disjoint trees (GPU 0 -> 1,
 * 8 MB, and GPU 2 -> 3, 0.25 MB, 32 chunks each) are two groups simulated one after the other,
 * each from the phase's start; in the second, its clock is far below the first's end while the
 * work has taken the first's. Under exactly the allowance the run needs and the makespan as its
 * floor, the run ends as without the cut (read from the second group's clock, the pace looked
 * over five times too slow and the run was cut). */
static void test_memo_cut_groups(void **state)
{
    mc_topo_t *t = topo_incast(3, NULL);
    mc_sched_t *s = mc_sched_new(NULL, t, "test");
    edge(s, t, mc_sched_add_tree(s, 0, 0, 8000000, 0, 0, 32), 0, 1, 3, (int[]){0, 4, 1});
    edge(s, t, mc_sched_add_tree(s, 0, 0, 250000, 2, 0, 32), 2, 3, 3, (int[]){2, 4, 3});
    mc_sim_result_t res;
    mc_err_t err = {0};
    int64_t all = 1000000;
    assert_int_equal(mc_sim_run_bounded(s, t, &all, &res, &err), MC_OK);
    double end = res.makespan_s;
    mc_sim_result_free(&res);
    int64_t w = 1000000 - all;
    mc_sim_memo_t *m = mc_sim_memo_new();
    assert_int_equal(mc_sim_run_memo_cut(m, s, t, &w, 0, end, &res, &err), MC_OK);
    assert_true(res.makespan_s == end && w == 0);
    mc_sim_result_free(&res);
    mc_sim_memo_free(m);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* The busiest link at full bandwidth (mc_sched_busiest_link_s) bounds the simulated makespan from
 * below: on the incast the shared link carries all 6 MB (6 MB/B, the makespan less the latency);
 * with one flow's link at B/8 that link is the busiest (8 MB/B for its 1 MB), still below. */
static void test_busiest_link_bound(void **state)
{
    mc_topo_t *t = topo_incast(3, NULL), *slow = topo_incast(3, (double[]){B / 8, B, B});
    mc_sched_t *s = incast(t, 3, (double[]){1e6, 2e6, 3e6});
    mc_sched_t *s2 = incast(slow, 3, (double[]){1e6, 2e6, 3e6});
    mc_sim_result_t res;
    assert_close(mc_sched_busiest_link_s(s, t), 6e6 / B);
    assert_true(mc_sched_busiest_link_s(s, t) <= run(s, t, &res));
    mc_sim_result_free(&res);
    assert_close(mc_sched_busiest_link_s(s2, slow), 8e6 / B);
    assert_true(mc_sched_busiest_link_s(s2, slow) <= run(s2, slow, &res));
    mc_sim_result_free(&res);
    mc_sched_free(s2);
    mc_sched_free(s);
    mc_topo_free(slow);
    mc_topo_free(t);
}

/* 1, 2 and 3 MB: B/3 each until the first ends at 3 MB/B, then B/2 each for 2 MB/B more, then B
 * for the last 1 MB. Each flow's own first link carries its bytes at its rate: GPU 2's goes from
 * B/3 to B/2 to B where only the shared link was touched (the other flows ending), so a link's
 * total must follow its flows' rates, not only the flows it gains and loses. */
static void test_three_flows_share_a_link(void **state)
{
    mc_topo_t *t = topo_incast(3, NULL);
    mc_sched_t *s = incast(t, 3, (double[]){1e6, 2e6, 3e6});
    mc_sim_result_t res;
    double t0 = mc_topo_alpha(MC_LINK_PCI) + 2 * L;
    assert_close(run(s, t, &res), t0 + 6e6 / B);
    int sw = 4;
    assert_close(res.link_busy_s[mc_topo_find_link(t, 0, sw)], 3e6 / B);
    assert_close(res.link_busy_s[mc_topo_find_link(t, 1, sw)], 5e6 / B);
    assert_close(res.link_busy_s[mc_topo_find_link(t, 2, sw)], 6e6 / B);
    for (int i = 0; i < 3; i++)
        assert_close(res.link_bytes[mc_topo_find_link(t, i, sw)], (i + 1) * 1e6);
    int up2 = mc_topo_find_link(t, 2, sw), k = 0;
    const double rates[] = {B / 3, B / 2, B}, ends[] = {3e6 / B, 5e6 / B, 6e6 / B};
    for (int i = 0; i < res.nintervals; i++)
        if (res.intervals[i].link == up2) {
            assert_true(k < 3);
            assert_close(res.intervals[i].rate, rates[k]);
            assert_close(res.intervals[i].t1, t0 + ends[k++]);
        }
    assert_int_equal(k, 3);
    /* the shared link runs at B throughout (3, 2 then 1 flows): one interval of constant rate */
    int shared = mc_topo_find_link(t, sw, 3), n = 0;
    for (int i = 0; i < res.nintervals; i++)
        if (res.intervals[i].link == shared) {
            assert_close(res.intervals[i].rate, B);
            assert_close(res.intervals[i].t0, t0);
            assert_close(res.intervals[i].t1, t0 + 6e6 / B);
            n++;
        }
    assert_int_equal(n, 1);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* Max-min, not equal split: flow 0 is held to B/4 by its own first link, so flow 1 gets 3B/4 of
 * the shared link; with 0.25 MB and 0.75 MB both end after 1 MB/B. */
static void test_maxmin_unequal_bottlenecks(void **state)
{
    mc_topo_t *t = topo_incast(2, (double[]){B / 4, B});
    mc_sched_t *s = incast(t, 2, (double[]){0.25e6, 0.75e6});
    mc_sim_result_t res;
    double t0 = mc_topo_alpha(MC_LINK_PCI) + 2 * L;
    assert_close(run(s, t, &res), t0 + 1e6 / B);
    assert_close(res.link_busy_s[mc_topo_find_link(t, 0, 3)], 1e6 / B);
    assert_close(res.link_busy_s[mc_topo_find_link(t, 1, 3)], 1e6 / B);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* Root GPU 0 reaches GPUs 1 and 2 through sw0 (node 3): both branches cross GPU0 -> sw0, so each
 * chunk step moves 2 chunks over it: c steps of alpha + 2L + 2 (S/c) / B. */
static void test_tree_branches_share_root_egress(void **state)
{
    const int c = 2;
    const double S = 4e6;
    mc_topo_t *t = topo_nodes(3, 1);
    for (int i = 0; i < 3; i++)
        mc_topo_add_link_pair(t, i, 3, MC_LINK_PCI, B, L, 1);
    finalize(t);
    mc_sched_t *s = mc_sched_new(NULL, t, "test");
    int ti = mc_sched_add_tree(s, 0, 0, (uint64_t)S, 0, 0, c);
    edge(s, t, ti, 0, 1, 3, (int[]){0, 3, 1});
    edge(s, t, ti, 0, 2, 3, (int[]){0, 3, 2});
    mc_sim_result_t res;
    assert_close(run(s, t, &res), c * (mc_topo_alpha(MC_LINK_PCI) + 2 * L + 2 * (S / c) / B));
    assert_close(res.link_bytes[mc_topo_find_link(t, 0, 3)], 2 * S);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_topo_free(t);
}

/* Two phases run one after the other, even on disjoint links. */
static void test_phases_in_sequence(void **state)
{
    mc_topo_t *t = topo_nodes(4, 0);
    mc_topo_add_link_pair(t, 0, 1, MC_LINK_NVL, B, L, 1);
    mc_topo_add_link_pair(t, 2, 3, MC_LINK_NVL, B, L, 1);
    finalize(t);
    mc_sched_t *s = mc_sched_new(NULL, t, "test");
    edge(s, t, mc_sched_add_tree(s, 0, 0, 1000000, 0, 0, 1), 0, 1, 2, (int[]){0, 1});
    edge(s, t, mc_sched_add_tree(s, 0, 0, 2000000, 2, 1, 1), 2, 3, 2, (int[]){2, 3});
    mc_sim_result_t res;
    double a = mc_topo_alpha(MC_LINK_NVL) + L;
    assert_close(run(s, t, &res), (a + 1e6 / B) + (a + 2e6 / B));
    /* the second phase's interval starts after the first phase ends */
    int l = mc_topo_find_link(t, 2, 3);
    for (int i = 0; i < res.nintervals; i++)
        if (res.intervals[i].link == l)
            assert_close(res.intervals[i].t0, (a + 1e6 / B) + a);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_topo_free(t);
}

static void test_repeatable_and_bad_route(void **state)
{
    mc_topo_t *t = topo_incast(3, NULL);
    mc_sched_t *s = incast(t, 3, (double[]){1e6, 1.5e6, 0.7e6});
    mc_sim_result_t a, b;
    run(s, t, &a);
    run(s, t, &b);
    assert_true(a.makespan_s == b.makespan_s);
    assert_int_equal(a.nintervals, b.nintervals);
    for (int i = 0; i < a.nintervals; i++) {
        assert_int_equal(a.intervals[i].link, b.intervals[i].link);
        assert_true(a.intervals[i].t0 == b.intervals[i].t0 && a.intervals[i].t1 == b.intervals[i].t1 &&
                    a.intervals[i].rate == b.intervals[i].rate);
    }
    mc_sim_result_free(&a);
    mc_sim_result_free(&b);
    s->trees[1].edges[0].links[0] = -1; /* a link this topology lacks (read with --force) */
    mc_err_t err = {0};
    assert_int_equal(mc_sim_run(s, t, &a, &err), MC_ERR_INVALID);
    assert_non_null(strstr(err.msg, "tree 1"));
    mc_sched_free(s);
    /* 3 edges x 16 Mi chunks is refused before anything is allocated for it */
    s = incast(t, 3, (double[]){1e6, 1e6, 1e6});
    int ti = mc_sched_add_tree(s, 0, 0, (uint64_t)1 << 40, 0, 0, MC_SCHED_MAX_CHUNKS);
    for (int i = 0; i < 3; i++)
        edge(s, t, ti, 0, 3, 3, (int[]){0, 4, 3});
    assert_int_equal(mc_sim_run(s, t, &a, &err), MC_ERR_INVALID);
    assert_non_null(strstr(err.msg, "more than 50000000 flows"));
    mc_sched_free(s);
    mc_topo_free(t);
}

/* Four link-disjoint pairs 0->1, 2->3, 4->5 (100 GB/s) and 6->7 (50 GB/s), 1 MB in 4 chunks each:
 * every pair is its own group, the first three identical, so simulated once (the work used is
 * that of one pair plus the slow one) and copied; every link gets its own closed-form figures and
 * its own timeline (one interval per chunk, the copies on their own link ids). */
static void test_identical_groups_simulated_once(void **state)
{
    mc_topo_t *t = topo_nodes(8, 0);
    for (int p = 0; p < 4; p++)
        mc_topo_add_link_pair(t, 2 * p, 2 * p + 1, MC_LINK_NVL, p == 3 ? B / 2 : B, L, 1);
    finalize(t);
    mc_sched_t *one = mc_sched_new(NULL, t, "test"), *all = mc_sched_new(NULL, t, "test");
    edge(one, t, mc_sched_add_tree(one, 0, 0, 1000000, 0, 0, 4), 0, 1, 2, (int[]){0, 1});
    for (int p = 0; p < 4; p++)
        edge(all, t, mc_sched_add_tree(all, 0, 0, 1000000, 2 * p, 0, 4), 2 * p, 2 * p + 1, 2,
             (int[]){2 * p, 2 * p + 1});
    mc_sim_result_t res;
    double a = mc_topo_alpha(MC_LINK_NVL) + L;
    assert_close(run(all, t, &res), 4 * (a + 0.25e6 / (B / 2)));
    assert_int_equal(res.nflows, 16);
    int l0 = mc_topo_find_link(t, 0, 1);
    for (int p = 0; p < 4; p++) {
        int l = mc_topo_find_link(t, 2 * p, 2 * p + 1), n = 0;
        assert_close(res.link_bytes[l], 1e6);
        assert_close(res.link_busy_s[l], 1e6 / (p == 3 ? B / 2 : B));
        for (int i = 0; i < res.nintervals; i++)
            if (res.intervals[i].link == l) {
                double t0 = (n + 1) * a + n * 0.25e6 / (p == 3 ? B / 2 : B);
                assert_close(res.intervals[i].t0, t0);
                n++;
            }
        assert_int_equal(n, 4);
    }
    for (int i = 1; i < res.nintervals; i++) /* ordered by link, then time */
        assert_true(res.intervals[i - 1].link < res.intervals[i].link ||
                    (res.intervals[i - 1].link == res.intervals[i].link &&
                     res.intervals[i - 1].t1 <= res.intervals[i].t0));
    mc_sim_result_free(&res);
    /* the work: one pair's, plus the slow pair's (the same events at other times) */
    mc_err_t err = {0};
    int64_t w_one = 1000, w_all = 1000;
    assert_int_equal(mc_sim_run_bounded(one, t, &w_one, &res, &err), MC_OK);
    assert_close(res.link_bytes[l0], 1e6);
    mc_sim_result_free(&res);
    assert_int_equal(mc_sim_run_bounded(all, t, &w_all, &res, &err), MC_OK);
    assert_int_equal(1000 - w_all, 2 * (1000 - w_one));
    mc_sim_result_free(&res);
    /* the least allowance that starts a run counts the distinct groups' flows: 4 chunks over one
     * edge in each of two */
    assert_int_equal(mc_sim_least_work(one, t), MC_SIM_WORK_PER_FLOW * 4);
    assert_int_equal(mc_sim_least_work(all, t), MC_SIM_WORK_PER_FLOW * 8);
    int64_t short_of = MC_SIM_WORK_PER_FLOW * 8 - 1;
    assert_int_equal(mc_sim_run_bounded(all, t, &short_of, &res, &err), MC_ERR_TIMEOUT);
    assert_int_equal(short_of, MC_SIM_WORK_PER_FLOW * 8 - 1);
    mc_sched_free(one);
    mc_sched_free(all);
    mc_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_transfer),
        cmocka_unit_test(test_connection_limit),
        cmocka_unit_test(test_connection_limit_shares),
        cmocka_unit_test(test_pipelined_chain),
        cmocka_unit_test(test_chunks_in_flight),
        cmocka_unit_test(test_ramped_chunks),
        cmocka_unit_test(test_two_flows_share_a_link),
        cmocka_unit_test(test_three_flows_share_a_link),
        cmocka_unit_test(test_bounded_work),
        cmocka_unit_test(test_memo),
        cmocka_unit_test(test_memo_unbounded),
        cmocka_unit_test(test_memo_apart),
        cmocka_unit_test(test_memo_resume),
        cmocka_unit_test(test_memo_take),
        cmocka_unit_test(test_memo_cut),
        cmocka_unit_test(test_memo_cut_groups),
        cmocka_unit_test(test_busiest_link_bound),
        cmocka_unit_test(test_maxmin_unequal_bottlenecks),
        cmocka_unit_test(test_tree_branches_share_root_egress),
        cmocka_unit_test(test_phases_in_sequence),
        cmocka_unit_test(test_repeatable_and_bad_route),
        cmocka_unit_test(test_identical_groups_simulated_once),
        cmocka_unit_test(test_horizon),
    };
    return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
