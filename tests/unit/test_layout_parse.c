/* Tests for the layout notation: meshes (ranges, lists, XLA iota), layouts, moves, every kind of
 * malformed input (usage error, caret under the column), task files and the canonical text. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "layout/layout_internal.h"

static void test_dtypes(void **state)
{
    static const struct {
        const char *name;
        int size;
    } want[] = {{"f64", 8}, {"f32", 4}, {"f16", 2}, {"bf16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1},
                {"i64", 8}, {"i32", 4}, {"i16", 2}, {"i8", 1},   {"u8", 1},     {"bool", 1}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        mc_dtype_t dt;
        assert_int_equal(mc_dtype_parse(want[i].name, &dt), 0);
        assert_int_equal(mc_dtype_size(dt), want[i].size);
        assert_string_equal(mc_dtype_name(dt), want[i].name);
    }
    mc_dtype_t dt;
    assert_int_equal(mc_dtype_parse("f33", &dt), -1);
}

static void test_meshes(void **state)
{
    mc_task_t *t = mc_task_new();
    mc_err_t err = {0};
    assert_int_equal(mc_task_add_mesh(t, "A={host:2,gpu:4}@0..7", &err), MC_OK);
    assert_int_equal(mc_task_add_mesh(t, " B = { x : 4 , y : 2 } @ [8,9,10,11,12,13,14,15] ", &err),
                     MC_OK);
    assert_int_equal(mc_task_add_mesh(t, "C={x:4,y:2}@<=[4,2]T(1,0)", &err), MC_OK);
    assert_int_equal(mc_task_add_mesh(t, "D={x:3}", &err), MC_OK);
    assert_int_equal(mc_task_add_mesh(t, "E={x:1}@5", &err), MC_OK);
    assert_int_equal(mc_task_add_mesh(t, "F={x:2,y:2}@12", &err), MC_OK);
    assert_int_equal(t->nmeshes, 6);
    assert_string_equal(t->meshes[0].name, "A");
    assert_int_equal(t->meshes[0].naxes, 2);
    assert_string_equal(t->meshes[0].axis_names[1], "gpu");
    assert_int_equal(t->meshes[0].axis_sizes[1], 4);
    assert_int_equal(t->meshes[0].ndevices, 8);
    assert_int_equal(t->meshes[0].devices[7], 7);
    assert_int_equal(t->meshes[1].devices[0], 8);
    assert_int_equal(t->meshes[1].devices[7], 15);
    /* iota(8) as [4,2], transposed: rows of the [2,4] result are 0,2,4,6 and 1,3,5,7. */
    static const int iota[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int i = 0; i < 8; i++)
        assert_int_equal(t->meshes[2].devices[i], iota[i]);
    assert_int_equal(t->meshes[3].devices[2], 2);
    assert_int_equal(t->meshes[4].devices[0], 5);
    assert_int_equal(t->meshes[5].devices[0], 12);
    assert_int_equal(t->meshes[5].devices[3], 15);
    mc_task_free(t);
}

/* The move parses; returns the task for inspection. */
static mc_task_t *parse(const char *const *meshes, int nmeshes, const char *move)
{
    mc_task_t *t = mc_task_new();
    mc_err_t err = {0};
    for (int i = 0; i < nmeshes; i++)
        assert_int_equal(mc_task_add_mesh(t, meshes[i], &err), MC_OK);
    if (mc_task_add_move(t, move, &err) != MC_OK)
        fail_msg("%s: %s", move, err.msg);
    return t;
}

static void test_layouts(void **state)
{
    const char *m[] = {"A={host:2,gpu:4}@0..7", "B={x:4,y:2}@8..15"};
    mc_task_t *t = parse(m, 2, "i32[1024,1024,512] A[host,_,_] -> B[_,(y,x),_]");
    mc_tensor_move_t *mv = &t->tensors[0];
    assert_string_equal(mv->name, "t0");
    assert_int_equal(mv->src.dtype, MC_DT_I32);
    assert_int_equal(mv->src.ndims, 3);
    assert_int_equal(mv->src.shape[2], 512);
    assert_int_equal(mv->src.mesh, 0);
    assert_int_equal(mv->src.dims[0].naxes, 1);
    assert_int_equal(mv->src.dims[0].axes[0], 0);
    assert_int_equal(mv->src.dims[1].naxes, 0);
    assert_int_equal(mv->dst.mesh, 1);
    assert_int_equal(mv->dst.shape[0], 1024);
    assert_int_equal(mv->dst.dims[1].naxes, 2);
    assert_int_equal(mv->dst.dims[1].axes[0], 1); /* y is major */
    assert_int_equal(mv->dst.dims[1].axes[1], 0);
    /* Tile of GPU 13 = B position 5 = (x=2, y=1): shard 1*4+2 = 6 of 8 along dim 1. */
    mc_box_t tile;
    assert_int_equal(mc_layout_tile(t, &mv->dst, 13, &tile), 1);
    assert_int_equal(tile.lo[1], 768);
    assert_int_equal(tile.hi[1], 896);
    assert_int_equal(tile.hi[0], 1024);
    assert_int_equal(mc_layout_tile(t, &mv->dst, 3, &tile), 0);
    assert_int_equal(mc_box_elems(&tile, 3), 0);
    mc_task_free(t);

    /* Explicit sizes, a named tensor, a full destination. */
    t = parse(m, 2, "w: f32[10,64] A[gpu{4,2,2,2},_] -> f32[10,64] B[x,y]");
    assert_string_equal(t->tensors[0].name, "w");
    assert_non_null(t->tensors[0].src.dims[0].sizes);
    assert_int_equal(mc_layout_tile(t, &t->tensors[0].src, 6, &tile), 1); /* gpu=2: [6,8) */
    assert_int_equal(tile.lo[0], 6);
    assert_int_equal(tile.hi[0], 8);
    /* Ceil rule: 10 over x:4 gives 3,3,3,1. */
    assert_int_equal(mc_layout_tile(t, &t->tensors[0].dst, 14, &tile), 1); /* x=3,y=0 */
    assert_int_equal(tile.lo[0], 9);
    assert_int_equal(tile.hi[0], 10);
    assert_int_equal(tile.lo[1], 0);
    assert_int_equal(tile.hi[1], 32);
    mc_task_free(t);

    /* 2^63-1 bytes over 2 shards: no overflow at the end of the last one. */
    t = parse(m, 2, "u8[9223372036854775807] A[host] -> B[_]");
    assert_int_equal(mc_layout_tile(t, &t->tensors[0].src, 7, &tile), 1);
    assert_int_equal(tile.lo[0], 4611686018427387904);
    assert_int_equal(tile.hi[0], 9223372036854775807);
    mc_task_free(t);

    /* 5 over 4 shards: 2,2,1,0 (an empty last shard). */
    const char *m4[] = {"A={g:4}@0..3"};
    t = parse(m4, 1, "u8[5] A[g] -> A[_]");
    assert_int_equal(mc_layout_tile(t, &t->tensors[0].src, 3, &tile), 1);
    assert_int_equal(mc_box_elems(&tile, 1), 0);
    assert_int_equal(mc_layout_tile(t, &t->tensors[0].src, 2, &tile), 1);
    assert_int_equal(tile.lo[0], 4);
    assert_int_equal(tile.hi[0], 5);
    mc_task_free(t);
}

/* The text fails with a usage error whose message contains want and a caret under column col
 * (1-based) of the quoted text. */
static void expect_error(int is_mesh, const char *text, const char *want, int col)
{
    mc_task_t *t = mc_task_new();
    mc_err_t err = {0};
    assert_int_equal(mc_task_add_mesh(t, "A={host:2,gpu:4}@0..7", &err), MC_OK);
    assert_int_equal(mc_task_add_mesh(t, "B={x:4,y:2}@8..15", &err), MC_OK);
    mc_status_t st = is_mesh ? mc_task_add_mesh(t, text, &err) : mc_task_add_move(t, text, &err);
    if (st != MC_ERR_USAGE || !strstr(err.msg, want))
        fail_msg("%s: got status %d '%s', expected a usage error with '%s'", text, st, err.msg,
                 want);
    char at[32];
    snprintf(at, sizeof(at), "at column %d\n", col);
    if (!strstr(err.msg, at))
        fail_msg("%s: '%s' does not point at column %d", text, err.msg, col);
    /* The caret line: two blanks, col-1 blanks, '^'. */
    const char *caret = strrchr(err.msg, '\n');
    assert_non_null(caret);
    assert_int_equal((int)strlen(caret + 1), 2 + col);
    assert_int_equal(caret[1 + 2 + col - 1], '^');
    mc_task_free(t);
}

static void test_errors(void **state)
{
    expect_error(0, "i32[8,8] A[hots,_] -> B[_,x]", "unknown axis 'hots'", 12);
    expect_error(0, "i32[8,8] A[host,host] -> B[_,x]", "axis host is used twice", 17);
    expect_error(0, "i32[8,8] A[(host,gpu),gpu] -> B[_,x]", "axis gpu is used twice", 23);
    expect_error(1, "C={x:4}@0..6", "the mesh has 4 devices but 0..6 gives 7", 12);
    expect_error(1, "C={x:2}@2147483647", "the devices run past id", 19);
    expect_error(1, "C={x:2}@1.2",
                 "expected '..' between the first and last device id, as in 1..2", 10);
    expect_error(1, "C={x:4}@[1,2,3]", "the mesh has 4 devices but the list gives 3", 9);
    expect_error(1, "C={x:4}@<=[2,3]", "the iota shape holds 6 devices", 11);
    expect_error(1, "C={x:2,x:2}@0..3", "axis x is used twice", 8);
    expect_error(1, "C={x:2}@[3,3]", "device 3 appears twice", 9);
    expect_error(1, "A={x:2}@0..1", "mesh A is already defined", 1);
    expect_error(0, "f33[8] A[_] -> B[_]", "unknown dtype 'f33'", 1);
    expect_error(0, "f32[8,8] A[host,_] -> f16[8,8] B[x,_]", "dtype f16 does not match", 23);
    expect_error(0, "f32[8,8] A[host,_] -> f32[8,9] B[x,_]", "shape does not match", 26);
    expect_error(0, "f32[8,8] A[host,_] -> f32[8] B[x]", "shape does not match", 26);
    expect_error(0, "f64[4294967296,4294967296] A[_,_] -> B[_,_]", "overflows 64-bit", 16);
    expect_error(0, "u8[99999999999999999999] A[_] -> B[_]", "larger than", 4);
    expect_error(0, "f32[10,64] A[gpu{4,2,2,1},_] -> B[_,_]", "sum to 9, expected", 17);
    expect_error(0, "f32[10,64] A[gpu{4,2,4},_] -> B[_,_]", "expected 4 shard sizes", 17);
    expect_error(0, "u8[9223372036854775807] A[gpu{9223372036854775807,9223372036854775807,1,1}] "
                    "-> B[_]", "sum to more than 9223372036854775807", 30);
    expect_error(1, "C={x:4}@<=[4]T(0,0)", "expected a permutation of 0..0", 15);
    expect_error(1, "C={x:4}@<=[2,2]T(1,1)", "expected a permutation of 0..1", 17);
    expect_error(1, "C={x:1}@<=[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
                 "at most 32 iota dimensions", 11);
    expect_error(0, "f32[10,64] A[_{10},_] -> B[_,_]", "need an axis", 15);
    expect_error(0, "f32[8,8] A[host] -> B[_,_]", "expected ','", 16);
    expect_error(0, "f32[8,8] A[host,_,_] -> B[_,_]", "expected 2 dimension specs", 18);
    expect_error(0, "f32[8,8] C[host,_] -> B[_,_]", "unknown mesh 'C'", 10);
    expect_error(0, "f32[8,8] A[host,_] B[_,_]", "expected '->'", 20);
    expect_error(0, "f32[8,8] A[host,_] -> B[_,_] x", "expected the end", 30);
    expect_error(0, "f32[0] A[_] -> B[_]", "at least 1", 5);
}

/* Mutated notation (characters replaced, dropped or doubled) either parses or fails with a
 * usage error that quotes it; it never crashes (the ASan build runs this too). */
static void test_mutations(void **state)
{
    static const char *seeds[] = {
        "i32[1024,1024,512] A[host,_,_] -> B[_,(x,y),_]",
        "w: f32[10,64] A[gpu{4,2,2,2},_] -> f32[10,64] B[x,y]",
        "C={x:4,y:2}@<=[4,2]T(1,0)",
        "D={a:2,b:3}@[5,4,3,2,1,0]",
    };
    static const char alphabet[] = "[](){},:_->@.<=T0123456789xyhostgpuABf ";
    uint64_t r = 12345;
    for (int iter = 0; iter < 4000; iter++) {
        char text[128];
        const char *seed = seeds[iter % 4];
        snprintf(text, sizeof(text), "%s", seed);
        for (int k = 0; k < 1 + iter % 3; k++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            size_t len = strlen(text), at = (size_t)(r >> 33) % (len + 1);
            char ch = alphabet[(r >> 13) % (sizeof(alphabet) - 1)];
            if ((r >> 7) % 3 == 0 && at < len)
                memmove(text + at, text + at + 1, len - at);
            else if ((r >> 7) % 3 == 1 && at < len)
                text[at] = ch;
            else if (len + 1 < sizeof(text)) {
                memmove(text + at + 1, text + at, len - at + 1);
                text[at] = ch;
            }
        }
        mc_task_t *t = mc_task_new();
        mc_err_t err = {0};
        assert_int_equal(mc_task_add_mesh(t, "A={host:2,gpu:4}@0..7", &err), MC_OK);
        assert_int_equal(mc_task_add_mesh(t, "B={x:4,y:2}@8..15", &err), MC_OK);
        mc_status_t st = iter % 4 < 2 ? mc_task_add_move(t, text, &err) : mc_task_add_mesh(t, text, &err);
        if (st != MC_OK && (st != MC_ERR_USAGE || !strchr(err.msg, '^')))
            fail_msg("'%s': status %d, '%s'", text, st, err.msg);
        if (st == MC_OK && iter % 4 < 2)
            assert_int_equal(mc_task_split(t, &err), MC_OK);
        mc_task_free(t);
    }
}

static void test_task_text(void **state)
{
    const char *text = "# a stage boundary\n"
                       "mesh A={host:2,gpu:4}@0..7   # source\n"
                       "\n"
                       "mesh B={x:2,y:2}@[9,8,11,10]\n"
                       "move act: bf16[8,64] A[(host,gpu),_] -> B[_,(y,x)]\n"
                       "move f32[10,4] A[gpu{4,2,2,2},_] -> B[x,_]\n";
    mc_task_t *t = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_task_parse_text(text, "stage.task", &t, &err), MC_OK);
    assert_int_equal(t->nmeshes, 2);
    assert_int_equal(t->ntensors, 2);
    assert_string_equal(t->tensors[1].name, "t1");
    char *canon = mc_task_to_text(t);
    assert_string_equal(canon, "mesh A={host:2,gpu:4}@0..7\n"
                               "mesh B={x:2,y:2}@[9,8,11,10]\n"
                               "move act: bf16[8,64] A[(host,gpu),_] -> B[_,(y,x)]\n"
                               "move t1: f32[10,4] A[gpu{4,2,2,2},_] -> B[x,_]\n");
    mc_task_t *t2 = NULL;
    assert_int_equal(mc_task_parse_text(canon, "canon", &t2, &err), MC_OK);
    char *canon2 = mc_task_to_text(t2);
    assert_string_equal(canon, canon2);
    free(canon);
    free(canon2);
    mc_task_free(t);
    mc_task_free(t2);

    /* Errors carry the file and line and are parse errors. */
    assert_int_equal(mc_task_parse_text("mesh A={x:2}@0..1\n\nmove f32[4] A[y] -> A[_]\n", "f.task",
                                        &t, &err),
                     MC_ERR_PARSE);
    assert_null(t);
    assert_non_null(strstr(err.msg, "f.task:3: unknown axis 'y'"));
    assert_int_equal(mc_task_parse_text("mesh A={x:2}\nmove f32[4] A[x] -> A[_]\nmov x\n", "g",
                                        &t, &err),
                     MC_ERR_PARSE);
    assert_non_null(strstr(err.msg, "g:3: expected 'mesh"));
    assert_int_equal(mc_task_load("/nonexistent/x.task", &t, &err), MC_ERR_IO);
}

/* The name indexes: thousands of meshes and named moves (past several growths of the tables),
 * each found again by name, and a repeated name still refused with its line. A non-ASCII name
 * is quoted whole with the caret under its first character. */
static void test_task_text_names(void **state)
{
    mc_buf_t b = {0};
    for (int i = 0; i < 3000; i++)
        mc_buf_printf(&b, "mesh M%d={x:2}@0..1\n", i);
    for (int i = 0; i < 3000; i++)
        mc_buf_printf(&b, "move w%d: f32[4] M%d[x] -> M%d[_]\n", i, i, 2999 - i);
    mc_task_t *t = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_task_parse_text(b.data, "big.task", &t, &err), MC_OK);
    assert_int_equal(t->nmeshes, 3000);
    assert_int_equal(t->ntensors, 3000);
    assert_int_equal(t->tensors[17].src.mesh, 17);
    assert_int_equal(t->tensors[17].dst.mesh, 2982);
    assert_int_equal(t->meshes[2982].line, 2983);
    assert_int_equal(mc_task_find_mesh(t, "M2982", 5), 2982);
    assert_int_equal(mc_task_find_mesh(t, "M3000", 5), -1);
    assert_int_equal(mc_task_add_move(t, "w2999: f32[4] M0[x] -> M1[_]", &err), MC_ERR_USAGE);
    assert_non_null(strstr(err.msg, "tensor w2999 is already defined"));
    assert_int_equal(mc_task_add_mesh(t, "M1234={y:1}", &err), MC_ERR_USAGE);
    assert_non_null(strstr(err.msg, "mesh M1234 is already defined"));
    mc_task_free(t);
    mc_buf_printf(&b, "move w5: f32[4] M0[x] -> M1[_]\n");
    assert_int_equal(mc_task_parse_text(b.data, "big.task", &t, &err), MC_ERR_PARSE);
    assert_non_null(strstr(err.msg, "big.task:6001: tensor w5 is already defined"));
    mc_buf_free(&b);

    assert_int_equal(mc_task_parse_text("mesh A={x:2}\nmove f32[4] A[h\xC3\xB3st] -> A[_]\n", "u",
                                        &t, &err),
                     MC_ERR_PARSE);
    assert_non_null(strstr(err.msg, "u:2: expected '_', an axis name or '(' axes ')' in ASCII "
                                    "letters, digits and '_', got 'h\xC3\xB3st' at column 10\n"
                                    "  f32[4] A[h\xC3\xB3st] -> A[_]\n           ^"));
}

static void test_check_topo(void **state)
{
    mc_topo_t *topo = mc_topo_new("two GPUs");
    mc_node_t gpu = {.kind = MC_NODE_GPU, .host = 0, .busid = -1, .dev = 0, .rail = -1};
    strcpy(gpu.name, "h0/GPU0");
    int a = mc_topo_add_node(topo, &gpu);
    gpu.dev = 1;
    strcpy(gpu.name, "h0/GPU1");
    int b = mc_topo_add_node(topo, &gpu);
    mc_topo_add_link_pair(topo, a, b, MC_LINK_NVL, 20e9, 0, 1);
    mc_err_t err = {0};
    assert_int_equal(mc_topo_finalize(topo, &err), MC_OK);
    mc_task_t *t = mc_task_new();
    assert_int_equal(mc_task_add_mesh(t, "A={x:2}@0..1", &err), MC_OK);
    assert_int_equal(mc_task_check_topo(t, topo, &err), MC_OK);
    assert_int_equal(mc_task_add_mesh(t, "B={x:2}@[1,2]", &err), MC_OK);
    assert_int_equal(mc_task_check_topo(t, topo, &err), MC_ERR_USAGE);
    assert_non_null(strstr(err.msg, "device 2 of mesh B is outside the topology"));
    assert_non_null(strstr(err.msg, "B={x:2}@[1,2]\n          ^"));
    mc_task_free(t);
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes),     cmocka_unit_test(test_meshes),
        cmocka_unit_test(test_layouts),    cmocka_unit_test(test_errors),
        cmocka_unit_test(test_task_text),  cmocka_unit_test(test_check_topo),
        cmocka_unit_test(test_mutations),  cmocka_unit_test(test_task_text_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
