/* meshcast run: executes a schedule end to end on real buffers and checks every byte. Sources are
 * filled with a pattern derived from each element's global index, destinations with its
 * complement; after the run every destination byte must hold the pattern. The work is the
 * runtime driver's (mc_rt_drive, its table of backends) with emit's pattern as hooks; this file
 * parses and prints. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "emit/emit.h"
#include "runtime/runtime.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: meshcast run --topo FILE [--backend loopback] [--gpu] [options] SCHEDULE...\n"
            "       mpirun -np N meshcast run --topo FILE --backend mpi|nccl [options] SCHEDULE...\n"
            "\n"
            "Executes schedules one after the other on real buffers and checks every destination\n"
            "byte; several schedules share one MPI job (they must need the same ranks). Sources hold\n"
            "a pattern derived from each element's global index. Prints the time and the algorithm\n"
            "bandwidth (bytes delivered to destinations / time, GB = 1e9 B). Under mpirun, N must\n"
            "be the number of GPUs the schedule involves; rank r runs the r-th of them in GPU order.\n"
            "\n"
            "options:\n"
            "  --topo FILE          the topology the schedule was made for\n" CLI_TOPO_USAGE
            "  --backend NAME       loopback (default), mpi or nccl\n"
            "  --gpu                loopback on GPU 0: one buffer set per rank, device copies\n"
            "  --timeout S          seconds any wait may go without progress before the run fails\n"
            "                       (default 30); a rank that finished waits for the others\n"
            "  --workspace BYTES    give every rank this much workspace instead of what its plan\n"
            "                       needs (a smaller one is refused)\n"
            "  --absent-rank R      mpi/nccl: rank R stops after the set-up, as if it had died\n"
            "                       (fault tests: the others must fail within --timeout)\n"
            "  --stop-rank R --stop-at STAGE\n"
            "                       mpi/nccl: rank R stops itself (SIGSTOP) at STAGE: set-up,\n"
            "                       transfer or check (fault tests: the job must end within\n"
            "                       --timeout plus 2 s, naming the rank and the stage)\n"
            "  --print-ranks        print the number of ranks each schedule needs, run nothing\n"
            "  --print-memory       print the host bytes a loopback run of each schedule\n"
            "                       allocates, run nothing\n"
            "  --bench-copies N     GPU: time up to N of the schedule's strided copies (packs and\n"
            "                       unpacks: pack kernel or pitched copy-engine copies) against\n"
            "                       cudaMemcpyAsync of the same bytes on GPU 0, run nothing else\n"
            "  --force              run a schedule that meshcast validate refuses, or one made\n"
            "                       for another topology (checked link by link): its violations\n"
            "                       are printed as a warning; without it it is refused\n"
            "  -q, --quiet          no topology warnings\n"
            "\n"
            "exit status: 0 every byte correct, 1 wrong bytes, invalid input or a failed run,\n"
            "2 usage error\n");
}

typedef struct run_args {
    const char *topo, *sched; /* sched: the schedule being run */
    char **scheds;
    int nscheds;
    const mc_rt_backend_t *backend;
    int gpu, quiet, absent, stop_rank, stop_at, print_ranks, print_memory, bench_copies, force;
    double timeout;
    int64_t workspace; /* -1: the plan's */
} run_args_t;

static int parse_args(int argc, char **argv, run_args_t *a)
{
    enum {
        OPT_TOPO = 0x2001, OPT_BACKEND, OPT_GPU, OPT_TIMEOUT, OPT_WS, OPT_ABSENT, OPT_RANKS,
        OPT_BENCH, OPT_MEMORY, OPT_STOP_RANK, OPT_STOP_AT, OPT_FORCE
    };
    static const struct option longopts[] = {
        {"topo", required_argument, NULL, OPT_TOPO},
        CLI_TOPO_LONG_OPTIONS,
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"gpu", no_argument, NULL, OPT_GPU},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"workspace", required_argument, NULL, OPT_WS},
        {"absent-rank", required_argument, NULL, OPT_ABSENT},
        {"stop-rank", required_argument, NULL, OPT_STOP_RANK},
        {"stop-at", required_argument, NULL, OPT_STOP_AT},
        {"print-ranks", no_argument, NULL, OPT_RANKS},
        {"print-memory", no_argument, NULL, OPT_MEMORY},
        {"bench-copies", required_argument, NULL, OPT_BENCH},
        {"force", no_argument, NULL, OPT_FORCE},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    int64_t v;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_TOPO: a->topo = optarg; break;
        case OPT_GPU: a->gpu = 1; break;
        case OPT_RANKS: a->print_ranks = 1; break;
        case OPT_MEMORY: a->print_memory = 1; break;
        case OPT_FORCE: a->force = 1; break;
        case 'q': a->quiet = 1; break;
        case 'h': usage(stdout); return MC_EXIT_OK;
        case OPT_BACKEND:
            if (!strcmp(optarg, "loopback-gpu") || !(a->backend = mc_rt_backend_find(optarg)))
                return cli_usage_error("run", "--backend: expected loopback, mpi or nccl, got '%s'",
                                       optarg);
            break;
        case OPT_STOP_AT:
            if ((a->stop_at = mc_rt_stage_parse(optarg)) < 0)
                return cli_usage_error("run", "--stop-at: expected set-up, transfer or check, got "
                                       "'%s'", optarg);
            break;
        case OPT_TIMEOUT:
            if (mc_parse_double(optarg, &a->timeout) || a->timeout <= 0)
                return cli_usage_error("run", "--timeout: expected seconds > 0, got '%s'", optarg);
            break;
        case OPT_WS:
            if (mc_parse_i64(optarg, &a->workspace) || a->workspace < 0)
                return cli_usage_error("run", "--workspace: expected bytes >= 0, got '%s'", optarg);
            break;
        case OPT_BENCH:
            if (mc_parse_i64(optarg, &v) || v < 1 || v > 1000)
                return cli_usage_error("run", "--bench-copies: expected 1 to 1000, got '%s'",
                                       optarg);
            a->bench_copies = (int)v;
            break;
        case OPT_ABSENT:
        case OPT_STOP_RANK:
            if (mc_parse_i64(optarg, &v) || v < 0 || v > 1 << 20)
                return cli_usage_error("run", "%s: expected a rank, got '%s'", argv[optind - 2],
                                       optarg);
            *(opt == OPT_ABSENT ? &a->absent : &a->stop_rank) = (int)v;
            break;
        CLI_TOPO_CASES:
            if (cli_topo_option("run", opt, optarg) != MC_EXIT_OK)
                return MC_EXIT_USAGE;
            break;
        default:
            return cli_usage_error("run", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error("run", "expected a SCHEDULE file");
    a->scheds = argv + optind;
    a->nscheds = argc - optind;
    if (!a->topo)
        return cli_usage_error("run", "--topo FILE is required");
    if (a->gpu && a->backend->run_rank)
        return cli_usage_error("run", "--gpu goes with --backend loopback");
    if ((a->stop_rank >= 0) != (a->stop_at >= 0))
        return cli_usage_error("run", "--stop-rank and --stop-at go together");
    if (a->gpu)
        a->backend = mc_rt_backend_find("loopback-gpu");
    return -1;
}

static mc_status_t rt_status(const mc_rt_err_t *re, mc_err_t *err)
{
    return mc_err_set(err, re->status == MC_RT_ERR_INVALID ? MC_ERR_INVALID : MC_ERR_RUNTIME, "%s",
                      re->msg);
}

static void summary(const run_args_t *a, const char *backend, int nranks, const mc_task_t *task,
                    double secs, uint64_t wrong)
{
    char b1[32], b2[32];
    uint64_t bytes = mc_task_total_bytes(task);
    printf("%s: %s: %d ranks, %s delivered in %s, algbw %.3f GB/s, %s\n", a->sched, backend,
           nranks, mc_fmt_bytes(bytes, b1, sizeof b1), mc_fmt_seconds(secs, b2, sizeof b2),
           secs > 0 ? bytes / secs / 1e9 : 0.0,
           wrong ? "WRONG BYTES" : "every destination byte correct");
    if (wrong)
        printf("%llu wrong bytes\n", (unsigned long long)wrong);
}

/* Runs the plans through the runtime's driver and prints the result. Under mpirun, an error once
 * the ranks started talking aborts the job: a peer may still wait on this rank. */
static int run_driven(const run_args_t *a, const mc_task_t *task, const mc_emit_plans_t *P)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    mc_emit_pattern_t pt = {task, P, {0}};
    mc_rt_drive_hooks_t hooks;
    mc_rt_drive_opts_t o = {a->backend, a->workspace, a->timeout, &comm,
                            a->absent, a->stop_rank, a->stop_at};
    mc_rt_drive_result_t res;
    mc_rt_err_t re = {0};
    mc_err_t err = {0};
    int st;
    mc_emit_pattern_hooks(&pt, &hooks);
    st = mc_rt_drive(P->nranks, P->plans, &o, &hooks, &res, &re);
    if (st == MC_RT_OK) {
        if (pt.report.len)
            fputs(pt.report.data, stdout);
        fflush(stdout);
        if (res.rank == 0)
            summary(a, a->backend->name, P->nranks, task, res.seconds, res.wrong);
    } else if (res.started) {
        fprintf(stderr, "meshcast: %s\n", re.msg);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, MC_EXIT_INVALID);
    } else if (res.rank == 0) {
        cli_fail((mc_err_set(&err, rt_status(&re, &err), "%s: %s", a->sched, re.msg), &err));
    }
    mc_buf_free(&pt.report);
    return st != MC_RT_OK ? MC_EXIT_INVALID : res.wrong ? MC_EXIT_INVALID : MC_EXIT_OK;
}

/* Times up to a->bench_copies strided copies of the plans, one per distinct shape, on GPU 0.
 * Bandwidth counts the bytes read and written, as nccl-tests and the copy-engine figures do. */
static int bench_copies(const run_args_t *a, const mc_emit_plans_t *P)
{
    int done = 0;
    mc_rt_err_t re = {0};
    mc_err_t err = {0};
    for (int r = 0; r < P->nranks && done < a->bench_copies; r++) {
        const mc_rt_plan_t *p = &P->plans[r];
        for (uint32_t i = 0; i < p->nops && done < a->bench_copies; i++) {
            const mc_rt_op_t *o = &p->ops[i];
            if (o->kind != MC_RT_OP_COPY || mc_rt_copy_contiguous(p, o))
                continue;
            double rt, k, m;
            if (mc_rt_cuda_bench_copy(p, i, 5, &rt, &k, &m, &re) != MC_RT_OK)
                return cli_fail((rt_status(&re, &err), &err));
            const mc_rt_box_t *sb = &p->boxes[o->src.box], *db = &p->boxes[o->dst.box];
            mc_rt_rows_t rows;
            int ce = mc_rt_copy_rows(p, o, MC_RT_COPY_ENGINE_MIN_RUN, &rows);
            printf("%s: copy %d.%u: %llu bytes, %d-d -> %d-d boxes, runs of %llu -> %llu bytes: "
                   "runtime (%s) %.1f GB/s, %.0f%%; pack kernel (%d-byte words) %.1f GB/s, %.0f%%; "
                   "cudaMemcpyAsync %.1f GB/s\n",
                   a->sched, r, i, (unsigned long long)o->bytes, sb->ndims, db->ndims,
                   (unsigned long long)sb->extent[sb->ndims - 1],
                   (unsigned long long)db->extent[db->ndims - 1],
                   ce ? "cudaMemcpy2DAsync" : "pack kernel", 2 * o->bytes / rt / 1e9, 100 * m / rt,
                   mc_rt_copy_word(p, o, NULL), 2 * o->bytes / k / 1e9, 100 * m / k,
                   2 * o->bytes / m / 1e9);
            done++;
        }
    }
    if (!done)
        printf("%s: no strided copies to time\n", a->sched);
    return MC_EXIT_OK;
}

/* Loads, lowers and runs one schedule; returns the exit code. */
static int run_one(const run_args_t *a, const mc_topo_t *topo)
{
    mc_sched_t *s = NULL;
    mc_emit_plans_t *P = NULL;
    mc_err_t err = {0};
    mc_status_t st;
    int rc = MC_EXIT_OK;
    MC_CHECK_GOTO(mc_sched_load(a->sched, topo, a->force, &s, &err), out, st);
    MC_CHECK_GOTO(mc_task_split(s->task, &err), out, st);
    MC_CHECK_GOTO(cli_check_sched(s, topo, a->sched, a->force, &err), out, st);
    /* One rank per process (mpi, nccl): only this process's plan is made (mc_emit_lower_rank),
     * which costs the trees that touch its GPU rather than every rank's plan; a process mpirun
     * started beyond the schedule's ranks makes them all, for the driver to say how many it
     * needs. */
    int me = -1;
    if (a->backend->run_rank)
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
    st = me >= 0 ? mc_emit_lower_rank(s, topo, me, &P, &err) : MC_ERR_USAGE;
    if (st == MC_ERR_USAGE)
        st = mc_emit_lower_on(s, topo, &P, &err);
    if (st != MC_OK)
        goto out;
    if (a->print_ranks) {
        printf("%d\n", P->nranks);
        goto out;
    }
    if (a->print_memory) {
        mc_emit_pattern_t pt = {s->task, P, {0}};
        mc_rt_drive_hooks_t hooks;
        mc_emit_pattern_hooks(&pt, &hooks);
        printf("%llu\n", (unsigned long long)mc_rt_drive_host_bytes(P->nranks, P->plans, &hooks,
                                                                     -1));
        goto out;
    }
    if (a->bench_copies) {
        rc = bench_copies(a, P);
        goto out;
    }
    rc = run_driven(a, s->task, P);
out:
    mc_emit_plans_free(P);
    mc_sched_free(s);
    return st != MC_OK ? cli_fail(&err) : rc;
}

int cmd_run(int argc, char **argv)
{
    run_args_t a = {.backend = mc_rt_backend_find("loopback"), .timeout = 30, .workspace = -1,
                    .absent = -1, .stop_rank = -1, .stop_at = -1};
    mc_topo_t *topo = NULL;
    mc_err_t err = {0};
    int provided, rc = parse_args(argc, argv, &a), worst = MC_EXIT_OK;
    if (rc >= 0)
        return rc;
    if (cli_load_topo(a.topo, a.quiet, &topo, &err) != MC_OK)
        return cli_fail(&err);
    if (a.print_ranks || a.print_memory || a.bench_copies)
        a.backend = mc_rt_backend_find("loopback");
    if (a.backend->run_rank)
        MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided);
    for (int i = 0; i < a.nscheds; i++) {
        a.sched = a.scheds[i];
        rc = run_one(&a, topo);
        worst = rc > worst ? rc : worst;
        fflush(stdout);
    }
    if (a.backend->run_rank)
        MPI_Finalize();
    mc_topo_free(topo);
    return worst;
}
