/* The size of what emit generates, bounded by the task before anything is lowered: every chunk
 * of every tree edge becomes table rows in the .cu, so a schedule with absurdly small chunks (a
 * valid one: 500,000 chunks on a 1 MB tree) would take seconds, gigabytes and a source file no
 * compiler wants. The bound allows a floor of transfers plus one per 4 KiB the task delivers,
 * far above any synthesized schedule (their chunks are 128 KiB or more). */
#include <inttypes.h>

#include "emit/emit_internal.h"

#define EMIT_FLOOR_TRANSFERS (1u << 16)
#define EMIT_BYTES_PER_TRANSFER 4096u

mc_status_t mc_emit_check_size(const mc_sched_t *s, const char *name, mc_err_t *err)
{
    uint64_t total = 0, worst = 0;
    int worst_tree = -1;
    for (int ti = 0; ti < s->ntrees; ti++) {
        uint64_t n = (uint64_t)s->trees[ti].nchunks * (uint64_t)s->trees[ti].nedges;
        total += n;
        if (n > worst) {
            worst = n;
            worst_tree = ti;
        }
    }
    uint64_t bytes = mc_task_total_bytes(s->task);
    uint64_t limit = EMIT_FLOOR_TRANSFERS + bytes / EMIT_BYTES_PER_TRANSFER;
    if (total <= limit)
        return MC_OK;
    const mc_tree_t *t = &s->trees[worst_tree];
    return mc_err_set(err, MC_ERR_INVALID,
                      "%s: the schedule makes %" PRIu64 " chunk transfers (tree %d alone: %d "
                      "chunks of %" PRIu64 " bytes over %d edges); emit generates code for at "
                      "most %" PRIu64 " (%u, plus one per %u bytes the task delivers: %" PRIu64
                      "): use fewer, larger chunks",
                      name, total, worst_tree, t->nchunks,
                      mc_tree_chunk_max(t), t->nedges,
                      limit, EMIT_FLOOR_TRANSFERS, EMIT_BYTES_PER_TRANSFER, bytes);
}
