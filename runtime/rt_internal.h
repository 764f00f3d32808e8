/* Helpers shared by the runtime's backends; not installed. */
#ifndef MC_RT_INTERNAL_H
#define MC_RT_INTERNAL_H

#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records status and a printf-style message in err (may be NULL); returns status. */
int mc_rt_fail(mc_rt_err_t *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Monotonic seconds, for the deadlines of waits. */
double mc_rt_now(void);

/* Contiguous address of a SEND's source or a RECV's destination in bufs. */
unsigned char *mc_rt_ref_ptr(const mc_rt_plan_t *plan, const mc_rt_ref_t *ref,
                             const mc_rt_buffers_t *bufs);

/* The micro-step op i of plan belongs to, for messages. */
uint32_t mc_rt_op_step(const mc_rt_plan_t *plan, uint32_t i);

/* How the loopback stepping moves bytes: copy runs a COPY op, move a send's bytes into the
 * matching receive. Host memory or one GPU. */
typedef struct mc_rt_mover {
    int (*copy)(void *ctx, const mc_rt_plan_t *plan, const mc_rt_op_t *op,
                const mc_rt_buffers_t *bufs, mc_rt_err_t *err);
    int (*move)(void *ctx, void *dst, const void *src, uint64_t bytes, mc_rt_err_t *err);
    void *ctx;
} mc_rt_mover_t;

/* Runs every rank's graph (order: MC_RT_ORDER_*); seed 0 starts ready ops oldest first, any other
 * seed in a pseudo-random order drawn from it (tests: any order must give the same bytes). */
int mc_rt_loopback_exec(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                        const mc_rt_mover_t *mv, int order, uint64_t seed, mc_rt_err_t *err);

/* mc_rt_run_loopback in a given order and pick seed (mc_rt_loopback_exec). */
int mc_rt_run_loopback_order(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                             int order, uint64_t seed, mc_rt_err_t *err);

#ifdef MPI_VERSION
/* After a failed wait: cancels the n requests still pending (null ones are skipped) and gives MPI
 * a moment to let go of their buffers. Returns 1 when some are still held (a send no peer took, a
 * transfer under way): MPI may still write or read those buffers, so they must outlive the job,
 * which the caller aborts. */
int mc_rt_mpi_release(int n, MPI_Request *reqs);
#endif

#ifdef __cplusplus
}
#endif

#endif
