/* Tests for the chunk count of pipelined chains (synth/synth_chunks.c, topo/topo_chain.c): on a
 * chain of h equal edges (overhead f each, bandwidth B shared by k chains moving alongside) with
 * one chunk in flight the modelled time (h + c - 1)(f + S k / (c B)) is smallest at
 * c = sqrt((h - 1) S k / (f B)), so the chunk count grows with the square root of the number of
 * chains that share the hops; with NCCL's 8 in flight the overheads hide behind the bytes and the
 * chain pipelines in NCCL's own steps. On random chains the count chosen is the best of every
 * count tried one by one. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "synth/synth_internal.h"
#include "topo/topo_chain.h"

static void test_chunks_for_sharers(void **state)
{
    (void)state;
    mc_topo_t *topo = NULL;
    mc_task_t *task = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_load("topologies/dgx-h100-x1.xml", &topo, &err), MC_OK);
    assert_int_equal(mc_task_parse_text("mesh A={x:1}@[0]\nmesh B={x:7}@1..7\n"
                                        "move f32[268435456] A[_] -> B[_]\n", "test", &task, &err),
                     MC_OK);
    assert_int_equal(mc_task_split(task, &err), MC_OK);
    static const int chain[] = {0, 1, 2, 3, 4, 5, 6, 7};
    const double S = 1073741824.0, h = 7;
    for (int k = 1; k <= 18; k += 17) {
        mc_sched_t *s = mc_sched_new(task, topo, "test");
        assert_int_equal(synth_add_chain(s, topo, 0, 0, (uint64_t)S, 0, chain, 8, 0, k, 1, &err),
                         MC_OK);
        const mc_tree_edge_t *e = &s->trees[0].edges[0];
        double f = mc_topo_links_delay(topo, e->links, e->nlinks), bw = 0;
        for (int i = 0; i < e->nlinks; i++)
            if (bw == 0 || topo->links[e->links[i]].bw < bw)
                bw = topo->links[e->links[i]].bw;
        double best = sqrt((h - 1) * S * k / (f * bw));
        if (fabs(s->trees[0].nchunks - best) > 1)
            fail_msg("k=%d: %d chunks, closed form %.1f", k, s->trees[0].nchunks, best);
        mc_sched_free(s);
        s = mc_sched_new(task, topo, "test");
        assert_int_equal(synth_add_chain(s, topo, 0, 0, (uint64_t)S, 0, chain, 8, 0, k,
                                         MC_NCCL_STEPS, &err), MC_OK);
        assert_int_equal(s->trees[0].inflight, MC_NCCL_STEPS);
        assert_int_equal(s->trees[0].nchunks, (int)(S / MC_NCCL_STEP_BYTES));
        mc_sched_free(s);
    }
    mc_task_free(task);
    mc_topo_free(topo);
}

static double draw(uint64_t *x, double lo, double hi)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(*x >> 11) / 9007199254740992.0;
}

static void test_chunks_against_every_count(void **state)
{
    (void)state;
    uint64_t x = 7;
    double delay[8], bw[8];
    for (int round = 0; round < 300; round++) {
        int n = 1 + (int)draw(&x, 0, 8), most = 1 + (int)draw(&x, 0, 600);
        int w = round % 3 == 0 ? 1 : round % 3 == 1 ? 2 : MC_NCCL_STEPS;
        double bytes = draw(&x, 1e4, 1e9);
        for (int i = 0; i < n; i++) {
            delay[i] = draw(&x, 1e-6, 3e-5);
            bw[i] = draw(&x, 5e9, 4e11);
        }
        double best = INFINITY;
        for (int c = 1; c <= most; c++)
            best = fmin(best, mc_chain_time(delay, bw, n, bytes, c, w));
        int c = mc_chain_chunks(delay, bw, n, bytes, most, w);
        assert_true(c >= 1 && c <= most);
        double got = mc_chain_time(delay, bw, n, bytes, c, w);
        if (got > best * (1 + 1e-12))
            fail_msg("round %d (%d routes, %d in flight): %d chunks take %.9g, the best %.9g",
                     round, n, w, c, got, best);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks_for_sharers),
        cmocka_unit_test(test_chunks_against_every_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
