/* meshcast task: splits a resharding task into pieces and reports what each GPU and host must
 * receive, the lower bound on time with every term and where it binds, and the peak-memory
 * bound. */
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage_text[] =
    "usage: meshcast task [--topo FILE] [--json] [-q] [--limit N] [task options] MOVE...\n"
    "\n"
    "Splits a resharding task into pieces (maximal boxes with one holder set and one destination\n"
    "set, largest first) and prints the bytes each GPU and host must receive, the lower bound on\n"
    "time with each of its terms and the GPU, pair or set where it binds (needs --topo; terms:\n"
    "docs/task-format.md), and the peak-memory bound per GPU.\n"
    "\n"
    "  --topo FILE                 topology (NCCL topology XML or cluster XML)\n" CLI_TOPO_USAGE
    "  --json                      print JSON instead of text\n"
    "  -q, --quiet                 no topology warnings (--json implies it)\n"
    "  --limit N                   rows per table in text output (default 20, 0 = all)\n"
    CLI_TASK_USAGE
    "\n"
    "GPU lists in the table: 0-3 is 0,1,2,3; 16-40/8 is 16,24,32,40; ...(N) ends a long list.\n"
    "\n"
    "example:\n"
    "  meshcast task --topo topologies/aws-p3.8xlarge-x5.xml --mesh 'A={host:2,gpu:4}@0..7' \\\n"
    "      --mesh 'B={host:2,gpu:4}@8..15' 'i32[1024,1024,512] A[host,_,_] -> B[host,_,_]'\n";

/* An ascending id list, arithmetic runs of three or more compressed: "0-3,8,16-40/8"; lists
 * longer than a table cell end in "...(N)". */
static void ids_text(mc_buf_t *b, const int *ids, int n)
{
    mc_buf_append(b, "", 0);
    for (int i = 0; i < n && b->len <= 40;) {
        int j = i;
        int step = i + 1 < n ? ids[i + 1] - ids[i] : 1;
        while (j + 1 < n && ids[j + 1] - ids[j] == step)
            j++;
        if (j - i < 2)
            j = i;
        mc_buf_printf(b, "%s%d", i ? "," : "", ids[i]);
        if (j > i)
            mc_buf_printf(b, step == 1 ? "-%d" : "-%d/%d", ids[j], step);
        i = j + 1;
        if (i < n && b->len > 40)
            mc_buf_printf(b, ",...(%d)", n);
    }
}

static void box_text(mc_buf_t *b, const mc_box_t *box, int nd)
{
    mc_buf_printf(b, "[");
    for (int k = 0; k < nd; k++)
        mc_buf_printf(b, "%s%lld:%lld", k ? "," : "", (long long)box->lo[k], (long long)box->hi[k]);
    mc_buf_printf(b, "]");
}

/* Bytes to receive and the peak-memory bound of every GPU (the topology's, or up to the largest
 * id in the meshes without one), in new arrays; returns the GPU count. */
static int gpu_figures(const mc_task_t *task, const mc_topo_t *topo, uint64_t **need,
                       uint64_t **peak)
{
    int n = 0;
    if (topo)
        n = topo->ngpus;
    for (int m = 0; !topo && m < task->nmeshes; m++)
        for (int i = 0; i < task->meshes[m].ndevices; i++)
            if (task->meshes[m].devices[i] + 1 > n)
                n = task->meshes[m].devices[i] + 1;
    *need = mc_xmalloc(sizeof(uint64_t) * (size_t)n);
    *peak = mc_xmalloc(sizeof(uint64_t) * (size_t)n);
    mc_task_need_bytes_all(task, n, *need);
    mc_task_peak_mem_bound_all(task, n, *peak);
    return n;
}

/* Per-host bytes in and out (mc_task_host_bytes) in new arrays. */
static void host_bytes(const mc_task_t *task, const mc_topo_t *topo, uint64_t **in, uint64_t **out)
{
    *in = mc_xmalloc(sizeof(uint64_t) * (size_t)topo->nhosts);
    *out = mc_xmalloc(sizeof(uint64_t) * (size_t)topo->nhosts);
    mc_task_host_bytes(task, topo, *in, *out);
}

static void print_pieces(const mc_task_t *task, int limit)
{
    char sz[32];
    printf("pieces: %d (largest first)\n", task->npieces);
    if (task->npieces)
        printf("  %5s  %-8s %-28s %12s  %-16s %s\n", "#", "tensor", "box", "bytes", "holders",
               "dests");
    for (int i = 0; i < task->npieces && (limit == 0 || i < limit); i++) {
        const mc_piece_t *p = &task->pieces[i];
        mc_buf_t box = {0}, hold = {0}, dest = {0};
        box_text(&box, &p->box, task->tensors[p->tensor].src.ndims);
        ids_text(&hold, p->holders, p->nholders);
        ids_text(&dest, p->dests, p->ndests);
        printf("  %5d  %-8s %-28s %12s  %-16s %s\n", i, task->tensors[p->tensor].name, box.data,
               mc_fmt_bytes(p->bytes, sz, sizeof(sz)), hold.data, dest.data);
        mc_buf_free(&box);
        mc_buf_free(&hold);
        mc_buf_free(&dest);
    }
    if (limit && task->npieces > limit)
        printf("  ... %d more pieces (--limit 0 shows all)\n", task->npieces - limit);
    uint64_t copied = 0;
    for (int i = 0; i < task->ncopies; i++)
        copied += task->copies[i].bytes;
    printf("local copies: %d (%s)\n", task->ncopies, mc_fmt_bytes(copied, sz, sizeof(sz)));
}

/* The bandwidth time of a term kind's largest term. */
static double term_seconds(const mc_bound_t *b, mc_bound_kind_t k)
{
    const double s[MC_BOUND_NTERMS] = {b->ingress_s, b->egress_s, b->host_cut_s, b->mesh_cut_s,
                                       b->flow_s, b->cut_s, b->lp_s, b->host_relay_s,
                                       b->reach_s};
    return s[k];
}

/* The GPUs of the cut term's set in a new array; returns their count. */
static int cut_gpus(const mc_topo_t *topo, const mc_bound_t *b, int **gpus)
{
    *gpus = mc_xmalloc(sizeof(int) * (size_t)topo->ngpus);
    return mc_bound_set_gpus(topo, &b->cut_set, *gpus);
}

/* Where a term kind's largest term binds, in words ("-" when the kind has no term). */
static void where_text(mc_buf_t *w, const mc_task_t *task, const mc_topo_t *topo,
                       const mc_bound_t *b, mc_bound_kind_t k)
{
    int at = b->term_where[k];
    mc_buf_append(w, "", 0);
    if (at < 0) {
        mc_buf_printf(w, "-");
    } else if (k == MC_BOUND_INGRESS || k == MC_BOUND_REACH) {
        mc_buf_printf(w, "GPU %d", at);
    } else if (k == MC_BOUND_EGRESS) {
        mc_buf_printf(w, "holder group of GPU %d", at);
    } else if (k == MC_BOUND_HOST_CUT) {
        mc_buf_printf(w, "host %d", at);
    } else if (k == MC_BOUND_MESH_CUT) {
        mc_buf_printf(w, "mesh %s", task->meshes[at].name);
    } else if (k == MC_BOUND_FLOW) {
        mc_buf_printf(w, "holder group of GPU %d to GPU %d", b->flow_holder, at);
    } else if (k == MC_BOUND_LP) {
        mc_buf_printf(w, "every piece");
    } else if (k == MC_BOUND_HOST_RELAY) {
        mc_buf_printf(w, "out of host %d", at);
    } else {
        int *ids, n = cut_gpus(topo, b, &ids);
        mc_buf_printf(w, "bytes %s GPUs ", b->cut_set.into ? "into" : "out of");
        ids_text(w, ids, n);
        free(ids);
    }
}

static void print_text(const mc_task_t *task, const mc_topo_t *topo, const mc_bound_t *b,
                       int limit)
{
    char sz[32], tm[32];
    char *text = mc_task_to_text(task);
    printf("task: %d tensor%s, %d mesh%s\n%s", task->ntensors, task->ntensors == 1 ? "" : "s",
           task->nmeshes, task->nmeshes == 1 ? "" : "es", text);
    free(text);
    print_pieces(task, limit);
    uint64_t total = mc_task_total_bytes(task);
    printf("bytes to move: %llu (%s)\n", (unsigned long long)total,
           mc_fmt_bytes(total, sz, sizeof(sz)));
    uint64_t *needs, *mems, peak = 0;
    int ngpus = gpu_figures(task, topo, &needs, &mems), shown = 0, needy = 0, peak_gpu = 0;
    printf("bytes each GPU must receive:\n");
    for (int g = 0; g < ngpus; g++) {
        uint64_t need = needs[g];
        if (mems[g] > peak) {
            peak = mems[g];
            peak_gpu = g;
        }
        if (!need)
            continue;
        needy++;
        if (limit && shown == limit)
            continue;
        shown++;
        printf("  GPU %-5d", g);
        if (topo)
            printf(" host %-4d", mc_topo_gpu_host(topo, g));
        printf(" %14llu  %s\n", (unsigned long long)need, mc_fmt_bytes(need, sz, sizeof(sz)));
    }
    if (needy > shown)
        printf("  ... %d more GPUs\n", needy - shown);
    free(needs);
    free(mems);
    if (topo) {
        uint64_t *in, *out;
        host_bytes(task, topo, &in, &out);
        printf("bytes each host must receive from outside it (distinct):\n");
        int nin = 0;
        for (int h = 0; h < topo->nhosts; h++)
            if (in[h] && (limit == 0 || nin++ < limit))
                printf("  host %-4d %14llu  %s\n", h, (unsigned long long)in[h],
                       mc_fmt_bytes(in[h], sz, sizeof(sz)));
        if (limit && nin > limit)
            printf("  ... %d more hosts\n", nin - limit);
        free(in);
        free(out);
        printf("lower bound: %s, bound by %s", mc_fmt_seconds(b->seconds, tm, sizeof(tm)),
               mc_bound_kind_str(b->binding));
        if (b->binding < MC_BOUND_NTERMS) {
            mc_buf_t w = {0};
            where_text(&w, task, topo, b, b->binding);
            printf(" (%s)", w.data);
            mc_buf_free(&w);
        }
        printf("\n");
        for (int k = 0; k < MC_BOUND_NTERMS; k++) {
            mc_buf_t w = {0};
            where_text(&w, task, topo, b, (mc_bound_kind_t)k);
            printf("  %-10s %-10s %s\n", mc_bound_kind_str((mc_bound_kind_t)k),
                   mc_fmt_seconds(term_seconds(b, (mc_bound_kind_t)k), tm, sizeof(tm)),
                   w.data);
            mc_buf_free(&w);
        }
        printf("  %-10s %s\n", mc_bound_kind_str(MC_BOUND_LATENCY),
               mc_fmt_seconds(b->latency_s, tm, sizeof(tm)));
    }
    printf("peak memory bound: %s on GPU %d (max of source and destination tiles)\n",
           mc_fmt_bytes(peak, sz, sizeof(sz)), peak_gpu);
}

static json_t *json_u64(uint64_t v)
{
    return v <= (uint64_t)LLONG_MAX ? json_integer((json_int_t)v) : json_real((double)v);
}

/* A JSON array of n byte counts; frees values, which the caller no longer needs. */
static json_t *json_u64_array(uint64_t *values, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_u64(values[i]));
    free(values);
    return a;
}

static json_t *json_ids(const int *ids, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(ids[i]));
    return a;
}

static void json_box(json_t *o, const mc_box_t *box, int nd)
{
    json_t *lo = json_array(), *hi = json_array();
    for (int k = 0; k < nd; k++) {
        json_array_append_new(lo, json_integer(box->lo[k]));
        json_array_append_new(hi, json_integer(box->hi[k]));
    }
    json_object_set_new(o, "lo", lo);
    json_object_set_new(o, "hi", hi);
}

/* Where a term kind binds, as JSON: null when it has no term. */
static json_t *json_where(const mc_task_t *task, const mc_topo_t *topo, const mc_bound_t *b,
                          mc_bound_kind_t k)
{
    int at = b->term_where[k];
    if (at < 0)
        return json_null();
    json_t *o = json_object();
    mc_buf_t w = {0};
    where_text(&w, task, topo, b, k);
    json_object_set_new(o, "text", json_string(w.data));
    mc_buf_free(&w);
    if (k == MC_BOUND_INGRESS || k == MC_BOUND_FLOW || k == MC_BOUND_REACH)
        json_object_set_new(o, "gpu", json_integer(at));
    if (k == MC_BOUND_EGRESS || k == MC_BOUND_FLOW)
        json_object_set_new(o, "holder", json_integer(k == MC_BOUND_FLOW ? b->flow_holder : at));
    if (k == MC_BOUND_HOST_CUT || k == MC_BOUND_HOST_RELAY)
        json_object_set_new(o, "host", json_integer(at));
    if (k == MC_BOUND_MESH_CUT)
        json_object_set_new(o, "mesh", json_string(task->meshes[at].name));
    if (k == MC_BOUND_CUT) {
        int *ids, n = cut_gpus(topo, b, &ids);
        json_object_set_new(o, "gpus", json_ids(ids, n));
        json_object_set_new(o, "into", json_boolean(b->cut_set.into));
        free(ids);
    }
    return o;
}

static void print_json(const mc_task_t *task, const mc_topo_t *topo, const mc_bound_t *b)
{
    json_t *root = json_object();
    char *text = mc_task_to_text(task);
    json_object_set_new(root, "task", json_string(text));
    free(text);
    json_object_set_new(root, "bytes_total", json_u64(mc_task_total_bytes(task)));
    json_object_set_new(root, "npieces", json_integer(task->npieces));
    json_t *pieces = json_array();
    for (int i = 0; i < task->npieces; i++) {
        const mc_piece_t *p = &task->pieces[i];
        json_t *o = json_object();
        json_object_set_new(o, "tensor", json_string(task->tensors[p->tensor].name));
        json_box(o, &p->box, task->tensors[p->tensor].src.ndims);
        json_object_set_new(o, "bytes", json_u64(p->bytes));
        json_object_set_new(o, "holders", json_ids(p->holders, p->nholders));
        json_object_set_new(o, "dests", json_ids(p->dests, p->ndests));
        json_array_append_new(pieces, o);
    }
    json_object_set_new(root, "pieces", pieces);
    json_t *copies = json_array();
    for (int i = 0; i < task->ncopies; i++) {
        const mc_local_copy_t *c = &task->copies[i];
        json_t *o = json_object();
        json_object_set_new(o, "tensor", json_string(task->tensors[c->tensor].name));
        json_object_set_new(o, "gpu", json_integer(c->gpu));
        json_box(o, &c->box, task->tensors[c->tensor].src.ndims);
        json_object_set_new(o, "bytes", json_u64(c->bytes));
        json_array_append_new(copies, o);
    }
    json_object_set_new(root, "local_copies", copies);
    uint64_t *needs, *mems;
    int ngpus = gpu_figures(task, topo, &needs, &mems);
    json_object_set_new(root, "need_bytes", json_u64_array(needs, ngpus));
    json_object_set_new(root, "peak_mem_bytes", json_u64_array(mems, ngpus));
    if (topo) {
        uint64_t *in, *out;
        host_bytes(task, topo, &in, &out);
        json_object_set_new(root, "host_need_bytes", json_u64_array(in, topo->nhosts));
        json_object_set_new(root, "host_send_bytes", json_u64_array(out, topo->nhosts));
        json_object_set_new(root, "lower_bound_s", json_real(b->seconds));
        json_object_set_new(root, "bound", json_string(mc_bound_kind_str(b->binding)));
        json_object_set_new(root, "bound_where", json_integer(b->where));
        json_t *terms = json_object(), *where = json_object();
        for (int k = 0; k < MC_BOUND_NTERMS; k++) {
            const char *name = mc_bound_kind_str((mc_bound_kind_t)k);
            json_object_set_new(terms, name, json_real(term_seconds(b, (mc_bound_kind_t)k)));
            json_object_set_new(where, name, json_where(task, topo, b, (mc_bound_kind_t)k));
        }
        json_object_set_new(terms, "latency", json_real(b->latency_s));
        json_object_set_new(root, "terms_where", where);
        json_object_set_new(root, "terms_s", terms);
    } else {
        json_object_set_new(root, "lower_bound_s", json_null());
        json_object_set_new(root, "bound", json_null());
    }
    json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    printf("\n");
    json_decref(root);
}

int cmd_task(int argc, char **argv)
{
    static const struct option opts[] = {
        {"topo", required_argument, NULL, 't'},  {"json", no_argument, NULL, 'j'},
        {"quiet", no_argument, NULL, 'q'},       CLI_TOPO_LONG_OPTIONS,
        {"limit", required_argument, NULL, 'l'}, {"help", no_argument, NULL, 'h'},
        CLI_TASK_LONG_OPTIONS,                   {NULL, 0, NULL, 0},
    };
    const char *topo_path = NULL;
    int json = 0, quiet = 0, rc = MC_EXIT_OK;
    int64_t limit = 20;
    cli_task_args_t ta = {0};
    mc_topo_t *topo = NULL;
    mc_task_t *task = NULL;
    mc_err_t err = {0};
    mc_bound_t bound = {0};
    if (cli_wants_help(argc, argv)) {
        fputs(usage_text, stdout);
        return MC_EXIT_OK;
    }
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "q", opts, NULL)) != -1) {
        int r = cli_task_option(&ta, c, optarg);
        if (r < 0)
            return cli_usage_error("task", "too many --mesh options (at most 64)");
        if (r > 0)
            continue;
        switch (c) {
        case 't':
            topo_path = optarg;
            break;
        case 'j':
            json = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'l':
            if (mc_parse_i64(optarg, &limit) || limit < 0 || limit > INT_MAX)
                return cli_usage_error("task", "--limit expects a count, got '%s'", optarg);
            break;
        CLI_TOPO_CASES:
            if (cli_topo_option("task", c, optarg) != MC_EXIT_OK)
                return MC_EXIT_USAGE;
            break;
        default:
            return cli_usage_error("task", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (topo_path && cli_load_topo(topo_path, json || quiet, &topo, &err) != MC_OK)
        goto fail;
    if (cli_task_build(&ta, argc - optind, argv + optind, topo, &task, &err) != MC_OK)
        goto fail;
    if (topo && mc_task_bound_terms(task, topo, &bound, &err) != MC_OK)
        goto fail;
    if (json)
        print_json(task, topo, &bound);
    else
        print_text(task, topo, &bound, (int)limit);
    goto out;
fail:
    rc = cli_fail(&err);
out:
    mc_task_free(task);
    mc_topo_free(topo);
    return rc;
}
