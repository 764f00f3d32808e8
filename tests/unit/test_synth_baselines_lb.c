/* Tests for Alpa's host-level greedy load balancing (synth/baselines/synth_lb.c) on small work sets whose
 * outcomes follow by hand from the algorithm: rounds share no worker, every work is placed, a
 * round holds as many works as the workers allow, and sender loads even out. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "synth/synth_internal.h"

/* Each round uses every worker at most once (as sender or receiver). */
static void assert_rounds_disjoint(int nworkers, int nworks, const synth_lb_work_t *w,
                                   const int *sender, const int *round, int nrounds)
{
    for (int r = 0; r < nrounds; r++) {
        int used[16] = {0};
        assert_true(nworkers <= 16);
        for (int i = 0; i < nworks; i++) {
            if (round[i] != r)
                continue;
            assert_int_equal(used[sender[i]], 0);
            used[sender[i]] = 1;
            for (int k = 0; k < w[i].nreceivers; k++) {
                assert_int_equal(used[w[i].receivers[k]], 0);
                used[w[i].receivers[k]] = 1;
            }
        }
    }
    for (int i = 0; i < nworks; i++) {
        assert_in_range(round[i], 0, nrounds - 1);
        int ok = 0;
        for (int k = 0; k < w[i].nsenders; k++)
            ok |= w[i].senders[k] == sender[i];
        assert_true(ok);
    }
}

/* The paper's case 6 (2 source hosts 0-1, 3 destination hosts 2-4, dim0 2-way -> 3-way): works
 * 0->2, 0->3, 1->3, 1->4. No round can hold more than 2 (two senders), and every first round has
 * exactly 2 (whichever work comes first leaves a compatible one); the rest takes 1 or 2 rounds. */
static void test_case6_rounds(void **state)
{
    static const int s0[] = {0}, s1[] = {1}, r2[] = {2}, r3[] = {3}, r4[] = {4};
    const synth_lb_work_t w[] = {
        {1, s0, 1, r2, 10}, {1, s0, 1, r3, 10}, {1, s1, 1, r3, 10}, {1, s1, 1, r4, 10}};
    for (uint64_t seed = 1; seed <= 20; seed++) {
        int sender[4], round[4];
        int n = synth_lb_greedy(5, 4, w, SYNTH_LB_TRIALS, seed, sender, round);
        assert_in_range(n, 2, 3);
        assert_rounds_disjoint(5, 4, w, sender, round, n);
        int first = 0;
        for (int i = 0; i < 4; i++)
            first += round[i] == 0;
        assert_int_equal(first, 2);
    }
}

/* Solves four works that hosts 0 and 1 can both serve; checks the round count and that each
 * host sends two of them. */
static void assert_split_evenly(int nworkers, const synth_lb_work_t *w, uint64_t seed,
                                int expect_rounds)
{
    int sender[4], round[4];
    int n = synth_lb_greedy(nworkers, 4, w, SYNTH_LB_TRIALS, seed, sender, round);
    assert_int_equal(n, expect_rounds);
    assert_rounds_disjoint(nworkers, 4, w, sender, round, n);
    int c0 = 0;
    for (int i = 0; i < 4; i++)
        c0 += sender[i] == 0;
    assert_int_equal(c0, 2);
}

/* Four works to four distinct receivers: a round holds two works (one per sender), so two
 * rounds, and each sender sends twice. */
static void test_two_senders_share(void **state)
{
    static const int s[] = {0, 1}, r2[] = {2}, r3[] = {3}, r4[] = {4}, r5[] = {5};
    const synth_lb_work_t w[] = {{2, s, 1, r2, 7}, {2, s, 1, r3, 7}, {2, s, 1, r4, 7},
                                 {2, s, 1, r5, 7}};
    assert_split_evenly(6, w, 42, 2);
}

/* Four works to the same receiver: one work per round; after an odd round the other sender has
 * the lower load, and among 100 trials one picks it (weight 11 of 12) with the smaller standard
 * deviation, so the loads end 20/20. */
static void test_loads_even_out(void **state)
{
    static const int s[] = {0, 1}, r[] = {2};
    const synth_lb_work_t w[] = {{2, s, 1, r, 10}, {2, s, 1, r, 10}, {2, s, 1, r, 10},
                                 {2, s, 1, r, 10}};
    assert_split_evenly(3, w, 7, 4);
}

/* Same seed, same answer; the seed is what makes a random solver reproducible. */
static void test_deterministic(void **state)
{
    static const int s[] = {0, 1}, r2[] = {2}, r3[] = {3};
    const synth_lb_work_t w[] = {{2, s, 1, r2, 3}, {2, s, 1, r3, 5}, {2, s, 1, r2, 4}};
    int a[3], ra[3], b[3], rb[3];
    int na = synth_lb_greedy(4, 3, w, SYNTH_LB_TRIALS, 99, a, ra);
    int nb = synth_lb_greedy(4, 3, w, SYNTH_LB_TRIALS, 99, b, rb);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, sizeof(a));
    assert_memory_equal(ra, rb, sizeof(ra));
    assert_rounds_disjoint(4, 3, w, a, ra, na);
    /* Works 0 and 2 share receiver 2, so at least two rounds. */
    assert_true(na >= 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_case6_rounds),
        cmocka_unit_test(test_two_senders_share),
        cmocka_unit_test(test_loads_even_out),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
