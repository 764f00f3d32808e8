/* Memory: the bound the collective form states, and the check that makes every strategy respect
 * 'synth --memory-limit' or say that it cannot. Peaks are mc_sched_peak_mem, the same accounting
 * that 'validate' applies to a stated bound. The runtime is out of place (the source and the
 * destination shard are separate buffers), so the paper's in-place bound max(source tile,
 * destination tile) on the one live array becomes: the two shards, plus staging for one
 * intermediate array no larger than that. */
#include <inttypes.h>

#include "synth/collectives/collective_internal.h"

uint64_t coll_sched_peak(const mc_sched_t *s, const mc_topo_t *topo, int *gpu)
{
    uint64_t peak = 0;
    int at = -1;
    for (int g = 0; g < topo->ngpus; g++) {
        uint64_t m = mc_sched_peak_mem(s, g);
        if (at < 0 || m > peak) {
            peak = m;
            at = g;
        }
    }
    if (gpu)
        *gpu = at;
    return peak;
}

uint64_t coll_mem_bound(const mc_sched_t *s, int gpu)
{
    uint64_t src = mc_task_src_bytes(s->task, gpu), dst = mc_task_dst_bytes(s->task, gpu);
    uint64_t shared = 0;
    for (int i = 0; i < s->task->ncopies; i++)
        if (s->task->copies[i].gpu == gpu)
            shared += s->task->copies[i].bytes;
    return src + dst - shared + s->workspace + (src > dst ? src : dst);
}

mc_status_t mc_synth_check_memory(const mc_sched_t *s, const mc_topo_t *topo, uint64_t limit,
                                  mc_err_t *err)
{
    if (!limit)
        return MC_OK;
    int gpu;
    uint64_t peak = coll_sched_peak(s, topo, &gpu);
    if (peak <= limit)
        return MC_OK;
    char a[32], b[32];
    return mc_err_set(err, MC_ERR_INVALID, "strategy %s cannot stay within --memory-limit %s: it "
                      "needs %" PRIu64 " bytes (%s) on GPU %d, above %" PRIu64, s->strategy,
                      mc_fmt_bytes(limit, a, sizeof a), peak, mc_fmt_bytes(peak, b, sizeof b), gpu,
                      limit);
}
