/* The benchmark runner: for each case of a suite, loads its topology and task, computes the lower
 * bound once, then for each strategy synthesizes (timed), validates, simulates and measures peak
 * memory and the bytes each GPU receives, giving one row per case and strategy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "emit/emit.h"
#include "sim/sim.h"
#include "sim/sim_exec.h"

/* Times the plans the runtime executes for s: with their dependency graph (mpi, loopback), in
 * lockstep steps (code emitted without dependency tables) and on the nccl backend's lanes, each
 * within the schedule simulation's allowance work_max (0: none). A schedule the lowering refuses
 * (a tree rooted where no data is), plans past the allowance, and a schedule whose trees keep
 * chunks in flight (NCCL's collective kernels, which the runtime's plans do not reproduce:
 * their executed time would not be of the system the row names) keep 0: the row says so. */
static void exec_time(const mc_sched_t *s, const mc_topo_t *topo, int64_t work_max,
                      mc_bench_row_t *row)
{
    static const int orders[3] = {MC_RT_ORDER_DEPS, MC_RT_ORDER_STEPS, MC_RT_ORDER_NCCL};
    double *out[3] = {&row->exec_s, &row->exec_steps_s, &row->exec_nccl_s};
    mc_emit_plans_t *P = NULL;
    mc_err_t err = {0};
    if (mc_sched_inflight(s) > 1 || !mc_sim_exec_fits(s, work_max) ||
        mc_emit_lower_on(s, topo, &P, &err) != MC_OK)
        return;
    for (int k = 0; k < 3; k++) {
        mc_sim_exec_result_t x;
        int64_t work = work_max;
        if (mc_sim_exec_bounded(s, topo, P->nranks, P->plans, P->gpus, orders[k],
                                work_max ? &work : NULL, &x, &err) == MC_OK)
            *out[k] = x.makespan_s;
        mc_sim_exec_result_free(&x);
    }
    mc_emit_plans_free(P);
}

/* Synthesizes, checks and times one strategy on a loaded case into row. */
static void run_strategy(const mc_strategy_t *strat, mc_task_t *task, const mc_topo_t *topo,
                         const mc_bench_opts_t *opts, mc_bench_row_t *row)
{
    mc_sched_t *s = NULL;
    mc_sim_result_t sim = {0};
    mc_err_t err = {0};
    double t0 = mc_now();
    mc_status_t st = strat->fn(task, topo, &opts->synth, &s, &err);
    row->synth_s = mc_now() - t0;
    if (st == MC_OK) {
        int64_t work = opts->synth.sim_work;
        row->nviolations = mc_sched_validate(s, topo, NULL);
        st = mc_sim_run_bounded(s, topo, work ? &work : NULL, &sim, &err);
        row->estimated = st == MC_ERR_TIMEOUT;
        if (row->estimated)
            st = MC_OK;
    }
    if (st != MC_OK) {
        row->failed = 1;
        row->not_applicable = st == MC_ERR_UNSUPPORTED;
        /* One line per row: the first line of the message (the violations follow it). */
        snprintf(row->error, sizeof(row->error), "%s", err.msg[0] ? err.msg : mc_status_str(st));
        row->error[strcspn(row->error, "\n")] = '\0';
        goto out;
    }
    row->sim_s = sim.makespan_s;
    if (!row->estimated) /* past the allowance, the plans (larger still) are not timed either */
        exec_time(s, topo, opts->synth.sim_work, row);
    row->ratio = row->lower_bound_s > 0 ? sim.makespan_s / row->lower_bound_s : 1.0;
    row->algbw_gbps = sim.makespan_s > 0 ? (double)row->bytes / sim.makespan_s / 1e9 : 0;
    uint64_t *moved = mc_xcalloc((size_t)topo->ngpus, sizeof(uint64_t));
    for (int t = 0; t < s->ntrees; t++)
        for (int e = 0; e < s->trees[t].nedges; e++)
            moved[s->trees[t].edges[e].child] += s->trees[t].bytes;
    for (int g = 0; g < topo->ngpus; g++) {
        uint64_t m = mc_sched_peak_mem(s, g);
        if (m > row->peak_mem)
            row->peak_mem = m;
        if (moved[g] > row->moved_max)
            row->moved_max = moved[g];
    }
    free(moved);
out:
    mc_sim_result_free(&sim);
    mc_sched_free(s);
}

static void progress(const mc_bench_opts_t *opts, const char *suite, const char *cas,
                     const char *strategy)
{
    if (!opts->progress)
        return;
    fprintf(opts->progress, "\r\033[Kbench: %s/%s %s ...", suite, cas, strategy);
    fflush(opts->progress);
}

/* Loads a case's topology and task (split, checked against the topology). Errors that do not
 * already point into the case file get its line. */
static mc_status_t load_case(const mc_bench_case_t *c, const char *suite_path, mc_topo_t **topo,
                             mc_task_t **task, mc_err_t *err)
{
    mc_status_t st = mc_topo_load(c->topo_path, topo, err);
    if (st == MC_OK)
        st = mc_task_parse_text(c->task_text, suite_path, task, err);
    if (st == MC_OK)
        st = mc_task_check_topo(*task, *topo, err);
    if (st == MC_OK)
        st = mc_task_split(*task, err);
    if (st != MC_OK && strncmp(err->msg, suite_path, strlen(suite_path))) {
        char msg[sizeof(err->msg)];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        mc_err_set(err, st, "%s:%d: case %s: %s", suite_path, c->line, c->name, msg);
    }
    return st;
}

mc_status_t mc_bench_run_suite(const mc_bench_suite_t *suite, const mc_bench_opts_t *opts,
                               mc_bench_row_t **rows, int *nrows, int *cap, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    for (int ci = 0; ci < suite->ncases && st == MC_OK; ci++) {
        const mc_bench_case_t *c = &suite->cases[ci];
        if (!mc_bench_match(opts->cases, c->name))
            continue;
        mc_topo_t *topo = NULL;
        mc_task_t *task = NULL;
        mc_bound_t bound;
        mc_cost_topo_t *ct = NULL;
        st = load_case(c, suite->path, &topo, &task, err);
        if (st == MC_OK)
            st = mc_task_bound(task, topo, &bound, err);
        if (st == MC_OK)
            ct = mc_cost_topo_new(topo);
        /* A calibration case runs the one strategy that writes its operation. */
        const mc_strategy_t *via = c->op ? mc_synth_find(c->via) : NULL;
        int nstrat = via ? 1 : opts->nstrategies;
        for (int k = 0; k < nstrat && st == MC_OK; k++) {
            const mc_strategy_t *strat = via ? via : opts->strategies[k];
            progress(opts, suite->name, c->name, strat->name);
            MC_GROW(*rows, *cap, *nrows + 1);
            mc_bench_row_t *row = &(*rows)[(*nrows)++];
            *row = (mc_bench_row_t){.suite = suite->name, .cas = c->name, .strategy = strat->name,
                                    .bytes = mc_task_total_bytes(task),
                                    .lower_bound_s = bound.seconds, .calib = via ? c : NULL};
            run_strategy(strat, task, topo, opts, row);
            mc_bench_cost_row(ct, task, row);
            if (via && !row->failed)
                mc_bench_calib_fill(row, task);
        }
        mc_cost_topo_free(ct);
        mc_task_free(task);
        mc_topo_free(topo);
    }
    if (opts->progress) {
        fprintf(opts->progress, "\r\033[K");
        fflush(opts->progress);
    }
    return st;
}
