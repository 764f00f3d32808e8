/* Tests for util/maxheap.c: an empty heap has no top; after every change of a key, over random keys
 * with many ties, the top, the items above a threshold, the largest unmarked key and the three
 * largest items are what a scan of the items in order finds (equal keys: the lower item first). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/maxheap.h"
#include "util/util.h"

#define N 300

/* A fixed pseudo-random sequence (no libc rand: the same on every machine). */
static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* Whether item a goes before item b in a scan keeping the first strict maximum. */
static int before(const int64_t *key, int a, int b)
{
    return key[a] > key[b] || (key[a] == key[b] && a < b);
}

static void check_against_scan(const mc_maxheap_t *h, const int64_t *key, uint64_t *seed)
{
    int best = 0;
    for (int i = 1; i < N; i++)
        best = before(key, i, best) ? i : best;
    assert_int_equal(mc_maxheap_top(h), best);

    int64_t threshold = (int64_t)(next(seed) % 40) - 5;
    int out[N], n = mc_maxheap_above(h, threshold, out), want = 0;
    char seen[N] = {0};
    for (int i = 0; i < n; i++) {
        assert_true(key[out[i]] > threshold);
        assert_false(seen[out[i]]);
        seen[out[i]] = 1;
    }
    for (int i = 0; i < N; i++)
        want += key[i] > threshold;
    assert_int_equal(n, want);

    char skip[N];
    int64_t floor = (int64_t)(next(seed) % 10), most = floor;
    for (int i = 0; i < N; i++) {
        skip[i] = next(seed) % 3 == 0;
        if (!skip[i] && key[i] > most)
            most = key[i];
    }
    assert_true(mc_maxheap_max_unmarked(h, skip, floor) == most);

    int top[3], order[N];
    for (int i = 0; i < N; i++)
        order[i] = i;
    for (int j = 0; j < 3; j++) /* selection of the three first in scan order */
        for (int i = j + 1; i < N; i++)
            if (before(key, order[i], order[j])) {
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
    assert_int_equal(mc_maxheap_largest(h, 3, top), 3);
    for (int j = 0; j < 3; j++)
        assert_int_equal(top[j], order[j]);
}

static void test_empty(void **state)
{
    (void)state;
    mc_maxheap_t h;
    mc_maxheap_init(&h, 0, NULL);
    int out[1];
    assert_int_equal(mc_maxheap_top(&h), -1);
    assert_int_equal(mc_maxheap_above(&h, -100, out), 0);
    assert_true(mc_maxheap_max_unmarked(&h, "", 7) == 7);
    assert_int_equal(mc_maxheap_largest(&h, 3, out), 0);
    mc_maxheap_free(&h);
}

/* Keys in a small range (ties everywhere, -1 among them as the meshcast descent uses it), each
 * change checked against a scan. */
static void test_changes_match_a_scan(void **state)
{
    (void)state;
    uint64_t seed = 42;
    int64_t key[N];
    for (int i = 0; i < N; i++)
        key[i] = (int64_t)(next(&seed) % 30) - 1;
    mc_maxheap_t h;
    mc_maxheap_init(&h, N, key);
    check_against_scan(&h, key, &seed);
    for (int step = 0; step < 2000; step++) {
        int i = (int)(next(&seed) % N);
        key[i] = step % 50 == 0 ? key[i] : (int64_t)(next(&seed) % 30) - 1;
        mc_maxheap_set(&h, i, key[i]);
        check_against_scan(&h, key, &seed);
    }
    mc_maxheap_free(&h);
}

/* Fewer items than asked for: mc_maxheap_largest gives them all, in order. */
static void test_largest_of_few(void **state)
{
    (void)state;
    int64_t key[2] = {5, 9};
    int out[3];
    mc_maxheap_t h;
    mc_maxheap_init(&h, 2, key);
    assert_int_equal(mc_maxheap_largest(&h, 3, out), 2);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 0);
    mc_maxheap_set(&h, 0, 9); /* a tie: the lower item first */
    assert_int_equal(mc_maxheap_largest(&h, 3, out), 2);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 1);
    mc_maxheap_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_changes_match_a_scan),
        cmocka_unit_test(test_largest_of_few),
    };
    return cmocka_run_group_tests_name("util_maxheap", tests, NULL, NULL);
}
