/* Helpers the synthesis tests share: the meshcast strategy under an rlimit, its schedule checked
 * and simulated. */
#ifndef TEST_SYNTH_HELPERS_H
#define TEST_SYNTH_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/synth.h"
#include "test_topo_helpers.h"

/* The meshcast schedule of task under an rlimit (budget out of reach), in *out. Whatever form it
 * takes (its trees, NCCL's rings, a baseline's plan), every tree keeps one chunk in flight, as
 * meshcast's runtime sends them. */
static inline void synth_rlimit(const mc_topo_t *topo, mc_task_t *task, mc_sched_t **out)
{
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    mc_err_t err = {0};
    opts.rlimit = 300000;
    opts.budget_s = 1000;
    if (mc_synth_meshcast(task, topo, &opts, out, &err) != MC_OK)
        fail_msg("%s", err.msg);
    for (int t = 0; t < (*out)->ntrees; t++)
        if ((*out)->trees[t].inflight != 1)
            fail_msg("tree %d of plan %s keeps %d chunks in flight", t, (*out)->params,
                     (*out)->trees[t].inflight);
}

/* The simulated makespan of schedule s, checked valid on topo first. */
static inline double valid_makespan(const mc_topo_t *topo, const mc_sched_t *s)
{
    mc_sim_result_t res = {0};
    mc_err_t err = {0};
    assert_int_equal(mc_sched_validate(s, topo, NULL), 0);
    assert_int_equal(mc_sim_run(s, topo, &res, &err), MC_OK);
    double t = res.makespan_s;
    mc_sim_result_free(&res);
    return t;
}

/* Checks meshcast's schedule s of task valid and never below the bound; returns its simulated
 * time, *bound_s the bound. */
static inline double checked_sim(const mc_topo_t *topo, mc_task_t *task, const mc_sched_t *s,
                                 double *bound_s)
{
    mc_sim_result_t res = {0};
    mc_err_t err = {0};
    mc_bound_t b;
    assert_int_equal(mc_sched_validate(s, topo, NULL), 0);
    assert_int_equal(mc_sim_run(s, topo, &res, &err), MC_OK);
    assert_int_equal(mc_task_bound(task, topo, &b, &err), MC_OK);
    assert_true(res.makespan_s >= b.seconds * (1 - 1e-9));
    assert_non_null(strstr(s->params, "priced="));
    double t = res.makespan_s;
    *bound_s = b.seconds;
    mc_sim_result_free(&res);
    return t;
}

/* Synthesizes task under an rlimit (synth_rlimit); checks the schedule (checked_sim); returns its
 * simulated time, *bound_s the bound, plan its plan's name. */
static inline double synth_sim(const mc_topo_t *topo, mc_task_t *task, double *bound_s,
                        char plan[64])
{
    mc_sched_t *s = NULL;
    synth_rlimit(topo, task, &s);
    double t = checked_sim(topo, task, s, bound_s);
    const char *at = strstr(s->params, "plan=");
    assert_non_null(at);
    snprintf(plan, 64, "%.*s", (int)strcspn(at + 5, " "), at + 5);
    mc_sched_free(s);
    return t;
}

/* synth_sim of task (freed here) on the topology at path, its simulated time within `most`
 * times the bound; plan gets its plan. */
static inline void synth_within(const char *path, mc_task_t *task, double most, char plan[64])
{
    mc_topo_t *topo = load_ok(path);
    double bound_s, t = synth_sim(topo, task, &bound_s, plan);
    assert_true(t <= most * bound_s);
    mc_topo_free(topo);
    mc_task_free(task);
}

/* Synthesizes the task make() gives n times (synth_rlimit, at most 4), each schedule's params
 * holding `has` (NULL: not looked at) and not `lacks` (NULL: not looked at): the n schedules are
 * the same, byte for byte. */
static inline void synth_repeats(const mc_topo_t *topo, mc_task_t *(*make)(void), int n,
                                 const char *has, const char *lacks)
{
    char *xml[4];
    assert_true(n >= 2 && n <= 4);
    for (int i = 0; i < n; i++) {
        mc_task_t *task = make();
        mc_sched_t *s = NULL;
        synth_rlimit(topo, task, &s);
        if (has)
            assert_non_null(strstr(s->params, has));
        if (lacks)
            assert_null(strstr(s->params, lacks));
        xml[i] = mc_sched_to_xml(s, topo);
        mc_sched_free(s);
        mc_task_free(task);
    }
    for (int i = 1; i < n; i++)
        assert_string_equal(xml[0], xml[i]);
    for (int i = 0; i < n; i++)
        free(xml[i]);
}

#endif
