/* 'meshcast topo': inspect a topology file. 'show' summarizes it, 'route' prints the links a
 * transfer between two GPUs takes, 'dot' draws it with Graphviz. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/topo_cli.h"

static const char *usage_text =
    "usage: meshcast topo show FILE [--json] [--all] [-q|--quiet]\n"
    "       meshcast topo route FILE GPU_A GPU_B [--json] [-q|--quiet]\n"
    "       meshcast topo dot FILE [--svg OUT] [-q|--quiet]\n"
    "\n"
    "Inspects a topology: NCCL topology XML (NCCL_TOPO_DUMP_FILE), RCCL's variant of it, or\n"
    "meshcast cluster XML.\n"
    "Bandwidths are GB/s (1e9 bytes/s) per direction, as NCCL counts them.\n"
    "\n"
    "  show    hosts, GPUs (sm, NVLink bandwidth), NVLink domains, how GPUs reach each other\n"
    "          (X, NVL, XGMI, PCI, SYS, NET, as nvidia-smi topo -m), NIC ports, the PCIe tree,\n"
    "          link counts by kind and the loader's warnings\n"
    "  route   the links a transfer from GPU_A to GPU_B takes (global GPU indexes), its\n"
    "          bottleneck bandwidth and latency\n"
    "  dot     the topology as Graphviz DOT on stdout, or rendered to OUT with --svg\n"
    "\n"
    "  --json      one JSON object instead of text (show: also the kind of connection between\n"
    "              every two GPUs of a host, as nvidia-smi topo -m or rocm-smi --showtopo list)\n"
    "  --all       show the GPU pairs of every host (default: the first) and the PCIe tree of\n"
    "              every host (default: the first when there are many)\n"
    "  --svg OUT   render with Graphviz's dot into OUT\n"
    "  -q, --quiet do not print the loader's warnings on stderr\n"
    CLI_TOPO_USAGE
    "\n"
    "Exit status: 0 ok, 1 invalid topology file, 2 usage error.\n";

typedef struct topo_args {
    int json, all, quiet;
    const char *svg;
    int npos;
    char *pos[4];
} topo_args_t;

static int parse_args(int argc, char **argv, topo_args_t *a)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"all", no_argument, NULL, 'a'},
        {"svg", required_argument, NULL, 's'}, {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'}, CLI_TOPO_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "hq", opts, NULL)) != -1) {
        switch (c) {
        case 'j': a->json = 1; break;
        case 'a': a->all = 1; break;
        case 's': a->svg = optarg; break;
        case 'q': a->quiet = 1; break;
        CLI_TOPO_CASES:
            if (cli_topo_option("topo", c, optarg) != MC_EXIT_OK)
                return MC_EXIT_USAGE;
            break;
        default:
            return cli_usage_error("topo", "unknown option '%s'", argv[optind - 1]);
        }
    }
    for (; optind < argc; optind++) {
        if (a->npos == 4)
            return cli_usage_error("topo", "too many arguments");
        a->pos[a->npos++] = argv[optind];
    }
    return MC_EXIT_OK;
}

static int parse_gpu(const char *s, const mc_topo_t *t, int *gpu)
{
    int64_t v;
    if (mc_parse_i64(s, &v) != 0 || v < 0 || v >= t->ngpus)
        return cli_usage_error("topo", "'%s' is not a GPU index of %s (0..%d)", s, t->source,
                               t->ngpus - 1);
    *gpu = (int)v;
    return MC_EXIT_OK;
}

static int print_route(const mc_topo_t *t, const mc_route_t *r, int json)
{
    char lat[32];
    if (json) {
        json_t *links = json_array();
        for (int i = 0; i < r->nlinks; i++) {
            const mc_link_t *l = &t->links[r->links[i]];
            json_array_append_new(links, json_pack("{s:s, s:s, s:s, s:f, s:f}", "from",
                                                   t->nodes[l->src].name, "to",
                                                   t->nodes[l->dst].name, "kind",
                                                   mc_link_kind_str(l->kind), "bw", l->bw / 1e9,
                                                   "latency", l->latency));
        }
        json_t *o = json_pack("{s:i, s:i, s:o, s:f, s:f, s:i}", "src", r->src_gpu, "dst",
                              r->dst_gpu, "links", links, "bw", r->nlinks ? r->bw / 1e9 : 0.0,
                              "latency", r->latency, "via_gpu", r->via_gpu);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        printf("%s\n", s);
        free(s);
        json_decref(o);
        return MC_EXIT_OK;
    }
    printf("route GPU %d (%s) -> GPU %d (%s)\n", r->src_gpu, t->nodes[t->gpu_node[r->src_gpu]].name,
           r->dst_gpu, t->nodes[t->gpu_node[r->dst_gpu]].name);
    if (r->nlinks == 0) {
        printf("same GPU: no links\n");
        return MC_EXIT_OK;
    }
    for (int i = 0; i < r->nlinks; i++) {
        const mc_link_t *l = &t->links[r->links[i]];
        printf("  %2d  %-24s -> %-24s %s %9.3f GB/s  %s\n", i + 1, t->nodes[l->src].name,
               t->nodes[l->dst].name, mc_link_kind_str(l->kind), l->bw / 1e9,
               mc_fmt_seconds(l->latency, lat, sizeof lat));
    }
    printf("bottleneck %.3f GB/s, latency %s", r->bw / 1e9,
           mc_fmt_seconds(r->latency, lat, sizeof lat));
    if (r->via_gpu >= 0)
        printf(", via GPU %d (PXN: its NIC is on the receiver's rail)", r->via_gpu);
    printf("\n");
    return MC_EXIT_OK;
}

static int run_route(const mc_topo_t *t, const topo_args_t *a)
{
    int ga, gb, rc;
    mc_route_t r;
    mc_err_t err = {0};
    if (a->npos != 4)
        return cli_usage_error("topo", "route needs FILE GPU_A GPU_B");
    if ((rc = parse_gpu(a->pos[2], t, &ga)) != MC_EXIT_OK ||
        (rc = parse_gpu(a->pos[3], t, &gb)) != MC_EXIT_OK)
        return rc;
    if (mc_topo_route(t, ga, gb, &r, &err) != MC_OK)
        return cli_fail(&err);
    return print_route(t, &r, a->json);
}

int cmd_topo(int argc, char **argv)
{
    topo_args_t a = {0};
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    int rc;
    if (cli_wants_help(argc, argv)) {
        fputs(usage_text, stdout);
        return MC_EXIT_OK;
    }
    if ((rc = parse_args(argc, argv, &a)) != MC_EXIT_OK)
        return rc;
    if (a.npos < 2)
        return cli_usage_error("topo", "expected a subcommand (show, route, dot) and a FILE");
    const char *sub = a.pos[0];
    int known = !strcmp(sub, "show") || !strcmp(sub, "route") || !strcmp(sub, "dot");
    if (!known)
        return cli_usage_error("topo", "'%s' is not a topo subcommand (show, route, dot)", sub);
    if (strcmp(sub, "route") && a.npos != 2)
        return cli_usage_error("topo", "%s takes one FILE", sub);
    if ((a.svg && strcmp(sub, "dot")) || (a.all && strcmp(sub, "show")) ||
        (a.json && !strcmp(sub, "dot")))
        return cli_usage_error("topo", "an option does not apply to '%s'", sub);
    if (cli_load_topo(a.pos[1], a.quiet || a.json, &t, &err) != MC_OK)
        return cli_fail(&err);
    if (!strcmp(sub, "show"))
        rc = topo_show(t, a.json, a.all);
    else if (!strcmp(sub, "route"))
        rc = run_route(t, &a);
    else
        rc = topo_dot(t, a.svg);
    mc_topo_free(t);
    return rc;
}
