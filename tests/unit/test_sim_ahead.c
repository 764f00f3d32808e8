/* Runs made ahead (sim/sim_ahead.c, mc_sim_run_memo_ahead): a schedule simulated on a thread of
 * its own before its allowance and horizon are known, then decided under them, must come to what a
 * run begun then comes to (mc_sim_run_memo_cut): the same status, makespan and work taken, and the
 * same memo for the runs after it, whatever the allowance, horizon and floor (the cut), and
 * wherever the run made ahead was when it was handed over. So must runs made on a memo of their
 * own under other allowances and kept aside (mc_sim_memo_set_aside). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/synth.h"

/* The meshcast schedule of an all-gather of 16 MiB over the DGX-1's eight GPUs (about 200 trees
 * in 4000 flows sharing NVLinks, in channels). */
static mc_sched_t *allgather(mc_topo_t **topo)
{
    mc_err_t err = {0};
    mc_task_t *task = NULL;
    if (mc_topo_load("topologies/dgx1-v100-hybrid-cube-mesh-topo.xml", topo, &err) != MC_OK ||
        mc_task_parse_text("mesh M={g:8}@0..7\nmove t: f32[2048,2048] M[g,_] -> M[_,_]\n", "ag",
                           &task, &err) != MC_OK ||
        mc_task_split(task, &err) != MC_OK)
        fail_msg("%s", err.msg);
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    opts.rlimit = 300000;
    opts.budget_s = 1000;
    mc_sched_t *s = NULL;
    if (mc_synth("meshcast", task, *topo, &opts, &s, &err) != MC_OK)
        fail_msg("%s", err.msg);
    mc_task_free(task);
    return s;
}

/* allgather(), with its run's work and makespan in *work and *end. */
static mc_sched_t *allgather_run(mc_topo_t **topo, int64_t *work, double *end)
{
    mc_sched_t *s = allgather(topo);
    mc_sim_result_t res;
    mc_err_t err = {0};
    int64_t all = 1000000000;
    assert_int_equal(mc_sim_run_bounded(s, *topo, &all, &res, &err), MC_OK);
    *work = 1000000000 - all;
    *end = res.makespan_s;
    mc_sim_result_free(&res);
    return s;
}

typedef struct outcome {
    mc_status_t st;
    double t;
    int64_t left;
} outcome_t;

/* How a run is made ahead: up to `work` units, horizons from..most (most 0: none), handed over
 * late (after this thread's run of the same schedule) or at once. */
typedef struct ahead {
    int64_t work;
    double from, most;
    int late;
} ahead_t;

/* The run of s under work, horizon and floor through m: made ahead as ah says, or begun afresh
 * (ah NULL). */
static outcome_t timed(mc_sim_memo_t *m, const mc_sched_t *s, const mc_topo_t *topo, int64_t work,
                       double horizon, double floor_s, const ahead_t *ah)
{
    mc_sim_result_t res;
    mc_err_t err = {0};
    outcome_t o = {.left = work};
    if (ah) {
        mc_sim_ahead_t *a = mc_sim_ahead_start(s, topo, ah->work, ah->from, ah->most);
        /* a run made ahead decides the same wherever it stands when handed over */
        if (ah->late) {
            int64_t all = work;
            mc_sim_result_t r2;
            mc_sim_run_bounded(s, topo, &all, &r2, &err);
            mc_sim_result_free(&r2);
        }
        o.st = mc_sim_run_memo_ahead(m, a, topo, &o.left, horizon, floor_s, &res, &err);
    } else {
        o.st = mc_sim_run_memo_cut(m, s, topo, &o.left, horizon, floor_s, &res, &err);
    }
    o.t = res.makespan_s;
    mc_sim_result_free(&res);
    return o;
}

static void assert_same(outcome_t a, outcome_t b, const char *what)
{
    if (a.st != b.st || a.t != b.t || a.left != b.left)
        fail_msg("%s: made ahead %d %.17g left %lld, afresh %d %.17g left %lld", what, a.st, a.t,
                 (long long)a.left, b.st, b.t, (long long)b.left);
}

/* Allowances from a tenth of the run's work to more than all of it, no horizon or horizons below,
 * at and above its makespan, floors of none, the makespan and twenty times it (which cuts), each
 * with runs made ahead under other limits (up to the true allowance, a third or a tenth of it, or
 * three times it; horizons up to twice the makespan, the least horizon at the bound-like floor or
 * the true one), handed over at once or late. Every outcome is the fresh run's, and so is the
 * memo's next answer. */
static void test_ahead_decides_as_afresh(void **state)
{
    mc_topo_t *topo = NULL;
    int64_t work;
    double end;
    mc_sched_t *s = allgather_run(&topo, &work, &end);
    assert_true(work > 100000);
    const int64_t works[] = {work / 10, work / 2, work - 1, work, 2 * work};
    const double horizons[] = {0, end * 0.5, end * 0.99, end, end * 1.01};
    const double floors[] = {0, end, 20 * end};
    int decided = 0, stopped = 0, ended = 0, runs = 0;
    for (size_t i = 0; i < sizeof works / sizeof *works; i++)
        for (size_t j = 0; j < sizeof horizons / sizeof *horizons; j++)
            for (size_t k = 0; k < sizeof floors / sizeof *floors; k++)
                for (int loose = 0; loose < 4; loose++, runs++) {
                    int64_t w = works[i];
                    double h = horizons[j];
                    ahead_t ah = {loose == 0 ? w : loose == 1 ? w / 3 : loose == 2 ? w / 10 : 3 * w,
                                  loose == 2 ? h : end * 0.4, h > 0 && loose ? 2 * end : h,
                                  (int)((i + j + k) % 2)};
                    char what[128];
                    snprintf(what, sizeof what, "work %lld horizon %g floor %g loose %d",
                             (long long)w, h, floors[k], loose);
                    mc_sim_memo_t *ma = mc_sim_memo_new(), *mf = mc_sim_memo_new();
                    outcome_t a = timed(ma, s, topo, w, h, floors[k], &ah);
                    outcome_t f = timed(mf, s, topo, w, h, floors[k], NULL);
                    assert_same(a, f, what);
                    int took = (int)mc_sim_memo_ahead_taken(ma);
                    decided += took;
                    stopped += took && a.st == MC_ERR_TIMEOUT;
                    ended += took && a.st == MC_OK;
                    /* the memo remembers the same: a second run of it through each */
                    strcat(what, ", again");
                    assert_same(timed(ma, s, topo, w, h, floors[k], NULL),
                                timed(mf, s, topo, w, h, floors[k], NULL), what);
                    mc_sim_memo_free(ma);
                    mc_sim_memo_free(mf);
                }
    /* most were decided from the run made ahead (the others: a floor that cuts, or a run made
     * ahead past the true allowance), and some of those stopped, some ended */
    assert_true(decided >= runs / 2);
    assert_true(stopped > 0 && ended > 0);
    mc_sched_free(s);
    mc_topo_free(topo);
}

/* A run made ahead under a horizon below the true one, with one where the true one has none, or
 * with none where the true one has one, decides nothing: run afresh, to the fresh run's outcome. */
static void test_ahead_outside_its_limits(void **state)
{
    mc_topo_t *topo = NULL;
    int64_t work;
    double end;
    mc_sched_t *s = allgather_run(&topo, &work, &end);
    struct {
        double horizon, most;
    } cases[] = {{1.5 * end, end}, {0, end}, {end, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mc_sim_memo_t *ma = mc_sim_memo_new(), *mf = mc_sim_memo_new();
        ahead_t ah = {2 * work, end * 0.5, cases[i].most, 1};
        outcome_t a = timed(ma, s, topo, 2 * work, cases[i].horizon, end, &ah);
        outcome_t f = timed(mf, s, topo, 2 * work, cases[i].horizon, end, NULL);
        assert_same(a, f, "outside");
        assert_int_equal(mc_sim_memo_ahead_taken(ma), 0);
        mc_sim_memo_free(ma);
        mc_sim_memo_free(mf);
    }
    mc_sched_free(s);
    mc_topo_free(topo);
}

/* Runs kept aside (mc_sim_memo_set_aside): one that ended under an allowance W0 and the cut's
 * floor F0 decides a run under W0 or more and F0 or less as the fresh run (the memo's count of
 * runs made ahead grows by one; the memo then decides the same run itself). Not one under less:
 * with twelve times the run's work, the cut never looks (a quarter of it is past the run's end),
 * but under the run's work alone, with F0 twenty times the makespan, the fresh run is cut a
 * quarter into it. Nor one with a higher floor. */
static void test_aside_decides_as_afresh(void **state)
{
    mc_topo_t *topo = NULL;
    int64_t work;
    double end;
    mc_sched_t *s = allgather_run(&topo, &work, &end);
    double floor_s = 20 * end;
    int64_t w0 = 12 * work;
    struct {
        int64_t work;
        double floor_s;
        int aside; /* decided aside */
        const char *what;
    } cases[] = {{work, floor_s, 0, "less allowance"},
                 {w0, 2 * floor_s, 0, "a higher floor"},
                 {w0 + 7, floor_s, 1, "more allowance"},
                 {w0, floor_s / 2, 1, "a lower floor"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mc_sim_memo_t *from = mc_sim_memo_new(), *m = mc_sim_memo_new();
        mc_sim_memo_t *fresh = mc_sim_memo_new();
        assert_int_equal(timed(from, s, topo, w0, 0, floor_s, NULL).st, MC_OK);
        mc_sim_memo_set_aside(m, from);
        outcome_t f = timed(fresh, s, topo, cases[i].work, 0, cases[i].floor_s, NULL);
        assert_same(timed(m, s, topo, cases[i].work, 0, cases[i].floor_s, NULL), f,
                    cases[i].what);
        assert_int_equal(mc_sim_memo_ahead_taken(m), cases[i].aside);
        if (i == 0) /* cut, charged its allowance and one more unit */
            assert_true(f.st == MC_ERR_TIMEOUT && f.left == -1);
        /* remembered in m as the fresh run was: the same run again is m's own */
        assert_same(timed(m, s, topo, cases[i].work, end, cases[i].floor_s, NULL),
                    timed(fresh, s, topo, cases[i].work, end, cases[i].floor_s, NULL),
                    cases[i].what);
        assert_int_equal(mc_sim_memo_ahead_taken(m), cases[i].aside);
        mc_sim_memo_free(m);
        mc_sim_memo_free(fresh);
    }
    mc_sched_free(s);
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ahead_decides_as_afresh),
        cmocka_unit_test(test_ahead_outside_its_limits),
        cmocka_unit_test(test_aside_decides_as_afresh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
