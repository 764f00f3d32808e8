/* meshcast validate: checks a schedule file against a topology file and its embedded task, one
 * line per violation (DESIGN.md section 4). */
#include <inttypes.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "sched/sched.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: meshcast validate --topo FILE [--force] [-q] SCHEDULE\n"
            "\n"
            "Checks a schedule against a topology and the task it embeds: every link of every\n"
            "route exists, the trees of a phase share no link beyond its capacity, every\n"
            "destination receives each byte it needs exactly once, no tree sends what its root\n"
            "does not hold yet, and peak memory stays within the schedule's stated bound.\n"
            "Prints one line per violation on stdout.\n"
            "\n"
            "options:\n"
            "  --topo FILE     topology (NCCL topology XML or cluster XML)\n" CLI_TOPO_USAGE
            "  --force         check a schedule made for another topology link by link instead\n"
            "                  of refusing it\n"
            "  -q, --quiet     no topology warnings, no summary line\n"
            "\n"
            "exit status: 0 valid, 1 violations or invalid input, 2 usage error\n");
}

int cmd_validate(int argc, char **argv)
{
    enum { OPT_TOPO = 0x2101, OPT_FORCE };
    static const struct option longopts[] = {
        {"topo", required_argument, NULL, OPT_TOPO},
        CLI_TOPO_LONG_OPTIONS,
        {"force", no_argument, NULL, OPT_FORCE},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *topo_path = NULL;
    int force = 0, quiet = 0, opt;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_TOPO: topo_path = optarg; break;
        case OPT_FORCE: force = 1; break;
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); return MC_EXIT_OK;
        CLI_TOPO_CASES:
            if (cli_topo_option("validate", opt, optarg) != MC_EXIT_OK)
                return MC_EXIT_USAGE;
            break;
        default:
            return cli_usage_error("validate", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (!topo_path)
        return cli_usage_error("validate", "--topo FILE is required");
    if (argc - optind != 1)
        return cli_usage_error("validate", "expected one SCHEDULE file, got %d", argc - optind);
    const char *path = argv[optind];

    mc_topo_t *topo = NULL;
    mc_sched_t *s = NULL;
    mc_buf_t out = {0};
    mc_err_t err = {0};
    mc_status_t st = MC_OK;
    int nviol = 0;
    MC_CHECK_GOTO(cli_load_topo(topo_path, quiet, &topo, &err), done, st);
    MC_CHECK_GOTO(mc_sched_load_compact(path, topo, force, &s, &err), done, st);
    if (s->topo_fingerprint != topo->fingerprint && !quiet)
        fprintf(stderr, "meshcast: note: %s was made for topology %016" PRIx64 ", not %s (%016" PRIx64
                        "); checking it link by link\n",
                path, s->topo_fingerprint, topo_path, topo->fingerprint);
    nviol = mc_sched_validate(s, topo, &out);
    if (out.len)
        fputs(out.data, stdout);
    if (nviol)
        fprintf(stderr, "meshcast: %s: %d violation%s\n", path, nviol, nviol == 1 ? "" : "s");
    else if (!quiet)
        printf("%s: valid (%s, %d tree%s in %d phase%s)\n", path, s->strategy,
               s->ntrees + s->inst_trees, s->ntrees + s->inst_trees == 1 ? "" : "s", s->nphases,
               s->nphases == 1 ? "" : "s");
done:
    mc_buf_free(&out);
    mc_sched_free(s);
    mc_topo_free(topo);
    if (st != MC_OK)
        return cli_fail(&err);
    return nviol ? MC_EXIT_INVALID : MC_EXIT_OK;
}
