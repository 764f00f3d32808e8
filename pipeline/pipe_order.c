/* The per-stage orders of the two pipeline schedules, as Alpa builds them
 * (alpa/pipeline_parallel/schedules.py): PipeDreamFlush ("1f1b") and
 * OverlapFriendlyPipeDreamSchedule ("1f1b_overlap_friendly", the paper's eager-1F1B). Only the
 * order of each stage's steps matters to the event simulation; the ticks are kept because
 * eager-1F1B defines its backward delays by them. */
#include <string.h>

#include "pipeline/pipeline.h"

const char *mc_pipe_order_name(mc_pipe_order_t order)
{
    return order == MC_PIPE_EAGER_1F1B ? "eager-1f1b" : "1f1b";
}

int mc_pipe_order_parse(const char *name, mc_pipe_order_t *order)
{
    if (!strcmp(name, "1f1b"))
        *order = MC_PIPE_1F1B;
    else if (!strcmp(name, "eager-1f1b"))
        *order = MC_PIPE_EAGER_1F1B;
    else
        return -1;
    return 0;
}

static int imin(int a, int b)
{
    return a < b ? a : b;
}

int mc_pipe_warmup(mc_pipe_order_t order, int s, int b, int i)
{
    return order == MC_PIPE_EAGER_1F1B ? imin(b, 2 * (s - i) - 1) : imin(s - i - 1, b);
}

/* Eager-1F1B, step by step as OverlapFriendlyPipeDreamSchedule places them: the warm-up
 * forwards, then backward and forward in turn while both remain, then what remains; step k sits
 * at tick i + k unless it is a backward that must wait for its tick. */
static void eager_ops(int s, int b, int i, mc_pipe_op_t *ops)
{
    int warm = mc_pipe_warmup(MC_PIPE_EAGER_1F1B, s, b, i);
    int fwd = -1, bwd = -1, forward = 1;
    for (int k = 0; k < 2 * b; k++) {
        if (k >= warm && ((forward && bwd < b - 1) || (!forward && fwd < b - 1)))
            forward = !forward;
        int tick = i + k;
        if (forward) {
            ops[k] = (mc_pipe_op_t){++fwd, 0, tick};
            continue;
        }
        bwd++;
        int earliest = (s - 1) + (2 * bwd + 1) + (s - 1 - i);
        ops[k] = (mc_pipe_op_t){bwd, 1, tick > earliest ? tick : earliest};
    }
}

/* 1F1B: the warm-up forwards, then one forward and one backward while forwards remain, then the
 * cool-down backwards. Ticks number the steps from the stage's first one at tick i (Alpa also
 * shifts backwards to wait for the next stage; that changes no stage's order). */
static void one_f_one_b_ops(int s, int b, int i, mc_pipe_op_t *ops)
{
    int warm = mc_pipe_warmup(MC_PIPE_1F1B, s, b, i), k = 0, fwd = 0, bwd = 0;
    while (fwd < warm)
        ops[k] = (mc_pipe_op_t){fwd++, 0, i + k}, k++;
    while (fwd < b) {
        ops[k] = (mc_pipe_op_t){fwd++, 0, i + k}, k++;
        ops[k] = (mc_pipe_op_t){bwd++, 1, i + k}, k++;
    }
    while (bwd < b)
        ops[k] = (mc_pipe_op_t){bwd++, 1, i + k}, k++;
}

void mc_pipe_order_ops(mc_pipe_order_t order, int s, int b, int i, mc_pipe_op_t *ops)
{
    if (order == MC_PIPE_EAGER_1F1B)
        eager_ops(s, b, i, ops);
    else
        one_f_one_b_ops(s, b, i, ops);
}

int mc_pipe_peak_stored(const mc_pipe_op_t *ops, int nops)
{
    int live = 0, peak = 0;
    for (int k = 0; k < nops; k++) {
        live += ops[k].backward ? -1 : 1;
        peak = live > peak ? live : peak;
    }
    return peak;
}
