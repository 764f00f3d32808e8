/* Tests for timing schedules with their instances kept compact (mc_sim_run_compact): the result
 * (makespan, flows, every link's busy time and bytes, the timeline) must be the expanded
 * schedule's to the bit, whether an instance is timed as its template or, on links of other
 * figures, simulated after expanding; and a synthesized schedule read both ways times the same. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "sim/sim.h"
#include "tests/unit/test_sched_fixture.h"

/* Reads xml expanded and compact, times both with their timelines, checks that the results are
 * equal to the bit and returns the makespan. */
static double same_sim(const char *xml, const mc_topo_t *topo)
{
    mc_err_t err = {0};
    mc_sched_t *full = NULL, *compact = NULL;
    mc_sim_result_t a = {0}, b = {0};
    assert_int_equal(mc_sched_parse_memory(xml, strlen(xml), "s.xml", topo, 0, &full, &err),
                     MC_OK);
    assert_int_equal(mc_sched_parse_memory_compact(xml, strlen(xml), "s.xml", topo, 0, &compact,
                                                   &err),
                     MC_OK);
    assert_true(compact->ninst > 0);
    assert_int_equal(full->ninst, 0);
    assert_int_equal(mc_sim_run(full, topo, &a, &err), MC_OK);
    assert_int_equal(mc_sim_run_compact(compact, topo, 1, &b, &err), MC_OK);
    assert_memory_equal(&a.makespan_s, &b.makespan_s, sizeof a.makespan_s);
    assert_int_equal(a.nflows, b.nflows);
    assert_int_equal(a.nlinks, b.nlinks);
    assert_memory_equal(a.link_busy_s, b.link_busy_s, sizeof(double) * (size_t)a.nlinks);
    assert_memory_equal(a.link_bytes, b.link_bytes, sizeof(double) * (size_t)a.nlinks);
    assert_int_equal(a.nintervals, b.nintervals);
    assert_true(a.nintervals > 0);
    for (int v = 0; v < a.nintervals; v++) { /* field by field: the padding is not set */
        assert_int_equal(a.intervals[v].link, b.intervals[v].link);
        assert_memory_equal(&a.intervals[v].t0, &b.intervals[v].t0, 3 * sizeof(double));
    }
    /* the totals alone as well */
    mc_sim_result_t c = {0};
    assert_int_equal(mc_sim_run_compact(compact, topo, 0, &c, &err), MC_OK);
    assert_memory_equal(&a.makespan_s, &c.makespan_s, sizeof a.makespan_s);
    assert_memory_equal(a.link_bytes, c.link_bytes, sizeof(double) * (size_t)a.nlinks);
    assert_int_equal(c.nintervals, 0);
    double t = a.makespan_s;
    mc_sim_result_free(&a);
    mc_sim_result_free(&b);
    mc_sim_result_free(&c);
    mc_sched_free(full);
    mc_sched_free(compact);
    return t;
}

/* The fixture's template (GPU0 -> sw0 -> GPU2) and instance (GPU1 -> sw0 -> GPU3): the instance
 * is timed as the template, its links carrying what the template's carry; with the instance's
 * last link slower to start (a latency the bandwidths do not show), it is simulated instead and
 * ends later. */
static void test_instance_timed_as_template(void **state)
{
    fixture_t *fx = *state;
    char *xml = fx_two_groups(fx);
    mc_topo_t *topo = fx->topo;
    int tmpl_in = mc_topo_find_link(topo, 0, FX_SW), inst_in = mc_topo_find_link(topo, 1, FX_SW);
    int inst_out = mc_topo_find_link(topo, FX_SW, 3);
    double t = same_sim(xml, topo);
    mc_sim_result_t r = {0};
    mc_sched_t *compact = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_sched_parse_memory_compact(xml, strlen(xml), "s.xml", topo, 0, &compact,
                                                   &err),
                     MC_OK);
    assert_int_equal(mc_sim_run_compact(compact, topo, 0, &r, &err), MC_OK);
    assert_true(fabs(r.link_bytes[inst_in] - 2048.0) < 1e-6); /* the instance's piece */
    assert_memory_equal(&r.link_busy_s[inst_in], &r.link_busy_s[tmpl_in], sizeof(double));
    mc_sim_result_free(&r);
    mc_sched_free(compact);
    double latency = topo->links[inst_out].latency;
    topo->links[inst_out].latency = 50e-6;
    double slower = same_sim(xml, topo);
    topo->links[inst_out].latency = latency;
    assert_true(slower > t + 40e-6);
    free(xml);
}

/* The meshcast strategy's LLaMA-2-70B schedule on four DGX H100 (two components, one written as
 * an instance of the other) times the same read either way. */
static void test_synthesized(void **state)
{
    (void)state;
    fx_llama_t l = fx_llama();
    assert_true(same_sim(l.xml, l.topo) > 0);
    fx_llama_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_instance_timed_as_template),
        cmocka_unit_test(test_synthesized),
    };
    return cmocka_run_group_tests_name("sim_compact", tests, fx_setup, fx_teardown);
}
