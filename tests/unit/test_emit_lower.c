/* Tests for the lowering of schedules into per-rank plans (emit/lower.c): hand-built schedules on
 * the paper's cluster, their plans' shape (steps, sends, staging, workspace) derived by hand, and
 * every byte checked after the host loopback runs them; and one rank lowered alone (emit --rank),
 * on hand-built and synthesized schedules, against the full lowering. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "emit/emit.h"
#include "synth/synth.h"
#include "test_paper_sched.h"

/* The piece whose destinations start with gpu. */
static int piece_to(const mc_task_t *t, int gpu)
{
    for (int i = 0; i < t->npieces; i++)
        if (t->pieces[i].ndests && t->pieces[i].dests[0] == gpu)
            return i;
    fail_msg("no piece for GPU %d", gpu);
    return -1;
}

/* Every byte of the lowered schedule arrives; frees the case. */
static void check_and_free(mc_task_t *task, mc_sched_t *s, mc_emit_plans_t *P)
{
    assert_int_equal(loopback_wrong(task, P), 0);
    mc_emit_plans_free(P);
    mc_sched_free(s);
    mc_task_free(task);
}

/* GPU 0 broadcasts a 4x6 i32 tensor (96 bytes) down the chain 0 -> 4 -> 5 -> 6 in 3 chunks of
 * 32 bytes. Every shard is the whole tensor, so nothing is staged: GPU 4 receives chunk c at step
 * c straight into its destination and forwards it from there at step c+1; the chain takes
 * 3 + 3 - 1 = 5 steps. A second tensor (i8[3], replicated on GPUs 4..6 too) rides in the
 * same phase on its own tree 0 -> 5, so GPU 5's buffers hold both tensors, i32 first. */
static void test_chain(void **state)
{
    mc_task_t *task;
    mc_emit_plans_t *P = NULL;
    mc_err_t err = {0};
    mc_sched_t *s = sched_for("mesh A={host:1,gpu:1}@[0]\nmesh B={host:1,gpu:3}@[4,5,6]\n"
                              "move a: i32[4,6] A[_,_] -> B[_,_]\nmove b: i8[3] A[_] -> B[_]\n",
                              &task);
    assert_int_equal(task->npieces, 2);
    int pa = task->pieces[0].bytes == 96 ? 0 : 1;
    int t0 = mc_sched_add_tree(s, pa, 0, 96, 0, 0, 3);
    edge(s, t0, 0, 4);
    edge(s, t0, 4, 5);
    edge(s, t0, 5, 6);
    int t1 = mc_sched_add_tree(s, 1 - pa, 0, 3, 0, 0, 1);
    edge(s, t1, 0, 5);
    edge(s, t1, 5, 4);
    edge(s, t1, 5, 6);
    s->nphases = 1;
    assert_int_equal(mc_emit_lower(s, &P, &err), MC_OK);
    assert_int_equal(P->nranks, 4);
    assert_int_equal(P->gpus[1], 4);
    assert_int_equal(P->nphase_steps, 5);
    const mc_rt_plan_t *g0 = &P->plans[0], *g4 = &P->plans[1], *g6 = &P->plans[3];
    assert_int_equal(g0->src_bytes, 99);
    assert_int_equal(g4->dst_bytes, 99);
    for (int r = 0; r < 4; r++)
        assert_int_equal(P->plans[r].ws_bytes, 0);
    /* GPU 0: steps 0, 1, 2 (tree a's chunks; tree b's one message rides in step 0). */
    assert_int_equal(g0->nsteps, 3);
    assert_int_equal(g0->steps[0].ncomm, 2);
    assert_int_equal(g0->steps[0].npre, 0);
    /* GPU 4 receives a's chunks at steps 0..2 and forwards them at 1..3; b arrives at step 1. */
    assert_int_equal(g4->nsteps, 4);
    assert_int_equal(g4->steps[3].index, 3);
    assert_int_equal(g4->steps[1].ncomm, 3);
    /* GPU 6 receives a's chunks at steps 2..4. */
    assert_int_equal(g6->steps[0].index, 1);
    assert_int_equal(g6->steps[g6->nsteps - 1].index, 4);
    check_and_free(task, s, P);
}

/* GPU 0 holds a 4x6 i32 tensor; GPUs 4 and 5 need columns 0..2 and 3..5 (48 bytes each, rows of
 * 12 bytes at a stride of 24 in GPU 0's tile). Tree 1 sends GPU 5's half through GPU 4, which does
 * not need it, in 2 chunks of 24: GPU 0 packs them into two 24-byte slots (so that it may pack
 * chunk 1 while chunk 0 is still on its way), GPU 4 relays through two slots (48 bytes). Tree 0
 * sends GPU 4's half whole: GPU 0 packs it into 48 bytes. Both trees share phase 0, so GPU 0 needs
 * 48 + 48 = 96 bytes of workspace; GPU 4 receives its own half straight into its destination,
 * GPU 5 both chunks. */
static void test_strided_relay(void **state)
{
    mc_task_t *task;
    mc_emit_plans_t *P = NULL;
    mc_err_t err = {0};
    mc_sched_t *s = sched_for("mesh A={host:1,gpu:1}@[0]\nmesh B={x:2}@[4,5]\n"
                              "move i32[4,6] A[_,_] -> B[_,x]\n", &task);
    int p4 = piece_to(task, 4), p5 = piece_to(task, 5);
    int t0 = mc_sched_add_tree(s, p4, 0, 48, 0, 0, 1);
    edge(s, t0, 0, 4);
    int t1 = mc_sched_add_tree(s, p5, 0, 48, 0, 0, 2);
    edge(s, t1, 0, 4);
    edge(s, t1, 4, 5);
    s->nphases = 1;
    assert_int_equal(mc_emit_lower(s, &P, &err), MC_OK);
    assert_int_equal(P->nranks, 3);
    assert_int_equal(P->plans[0].ws_bytes, 96);
    assert_int_equal(P->plans[1].ws_bytes, 48);
    assert_int_equal(P->plans[2].ws_bytes, 0);
    /* GPU 0's source box: rows of 12 bytes at a stride of 24, merged to 2 dimensions. */
    const mc_rt_box_t *bx = &P->plans[0].boxes[P->plans[0].ops[0].src.box];
    assert_int_equal(bx->ndims, 2);
    assert_int_equal(bx->extent[1], 12);
    assert_int_equal(bx->stride[0], 24);
    check_and_free(task, s, P);
}

/* Phase 0 brings the piece to GPU 4; in phase 1 GPU 4 roots a tree to GPU 5 from its own
 * destination shard. Phase 1 starts after phase 0's single step and the step reserved for the
 * tokens that order links between phases (none here: the two edges share no link, and GPU 4
 * waits for its own receive). */
static void test_root_from_earlier_phase(void **state)
{
    mc_task_t *task;
    mc_emit_plans_t *P = NULL;
    mc_err_t err = {0};
    mc_sched_t *s = sched_for("mesh A={host:1,gpu:1}@[0]\nmesh B={x:2}@[4,5]\n"
                              "move f64[5,3] A[_,_] -> B[_,_]\n", &task);
    int t0 = mc_sched_add_tree(s, 0, 0, 120, 0, 0, 1);
    edge(s, t0, 0, 4);
    int t1 = mc_sched_add_tree(s, 0, 0, 120, 4, 1, 1);
    edge(s, t1, 4, 5);
    s->nphases = 2;
    assert_int_equal(mc_emit_lower(s, &P, &err), MC_OK);
    assert_int_equal(P->nphase_steps, 3);
    assert_int_equal(P->plans[2].steps[0].index, 2);
    /* GPU 4 receives (op 0), unpacks into its shard (op 1, waiting for op 0), and in phase 1
     * sends from the shard: the send waits for the unpack, by the fence between phases. */
    const mc_rt_plan_t *p4 = &P->plans[1];
    assert_int_equal(p4->nops, 3);
    assert_int_equal(p4->ops[2].kind, MC_RT_OP_SEND);
    assert_int_equal(p4->dep_first[1], 0);
    assert_int_equal(p4->dep_first[2] - p4->dep_first[1], 1);
    assert_int_equal(p4->deps[p4->dep_first[1]], 0);
    assert_int_equal(p4->dep_first[3] - p4->dep_first[2], 1);
    assert_int_equal(p4->deps[p4->dep_first[2]], 1);
    check_and_free(task, s, P);
}

static void test_root_without_data(void **state)
{
    mc_task_t *task;
    mc_emit_plans_t *P = NULL;
    mc_err_t err = {0};
    mc_sched_t *s = sched_for("mesh A={host:1,gpu:1}@[0]\nmesh B={x:2}@[4,5]\n"
                              "move f64[5,3] A[_,_] -> B[_,_]\n", &task);
    int t0 = mc_sched_add_tree(s, 0, 0, 120, 6, 0, 1);
    edge(s, t0, 6, 4);
    s->nphases = 1;
    assert_int_equal(mc_emit_lower(s, &P, &err), MC_ERR_UNSUPPORTED);
    assert_string_equal(err.msg, "tree 0: root GPU 6 neither holds piece 0 nor is one of its "
                                 "destinations, so it has nothing to send");
    assert_null(P);
    mc_sched_free(s);
    mc_task_free(task);
}

/* Lowering one rank alone (mc_emit_lower_rank, what `meshcast emit --rank` runs): every rank's
 * plan made alone equals, table by table, that rank's plan of the full lowering, and no other
 * plan is made. */
static void same_table(const void *a, const void *b, size_t bytes)
{
    if (!bytes)
        return;
    assert_non_null(a);
    assert_non_null(b);
    assert_memory_equal(a, b, bytes);
}

static void same_plan(const mc_rt_plan_t *a, const mc_rt_plan_t *b)
{
    assert_int_equal(a->rank, b->rank);
    assert_int_equal(a->nranks, b->nranks);
    assert_int_equal(a->src_bytes, b->src_bytes);
    assert_int_equal(a->dst_bytes, b->dst_bytes);
    assert_int_equal(a->ws_bytes, b->ws_bytes);
    assert_int_equal(a->nboxes, b->nboxes);
    assert_int_equal(a->nops, b->nops);
    assert_int_equal(a->nsteps, b->nsteps);
    same_table(a->boxes, b->boxes, a->nboxes * sizeof *a->boxes);
    same_table(a->ops, b->ops, a->nops * sizeof *a->ops);
    same_table(a->steps, b->steps, a->nsteps * sizeof *a->steps);
    same_table(a->dep_first, b->dep_first, (a->nops + 1) * sizeof *a->dep_first);
    same_table(a->deps, b->deps, a->dep_first[a->nops] * sizeof *a->deps);
    same_table(a->lane, b->lane, a->nops * sizeof *a->lane);
}

/* The code of every rank generated from ranks lowered `batch` at a time (mc_emit_gen_batched,
 * what `meshcast emit` runs) is that generated from the full lowering all, byte for byte. */
static void same_code_batched(const mc_sched_t *s, const mc_emit_plans_t *all, int batch)
{
    static const mc_emit_meta_t meta = {"x", "1.0.0", "task", "hand", 0};
    mc_buf_t h = {0}, cu = {0}, h2 = {0}, cu2 = {0};
    mc_err_t err = {0};
    mc_emit_gen(&meta, all, &h, &cu);
    assert_int_equal(mc_emit_gen_batched(&meta, s, NULL, batch, &h2, &cu2, 0, NULL, NULL, &err),
                     MC_OK);
    assert_int_equal(h.len, h2.len);
    assert_memory_equal(h.data, h2.data, h.len);
    assert_int_equal(cu.len, cu2.len);
    assert_memory_equal(cu.data, cu2.data, cu.len);
    mc_buf_free(&h);
    mc_buf_free(&cu);
    mc_buf_free(&h2);
    mc_buf_free(&cu2);
}

/* Every rank of s lowered alone against the full lowering, and the code of ranks lowered one and
 * three at a time against the full lowering's; returns the number of zero-byte receives (tokens)
 * the ranks made alone hold. */
static int check_every_rank(const mc_sched_t *s)
{
    mc_emit_plans_t *all = NULL;
    mc_err_t err = {0};
    int tokens = 0;
    assert_int_equal(mc_emit_lower(s, &all, &err), MC_OK);
    assert_int_equal(all->only, -1);
    same_code_batched(s, all, 1);
    same_code_batched(s, all, 3);
    for (int r = 0; r < all->nranks; r++) {
        mc_emit_plans_t *one = NULL;
        assert_int_equal(mc_emit_lower_rank(s, NULL, r, &one, &err), MC_OK);
        assert_int_equal(one->only, r);
        assert_int_equal(one->nranks, all->nranks);
        assert_int_equal(one->nphase_steps, all->nphase_steps);
        assert_memory_equal(one->gpus, all->gpus, all->nranks * sizeof *all->gpus);
        same_plan(&one->plans[r], &all->plans[r]);
        for (int q = 0; q < one->nranks; q++)
            if (q != r) {
                assert_int_equal(one->plans[q].nops, 0);
                assert_null(one->plans[q].ops);
                assert_null(one->plans[q].boxes);
            }
        for (uint32_t i = 0; i < one->plans[r].nops; i++)
            tokens += one->plans[r].ops[i].kind == MC_RT_OP_RECV && !one->plans[r].ops[i].bytes;
        mc_emit_plans_free(one);
    }
    mc_emit_plans_free(all);
    return tokens;
}

/* Phase 0: GPU 0 -> GPU 8 and GPU 4 -> GPU 12; phase 1: GPU 1 -> GPU 9, over host 0's NIC like
 * the first, so GPU 0 sends GPU 1 a token. GPU 12's rank takes part in no tree of phase 1 and
 * GPU 9's in none of phase 0: their plans alone still start where the full lowering's do. */
static void test_token(void **state)
{
    mc_task_t *task;
    mc_err_t err = {0};
    assert_int_equal(mc_task_parse_text("mesh A={x:3}@[0,1,4]\nmesh B={x:3}@[8,9,12]\n"
                                        "move f32[3,1048576] A[_,_] -> B[_,_]\n",
                                        "test", &task, &err),
                     MC_OK);
    assert_int_equal(mc_task_split(task, &err), MC_OK);
    mc_sched_t *s = mc_sched_new(task, topo, "hand");
    edge(s, mc_sched_add_tree(s, 0, 0, 12 << 20, 0, 0, 4), 0, 8);
    edge(s, mc_sched_add_tree(s, 0, 0, 12 << 20, 4, 0, 3), 4, 12);
    edge(s, mc_sched_add_tree(s, 0, 0, 12 << 20, 1, 1, 4), 1, 9);
    s->nphases = 2;
    assert_int_equal(check_every_rank(s), 1);
    mc_sched_free(s);
    mc_task_free(task);
}

static void test_synthesized(void **state)
{
    static const char *const strategies[] = {"alpa-p2p", "p2p-lb", "alpa-bcast", "meshcast"};
    for (size_t i = 0; i < sizeof strategies / sizeof *strategies; i++) {
        mc_task_t *task;
        mc_sched_t *s = NULL;
        mc_synth_opts_t o = MC_SYNTH_OPTS_DEFAULT;
        mc_err_t err = {0};
        o.rlimit = 2000000;
        assert_int_equal(mc_task_parse_text("mesh A={host:2,gpu:4}@0..7\n"
                                            "mesh B={host:2,gpu:4}@8..15\n"
                                            "move i32[64,32,16] A[host,_,_] -> B[host,_,_]\n",
                                            "test", &task, &err),
                         MC_OK);
        assert_int_equal(mc_task_split(task, &err), MC_OK);
        assert_int_equal(mc_synth(strategies[i], task, topo, &o, &s, &err), MC_OK);
        check_every_rank(s);
        mc_sched_free(s);
        mc_task_free(task);
    }
}

static void test_rank_out_of_range(void **state)
{
    mc_task_t *task;
    mc_err_t err = {0};
    mc_emit_plans_t *P = NULL;
    assert_int_equal(mc_task_parse_text("mesh A={x:1}@[0]\nmesh B={x:1}@[4]\n"
                                        "move f32[8] A[_] -> B[_]\n",
                                        "test", &task, &err),
                     MC_OK);
    assert_int_equal(mc_task_split(task, &err), MC_OK);
    mc_sched_t *s = mc_sched_new(task, topo, "hand");
    edge(s, mc_sched_add_tree(s, 0, 0, 32, 0, 0, 1), 0, 4);
    s->nphases = 1;
    assert_int_equal(mc_emit_lower_rank(s, NULL, 2, &P, &err), MC_ERR_USAGE);
    assert_string_equal(err.msg, "rank 2: the schedule has 2 ranks (0 to 1)");
    assert_null(P);
    assert_int_equal(mc_emit_lower_rank(s, NULL, -1, &P, &err), MC_ERR_USAGE);
    assert_string_equal(err.msg, "rank -1: expected 0 or more");
    mc_sched_free(s);
    mc_task_free(task);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_strided_relay),
        cmocka_unit_test(test_root_from_earlier_phase),
        cmocka_unit_test(test_root_without_data),
        cmocka_unit_test(test_token),
        cmocka_unit_test(test_synthesized),
        cmocka_unit_test(test_rank_out_of_range),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
