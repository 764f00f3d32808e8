/* emit: turns a schedule into what executes it. The lowering gives every rank a runtime plan
 * (runtime/runtime.h): trees become micro-steps, pieces become strided boxes of the shards with
 * their dimensions merged, staging lives in a workspace whose size is known in advance. The
 * generator prints those plans as static tables in a CUDA source with pack kernels specialized to
 * the boxes (DESIGN.md section 7). The pattern helpers fill source shards and check destination
 * shards for `meshcast run`.
 *
 * Ranks are the GPUs the schedule involves (in a mesh or a tree), numbered in GPU order: rank r
 * runs GPU gpus[r]. A rank's SRC buffer is its source tiles, one per tensor in task order,
 * each row-major, concatenated (a tensor whose source mesh lacks the rank adds nothing); DST is the
 * same for the destination tiles. */
#ifndef MC_EMIT_H
#define MC_EMIT_H

#include "runtime/runtime.h"
#include "sched/sched.h"
#include "util/util.h"

typedef struct mc_emit_plans {
    int nranks;
    mc_rt_plan_t *plans;   /* one per rank; arrays owned */
    int *gpus;             /* rank -> global GPU id */
    int nphase_steps;      /* global micro-steps, all phases */
    int only;              /* -1: every rank's plan; else the one rank whose plan was made
                            * (mc_emit_lower_rank), the others left empty */
} mc_emit_plans_t;

/* Lowers a schedule (task split) into one plan per rank. A tree rooted at a GPU that neither
 * holds its piece nor is one of its destinations is refused (MC_ERR_UNSUPPORTED). */
mc_status_t mc_emit_lower(const mc_sched_t *s, mc_emit_plans_t **out, mc_err_t *err);
/* The same on topo (may be NULL), which tells the edges' speeds: when a lane per edge and per tree
 * both take more than MC_RT_MAX_LANES, trees of one speed to each parent's children take a lane
 * each, a few sharing, or else edges of one speed share lanes rather than trees of one pace
 * (emit/lower.c, assign_lanes). Code generation, run, sim and bench lower on the topology. */
mc_status_t mc_emit_lower_on(const mc_sched_t *s, const mc_topo_t *topo, mc_emit_plans_t **out,
                             mc_err_t *err);
/* Makes rank `rank`'s plan only, the same as mc_emit_lower_on's for that rank (on topo, may be
 * NULL), at the cost of the trees that touch its GPU (the others are only measured: their steps
 * and links order the phases; the lanes are still chosen over every tree). Errors of trees the
 * rank takes no part in go unreported: validate first. A rank the schedule lacks is
 * MC_ERR_USAGE. */
mc_status_t mc_emit_lower_rank(const mc_sched_t *s, const mc_topo_t *topo, int rank,
                               mc_emit_plans_t **out, mc_err_t *err);
/* Makes the plans of ranks lo .. hi-1 only (hi past the last rank: to the end), each the same as
 * mc_emit_lower_on's for that rank, the others left empty (only is -1): lowering a large schedule
 * in batches holds one batch's plans at a time. */
mc_status_t mc_emit_lower_ranks(const mc_sched_t *s, const mc_topo_t *topo, int lo, int hi,
                                mc_emit_plans_t **out, mc_err_t *err);
void mc_emit_plans_free(mc_emit_plans_t *p);

/* What the generated files say about where they come from. */
typedef struct mc_emit_meta {
    const char *name;          /* prefix of every generated symbol: a C identifier */
    const char *version;       /* meshcast's version */
    const char *task_text;     /* the task in task-file form */
    const char *strategy;
    uint64_t topo_fingerprint;
} mc_emit_meta_t;

/* Whether name is a C identifier usable as a prefix. */
int mc_emit_name_ok(const char *name);
/* The generated header and CUDA source for plans; the same input gives the same bytes. */
void mc_emit_gen(const mc_emit_meta_t *m, const mc_emit_plans_t *P, mc_buf_t *h, mc_buf_t *cu);
/* The same, handing the source to flush(ctx, cu) whenever `every` bytes of rank tables have
 * gathered in cu (flush takes cu's bytes and empties it; the caller flushes what is left at the
 * end): the source of every rank of the 8192-GPU schedule is 2.9 GB. mc_emit_files flushes every
 * MC_EMIT_FLUSH_BYTES. */
#define MC_EMIT_FLUSH_BYTES (16u << 20)
typedef void (*mc_emit_flush_fn)(void *ctx, mc_buf_t *cu);
void mc_emit_gen_flushed(const mc_emit_meta_t *m, const mc_emit_plans_t *P, mc_buf_t *h,
                         mc_buf_t *cu, size_t every, mc_emit_flush_fn flush, void *ctx);
/* mc_emit_gen_flushed of every rank of s on topo without every plan at once: the ranks are
 * lowered (mc_emit_lower_ranks) and generated `batch` at a time, the same bytes. Each batch walks
 * every tree again (a rank's plan depends on the whole schedule), so it costs a pass over the
 * schedule per batch; it holds one batch's plans. */
#define MC_EMIT_BATCH_RANKS 1024
mc_status_t mc_emit_gen_batched(const mc_emit_meta_t *m, const mc_sched_t *s,
                                const mc_topo_t *topo, int batch, mc_buf_t *h, mc_buf_t *cu,
                                size_t every, mc_emit_flush_fn flush, void *ctx, mc_err_t *err);

typedef struct mc_emit_file {
    char *name;                /* file name inside the output folder */
    mc_buf_t data;             /* empty when written already */
    size_t size;               /* its bytes */
    int written;               /* written into the folder as it was generated */
} mc_emit_file_t;

/* Refuses (MC_ERR_INVALID, naming the schedule file name) a schedule whose chunk transfers
 * (chunks x edges, summed over trees) exceed 65,536 plus one per 4 KiB the task delivers: the
 * generated tables grow with them. Call it before mc_emit_files. */
mc_status_t mc_emit_check_size(const mc_sched_t *s, const char *name, mc_err_t *err);

/* Lowers s on topo (mc_emit_lower_on) and generates NAME.h and NAME.cu, plus with standalone the
 * runtime sources the code needs (runtime.h, rt_internal.h, copy_kernel.cuh, plan.c, graph.c,
 * cuda_exec.cu). With rank >= 0 only that rank is lowered (mc_emit_lower_rank) and the code holds
 * its tables only; else the ranks are lowered in batches (mc_emit_gen_batched). With dir (may be
 * NULL), NAME.cu is written into dir (created if missing, atomically) as it is generated rather
 * than held (`written`); mc_emit_write writes the rest. */
mc_status_t mc_emit_files(const mc_sched_t *s, const mc_topo_t *topo, const char *name,
                          const char *version, int standalone, int rank, const char *dir,
                          mc_emit_file_t **files, int *nfiles, mc_err_t *err);
void mc_emit_files_free(mc_emit_file_t *files, int nfiles);
/* Writes the files into dir (created if missing), each atomically; those written already are
 * left. */
mc_status_t mc_emit_write(const char *dir, const mc_emit_file_t *files, int nfiles, mc_err_t *err);
/* Compares the files with those in dir; returns how many are missing or differ, naming each in
 * report. */
int mc_emit_stale(const char *dir, const mc_emit_file_t *files, int nfiles, mc_buf_t *report);

/* Fills GPU gpu's SRC buffer with the pattern: every element's bytes derive from its tensor and its
 * global row-major index, so any misplaced byte shows. */
void mc_emit_fill_src(const mc_task_t *task, int gpu, void *buf);
/* Fills GPU gpu's DST buffer with the complement of the pattern, so a byte never written is wrong. */
void mc_emit_poison_dst(const mc_task_t *task, int gpu, void *buf);
/* Checks every byte of GPU gpu's DST buffer against the pattern; returns the number of wrong bytes
 * and appends a line for each of the first max wrong elements to report (may be NULL). */
uint64_t mc_emit_check_dst(const mc_task_t *task, int gpu, const void *buf, mc_buf_t *report,
                           int max);

/* The pattern as the runtime driver's hooks (mc_rt_drive) for plans P of task: report gets the
 * first wrong elements (5 lines at most). */
typedef struct mc_emit_pattern {
    const mc_task_t *task;
    const mc_emit_plans_t *P;
    mc_buf_t report;
} mc_emit_pattern_t;
void mc_emit_pattern_hooks(mc_emit_pattern_t *pt, mc_rt_drive_hooks_t *h);

#endif
