/* Hand-built schedules on the paper's cluster (topologies/aws-p3.8xlarge-x5.xml), shared by the
 * tests of the lowering and of the plans' simulation: the cluster loaded once per group (cmocka
 * group setup and teardown), a schedule with no trees for a task given as text, tree edges that
 * must be accepted, and the host loopback run of the lowered plans. Include after cmocka.h. */
#ifndef TEST_PAPER_SCHED_H
#define TEST_PAPER_SCHED_H

#include <stdlib.h>

#include "emit/emit.h"
#include "sched/sched.h"

static mc_topo_t *topo;

static int setup(void **state)
{
    mc_err_t err = {0};
    if (mc_topo_load("topologies/aws-p3.8xlarge-x5.xml", &topo, &err) != MC_OK) {
        print_message("%s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    mc_topo_free(topo);
    return 0;
}

/* The task parsed from text and split; the caller frees both. */
static mc_sched_t *sched_for(const char *task_text, mc_task_t **task)
{
    mc_err_t err = {0};
    assert_int_equal(mc_task_parse_text(task_text, "test", task, &err), MC_OK);
    assert_int_equal(mc_task_split(*task, &err), MC_OK);
    return mc_sched_new(*task, topo, "hand");
}

static void edge(mc_sched_t *s, int tree, int parent, int child)
{
    mc_err_t err = {0};
    assert_int_equal(mc_sched_add_edge(s, topo, tree, parent, child, &err), MC_OK);
}

/* Runs the plans with the host loopback on pattern-filled buffers; returns the wrong bytes. */
static uint64_t loopback_wrong(const mc_task_t *task, const mc_emit_plans_t *P)
{
    mc_rt_buffers_t *b = calloc(P->nranks, sizeof *b);
    mc_rt_err_t err = {0};
    uint64_t wrong = 0;
    for (int r = 0; r < P->nranks; r++) {
        const mc_rt_plan_t *p = &P->plans[r];
        uint64_t n[MC_RT_NBUFS] = {p->src_bytes, p->dst_bytes, p->ws_bytes};
        for (int i = 0; i < MC_RT_NBUFS; i++) {
            b[r].bytes[i] = n[i];
            b[r].buf[i] = malloc(n[i] + 1);
        }
        mc_emit_fill_src(task, P->gpus[r], b[r].buf[MC_RT_BUF_SRC]);
        mc_emit_poison_dst(task, P->gpus[r], b[r].buf[MC_RT_BUF_DST]);
    }
    int st = mc_rt_run_loopback(P->nranks, P->plans, b, &err);
    if (st != MC_RT_OK)
        print_message("%s\n", err.msg);
    assert_int_equal(st, MC_RT_OK);
    for (int r = 0; r < P->nranks; r++) {
        wrong += mc_emit_check_dst(task, P->gpus[r], b[r].buf[MC_RT_BUF_DST], NULL, 0);
        for (int i = 0; i < MC_RT_NBUFS; i++)
            free(b[r].buf[i]);
    }
    free(b);
    return wrong;
}

#endif
