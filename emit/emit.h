/* emit: turns a schedule into what executes it. The lowering gives every rank a runtime plan
 * (runtime/runtime.h): trees become micro-steps, pieces become strided boxes of the shards with
 * their dimensions merged, staging lives in a workspace whose size is known in advance. The
 * generator prints those plans as static tables in a CUDA source with pack kernels specialized to
 * the boxes (DESIGN.md section 7). The pattern helpers fill source shards and check destination
 * shards for `meshcast run`.
 *
 * Ranks are global GPU ids. A rank's SRC buffer is its source tiles, one per tensor in task order,
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
    int nphase_steps;      /* global micro-steps, all phases */
} mc_emit_plans_t;

/* Lowers a schedule (task split) into one plan per rank. A tree rooted at a GPU that neither
 * holds its piece nor is one of its destinations is refused (MC_ERR_UNSUPPORTED). */
mc_status_t mc_emit_lower(const mc_sched_t *s, mc_emit_plans_t **out, mc_err_t *err);
void mc_emit_plans_free(mc_emit_plans_t *p);

/* Fills rank's SRC buffer with the pattern: every element's bytes derive from its tensor and its
 * global row-major index, so any misplaced byte shows. */
void mc_emit_fill_src(const mc_task_t *task, int rank, void *buf);
/* Fills rank's DST buffer with the complement of the pattern, so a byte never written is wrong. */
void mc_emit_poison_dst(const mc_task_t *task, int rank, void *buf);
/* Checks every byte of rank's DST buffer against the pattern; returns the number of wrong bytes
 * and appends a line for each of the first max wrong elements to report (may be NULL). */
uint64_t mc_emit_check_dst(const mc_task_t *task, int rank, const void *buf, mc_buf_t *report,
                           int max);

#endif
