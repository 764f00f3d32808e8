/* meshcast sim: times a schedule on a topology with the flow-level simulator and reports the
 * makespan against the task's lower bound, the algorithm bandwidth and the busiest links; JSON
 * on request, an SVG timeline of the busy links, and with --executed the time of the plans the
 * runtime executes for it. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "emit/emit.h"
#include "sched/sched.h"
#include "sim/sim.h"
#include "sim/sim_exec.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: meshcast sim --topo FILE [--json] [--timeline OUT.svg] [--links N] [--force]\n"
            "                    [--executed [--steps | --nccl | --lanes K]] SCHEDULE\n"
            "\n"
            "Times a schedule with the flow-level simulator (max-min fair sharing of every link,\n"
            "store and forward per chunk at relay GPUs, NCCL's per-message overheads). Prints the\n"
            "makespan, the task's lower bound, their ratio, the algorithm bandwidth (bytes the\n"
            "destinations receive / makespan, GB/s with GB = 1e9 B) and the busiest links.\n"
            "\n"
            "options:\n"
            "  --topo FILE         topology (NCCL topology XML or cluster XML)\n" CLI_TOPO_USAGE
            "  --json              print JSON (makespan_s, lower_bound_s, ratio, algbw_gbps, ...)\n"
            "  --timeline OUT.svg  also draw one row per busy link over time\n"
            "  --links N           how many of the busiest links to list (default 5)\n"
            "  --force             time a schedule made for another topology\n"
            "  --executed          also time the plans `meshcast run` and emitted code run\n"
            "                      (the schedule lowered per rank, each op started when the\n"
            "                      ops it waits for are done) on the same link model, and\n"
            "                      their ratio to the schedule's makespan\n"
            "  --steps             with --executed: run the plans in lockstep micro-steps,\n"
            "                      as code emitted without dependency tables does\n"
            "  --nccl              with --executed: as the nccl backend runs them, on the\n"
            "                      plans' lanes (communicators and streams; as many as a GPU\n"
            "                      has trees in one phase)\n"
            "  --lanes K           with --executed: the same with the trees' lanes taken\n"
            "                      modulo K (K communicators and streams)\n"
            "  -q, --quiet         no topology warnings\n"
            "\n"
            "exit status: 0 ok, 1 invalid input, 2 usage error\n");
}

typedef struct sim_args {
    const char *topo, *timeline, *path;
    int json, force, quiet, nlinks, executed, steps, nccl, lanes;
} sim_args_t;

/* Returns -1 when the arguments are good, else the exit code. */
static int parse_args(int argc, char **argv, sim_args_t *a)
{
    enum { OPT_TOPO = 0x2201, OPT_JSON, OPT_TIMELINE, OPT_LINKS, OPT_FORCE, OPT_EXEC, OPT_STEPS,
           OPT_NCCL, OPT_LANES };
    static const struct option longopts[] = {
        {"topo", required_argument, NULL, OPT_TOPO},
        CLI_TOPO_LONG_OPTIONS,
        {"json", no_argument, NULL, OPT_JSON},
        {"timeline", required_argument, NULL, OPT_TIMELINE},
        {"links", required_argument, NULL, OPT_LINKS},
        {"force", no_argument, NULL, OPT_FORCE},
        {"executed", no_argument, NULL, OPT_EXEC},
        {"steps", no_argument, NULL, OPT_STEPS},
        {"nccl", no_argument, NULL, OPT_NCCL},
        {"lanes", required_argument, NULL, OPT_LANES},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    int64_t n;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_TOPO: a->topo = optarg; break;
        case OPT_JSON: a->json = 1; break;
        case OPT_TIMELINE: a->timeline = optarg; break;
        case OPT_FORCE: a->force = 1; break;
        case OPT_EXEC: a->executed = 1; break;
        case OPT_STEPS: a->steps = 1; break;
        case OPT_NCCL: a->nccl = 1; break;
        case OPT_LANES:
            if (mc_parse_i64(optarg, &n) != 0 || n < 1 || n > MC_RT_MAX_LANES)
                return cli_usage_error("sim", "--lanes expects 1 to %d, got '%s'",
                                       MC_RT_MAX_LANES, optarg);
            a->lanes = (int)n;
            break;
        case OPT_LINKS:
            if (mc_parse_i64(optarg, &n) != 0 || n < 0 || n > 100000)
                return cli_usage_error("sim", "--links expects a count, got '%s'", optarg);
            a->nlinks = (int)n;
            break;
        case 'q': a->quiet = 1; break;
        case 'h': usage(stdout); return MC_EXIT_OK;
        CLI_TOPO_CASES:
            if (cli_topo_option("sim", opt, optarg) != MC_EXIT_OK)
                return MC_EXIT_USAGE;
            break;
        default:
            return cli_usage_error("sim", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (!a->topo)
        return cli_usage_error("sim", "--topo FILE is required");
    if (argc - optind != 1)
        return cli_usage_error("sim", "expected one SCHEDULE file, got %d", argc - optind);
    if ((a->steps || a->nccl || a->lanes) && !a->executed)
        return cli_usage_error("sim", "--steps, --nccl and --lanes go with --executed");
    if (!!a->steps + !!a->nccl + !!a->lanes > 1)
        return cli_usage_error("sim", "one of --steps, --nccl and --lanes");
    a->path = argv[optind];
    return -1;
}

typedef struct sim_report {
    const mc_sched_t *s;
    const mc_topo_t *topo;
    const mc_sim_result_t *r;
    mc_bound_t bound;
    uint64_t bytes;
    int *busy, nbusy;
    int violations;
    const mc_sim_exec_result_t *x; /* the executed plans' timing, or NULL */
    const char *order;             /* how they ran */
} sim_report_t;

static double exec_ratio(const sim_report_t *p)
{
    return p->r->makespan_s > 0 ? p->x->makespan_s / p->r->makespan_s : 1.0;
}

static double ratio(const sim_report_t *p)
{
    return p->bound.seconds > 0 ? p->r->makespan_s / p->bound.seconds : 1.0;
}

static double algbw_gbps(const sim_report_t *p)
{
    return p->r->makespan_s > 0 ? (double)p->bytes / p->r->makespan_s / 1e9 : 0.0;
}

static char *link_name(const mc_topo_t *t, int l)
{
    return mc_xasprintf("%s -> %s", t->nodes[t->links[l].src].name, t->nodes[t->links[l].dst].name);
}

static void print_text(const sim_report_t *p, const char *path)
{
    char b1[32], b2[32], b3[32];
    const mc_sim_result_t *r = p->r;
    int ntrees = p->s->ntrees + p->s->inst_trees;
    printf("schedule   %s (%s, %d tree%s, %d phase%s, %ld flows)\n", path, p->s->strategy,
           ntrees, ntrees == 1 ? "" : "s", p->s->nphases, p->s->nphases == 1 ? "" : "s",
           r->nflows);
    printf("makespan   %s\n", mc_fmt_seconds(r->makespan_s, b1, sizeof b1));
    printf("bound      %s (%s)\n", mc_fmt_seconds(p->bound.seconds, b2, sizeof b2),
           mc_bound_kind_str(p->bound.binding));
    printf("ratio      %.3f\n", ratio(p));
    printf("algbw      %.3f GB/s (%s to destinations)\n", algbw_gbps(p),
           mc_fmt_bytes(p->bytes, b3, sizeof b3));
    if (p->x)
        printf("executed   %s (%s, %ld sends), %.3f x the makespan, %.3f x the bound\n",
               mc_fmt_seconds(p->x->makespan_s, b1, sizeof b1), p->order, p->x->nflows,
               exec_ratio(p),
               p->bound.seconds > 0 ? p->x->makespan_s / p->bound.seconds : 1.0);
    if (p->nbusy)
        printf("busiest links:\n");
    for (int i = 0; i < p->nbusy; i++) {
        int l = p->busy[i];
        char *name = link_name(p->topo, l);
        double util = r->makespan_s > 0 ? r->link_bytes[l] / (p->topo->links[l].bw * r->makespan_s) : 0;
        printf("  %-44s %-3s busy %s  %s  %3.0f%% of its bandwidth over the makespan\n", name,
               mc_link_kind_str(p->topo->links[l].kind),
               mc_fmt_seconds(r->link_busy_s[l], b1, sizeof b1),
               mc_fmt_bytes((uint64_t)(r->link_bytes[l] + 0.5), b2, sizeof b2), util * 100);
        free(name);
    }
}

static void print_json(const sim_report_t *p, const char *path)
{
    const mc_sim_result_t *r = p->r;
    json_t *o = json_object(), *links = json_array();
    json_object_set_new(o, "schedule", json_string(path));
    json_object_set_new(o, "strategy", json_string(p->s->strategy));
    json_object_set_new(o, "trees", json_integer(p->s->ntrees + p->s->inst_trees));
    json_object_set_new(o, "phases", json_integer(p->s->nphases));
    json_object_set_new(o, "flows", json_integer(r->nflows));
    json_object_set_new(o, "bytes", json_integer((json_int_t)p->bytes));
    json_object_set_new(o, "makespan_s", json_real(r->makespan_s));
    json_object_set_new(o, "lower_bound_s", json_real(p->bound.seconds));
    json_object_set_new(o, "bound", json_string(mc_bound_kind_str(p->bound.binding)));
    json_object_set_new(o, "ratio", json_real(ratio(p)));
    json_object_set_new(o, "algbw_gbps", json_real(algbw_gbps(p)));
    json_object_set_new(o, "violations", json_integer(p->violations));
    if (p->x) {
        json_object_set_new(o, "executed_s", json_real(p->x->makespan_s));
        json_object_set_new(o, "executed_order", json_string(p->order));
        json_object_set_new(o, "executed_ratio", json_real(exec_ratio(p)));
    }
    for (int i = 0; i < p->nbusy; i++) {
        int l = p->busy[i];
        char *name = link_name(p->topo, l);
        json_array_append_new(links, json_pack("{s:s, s:s, s:f, s:f, s:f}", "link", name, "kind",
                                               mc_link_kind_str(p->topo->links[l].kind), "busy_s",
                                               r->link_busy_s[l], "bytes", r->link_bytes[l],
                                               "bw", p->topo->links[l].bw));
        free(name);
    }
    json_object_set_new(o, "busiest_links", links);
    cli_print_json(o);
}

int cmd_sim(int argc, char **argv)
{
    sim_args_t a = {.nlinks = 5};
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    mc_topo_t *topo = NULL;
    mc_sched_t *s = NULL, *full = NULL; /* full: s expanded, for the executed plans */
    mc_sim_result_t res = {0};
    sim_report_t rep = {0};
    mc_err_t err = {0};
    mc_status_t st = MC_OK;
    char *svg = NULL;
    mc_emit_plans_t *plans = NULL;
    mc_sim_exec_result_t xres = {0};
    char order_name[32];
    MC_CHECK_GOTO(cli_load_topo(a.topo, a.quiet, &topo, &err), out, st);
    /* instances stay compact: validated and timed as their templates (the executed plans need
     * every tree) */
    MC_CHECK_GOTO(mc_sched_load_compact(a.path, topo, a.force, &s, &err), out, st);
    rep = (sim_report_t){.s = s, .topo = topo, .r = &res, .bytes = mc_task_total_bytes(s->task)};
    rep.violations = mc_sched_validate(s, topo, NULL);
    if (rep.violations)
        fprintf(stderr, "meshcast: warning: %s has %d violation%s (see meshcast validate); timing "
                        "it anyway\n", a.path, rep.violations, rep.violations == 1 ? "" : "s");
    MC_CHECK_GOTO(mc_task_bound(s->task, topo, &rep.bound, &err), out, st);
    MC_CHECK_GOTO(mc_sim_run_compact(s, topo, a.timeline != NULL, &res, &err), out, st);
    if (a.executed) {
        cli_warn_inflight(s, a.path);
        full = s->ninst ? mc_sched_sym_expanded(s, topo) : NULL;
        MC_CHECK_GOTO(mc_emit_lower_on(full ? full : s, topo, &plans, &err), out, st);
        int order = a.steps ? MC_RT_ORDER_STEPS
                    : a.nccl  ? MC_RT_ORDER_NCCL
                    : a.lanes ? MC_RT_ORDER_LANES(a.lanes) : MC_RT_ORDER_DEPS;
        MC_CHECK_GOTO(mc_sim_exec(full ? full : s, topo, plans->nranks, plans->plans,
                                  plans->gpus, order, &xres, &err),
                      out, st);
        rep.x = &xres;
        int lanes = a.lanes ? a.lanes
                    : plans->nranks ? (int)mc_rt_plan_lanes(&plans->plans[0]) : 1;
        if (a.lanes || a.nccl)
            snprintf(order_name, sizeof order_name, "nccl, %d lane%s", lanes,
                     lanes == 1 ? "" : "s");
        else
            snprintf(order_name, sizeof order_name, "%s",
                     a.steps ? "lockstep micro-steps" : "dependency graph");
        rep.order = order_name;
    }
    rep.busy = mc_xmalloc(sizeof(int) * (size_t)(a.nlinks + 1));
    rep.nbusy = mc_sim_busiest(&res, topo, rep.busy, a.nlinks);
    if (a.timeline) {
        svg = mc_sim_timeline_svg(&res, topo, a.path);
        MC_CHECK_GOTO(mc_write_file_atomic(a.timeline, svg, strlen(svg), &err), out, st);
    }
    if (a.json)
        print_json(&rep, a.path);
    else
        print_text(&rep, a.path);
out:
    mc_emit_plans_free(plans);
    mc_sim_exec_result_free(&xres);
    free(svg);
    free(rep.busy);
    mc_sim_result_free(&res);
    mc_sched_free(full);
    mc_sched_free(s);
    mc_topo_free(topo);
    return st == MC_OK ? MC_EXIT_OK : cli_fail(&err);
}
