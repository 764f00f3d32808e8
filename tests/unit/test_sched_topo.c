/* Schedules on a real topology file (the paper's cluster, topologies/aws-p3.8xlarge-x5.xml):
 * edges routed by the topology's router, validated, written and read back, and simulated, with
 * figures derived from the cluster: a 5 MB row from host 0 to host 2 crosses 6 PCIe links at
 * 0.5 us and 4 network links at 1 us behind a 1.25e9 B/s NIC and pays the 14 us network alpha:
 * 14 + 7 us + 4 ms per phase. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

typedef struct paper {
    mc_topo_t *topo;
    mc_task_t *task;
} paper_t;

static int setup(void **state)
{
    paper_t *p = calloc(1, sizeof(*p));
    mc_err_t err = {0};
    if (mc_topo_load("topologies/aws-p3.8xlarge-x5.xml", &p->topo, &err) != MC_OK ||
        mc_task_parse_text("mesh A={x:2}@0..1\nmesh B={x:2}@[8,12]\n"
                           "move t0: i32[2,1250000] A[_,_] -> B[x,_]\n", "paper", &p->task, &err) ||
        mc_task_split(p->task, &err) != MC_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return -1;
    }
    *state = p;
    return 0;
}

static int teardown(void **state)
{
    paper_t *p = *state;
    mc_task_free(p->task);
    mc_topo_free(p->topo);
    free(p);
    return 0;
}

/* Row 0 (piece 0, for GPU 8) from GPU 0 in phase 0; row 1 (for GPU 12) from from1 in phase1. */
static mc_sched_t *rows(const paper_t *p, int from1, int phase1, int nchunks)
{
    mc_err_t err = {0};
    mc_sched_t *s = mc_sched_new(p->task, p->topo, "test");
    assert_int_equal(p->task->pieces[0].dests[0], 8);
    int a = mc_sched_add_tree(s, 0, 0, 5000000, 0, 0, nchunks);
    assert_int_equal(mc_sched_add_edge(s, p->topo, a, 0, 8, &err), MC_OK);
    int b = mc_sched_add_tree(s, 1, 0, 5000000, from1, phase1, nchunks);
    assert_int_equal(mc_sched_add_edge(s, p->topo, b, from1, 12, &err), MC_OK);
    return s;
}

static double sim(const mc_sched_t *s, const mc_topo_t *t)
{
    mc_sim_result_t r;
    mc_err_t err = {0};
    assert_int_equal(mc_sim_run_totals(s, t, &r, &err), MC_OK);
    double m = r.makespan_s;
    mc_sim_result_free(&r);
    return m;
}

static void test_routed_valid_and_timed(void **state)
{
    paper_t *p = *state;
    mc_sched_t *s = rows(p, 1, 1, 1);
    assert_int_equal(s->trees[0].edges[0].nlinks, 10);
    assert_int_equal(mc_sched_validate(s, p->topo, NULL), 0);
    assert_float_equal(sim(s, p->topo), 2 * (21e-6 + 4e-3), 1e-12);
    mc_bound_t bound;
    mc_err_t err = {0};
    assert_int_equal(mc_task_bound(p->task, p->topo, &bound, &err), MC_OK);
    assert_true(sim(s, p->topo) >= bound.seconds);
    /* read back, the same bytes and the same time */
    char *xml = mc_sched_to_xml(s, p->topo);
    mc_sched_t *back = NULL;
    assert_int_equal(mc_sched_parse_memory(xml, strlen(xml), "s.xml", p->topo, 0, &back, &err), MC_OK);
    char *again = mc_sched_to_xml(back, p->topo);
    assert_string_equal(xml, again);
    assert_true(sim(back, p->topo) == sim(s, p->topo));
    free(again);
    free(xml);
    mc_sched_free(back);
    mc_sched_free(s);
}

/* Both rows at once from host 0 share its NIC: invalid without rates, valid with planned rates
 * (half the NIC each), and the simulator gives them half each: 21 us + 8 ms. */
static void test_shared_nic(void **state)
{
    paper_t *p = *state;
    mc_sched_t *s = rows(p, 1, 0, 1);
    mc_buf_t out = {0};
    assert_int_equal(mc_sched_validate(s, p->topo, &out), 4);
    assert_non_null(strstr(out.data, "link h0/NIC0 -> h0/NET0 is shared by 2 trees"));
    mc_buf_free(&out);
    mc_sched_plan_rates(s, p->topo);
    assert_float_equal(s->trees[0].rate, 1.25e9 / 2, 1);
    assert_int_equal(mc_sched_validate(s, p->topo, NULL), 0);
    assert_float_equal(sim(s, p->topo), 21e-6 + 8e-3, 1e-12);
    mc_sched_free(s);
}

/* One edge in 4 chunks: the chunks follow each other on the connection and each pays alpha and
 * latency again: 4 x (21 us + 1 ms) per row. And a tree rooted at GPU 8, which never holds row
 * 1, is caught. */
static void test_chunks_and_relay(void **state)
{
    paper_t *p = *state;
    mc_sched_t *s = rows(p, 1, 1, 4);
    assert_float_equal(sim(s, p->topo), 2 * 4 * (21e-6 + 1e-3), 1e-12);
    mc_sched_free(s);
    s = rows(p, 8, 1, 1);
    mc_buf_t out = {0};
    assert_int_equal(mc_sched_validate(s, p->topo, &out), 1);
    assert_non_null(strstr(out.data, "root GPU 8 does not hold"));
    mc_buf_free(&out);
    mc_sched_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routed_valid_and_timed),
        cmocka_unit_test(test_shared_nic),
        cmocka_unit_test(test_chunks_and_relay),
    };
    return cmocka_run_group_tests_name("sched_topo", tests, setup, teardown);
}
