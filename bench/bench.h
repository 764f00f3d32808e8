/* bench: benchmark suites (case files, docs/bench-format.md) and the runner behind
 * 'meshcast bench'. A suite is one file bench/NAME.cases; each case names a topology and holds a
 * task in task-file form. The runner synthesizes every case with every strategy, validates and
 * simulates the schedule, and reports one row per case and strategy. */
#ifndef MC_BENCH_H
#define MC_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "cost/cost.h"
#include "synth/synth.h"
#include "util/util.h"

typedef struct mc_bench_case {
    char *name;
    char *desc;         /* the rest of the 'case' line, may be empty */
    char *topo_path;    /* resolved against the case file's folder */
    char *task_text;    /* task-file text; lines outside the case are blank so that errors carry
                         * the case file's line numbers */
    int line;           /* line of the 'case' directive */
    /* A calibration case ('measured OP GBPS STRATEGY SOURCE', docs/bench-format.md): the
     * nccl-tests operation, its published bus bandwidth, the strategy that writes it as a
     * schedule, where the figure comes from. op is NULL for other cases. */
    char *op, *via, *source;
    double measured_gbps;
} mc_bench_case_t;

typedef struct mc_bench_suite {
    char *name;
    char *path;
    int default_run;    /* run by 'meshcast bench' without --suite */
    int ncases, case_cap;
    mc_bench_case_t *cases;
} mc_bench_suite_t;

/* Reads a case file. Errors name the file and line (MC_ERR_PARSE). */
mc_status_t mc_bench_suite_load(const char *path, mc_bench_suite_t **out, mc_err_t *err);
void mc_bench_suite_free(mc_bench_suite_t *s);

/* The case files in dir (*.cases), sorted by name; caller frees each string and the array. */
mc_status_t mc_bench_list(const char *dir, char ***paths, int *n, mc_err_t *err);

/* True when a case name matches a comma-separated list of shell patterns (NULL matches all). */
int mc_bench_match(const char *patterns, const char *name);

typedef struct mc_bench_row {
    const char *suite, *cas, *strategy; /* borrowed from the suite and strategy table */
    uint64_t bytes;         /* bytes delivered: piece bytes x destinations */
    double lower_bound_s, sim_s, ratio, algbw_gbps, synth_s;
    uint64_t peak_mem;      /* max over GPUs of mc_sched_peak_mem */
    uint64_t moved_max;     /* max over GPUs of the bytes its tree edges deliver to it */
    const mc_bench_case_t *calib; /* the case, when it is a calibration case */
    double busbw_gbps;      /* calibration: the simulated bus bandwidth, as nccl-tests counts it */
    uint64_t op_bytes;      /* calibration: nccl-tests' message size S */
    int nviolations;        /* mc_sched_validate's count; 0 = valid */
    double exec_s;          /* the lowered plans as the runtime executes them (mc_sim_exec), 0 when
                             * they could not be timed */
    double exec_steps_s;    /* the same plans run in lockstep micro-steps (code emitted without
                             * dependency tables) */
    double exec_nccl_s;     /* the same plans as the nccl backend runs them (their lanes) */
    double cost_s;          /* the cost model's estimate for this strategy, -1 if it has none */
    int failed;             /* the strategy or the simulator returned an error */
    int estimated;          /* the simulation stopped at its allowance (--sim-work): sim_s is
                             * where it had got to, a lower bound */
    int not_applicable;     /* ... and it was MC_ERR_UNSUPPORTED: the strategy does not handle this
                             * kind of task (a same-mesh strategy on a cross-mesh case) */
    char error[1024];
} mc_bench_row_t;

typedef struct mc_bench_opts {
    mc_synth_opts_t synth;
    int nstrategies;
    const mc_strategy_t **strategies;
    const char *cases;      /* patterns, NULL for all */
    FILE *progress;         /* a terminal to print a progress line on, or NULL */
} mc_bench_opts_t;

/* Runs the matching cases of a suite with every strategy, appending rows to *rows. A case that
 * cannot be loaded (topology or task) is an error; a strategy that fails gives a failed row. */
mc_status_t mc_bench_run_suite(const mc_bench_suite_t *suite, const mc_bench_opts_t *opts,
                               mc_bench_row_t **rows, int *nrows, int *cap, mc_err_t *err);

/* Output. The geometric-mean rows (one per strategy, over its rows that did not fail) follow the
 * case rows in the table and the CSV. */
void mc_bench_print_table(FILE *out, const mc_bench_row_t *rows, int n);
void mc_bench_print_csv(FILE *out, const mc_bench_row_t *rows, int n);
/* Calibration (bench_calib.c). Fills a calibration row's message size and simulated bus
 * bandwidth from its task and simulated time, as nccl-tests computes them. */
void mc_bench_calib_fill(mc_bench_row_t *row, const mc_task_t *task);
/* The comparison with the published figures, one line per calibration row, on out (NULL: only
 * counts; no calibration row: prints nothing); returns the number of bandwidth-bound rows
 * (message of at least 64 MiB) off by more than 10%. */
int mc_bench_print_calib(FILE *out, const mc_bench_row_t *rows, int n);
/* A grouped bar chart of time/bound per case and strategy, written atomically. */
mc_status_t mc_bench_write_svg(const char *path, const mc_bench_row_t *rows, int n, mc_err_t *err);

/* The cost model's column (bench_cost.c): fills row->cost_s for the row's strategy; the cell is
 * the estimate's error relative to the simulated time ("-" without one); the summary prints one
 * line per strategy with its worst and median error. */
void mc_bench_cost_row(mc_cost_topo_t *ct, const mc_task_t *task, mc_bench_row_t *row);
const char *mc_bench_cost_cell(const mc_bench_row_t *r, char *buf, size_t len);
void mc_bench_print_cost_summary(FILE *out, const mc_bench_row_t *rows, int n);

#endif
