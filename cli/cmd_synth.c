/* meshcast synth: runs one strategy on a task and a topology, validates and times the schedule,
 * writes it atomically and prints a one-line summary. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/sim.h"
#include "synth/synth.h"

static void usage(FILE *out)
{
    int n;
    const mc_strategy_t *s = mc_synth_strategies(&n);
    fprintf(out,
            "usage: meshcast synth --topo FILE [--strategy NAME] [options] MOVE... -o SCHEDULE\n"
            "       meshcast synth --topo FILE [--strategy NAME] --task-file FILE -o SCHEDULE\n"
            "\n"
            "Synthesizes a schedule for a resharding task, checks it (meshcast validate's rules),\n"
            "times it with the simulator and writes it. Prints one line: strategy, trees, phases,\n"
            "simulated time, lower bound and their ratio; then what the strategy chose and why.\n"
            "\n"
            "options:\n"
            "  --topo FILE                 topology (NCCL topology XML or cluster XML)\n"
            CLI_TOPO_USAGE
            "  --strategy NAME             strategy (default meshcast); one of:\n");
    for (int i = 0; i < n; i++)
        fprintf(out, "      %-12s %s\n", s[i].name, s[i].summary);
    fprintf(out,
            "  --budget S                  optimizer wall-clock budget in seconds (default 10;\n"
            "                              none when --rlimit is given alone)\n"
            "  --rlimit N                  Z3 resource limit, for reproducible results\n"
            "  --memory-limit BYTES        per-device peak memory bound (suffix K, M, G: 1024-based)\n"
            "  --chunk BYTES               pipeline chunk size (default: the strategy's choice)\n"
            "  --in-flight N               chunks in flight per edge for the strategies that model\n"
            "                              NCCL's kernels (default 8, NCCL's; 1 chunks them for\n"
            "                              meshcast's runtime, which sends one at a time)\n"
            "  --sim-work N                allowance of the summary's simulation (default %d;\n"
            "                              0: none); past it the line says \"estimated\"\n"
            "  -o, --output SCHEDULE       schedule file to write (XML, docs/schedule-format.md)\n"
            "  -q, --quiet                 no topology warnings\n"
            "%s"
            "\n"
            "exit status: 0 written, 1 invalid input or no valid schedule, 2 usage error\n",
            MC_SIM_REPORT_WORK, CLI_TASK_USAGE);
}

typedef struct synth_args {
    const char *topo, *strategy, *output;
    int quiet;
    mc_synth_opts_t opts;
    cli_task_args_t task;
} synth_args_t;

/* Parses argv into a; returns -1 when done, else the exit code to return (0 for --help). */
static int parse_args(int argc, char **argv, synth_args_t *a)
{
    enum { OPT_TOPO = 0x2001, OPT_STRATEGY, OPT_SYNTH };
    static const struct option longopts[] = {
        {"topo", required_argument, NULL, OPT_TOPO},
        CLI_TOPO_LONG_OPTIONS,
        {"strategy", required_argument, NULL, OPT_STRATEGY},
        CLI_SYNTH_LONG_OPTIONS(OPT_SYNTH),
        {"output", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        CLI_TASK_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int opt, idx = 0;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "o:qh", longopts, &idx)) != -1) {
        int t = cli_task_option(&a->task, opt, optarg);
        if (t < 0)
            return cli_usage_error("synth", "too many --mesh options");
        if (t > 0)
            continue;
        switch (opt) {
        case OPT_TOPO: a->topo = optarg; break;
        case OPT_STRATEGY: a->strategy = optarg; break;
        case 'o': a->output = optarg; break;
        case 'q': a->quiet = 1; break;
        case 'h': usage(stdout); return MC_EXIT_OK;
        case OPT_SYNTH:
            if (cli_synth_option("synth", &a->opts, longopts[idx].name, optarg) != MC_EXIT_OK)
                return MC_EXIT_USAGE;
            break;
        CLI_TOPO_CASES:
            if (cli_topo_option("synth", opt, optarg) != MC_EXIT_OK)
                return MC_EXIT_USAGE;
            break;
        default:
            return cli_usage_error("synth", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (!a->topo)
        return cli_usage_error("synth", "--topo FILE is required");
    if (!a->output)
        return cli_usage_error("synth", "-o SCHEDULE is required");
    return -1;
}

int cmd_synth(int argc, char **argv)
{
    synth_args_t a = {.strategy = "meshcast", .opts = MC_SYNTH_OPTS_DEFAULT};
    mc_topo_t *topo = NULL;
    mc_task_t *task = NULL;
    mc_sched_t *s = NULL;
    mc_sim_result_t sim = {0};
    mc_sim_memo_t *memo = NULL;
    mc_err_t err = {0};
    mc_status_t st = MC_OK;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    MC_CHECK_GOTO(cli_load_topo(a.topo, a.quiet, &topo, &err), out, st);
    MC_CHECK_GOTO(cli_task_build(&a.task, argc - optind, argv + optind, topo, &task, &err), out,
                  st);
    /* the referee's simulations, so that the summary does not simulate again a schedule that
     * it ran to the end */
    a.opts.memo = memo = mc_sim_memo_new();
    MC_CHECK_GOTO(mc_synth(a.strategy, task, topo, &a.opts, &s, &err), out, st);
    mc_bound_t bound;
    MC_CHECK_GOTO(mc_task_bound(task, topo, &bound, &err), out, st);
    /* past the allowance, the time the simulation reached is a lower bound: said as such */
    int64_t work = a.opts.sim_work;
    mc_err_t stopped = {0};
    st = mc_sim_run_memo(memo, s, topo, work ? &work : NULL, 0, &sim, &stopped);
    int estimated = st == MC_ERR_TIMEOUT;
    if (st != MC_OK && !estimated) {
        err = stopped;
        goto out;
    }
    MC_CHECK_GOTO(mc_sched_save(s, topo, a.output, &err), out, st);
    /* a stopped simulation's time and the bound are both lower bounds: say the larger */
    double shown = estimated && sim.makespan_s < bound.seconds ? bound.seconds : sim.makespan_s;
    char tb[32], bb[32];
    printf("%s: %d tree%s, %d phase%s, %s %s, lower bound %s (%s), ratio %s%.2f -> %s\n",
           a.strategy, s->ntrees, s->ntrees == 1 ? "" : "s", s->nphases,
           s->nphases == 1 ? "" : "s",
           estimated ? "estimated (the simulation stopped at --sim-work) at least" : "simulated",
           mc_fmt_seconds(shown, tb, sizeof(tb)),
           mc_fmt_seconds(bound.seconds, bb, sizeof(bb)), mc_bound_kind_str(bound.binding),
           estimated ? ">=" : "", bound.seconds > 0 ? shown / bound.seconds : 1.0,
           a.output);
    if (s->params[0]) /* what the strategy chose and why */
        printf("  %s\n", s->params);
out:
    mc_sim_result_free(&sim);
    mc_sim_memo_free(memo);
    mc_sched_free(s);
    mc_task_free(task);
    mc_topo_free(topo);
    return st == MC_OK ? MC_EXIT_OK : cli_fail(&err);
}
