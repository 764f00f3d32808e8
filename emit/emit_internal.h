/* emit's internals: where each rank's tiles sit in its SRC and DST buffers. */
#ifndef MC_EMIT_INTERNAL_H
#define MC_EMIT_INTERNAL_H

#include "emit/emit.h"

typedef struct mc_emit_shards {
    int nranks, ntensors;
    uint64_t *off[2];        /* [MC_RT_BUF_SRC or DST][rank * ntensors + tensor]: tile offset */
    mc_box_t *tile[2];       /* the same index: the tile (empty when the rank has none) */
    uint64_t *bytes[2];      /* [buf][rank]: buffer size */
    uint64_t *src_bytes, *dst_bytes; /* bytes[SRC], bytes[DST] */
} mc_emit_shards_t;

/* The runtime sources, embedded at build time by runtime/embed.sh; ends with a NULL name. */
struct mc_emit_rt_file {
    const char *name;
    const char *data;
    size_t size;
};
extern const struct mc_emit_rt_file mc_emit_rt_files[];
/* The embedded file called name. */
const struct mc_emit_rt_file *mc_emit_rt_file(const char *name);

/* One more than the largest GPU id the schedule names. */
int mc_emit_ngpus(const mc_sched_t *s);
/* One more than the largest link id the schedule's routes name. */
int mc_emit_nlinks(const mc_sched_t *s);
/* Numbers the GPUs the schedule involves (in a mesh or a tree) 0, 1, ... in GPU order; the
 * others get -1. Returns the number of ranks. */
int mc_emit_ranks(const mc_sched_t *s, int ngpus, int *rank_of);
void mc_emit_shards_init(mc_emit_shards_t *sh, const mc_task_t *task, int nranks);
void mc_emit_shards_free(mc_emit_shards_t *sh);
/* The box of buffer buf (SRC or DST) of gpu that holds region (global coordinates) of tensor k,
 * its dimensions merged where they are contiguous. */
void mc_emit_region_box(const mc_emit_shards_t *sh, const mc_task_t *task, int k, int gpu, int buf,
                        const mc_box_t *region, mc_rt_box_t *out);

#endif
