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

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static int rnd(int n) /* uniform-ish in [0, n) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (int)(rng_state % (uint64_t)n);
}

static mc_task_t *task_of(const char *text)
{
    mc_task_t *t = NULL;
    mc_err_t err = {0};
    if (mc_task_parse_text(text, "test", &t, &err) != MC_OK)
        fail_msg("%s\n%s", text, err.msg);
    if (mc_task_split(t, &err) != MC_OK)
        fail_msg("split: %s", err.msg);
    return t;
}

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

/* A random mesh of up to 4 axes named MESH over GPUs starting at base (shuffled sometimes). */
static int random_mesh(char *out, size_t len, const char *name, int base, int *naxes, int sizes[4])
{
    static const char *axes[] = {"a", "b", "c", "d"};
    *naxes = 1 + rnd(4);
    int n = 1, off = snprintf(out, len, "mesh %s={", name);
    for (int i = 0; i < *naxes; i++) {
        sizes[i] = 1 + rnd(3);
        n *= sizes[i];
        off += snprintf(out + off, len - (size_t)off, "%s%s:%d", i ? "," : "", axes[i], sizes[i]);
    }
    if (rnd(2)) {
        snprintf(out + off, len - (size_t)off, "}@%d..%d\n", base, base + n - 1);
        return n;
    }
    int ids[81];
    for (int i = 0; i < n; i++)
        ids[i] = base + i;
    for (int i = n - 1; i > 0; i--) {
        int j = rnd(i + 1), tmp = ids[i];
        ids[i] = ids[j];
        ids[j] = tmp;
    }
    off += snprintf(out + off, len - (size_t)off, "}@[");
    for (int i = 0; i < n; i++)
        off += snprintf(out + off, len - (size_t)off, "%s%d", i ? "," : "", ids[i]);
    snprintf(out + off, len - (size_t)off, "]\n");
    return n;
}

/* Random dim specs for a tensor of the given shape: each axis goes to a random dim or nowhere,
 * in a random order; some dims get explicit sizes (zeros allowed). */
static void random_specs(char *out, size_t len, const char *mesh, int naxes, const int sizes[4],
                         int nd, const int64_t *shape)
{
    static const char *axes[] = {"a", "b", "c", "d"};
    int dim_axes[MC_MAX_DIMS][4], dn[MC_MAX_DIMS] = {0};
    int order[4] = {0, 1, 2, 3};
    for (int i = naxes - 1; i > 0; i--) {
        int j = rnd(i + 1), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    for (int i = 0; i < naxes; i++) {
        int k = rnd(nd + 1);
        if (k < nd)
            dim_axes[k][dn[k]++] = order[i];
    }
    int off = snprintf(out, len, "%s[", mesh);
    for (int k = 0; k < nd; k++) {
        off += snprintf(out + off, len - (size_t)off, "%s", k ? "," : "");
        if (dn[k] == 0)
            off += snprintf(out + off, len - (size_t)off, "_");
        for (int i = 0; i < dn[k]; i++)
            off += snprintf(out + off, len - (size_t)off, "%s%s", i ? "," : dn[k] > 1 ? "(" : "",
                            axes[dim_axes[k][i]]);
        if (dn[k] > 1)
            off += snprintf(out + off, len - (size_t)off, ")");
        if (dn[k] && rnd(4) == 0) {
            int shards = 1;
            for (int i = 0; i < dn[k]; i++)
                shards *= sizes[dim_axes[k][i]];
            int64_t left = shape[k];
            for (int s = 0; s < shards; s++) {
                int64_t v = s == shards - 1 ? left : rnd((int)left + 1);
                left -= v;
                off += snprintf(out + off, len - (size_t)off, "%s%lld", s ? "," : "{",
                                (long long)v);
            }
            off += snprintf(out + off, len - (size_t)off, "}");
        }
    }
    snprintf(out + off, len - (size_t)off, "]");
}

static void test_random_layouts(void **state)
{
    static const char *dtypes[] = {"f32", "bf16", "u8", "f64"};
    for (int iter = 0; iter < 400; iter++) {
        char text[4096], mesh_a[512], mesh_b[512], src[512], dst[512];
        int na, nb, sa[4], sb[4];
        int same = rnd(3) == 0;
        int n_a = random_mesh(mesh_a, sizeof(mesh_a), "A", 0, &na, sa);
        /* The second mesh is disjoint, overlapping or (same-mesh moves) unused. */
        int base_b = rnd(2) ? n_a : rnd(n_a);
        int n_b = random_mesh(mesh_b, sizeof(mesh_b), "B", base_b, &nb, sb);
        int nd = 1 + rnd(3);
        int64_t shape[MC_MAX_DIMS];
        char shape_txt[64];
        int off = 0;
        for (int k = 0; k < nd; k++) {
            shape[k] = 1 + rnd(6);
            off += snprintf(shape_txt + off, sizeof(shape_txt) - (size_t)off, "%s%lld",
                            k ? "," : "", (long long)shape[k]);
        }
        random_specs(src, sizeof(src), "A", na, sa, nd, shape);
        if (same)
            random_specs(dst, sizeof(dst), "A", na, sa, nd, shape);
        else
            random_specs(dst, sizeof(dst), "B", nb, sb, nd, shape);
        /* A second tensor sometimes, so that a task holds several. */
        char second[1200] = "";
        if (rnd(3) == 0) {
            char s2[512], d2[512];
            random_specs(s2, sizeof(s2), "B", nb, sb, nd, shape);
            random_specs(d2, sizeof(d2), "A", na, sa, nd, shape);
            snprintf(second, sizeof(second), "move back: u8[%s] %s -> %s\n", shape_txt, s2, d2);
        }
        snprintf(text, sizeof(text), "%s%smove %s[%s] %s -> %s\n%s", mesh_a, mesh_b,
                 dtypes[rnd(4)], shape_txt, src, dst, second);
        mc_task_t *t = task_of(text);
        int ngpus = n_a > base_b + n_b ? n_a : base_b + n_b;
        check_split(t, ngpus, text);
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
