/* The pattern of `meshcast run` as the runtime driver's hooks (mc_rt_drive): ranks of lowered plans
 * are GPUs of the task; sources get the pattern, destinations its complement, and the check
 * counts wrong bytes and keeps the first few in a report. Ranks whose source tiles are the same
 * (replicas) share one buffer in one process, which keeps replicated sources from multiplying the
 * memory a loopback run needs. */
#include <string.h>

#include "emit/emit.h"

#define REPORT_LINES 5

static void fill(void *ctx, int rank, void *src)
{
    const mc_emit_pattern_t *pt = ctx;
    mc_emit_fill_src(pt->task, pt->P->gpus[rank], src);
}

static void poison(void *ctx, int rank, void *dst)
{
    const mc_emit_pattern_t *pt = ctx;
    mc_emit_poison_dst(pt->task, pt->P->gpus[rank], dst);
}

static uint64_t check(void *ctx, int rank, const void *dst)
{
    mc_emit_pattern_t *pt = ctx;
    int lines = 0;
    for (size_t i = 0; i < pt->report.len; i++)
        lines += pt->report.data[i] == '\n';
    return mc_emit_check_dst(pt->task, pt->P->gpus[rank], dst, &pt->report, REPORT_LINES - lines);
}

static int same_source(void *ctx, int r)
{
    const mc_emit_pattern_t *pt = ctx;
    const mc_task_t *task = pt->task;
    const mc_emit_plans_t *P = pt->P;
    for (int q = 0; q < r; q++) {
        int same = P->plans[q].src_bytes == P->plans[r].src_bytes && P->plans[r].src_bytes;
        for (int k = 0; same && k < task->ntensors; k++) {
            const mc_layout_t *l = &task->tensors[k].src;
            mc_box_t tq, tr;
            int hq = mc_layout_tile(task, l, P->gpus[q], &tq);
            int hr = mc_layout_tile(task, l, P->gpus[r], &tr);
            same = hq == hr && (!hq || !memcmp(&tq, &tr, sizeof tq));
        }
        if (same)
            return q;
    }
    return -1;
}

void mc_emit_pattern_hooks(mc_emit_pattern_t *pt, mc_rt_drive_hooks_t *h)
{
    h->ctx = pt;
    h->fill_src = fill;
    h->poison_dst = poison;
    h->check_dst = check;
    h->same_source = same_source;
}
