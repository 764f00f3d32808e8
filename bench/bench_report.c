/* Benchmark output: the table, the CSV (header fixed by the issue), the geometric mean per
 * strategy, and an SVG bar chart of time over lower bound. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

typedef struct geo {
    const char *strategy;
    int n, total, invalid;
    double bound, sim, ratio, algbw, synth; /* sums of logs */
} geo_t;

#define GEO_MAX 64 /* strategies in one report */

/* Time-like values can be 0 (nothing to move, instant synthesis): floor them for the log. */
static double lg(double x)
{
    return log(x > 1e-12 ? x : 1e-12);
}

/* One entry per strategy, in order of first appearance (n/a rows count for the order only);
 * returns the count. */
static int geomeans(const mc_bench_row_t *rows, int n, geo_t *g)
{
    int ng = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < ng && strcmp(g[k].strategy, rows[i].strategy))
            k++;
        if (k == GEO_MAX)
            continue;
        if (k == ng)
            g[ng++] = (geo_t){.strategy = rows[i].strategy};
        if (rows[i].not_applicable)
            continue;
        g[k].total++;
        if (rows[i].failed || rows[i].nviolations) {
            g[k].invalid++;
            if (rows[i].failed)
                continue;
        }
        g[k].n++;
        g[k].bound += lg(rows[i].lower_bound_s);
        g[k].sim += lg(rows[i].sim_s);
        g[k].ratio += lg(rows[i].ratio);
        g[k].algbw += lg(rows[i].algbw_gbps);
        g[k].synth += lg(rows[i].synth_s);
    }
    return ng;
}

/* The entries of geomeans for strategies with a row that counts (not all n/a): the geomean lines
 * of the table and the CSV. */
static int geomeans_counted(const mc_bench_row_t *rows, int n, geo_t *g)
{
    int ng = geomeans(rows, n, g), m = 0;
    for (int k = 0; k < ng; k++)
        if (g[k].total)
            g[m++] = g[k];
    return m;
}

static double mean_of(double sum_log, int n)
{
    return n ? exp(sum_log / n) : 0;
}

static const char *valid_str(const mc_bench_row_t *r)
{
    return r->not_applicable ? "n/a" : r->failed ? "error" : r->nviolations ? "no" : "yes";
}

/* Column widths for the case and strategy names. */
static void name_widths(const mc_bench_row_t *rows, int n, int *cw, int *sw)
{
    *cw = (int)strlen("geomean");
    *sw = (int)strlen("strategy");
    for (int i = 0; i < n; i++) {
        if ((int)strlen(rows[i].cas) > *cw)
            *cw = (int)strlen(rows[i].cas);
        if ((int)strlen(rows[i].strategy) > *sw)
            *sw = (int)strlen(rows[i].strategy);
    }
}

/* The exec column: the executed plans' time over the bound, "-" when they could not be timed. */
static const char *exec_cell(const mc_bench_row_t *r, char *b, size_t n)
{
    if (r->exec_s > 0 && r->lower_bound_s > 0)
        snprintf(b, n, "%.2f", r->exec_s / r->lower_bound_s);
    else
        snprintf(b, n, "-");
    return b;
}

/* Per suite, the largest executed / simulated time: how far the runtime is from the model. */
static void exec_footer(FILE *out, const mc_bench_row_t *rows, int n)
{
    for (int i = 0; i < n; i++) {
        int first = 1, worst = -1;
        for (int j = 0; j < i && first; j++)
            first = strcmp(rows[j].suite, rows[i].suite) != 0;
        if (!first)
            continue;
        for (int j = i; j < n; j++) {
            const mc_bench_row_t *r = &rows[j];
            if (strcmp(r->suite, rows[i].suite) || r->failed || r->exec_s <= 0 || r->sim_s <= 0)
                continue;
            if (worst < 0 || r->exec_s / r->sim_s > rows[worst].exec_s / rows[worst].sim_s)
                worst = j;
        }
        if (worst >= 0)
            fprintf(out, "%s: executed plan / simulated schedule at most %.3f (%s, %s)\n",
                    rows[i].suite, rows[worst].exec_s / rows[worst].sim_s, rows[worst].cas,
                    rows[worst].strategy);
    }
}

void mc_bench_print_table(FILE *out, const mc_bench_row_t *rows, int n)
{
    int cw, sw;
    name_widths(rows, n, &cw, &sw);
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32], b8[32];
    fprintf(out, "%-8s %-*s %-*s %10s %10s %10s %7s %7s %9s %10s %10s %10s %8s  %s\n", "suite",
            cw, "case", sw, "strategy", "bytes", "bound", "sim", "time/lb", "exec", "algbw",
            "synth", "peak mem", "recv/GPU", "cost err", "valid");
    for (int i = 0; i < n; i++) {
        const mc_bench_row_t *r = &rows[i];
        if (r->failed) {
            fprintf(out, "%-8s %-*s %-*s %10s  %s: %s\n", r->suite, cw, r->cas, sw, r->strategy,
                    mc_fmt_bytes(r->bytes, b1, sizeof(b1)), valid_str(r), r->error);
            continue;
        }
        char sim[40];
        snprintf(sim, sizeof sim, "%s%s", r->estimated ? ">=" : "",
                 mc_fmt_seconds(r->sim_s, b3, sizeof(b3)));
        fprintf(out, "%-8s %-*s %-*s %10s %10s %10s %7.2f %7s %9.3f %10s %10s %10s %8s  %s\n",
                r->suite, cw, r->cas, sw, r->strategy, mc_fmt_bytes(r->bytes, b1, sizeof(b1)),
                mc_fmt_seconds(r->lower_bound_s, b2, sizeof(b2)), sim, r->ratio,
                exec_cell(r, b8, sizeof b8), r->algbw_gbps,
                mc_fmt_seconds(r->synth_s, b4, sizeof(b4)),
                mc_fmt_bytes(r->peak_mem, b5, sizeof(b5)),
                mc_fmt_bytes(r->moved_max, b6, sizeof(b6)), mc_bench_cost_cell(r, b7, sizeof(b7)),
                valid_str(r));
    }
    geo_t g[GEO_MAX];
    int ng = geomeans_counted(rows, n, g);
    for (int k = 0; k < ng; k++) {
        if (!g[k].n) {
            fprintf(out, "%-8s %-*s %-*s  no row ran  %d/%d\n", "all", cw, "geomean", sw,
                    g[k].strategy, g[k].total - g[k].invalid, g[k].total);
            continue;
        }
        fprintf(out, "%-8s %-*s %-*s %10s %10s %10s %7.2f %7s %9.3f %10s %10s %10s %8s  %d/%d\n",
                "all", cw, "geomean", sw, g[k].strategy, "-",
                mc_fmt_seconds(mean_of(g[k].bound, g[k].n), b2, sizeof(b2)),
                mc_fmt_seconds(mean_of(g[k].sim, g[k].n), b3, sizeof(b3)),
                mean_of(g[k].ratio, g[k].n), "-", mean_of(g[k].algbw, g[k].n),
                mc_fmt_seconds(mean_of(g[k].synth, g[k].n), b4, sizeof(b4)), "-", "-", "-",
                g[k].total - g[k].invalid, g[k].total);
    }
    exec_footer(out, rows, n);
    fprintf(out, "algbw = bytes delivered to destinations / simulated time, GB/s (1e9 B/s); "
                 "recv/GPU = most bytes any GPU receives; "
                 "geomean over rows that ran; valid column of geomean rows: valid/total; n/a: the strategy does "
                 "not handle this kind of task; cost err = (cost model - sim) / sim; >= in sim: "
                 "estimated, the simulation stopped there at its allowance (--sim-work)\n");
    mc_bench_print_cost_summary(out, rows, n);
}

void mc_bench_print_csv(FILE *out, const mc_bench_row_t *rows, int n)
{
    fprintf(out, "suite,case,strategy,bytes,lower_bound_s,sim_s,ratio,algbw_gbps,synth_s,"
                 "peak_mem_bytes,simulated,valid,exec_s,exec_steps_s,exec_nccl_s,"
                 "cost_s,cost_err\n");
    for (int i = 0; i < n; i++) {
        const mc_bench_row_t *r = &rows[i];
        char cost[64];
        if (r->failed)
            fprintf(out, "%s,%s,%s,%llu,%.9g,,,,%.6g,,,%s,,,,,\n", r->suite, r->cas, r->strategy,
                    (unsigned long long)r->bytes, r->lower_bound_s, r->synth_s, valid_str(r));
        else
            fprintf(out, "%s,%s,%s,%llu,%.9g,%.9g,%.6g,%.6g,%.6g,%llu,%s,%s,%.9g,%.9g,%.9g,%s\n",
                    r->suite, r->cas, r->strategy, (unsigned long long)r->bytes, r->lower_bound_s,
                    r->sim_s, r->ratio, r->algbw_gbps, r->synth_s, (unsigned long long)r->peak_mem,
                    r->estimated ? "no" : "yes", valid_str(r), r->exec_s, r->exec_steps_s,
                    r->exec_nccl_s, mc_bench_cost_csv(r, cost, sizeof cost));
    }
    geo_t g[GEO_MAX];
    int ng = geomeans_counted(rows, n, g);
    for (int k = 0; k < ng; k++) {
        if (!g[k].n) {
            fprintf(out, "all,geomean,%s,,,,,,,,,no,,,,,\n", g[k].strategy);
            continue;
        }
        fprintf(out, "all,geomean,%s,,%.9g,%.9g,%.6g,%.6g,%.6g,,,%s,,,,,\n", g[k].strategy,
                mean_of(g[k].bound, g[k].n), mean_of(g[k].sim, g[k].n),
                mean_of(g[k].ratio, g[k].n), mean_of(g[k].algbw, g[k].n),
                mean_of(g[k].synth, g[k].n), g[k].invalid ? "no" : "yes");
    }
}

static const char *const colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                     "#edc948", "#b07aa1", "#ff9da7"};

mc_status_t mc_bench_write_svg(const char *path, const mc_bench_row_t *rows, int n,
                               mc_err_t *err)
{
    geo_t g[GEO_MAX];
    int ng = geomeans(rows, n, g);
    /* Cases in order of first appearance (suite/case pairs). */
    int ncases = 0;
    int *first = mc_xcalloc((size_t)(n ? n : 1), sizeof(int));
    double top = 1;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < ncases && (strcmp(rows[first[k]].cas, rows[i].cas) ||
                              strcmp(rows[first[k]].suite, rows[i].suite)))
            k++;
        if (k == ncases)
            first[ncases++] = i;
        if (!rows[i].failed && rows[i].ratio > top)
            top = rows[i].ratio;
    }
    top = ceil(top);
    const int bar = 12, gap = 16, left = 60, plot_h = 300, top_m = 40;
    int group = ng * bar + gap, width = left + ncases * group + 20 + 140;
    mc_buf_t b = {0};
    mc_buf_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "font-family=\"sans-serif\" font-size=\"11\">\n", width, top_m + plot_h + 120);
    mc_buf_printf(&b, "<text x=\"%d\" y=\"20\" font-size=\"14\">simulated time / lower bound "
                  "(1 = optimal)</text>\n", left);
    int step = (int)ceil(top / 10); /* at most about ten grid lines */
    for (int t = 0; t <= (int)top; t += step) {
        double y = top_m + plot_h - plot_h * t / top;
        mc_buf_printf(&b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                      "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d</text>\n", left,
                      left + ncases * group, y, y, left - 4, y + 4, t);
    }
    for (int c = 0; c < ncases; c++) {
        int x0 = left + c * group + gap / 2;
        for (int i = 0; i < n; i++) {
            if (strcmp(rows[i].cas, rows[first[c]].cas) ||
                strcmp(rows[i].suite, rows[first[c]].suite) || rows[i].failed)
                continue;
            int k = 0;
            while (k < ng && strcmp(g[k].strategy, rows[i].strategy))
                k++;
            double h = plot_h * rows[i].ratio / top;
            mc_buf_printf(&b, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" "
                          "fill=\"%s\"><title>%s %s: %.2f</title></rect>\n", x0 + k * bar,
                          top_m + plot_h - h, bar - 1, h, colors[k % 8], rows[i].cas,
                          rows[i].strategy, rows[i].ratio);
        }
        mc_buf_printf(&b, "<text transform=\"translate(%d,%d) rotate(60)\">%s</text>\n",
                      x0 + 2, top_m + plot_h + 10, rows[first[c]].cas);
    }
    for (int k = 0; k < ng; k++)
        mc_buf_printf(&b, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                      "<text x=\"%d\" y=\"%d\">%s</text>\n", left + ncases * group + 20,
                      top_m + 16 * k, colors[k % 8], left + ncases * group + 34,
                      top_m + 16 * k + 9, g[k].strategy);
    mc_buf_printf(&b, "</svg>\n");
    mc_status_t st = mc_write_file_atomic(path, b.data, b.len, err);
    mc_buf_free(&b);
    free(first);
    return st;
}
