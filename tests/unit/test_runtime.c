/* Tests for runtime/: box addressing, plan and buffer checks, and hand-built plans run by the host
 * loopback backend (and by the GPU loopback when a GPU is present). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "runtime/runtime.h"

/* Rank 0's source is a 4x8 byte matrix holding 0..31; rank 1 needs its columns 2..5. */
static const mc_rt_box_t col_boxes0[] = {
    {MC_RT_BUF_SRC, 2, 2, {4, 4}, {8, 0}},
    {MC_RT_BUF_WS, 1, 0, {16}, {0}},
};
static const mc_rt_box_t col_boxes1[] = {{MC_RT_BUF_DST, 1, 0, {16}, {0}}};
static const mc_rt_op_t col_ops0[] = {
    {MC_RT_OP_COPY, 0, 0, 16, {0, 0}, {1, 0}},
    {MC_RT_OP_SEND, 1, 7, 16, {1, 0}, {0, 0}},
};
static const mc_rt_op_t col_ops1[] = {{MC_RT_OP_RECV, 0, 7, 16, {0, 0}, {0, 0}}};
static const mc_rt_step_t col_steps0[] = {{0, 0, 1, 1, 0}};
static const mc_rt_step_t col_steps1[] = {{0, 0, 0, 1, 0}};

static void set_bufs(mc_rt_buffers_t *b, void *src, uint64_t sn, void *dst, uint64_t dn,
                     void *ws, uint64_t wn)
{
    b->buf[MC_RT_BUF_SRC] = src;
    b->bytes[MC_RT_BUF_SRC] = sn;
    b->buf[MC_RT_BUF_DST] = dst;
    b->bytes[MC_RT_BUF_DST] = dn;
    b->buf[MC_RT_BUF_WS] = ws;
    b->bytes[MC_RT_BUF_WS] = wn;
}

/* The columns case with its buffers: src holds 0..31, dst 0xee. */
struct cols {
    mc_rt_plan_t p[2];
    unsigned char src[32], dst[16], ws[16];
    mc_rt_buffers_t b[2];
};

static void cols_setup(struct cols *c)
{
    mc_rt_plan_t p0 = {0, 2, 32, 0, 16, 2, 2, 1, col_boxes0, col_ops0, col_steps0,
                       NULL, NULL, NULL, 0};
    mc_rt_plan_t p1 = {1, 2, 0, 16, 0, 1, 1, 1, col_boxes1, col_ops1, col_steps1,
                       NULL, NULL, NULL, 0};
    c->p[0] = p0;
    c->p[1] = p1;
    for (int i = 0; i < 32; i++)
        c->src[i] = (unsigned char)i;
    memset(c->dst, 0xee, sizeof c->dst);
    set_bufs(&c->b[0], c->src, 32, NULL, 0, c->ws, 16);
    set_bufs(&c->b[1], NULL, 0, c->dst, 16, NULL, 0);
}

static void test_box_addr(void **state)
{
    /* 3-d box of 2x3 runs of 4 bytes: plane stride 100, row stride 10, base 5. */
    mc_rt_box_t b = {MC_RT_BUF_SRC, 3, 5, {2, 3, 4}, {100, 10, 0}};
    uint64_t run;
    assert_int_equal(mc_rt_box_bytes(&b), 24);
    assert_int_equal(mc_rt_box_addr(&b, 0, &run), 5);
    assert_int_equal(run, 4);
    assert_int_equal(mc_rt_box_addr(&b, 6, &run), 17); /* row 1, byte 2 */
    assert_int_equal(run, 2);
    assert_int_equal(mc_rt_box_addr(&b, 13, &run), 106); /* plane 1, row 0, byte 1 */
    assert_int_equal(run, 3);
    assert_int_equal(mc_rt_box_addr(&b, 23, &run), 128); /* last byte: 5+100+20+3 */
}

static void test_loopback_columns(void **state)
{
    struct cols c;
    mc_rt_err_t err = {0};
    cols_setup(&c);
    assert_int_equal(mc_rt_run_loopback(2, c.p, c.b, &err), MC_RT_OK);
    const unsigned char want[16] = {2, 3, 4, 5, 10, 11, 12, 13, 18, 19, 20, 21, 26, 27, 28, 29};
    assert_memory_equal(c.dst, want, 16);
}

/* A chain 0 -> 1 -> 2 of 10 bytes in 2 chunks of 5: rank 1 relays through a double buffer, so
 * chunk 0 crosses 0->1 at step 0 and 1->2 at step 1, chunk 1 at steps 1 and 2. Rank 2 writes the
 * bytes into its destination transposed from a 2x5 to a 5x2 layout (column box, stride 2). */
static const mc_rt_box_t ch0_boxes[] = {{MC_RT_BUF_SRC, 1, 0, {10}, {0}}};
static const mc_rt_box_t ch1_boxes[] = {{MC_RT_BUF_WS, 1, 0, {10}, {0}}};
static const mc_rt_box_t ch2_boxes[] = {{MC_RT_BUF_WS, 1, 0, {10}, {0}},
                                        {MC_RT_BUF_DST, 2, 0, {10, 1}, {2, 0}}};
static const mc_rt_op_t ch0_ops[] = {{MC_RT_OP_SEND, 1, 3, 5, {0, 0}, {0, 0}},
                                     {MC_RT_OP_SEND, 1, 3, 5, {0, 5}, {0, 0}}};
static const mc_rt_op_t ch1_ops[] = {
    {MC_RT_OP_RECV, 0, 3, 5, {0, 0}, {0, 0}},
    {MC_RT_OP_RECV, 0, 3, 5, {0, 0}, {0, 5}}, {MC_RT_OP_SEND, 2, 3, 5, {0, 0}, {0, 0}},
    {MC_RT_OP_SEND, 2, 3, 5, {0, 5}, {0, 0}}};
static const mc_rt_op_t ch2_ops[] = {
    {MC_RT_OP_RECV, 1, 3, 5, {0, 0}, {0, 0}}, {MC_RT_OP_COPY, 0, 0, 5, {0, 0}, {1, 0}},
    {MC_RT_OP_RECV, 1, 3, 5, {0, 0}, {0, 5}}, {MC_RT_OP_COPY, 0, 0, 5, {0, 5}, {1, 5}}};
static const mc_rt_step_t ch0_steps[] = {{0, 0, 0, 1, 0}, {1, 1, 0, 1, 0}};
static const mc_rt_step_t ch1_steps[] = {{0, 0, 0, 1, 0}, {1, 1, 0, 2, 0}, {2, 3, 0, 1, 0}};
static const mc_rt_step_t ch2_steps[] = {{1, 0, 0, 1, 1}, {2, 2, 0, 1, 1}};

/* The chain case with its buffers: src holds 100..109, dst zeros. */
struct chain {
    mc_rt_plan_t p[3];
    unsigned char src[10], ws1[10], ws2[10], dst[20];
    mc_rt_buffers_t b[3];
};

static void chain_setup(struct chain *c)
{
    mc_rt_plan_t p0 = {0, 3, 10, 0, 0, 1, 2, 2, ch0_boxes, ch0_ops, ch0_steps, NULL, NULL, NULL, 0};
    mc_rt_plan_t p1 = {1, 3, 0, 0, 10, 1, 4, 3, ch1_boxes, ch1_ops, ch1_steps, NULL, NULL, NULL, 0};
    mc_rt_plan_t p2 = {2, 3, 0, 20, 10, 2, 4, 2, ch2_boxes, ch2_ops, ch2_steps, NULL, NULL, NULL, 0};
    c->p[0] = p0;
    c->p[1] = p1;
    c->p[2] = p2;
    for (int i = 0; i < 10; i++)
        c->src[i] = (unsigned char)(100 + i);
    memset(c->dst, 0, sizeof c->dst);
    set_bufs(&c->b[0], c->src, 10, NULL, 0, NULL, 0);
    set_bufs(&c->b[1], NULL, 0, NULL, 0, c->ws1, 10);
    set_bufs(&c->b[2], NULL, 0, c->dst, 20, c->ws2, 10);
}

static void check_chain(const struct chain *c)
{
    for (int i = 0; i < 20; i++)
        assert_int_equal(c->dst[i], i % 2 ? 0 : 100 + i / 2);
}

static void test_loopback_chain(void **state)
{
    struct chain c;
    mc_rt_err_t err = {0};
    chain_setup(&c);
    assert_int_equal(mc_rt_run_loopback(3, c.p, c.b, &err), MC_RT_OK);
    check_chain(&c);
}

static void test_missing_send(void **state)
{
    struct chain c;
    mc_rt_err_t err = {0};
    chain_setup(&c);
    c.p[0].nsteps = 1; /* rank 0 never sends chunk 1 */
    c.p[0].nops = 1;
    assert_int_equal(mc_rt_run_loopback(3, c.p, c.b, &err), MC_RT_ERR_RUNTIME);
    assert_non_null(strstr(err.msg, "rank 1, step 1: receive of 5 bytes (tag 3) from rank 0 has "
                                    "no matching send"));
}

static void test_wrong_buffers(void **state)
{
    struct cols c;
    mc_rt_err_t err = {0};
    cols_setup(&c);
    c.b[0].bytes[MC_RT_BUF_SRC] = 31;
    assert_int_equal(mc_rt_run_loopback(2, c.p, c.b, &err), MC_RT_ERR_INVALID);
    assert_string_equal(err.msg, "rank 0: the source buffer has 31 bytes, the plan needs 32");
    c.b[0].bytes[MC_RT_BUF_SRC] = 32;
    c.b[0].bytes[MC_RT_BUF_WS] = 8;
    assert_int_equal(mc_rt_run_loopback(2, c.p, c.b, &err), MC_RT_ERR_INVALID);
    assert_string_equal(err.msg,
                        "rank 0: the workspace buffer has 8 bytes, the plan needs at least 16");
    mc_rt_plan_t p[3] = {c.p[0], c.p[1], c.p[1]};
    assert_int_equal(mc_rt_run_loopback(3, p, c.b, &err), MC_RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "plan 0 is for rank 0 of 2, expected rank 0 of 3"));
}

static void test_plan_check(void **state)
{
    struct cols c;
    mc_rt_plan_t *p = c.p;
    mc_rt_err_t err = {0};
    cols_setup(&c);
    assert_int_equal(mc_rt_plan_check(&p[0], &err), MC_RT_OK);
    p[0].src_bytes = 29; /* the column box ends at byte 2 + 3*8 + 4 = 30 */
    assert_int_equal(mc_rt_plan_check(&p[0], &err), MC_RT_ERR_INVALID);
    assert_string_equal(err.msg, "rank 0: box 0 ends at byte 30 of the source buffer, which has 29");
    cols_setup(&c);
    /* Sending straight out of the strided box is refused: sends need contiguous bytes. */
    mc_rt_op_t bad[2] = {col_ops0[0], col_ops0[1]};
    bad[1].src.box = 0;
    p[0].ops = bad;
    assert_int_equal(mc_rt_plan_check(&p[0], &err), MC_RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "op 1: a send or receive must be contiguous"));
    bad[1].src.box = 1;
    bad[1].peer = 2;
    assert_int_equal(mc_rt_plan_check(&p[0], &err), MC_RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "peer 2 is not a rank of 2"));
}

/* The copy-engine form of a copy: a source box of 5 runs of 40 bytes at a pitch of 64 (base 3),
 * copied from position 17 on for 150 bytes into a contiguous destination at 9. Head: the 23
 * bytes left in run 0; body: (150 - 23) / 40 = 3 whole runs; tail: the 7 bytes after them. Doing
 * the parts as the copy engine would gives the bytes the host copy gives. */
static void test_copy_rows(void **state)
{
    static const mc_rt_box_t boxes[] = {{MC_RT_BUF_SRC, 2, 3, {5, 40}, {64, 0}},
                                        {MC_RT_BUF_DST, 1, 9, {200}, {0}}};
    mc_rt_op_t op = {MC_RT_OP_COPY, 0, 0, 150, {0, 17}, {1, 0}};
    mc_rt_plan_t p = {0, 1, 320, 209, 0, 2, 1, 0, boxes, &op, NULL, NULL, NULL, NULL, 0};
    unsigned char src[320], want[209], got[209];
    mc_rt_buffers_t b = {{src, want, NULL}, {320, 209, 0}};
    mc_rt_rows_t rows;
    for (int i = 0; i < 320; i++)
        src[i] = (unsigned char)(i * 7);
    memset(want, 0, sizeof want);
    memset(got, 0, sizeof got);
    assert_int_equal(mc_rt_copy_rows(&p, &op, 41, &rows), 0); /* runs of 40 are too narrow */
    assert_int_equal(mc_rt_copy_rows(&p, &op, 40, &rows), 1);
    assert_int_equal(rows.n, 3);
    assert_int_equal(rows.part[0].src, 3 + 17);
    assert_int_equal(rows.part[0].width, 23);
    assert_int_equal(rows.part[1].src, 3 + 64);
    assert_int_equal(rows.part[1].dst, 9 + 23);
    assert_int_equal(rows.part[1].height, 3);
    assert_int_equal(rows.part[1].spitch, 64);
    assert_int_equal(rows.part[1].dpitch, 40);
    assert_int_equal(rows.part[2].src, 3 + 4 * 64);
    assert_int_equal(rows.part[2].width, 7);
    mc_rt_copy_host(&p, &op, &b);
    for (int k = 0; k < rows.n; k++)
        for (uint64_t y = 0; y < rows.part[k].height; y++)
            memcpy(got + rows.part[k].dst + y * rows.part[k].dpitch,
                   src + rows.part[k].src + y * rows.part[k].spitch, rows.part[k].width);
    assert_memory_equal(got, want, sizeof want);
    /* Both sides strided with different runs: no copy-engine form. */
    static const mc_rt_box_t other[] = {{MC_RT_BUF_SRC, 2, 3, {5, 40}, {64, 0}},
                                        {MC_RT_BUF_DST, 2, 0, {10, 20}, {20, 0}}};
    p.boxes = other;
    assert_int_equal(mc_rt_copy_rows(&p, &op, 1, &rows), 0);
}

/* The driver with caller's hooks on the columns case: the source is 0..31, the destination must
 * be columns 2..5 of it; a hook that checks counts wrong bytes, and the driver adds them up. */
static uint64_t want_cols(void *ctx, int rank, const void *dst)
{
    const unsigned char want[16] = {2, 3, 4, 5, 10, 11, 12, 13, 18, 19, 20, 21, 26, 27, 28, 29};
    uint64_t wrong = 0;
    (*(int *)ctx)++;
    for (int i = 0; rank == 1 && i < 16; i++)
        wrong += ((const unsigned char *)dst)[i] != want[i];
    return wrong;
}

static void fill_cols(void *ctx, int rank, void *src)
{
    for (int i = 0; rank == 0 && i < 32; i++)
        ((unsigned char *)src)[i] = (unsigned char)i;
}

static void poison(void *ctx, int rank, void *dst)
{
    memset(dst, 0xee, rank == 1 ? 16 : 0);
}

static void test_drive_loopback(void **state)
{
    struct cols c;
    int checked = 0;
    mc_rt_err_t err = {0};
    mc_rt_drive_result_t res;
    mc_rt_drive_hooks_t hooks = {&checked, fill_cols, poison, want_cols, NULL};
    mc_rt_drive_opts_t o = {mc_rt_backend_find("loopback"), -1, 5, NULL, -1, -1, -1};
    cols_setup(&c);
    assert_non_null(o.backend);
    assert_null(mc_rt_backend_find("carrier-pigeon"));
    assert_int_equal(mc_rt_drive(2, c.p, &o, &hooks, &res, &err), MC_RT_OK);
    assert_int_equal(checked, 2);
    assert_int_equal(res.wrong, 0);
    assert_int_equal(res.rank, 0);
    /* every rank's buffers: 32 + 16 (source, workspace of rank 0), 16 (destination of rank 1) */
    assert_int_equal(mc_rt_drive_host_bytes(2, c.p, &hooks, -1), 64);
    /* too small a workspace is refused by the backend, through the driver */
    o.workspace = 8;
    assert_int_equal(mc_rt_drive(2, c.p, &o, &hooks, &res, &err), MC_RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "rank 0: the workspace buffer has 8 bytes"));
    /* a backend with one process per rank needs a communicator */
    o.backend = mc_rt_backend_find("mpi");
    o.workspace = -1;
    assert_int_equal(mc_rt_drive(2, c.p, &o, &hooks, &res, &err), MC_RT_ERR_INVALID);
    assert_string_equal(err.msg, "backend mpi needs an MPI communicator");
    assert_int_equal(mc_rt_stage_parse("check"), MC_RT_STAGE_CHECK);
    assert_int_equal(mc_rt_stage_parse("lunch"), -1);
}

static void test_gpu_loopback(void **state)
{
    struct chain c;
    mc_rt_err_t err = {0};
    double secs = 0;
    int n = mc_rt_cuda_devices();
    chain_setup(&c);
    if (n <= 0) {
        print_message("no CUDA device (%d): GPU loopback skipped\n", n);
        assert_int_equal(mc_rt_run_loopback_gpu(3, c.p, c.b, &secs, &err), MC_RT_ERR_UNSUPPORTED);
        skip();
    }
    assert_int_equal(mc_rt_run_loopback_gpu(3, c.p, c.b, &secs, &err), MC_RT_OK);
    check_chain(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_box_addr),          cmocka_unit_test(test_loopback_columns),
        cmocka_unit_test(test_loopback_chain),    cmocka_unit_test(test_missing_send),
        cmocka_unit_test(test_wrong_buffers),     cmocka_unit_test(test_plan_check),
        cmocka_unit_test(test_copy_rows),         cmocka_unit_test(test_gpu_loopback),
        cmocka_unit_test(test_drive_loopback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
