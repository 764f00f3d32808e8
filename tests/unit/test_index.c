/* Tests for util/index.c: an empty index finds nothing, entries of one hash (a collision) all come
 * back in the order they were added, also after the index grew and when their run of slots wraps
 * past the last slot, hashes that share their low bits are told apart, absent hashes find nothing,
 * and many keys hashed by mc_hash_words are each found once. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>

#include "util/index.h"
#include "util/util.h"

/* The entries of hash h, in the order the index gives them, into out[]; returns their number. */
static int entries_of(const mc_index_t *ix, uint64_t h, int *out, int max)
{
    int n = 0;
    size_t at = mc_index_start(ix, h);
    for (int k; (k = mc_index_next(ix, h, &at)) >= 0;) {
        assert_true(n < max);
        out[n++] = k;
    }
    return n;
}

static void test_empty(void **state)
{
    (void)state;
    mc_index_t ix = {0};
    int out[1];
    assert_int_equal(entries_of(&ix, 0, out, 1), 0);
    assert_int_equal(entries_of(&ix, 12345, out, 1), 0);
    mc_index_free(&ix);
    mc_index_free(&ix); /* freeing leaves an empty index */
    assert_null(ix.slot);
}

/* 200 entries under 3 hashes that share their low 12 bits (one run of slots): each hash gives
 * exactly its own entries, in the order added, through several growths. */
static void test_collisions_in_order(void **state)
{
    (void)state;
    const uint64_t h[3] = {7, 7 + (1ull << 12), 7 + (1ull << 40)};
    mc_index_t ix = {0};
    for (int k = 0; k < 200; k++)
        mc_index_add(&ix, h[k % 3], k);
    assert_int_equal(ix.n, 200);
    assert_true(ix.mask + 1 >= 400);
    for (int j = 0; j < 3; j++) {
        int out[200], n = entries_of(&ix, h[j], out, 200);
        assert_int_equal(n, (200 - j + 2) / 3);
        for (int i = 0; i < n; i++)
            assert_int_equal(out[i], j + 3 * i);
    }
    int out[1];
    assert_int_equal(entries_of(&ix, 7 + (1ull << 13), out, 1), 0); /* same low bits, absent */
    mc_index_free(&ix);
}

/* A run that starts at the last slot of the first 64 wraps to slot 0; growing places it again
 * from one past an empty slot, so its entries keep their order (placed from slot 0 on, the
 * wrapped ones would come first). */
static void test_wrapped_run_keeps_order(void **state)
{
    (void)state;
    mc_index_t ix = {0};
    const uint64_t last = 63;
    for (int k = 0; k < 5; k++)
        mc_index_add(&ix, last, k);
    assert_int_equal(ix.mask, 63);
    for (int k = 5; k < 40; k++) /* grows to 128 slots */
        mc_index_add(&ix, 1000 + (uint64_t)k * 64, k);
    assert_int_equal(ix.mask, 127);
    int out[8], n = entries_of(&ix, last, out, 8);
    assert_int_equal(n, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(out[i], i);
    for (int k = 5; k < 40; k++) {
        n = entries_of(&ix, 1000 + (uint64_t)k * 64, out, 8);
        assert_int_equal(n, 1);
        assert_int_equal(out[0], k);
    }
    mc_index_free(&ix);
}

/* 100000 keys (pairs of words) hashed by mc_hash_words: each is found as its own entry once the
 * caller compares keys, absent keys find no equal key, and the index stays at most half full. */
static void test_many_keys(void **state)
{
    (void)state;
    enum { N = 100000 };
    int64_t(*key)[2] = malloc(sizeof(*key) * N);
    assert_non_null(key);
    mc_index_t ix = {0};
    for (int k = 0; k < N; k++) {
        key[k][0] = k / 317;
        key[k][1] = k % 317;
        mc_index_add(&ix, mc_hash_words(key[k], 2), k);
        assert_true(2 * (size_t)ix.n <= ix.mask + 1);
    }
    assert_int_equal(ix.n, N);
    for (int k = 0; k < N + 1000; k++) {
        int64_t want[2] = {k / 317, k % 317};
        uint64_t h = mc_hash_words(want, 2);
        int found = -1, hits = 0;
        size_t at = mc_index_start(&ix, h);
        for (int j; (j = mc_index_next(&ix, h, &at)) >= 0;)
            if (key[j][0] == want[0] && key[j][1] == want[1]) {
                found = j;
                hits++;
            }
        assert_int_equal(hits, k < N);
        assert_int_equal(found, k < N ? k : -1);
    }
    mc_index_free(&ix);
    free(key);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_collisions_in_order),
        cmocka_unit_test(test_wrapped_run_keeps_order),
        cmocka_unit_test(test_many_keys),
    };
    return cmocka_run_group_tests_name("util_index", tests, NULL, NULL);
}
