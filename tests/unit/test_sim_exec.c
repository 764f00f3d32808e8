/* Tests for sim/sim_exec.c, the simulation of the plans the runtime executes, on the paper's
 * cluster: the dependency graph keeps two trees that share a root but no link independent (the
 * lockstep steps make the fast one wait for the slow one), and so do the nccl backend's lanes with
 * more trees on a GPU than the 8 lanes it used to have, with more than MC_RT_MAX_LANES (a few
 * trees sharing lanes), and with a root that packs; a relayed chain and phases that share a NIC
 * take what the schedule's simulation says, and so does one H100 NVLink send at its connection
 * limit; and the loopback delivers those plans' bytes; within a work allowance the same time, past
 * it none. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit.h"
#include "sim/sim.h"
#include "sim/sim_exec.h"
#include "test_paper_sched.h"

/* GPU 0 holds a 64 MiB tensor that GPUs a and b both need. */
static mc_sched_t *two_dests(mc_task_t **task, int a, int b)
{
    char text[128];
    snprintf(text, sizeof text,
             "mesh A={host:1,gpu:1}@[0]\nmesh B={x:2}@[%d,%d]\nmove f32[16777216] A[_] -> B[_]\n",
             a, b);
    mc_sched_t *s = sched_for(text, task);
    assert_int_equal((*task)->npieces, 1);
    return s;
}

static double sim_time(const mc_sched_t *s)
{
    mc_sim_result_t r;
    mc_err_t err = {0};
    assert_int_equal(mc_sim_run_totals(s, topo, &r, &err), MC_OK);
    double t = r.makespan_s;
    mc_sim_result_free(&r);
    return t;
}

/* Lowers s on the topology, checks every byte through the host loopback when s is a whole
 * schedule (it validates), and times the plans in `order`; *end_of gets when GPU `gpu`'s rank
 * finished. */
static double exec_time(const mc_sched_t *s, int order, int gpu, double *end_of)
{
    mc_emit_plans_t *P = NULL;
    mc_sim_exec_result_t x;
    mc_err_t err = {0};
    assert_int_equal(mc_emit_lower_on(s, topo, &P, &err), MC_OK);
    uint64_t wrong = loopback_wrong(s->task, P);
    if (mc_sched_validate(s, topo, NULL) == 0)
        assert_int_equal(wrong, 0);
    assert_int_equal(mc_sim_exec(s, topo, P->nranks, P->plans, P->gpus, order, &x, &err), MC_OK);
    for (int r = 0; r < P->nranks; r++)
        if (P->gpus[r] == gpu)
            *end_of = x.rank_end_s[r];
    double t = x.makespan_s;
    mc_sim_exec_result_free(&x);
    mc_emit_plans_free(P);
    return t;
}

static void assert_close(double got, double want)
{
    if (fabs(got - want) > 1e-9 * want)
        fail_msg("got %.12g s, want %.12g s", got, want);
}

/* Two trees from GPU 0 in one phase, on disjoint links, 16 chunks each. The fast tree (NVLink to
 * GPU 1) must end when it would alone; in lockstep steps GPU 0 waits every step for its slow
 * send too, so GPU 1 ends with the slow tree. */
static void test_independent_trees(void **state)
{
    mc_task_t *task, *task1;
    double end1, end4, alone_end, unused;
    mc_sched_t *s = two_dests(&task, 1, 4);
    int fast = mc_sched_add_tree(s, 0, 0, 64 << 20, 0, 0, 16);
    edge(s, fast, 0, 1);
    int slow = mc_sched_add_tree(s, 0, 0, 64 << 20, 0, 0, 16);
    edge(s, slow, 0, 4);
    s->nphases = 1;
    assert_int_equal(mc_sched_validate(s, topo, NULL), 0);
    /* The fast tree alone, in a schedule of its own. */
    mc_sched_t *s1 = two_dests(&task1, 1, 4);
    edge(s1, mc_sched_add_tree(s1, 0, 0, 64 << 20, 0, 0, 16), 0, 1);
    s1->nphases = 1;
    double t_fast = sim_time(s1);
    exec_time(s1, MC_RT_ORDER_DEPS, 1, &alone_end);
    assert_close(alone_end, t_fast);

    double t = exec_time(s, MC_RT_ORDER_DEPS, 1, &end1);
    exec_time(s, MC_RT_ORDER_DEPS, 4, &end4);
    assert_close(t, sim_time(s));
    assert_close(end1, t_fast);
    assert_true(end4 > 10 * end1);
    exec_time(s, MC_RT_ORDER_STEPS, 1, &end1);
    exec_time(s, MC_RT_ORDER_STEPS, 4, &unused);
    assert_true(end1 > 0.9 * end4);
    mc_sched_free(s1);
    mc_task_free(task1);
    mc_sched_free(s);
    mc_task_free(task);
}

/* GPU 0 roots trees of a 4 MiB tensor in one phase, 16 chunks each: one to GPU 1 over NVLink, the
 * others through its host's NIC to nine GPUs at their fair share of it. With one tree per GPU (10
 * trees) every tree gets a lane of its own, more than the 8 lanes there used to be; with 16 trees
 * per slow GPU (145 trees, more than MC_RT_MAX_LANES, and too many left over to share a few lanes)
 * the slow trees, all of one pace (chunk size and rate), share one lane and the fast tree has the
 * other. Either way the fast tree ends when it would alone and the whole takes what the dependency
 * graph takes; with the 10 lanes taken modulo 8, the fast tree moves in lockstep with a slow
 * one. */
static void test_lanes(void **state)
{
    static const int dests[10] = {1, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    mc_err_t err = {0};
    mc_task_t *task;
    double end1, end1_alone, unused;
    assert_int_equal(mc_task_parse_text("mesh A={host:1,gpu:1}@[0]\n"
                                        "mesh B={x:10}@[1,4,5,6,7,8,9,10,11,12]\n"
                                        "move f32[1048576] A[_] -> B[_]\n",
                                        "test", &task, &err),
                     MC_OK);
    assert_int_equal(mc_task_split(task, &err), MC_OK);
    mc_sched_t *s1 = mc_sched_new(task, topo, "hand");
    edge(s1, mc_sched_add_tree(s1, 0, 0, 4 << 20, 0, 0, 16), 0, 1);
    s1->nphases = 1;
    exec_time(s1, MC_RT_ORDER_DEPS, 1, &end1_alone);
    for (int per = 1; per <= 16; per += 15) {
        mc_sched_t *s = mc_sched_new(task, topo, "hand");
        edge(s, mc_sched_add_tree(s, 0, 0, 4 << 20, 0, 0, 16), 0, 1);
        for (int k = 1; k < 10; k++)
            for (int j = 0; j < per; j++)
                edge(s, mc_sched_add_tree(s, 0, (uint64_t)j * (4 << 20) / per, (4 << 20) / per, 0,
                                          0, 16),
                     0, dests[k]);
        s->nphases = 1;
        mc_sched_plan_rates(s, topo);
        assert_int_equal(mc_sched_validate(s, topo, NULL), 0);
        mc_emit_plans_t *P = NULL;
        assert_int_equal(mc_emit_lower(s, &P, &err), MC_OK);
        for (int r = 0; r < P->nranks; r++)
            assert_int_equal(mc_rt_plan_lanes(&P->plans[r]), per == 1 ? 10 : 2);
        mc_emit_plans_free(P);
        double t_deps = exec_time(s, MC_RT_ORDER_DEPS, 1, &unused);
        assert_close(exec_time(s, MC_RT_ORDER_NCCL, 1, &end1), t_deps);
        assert_close(end1, end1_alone);
        assert_true(t_deps > 5 * end1);
        if (per == 1) {
            exec_time(s, MC_RT_ORDER_LANES(8), 1, &end1);
            assert_true(end1 > 0.5 * t_deps);
        }
        mc_sched_free(s);
    }
    mc_sched_free(s1);
    mc_task_free(task);
}

/* The plans' lane count, lowered with or without the topology. */
static uint32_t plan_lanes(const mc_sched_t *s, const mc_topo_t *on)
{
    mc_emit_plans_t *P = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_emit_lower_on(s, on, &P, &err), MC_OK);
    uint32_t n = mc_rt_plan_lanes(&P->plans[0]);
    for (int r = 1; r < P->nranks; r++)
        assert_int_equal(mc_rt_plan_lanes(&P->plans[r]), n);
    mc_emit_plans_free(P);
    return n;
}

/* GPU 0 sends a 4 MiB tensor to the n GPUs kids[] (n <= 3) in `ntrees` trees of one phase, slices
 * of it in 4 chunks, each tree with an edge from GPU 0 to every one of them, at planned rates. */
static mc_sched_t *sliced(int ntrees, const int *kids, int n, mc_task_t **task)
{
    mc_err_t err = {0};
    char text[128];
    int at = snprintf(text, sizeof text, "mesh A={host:1,gpu:1}@[0]\nmesh B={x:%d}@[", n);
    for (int k = 0; k < n; k++)
        at += snprintf(text + at, sizeof text - at, "%s%d", k ? "," : "", kids[k]);
    snprintf(text + at, sizeof text - at, "]\nmove f32[1048576] A[_] -> B[_]\n");
    assert_int_equal(mc_task_parse_text(text, "test", task, &err), MC_OK);
    assert_int_equal(mc_task_split(*task, &err), MC_OK);
    mc_sched_t *s = mc_sched_new(*task, topo, "hand");
    for (int j = 0; j < ntrees; j++) {
        uint64_t lo = (uint64_t)j * (4 << 20) / ntrees;
        uint64_t hi = (uint64_t)(j + 1) * (4 << 20) / ntrees;
        int t = mc_sched_add_tree(s, 0, lo, hi - lo, 0, 0, 4);
        for (int k = 0; k < n; k++)
            edge(s, t, 0, kids[k]);
    }
    s->nphases = 1;
    mc_sched_plan_rates(s, topo);
    assert_int_equal(mc_sched_validate(s, topo, NULL), 0);
    return s;
}

/* 130 trees from GPU 0 in one phase, each a slice of a 4 MiB tensor to GPU 1 (NVLink) and GPU 4
 * (through the NICs): 260 edges and 130 trees at GPU 0, beyond MC_RT_MAX_LANES either way, and all
 * trees of one pace; they are not even (an NVLink and a NIC child), so none may share. Without the
 * topology they share one lane, so GPU 1 receives in lockstep with GPU 4; on it, the NVLink edges
 * and the NIC edges are of two speeds and take two lanes, and GPU 1 ends as the dependency graph
 * lets it. */
static void test_lanes_by_speed(void **state)
{
    static const int kids[2] = {1, 4};
    mc_task_t *task;
    double end1, end1_deps, end4;
    mc_sched_t *s = sliced(130, kids, 2, &task);
    assert_int_equal(plan_lanes(s, NULL), 1);
    assert_int_equal(plan_lanes(s, topo), 2);
    double t_deps = exec_time(s, MC_RT_ORDER_DEPS, 1, &end1_deps);
    assert_close(exec_time(s, MC_RT_ORDER_NCCL, 1, &end1), t_deps);
    assert_close(end1, end1_deps);
    exec_time(s, MC_RT_ORDER_DEPS, 4, &end4);
    assert_true(end4 > 5 * end1);
    mc_sched_free(s);
    mc_task_free(task);
}

/* GPU `fast` of s (one phase) is held back by nothing: the dependency graph lets it end long
 * before GPU `slow`, and the nccl lanes end it then too, the whole within 1% of the graph's time.
 * Frees s and task. */
static void assert_fast_free(mc_sched_t *s, mc_task_t *task, int fast, int slow)
{
    double end_fast, end_deps, end_slow;
    double t_deps = exec_time(s, MC_RT_ORDER_DEPS, fast, &end_deps);
    exec_time(s, MC_RT_ORDER_DEPS, slow, &end_slow);
    assert_true(end_slow > 5 * end_deps);
    double t = exec_time(s, MC_RT_ORDER_NCCL, fast, &end_fast);
    assert_close(end_fast, end_deps);
    assert_true(t < 1.01 * t_deps);
    mc_sched_free(s);
    mc_task_free(task);
}

/* GPU 0 roots 130 trees in one phase, 16 chunks of 16 KiB each: one to GPU 1, 129 to GPU 2, all
 * over one NVLink of the same bandwidth at one planned rate, so every edge is of one pace (chunk
 * size, rate, narrowest link). 130 edges and 130 trees at GPU 0 do not fit in MC_RT_MAX_LANES
 * (128) either way; sharing lanes by pace put the tree to GPU 1 in lockstep with trees that share
 * their link 129 ways, so GPU 1 ended with them. The trees are even (one child each), so each
 * takes a lane of its own and the two left over share one with a tree of their pace: GPU 1 ends as
 * the dependency graph lets it. */
static void test_lanes_spread(void **state)
{
    mc_task_t *task;
    mc_sched_t *s = sched_for("mesh A={host:1,gpu:1}@[0]\nmesh B={x:1}@[1]\nmesh C={x:1}@[2]\n"
                              "move f32[65536] A[_] -> B[_]\nmove f32[8454144] A[_] -> C[_]\n",
                              &task);
    assert_int_equal(task->npieces, 2);
    int small = task->pieces[0].bytes == 256 << 10 ? 0 : 1; /* the piece for GPU 1 */
    edge(s, mc_sched_add_tree(s, small, 0, 256 << 10, 0, 0, 16), 0, 1);
    for (int j = 0; j < 129; j++)
        edge(s, mc_sched_add_tree(s, 1 - small, (uint64_t)j << 18, 256 << 10, 0, 0, 16), 0, 2);
    s->nphases = 1;
    /* one planned rate for all: GPU 0 -> 2's NVLink shared 129 ways */
    const mc_tree_edge_t *e2 = &s->trees[1].edges[0];
    assert_int_equal(e2->nlinks, 1);
    for (int t = 0; t < s->ntrees; t++)
        s->trees[t].rate = topo->links[e2->links[0]].bw / 129;
    assert_int_equal(mc_sched_validate(s, topo, NULL), 0);
    assert_int_equal(plan_lanes(s, topo), MC_RT_MAX_LANES);
    assert_fast_free(s, task, 1, 2);
}

/* 50 trees from GPU 0 in one phase, each a slice of a 4 MiB tensor to GPU 1 (NVLink) and GPUs 4
 * and 5 (through the NICs): 150 edges at GPU 0, beyond MC_RT_MAX_LANES, in 50 trees that are not
 * even. A lane per tree fits, and put GPU 1's receives in lockstep with the NIC sends, so GPU 1
 * ended with GPUs 4 and 5. A lane per tree, parent and narrowest bandwidth fits too (100 lanes:
 * the two NIC children of a tree share theirs): GPU 1 ends as the dependency graph lets it. */
static void test_lanes_by_width(void **state)
{
    static const int kids[3] = {4, 1, 5};
    mc_task_t *task;
    mc_sched_t *s = sliced(50, kids, 3, &task);
    assert_int_equal(plan_lanes(s, topo), 100);
    assert_fast_free(s, task, 1, 4);
}

/* A root that packs: GPU 0 holds a 1024 x 1024 tensor whole, and each column half goes to two
 * GPUs (mesh B's rows replicate it), so the root stages the strided half chunk by chunk. The tree
 * of half 0 sends first to GPU 5 through the NICs (its edge 0, slow), then to GPU 1 over NVLink,
 * in 2 chunks; half 1 goes to GPUs 4 and 6 through the NICs. The pack of chunk 1 has a slot free
 * from the start: packed in the step of its sends, it followed the slow edge's send of chunk 0 in
 * that edge's lane, and GPU 1 waited for the NIC. It ends as the dependency graph lets it. */
static void test_pack_early(void **state)
{
    mc_task_t *task;
    mc_sched_t *s = sched_for("mesh A={x:1}@[0]\nmesh B={r:2,c:2}@[1,4,5,6]\n"
                              "move f32[1024,1024] A[_,_] -> B[_,c]\n",
                              &task);
    assert_int_equal(task->npieces, 2);
    for (int p = 0; p < 2; p++) {
        int t = mc_sched_add_tree(s, p, 0, task->pieces[p].bytes, 0, 0, 2);
        int to1 = task->pieces[p].dests[0] == 1 || task->pieces[p].dests[1] == 1;
        edge(s, t, 0, to1 ? 5 : 4);
        edge(s, t, 0, to1 ? 1 : 6);
    }
    s->nphases = 1;
    mc_sched_plan_rates(s, topo);
    assert_int_equal(mc_sched_validate(s, topo, NULL), 0);
    assert_fast_free(s, task, 1, 5);
}

/* On H100 a tree edge over NVLink moves at most 180 GB/s, its connection's limit: the plans'
 * simulation applies it as the schedule's does (sim_links.c), so 64 MiB from GPU 0 to GPU 1 of
 * one DGX H100 take alpha + latency + 64 MiB / 180 GB/s both ways (before, the plans moved at the
 * NVLink's full rate). */
static void test_connection_limit(void **state)
{
    mc_topo_t *paper = topo;
    mc_err_t err = {0};
    mc_task_t *task;
    double unused;
    assert_int_equal(mc_topo_load("topologies/dgx-h100-x1.xml", &topo, &err), MC_OK);
    mc_sched_t *s = sched_for("mesh A={x:1}@[0]\nmesh B={x:1}@[1]\n"
                              "move f32[16777216] A[_] -> B[_]\n",
                              &task);
    int t = mc_sched_add_tree(s, 0, 0, 64 << 20, 0, 0, 1);
    edge(s, t, 0, 1);
    s->nphases = 1;
    const mc_tree_edge_t *e = &s->trees[t].edges[0];
    double want = mc_topo_links_delay(topo, e->links, e->nlinks) + (64 << 20) / 180e9;
    assert_close(sim_time(s), want);
    assert_close(exec_time(s, MC_RT_ORDER_DEPS, 1, &unused), want);
    mc_sched_free(s);
    mc_task_free(task);
    mc_topo_free(topo);
    topo = paper;
}

/* GPU 0 -> 4 -> 5 (a relay on the next host), 8 chunks: store and forward per chunk, as the
 * model says. */
static void test_relay_chain(void **state)
{
    mc_task_t *task;
    double end;
    mc_sched_t *s = sched_for("mesh A={host:1,gpu:1}@[0]\nmesh B={x:2}@[4,5]\n"
                              "move f32[4194304] A[_] -> B[_]\n",
                              &task);
    int t = mc_sched_add_tree(s, 0, 0, 16 << 20, 0, 0, 8);
    edge(s, t, 0, 4);
    edge(s, t, 4, 5);
    s->nphases = 1;
    assert_close(exec_time(s, MC_RT_ORDER_DEPS, 5, &end), sim_time(s));
    mc_sched_free(s);
    mc_task_free(task);
}

/* Two phases whose trees share host 0's NIC. From one root (GPU 0 to GPU 4, then to GPU 8), the
 * root itself knows when its first send is through: no token, the schedule's time. From two roots
 * (GPU 0 to GPU 4, then GPU 1 to GPU 8), a token from GPU 0 to GPU 1 keeps the second tree off the
 * NIC until the first is done: the schedule's time plus the token's overhead. */
static void test_phases_share_a_link(void **state)
{
    mc_err_t err = {0};
    for (int root1 = 0; root1 <= 1; root1++) {
        mc_task_t *task;
        double end;
        mc_sched_t *s = sched_for("mesh A={x:2}@[0,1]\nmesh B={x:2}@[4,8]\n"
                                  "move f32[16777216] A[_] -> B[_]\n",
                                  &task);
        edge(s, mc_sched_add_tree(s, 0, 0, 64 << 20, 0, 0, 4), 0, 4);
        edge(s, mc_sched_add_tree(s, 0, 0, 64 << 20, root1, 1, 4), root1, 8);
        s->nphases = 2;
        mc_emit_plans_t *P = NULL;
        assert_int_equal(mc_emit_lower(s, &P, &err), MC_OK);
        const mc_rt_plan_t *p1 = &P->plans[root1]; /* the token's receive: 0 bytes from GPU 0 */
        int tokens = 0;
        for (uint32_t i = 0; i < p1->nops; i++)
            tokens += p1->ops[i].kind == MC_RT_OP_RECV && !p1->ops[i].bytes &&
                      P->gpus[p1->ops[i].peer] == 0 && p1->ops[i].tag == s->ntrees;
        assert_int_equal(tokens, root1);
        mc_emit_plans_free(P);
        mc_route_t r;
        assert_int_equal(mc_topo_route(topo, 0, 1, &r, &err), MC_OK);
        double token = root1 ? mc_topo_links_delay(topo, r.links, r.nlinks) : 0;
        assert_close(exec_time(s, MC_RT_ORDER_DEPS, 8, &end), sim_time(s) + token);
        mc_sched_free(s);
        mc_task_free(task);
    }
}

/* Within an allowance: the same time as unbounded, with the work it took off the allowance; with
 * less work than that, MC_ERR_TIMEOUT and no time (bench leaves such a row's exec column empty);
 * plans with more sends than a quarter of the allowance are not started. */
static void test_work_bound(void **state)
{
    (void)state;
    mc_task_t *task;
    mc_sched_t *s = two_dests(&task, 1, 4);
    edge(s, mc_sched_add_tree(s, 0, 0, 64 << 20, 0, 0, 16), 0, 1);
    edge(s, mc_sched_add_tree(s, 0, 0, 64 << 20, 0, 0, 16), 0, 4);
    s->nphases = 1;
    mc_emit_plans_t *P = NULL;
    mc_sim_exec_result_t x;
    mc_err_t err = {0};
    assert_int_equal(mc_emit_lower_on(s, topo, &P, &err), MC_OK);
    double unbounded = exec_time(s, MC_RT_ORDER_DEPS, 1, &(double){0});
    int64_t work = 1000000;
    assert_int_equal(mc_sim_exec_bounded(s, topo, P->nranks, P->plans, P->gpus, MC_RT_ORDER_DEPS,
                                         &work, &x, &err), MC_OK);
    assert_close(x.makespan_s, unbounded);
    int64_t used = 1000000 - work;
    assert_true(used >= 32); /* at least one event per chunk of each tree */
    /* 2 edges of 16 chunks: 32 sends, started only within 4 x 32 */
    assert_true(mc_sim_exec_fits(s, 128));
    assert_false(mc_sim_exec_fits(s, 127));
    assert_true(mc_sim_exec_fits(s, 0));
    mc_sim_exec_result_free(&x);
    work = used - 1;
    assert_int_equal(mc_sim_exec_bounded(s, topo, P->nranks, P->plans, P->gpus, MC_RT_ORDER_DEPS,
                                         &work, &x, &err), MC_ERR_TIMEOUT);
    assert_non_null(strstr(err.msg, "work limit"));
    mc_sim_exec_result_free(&x);
    mc_emit_plans_free(P);
    mc_sched_free(s);
    mc_task_free(task);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_independent_trees),
        cmocka_unit_test(test_lanes),
        cmocka_unit_test(test_lanes_by_speed),
        cmocka_unit_test(test_lanes_spread),
        cmocka_unit_test(test_lanes_by_width),
        cmocka_unit_test(test_pack_early),
        cmocka_unit_test(test_connection_limit),
        cmocka_unit_test(test_relay_chain),
        cmocka_unit_test(test_phases_share_a_link),
        cmocka_unit_test(test_work_bound),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
