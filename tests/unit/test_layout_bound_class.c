/* Tests for the classes of pieces the lower bound reads (layout/bound_class.c): on random tasks
 * (several tensors, overlapping meshes) every piece falls in exactly one class, the class with
 * its holders and destinations, classes are distinct, come in the order of their first pieces
 * and carry the exact sum of their pieces' bytes, checked against a search over all pairs of
 * pieces; and a task of many moves of one tensor shape collapses to the closed-form count. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "layout/bound_internal.h"
#include "tests/unit/test_layout_random.h"

static int same_sets(const mc_piece_t *a, const mc_piece_t *b)
{
    return a->nholders == b->nholders && a->ndests == b->ndests &&
           !memcmp(a->holders, b->holders, sizeof(int) * (size_t)a->nholders) &&
           !memcmp(a->dests, b->dests, sizeof(int) * (size_t)a->ndests);
}

/* Checks the classes of t against every pair of its pieces. */
static void check_classes(const mc_task_t *t)
{
    mc_bound_class_t *c;
    int n = mc_bound_classes(t, &c), first_prev = -1;
    for (int k = 0; k < n; k++) {
        int first = (int)(c[k].p - t->pieces);
        uint64_t bytes = 0;
        for (int i = 0; i < t->npieces; i++)
            if (same_sets(&t->pieces[i], c[k].p)) {
                bytes += t->pieces[i].bytes;
                if (i < first)
                    fail_msg("class %d starts at piece %d, but piece %d has its sets", k, first, i);
            }
        assert_true(first > first_prev);
        first_prev = first;
        assert_int_equal(c[k].bytes, bytes);
        for (int j = 0; j < k; j++)
            assert_false(same_sets(c[j].p, c[k].p));
    }
    /* Every piece is in some class: the classes' bytes add up to the task's. */
    uint64_t total = 0, in_classes = 0;
    for (int i = 0; i < t->npieces; i++)
        total += t->pieces[i].bytes;
    for (int k = 0; k < n; k++)
        in_classes += c[k].bytes;
    assert_int_equal(in_classes, total);
    free(c);
}

static void test_classes_random(void **state)
{
    int multi = 0;
    for (int iter = 0; iter < 300; iter++) {
        char text[4096];
        random_task(text, sizeof(text), 16, 16, 1 << 16);
        mc_task_t *t = task_of(text);
        check_classes(t);
        multi += t->ntensors > 1;
        mc_task_free(t);
    }
    assert_true(multi >= 30); /* tasks of several tensors, whose pieces share classes, were seen */
}

/* 500 moves of f32[64,32] from A={x:2,y:4} split [x,y] (each GPU holds one 1 KiB shard) to
 * B={x:4,y:2} split [y,_] (each half of the rows on 4 GPUs): 8 pieces a move, one per GPU of A,
 * and the moves share them, so 8 classes of 500 KiB. */
static void test_classes_many_moves(void **state)
{
    mc_buf_t b = {0};
    mc_buf_printf(&b, "mesh A={x:2,y:4}@0..7\nmesh B={x:4,y:2}@8..15\n");
    for (int i = 0; i < 500; i++)
        mc_buf_printf(&b, "move w%d: f32[64,32] A[x,y] -> B[y,_]\n", i);
    mc_task_t *t = task_of(b.data);
    assert_int_equal(t->npieces, 4000);
    mc_bound_class_t *c;
    assert_int_equal(mc_bound_classes(t, &c), 8);
    for (int k = 0; k < 8; k++) {
        assert_int_equal(c[k].bytes, 500 * 1024);
        assert_int_equal(c[k].p->nholders, 1);
        assert_int_equal(c[k].p->ndests, 4);
    }
    check_classes(t);
    free(c);
    mc_task_free(t);
    mc_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classes_random),
        cmocka_unit_test(test_classes_many_moves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
