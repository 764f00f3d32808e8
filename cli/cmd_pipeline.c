/* meshcast pipeline: reads a pipeline file, times every boundary's resharding with a strategy, and
 * simulates 1F1B and eager-1F1B: iteration time, bubble, communication on the critical path and
 * peak stored activations per stage; JSON on request, and an SVG timeline. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "pipeline/pipeline.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: meshcast pipeline [--topo FILE] [--strategy NAME] [--order ORDER] [--json]\n"
            "                         [--timeline OUT.svg] [synthesis options] PIPELINE\n"
            "\n"
            "Simulates one training iteration of a pipeline (docs/pipeline.md): each stage runs\n"
            "its forward and backward steps in the order's sequence; the tensors crossing each\n"
            "boundary move by the schedule the strategy synthesizes for them, timed by the\n"
            "flow-level simulator, while the stages compute. Prints each boundary's transfer\n"
            "time, then per order the iteration time, the time without any communication, the\n"
            "bubble, the communication left on the critical path and the peak stored\n"
            "activations.\n"
            "\n"
            "options:\n"
            "  --topo FILE          topology (default: the pipeline file's 'topology' line)\n"
            CLI_TOPO_USAGE
            "  --strategy NAME      resharding strategy (default meshcast; meshcast synth --help\n"
            "                       lists them)\n"
            "  --order ORDER        1f1b, eager-1f1b or both (default both)\n"
            "  --budget S, --rlimit N, --memory-limit BYTES, --chunk BYTES, --in-flight N\n"
            "                       synthesis options, as for meshcast synth\n"
            "  --json               print JSON\n"
            "  --timeline OUT.svg   draw a compute and a communication lane per stage\n"
            "  -q, --quiet          no topology warnings\n"
            "\n"
            "exit status: 0 ok, 1 invalid input, 2 usage error\n");
}

typedef struct pipe_args {
    const char *topo, *strategy, *timeline, *path;
    int json, quiet, norders;
    mc_pipe_order_t orders[2];
    mc_synth_opts_t opts;
} pipe_args_t;

/* Returns -1 when the arguments are good, else the exit code. */
static int parse_args(int argc, char **argv, pipe_args_t *a)
{
    enum { OPT_TOPO = 0x2401, OPT_STRATEGY, OPT_ORDER, OPT_JSON, OPT_TIMELINE, OPT_SYNTH };
    static const struct option longopts[] = {
        {"topo", required_argument, NULL, OPT_TOPO},
        CLI_TOPO_LONG_OPTIONS,
        {"strategy", required_argument, NULL, OPT_STRATEGY},
        {"order", required_argument, NULL, OPT_ORDER},
        {"json", no_argument, NULL, OPT_JSON},
        {"timeline", required_argument, NULL, OPT_TIMELINE},
        CLI_SYNTH_LONG_OPTIONS(OPT_SYNTH),
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt, idx = 0;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "qh", longopts, &idx)) != -1) {
        switch (opt) {
        case OPT_TOPO: a->topo = optarg; break;
        case OPT_STRATEGY: a->strategy = optarg; break;
        case OPT_JSON: a->json = 1; break;
        case OPT_TIMELINE: a->timeline = optarg; break;
        case OPT_ORDER:
            if (!strcmp(optarg, "both"))
                a->norders = 2;
            else if (mc_pipe_order_parse(optarg, &a->orders[0]) == 0)
                a->norders = 1;
            else
                return cli_usage_error("pipeline", "--order expects 1f1b, eager-1f1b or both, "
                                       "got '%s'", optarg);
            break;
        case OPT_SYNTH:
            if (cli_synth_option("pipeline", &a->opts, longopts[idx].name, optarg) != MC_EXIT_OK)
                return MC_EXIT_USAGE;
            break;
        case 'q': a->quiet = 1; break;
        case 'h': usage(stdout); return MC_EXIT_OK;
        CLI_TOPO_CASES:
            if (cli_topo_option("pipeline", opt, optarg) != MC_EXIT_OK)
                return MC_EXIT_USAGE;
            break;
        default:
            return cli_usage_error("pipeline", "unknown or incomplete option '%s'",
                                   argv[optind - 1]);
        }
    }
    if (!mc_synth_find(a->strategy))
        return cli_usage_error("pipeline", "unknown strategy '%s' (see meshcast synth --help)",
                               a->strategy);
    if (argc - optind != 1)
        return cli_usage_error("pipeline", "expected one PIPELINE file, got %d", argc - optind);
    a->path = argv[optind];
    return -1;
}

/* One order's figures with communication and without. */
typedef struct order_run {
    mc_pipe_result_t with, without;
} order_run_t;

static void print_text(const pipe_args_t *a, const mc_pipe_t *p, const order_run_t *runs)
{
    char b1[32], b2[32], b3[32];
    printf("pipeline   %s: %d stage%s, %d micro-batch%s, strategy %s\n", a->path, p->nstages,
           p->nstages == 1 ? "" : "s", p->microbatches, p->microbatches == 1 ? "" : "es",
           a->strategy);
    for (int s = 0; s < p->nstages; s++)
        printf("stage      %-8s %3d GPU%s  forward %-10s backward %s\n", p->stages[s].name,
               p->stages[s].ngpus, p->stages[s].ngpus == 1 ? " " : "s",
               mc_fmt_seconds(p->stages[s].fwd_s, b1, sizeof b1),
               mc_fmt_seconds(p->stages[s].bwd_s, b2, sizeof b2));
    for (int g = 0; g < p->ngroups; g++) {
        const mc_pipe_group_t *gr = &p->groups[g];
        char to[MC_MAX_CONSUMERS * (MC_NAME_MAX + 1)], route[sizeof to + MC_NAME_MAX + 8];
        mc_pipe_group_to(p, gr, to, sizeof to);
        snprintf(route, sizeof route, "%s -> %s", p->stages[gr->src].name, to);
        printf("transfer   %-16s %-8s %2d tensor%s %10s  %-10s (bound %s)", route,
               gr->backward ? "backward" : "forward", gr->task->ntensors,
               gr->task->ntensors == 1 ? " " : "s", mc_fmt_bytes(gr->bytes, b1, sizeof b1),
               mc_fmt_seconds(gr->seconds, b2, sizeof b2),
               mc_fmt_seconds(gr->bound_s, b3, sizeof b3));
        if (gr->same_as >= 0) {
            mc_pipe_group_to(p, &p->groups[gr->same_as], to, sizeof to);
            printf(" schedule of %s -> %s", p->stages[p->groups[gr->same_as].src].name, to);
        }
        printf("\n");
    }
    int n = a->norders;
    printf("%-26s", "");
    for (int r = 0; r < n; r++)
        printf(" %14s", mc_pipe_order_name(runs[r].with.order));
    printf("\n");
    /* One row: the label, then one cell per order. */
#define ROW(label, fmt, expr)                        \
    do {                                             \
        printf("%-26s", label);                      \
        for (int r = 0; r < n; r++) {                \
            snprintf(b3, sizeof b3, fmt, expr);      \
            printf(" %14s", b3);                     \
        }                                            \
        printf("\n");                                \
    } while (0)
    ROW("iteration", "%s", mc_fmt_seconds(runs[r].with.iteration_s, b1, sizeof b1));
    ROW("without communication", "%s",
        mc_fmt_seconds(runs[r].without.iteration_s, b1, sizeof b1));
    ROW("bubble", "%.1f%%", 100 * runs[r].with.bubble);
    ROW("exposed communication", "%s", mc_fmt_seconds(runs[r].with.exposed_comm_s, b1, sizeof b1));
    ROW("transfers on critical path", "%d", runs[r].with.critical_transfers);
    for (int s = 0; s < p->nstages; s++) {
        char label[MC_NAME_MAX + 24];
        snprintf(label, sizeof label, "peak activations %s", p->stages[s].name);
        ROW(label, "%d", runs[r].with.peak_stored[s]);
    }
#undef ROW
}

static json_t *order_json(const mc_pipe_t *p, const order_run_t *run)
{
    const mc_pipe_result_t *r = &run->with;
    json_t *peak = json_array();
    for (int s = 0; s < p->nstages; s++)
        json_array_append_new(peak, json_integer(r->peak_stored[s]));
    return json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:i, s:o}", "order",
                     mc_pipe_order_name(r->order), "iteration_s", r->iteration_s,
                     "no_comm_iteration_s", run->without.iteration_s, "bubble", r->bubble,
                     "exposed_comm_s", r->exposed_comm_s, "critical_compute_s",
                     r->critical_compute_s, "critical_transfers", r->critical_transfers,
                     "peak_stored", peak);
}

static void print_json(const pipe_args_t *a, const mc_pipe_t *p, const order_run_t *runs)
{
    json_t *o = json_object(), *stages = json_array(), *transfers = json_array();
    json_t *orders = json_array();
    json_object_set_new(o, "pipeline", json_string(a->path));
    json_object_set_new(o, "strategy", json_string(a->strategy));
    json_object_set_new(o, "microbatches", json_integer(p->microbatches));
    for (int s = 0; s < p->nstages; s++)
        json_array_append_new(stages, json_pack("{s:s, s:i, s:f, s:f}", "name",
                                                p->stages[s].name, "gpus", p->stages[s].ngpus,
                                                "forward_s", p->stages[s].fwd_s, "backward_s",
                                                p->stages[s].bwd_s));
    for (int g = 0; g < p->ngroups; g++) {
        const mc_pipe_group_t *gr = &p->groups[g];
        char to[MC_MAX_CONSUMERS * (MC_NAME_MAX + 1)];
        mc_pipe_group_to(p, gr, to, sizeof to);
        json_t *t = json_pack("{s:s, s:s, s:s, s:i, s:I, s:f, s:f}", "from",
                              p->stages[gr->src].name, "to", to,
                              "direction", gr->backward ? "backward" : "forward", "tensors",
                              gr->task->ntensors, "bytes", (json_int_t)gr->bytes, "seconds",
                              gr->seconds, "lower_bound_s", gr->bound_s);
        /* The earlier transfer whose schedule it reuses, or null when synthesized for it. */
        json_object_set_new(t, "schedule_of",
                            gr->same_as < 0 ? json_null() : json_integer(gr->same_as));
        json_array_append_new(transfers, t);
    }
    for (int r = 0; r < a->norders; r++)
        json_array_append_new(orders, order_json(p, &runs[r]));
    json_object_set_new(o, "stages", stages);
    json_object_set_new(o, "transfers", transfers);
    json_object_set_new(o, "orders", orders);
    cli_print_json(o);
}

int cmd_pipeline(int argc, char **argv)
{
    pipe_args_t a = {.strategy = "meshcast", .norders = 2,
                     .orders = {MC_PIPE_1F1B, MC_PIPE_EAGER_1F1B}, .opts = MC_SYNTH_OPTS_DEFAULT};
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    mc_pipe_t *p = NULL;
    mc_topo_t *topo = NULL;
    order_run_t runs[2] = {0};
    mc_pipe_result_t drawn[2];
    mc_err_t err = {0};
    mc_status_t st = MC_OK;
    char *svg = NULL;
    MC_CHECK_GOTO(mc_pipe_load(a.path, &p, &err), out, st);
    if (!a.topo && !p->topo_path) {
        st = mc_err_set(&err, MC_ERR_USAGE, "%s has no 'topology' line: give --topo FILE", a.path);
        goto out;
    }
    MC_CHECK_GOTO(cli_load_topo(a.topo ? a.topo : p->topo_path, a.quiet, &topo, &err), out, st);
    MC_CHECK_GOTO(mc_pipe_time_comm(p, topo, a.strategy, &a.opts, &err), out, st);
    for (int r = 0; r < a.norders; r++) {
        MC_CHECK_GOTO(mc_pipe_simulate(p, a.orders[r], 0, &runs[r].with, &err), out, st);
        MC_CHECK_GOTO(mc_pipe_simulate(p, a.orders[r], 1, &runs[r].without, &err), out, st);
        drawn[r] = runs[r].with;
    }
    if (a.timeline) {
        svg = mc_pipe_timeline_svg(p, drawn, a.norders, a.path);
        MC_CHECK_GOTO(mc_write_file_atomic(a.timeline, svg, strlen(svg), &err), out, st);
    }
    if (a.json)
        print_json(&a, p, runs);
    else
        print_text(&a, p, runs);
out:
    free(svg);
    for (int r = 0; r < 2; r++) {
        mc_pipe_result_free(&runs[r].with);
        mc_pipe_result_free(&runs[r].without);
    }
    mc_topo_free(topo);
    mc_pipe_free(p);
    return st == MC_OK ? MC_EXIT_OK : cli_fail(&err);
}
