/* Peak memory per GPU while a schedule runs: its source and destination shards, less what they
 * share (the local copies), plus every byte it receives only to relay, plus the workspace.
 * Relayed bytes are counted for the whole schedule, not freed between phases: the runtime keeps
 * one staging area per tree, so this is what it allocates. */
#include <stdlib.h>

#include "sched/sched_internal.h"

static int needs_piece(const mc_piece_t *p, int gpu)
{
    int lo = 0, hi = p->ndests;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (p->dests[mid] == gpu)
            return 1;
        if (p->dests[mid] < gpu)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

uint64_t mc_sched_relayed(const mc_sched_t *s, const mc_tree_t *tr, int child)
{
    if (tr->piece < 0 || tr->piece >= s->task->npieces)
        return 0;
    return needs_piece(&s->task->pieces[tr->piece], child) ? 0 : tr->bytes;
}

uint64_t mc_sched_shard_mem(const mc_sched_t *s, int gpu)
{
    uint64_t shared = 0;
    for (int i = 0; i < s->task->ncopies; i++)
        if (s->task->copies[i].gpu == gpu)
            shared += s->task->copies[i].bytes;
    return mc_task_src_bytes(s->task, gpu) + mc_task_dst_bytes(s->task, gpu) - shared +
           s->workspace;
}

uint64_t mc_sched_peak_mem(const mc_sched_t *s, int gpu)
{
    uint64_t relay = 0;
    for (int t = 0; t < s->ntrees; t++)
        for (int e = 0; e < s->trees[t].nedges; e++)
            if (s->trees[t].edges[e].child == gpu)
                relay += mc_sched_relayed(s, &s->trees[t], gpu);
    return mc_sched_shard_mem(s, gpu) + relay;
}
