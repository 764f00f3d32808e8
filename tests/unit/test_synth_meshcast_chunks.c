/* Tests for how the meshcast strategy cuts its trees into chunks, on the paper's cluster (one
 * 1.25e9 B/s NIC per host): staggered chunk counts among trees that share a link, which the
 * simulator must find faster than the same trees in lockstep; the smallest chunk it keeps;
 * re-chunking a tree for the share of a link it gets; a tree cut into channels; and the referee's
 * memos of chunk counts and of valid schedules. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/meshcast/mc_meshcast.h"
#include "synth/meshcast/synth_meshcast_run.h"

#define TOPO "topologies/aws-p3.8xlarge-x5.xml"
#define GIB (1ull << 30)

typedef struct fixture {
    mc_topo_t *topo;
    mc_task_t *task;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    mc_err_t err = {0};
    f->task = mc_task_new();
    if (mc_topo_load(TOPO, &f->topo, &err) != MC_OK ||
        mc_task_add_mesh(f->task, "A={gpu:1}@[0]", &err) != MC_OK ||
        mc_task_add_mesh(f->task, "B={gpu:2}@[4,5]", &err) != MC_OK ||
        mc_task_add_move(f->task, "i32[268435456] A[_] -> B[_]", &err) != MC_OK ||
        mc_task_split(f->task, &err) != MC_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    mc_task_free(f->task);
    mc_topo_free(f->topo);
    free(f);
    return 0;
}

/* The 1 GiB piece from GPU 0 to GPUs 4 and 5 (host 1) as three chains 0 -> 4 -> 5 of 8 chunks:
 * the first two (384 MiB each) share host 0's NIC in phase 0, the third (256 MiB) runs alone in
 * phase 1. */
static mc_sched_t *three_chains(const fixture_t *f)
{
    static const uint64_t off[3] = {0, 3 * GIB / 8, 3 * GIB / 4};
    static const uint64_t len[3] = {3 * GIB / 8, 3 * GIB / 8, GIB / 4};
    mc_sched_t *s = mc_sched_new(f->task, f->topo, "meshcast");
    mc_err_t err = {0};
    for (int i = 0; i < 3; i++) {
        int t = mc_sched_add_tree(s, 0, off[i], len[i], 0, i == 2, 8);
        assert_int_equal(mc_sched_add_edge(s, f->topo, t, 0, 4, &err), MC_OK);
        assert_int_equal(mc_sched_add_edge(s, f->topo, t, 4, 5, &err), MC_OK);
    }
    s->nphases = 2;
    mc_sched_plan_rates(s, f->topo);
    assert_int_equal(mc_sched_validate(s, f->topo, NULL), 0);
    return s;
}

static double makespan(const fixture_t *f, const mc_sched_t *s)
{
    mc_sim_result_t res = {0};
    mc_err_t err = {0};
    assert_int_equal(mc_sim_run(s, f->topo, &res, &err), MC_OK);
    double t = res.makespan_s;
    mc_sim_result_free(&res);
    return t;
}

/* Spread 2 over the two trees of phase 0: the second gets 8 x (2 + 2) / 2 = 16 chunks, the tree
 * alone in phase 1 keeps its 8. In lockstep both trees of phase 0 pay their per-message overhead
 * at the same instants and the NIC idles meanwhile; staggered, one moves bytes while the other
 * waits, so the simulator finds the schedule faster. */
static void test_stagger_breaks_lockstep(void **state)
{
    fixture_t *f = *state;
    mc_sched_t *s = three_chains(f);
    double before = makespan(f, s);
    mc_sched_stagger(s, f->topo, 2, 0);
    assert_int_equal(s->trees[0].nchunks, 8);
    assert_int_equal(s->trees[1].nchunks, 16);
    assert_int_equal(s->trees[2].nchunks, 8);
    assert_int_equal(mc_sched_validate(s, f->topo, NULL), 0);
    assert_true(makespan(f, s) < before);
    mc_sched_free(s);
}

/* No chunk below min_chunk: with a tenth of the second tree's bytes, it stops at 10 chunks. */
static void test_stagger_keeps_the_smallest_chunk(void **state)
{
    fixture_t *f = *state;
    mc_sched_t *s = three_chains(f);
    mc_sched_stagger(s, f->topo, 2, 3 * GIB / 8 / 10);
    assert_int_equal(s->trees[1].nchunks, 10);
    mc_sched_free(s);
}

/* A tree that gets a sixteenth of the NIC finishes together with the fifteen others, so its last
 * chunk crosses the NVLink hop behind the NIC together with theirs: it is cut into more chunks
 * than the same tree alone, and into more the smaller its share. */
static void test_chunks_follow_the_planned_rate(void **state)
{
    fixture_t *f = *state;
    mc_cands_t cs = {0};
    mc_err_t err = {0};
    int idx;
    assert_int_equal(mc_cands_push(&cs, f->topo, 0, 0, 2, (int[]){0, 4}, (int[]){4, 5}, &idx, &err),
                     MC_OK);
    const mc_cand_t *c = &cs.c[idx];
    int alone = mc_cand_chunks(c, GIB, 0, 0);
    int sixteenth = mc_cand_chunks(c, GIB, 0, 1.25e9 / 16);
    assert_true(sixteenth > alone);
    assert_true(mc_cand_chunks(c, GIB, 0, 1.25e9 / 64) > sixteenth);
    mc_cands_free(&cs);
}

/* A piece of the given bytes from GPU 0 to GPUs 4 and 5 (host 1) as one chain 0 -> 4 -> 5 in n
 * chunks, on a task of its own. */
static mc_sched_t *one_chain(const fixture_t *f, mc_task_t *task, uint64_t bytes, int n)
{
    mc_sched_t *s = mc_sched_new(task, f->topo, "meshcast");
    mc_err_t err = {0};
    int t = mc_sched_add_tree(s, 0, 0, bytes, 0, 0, n);
    assert_int_equal(mc_sched_add_edge(s, f->topo, t, 0, 4, &err), MC_OK);
    assert_int_equal(mc_sched_add_edge(s, f->topo, t, 4, 5, &err), MC_OK);
    mc_sched_plan_rates(s, f->topo);
    return s;
}

/* 16 MiB as one chain alone on host 0's NIC idles the NIC for the per-message overhead between its
 * chunks, so at its best chunk count (searched here over every count up to 1024) it still pays
 * the fill of the NVLink hop behind the NIC. Cut into 4 channels over consecutive quarters,
 * channel j in 16 x (4 + j) / 4 chunks, one channel's overhead falls while another moves bytes:
 * faster than the chain at any chunk count. */
static void test_channels_beat_the_best_chunk_count(void **state)
{
    fixture_t *f = *state;
    const uint64_t bytes = 16u << 20;
    mc_task_t *task = mc_task_new();
    mc_err_t err = {0};
    assert_int_equal(mc_task_add_mesh(task, "A={gpu:1}@[0]", &err), MC_OK);
    assert_int_equal(mc_task_add_mesh(task, "B={gpu:2}@[4,5]", &err), MC_OK);
    assert_int_equal(mc_task_add_move(task, "i32[4194304] A[_] -> B[_]", &err), MC_OK);
    assert_int_equal(mc_task_split(task, &err), MC_OK);
    double best = HUGE_VAL;
    for (int n = 1; n <= 1024; n++) {
        mc_sched_t *s = one_chain(f, task, bytes, n);
        double t = makespan(f, s);
        best = t < best ? t : best;
        mc_sched_free(s);
    }
    mc_sched_t *s = one_chain(f, task, bytes, 16);
    mc_sched_channels(s, f->topo, 4, 1, 0, 0, 0);
    assert_int_equal(s->ntrees, 4);
    for (int j = 0; j < 4; j++) {
        const mc_tree_t *t = &s->trees[j];
        assert_int_equal(t->offset, (uint64_t)j * bytes / 4);
        assert_int_equal(t->bytes, bytes / 4);
        assert_int_equal(t->nchunks, 16 * (4 + j) / 4);
        assert_int_equal(t->nedges, 2);
        assert_int_equal(t->edges[1].parent, 4);
        assert_int_equal(t->edges[1].child, 5);
    }
    assert_int_equal(mc_sched_validate(s, f->topo, NULL), 0);
    double ch = makespan(f, s);
    assert_true(ch < best);
    mc_sched_free(s);
    mc_task_free(task);
}

/* No channel below min_chunk: a tree of 3.5 min_chunk bytes becomes 3 channels, the last with the
 * rest, each in at most as many chunks as min_chunk allows. */
static void test_channels_keep_the_smallest_chunk(void **state)
{
    fixture_t *f = *state;
    mc_sched_t *s = mc_sched_new(f->task, f->topo, "meshcast");
    mc_err_t err = {0};
    const uint64_t min = 1u << 20, bytes = 7 * min / 2;
    int t = mc_sched_add_tree(s, 0, 0, bytes, 0, 0, 4);
    assert_int_equal(mc_sched_add_edge(s, f->topo, t, 0, 4, &err), MC_OK);
    mc_sched_channels(s, f->topo, 8, 1, min, min, 0);
    assert_int_equal(s->ntrees, 3);
    uint64_t sum = 0;
    for (int j = 0; j < 3; j++) {
        assert_true(s->trees[j].bytes >= min);
        assert_int_equal(s->trees[j].offset, sum);
        assert_int_equal(s->trees[j].nchunks, 1);
        sum += s->trees[j].bytes;
    }
    assert_int_equal(sum, bytes);
    mc_sched_free(s);
}

/* Only the trees of min_bytes or more are cut: of the three chains (384, 384 and 256 MiB), the
 * two of phase 0 become two channels each, the one of phase 1 stays whole; every byte is still
 * delivered once. */
static void test_channels_only_the_large_trees(void **state)
{
    fixture_t *f = *state;
    mc_sched_t *s = three_chains(f);
    mc_sched_channels(s, f->topo, 2, 1, 0, 0, 300ull << 20);
    assert_int_equal(s->ntrees, 5);
    assert_int_equal(s->trees[2].bytes, GIB / 4);
    assert_int_equal(s->trees[2].nchunks, 8);
    for (int t = 0; t < 5; t++)
        if (t != 2)
            assert_int_equal(s->trees[t].bytes, 3 * GIB / 16);
    assert_int_equal(mc_sched_validate(s, f->topo, NULL), 0);
    mc_sched_free(s);
}

/* The referee's memo of chunk counts (synth_meshcast_chunks.c) on random trees of up to 12 edges
 * (costs drawn from a few values, so that trees repeat), alone or at a planned rate: every count
 * is mc_cand_chunks' for the tree, bytes and rate; a tree asked again in other arrays (another
 * piece's tree of the same shape) is not searched again; a tree whose one hop differs by one ulp,
 * or the same tree with other bytes or at another rate, is. */
static void test_chunk_memo(void **state)
{
    (void)state;
    enum { E = 12, TREES = 400 };
    double spb[2][E], conn[2][E], hop[2][E];
    int up[2][E];
    uint64_t seed = 31;
    const uint64_t sizes[3] = {4u << 20, 16u << 20, 3u << 18};
    mc_chunk_memo_t *m = mc_chunk_memo_new();
#define RND(n) ((int)((seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 33) % (n))
    for (int t = 0; t < TREES; t++) {
        mc_cand_t c[2] = {{.nedges = 1 + RND(E)}};
        for (int e = 0; e < c[0].nedges; e++) {
            spb[0][e] = 1.0 / (12e9 * (1 + RND(3)));
            conn[0][e] = RND(2) ? 0 : 1.0 / 20e9;
            hop[0][e] = 1e-6 * (1 + RND(3));
            up[0][e] = e == 0 ? -1 : RND(e + 1) - 1;
        }
        memcpy(spb[1], spb[0], sizeof spb[0]);
        memcpy(conn[1], conn[0], sizeof conn[0]);
        memcpy(hop[1], hop[0], sizeof hop[0]);
        memcpy(up[1], up[0], sizeof up[0]);
        for (int k = 0; k < 2; k++)
            c[k] = (mc_cand_t){.nedges = c[0].nedges, .edge_spb = spb[k], .edge_conn_spb = conn[k],
                               .edge_hop = hop[k], .edge_up = up[k]};
        uint64_t bytes = sizes[RND(3)];
        double rate = RND(2) ? 0 : 1e9 * (1 + RND(4)); /* alone, or at a planned share */
        mc_chunk_memo_t *one = mc_chunk_memo_new(); /* this tree's alone */
        int n = mc_chunk_memo_get(m, &c[0], bytes, rate);
        assert_int_equal(n, mc_cand_chunks(&c[0], bytes, 0, rate));
        assert_int_equal(mc_chunk_memo_get(one, &c[0], bytes, rate), n);
        assert_int_equal(mc_chunk_memo_get(one, &c[1], bytes, rate), n);
        assert_int_equal(mc_chunk_memo_size(one), 1);
        hop[1][c[0].nedges - 1] = nextafter(hop[1][c[0].nedges - 1], 1.0);
        assert_int_equal(mc_chunk_memo_get(one, &c[1], bytes, rate),
                         mc_cand_chunks(&c[1], bytes, 0, rate));
        assert_int_equal(mc_chunk_memo_size(one), 2);
        assert_int_equal(mc_chunk_memo_get(one, &c[0], bytes + 1, rate),
                         mc_cand_chunks(&c[0], bytes + 1, 0, rate));
        assert_int_equal(mc_chunk_memo_size(one), 3);
        assert_int_equal(mc_chunk_memo_get(one, &c[0], bytes, rate + 1e8),
                         mc_cand_chunks(&c[0], bytes, 0, rate + 1e8));
        assert_int_equal(mc_chunk_memo_size(one), 4);
        assert_int_equal(mc_chunk_memo_get(m, &c[1], bytes, rate),
                         mc_cand_chunks(&c[1], bytes, 0, rate));
        mc_chunk_memo_free(one);
    }
#undef RND
    assert_true(mc_chunk_memo_size(m) < 2 * TREES); /* trees repeated: each searched once */
    mc_chunk_memo_free(m);
}

/* The referee's memo of valid schedules (mc_valid_memo_check) answers what mc_sched_validate does:
 * a copy of a valid schedule is valid; a schedule that differs from it only in what validation
 * reads (a range, a rate, a piece that does not exist) is validated and reported. */
static void test_valid_memo(void **state)
{
    fixture_t *f = *state;
    mc_valid_memo_t *m = mc_valid_memo_new();
    mc_sched_t *s = three_chains(f);
    mc_buf_t buf = {0};
    assert_int_equal(mc_valid_memo_check(m, s, f->topo, NULL), 0);
    for (int bad = 0; bad < 4; bad++) {
        mc_sched_t *d = mc_meshcast_copy(s, f->topo);
        if (bad == 1)
            d->trees[1].offset -= 4096; /* bytes received twice, the last ones never */
        else if (bad == 2)
            d->trees[0].rate *= 10; /* above host 0's NIC beside tree 1 */
        else if (bad == 3)
            d->trees[2].piece = 99;
        int n = mc_valid_memo_check(m, d, f->topo, &buf);
        assert_int_equal(n, mc_sched_validate(d, f->topo, NULL));
        assert_true(bad ? n > 0 : n == 0);
        mc_sched_free(d);
    }
    assert_non_null(strstr(buf.data, "more than once"));
    assert_non_null(strstr(buf.data, "above its"));
    assert_non_null(strstr(buf.data, "does not exist"));
    mc_buf_free(&buf);
    mc_sched_free(s);
    mc_valid_memo_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stagger_breaks_lockstep),
        cmocka_unit_test(test_stagger_keeps_the_smallest_chunk),
        cmocka_unit_test(test_chunks_follow_the_planned_rate),
        cmocka_unit_test(test_channels_beat_the_best_chunk_count),
        cmocka_unit_test(test_channels_keep_the_smallest_chunk),
        cmocka_unit_test(test_channels_only_the_large_trees),
        cmocka_unit_test(test_chunk_memo),
        cmocka_unit_test(test_valid_memo),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
