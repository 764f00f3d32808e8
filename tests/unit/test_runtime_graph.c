/* Tests for the runtime's dependency graph (runtime/graph.c) and the loopback executor over it:
 * random plans whose dependencies are exactly their byte hazards must give, in any order the
 * graph allows, the bytes of the reference order (the steps, one op each); without their
 * dependencies some order gives other bytes, so the check has teeth. Plus the plan check's
 * refusal of a dependency on a later op. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

#define NR 3      /* ranks */
#define NB 64     /* bytes of each buffer */
#define NOPS 120  /* ops in the reference order, a send and its receive counting once */

/* One rank's random plan under construction. */
typedef struct rplan {
    mc_rt_box_t boxes[MC_RT_NBUFS];
    mc_rt_op_t ops[NOPS];
    mc_rt_step_t steps[NOPS];
    uint32_t dep_first[NOPS + 1], deps[NOPS * NOPS];
    uint32_t chan_first[NOPS + 1], chan[NOPS]; /* the message order alone */
    /* per op: the byte ranges it reads and writes, by buffer (-1: none) */
    int rbuf[NOPS], wbuf[NOPS];
    uint32_t rlo[NOPS], rhi[NOPS], wlo[NOPS], whi[NOPS];
    uint32_t nops, nsteps, ndeps, nchan;
    unsigned char mem[MC_RT_NBUFS][NB];
} rplan_t;

static uint32_t rnd(uint64_t *s, uint32_t n)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((*s >> 33) % n);
}

static int overlap(int b1, uint32_t lo1, uint32_t hi1, int b2, uint32_t lo2, uint32_t hi2)
{
    return b1 >= 0 && b1 == b2 && lo1 < hi2 && lo2 < hi1;
}

/* Appends op to rank p in global step `step`, waiting for every earlier op it conflicts with
 * (it reads what one wrote, or writes what one read or wrote) and, as the plan format requires,
 * for the previous send or receive with the same peer and tag (messages match in order). */
static void add(rplan_t *p, uint32_t step, int comm, const mc_rt_op_t *op, int rb, uint32_t rlo,
                int wb, uint32_t wlo)
{
    uint32_t i = p->nops++;
    p->ops[i] = *op;
    p->rbuf[i] = rb, p->rlo[i] = rlo, p->rhi[i] = rlo + (uint32_t)op->bytes;
    p->wbuf[i] = wb, p->wlo[i] = wlo, p->whi[i] = wlo + (uint32_t)op->bytes;
    p->steps[p->nsteps++] = (mc_rt_step_t){step, i, !comm, (uint32_t)comm, 0};
    p->dep_first[i] = p->ndeps;
    p->chan_first[i] = p->nchan;
    int64_t prev = -1;
    for (uint32_t j = 0; j < i; j++) {
        int same = comm && p->ops[j].kind == op->kind && p->ops[j].peer == op->peer &&
                   p->ops[j].tag == op->tag;
        prev = same ? j : prev;
        if (same || overlap(p->wbuf[j], p->wlo[j], p->whi[j], rb, rlo, p->rhi[i]) ||
            overlap(p->wbuf[j], p->wlo[j], p->whi[j], wb, wlo, p->whi[i]) ||
            overlap(p->rbuf[j], p->rlo[j], p->rhi[j], wb, wlo, p->whi[i]))
            p->deps[p->ndeps++] = j;
    }
    if (prev >= 0)
        p->chan[p->nchan++] = (uint32_t)prev;
    p->dep_first[i + 1] = p->ndeps;
    p->chan_first[i + 1] = p->nchan;
}

/* NOPS random copies inside a rank and sends between ranks, over 1-d boxes of each buffer. */
static void make_plans(rplan_t *P, uint64_t seed)
{
    memset(P, 0, NR * sizeof *P);
    for (int r = 0; r < NR; r++) {
        for (int b = 0; b < MC_RT_NBUFS; b++) {
            P[r].boxes[b] = (mc_rt_box_t){b, 1, 0, {NB}, {0}};
            for (int i = 0; i < NB; i++)
                P[r].mem[b][i] = (unsigned char)rnd(&seed, 256);
        }
    }
    for (uint32_t s = 0; s < NOPS; s++) {
        uint32_t n = 1 + rnd(&seed, 16), so = rnd(&seed, NB - n + 1), dof = rnd(&seed, NB - n + 1);
        int a = (int)rnd(&seed, NR), sb = (int)rnd(&seed, MC_RT_NBUFS);
        int db = rnd(&seed, 2) ? MC_RT_BUF_DST : MC_RT_BUF_WS;
        if (rnd(&seed, 3)) {
            mc_rt_op_t op = {MC_RT_OP_COPY, 0, 0, n, {sb, so}, {db, dof}};
            add(&P[a], s, 0, &op, sb, so, db, dof);
            continue;
        }
        int b = (a + 1 + (int)rnd(&seed, NR - 1)) % NR, tag = (int)rnd(&seed, 3);
        mc_rt_op_t snd = {MC_RT_OP_SEND, b, tag, n, {sb, so}, {0, 0}};
        mc_rt_op_t rcv = {MC_RT_OP_RECV, a, tag, n, {0, 0}, {db, dof}};
        add(&P[a], s, 1, &snd, sb, so, -1, 0);
        add(&P[b], s, 1, &rcv, -1, 0, db, dof);
    }
}

/* Runs the plans on copies of their buffers in the given order and pick seed; with_deps 0 keeps
 * only the message order of the dependency tables. Returns every rank's buffers after the run. */
static void run(rplan_t *P, int order, uint64_t seed, int with_deps,
                unsigned char out[NR][MC_RT_NBUFS][NB])
{
    mc_rt_plan_t plans[NR];
    mc_rt_buffers_t bufs[NR];
    mc_rt_err_t err = {0};
    for (int r = 0; r < NR; r++) {
        plans[r] = (mc_rt_plan_t){r, NR, NB, NB, NB, MC_RT_NBUFS, P[r].nops, P[r].nsteps,
                                  P[r].boxes, P[r].ops, P[r].steps,
                                  with_deps ? P[r].dep_first : P[r].chan_first,
                                  with_deps ? P[r].deps : P[r].chan, NULL, 0};
        memcpy(out[r], P[r].mem, sizeof P[r].mem);
        for (int b = 0; b < MC_RT_NBUFS; b++) {
            bufs[r].buf[b] = out[r][b];
            bufs[r].bytes[b] = NB;
        }
    }
    int st = mc_rt_run_loopback_order(NR, plans, bufs, order, seed, &err);
    if (st != MC_RT_OK)
        print_message("%s\n", err.msg);
    assert_int_equal(st, MC_RT_OK);
}

static void test_random_orders(void **state)
{
    static rplan_t P[NR];
    static unsigned char want[NR][MC_RT_NBUFS][NB], got[NR][MC_RT_NBUFS][NB];
    int differs = 0;
    for (uint64_t plan = 1; plan <= 20; plan++) {
        make_plans(P, plan);
        run(P, MC_RT_ORDER_STEPS, 0, 1, want);
        for (uint64_t seed = 0; seed < 8; seed++) {
            run(P, MC_RT_ORDER_DEPS, seed * 7919 + plan, 1, got);
            assert_memory_equal(got, want, sizeof want);
            run(P, MC_RT_ORDER_DEPS, seed * 7919 + plan, 0, got);
            differs += memcmp(got, want, sizeof want) != 0;
        }
    }
    /* Without its dependencies the same plans come out wrong in some order. */
    assert_true(differs > 0);
}

/* A dependency on a later op, or on an op of the same part of the same step, is refused. */
static void test_check_deps(void **state)
{
    static rplan_t P[NR];
    mc_rt_err_t err = {0};
    make_plans(P, 3);
    uint32_t first[NOPS + 1], deps[1] = {1};
    for (uint32_t i = 0; i <= P[0].nops; i++)
        first[i] = i ? 1 : 0;
    mc_rt_plan_t p = {0, NR, NB, NB, NB, MC_RT_NBUFS, P[0].nops, P[0].nsteps, P[0].boxes,
                      P[0].ops, P[0].steps, first, deps, NULL, 0};
    assert_int_equal(mc_rt_plan_check(&p, &err), MC_RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "rank 0: op 0 of step"));
    assert_non_null(
        strstr(err.msg, "waits for op 1; an op may only wait for ops of earlier steps"));
    deps[0] = 0;
    first[1] = 0; /* op 1 waits for op 0, an earlier step */
    for (uint32_t i = 2; i <= P[0].nops; i++)
        first[i] = 1;
    assert_int_equal(mc_rt_plan_check(&p, &err), MC_RT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_orders),
        cmocka_unit_test(test_check_deps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
