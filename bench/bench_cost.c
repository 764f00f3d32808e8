/* The cost model's column in 'meshcast bench': each row's analytic estimate (cost/cost.h) next to
 * the simulated time of the schedule the strategy made, and a summary line per strategy with the
 * worst and the median relative error. Kept apart from the runner and the table so that other
 * columns merge without touching it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cost/cost.h"

void mc_bench_cost_row(mc_cost_topo_t *ct, const mc_task_t *task, mc_bench_row_t *row)
{
    mc_cost_opts_t o = {0};
    mc_cost_t c;
    row->cost_s = -1;
    if (mc_cost_strategy_parse(row->strategy, &o.strategy) == 0 &&
        mc_cost_estimate(ct, task, &o, &c, NULL) == MC_OK)
        row->cost_s = c.seconds;
}

/* Relative error of the estimate against the simulated time; -1 when the row has none. */
static double cost_err(const mc_bench_row_t *r)
{
    if (r->failed || r->cost_s < 0 || !(r->sim_s > 0))
        return -1;
    return fabs(r->cost_s - r->sim_s) / r->sim_s;
}

const char *mc_bench_cost_cell(const mc_bench_row_t *r, char *buf, size_t len)
{
    double e = cost_err(r);
    if (e < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%+.1f%%", 100 * (r->cost_s - r->sim_s) / r->sim_s);
    return buf;
}

const char *mc_bench_cost_csv(const mc_bench_row_t *r, char *buf, size_t len)
{
    if (cost_err(r) < 0)
        snprintf(buf, len, ",");
    else
        snprintf(buf, len, "%.9g,%.6f", r->cost_s, (r->cost_s - r->sim_s) / r->sim_s);
    return buf;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void mc_bench_print_cost_summary(FILE *out, const mc_bench_row_t *rows, int n)
{
    double *errs = mc_xmalloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(rows[j].strategy, rows[i].strategy);
        if (seen)
            continue;
        int k = 0, worst = -1;
        for (int j = i; j < n; j++) {
            double e = cost_err(&rows[j]);
            if (strcmp(rows[j].strategy, rows[i].strategy) || e < 0)
                continue;
            if (worst < 0 || e > cost_err(&rows[worst]))
                worst = j;
            errs[k++] = e;
        }
        if (!k)
            continue;
        mc_sort(errs, (size_t)k, sizeof(double), cmp_double);
        double median = k % 2 ? errs[k / 2] : (errs[k / 2 - 1] + errs[k / 2]) / 2;
        fprintf(out, "cost model %-12s worst error %5.1f%% (%s/%s), median %5.1f%% over %d rows\n",
                rows[i].strategy, 100 * cost_err(&rows[worst]), rows[worst].suite,
                rows[worst].cas, 100 * median, k);
    }
    free(errs);
}
