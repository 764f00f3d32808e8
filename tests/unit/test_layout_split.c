/* Tests for pieces and local copies: property tests over random layouts checked against a
 * per-element brute force, the worked numbers of array-redistribution.md section 5.5, and a
 * 1024-GPU LLaMA-2-70B task (which must split without per-element work). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "layout/layout.h"
#include "tests/unit/test_layout_random.h"

static int box_has(const mc_box_t *b, const int64_t *x, int nd)
{
    for (int k = 0; k < nd; k++)
        if (x[k] < b->lo[k] || x[k] >= b->hi[k])
            return 0;
    return 1;
}

static int has(const int *ids, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == x)
            return 1;
    return 0;
}

/* Checks every property of the split of t against tiles computed per element. */
static void check_split(const mc_task_t *t, int ngpus, const char *text)
{
    uint64_t *need = calloc((size_t)ngpus, sizeof(uint64_t));
    for (int i = 0; i < t->npieces; i++) {
        const mc_piece_t *p = &t->pieces[i];
        const mc_tensor_move_t *mv = &t->tensors[p->tensor];
        int nd = mv->src.ndims;
        if (i > 0 && p->bytes > t->pieces[i - 1].bytes)
            fail_msg("%s: pieces not sorted largest first", text);
        assert_true(p->ndests > 0 && p->nholders > 0);
        assert_int_equal(p->bytes, mc_box_elems(&p->box, nd) * mc_dtype_size(mv->src.dtype));
        /* Holders are exactly the GPUs whose source tile holds the box; dests exactly those
         * whose destination tile holds it and who do not; both ascending. */
        for (int g = 0; g < ngpus; g++) {
            mc_box_t a, b, x;
            int in_a = mc_layout_tile(t, &mv->src, g, &a) && mc_box_intersect(&a, &p->box, nd, &x) &&
                       mc_box_elems(&x, nd) == mc_box_elems(&p->box, nd);
            int in_b = mc_layout_tile(t, &mv->dst, g, &b) && mc_box_intersect(&b, &p->box, nd, &x) &&
                       mc_box_elems(&x, nd) == mc_box_elems(&p->box, nd);
            if (in_a != has(p->holders, p->nholders, g))
                fail_msg("%s: piece %d holder set wrong at GPU %d", text, i, g);
            if ((in_b && !in_a) != has(p->dests, p->ndests, g))
                fail_msg("%s: piece %d dest set wrong at GPU %d", text, i, g);
        }
        for (int j = 1; j < p->nholders; j++)
            assert_true(p->holders[j - 1] < p->holders[j]);
        for (int j = 1; j < p->ndests; j++)
            assert_true(p->dests[j - 1] < p->dests[j]);
        /* Maximal: no other piece of the tensor has the same holders and dests. */
        for (int j = 0; j < i; j++) {
            const mc_piece_t *q = &t->pieces[j];
            if (q->tensor == p->tensor && q->nholders == p->nholders && q->ndests == p->ndests &&
                !memcmp(q->holders, p->holders, sizeof(int) * (size_t)p->nholders) &&
                !memcmp(q->dests, p->dests, sizeof(int) * (size_t)p->ndests))
                fail_msg("%s: pieces %d and %d share holders and dests", text, j, i);
        }
    }
    /* Element by element: each destination tile element is covered once, by a piece when the
     * GPU does not hold it and by a local copy when it does. */
    for (int ti = 0; ti < t->ntensors; ti++) {
        const mc_tensor_move_t *mv = &t->tensors[ti];
        int nd = mv->src.ndims;
        int64_t total = 1, x[MC_MAX_DIMS];
        for (int k = 0; k < nd; k++)
            total *= mv->src.shape[k];
        for (int64_t e = 0; e < total; e++) {
            for (int k = nd - 1, r = (int)e; k >= 0; k--) {
                x[k] = r % mv->src.shape[k];
                r /= (int)mv->src.shape[k];
            }
            for (int g = 0; g < ngpus; g++) {
                mc_box_t a, b;
                int in_a = mc_layout_tile(t, &mv->src, g, &a) && box_has(&a, x, nd);
                int in_b = mc_layout_tile(t, &mv->dst, g, &b) && box_has(&b, x, nd);
                int by_piece = 0, by_copy = 0;
                for (int i = 0; i < t->npieces; i++)
                    by_piece += t->pieces[i].tensor == ti && box_has(&t->pieces[i].box, x, nd) &&
                                has(t->pieces[i].dests, t->pieces[i].ndests, g);
                for (int i = 0; i < t->ncopies; i++)
                    by_copy += t->copies[i].tensor == ti && t->copies[i].gpu == g &&
                               box_has(&t->copies[i].box, x, nd);
                if (by_piece != (in_b && !in_a) || by_copy != (in_b && in_a))
                    fail_msg("%s: element %lld of %s at GPU %d: %d pieces, %d copies", text,
                             (long long)e, mv->name, g, by_piece, by_copy);
                if (in_b && !in_a)
                    need[g] += (uint64_t)mc_dtype_size(mv->src.dtype);
            }
        }
    }
    uint64_t sum = 0, *all = calloc((size_t)ngpus, sizeof(uint64_t));
    uint64_t *peak = calloc((size_t)ngpus, sizeof(uint64_t));
    mc_task_need_bytes_all(t, ngpus, all);
    mc_task_peak_mem_bound_all(t, ngpus, peak);
    for (int g = 0; g < ngpus; g++) {
        assert_int_equal(mc_task_need_bytes(t, g), need[g]);
        assert_int_equal(all[g], need[g]);
        assert_int_equal(peak[g], mc_task_peak_mem_bound(t, g));
        sum += need[g];
    }
    free(all);
    free(peak);
    assert_int_equal(mc_task_total_bytes(t), sum);
    for (int i = 0; i < t->ncopies; i++)
        assert_int_equal(t->copies[i].bytes,
                         mc_box_elems(&t->copies[i].box, t->tensors[t->copies[i].tensor].src.ndims) *
                             mc_dtype_size(t->tensors[t->copies[i].tensor].src.dtype));
    free(need);
}

static void test_random_layouts(void **state)
{
    for (int iter = 0; iter < 400; iter++) {
        char text[4096];
        random_task(text, sizeof(text), 24, 32, 1);
        mc_task_t *t = task_of(text);
        check_split(t, 32, text);
        /* Splitting again gives the same pieces (idempotent). */
        int np = t->npieces, nc = t->ncopies;
        mc_err_t err = {0};
        assert_int_equal(mc_task_split(t, &err), MC_OK);
        assert_int_equal(t->npieces, np);
        assert_int_equal(t->ncopies, nc);
        mc_task_free(t);
    }
}

/* need(d) in elements for every GPU of a one-tensor task equals want[d]. */
static void expect_need(const char *text, int ngpus, const uint64_t *want, int esize)
{
    mc_task_t *t = task_of(text);
    check_split(t, ngpus, text);
    for (int g = 0; g < ngpus; g++)
        if (mc_task_need_bytes(t, g) != want[g] * (uint64_t)esize)
            fail_msg("%s: GPU %d needs %llu bytes, expected %llu elements", text, g,
                     (unsigned long long)mc_task_need_bytes(t, g), (unsigned long long)want[g]);
    mc_task_free(t);
}

static void test_worked_numbers(void **state)
{
    /* Section 5.5: each device holds 512 of its 512 target elements... except 64 of them. */
    uint64_t w448[8], w56[8];
    for (int g = 0; g < 8; g++)
        w448[g] = 448, w56[g] = 56;
    expect_need("mesh B={x:4,y:2}@0..7\nmove f32[16,16,16] B[y,_,x] -> B[_,(x,y),_]\n", 8, w448, 4);
    expect_need("mesh M={a:2,b:2,c:2}\nmove f32[8,8,8] M[(a,b,c),_,_] -> M[_,(a,b,c),_]\n", 8, w56,
                4);
    /* [a,b,c] -> [c,b,a]: devices with a == c keep their tile (0), the others need all 64. */
    uint64_t wabc[8];
    for (int g = 0; g < 8; g++)
        wabc[g] = ((g >> 2) & 1) == (g & 1) ? 0 : 64;
    expect_need("mesh M={a:2,b:2,c:2}\nmove f32[8,8,8] M[a,b,c] -> M[c,b,a]\n", 8, wabc, 4);

    /* {dp:2,tp:4}, [11008,4096] [tp,_] -> [(dp,tp),_]: (0,0) and (1,3) slice locally, the rest
     * need a whole 1376-row shard; with (tp,dp) every device slices locally. */
    uint64_t wtp[8];
    for (int g = 0; g < 8; g++)
        wtp[g] = (g == 0 || g == 7) ? 0 : 1376ull * 4096;
    mc_task_t *t = task_of("mesh A={dp:2,tp:4}\nmove bf16[11008,4096] A[tp,_] -> A[(dp,tp),_]\n");
    for (int g = 0; g < 8; g++)
        assert_int_equal(mc_task_need_bytes(t, g), wtp[g] * 2);
    assert_int_equal(mc_task_src_bytes(t, 1), 2752ull * 4096 * 2);
    assert_int_equal(mc_task_dst_bytes(t, 1), 1376ull * 4096 * 2);
    assert_int_equal(mc_task_peak_mem_bound(t, 1), 2752ull * 4096 * 2);
    mc_task_free(t);
    t = task_of("mesh A={dp:2,tp:4}\nmove bf16[11008,4096] A[tp,_] -> A[(tp,dp),_]\n");
    assert_int_equal(t->npieces, 0);
    assert_int_equal(t->ncopies, 8);
    assert_int_equal(mc_task_total_bytes(t), 0);
    mc_task_free(t);

    /* OCaml example: [12,12] on {x1:2,x2:2,y1:3,y2:2}: local 6, need 2, 5 or 6 elements. */
    t = task_of("mesh M={x1:2,x2:2,y1:3,y2:2}\n"
                "move f32[12,12] M[(x2,x1),(y2,y1)] -> M[(y2,y1),(x2,x1)]\n");
    check_split(t, 24, "ocaml");
    int seen[7] = {0};
    for (int g = 0; g < 24; g++) {
        uint64_t n = mc_task_need_bytes(t, g) / 4;
        assert_true(n == 2 || n == 5 || n == 6);
        seen[n] = 1;
        assert_int_equal(mc_task_peak_mem_bound(t, g), 6 * 4);
    }
    assert_true(seen[2] && seen[5] && seen[6]);
    mc_task_free(t);
}

/* Two meshes on disjoint hosts, 2 GiB int32 (the paper's case 1): two pieces of 1 GiB, each
 * from one source host's 4 GPUs to one destination host's 4 GPUs. */
static void test_case1_pieces(void **state)
{
    mc_task_t *t = task_of("mesh A={host:2,gpu:4}@0..7\nmesh B={host:2,gpu:4}@8..15\n"
                           "move i32[1024,1024,512] A[host,_,_] -> B[host,_,_]\n");
    assert_int_equal(t->npieces, 2);
    assert_int_equal(t->ncopies, 0);
    assert_int_equal(t->pieces[0].bytes, 1ull << 30);
    assert_int_equal(t->pieces[0].box.lo[0], 0);
    assert_int_equal(t->pieces[0].box.hi[0], 512);
    assert_int_equal(t->pieces[0].nholders, 4);
    assert_int_equal(t->pieces[0].holders[3], 3);
    assert_int_equal(t->pieces[0].ndests, 4);
    assert_int_equal(t->pieces[0].dests[0], 8);
    assert_int_equal(t->pieces[1].holders[0], 4);
    assert_int_equal(t->pieces[1].dests[0], 12);
    assert_int_equal(mc_task_total_bytes(t), 8ull << 30);
    mc_task_free(t);
}

/* LLaMA-2-70B weights (80 layers stacked per weight, embeddings), 512 GPUs at TP8 to 512 other
 * GPUs at TP4 x DP128: 68,975,329,280 parameters. Every destination GPU needs its whole tile,
 * so the task moves 128 copies of the model: 128 x 2 x params bytes. */
static void test_llama70b_1024(void **state)
{
    mc_task_t *t = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_task_load("tests/data/tasks/llama70b-1024.task", &t, &err), MC_OK);
    assert_int_equal(mc_task_split(t, &err), MC_OK);
    uint64_t params = 0;
    for (int i = 0; i < t->ntensors; i++) {
        uint64_t n = 1;
        for (int k = 0; k < t->tensors[i].src.ndims; k++)
            n *= (uint64_t)t->tensors[i].src.shape[k];
        params += n;
    }
    assert_int_equal(params, 68975329280ull);
    assert_int_equal(mc_task_total_bytes(t), 128ull * 2 * 68975329280ull);
    /* Each destination GPU needs a quarter of the model. */
    assert_int_equal(mc_task_need_bytes(t, 512), 2 * 68975329280ull / 4);
    assert_int_equal(mc_task_need_bytes(t, 1023), 2 * 68975329280ull / 4);
    assert_int_equal(mc_task_need_bytes(t, 0), 0);
    mc_task_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_layouts),
        cmocka_unit_test(test_worked_numbers),
        cmocka_unit_test(test_case1_pieces),
        cmocka_unit_test(test_llama70b_1024),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
