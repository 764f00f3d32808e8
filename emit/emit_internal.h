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

/* Lanes shared by their estimated lockstep cost (lane_share.c). A user is a group of a tree's
 * edges that moves in one lane (the whole tree, or its edges from one parent over links of one
 * width), numbered by the caller below nunits; it moves in micro-steps [first, last) of its phase,
 * each taking about step_s seconds. */
typedef struct mc_emit_share {
    int *head, *stamp;          /* per GPU and lane: its latest entry in phase stamp, else none */
    int *ent_unit, *ent_next;   /* entries: a user of a lane on a GPU, the GPU's next entry */
    int nent, ent_cap;
    int *mark, mark_cur;        /* per user: seen in the current look-up */
    int *first, *last;          /* per user: its micro-steps */
    double *step_s;             /* per user: the time of one of its steps */
    int *mem, mem_cap, *cut, cut_cap; /* scratch */
} mc_emit_share_t;

void mc_emit_share_init(mc_emit_share_t *sh, int ngpus, int nunits);
void mc_emit_share_free(mc_emit_share_t *sh);
void mc_emit_share_unit(mc_emit_share_t *sh, int unit, int first, int last, double step_s);
/* The lane for user `unit` on GPUs gpus[0..n) in phase cur (> 0): the one where the estimated end
 * of the last of its users, itself included, plus what they all wait for each other is least (the
 * end alone piles short users onto one lane, each costing the others nothing in the estimate but
 * something in the run); on a tie, one whose users there have its bottleneck (apart[l] == 0:
 * planned rates may say less than a tree alone on its links moves at), then the fewest users. */
int mc_emit_share_pick(mc_emit_share_t *sh, const int *gpus, int n, int unit, int cur,
                       const unsigned char *apart);
/* Makes `unit` a user of lane l on gpus[0..n) in phase cur. */
void mc_emit_share_take(mc_emit_share_t *sh, const int *gpus, int n, int l, int unit, int cur);

#endif
