/* synth: strategies that turn a task into a schedule (DESIGN.md section 5). Every strategy has the
 * same signature and produces the same schedule type, so 'meshcast bench' can compare them in one
 * run; mc_synth() runs one and validates its result before handing it back. */
#ifndef MC_SYNTH_H
#define MC_SYNTH_H

#include <stdint.h>

#include "layout/layout.h"
#include "sched/sched.h"
#include "sim/sim.h"
#include "topo/topo.h"
#include "util/util.h"

typedef struct mc_synth_opts {
    double budget_s;        /* wall-clock budget for the optimizer; 0 (the default): see
                             * mc_synth_budget_s */
    uint64_t rlimit;        /* Z3 resource limit; 0 = none. Set it for deterministic results */
    uint64_t memory_limit;  /* per-device peak bytes; 0 = none */
    uint64_t chunk_bytes;   /* pipeline chunk size; 0 = the strategy's default */
    int progress;           /* print a progress line on stderr */
    int64_t sim_work;       /* allowance of the simulation that synth and bench report
                             * (mc_sim_run_bounded's units); 0 = none. Past it, the time is an
                             * estimate: where the simulation had got to */
    mc_sim_memo_t *memo;    /* NULL, or a memo of simulations on this call's topology that the
                             * strategy may time through and fill (meshcast's referee does), so
                             * that the caller's simulation of the schedule it returns is
                             * answered from the memo when the referee ran that very schedule to
                             * the end: the same outcome, not simulated twice */
    int inflight;           /* chunks in flight per edge of the trees of the strategies that model
                             * NCCL's collective kernels, chains chunked for it
                             * (docs/schedule-format.md, `inflight`): 0 (the default) NCCL's 8;
                             * 1 as meshcast's runtime sends them (a chunk once the one before it
                             * is through), which the meshcast strategy uses for the baselines'
                             * plans it races. The meshcast strategy's own trees keep 1 */
} mc_synth_opts_t;

#define MC_SYNTH_OPTS_DEFAULT {0, 0, 0, 0, 0, MC_SIM_REPORT_WORK, NULL, 0}

/* The optimizer's wall-clock budget in seconds: the caller's, else 10 s, except that an rlimit
 * given alone is the only bound (MC_SYNTH_NO_BUDGET_S), so that its results are the same on any
 * machine however slow or busy. */
#define MC_SYNTH_BUDGET_DEFAULT_S 10.0
#define MC_SYNTH_NO_BUDGET_S 1e9
double mc_synth_budget_s(const mc_synth_opts_t *o);

/* Sets one option from its command-line text: key is "budget" (seconds), "rlimit",
 * "memory-limit" or "chunk" (bytes, with an optional 1024-based suffix K, M, G, T), "in-flight"
 * (1 to MC_SCHED_MAX_INFLIGHT), "sim-work". Bad values are MC_ERR_USAGE with a message naming
 * the option. */
mc_status_t mc_synth_opts_set(mc_synth_opts_t *o, const char *key, const char *value,
                              mc_err_t *err);

/* task must be split; the schedule borrows it. */
typedef mc_status_t (*mc_synth_fn)(mc_task_t *task, const mc_topo_t *topo,
                                   const mc_synth_opts_t *opts, mc_sched_t **out, mc_err_t *err);

typedef struct mc_strategy {
    const char *name;
    const char *summary;
    mc_synth_fn fn;
    int yardstick;  /* not a resharding system (NCCL's own collectives, for calibration): left out
                     * of bench's default list */
} mc_strategy_t;

/* The strategies built in, in bench order; *n gets their count. */
const mc_strategy_t *mc_synth_strategies(int *n);
const mc_strategy_t *mc_synth_find(const char *name);

/* Runs a strategy and validates the result (an invalid schedule is an MC_ERR_INTERNAL error that
 * lists the violations). */
mc_status_t mc_synth(const char *strategy, mc_task_t *task, const mc_topo_t *topo,
                     const mc_synth_opts_t *opts, mc_sched_t **out, mc_err_t *err);

/* With limit != 0: MC_OK when no GPU's peak (mc_sched_peak_mem) exceeds it, else MC_ERR_INVALID
 * naming the strategy, the GPU and the bytes it would need. mc_synth applies it to every
 * strategy, so each respects --memory-limit or says that it cannot. */
mc_status_t mc_synth_check_memory(const mc_sched_t *s, const mc_topo_t *topo, uint64_t limit,
                                  mc_err_t *err);

/* The strategies (one file each). */
mc_status_t mc_synth_p2p(mc_task_t *, const mc_topo_t *, const mc_synth_opts_t *, mc_sched_t **,
                         mc_err_t *);
mc_status_t mc_synth_p2p_lb(mc_task_t *, const mc_topo_t *, const mc_synth_opts_t *,
                            mc_sched_t **, mc_err_t *);
mc_status_t mc_synth_alpa_p2p(mc_task_t *, const mc_topo_t *, const mc_synth_opts_t *,
                              mc_sched_t **, mc_err_t *);
mc_status_t mc_synth_alpa_bcast(mc_task_t *, const mc_topo_t *, const mc_synth_opts_t *,
                                mc_sched_t **, mc_err_t *);
mc_status_t mc_synth_alpa_bcast_rounds(mc_task_t *, const mc_topo_t *, const mc_synth_opts_t *,
                                       mc_sched_t **, mc_err_t *);
mc_status_t mc_synth_xla(mc_task_t *, const mc_topo_t *, const mc_synth_opts_t *, mc_sched_t **, mc_err_t *);
mc_status_t mc_synth_collectives(mc_task_t *, const mc_topo_t *, const mc_synth_opts_t *, mc_sched_t **, mc_err_t *);
mc_status_t mc_synth_nccl_ring(mc_task_t *, const mc_topo_t *, const mc_synth_opts_t *,
                               mc_sched_t **, mc_err_t *);
mc_status_t mc_synth_meshcast(mc_task_t *, const mc_topo_t *, const mc_synth_opts_t *,
                              mc_sched_t **, mc_err_t *);

#endif
