/* Tests for the pipeline orders and the event simulation: the orders match Alpa's own tables, the
 * peak stored activations follow from each order's warm-up count, and the iteration time meets
 * the closed forms: (B + S - 1)(f + b) without communication for uniform stages (both orders),
 * exactly t more per dependent transfer of t when nothing can overlap it, and no two transfers on
 * a shared link at once. Transfer times are set by hand here; test_pipeline_parse times real
 * schedules. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"

static void assert_near(double got, double want)
{
    if (fabs(got - want) > 1e-9 * (fabs(want) + 1e-12)) {
        print_error("got %.12g, expected %.12g\n", got, want);
        fail();
    }
}

static mc_pipe_op_t op(int mb, int backward, int tick)
{
    return (mc_pipe_op_t){mb, backward, tick};
}

static void assert_ops(const mc_pipe_op_t *got, const mc_pipe_op_t *want, int n, int ticks)
{
    for (int k = 0; k < n; k++) {
        assert_int_equal(got[k].mb, want[k].mb);
        assert_int_equal(got[k].backward, want[k].backward);
        if (ticks)
            assert_int_equal(got[k].tick, want[k].tick);
    }
}

/* The first clocks of the docstrings of Alpa's PipeDreamFlush and OverlapFriendlyPipeDreamSchedule
 * (3 meshes): "k (i,j)": micro-batch i, F or B, at clock k. */
static void test_orders_match_alpa(void **state)
{
    mc_pipe_op_t ops[12];
    mc_pipe_order_ops(MC_PIPE_EAGER_1F1B, 3, 6, 0, ops);
    const mc_pipe_op_t eager0[] = {op(0, 0, 0), op(1, 0, 1), op(2, 0, 2), op(3, 0, 3),
                                   op(4, 0, 4), op(0, 1, 5), op(5, 0, 6)};
    assert_ops(ops, eager0, 7, 1);
    mc_pipe_order_ops(MC_PIPE_EAGER_1F1B, 3, 6, 1, ops);
    const mc_pipe_op_t eager1[] = {op(0, 0, 1), op(1, 0, 2), op(2, 0, 3), op(0, 1, 4),
                                   op(3, 0, 5), op(1, 1, 6)};
    assert_ops(ops, eager1, 6, 1);
    mc_pipe_order_ops(MC_PIPE_EAGER_1F1B, 3, 6, 2, ops);
    const mc_pipe_op_t eager2[] = {op(0, 0, 2), op(0, 1, 3), op(1, 0, 4), op(1, 1, 5),
                                   op(2, 0, 6)};
    assert_ops(ops, eager2, 5, 1);
    /* Cool-down: once the forwards are done, mesh 0's backwards wait for clock
     * (S-1) + (2 bwd + 1) + (S-1-i): B2 at 9, B3 at 11, B4 at 13, B5 at 15. */
    mc_pipe_order_ops(MC_PIPE_EAGER_1F1B, 3, 6, 0, ops);
    const mc_pipe_op_t cool0[] = {op(1, 1, 7), op(2, 1, 9), op(3, 1, 11), op(4, 1, 13),
                                  op(5, 1, 15)};
    assert_ops(ops + 7, cool0, 5, 1);

    /* 1F1B: the order of each mesh's steps in the docstring's clocks. */
    mc_pipe_order_ops(MC_PIPE_1F1B, 3, 6, 0, ops);
    const mc_pipe_op_t flush0[] = {op(0, 0, 0), op(1, 0, 0), op(2, 0, 0), op(0, 1, 0),
                                   op(3, 0, 0)};
    assert_ops(ops, flush0, 5, 0);
    mc_pipe_order_ops(MC_PIPE_1F1B, 3, 6, 1, ops);
    const mc_pipe_op_t flush1[] = {op(0, 0, 0), op(1, 0, 0), op(0, 1, 0), op(2, 0, 0),
                                   op(1, 1, 0)};
    assert_ops(ops, flush1, 5, 0);
    mc_pipe_order_ops(MC_PIPE_1F1B, 3, 6, 2, ops);
    const mc_pipe_op_t flush2[] = {op(0, 0, 0), op(0, 1, 0), op(1, 0, 0), op(1, 1, 0),
                                   op(2, 0, 0)};
    assert_ops(ops, flush2, 5, 0);
}

/* Every order runs each micro-batch's forward once and then its backward once; eager-1F1B's
 * ticks only grow along a stage's order, so its backward delays never reorder a stage. The peak
 * of stored activations is the warm-up count plus the forward of the first 1F1B pair for 1F1B,
 * the warm-up count for eager-1F1B, at most B. */
static void test_orders_and_peaks(void **state)
{
    mc_pipe_op_t *ops = malloc(sizeof(mc_pipe_op_t) * 2 * 64);
    for (int S = 1; S <= 16; S++)
        for (int B = 1; B <= 64; B += (B < 8 ? 1 : 7))
            for (int i = 0; i < S; i++)
                for (int o = 0; o < 2; o++) {
                    mc_pipe_order_t order = o ? MC_PIPE_EAGER_1F1B : MC_PIPE_1F1B;
                    mc_pipe_order_ops(order, S, B, i, ops);
                    int fwd = 0, bwd = 0;
                    for (int k = 0; k < 2 * B; k++) {
                        if (ops[k].backward) {
                            assert_int_equal(ops[k].mb, bwd++);
                            assert_true(ops[k].mb < fwd);
                        } else {
                            assert_int_equal(ops[k].mb, fwd++);
                        }
                        if (order == MC_PIPE_EAGER_1F1B && k)
                            assert_true(ops[k].tick > ops[k - 1].tick);
                    }
                    int warm = mc_pipe_warmup(order, S, B, i);
                    int want = o ? (2 * (S - i) - 1 < B ? 2 * (S - i) - 1 : B)
                                 : (S - i < B ? S - i : B);
                    assert_int_equal(warm, o ? want : (S - i - 1 < B ? S - i - 1 : B));
                    assert_int_equal(mc_pipe_peak_stored(ops, 2 * B), want);
                }
    free(ops);
}

/* S uniform stages A, B, ... each on one GPU, a 16-byte activation between neighbours, and
 * transfer times set by hand: fwd_t forward, bwd_t backward, one link per boundary and
 * direction. */
static mc_pipe_t *uniform(int S, int B, double f, double b, double fwd_t, double bwd_t)
{
    mc_buf_t text = {0};
    mc_buf_printf(&text, "microbatches %d\n", B);
    for (int s = 0; s < S; s++)
        mc_buf_printf(&text, "stage %c={x:1}@%d forward %.17gs backward %.17gs\n", 'A' + s, s,
                      f, b);
    for (int s = 0; s + 1 < S; s++)
        mc_buf_printf(&text, "activation h%d: f32[4] %c[_] -> %c[_]\n", s, 'A' + s, 'B' + s);
    mc_pipe_t *p = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_pipe_parse_text(text.data, "uniform.pipeline", &p, &err), MC_OK);
    mc_buf_free(&text);
    assert_int_equal(p->ngroups, 2 * (S - 1));
    for (int g = 0; g < p->ngroups; g++) {
        mc_pipe_group_t *gr = &p->groups[g];
        gr->seconds = gr->backward ? bwd_t : fwd_t;
        gr->nlinks = 1;
        gr->links = malloc(sizeof(int));
        gr->links[0] = g;
    }
    p->timed = 1;
    return p;
}

static void simulate(const mc_pipe_t *p, mc_pipe_order_t order, int no_comm, mc_pipe_result_t *r)
{
    mc_err_t err = {0};
    assert_int_equal(mc_pipe_simulate(p, order, no_comm, r, &err), MC_OK);
    assert_near(r->critical_compute_s + r->exposed_comm_s, r->iteration_s);
}

static void test_no_comm_closed_form(void **state)
{
    for (int S = 1; S <= 6; S++)
        for (int B = 1; B <= 12; B++) {
            const double f = 0.25, b = 0.5;
            mc_pipe_t *p = uniform(S, B, f, b, 0, 0);
            mc_pipe_result_t r, q;
            simulate(p, MC_PIPE_1F1B, 0, &r);
            assert_near(r.iteration_s, (B + S - 1) * (f + b));
            assert_near(r.bubble, (double)(S - 1) / (B + S - 1));
            assert_near(r.exposed_comm_s, 0);
            /* Eager-1F1B's longer warm-up costs no time without communication. */
            simulate(p, MC_PIPE_EAGER_1F1B, 0, &q);
            assert_near(q.iteration_s, (B + S - 1) * (f + b));
            mc_pipe_result_free(&q);
            /* Transfers that take time are ignored when asked to. */
            mc_pipe_t *slow = uniform(S, B, f, b, 1, 1);
            simulate(slow, MC_PIPE_1F1B, 1, &q);
            assert_near(q.iteration_s, r.iteration_s);
            mc_pipe_result_free(&q);
            mc_pipe_result_free(&r);
            mc_pipe_free(slow);
            mc_pipe_free(p);
        }
}

/* One micro-batch: nothing can overlap a transfer, so each of the S - 1 forward and S - 1
 * backward transfers adds exactly its time, and all of it is on the critical path. */
static void test_transfer_adds_its_time(void **state)
{
    for (int S = 2; S <= 5; S++)
        for (int o = 0; o < 2; o++) {
            const double f = 1, b = 2, t = 0.375, u = 0.125;
            mc_pipe_order_t order = o ? MC_PIPE_EAGER_1F1B : MC_PIPE_1F1B;
            mc_pipe_t *p = uniform(S, 1, f, b, t, u);
            mc_pipe_result_t r;
            simulate(p, order, 0, &r);
            assert_near(r.iteration_s, S * (f + b) + (S - 1) * (t + u));
            assert_near(r.exposed_comm_s, (S - 1) * (t + u));
            assert_int_equal(r.critical_transfers, 2 * (S - 1));
            mc_pipe_result_free(&r);
            mc_pipe_free(p);
        }
}

/* Two stages A, B, f = b = 1, transfers of t <= 1 each way. Eager-1F1B: A sends every
 * activation before it needs a gradient, so only the first activation and the last gradient are
 * dependent steps: 2(B + 1) + 2t. 1F1B: A's F(m + 2) comes after its B(m), so the chain
 * B's B(m) -> gradient -> A's B(m) -> A's F(m + 2) -> activation -> B's F(m + 2) takes 2 + 2t
 * against B's own 2 steps in between: every second micro-batch pays both transfers again,
 * 2(B + 1) + 2t + 2t floor((B - 1) / 2). */
static void test_dependent_transfers(void **state)
{
    for (int B = 1; B <= 12; B++) {
        const double t = 0.25;
        mc_pipe_t *p = uniform(2, B, 1, 1, t, t);
        mc_pipe_result_t r, e;
        simulate(p, MC_PIPE_EAGER_1F1B, 0, &e);
        assert_near(e.iteration_s, 2.0 * (B + 1) + 2 * t);
        assert_near(e.exposed_comm_s, 2 * t);
        simulate(p, MC_PIPE_1F1B, 0, &r);
        assert_near(r.iteration_s, 2.0 * (B + 1) + 2 * t + 2 * t * ((B - 1) / 2));
        assert_near(r.exposed_comm_s, 2 * t + 2 * t * ((B - 1) / 2));
        mc_pipe_result_free(&r);
        mc_pipe_result_free(&e);
        mc_pipe_free(p);
    }
}

/* A skip connection A -> C next to A -> B: when both transfers load the same link the second
 * waits for the first; on separate links they run together. */
static void test_shared_link_serializes(void **state)
{
    const char *text = "microbatches 1\n"
                       "stage A={x:1}@0 forward 1s backward 1s\n"
                       "stage B={x:1}@1 forward 1s backward 1s\n"
                       "stage C={x:1}@2 forward 1s backward 1s\n"
                       "forward h: f32[4] A[_] -> B[_]\n"
                       "forward skip: f32[4] A[_] -> C[_]\n"
                       "forward g: f32[4] B[_] -> C[_]\n";
    for (int shared = 0; shared < 2; shared++) {
        mc_pipe_t *p = NULL;
        mc_err_t err = {0};
        assert_int_equal(mc_pipe_parse_text(text, "skip.pipeline", &p, &err), MC_OK);
        assert_int_equal(p->ngroups, 3);
        for (int g = 0; g < 3; g++) {
            p->groups[g].seconds = p->groups[g].dst == 2 && p->groups[g].src == 1 ? 0 : 3;
            p->groups[g].nlinks = 1;
            p->groups[g].links = malloc(sizeof(int));
            p->groups[g].links[0] = shared ? 0 : g;
        }
        p->timed = 1;
        mc_pipe_result_t r;
        simulate(p, MC_PIPE_1F1B, 0, &r);
        /* A's forward ends at 1; h takes [1, 4]; skip takes [1, 4] alone or [4, 7] behind h. B
         * computes [4, 5] and g arrives at 5, so C starts at 5 or 7. */
        const mc_pipe_span_t *h = &r.spans[6 + 0], *skip = &r.spans[6 + 1];
        assert_near(h->t0, 1);
        assert_near(h->t1, 4);
        assert_near(skip->t0, shared ? 4 : 1);
        assert_near(skip->t1, shared ? 7 : 4);
        assert_near(r.iteration_s, (shared ? 7 : 5) + 1 + 1);
        assert_near(r.exposed_comm_s, shared ? 6 : 3);
        mc_pipe_result_free(&r);
        mc_pipe_free(p);
    }
}

/* A transfer to two stages (one move, two consumers): each receiving stage goes on when its own
 * bytes are in (B after 1 s, C after 3 s), while the transfer holds its links for all 3 s. */
static void test_fan_out_arrivals(void **state)
{
    const char *text = "microbatches 1\n"
                       "stage A={x:1}@0 forward 1s backward 1s\n"
                       "stage B={x:1}@1 forward 1s backward 1s\n"
                       "stage C={x:1}@2 forward 1s backward 1s\n"
                       "forward h: f32[4] A[_] -> B[_], C[_]\n"
                       "forward g: f32[4] B[_] -> C[_]\n";
    mc_pipe_t *p = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_pipe_parse_text(text, "fan.pipeline", &p, &err), MC_OK);
    assert_int_equal(p->ngroups, 2);
    assert_int_equal(p->groups[0].nmore, 1);
    p->groups[0].seconds = 3;
    p->groups[0].arrive_s[0] = 1;
    p->groups[0].arrive_s[1] = 3;
    p->groups[1].seconds = 0.5;
    for (int g = 0; g < 2; g++) {
        p->groups[g].nlinks = 1;
        p->groups[g].links = malloc(sizeof(int));
        p->groups[g].links[0] = g;
    }
    p->timed = 1;
    mc_pipe_result_t r;
    simulate(p, MC_PIPE_1F1B, 0, &r);
    /* Spans: A's two steps, B's, C's, then h and g. A's forward ends at 1; h holds [1, 4]; B
     * computes [2, 3] (its bytes at 2), g takes [3, 3.5]; C needs h (at 4) and g: starts at 4. */
    const mc_pipe_span_t *h = &r.spans[6], *b = &r.spans[2], *c = &r.spans[4];
    assert_near(h->t0, 1);
    assert_near(h->t1, 4);
    assert_near(b->t0, 2);
    assert_near(c->t0, 4);
    /* C's forward [4, 5] and backward [5, 6]; with forward moves only, A's and B's backwards
     * wait for no gradient and end before (at 2 and 4). */
    assert_near(r.iteration_s, 6);
    /* The path: A's forward [0, 1], h until C starts (3 s), C's two steps. */
    assert_near(r.exposed_comm_s, 3);
    assert_near(r.critical_compute_s, 3);
    mc_pipe_result_free(&r);
    mc_pipe_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_orders_match_alpa),
        cmocka_unit_test(test_orders_and_peaks),
        cmocka_unit_test(test_no_comm_closed_form),
        cmocka_unit_test(test_transfer_adds_its_time),
        cmocka_unit_test(test_dependent_transfers),
        cmocka_unit_test(test_shared_link_serializes),
        cmocka_unit_test(test_fan_out_arrivals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
