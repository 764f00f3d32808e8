/* meshcast bench: runs benchmark suites (the .cases files in bench/) with every strategy and prints one row
 * per case and strategy, as a table or CSV, plus an optional SVG chart. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli/cli.h"

static void usage(FILE *out)
{
    int n;
    const mc_strategy_t *s = mc_synth_strategies(&n);
    fprintf(out,
            "usage: meshcast bench [--suite NAME[,NAME]] [--strategies a,b] [--cases PATTERN]\n"
            "                      [--csv] [--svg OUT] [--dir DIR] [synthesis options]\n"
            "\n"
            "Runs benchmark suites: for every case and strategy, the bytes delivered, the lower\n"
            "bound, the simulated time, time/bound, algbw (GB/s = 1e9 B/s), synthesis time, peak\n"
            "memory per device, the most bytes any GPU receives and whether the schedule\n"
            "validates; then a geometric mean per strategy. Suites are case files\n"
            "DIR/NAME.cases (docs/bench-format.md).\n"
            "\n"
            "options:\n"
            "  --suite NAME[,NAME]   suites to run (default: every suite in DIR marked default)\n"
            "                        a NAME with a '/' or ending in .cases is a file path\n"
            "  --strategies a,b      strategies to compare (default: all, in this order):\n");
    for (int i = 0; i < n; i++)
        fprintf(out, "      %-12s %s\n", s[i].name, s[i].summary);
    fprintf(out,
            "  --cases PATTERN       only cases matching these shell patterns (comma-separated)\n"
            "  --csv                 CSV on stdout instead of the table\n"
            "  --svg OUT             also write a bar chart of time/bound to OUT\n"
            "  --dir DIR             folder of the case files (default bench)\n"
            "  --budget S, --rlimit N, --memory-limit BYTES, --chunk BYTES, --in-flight N,\n"
            "  --sim-work N\n"
            "                        passed to every strategy (see meshcast synth --help)\n"
            "  --list                list the suites and their cases, run nothing\n"
            "\n"
            "exit status: 0 every schedule valid (a strategy that does not handle a case's kind\n"
            "of task shows n/a), 1 a strategy failed or made an invalid\n"
            "schedule or a case file is bad, 2 usage error\n");
}

typedef struct bench_args {
    const char *suites, *strategies, *cases, *svg, *dir;
    int csv, list;
    mc_synth_opts_t opts;
} bench_args_t;

/* Returns -1 when parsing is done, else the exit code. */
static int parse_args(int argc, char **argv, bench_args_t *a)
{
    enum { OPT_SUITE = 0x2001, OPT_STRATS, OPT_CASES, OPT_CSV, OPT_SVG, OPT_DIR, OPT_SYNTH,
           OPT_LIST };
    static const struct option longopts[] = {
        {"suite", required_argument, NULL, OPT_SUITE},
        {"strategies", required_argument, NULL, OPT_STRATS},
        {"cases", required_argument, NULL, OPT_CASES},
        {"csv", no_argument, NULL, OPT_CSV},
        {"svg", required_argument, NULL, OPT_SVG},
        {"dir", required_argument, NULL, OPT_DIR},
        CLI_SYNTH_LONG_OPTIONS(OPT_SYNTH),
        {"list", no_argument, NULL, OPT_LIST},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt, idx = 0;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        switch (opt) {
        case OPT_SUITE: a->suites = optarg; break;
        case OPT_STRATS: a->strategies = optarg; break;
        case OPT_CASES: a->cases = optarg; break;
        case OPT_CSV: a->csv = 1; break;
        case OPT_SVG: a->svg = optarg; break;
        case OPT_DIR: a->dir = optarg; break;
        case OPT_LIST: a->list = 1; break;
        case 'h': usage(stdout); return MC_EXIT_OK;
        case OPT_SYNTH:
            if (cli_synth_option("bench", &a->opts, longopts[idx].name, optarg) != MC_EXIT_OK)
                return MC_EXIT_USAGE;
            break;
        default:
            return cli_usage_error("bench", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("bench", "unexpected argument '%s'", argv[optind]);
    return -1;
}

/* Resolves --strategies into table entries; returns -1 or the exit code. */
static int pick_strategies(const char *list, const mc_strategy_t ***out, int *n)
{
    int total;
    const mc_strategy_t *all = mc_synth_strategies(&total);
    const mc_strategy_t **picked = mc_xcalloc((size_t)total + 1, sizeof(*picked));
    *out = picked;
    *n = 0;
    if (!list) {
        for (int i = 0; i < total; i++)
            if (!all[i].yardstick)
                picked[(*n)++] = &all[i];
        return -1;
    }
    char *copy = mc_xstrdup(list), *save = NULL;
    int rc = -1;
    for (char *name = strtok_r(copy, ",", &save); name && rc < 0;
         name = strtok_r(NULL, ",", &save)) {
        const mc_strategy_t *s = mc_synth_find(name);
        if (!s) {
            mc_buf_t names = {0};
            for (int i = 0; i < total; i++)
                mc_buf_printf(&names, "%s%s", i ? ", " : "", all[i].name);
            rc = cli_usage_error("bench", "unknown strategy '%s': expected one of %s", name,
                                 names.data ? names.data : "(none)");
            mc_buf_free(&names);
        } else if (*n < total) {
            picked[(*n)++] = s;
        }
    }
    free(copy);
    if (rc < 0 && *n == 0)
        rc = cli_usage_error("bench", "--strategies: expected at least one name");
    return rc;
}

typedef struct suite_list {
    int n, cap;
    mc_bench_suite_t **s;
} suite_list_t;

static void suites_free(suite_list_t *l)
{
    for (int i = 0; i < l->n; i++)
        mc_bench_suite_free(l->s[i]);
    free(l->s);
}

static mc_status_t add_suite(suite_list_t *l, const char *path, mc_err_t *err)
{
    mc_bench_suite_t *s;
    mc_status_t st = mc_bench_suite_load(path, &s, err);
    if (st != MC_OK)
        return st;
    MC_GROW(l->s, l->cap, l->n + 1);
    l->s[l->n++] = s;
    return MC_OK;
}

/* Loads the suites asked for, or every default suite of the folder. Returns -1 or an exit code. */
static int load_suites(const bench_args_t *a, suite_list_t *l, mc_err_t *err)
{
    if (!a->suites) {
        char **paths = NULL;
        int n = 0, rc = -1;
        if (mc_bench_list(a->dir, &paths, &n, err) != MC_OK)
            return cli_fail(err);
        for (int i = 0; i < n; i++) {
            if (rc < 0 && add_suite(l, paths[i], err) != MC_OK)
                rc = cli_fail(err);
            else if (rc < 0 && !a->list && !l->s[l->n - 1]->default_run)
                mc_bench_suite_free(l->s[--l->n]);
            free(paths[i]);
        }
        free(paths);
        if (rc < 0 && l->n == 0)
            rc = cli_usage_error("bench", "no default suite in %s", a->dir);
        return rc;
    }
    char *copy = mc_xstrdup(a->suites), *save = NULL;
    int rc = -1;
    for (char *name = strtok_r(copy, ",", &save); name && rc < 0;
         name = strtok_r(NULL, ",", &save)) {
        size_t len = strlen(name);
        int is_path = strchr(name, '/') || (len > 6 && !strcmp(name + len - 6, ".cases"));
        char *path = is_path ? mc_xstrdup(name) : mc_xasprintf("%s/%s.cases", a->dir, name);
        if (!is_path && access(path, F_OK) != 0)
            rc = cli_usage_error("bench", "no suite '%s' (%s does not exist)", name, path);
        else if (add_suite(l, path, err) != MC_OK)
            rc = cli_fail(err);
        free(path);
    }
    free(copy);
    return rc;
}

static void list_suites(const suite_list_t *l)
{
    for (int i = 0; i < l->n; i++) {
        const mc_bench_suite_t *s = l->s[i];
        printf("%s (%s, %d cases%s)\n", s->name, s->path, s->ncases,
               s->default_run ? "" : ", not run by default");
        for (int c = 0; c < s->ncases; c++)
            printf("  %-24s %s\n", s->cases[c].name, s->cases[c].desc);
    }
}

int cmd_bench(int argc, char **argv)
{
    bench_args_t a = {.dir = "bench", .opts = MC_SYNTH_OPTS_DEFAULT};
    suite_list_t suites = {0};
    mc_bench_row_t *rows = NULL;
    int nrows = 0, cap = 0;
    mc_err_t err = {0};
    mc_bench_opts_t bo = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if ((rc = pick_strategies(a.strategies, &bo.strategies, &bo.nstrategies)) >= 0)
        goto out;
    if ((rc = load_suites(&a, &suites, &err)) >= 0)
        goto out;
    if (a.list) {
        list_suites(&suites);
        rc = MC_EXIT_OK;
        goto out;
    }
    bo.synth = a.opts;
    bo.cases = a.cases;
    bo.progress = isatty(STDERR_FILENO) ? stderr : NULL;
    for (int i = 0; i < suites.n; i++)
        if (mc_bench_run_suite(suites.s[i], &bo, &rows, &nrows, &cap, &err) != MC_OK) {
            rc = cli_fail(&err);
            goto out;
        }
    if (nrows == 0) {
        rc = cli_usage_error("bench", "no case matches '%s'", a.cases ? a.cases : "*");
        goto out;
    }
    if (a.csv) {
        mc_bench_print_csv(stdout, rows, nrows);
        mc_bench_print_cost_summary(stderr, rows, nrows); /* stdout stays one CSV */
    } else
        mc_bench_print_table(stdout, rows, nrows);
    int off_calib = mc_bench_print_calib(a.csv ? NULL : stdout, rows, nrows);
    if (a.svg && mc_bench_write_svg(a.svg, rows, nrows, &err) != MC_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    rc = MC_EXIT_OK;
    for (int i = 0; i < nrows; i++)
        if ((rows[i].failed && !rows[i].not_applicable) || rows[i].nviolations) {
            fprintf(stderr, "meshcast bench: %s/%s %s: %s\n", rows[i].suite, rows[i].cas,
                    rows[i].strategy, rows[i].failed ? rows[i].error : "invalid schedule");
            rc = MC_EXIT_INVALID;
        }
    if (off_calib) {
        fprintf(stderr, "meshcast bench: %d bandwidth-bound calibration row(s) off by more than "
                        "10%% from the published figure\n", off_calib);
        rc = MC_EXIT_INVALID;
    }
out:
    free(rows);
    free(bo.strategies);
    suites_free(&suites);
    return rc;
}
