/* Tests for the chunk count of pipelined chains (synth/synth_chunks.c): on a chain of h equal
 * edges (overhead f each, bandwidth B shared by k chains moving alongside) the modelled time
 * (h + c - 1)(f + S k / (c B)) is smallest at c = sqrt((h - 1) S k / (f B)), so the chunk count
 * grows with the square root of the number of chains that share the hops. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "synth/synth_internal.h"

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
        assert_int_equal(synth_add_chain(s, topo, 0, 0, (uint64_t)S, 0, chain, 8, 0, k, &err),
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
    }
    mc_task_free(task);
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks_for_sharers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
