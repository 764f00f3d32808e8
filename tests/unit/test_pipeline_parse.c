/* Tests for the pipeline file: what each statement reads, how a move joins its group (with the
 * gradient of an activation going back in the reversed layouts, and a skip connection as a group
 * of its own), every kind of bad line with the file, line and what was expected, and the
 * transfer times of real schedules on the paper's cluster. Run from the repository root. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"
#include "sim/sim.h"

#define STAGES "stage A={gpu:4}@0..3 forward 1ms backward 2ms\n" \
               "stage B={gpu:4}@4..7 forward 3.5e12flop backward 2e-3s\n" \
               "stage C={gpu:4}@8..11 forward 250us backward 7e6ns\n"

static mc_pipe_t *parse(const char *text)
{
    mc_pipe_t *p = NULL;
    mc_err_t err = {0};
    mc_status_t st = mc_pipe_parse_text(text, "t.pipeline", &p, &err);
    if (st != MC_OK)
        print_error("%s\n", err.msg);
    assert_int_equal(st, MC_OK);
    return p;
}

static void test_statements(void **state)
{
    mc_pipe_t *p = parse("# a comment\n"
                         "topology ../topologies/aws-p3.8xlarge-x5.xml   # the paper's cluster\n"
                         "microbatches 8\n"
                         "gpu-rate 125e12\n" STAGES
                         "activation h: f16[8,1024] A[gpu,_] -> B[_,gpu]\n"
                         "activation f16[8,1024] B[_,_] -> f16[8,1024] C[gpu,_]\n"
                         "forward skip: f16[8,64] A[_,_] -> C[_,gpu]\n"
                         "backward dskip: f16[8,64] C[_,gpu] -> A[_,gpu]\n");
    assert_string_equal(p->topo_path, "../topologies/aws-p3.8xlarge-x5.xml");
    assert_int_equal(p->microbatches, 8);
    assert_int_equal(p->nstages, 3);
    assert_string_equal(p->stages[1].name, "B");
    assert_int_equal(p->stages[1].ngpus, 4);
    assert_true(fabs(p->stages[0].fwd_s - 1e-3) < 1e-15);
    assert_true(fabs(p->stages[1].fwd_s - 3.5e12 / (4 * 125e12)) < 1e-15);
    assert_true(fabs(p->stages[1].bwd_s - 2e-3) < 1e-15);
    assert_true(fabs(p->stages[2].fwd_s - 250e-6) < 1e-15);
    assert_true(fabs(p->stages[2].bwd_s - 7e-3) < 1e-15);
    /* A->B, B->A, B->C, C->B, A->C (the skip, on its own), C->A. */
    static const struct {
        int src, dst, backward;
        const char *moves;
    } want[] = {
        {0, 1, 0, "move h: f16[8,1024] A[gpu,_] -> B[_,gpu]\n"},
        {1, 0, 1, "move h: f16[8,1024] B[_,gpu] -> A[gpu,_]\n"},
        {1, 2, 0, "move t1: f16[8,1024] B[_,_] -> C[gpu,_]\n"},
        {2, 1, 1, "move t1: f16[8,1024] C[gpu,_] -> B[_,_]\n"},
        {0, 2, 0, "move skip: f16[8,64] A[_,_] -> C[_,gpu]\n"},
        {2, 0, 1, "move dskip: f16[8,64] C[_,gpu] -> A[_,gpu]\n"},
    };
    assert_int_equal(p->ngroups, 6);
    for (int g = 0; g < 6; g++) {
        assert_int_equal(p->groups[g].src, want[g].src);
        assert_int_equal(p->groups[g].dst, want[g].dst);
        assert_int_equal(p->groups[g].backward, want[g].backward);
        char *text = mc_task_to_text(p->groups[g].task);
        assert_non_null(strstr(text, want[g].moves));
        assert_int_equal(p->groups[g].task->nmeshes, 2);
        free(text);
    }
    mc_pipe_free(p);
}

/* Two tensors between the same stages in one direction are one task. */
static void test_tensors_share_a_group(void **state)
{
    mc_pipe_t *p = parse("microbatches 2\ngpu-rate 1e12\n" STAGES
                         "activation x: f32[64] A[gpu] -> B[gpu]\n"
                         "forward mask: bool[64] A[_] -> B[_]\n");
    assert_int_equal(p->ngroups, 2);
    assert_int_equal(p->groups[0].task->ntensors, 2);
    assert_int_equal(p->groups[1].task->ntensors, 1);
    mc_pipe_free(p);
}

/* A skip connection as one move with several consumers: one forward transfer to both stages,
 * with both meshes in its task, and each consumer's gradient back in its own layout. The old
 * form (one move per consumer) keeps its own groups, as test_statements shows. */
static void test_several_consumers(void **state)
{
    mc_pipe_t *p = parse("microbatches 2\ngpu-rate 1e12\n" STAGES
                         "activation h: f16[8,64] A[gpu,_] -> B[_,gpu], C[(gpu),_]\n"
                         "forward g: f16[8,64] B[_,_] -> C[_,_]\n");
    static const struct {
        int src, dst, nmore;
        const char *moves;
    } want[] = {
        {0, 1, 1, "move h: f16[8,64] A[gpu,_] -> B[_,gpu], C[gpu,_]\n"},
        {1, 0, 0, "move h: f16[8,64] B[_,gpu] -> A[gpu,_]\n"},
        {2, 0, 0, "move h: f16[8,64] C[gpu,_] -> A[gpu,_]\n"},
        {1, 2, 0, "move g: f16[8,64] B[_,_] -> C[_,_]\n"},
    };
    assert_int_equal(p->ngroups, 4);
    for (int g = 0; g < 4; g++) {
        assert_int_equal(p->groups[g].src, want[g].src);
        assert_int_equal(p->groups[g].dst, want[g].dst);
        assert_int_equal(p->groups[g].nmore, want[g].nmore);
        char *text = mc_task_to_text(p->groups[g].task);
        if (!strstr(text, want[g].moves))
            fail_msg("group %d:\n%s", g, text);
        assert_int_equal(p->groups[g].task->nmeshes, 2 + want[g].nmore);
        free(text);
    }
    assert_int_equal(p->groups[0].more[0], 2);
    char to[64];
    mc_pipe_group_to(p, &p->groups[0], to, sizeof to);
    assert_string_equal(to, "B,C");
    mc_pipe_free(p);
}

static void test_errors(void **state)
{
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"microbatches 4\nfoo bar\n", "t.pipeline:2: expected 'topology', 'microbatches', "
                                      "'gpu-rate', 'stage', 'activation', 'forward' or "
                                      "'backward', got 'foo bar'"},
        {"microbatches 4\nstage A={gpu:2}@0..1 forward 12 backward 3ms\n",
         "t.pipeline:2: expected the forward time as a number and a unit (s, ms, us, ns or "
         "flop), such as 12ms or 3.1e12flop, got '12'"},
        {"microbatches 4\nstage A={gpu:2}@0..1 forward 1ms backward -3ms\n",
         "t.pipeline:2: expected the backward time as a number"},
        {"microbatches 4\nstage A={gpu:2}@0..1 forward 1ms\n",
         "t.pipeline:2: expected 'stage NAME={AXIS:SIZE,...}@DEVICES forward TIME backward "
         "TIME'"},
        {"microbatches 4\nstage A={gpu:2}@0..1 backward 1ms forward 1ms\n",
         "t.pipeline:2: expected 'stage NAME="},
        {"microbatches 4\nstage A={gpu:2 forward 1ms backward 1ms\n", "t.pipeline:2: "},
        {"stage A={gpu:2}@0..1 forward 1ms backward 1ms\n"
         "stage B={gpu:2}@1..2 forward 1ms backward 1ms\n",
         "t.pipeline:2: GPU 1 of stage B is already in stage A (line 1); expected disjoint "
         "meshes"},
        {"microbatches 1\n" STAGES "activation h: f16[4,4] A[gpu,_] -> A[_,gpu]\n",
         "t.pipeline:5: tensor h stays in stage A; expected a move between two stages"},
        {"microbatches 1\n" STAGES "backward h: f16[4,4] A[gpu,_] -> B[_,gpu]\n",
         "t.pipeline:5: tensor h goes from stage A to stage B; expected a backward move (to an "
         "earlier stage)"},
        {"microbatches 1\n" STAGES "forward h: f16[4,4] C[gpu,_] -> B[_,gpu]\n",
         "t.pipeline:5: tensor h goes from stage C to stage B; expected a forward move (to a "
         "later stage)"},
        {"microbatches 1\n" STAGES "activation h: f16[4,4] B[gpu,_] -> C[_,gpu], A[gpu,_]\n",
         "t.pipeline:5: tensor h goes from stage B to stage A; expected a forward move (to a "
         "later stage)"},
        {"microbatches 1\n" STAGES "activation h: f16[4,4] A[gpu,_] -> B[_,gpu], C[_,gpus]\n",
         "t.pipeline:5: unknown axis 'gpus' (mesh C has gpu) at column 39"},
        {"microbatches 1\n" STAGES "activation h: f16[4,4] A[gpu,_] -> B[_,gpu], B[gpu,_]\n",
         "t.pipeline:5: consumer mesh B shares GPU 4 with consumer mesh B"},
        {"microbatches 1\n" STAGES "activation h: f16[4,4] A[gpus,_] -> B[_,gpu]\n",
         "t.pipeline:5: unknown axis 'gpus' (mesh A has gpu) at column 15"},
        {"microbatches 1\n" STAGES "activation h: f16[4] A[gpu] -> B[gpu]\n"
         "forward h: f16[4] A[gpu] -> B[gpu]\n", "t.pipeline:6: tensor h is already defined"},
        {"microbatches 1\n" STAGES "activation h: f16[4] A[gpu] -> B[gpu]\n"
         "stage D={gpu:1}@12 forward 1ms backward 1ms\n",
         "t.pipeline:6: expected every stage before the first move"},
        {"microbatches 4\n" STAGES, "t.pipeline:3: stage B gives a time in flop; expected a "
                                    "'gpu-rate FLOPS' line"},
        {"stage A={gpu:2}@0..1 forward 1ms backward 1ms\n",
         "t.pipeline: expected a 'microbatches N' line"},
        {"microbatches 3\n", "t.pipeline: expected at least one 'stage' line"},
        {"microbatches 1000000\n" STAGES "gpu-rate 1e12\nactivation h: f16[4] A[gpu] -> B[gpu]\n"
         "activation g: f16[4] B[gpu] -> C[gpu]\nforward k: f16[4] A[gpu] -> C[gpu]\n",
         "t.pipeline: 3 stages, 5 transfers and 1000000 micro-batches make 11000000 steps and "
         "transfers; expected at most 10000000"},
        {"microbatches 0\n", "t.pipeline:1: expected a micro-batch count (1 to 1000000), got "
                             "'0'"},
        {"microbatches 4\nmicrobatches 5\n", "t.pipeline:2: expected one 'microbatches' line"},
        {"topology a.xml\ntopology b.xml\n", "t.pipeline:2: expected one 'topology' line"},
        {"gpu-rate fast\n", "t.pipeline:1: expected the FLOP/s one GPU achieves, such as 125e12, "
                            "got 'fast'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mc_pipe_t *p = (mc_pipe_t *)1;
        mc_err_t err = {0};
        assert_int_equal(mc_pipe_parse_text(cases[i].text, "t.pipeline", &p, &err), MC_ERR_PARSE);
        assert_null(p);
        if (strncmp(err.msg, cases[i].msg, strlen(cases[i].msg))) {
            print_error("case %zu: got '%s'\n", i, err.msg);
            fail();
        }
    }
}

/* Each group's time and links come from its schedule simulated; a schedule moved onto another
 * boundary's GPUs times the same as one synthesized for them. */
static void check_groups(mc_pipe_t *p, const mc_topo_t *topo, const int *same_as)
{
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    mc_err_t err = {0};
    assert_int_equal(mc_pipe_time_comm(p, topo, "p2p", &opts, &err), MC_OK);
    for (int g = 0; g < p->ngroups; g++) {
        mc_sched_t *s = NULL;
        mc_sim_result_t r = {0};
        assert_int_equal(mc_synth("p2p", p->groups[g].task, topo, &opts, &s, &err), MC_OK);
        assert_int_equal(mc_sim_run_totals(s, topo, &r, &err), MC_OK);
        assert_true(p->groups[g].seconds == r.makespan_s);
        assert_true(p->groups[g].seconds >= p->groups[g].bound_s);
        assert_true(p->groups[g].nlinks > 0);
        assert_int_equal(p->groups[g].same_as, same_as[g]);
        mc_sim_result_free(&r);
        mc_sched_free(s);
    }
}

/* On the paper's cluster with p2p: transfer times are the schedules' simulated times; a
 * boundary between two other hosts reuses the first boundary's schedule, one inside a host (NVLink
 * instead of the network) does not; GPUs off the topology are refused at the stage's line; and
 * with one micro-batch the iteration is the compute plus every transfer. */
static void test_time_comm(void **state)
{
    mc_topo_t *topo = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_load("topologies/aws-p3.8xlarge-x5.xml", &topo, &err), MC_OK);
    mc_pipe_t *p = parse("microbatches 1\n"
                         "stage A={gpu:4}@0..3 forward 1ms backward 2ms\n"
                         "stage B={gpu:4}@4..7 forward 1ms backward 2ms\n"
                         "stage C={gpu:4}@8..11 forward 1ms backward 2ms\n"
                         "activation h: f16[8,1024,256] A[_,_,_] -> B[gpu,_,_]\n"
                         "activation g: f16[8,1024,256] B[_,_,_] -> C[gpu,_,_]\n");
    /* A->B, B->A, B->C (A->B's, moved), C->B (B->A's, moved). */
    check_groups(p, topo, (const int[]){-1, -1, 0, 1});
    /* Forward B gets the tensor once (a quarter per GPU); backward A's 4 GPUs all of it. */
    assert_int_equal(p->groups[0].bytes, 8 * 1024 * 256 * 2);
    assert_int_equal(p->groups[1].bytes, 4 * 8 * 1024 * 256 * 2);
    mc_pipe_result_t res;
    assert_int_equal(mc_pipe_simulate(p, MC_PIPE_1F1B, 0, &res, &err), MC_OK);
    double comm = 0;
    for (int g = 0; g < p->ngroups; g++)
        comm += p->groups[g].seconds;
    assert_true(fabs(res.iteration_s - (9e-3 + comm)) < 1e-12);
    mc_pipe_result_free(&res);
    mc_pipe_free(p);

    p = parse("microbatches 1\n"
              "stage A={gpu:2}@0..1 forward 1ms backward 2ms\n"
              "stage B={gpu:2}@2..3 forward 1ms backward 2ms\n"
              "stage C={gpu:2}@4..5 forward 1ms backward 2ms\n"
              "forward h: f16[1024] A[gpu] -> B[_]\n"
              "forward g: f16[1024] B[gpu] -> C[_]\n");
    check_groups(p, topo, (const int[]){-1, -1});
    mc_pipe_free(p);

    p = parse("microbatches 1\nstage A={gpu:4}@0..3 forward 1ms backward 2ms\n"
              "stage B={gpu:2}@19..20 forward 1ms backward 2ms\n");
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    assert_int_equal(mc_pipe_time_comm(p, topo, "p2p", &opts, &err), MC_ERR_INVALID);
    assert_non_null(strstr(err.msg, "t.pipeline:3: device 20 of mesh B is outside the topology"));
    mc_pipe_free(p);
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_statements),
        cmocka_unit_test(test_tensors_share_a_group),
        cmocka_unit_test(test_several_consumers),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_time_comm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
