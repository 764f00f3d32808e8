/* meshcast emit: generates the CUDA code that runs a schedule (NAME.h, NAME.cu and, with
 * --standalone, the runtime sources it needs), or with --check tells whether checked-in files
 * are stale. */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "emit/emit.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: meshcast emit --topo FILE SCHEDULE -o DIR [--name NAME] [--standalone]\n"
            "                     [--rank R] [--force]\n"
            "       meshcast emit --topo FILE --check DIR SCHEDULE [--name NAME] [--standalone]\n"
            "                     [--rank R]\n"
            "\n"
            "Writes DIR/NAME.h and DIR/NAME.cu: per-rank operation tables of the schedule, pack\n"
            "kernels specialized to its boxes, and the entry points\n"
            "  int NAME_run(int rank, ncclComm_t comm, const void *src, void *dst,\n"
            "               void *workspace, cudaStream_t stream);\n"
            "  size_t NAME_workspace_bytes(int rank);\n"
            "The header records meshcast's version, the task and the topology fingerprint. Output\n"
            "is deterministic. See docs/runtime.md for how a training repository calls it.\n"
            "\n"
            "options:\n"
            "  --topo FILE      the topology the schedule was made for\n" CLI_TOPO_USAGE
            "  -o, --output DIR folder to write (created if missing; files written atomically)\n"
            "  --name NAME      prefix of the generated symbols and files (default: the schedule\n"
            "                   file's name made into a C identifier)\n"
            "  --standalone     also write the runtime sources the code needs (runtime.h,\n"
            "                   rt_internal.h, copy_kernel.cuh, plan.c, cuda_exec.cu), so only\n"
            "                   CUDA and NCCL are needed to build it\n"
            "  --rank R         only rank R's tables (ranks as the header lists them: the GPUs\n"
            "                   the schedule involves, in GPU order): lowered from the trees that\n"
            "                   touch its GPU, the same as that rank's part of the full output;\n"
            "                   NAME_run and the size queries fail for every other rank (on\n"
            "                   large clusters every rank's tables take gigabytes)\n"
            "  --check DIR      write nothing; exit 1 when the files in DIR are missing or differ\n"
            "                   from what SCHEDULE generates now\n"
            "  --force          generate code for a schedule that meshcast validate refuses,\n"
            "                   or one made for another topology (checked link by link): its\n"
            "                   violations are printed as a warning; without it it is refused\n"
            "  -q, --quiet      no topology warnings\n"
            "\n"
            "The generated tables grow with the chunk transfers (chunks x edges): more than\n"
            "65,536 plus one per 4 KiB the task delivers is refused.\n"
            "\n"
            "exit status: 0 written (or up to date), 1 invalid input or stale files, 2 usage error\n");
}

typedef struct emit_args {
    const char *topo, *sched, *out, *check, *name;
    int standalone, quiet, force, rank;
} emit_args_t;

static int parse_args(int argc, char **argv, emit_args_t *a)
{
    enum { OPT_TOPO = 0x2001, OPT_NAME, OPT_STANDALONE, OPT_CHECK, OPT_FORCE, OPT_RANK };
    static const struct option longopts[] = {
        {"topo", required_argument, NULL, OPT_TOPO},
        CLI_TOPO_LONG_OPTIONS,
        {"output", required_argument, NULL, 'o'},
        {"name", required_argument, NULL, OPT_NAME},
        {"standalone", no_argument, NULL, OPT_STANDALONE},
        {"check", required_argument, NULL, OPT_CHECK},
        {"force", no_argument, NULL, OPT_FORCE},
        {"rank", required_argument, NULL, OPT_RANK},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    int64_t rank;
    a->rank = -1;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_TOPO: a->topo = optarg; break;
        case 'o': a->out = optarg; break;
        case OPT_NAME: a->name = optarg; break;
        case OPT_STANDALONE: a->standalone = 1; break;
        case OPT_CHECK: a->check = optarg; break;
        case OPT_FORCE: a->force = 1; break;
        case OPT_RANK:
            if (mc_parse_i64(optarg, &rank) || rank < 0 || rank > INT_MAX)
                return cli_usage_error("emit", "--rank: expected a rank (0 or more), got '%s'",
                                       optarg);
            a->rank = (int)rank;
            break;
        case 'q': a->quiet = 1; break;
        case 'h': usage(stdout); return MC_EXIT_OK;
        CLI_TOPO_CASES:
            if (cli_topo_option("emit", opt, optarg) != MC_EXIT_OK)
                return MC_EXIT_USAGE;
            break;
        default:
            return cli_usage_error("emit", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("emit", "expected one SCHEDULE file");
    a->sched = argv[optind];
    if (!a->topo)
        return cli_usage_error("emit", "--topo FILE is required");
    if (!a->out == !a->check)
        return cli_usage_error("emit", "expected either -o DIR or --check DIR");
    if (a->name && !mc_emit_name_ok(a->name))
        return cli_usage_error("emit", "--name '%s': expected a C identifier", a->name);
    return -1;
}

/* The schedule file's name without folder and extension, as a C identifier. */
static char *default_name(const char *path)
{
    const char *base = strrchr(path, '/');
    char *name = mc_xasprintf("_%s", base ? base + 1 : path), *dot = strchr(name + 1, '.');
    if (dot)
        *dot = '\0';
    for (char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p))
            *p = '_';
    if (strlen(name) > 64)
        name[64] = '\0';
    /* Keep the leading '_' only when the name would start with a digit. */
    if (name[1] && !isdigit((unsigned char)name[1]))
        memmove(name, name + 1, strlen(name));
    return name;
}

int cmd_emit(int argc, char **argv)
{
    emit_args_t a = {0};
    mc_topo_t *topo = NULL;
    mc_sched_t *s = NULL;
    mc_emit_file_t *files = NULL;
    mc_buf_t report = {0};
    mc_err_t err = {0};
    mc_status_t st;
    char *name = NULL;
    int nfiles = 0, rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    name = a.name ? mc_xstrdup(a.name) : default_name(a.sched);
    MC_CHECK_GOTO(cli_load_topo(a.topo, a.quiet, &topo, &err), out, st);
    MC_CHECK_GOTO(mc_sched_load(a.sched, topo, a.force, &s, &err), out, st);
    MC_CHECK_GOTO(mc_task_split(s->task, &err), out, st);
    MC_CHECK_GOTO(cli_check_sched(s, topo, a.sched, a.force, &err), out, st);
    MC_CHECK_GOTO(mc_emit_check_size(s, a.sched, &err), out, st);
    MC_CHECK_GOTO(mc_emit_files(s, topo, name, MC_VERSION, a.standalone, a.rank, a.out, &files,
                                &nfiles, &err), out, st);
    if (a.check) {
        int stale = mc_emit_stale(a.check, files, nfiles, &report);
        if (stale) {
            fprintf(stderr, "%smeshcast: %d generated file%s stale; regenerate with meshcast emit -o %s\n",
                    report.data, stale, stale == 1 ? " is" : "s are", a.check);
            rc = MC_EXIT_INVALID;
        } else {
            printf("%s: %d files up to date\n", a.check, nfiles);
            rc = MC_EXIT_OK;
        }
        goto out;
    }
    MC_CHECK_GOTO(mc_emit_write(a.out, files, nfiles, &err), out, st);
    for (int i = 0; i < nfiles; i++)
        printf("wrote %s/%s (%zu bytes)\n", a.out, files[i].name, files[i].size);
    rc = MC_EXIT_OK;
out:
    mc_emit_files_free(files, nfiles);
    mc_buf_free(&report);
    mc_sched_free(s);
    mc_topo_free(topo);
    free(name);
    return st != MC_OK ? cli_fail(&err) : rc;
}
