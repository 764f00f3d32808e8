/* Tests for sched/: validate accepts a valid schedule and catches each way of breaking it, one
 * violation each (a missing edge, a link shared in a phase, a root that does not hold the data yet,
 * a destination left without some bytes, bytes received twice, an edge whose parent is not in the
 * tree, a route that does not reach the child), planned rates, chunks (equal and ramped), peak
 * memory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/test_sched_fixture.h"

/* Validates s, expects exactly want violations and, when want > 0, that the report contains text. */
static void expect_violations(mc_sched_t *s, const fixture_t *fx, int want, const char *text)
{
    mc_buf_t out = {0};
    int n = mc_sched_validate(s, fx->topo, &out);
    if (n != want || (text && (!out.data || !strstr(out.data, text))))
        fail_msg("%d violations (want %d with \"%s\"):\n%s", n, want, text ? text : "",
                 out.data ? out.data : "");
    int lines = 0;
    for (size_t i = 0; i < out.len; i++)
        lines += out.data[i] == '\n';
    assert_int_equal(lines, n);
    mc_buf_free(&out);
    mc_sched_free(s);
}

static void test_valid(void **state)
{
    fixture_t *fx = *state;
    expect_violations(fx_valid(fx, 1), fx, 0, NULL);
    expect_violations(fx_valid(fx, 4), fx, 0, NULL);
}

static void test_missing_edge(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = fx_valid(fx, 1);
    s->trees[1].nedges = 0;
    expect_violations(s, fx, 1, "GPU 3 never receives bytes [0, 2048)");
}

/* The valid schedule with tree 1 also sent from GPU0: both trees cross GPU0 -> sw0 in phase 0. */
static mc_sched_t *from_gpu0(const fixture_t *fx)
{
    mc_sched_t *s = fx_valid(fx, 1);
    s->trees[1].nedges = 0;
    s->trees[1].root = 0;
    fx_edge(s, fx->topo, 1, 3, (int[]){0, FX_SW, 3});
    return s;
}

static void test_link_shared_in_phase(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = from_gpu0(fx);
    expect_violations(s, fx, 1, "phase 0: link h0/GPU0 -> sw0 is shared by 2 trees");
}

/* Shared links are reported phase by phase, link by link, each naming the first tree without a
 * rate and the lowest and highest trees that use it: trees 0 and 1 share GPU0 -> sw0, trees 1
 * and 3 sw0 -> GPU3 in phase 0; tree 2, alone in phase 1 on links trees 0 and 1 use, shares
 * nothing. Trees 2 and 3 also bring GPU 3 its rows again. */
static void test_shared_links_reported_in_order(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = from_gpu0(fx);
    mc_buf_t out = {0};
    int t2 = mc_sched_add_tree(s, fx->piece_of[3], 0, 2048, 0, 1, 1);
    fx_edge(s, fx->topo, t2, 3, (int[]){0, FX_SW, 3});
    int t3 = mc_sched_add_tree(s, fx->piece_of[3], 0, 2048, 1, 0, 1);
    fx_edge(s, fx->topo, t3, 3, (int[]){1, FX_SW, 3});
    assert_int_equal(mc_sched_validate(s, fx->topo, &out), 4);
    assert_string_equal(out.data,
                        "piece 1: GPU 3 receives bytes [0, 2048) more than once (again in tree 3)\n"
                        "piece 1: GPU 3 receives bytes [0, 2048) more than once (again in tree 2)\n"
                        "phase 0: link h0/GPU0 -> sw0 is shared by 2 trees and tree 0 states no "
                        "rate (trees 0 and 1 use it)\n"
                        "phase 0: link sw0 -> h0/GPU3 is shared by 2 trees and tree 1 states no "
                        "rate (trees 1 and 3 use it)\n");
    mc_buf_free(&out);
    mc_sched_free(s);
}

static void test_shared_link_in_other_phases_or_with_rates(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = from_gpu0(fx);
    s->trees[1].phase = 1;
    s->nphases = 2;
    expect_violations(s, fx, 0, NULL);

    /* same phase, planned rates: each gets half of GPU0 -> sw0 */
    s = from_gpu0(fx);
    mc_sched_plan_rates(s, fx->topo);
    assert_float_equal(s->trees[0].rate, FX_BW / 2, 1);
    assert_float_equal(s->trees[1].rate, FX_BW / 2, 1);
    expect_violations(s, fx, 0, NULL);

    s = from_gpu0(fx);
    s->trees[0].rate = 60e9;
    s->trees[1].rate = 50e9;
    expect_violations(s, fx, 1, "planned at 110 GB/s, above its 100 GB/s");
}

/* A tree that crosses one link twice (GPU0 -> sw0 for both children) loads it twice its rate. */
static void test_planned_rates_count_crossings(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = mc_sched_new(fx->task, fx->topo, "test");
    int a = mc_sched_add_tree(s, fx->piece_of[2], 0, 2048, 0, 0, 1);
    fx_edge(s, fx->topo, a, 3, (int[]){0, FX_SW, 2});
    fx_edge(s, fx->topo, a, 3, (int[]){0, FX_SW, 3}); /* GPU3 relays rows it does not need */
    int b = mc_sched_add_tree(s, fx->piece_of[3], 0, 2048, 0, 0, 1);
    fx_edge(s, fx->topo, b, 3, (int[]){0, FX_SW, 3});
    mc_sched_plan_rates(s, fx->topo);
    /* GPU0 -> sw0 carries 2 r_a + r_b <= B and sw0 -> GPU3 carries r_a + r_b <= B: B/3 each */
    assert_float_equal(s->trees[a].rate, FX_BW / 3, 1);
    assert_float_equal(s->trees[b].rate, FX_BW / 3, 1);
    expect_violations(s, fx, 0, NULL);
}

static void test_root_does_not_hold(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = fx_valid(fx, 1);
    s->trees[1].nedges = 0;
    s->trees[1].root = 2;
    fx_edge(s, fx->topo, 1, 3, (int[]){2, FX_SW, 3});
    expect_violations(s, fx, 1, "tree 1: root GPU 2 does not hold bytes [0, 2048)");
}

/* A GPU that received a range in an earlier phase may root a tree for it. */
static void test_root_received_earlier(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = mc_sched_new(fx->task, fx->topo, "test");
    int p3 = fx->piece_of[3];
    int a = mc_sched_add_tree(s, fx->piece_of[2], 0, 2048, 0, 0, 1);
    fx_edge(s, fx->topo, a, 3, (int[]){0, FX_SW, 2});
    int r = mc_sched_add_tree(s, p3, 0, 2048, 1, 0, 1); /* GPU2 relays piece 3 ... */
    fx_edge(s, fx->topo, r, 3, (int[]){1, FX_SW, 2});
    int b = mc_sched_add_tree(s, p3, 0, 2048, 2, 1, 1); /* ... to GPU3 in phase 1 */
    fx_edge(s, fx->topo, b, 3, (int[]){2, FX_SW, 3});
    /* in phase 0 both trees enter GPU2 through sw0 -> GPU2: one violation */
    expect_violations(s, fx, 1, "link sw0 -> h0/GPU2 is shared");

    s = mc_sched_new(fx->task, fx->topo, "test");
    a = mc_sched_add_tree(s, fx->piece_of[2], 0, 2048, 0, 0, 1);
    fx_edge(s, fx->topo, a, 3, (int[]){0, FX_SW, 2});
    r = mc_sched_add_tree(s, p3, 0, 2048, 1, 1, 1);
    fx_edge(s, fx->topo, r, 3, (int[]){1, FX_SW, 2});
    b = mc_sched_add_tree(s, p3, 0, 2048, 2, 1, 1); /* same phase as its delivery: too early */
    fx_edge(s, fx->topo, b, 3, (int[]){2, FX_SW, 3});
    expect_violations(s, fx, 1, "tree 2: root GPU 2 does not hold");
    s = mc_sched_new(fx->task, fx->topo, "test");
    a = mc_sched_add_tree(s, fx->piece_of[2], 0, 2048, 0, 0, 1);
    fx_edge(s, fx->topo, a, 3, (int[]){0, FX_SW, 2});
    r = mc_sched_add_tree(s, p3, 0, 2048, 1, 1, 1);
    fx_edge(s, fx->topo, r, 3, (int[]){1, FX_SW, 2});
    b = mc_sched_add_tree(s, p3, 0, 2048, 2, 2, 1);
    fx_edge(s, fx->topo, b, 3, (int[]){2, FX_SW, 3});
    expect_violations(s, fx, 0, NULL);
}

static void test_destination_short_of_bytes(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = fx_valid(fx, 1);
    s->trees[0].bytes = 1024;
    expect_violations(s, fx, 1, "GPU 2 never receives bytes [1024, 2048)");
}

static void test_bytes_received_twice(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = fx_valid(fx, 1);
    int t = mc_sched_add_tree(s, fx->piece_of[2], 1024, 1024, 0, 1, 1);
    fx_edge(s, fx->topo, t, 3, (int[]){0, FX_SW, 2});
    expect_violations(s, fx, 1, "GPU 2 receives bytes [1024, 2048) more than once");
}

static void test_parent_not_in_tree(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = mc_sched_new(fx->task, fx->topo, "test");
    int a = mc_sched_add_tree(s, fx->piece_of[3], 0, 2048, 0, 0, 1);
    fx_edge(s, fx->topo, a, 3, (int[]){2, FX_SW, 3}); /* GPU2 has nothing of this tree yet */
    fx_edge(s, fx->topo, a, 3, (int[]){0, FX_SW, 2});
    int b = mc_sched_add_tree(s, fx->piece_of[2], 0, 2048, 1, 0, 1);
    fx_edge(s, fx->topo, b, 2, (int[]){1, 0});
    fx_edge(s, fx->topo, b, 3, (int[]){0, FX_SW, 2});
    /* tree 1 reaches GPU0 (a holder) over NVLink, then crosses GPU0 -> sw0 -> GPU2 as tree 0
     * does: the parent violation and two shared links (GPU2 only relays tree 0's piece) */
    mc_buf_t out = {0};
    int n = mc_sched_validate(s, fx->topo, &out);
    print_message("%s", out.data);
    assert_int_equal(n, 3);
    assert_non_null(strstr(out.data, "tree 0, edge 2 -> 3: GPU 2 is not in the tree yet"));
    mc_buf_free(&out);
    mc_sched_free(s);
}

static void test_route_does_not_reach_child(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = fx_valid(fx, 1);
    s->trees[1].edges[0].child = 2; /* the route still ends at GPU3 */
    s->trees[1].edges[0].nlinks = 1;
    s->trees[1].nedges = 1;
    mc_buf_t out = {0};
    int n = mc_sched_validate(s, fx->topo, &out);
    assert_non_null(strstr(out.data, "tree 1, edge 1 -> 2: the route ends at sw0, not at GPU 2"));
    assert_non_null(strstr(out.data, "GPU 3 never receives"));
    assert_int_equal(n, 2); /* GPU2 is not a destination of tree 1's piece: a relay, no repeat */
    mc_buf_free(&out);
    mc_sched_free(s);
}

static void test_bad_ranges(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = fx_valid(fx, 1);
    s->trees[0].piece = 7;
    expect_violations(s, fx, 2, "tree 0: piece 7 does not exist");
    s = fx_valid(fx, 1);
    s->trees[0].nchunks = 4096; /* more chunks than bytes */
    expect_violations(s, fx, 1, "2048 bytes cannot be cut into 4096 non-empty chunks");
    s = fx_valid(fx, 1);
    s->trees[0].nchunks = 1024; /* 2 bytes each, but the ramp's end chunks get a sixteenth */
    s->trees[0].ramp = 2;
    expect_violations(s, fx, 1, "2048 bytes cannot be cut into 1024 non-empty chunks of its ramp");
}

static void test_chunks(void **state)
{
    mc_tree_t t = {.bytes = 10, .nchunks = 4};
    uint64_t off, len, sum = 0;
    for (int k = 0; k < 4; k++) {
        mc_tree_chunk(&t, k, &off, &len);
        assert_int_equal(off, 3 * k);
        assert_int_equal(len, k < 3 ? 3 : 1);
        sum += len;
    }
    assert_int_equal(sum, 10);
}

/* Ramped chunks: weights 2^(min(k, r) + min(n - 1 - k, r)), starts floor(bytes W(k) / W(n)).
 * 1000 bytes in 5 chunks, ramp 1: weights 2 4 4 4 2 of 16: 125 250 250 250 125. 3 chunks, ramp 2
 * (shorter than the ramps): weights 4 4 4, equal thirds. 7 chunks, ramp 2: 4 8 16 16 16 8 4 of
 * 72. */
static void test_chunks_ramped(void **state)
{
    (void)state;
    static const struct {
        uint64_t bytes;
        int n, ramp;
        uint64_t len[7], most;
    } cases[] = {{1000, 5, 1, {125, 250, 250, 250, 125}, 250},
                 {1000, 3, 2, {333, 333, 334}, 334},
                 {7200, 7, 2, {400, 800, 1600, 1600, 1600, 800, 400}, 1600}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mc_tree_t t = {.bytes = cases[i].bytes, .nchunks = cases[i].n, .ramp = cases[i].ramp};
        uint64_t off, len, at = 0;
        for (int k = 0; k < t.nchunks; k++) {
            mc_tree_chunk(&t, k, &off, &len);
            assert_int_equal(off, at);
            assert_int_equal(len, cases[i].len[k]);
            at += len;
        }
        assert_int_equal(at, t.bytes);
        assert_int_equal(mc_tree_chunk_max(&t), cases[i].most);
        assert_true(mc_tree_chunks_valid(&t));
    }
    /* over random trees: the chunks tile the range, none empty when mc_tree_chunks_valid says
     * so (and one empty when it does not), none above mc_tree_chunk_max */
    srand(11);
    for (int i = 0; i < 2000; i++) {
        mc_tree_t t = {.bytes = 1 + (uint64_t)(rand() % 5000), .nchunks = 1 + rand() % 40,
                       .ramp = rand() % (MC_SCHED_MAX_RAMP + 1)};
        if (i % 10 == 0)
            t.bytes = ((uint64_t)1 << 40) + (uint64_t)rand(); /* products beyond 64 bits */
        uint64_t off, len, at = 0, most = mc_tree_chunk_max(&t);
        int empty = 0;
        for (int k = 0; k < t.nchunks; k++) {
            mc_tree_chunk(&t, k, &off, &len);
            assert_int_equal(off, at);
            assert_true(len <= most);
            empty |= len == 0;
            at += len;
        }
        assert_int_equal(at, t.bytes);
        if (mc_tree_chunks_valid(&t))
            assert_false(empty);
        else if (!t.ramp)
            assert_true(empty);
    }
}

/* GPU0 holds the whole 4096-byte tensor and needs nothing: 4096. GPU2 needs 2048. A relay
 * through GPU3 adds the 2048 bytes of rows 0-1 that GPU3 does not need. */
static void test_peak_memory(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = fx_valid(fx, 1);
    assert_int_equal(mc_sched_peak_mem(s, 0), 4096);
    assert_int_equal(mc_sched_peak_mem(s, 2), 2048);
    assert_int_equal(mc_sched_peak_mem(s, 3), 2048);
    s->trees[0].nedges = 0;
    s->trees[1].phase = 1; /* keep tree 0's detour off tree 1's links */
    s->nphases = 2;
    fx_edge(s, fx->topo, 0, 2, (int[]){0, 1}); /* GPU0 -> GPU1 (a holder: relays it) */
    fx_edge(s, fx->topo, 0, 3, (int[]){1, FX_SW, 3});
    fx_edge(s, fx->topo, 0, 3, (int[]){3, FX_SW, 2});
    assert_int_equal(mc_sched_peak_mem(s, 3), 4096);
    assert_int_equal(mc_sched_peak_mem(s, 1), 4096 + 2048);
    s->workspace = 100;
    assert_int_equal(mc_sched_peak_mem(s, 2), 2148);
    s->mem_limit = 4200;
    /* GPU1: 4096 + 2048 + 100 = 6244; GPU3: 4096 + 100 = 4196 fits */
    expect_violations(s, fx, 1, "GPU 1: peak memory 6244 bytes is above the stated bound of 4200");
}

/* Links of capacity 10 and 4. Flow 0 crosses link 0 once and link 1 twice; flow 1 uses link 0,
 * flow 2 link 1, flow 3 nothing. Link 1 binds first: 4 / (2 + 1) = 4/3 for flows 0 and 2; flow
 * 1 gets the rest of link 0, 10 - 4/3 = 26/3. Alone, flow 0 gets min(10, 4 / 2) = 2. */
static void test_maxmin_solver(void **state)
{
    const int off[] = {0, 2, 3, 4, 4};
    const int links[] = {0, 1, 0, 1};
    const double weight[] = {1, 2, 1, 1}, cap[] = {10, 4};
    double rate[4];
    mc_sched_maxmin_t *m = mc_sched_maxmin_new(2);
    mc_sched_maxmin_solve(m, 4, off, links, weight, cap, rate);
    assert_float_equal(rate[0], 4.0 / 3, 1e-12);
    assert_float_equal(rate[1], 26.0 / 3, 1e-12);
    assert_float_equal(rate[2], 4.0 / 3, 1e-12);
    assert_true(rate[3] == HUGE_VAL);
    mc_sched_maxmin_solve(m, 1, off, links, weight, cap, rate);
    assert_float_equal(rate[0], 2.0, 1e-12);
    mc_sched_maxmin_free(m);
}

/* Progressive filling as the solver defines it, with its priority queue an unsorted array: pop
 * the least (key, link); a link whose flows are all fixed is dropped; one whose level rose above
 * its key goes back at its level; else its unfixed flows, in flow order, are fixed at its level
 * and charged to every link they cross. */
static void ref_maxmin(int nlinks, int nflows, const int *off, const int *links,
                       const double *weight, const double *cap, double *rate)
{
    double *rem = calloc((size_t)nlinks, sizeof(double)), *wsum = calloc((size_t)nlinks, 8);
    double *key = calloc((size_t)nlinks, sizeof(double));
    int *left = calloc((size_t)nlinks, sizeof(int)), *q = calloc((size_t)nlinks, sizeof(int));
    char *used = calloc((size_t)nlinks, 1), *fixed = calloc((size_t)nflows, 1);
    int nq = 0;
    for (int j = 0; j < off[nflows]; j++) {
        int l = links[j];
        if (!used[l]) {
            used[l] = 1;
            rem[l] = cap[l];
            q[nq++] = l;
        }
        wsum[l] += weight ? weight[j] : 1.0;
        left[l]++;
    }
    for (int i = 0; i < nq; i++)
        key[q[i]] = rem[q[i]] > 0 ? rem[q[i]] / wsum[q[i]] : 0.0;
    for (int f = 0; f < nflows; f++) {
        fixed[f] = off[f + 1] == off[f];
        rate[f] = HUGE_VAL;
    }
    while (nq > 0) {
        int b = 0;
        for (int i = 1; i < nq; i++)
            if (key[q[i]] < key[q[b]] || (key[q[i]] == key[q[b]] && q[i] < q[b]))
                b = i;
        int l = q[b];
        q[b] = q[--nq];
        if (left[l] <= 0)
            continue;
        double x = rem[l] > 0 ? rem[l] / wsum[l] : 0.0;
        if (x > key[l]) {
            key[l] = x;
            q[nq++] = l;
            continue;
        }
        for (int f = 0; f < nflows; f++) {
            int on = 0;
            for (int j = off[f]; j < off[f + 1]; j++)
                on |= links[j] == l;
            if (!on || fixed[f])
                continue;
            fixed[f] = 1;
            rate[f] = x;
            for (int j = off[f]; j < off[f + 1]; j++) {
                double w = weight ? weight[j] : 1.0;
                rem[links[j]] -= w * x;
                wsum[links[j]] -= w;
                left[links[j]]--;
            }
        }
    }
    free(rem);
    free(wsum);
    free(key);
    free(left);
    free(q);
    free(used);
    free(fixed);
}

/* Random flow sets for the solver's tests: up to 600 links and 400 flows (every fourth round),
 * else up to 60 and 80; bandwidths small multiples of one that is not a round number, paths of 1
 * to 5 links, a quarter of them the previous flow's again, weights 0.5, 1 or 1.5. */
#define RF_LINKS 600
#define RF_FLOWS 400
typedef struct rnd_flows {
    uint64_t seed;
    int nlinks, nflows;
    int off[RF_FLOWS + 1], links[6 * RF_FLOWS];
    double weight[6 * RF_FLOWS], cap[RF_LINKS];
} rnd_flows_t;

static int rnd(rnd_flows_t *r, int n)
{
    r->seed = r->seed * 6364136223846793005ull + 1442695040888963407ull;
    return (int)(r->seed >> 33) % n;
}

static void rnd_flows_draw(rnd_flows_t *r, int round)
{
    int n = 0;
    r->nlinks = 2 + rnd(r, round % 4 == 3 ? RF_LINKS - 2 : 60);
    r->nflows = 2 + rnd(r, round % 4 == 3 ? RF_FLOWS - 2 : 80);
    for (int l = 0; l < r->nlinks; l++)
        r->cap[l] = 370.8e9 / 7 * (1 + rnd(r, 8));
    r->off[0] = 0;
    for (int f = 0; f < r->nflows; f++) {
        if (f > 0 && rnd(r, 4) == 0) { /* the previous flow's path again */
            for (int j = r->off[f - 1]; j < r->off[f]; j++) {
                r->links[n] = r->links[j];
                r->weight[n++] = r->weight[j];
            }
        } else {
            for (int k = 1 + rnd(r, 5); k > 0; k--) {
                r->links[n] = rnd(r, r->nlinks);
                r->weight[n++] = 0.5 * (1 + rnd(r, 3));
            }
        }
        r->off[f + 1] = n;
    }
}

/* The solver on random flow sets gives the reference's rates to the bit: up to 600 links, so
 * that both its ways of picking bottlenecks run (a scan over the open links on small solves, a
 * sort of the links on large ones), weighted and not; bandwidths are small multiples of one that
 * is not a round number and paths repeat, so that levels tie in exact arithmetic and rounding
 * breaks the ties both ways: a level then drops below the key it was queued at, where the order
 * of the queue's keys decides which link is fixed first. */
static void test_maxmin_random(void **state)
{
    (void)state;
    rnd_flows_t *r = calloc(1, sizeof *r);
    double got[RF_FLOWS], want[RF_FLOWS];
    mc_sched_maxmin_t *m = mc_sched_maxmin_new(RF_LINKS);
    r->seed = 12345;
    for (int round = 0; round < 4000; round++) {
        rnd_flows_draw(r, round);
        const double *w = round % 2 ? r->weight : NULL;
        mc_sched_maxmin_solve(m, r->nflows, r->off, r->links, w, r->cap, got);
        ref_maxmin(r->nlinks, r->nflows, r->off, r->links, w, r->cap, want);
        for (int f = 0; f < r->nflows; f++)
            if (memcmp(&got[f], &want[f], sizeof(double)) != 0)
                fail_msg("round %d, flow %d of %d: %.17g, want %.17g", round, f, r->nflows,
                         got[f], want[f]);
    }
    mc_sched_maxmin_free(m);
    free(r);
}

/* The solver's larger problems (above its scan's 256 links) on link ids up to 2^17, so that its
 * sort of the links takes three bytes of link id: paths as the simulator's, a run of links shared
 * by flows from one GPU and one into another, where many levels tie (equal bandwidths, equal
 * counts) and some links have no capacity left (level 0); the rates match the reference's to
 * the bit. */
static void test_maxmin_wide_ids(void **state)
{
    (void)state;
    uint64_t seed = 777;
    int nids = 1 << 17, nflows_max = 900, ngpus = 48, per = 6;
    int *off = malloc(sizeof(int) * (size_t)(nflows_max + 1));
    int *links = malloc(sizeof(int) * (size_t)(2 * per * nflows_max));
    double *cap = malloc(sizeof(double) * (size_t)nids);
    double *got = malloc(sizeof(double) * (size_t)nflows_max);
    double *want = malloc(sizeof(double) * (size_t)nflows_max);
    int *id = malloc(sizeof(int) * (size_t)(2 * ngpus * per));
    mc_sched_maxmin_t *m = mc_sched_maxmin_new(nids);
#define RND(n) ((int)((seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 33) % (n))
    for (int round = 0; round < 60; round++) {
        /* per GPU, per links out and per links in, each at a random id */
        for (int i = 0; i < 2 * ngpus * per; i++) {
            id[i] = RND(nids);
            cap[id[i]] = RND(20) == 0 ? 0.0 : 48e9 * (1 + RND(3)) / 3;
        }
        int nflows = 200 + RND(nflows_max - 200), n = 0;
        off[0] = 0;
        for (int f = 0; f < nflows; f++) {
            int src = RND(ngpus), dst = RND(ngpus);
            for (int k = 0; k < per; k++)
                links[n++] = id[src * per + k];
            for (int k = 0; k < per; k++)
                links[n++] = id[(ngpus + dst) * per + k];
            off[f + 1] = n;
        }
        mc_sched_maxmin_solve(m, nflows, off, links, NULL, cap, got);
        ref_maxmin(nids, nflows, off, links, NULL, cap, want);
        for (int f = 0; f < nflows; f++)
            if (memcmp(&got[f], &want[f], sizeof(double)) != 0)
                fail_msg("round %d, flow %d of %d: %.17g, want %.17g", round, f, nflows, got[f],
                         want[f]);
    }
#undef RND
    mc_sched_maxmin_free(m);
    free(off);
    free(links);
    free(cap);
    free(got);
    free(want);
    free(id);
}

/* The solver's larger problems on keys that share all but their last bits: capacities a few
 * ulps apart (some equal, a few twice as large), so that its sort of the links' keys by their
 * leading differing bits goes down to the last bits and through groups of equal keys, where the
 * link decides; the rates match the reference's to the bit, weighted and not. */
static void test_maxmin_close_keys(void **state)
{
    (void)state;
    enum { NL = 700, NF = 500 };
    uint64_t seed = 4242;
    int *off = malloc(sizeof(int) * (NF + 1)), *links = malloc(sizeof(int) * 4 * NF);
    double *weight = malloc(sizeof(double) * 4 * NF), *cap = malloc(sizeof(double) * NL);
    double *got = malloc(sizeof(double) * NF), *want = malloc(sizeof(double) * NF);
    mc_sched_maxmin_t *m = mc_sched_maxmin_new(NL);
#define RND(n) ((int)((seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 33) % (n))
    for (int round = 0; round < 40; round++) {
        for (int l = 0; l < NL; l++) {
            double c = 48e9 * (RND(10) == 0 ? 2 : 1);
            for (int u = RND(40); u > 0; u--)
                c = nextafter(c, HUGE_VAL);
            cap[l] = c;
        }
        int n = 0;
        off[0] = 0;
        for (int f = 0; f < NF; f++) {
            for (int k = 1 + RND(4); k > 0; k--) {
                links[n] = RND(NL);
                weight[n++] = 0.5 * (1 + RND(3));
            }
            off[f + 1] = n;
        }
        const double *w = round % 2 ? weight : NULL;
        mc_sched_maxmin_solve(m, NF, off, links, w, cap, got);
        ref_maxmin(NL, NF, off, links, w, cap, want);
        for (int f = 0; f < NF; f++)
            if (memcmp(&got[f], &want[f], sizeof(double)) != 0)
                fail_msg("round %d, flow %d: %.17g, want %.17g", round, f, got[f], want[f]);
    }
#undef RND
    mc_sched_maxmin_free(m);
    free(off);
    free(links);
    free(weight);
    free(cap);
    free(got);
    free(want);
}

/* The rates do not depend on the order of a flow's links (mc_sched_plan_rates lists a tree's
 * links as its edges first cross them): on the flow sets of test_maxmin_random, each flow's
 * links made distinct (a repeated link's weights summed), solved in ascending order and in a
 * random order, weighted and not, give the same rates to the bit. */
static void test_maxmin_link_order(void **state)
{
    (void)state;
    rnd_flows_t *r = calloc(1, sizeof *r);
    int off[RF_FLOWS + 1], up[6 * RF_FLOWS], sh[6 * RF_FLOWS];
    double wup[6 * RF_FLOWS], wsh[6 * RF_FLOWS], got[RF_FLOWS], want[RF_FLOWS];
    mc_sched_maxmin_t *m = mc_sched_maxmin_new(RF_LINKS);
    r->seed = 5151;
    for (int round = 0; round < 2000; round++) {
        rnd_flows_draw(r, round);
        int n = 0;
        off[0] = 0;
        for (int f = 0; f < r->nflows; f++) {
            for (int l = 0; l < r->nlinks; l++) { /* ascending, each link once */
                double w = 0;
                int on = 0;
                for (int j = r->off[f]; j < r->off[f + 1]; j++)
                    if (r->links[j] == l) {
                        w += r->weight[j];
                        on = 1;
                    }
                if (on) {
                    up[n] = sh[n] = l;
                    wup[n] = wsh[n] = w;
                    n++;
                }
            }
            off[f + 1] = n;
            for (int j = off[f + 1] - 1; j > off[f]; j--) { /* shuffled */
                int k = off[f] + rnd(r, j - off[f] + 1), t = sh[j];
                double tw = wsh[j];
                sh[j] = sh[k];
                wsh[j] = wsh[k];
                sh[k] = t;
                wsh[k] = tw;
            }
        }
        int weighted = round % 2;
        mc_sched_maxmin_solve(m, r->nflows, off, up, weighted ? wup : NULL, r->cap, want);
        mc_sched_maxmin_solve(m, r->nflows, off, sh, weighted ? wsh : NULL, r->cap, got);
        for (int f = 0; f < r->nflows; f++)
            if (memcmp(&got[f], &want[f], sizeof(double)) != 0)
                fail_msg("round %d, flow %d: %.17g, want %.17g", round, f, got[f], want[f]);
    }
    mc_sched_maxmin_free(m);
    free(r);
}

/* Flows that stand for several identical ones (mc_sched_maxmin_solve_counted, the simulator's
 * route classes) against the flows written out, on the flow sets of test_maxmin_random: each
 * drawn flow stands for 1 to 4 copies, and the copies are written out interleaved with the other
 * flows' (a copy's place drawn at random). The counted solve gives every copy's rate to the bit;
 * then whole classes are held (a third of them, their rates taken off their links' capacities)
 * and the counted resolve gives the resolve of the copies the same rates. Charging a class once
 * by count x rate instead of count subtractions fails it. */
static void test_maxmin_counted(void **state)
{
    (void)state;
    enum { COPIES = 4 };
    rnd_flows_t *r = calloc(1, sizeof *r);
    int count[RF_FLOWS], cls[COPIES * RF_FLOWS], xoff[COPIES * RF_FLOWS + 1];
    int *xlinks = malloc(sizeof(int) * 6 * COPIES * RF_FLOWS);
    double got[RF_FLOWS], want[COPIES * RF_FLOWS];
    char held[RF_FLOWS], xheld[COPIES * RF_FLOWS];
    mc_sched_maxmin_t *m = mc_sched_maxmin_new(RF_LINKS), *x = mc_sched_maxmin_new(RF_LINKS);
    r->seed = 9090;
    for (int round = 0; round < 3000; round++) {
        rnd_flows_draw(r, round);
        int nx = 0, at = 0;
        for (int f = 0; f < r->nflows; f++) {
            count[f] = 1 + rnd(r, COPIES);
            for (int k = 0; k < count[f]; k++) {
                int i = rnd(r, nx + 1); /* the copy's place among those written so far */
                memmove(&cls[i + 1], &cls[i], sizeof(int) * (size_t)(nx - i));
                cls[i] = f;
                nx++;
            }
        }
        xoff[0] = 0;
        for (int i = 0; i < nx; i++) {
            for (int j = r->off[cls[i]]; j < r->off[cls[i] + 1]; j++)
                xlinks[at++] = r->links[j];
            xoff[i + 1] = at;
        }
        mc_sched_maxmin_solve_counted(m, r->nflows, r->off, r->links, NULL, count, r->cap, got);
        mc_sched_maxmin_solve(x, nx, xoff, xlinks, NULL, r->cap, want);
        for (int step = 0; step < 2; step++) {
            for (int i = 0; i < nx; i++)
                if (memcmp(&got[cls[i]], &want[i], sizeof(double)) != 0)
                    fail_msg("round %d, step %d, copy %d of flow %d (x%d): %.17g, want %.17g",
                             round, step, i, cls[i], count[cls[i]], got[cls[i]], want[i]);
            if (step == 1)
                break;
            for (int f = 0; f < r->nflows; f++)
                held[f] = rnd(r, 3) == 0;
            for (int i = 0; i < nx; i++) {
                xheld[i] = held[cls[i]];
                for (int j = r->off[cls[i]]; xheld[i] && j < r->off[cls[i] + 1]; j++)
                    r->cap[r->links[j]] -= got[cls[i]] / 2;
            }
            mc_sched_maxmin_resolve(m, r->nflows, r->off, r->links, NULL, held, r->cap, got);
            mc_sched_maxmin_resolve(x, nx, xoff, xlinks, NULL, xheld, r->cap, want);
        }
    }
    mc_sched_maxmin_free(m);
    mc_sched_maxmin_free(x);
    free(xlinks);
    free(r);
}

/* mc_sched_maxmin_resolve against the solve of the flows not held alone, on the flow sets of
 * test_maxmin_random: a quarter of the flows held and their rates, or half of them, taken off
 * their links' capacities (a bottleneck's down to nothing), then as many more again on the
 * capacities left (a second resolve on the same index); every eighth round all flows but the last
 * are held, then all. The rates of the flows not held match to the bit, the held ones keep theirs. */
static void test_maxmin_resolve(void **state)
{
    (void)state;
    rnd_flows_t *r = calloc(1, sizeof *r);
    int roff[RF_FLOWS + 1], rlinks[6 * RF_FLOWS];
    double rweight[6 * RF_FLOWS], got[RF_FLOWS], was[RF_FLOWS], want[RF_FLOWS];
    char held[RF_FLOWS];
    mc_sched_maxmin_t *m = mc_sched_maxmin_new(RF_LINKS);
    mc_sched_maxmin_t *fresh = mc_sched_maxmin_new(RF_LINKS);
    r->seed = 4242;
    for (int round = 0; round < 2000; round++) {
        rnd_flows_draw(r, round);
        int nflows = r->nflows, all = round % 8 == 5;
        const double *w = round % 2 ? r->weight : NULL;
        memset(held, 0, sizeof held);
        mc_sched_maxmin_solve(m, nflows, r->off, r->links, w, r->cap, got);
        for (int step = 0; step < 2; step++) {
            int nfree = 0;
            for (int f = 0; f < nflows; f++) {
                if (!held[f] && (all || rnd(r, 4) == 0)) {
                    held[f] = 1;
                    for (int j = r->off[f]; j < r->off[f + 1]; j++)
                        r->cap[r->links[j]] -= rnd(r, 3) == 0 ? got[f] : got[f] / 2;
                }
                nfree += !held[f];
            }
            if (all) { /* all but the last flow held, then all of them */
                held[nflows - 1] = step == 1;
                nfree = step == 0;
            }
            memcpy(was, got, sizeof(double) * (size_t)nflows);
            mc_sched_maxmin_resolve(m, nflows, r->off, r->links, w, held, r->cap, got);
            int k = 0, at = 0;
            roff[0] = 0;
            for (int f = 0; f < nflows; f++) {
                if (held[f])
                    continue;
                for (int j = r->off[f]; j < r->off[f + 1]; j++) {
                    rlinks[at] = r->links[j];
                    rweight[at++] = r->weight[j];
                }
                roff[++k] = at;
            }
            assert_int_equal(k, nfree);
            if (nfree > 0)
                mc_sched_maxmin_solve(fresh, nfree, roff, rlinks, w ? rweight : NULL, r->cap,
                                      want);
            for (int f = 0, i = 0; f < nflows; f++) {
                const double *expect = held[f] ? &was[f] : &want[i++];
                if (memcmp(&got[f], expect, sizeof(double)) != 0)
                    fail_msg("round %d, step %d, flow %d of %d (held %d): %.17g, want %.17g",
                             round, step, f, nflows, held[f], got[f], *expect);
            }
        }
    }
    mc_sched_maxmin_free(m);
    mc_sched_maxmin_free(fresh);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_missing_edge),
        cmocka_unit_test(test_link_shared_in_phase),
        cmocka_unit_test(test_shared_links_reported_in_order),
        cmocka_unit_test(test_shared_link_in_other_phases_or_with_rates),
        cmocka_unit_test(test_planned_rates_count_crossings),
        cmocka_unit_test(test_root_does_not_hold),
        cmocka_unit_test(test_root_received_earlier),
        cmocka_unit_test(test_destination_short_of_bytes),
        cmocka_unit_test(test_bytes_received_twice),
        cmocka_unit_test(test_parent_not_in_tree),
        cmocka_unit_test(test_route_does_not_reach_child),
        cmocka_unit_test(test_bad_ranges),
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_chunks_ramped),
        cmocka_unit_test(test_peak_memory),
        cmocka_unit_test(test_maxmin_solver),
        cmocka_unit_test(test_maxmin_random),
        cmocka_unit_test(test_maxmin_wide_ids),
        cmocka_unit_test(test_maxmin_close_keys),
        cmocka_unit_test(test_maxmin_resolve),
        cmocka_unit_test(test_maxmin_counted),
        cmocka_unit_test(test_maxmin_link_order),
    };
    return cmocka_run_group_tests_name("sched", tests, fx_setup, fx_teardown);
}
