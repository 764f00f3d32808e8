/* 'meshcast topo show': what a topology holds (hosts, GPUs with their NVLink or xGMI bandwidth,
 * NVLink domains, the kind of connection between every two GPUs of a host to diff against
 * nvidia-smi topo -m or rocm-smi --showtopo, NIC ports, the PCIe tree, link counts by kind, the
 * loader's warnings), as text or as one JSON object. Bandwidths are GB/s (1e9
 * bytes/s) per direction, as NCCL counts them. */
#include <jansson.h>
#include <stdlib.h>

#include "cli/topo_cli.h"

#define GB 1e9
/* Beyond this many hosts the text form shows the first host's PCIe tree only. */
#define TREE_HOSTS 4

static void count_links(const mc_topo_t *t, int *by_kind)
{
    for (int k = 0; k < MC_LINK__COUNT; k++)
        by_kind[k] = 0;
    for (int i = 0; i < t->nlinks; i++)
        by_kind[t->links[i].kind]++;
}

static int is_tree_link(const mc_topo_t *t, const mc_link_t *l)
{
    mc_node_kind_t k = t->nodes[l->dst].kind;
    return (l->kind == MC_LINK_PCI || l->kind == MC_LINK_LOC || l->kind == MC_LINK_NET) &&
           (k == MC_NODE_PCI || k == MC_NODE_GPU || k == MC_NODE_NIC || k == MC_NODE_NET) &&
           t->nodes[l->dst].host == t->nodes[l->src].host;
}

/* Depth-first down the PCIe tree from a CPU; each node once, with the link that reached it.
 * igraph lists a node's outgoing links (edge ids are link ids) without scanning them all. */
static void print_tree(const mc_topo_t *t, int node, int depth, char *seen)
{
    igraph_vector_int_t out;
    seen[node] = 1;
    if (igraph_vector_int_init(&out, 0) != IGRAPH_SUCCESS)
        return;
    if (igraph_incident(&t->graph, &out, node, IGRAPH_OUT) == IGRAPH_SUCCESS) {
        for (igraph_integer_t i = 0; i < igraph_vector_int_size(&out); i++) {
            const mc_link_t *l = &t->links[VECTOR(out)[i]];
            if (seen[l->dst] || !is_tree_link(t, l))
                continue;
            int indent = 2 * depth + 4;
            printf("%*s%-*s %s %9.3f GB/s\n", indent, "", indent < 40 ? 40 - indent : 0,
                   t->nodes[l->dst].name, mc_link_kind_str(l->kind), l->bw / GB);
            print_tree(t, l->dst, depth + 1, seen);
        }
    }
    igraph_vector_int_destroy(&out);
}

static void print_domains(const mc_topo_t *t, const mc_gpu_summary_t *gpus, int ndomains)
{
    printf("NVLink domains: %d\n", ndomains);
    for (int d = 0; d < ndomains; d++) {
        printf("  domain %d: GPUs", d);
        for (int g = 0; g < t->ngpus; g++) {
            if (gpus[g].domain != d)
                continue;
            int end = g; /* print runs of consecutive GPUs as a range */
            while (end + 1 < t->ngpus && gpus[end + 1].domain == d)
                end++;
            printf(end > g ? " %d-%d" : " %d", g, end);
            g = end;
        }
        printf("\n");
    }
}

/* The kind of connection between every two GPUs of a host, laid out like nvidia-smi topo -m. */
static int print_pairs(const mc_topo_t *t, int host)
{
    int n = 0, *ids = mc_xmalloc(sizeof(int) * (size_t)t->ngpus);
    mc_err_t err = {0};
    for (int g = 0; g < t->ngpus; g++)
        if (mc_topo_gpu_host(t, g) == host)
            ids[n++] = g;
    printf("GPU pairs (host %d):\n       ", host);
    for (int j = 0; j < n; j++)
        printf(" %5d", ids[j]);
    printf("\n");
    for (int i = 0; i < n; i++) {
        printf("  %5d", ids[i]);
        for (int j = 0; j < n; j++) {
            mc_link_kind_t k;
            if (mc_topo_pair_kind(t, ids[i], ids[j], &k, &err) != MC_OK) {
                free(ids);
                return cli_fail(&err);
            }
            printf(" %5s", i == j ? "X" : mc_link_kind_str(k));
        }
        printf("\n");
    }
    free(ids);
    return MC_EXIT_OK;
}

static int show_text(const mc_topo_t *t, const mc_gpu_summary_t *gpus, int ndomains,
                     int all_hosts)
{
    int by_kind[MC_LINK__COUNT], nets = 0, switches = 0;
    printf("topology: %s\nfingerprint: %016llx\nhosts: %d\nGPUs: %d\n", t->source,
           (unsigned long long)t->fingerprint, t->nhosts, t->ngpus);
    printf("  %-5s %-4s %-12s %-7s %12s %7s %10s\n", "GPU", "host", "node", "sm", "NVLink GB/s",
           "links", "PCIe GB/s");
    for (int g = 0; g < t->ngpus; g++) {
        const mc_node_t *n = &t->nodes[t->gpu_node[g]];
        char sm[16];
        if (n->arch[0])
            snprintf(sm, sizeof sm, "%.15s", n->arch);
        else
            snprintf(sm, sizeof sm, "%d", n->sm);
        printf("  %-5d %-4d %-12s %-7s %12.1f %7d %10.2f%s\n", g, n->host, n->name, sm,
               gpus[g].nvlink_bw / GB, gpus[g].nvlinks, gpus[g].pcie_bw / GB,
               gpus[g].fabric == MC_LINK_XGMI ? "  (xGMI)" : "");
    }
    print_domains(t, gpus, ndomains);
    for (int h = 0; h < (all_hosts ? t->nhosts : 1); h++) {
        int rc = print_pairs(t, h);
        if (rc != MC_EXIT_OK)
            return rc;
    }
    for (int i = 0; i < t->nnodes; i++) {
        nets += t->nodes[i].kind == MC_NODE_NET;
        switches += t->nodes[i].kind == MC_NODE_SWITCH;
    }
    printf("NIC ports: %d\n", nets);
    for (int i = 0; i < t->nnodes; i++) {
        const mc_node_t *n = &t->nodes[i];
        if (n->kind != MC_NODE_NET)
            continue;
        printf("  %-12s host %-3d %8.3f GB/s (%g Gb/s)", n->name, n->host, n->bw / GB,
               n->bw * 8 / GB);
        if (n->rail >= 0)
            printf("  rail %d", n->rail);
        printf("\n");
    }
    printf("network switches: %d\nPCIe tree%s:\n", switches,
           t->nhosts > TREE_HOSTS && !all_hosts ? " (host 0; --all for every host)" : "");
    char *seen = mc_xcalloc((size_t)t->nnodes, 1);
    for (int i = 0; i < t->nnodes; i++) {
        const mc_node_t *n = &t->nodes[i];
        if (n->kind != MC_NODE_CPU || (t->nhosts > TREE_HOSTS && !all_hosts && n->host != 0))
            continue;
        printf("  %s\n", n->name);
        print_tree(t, i, 0, seen);
    }
    free(seen);
    count_links(t, by_kind);
    printf("links: %d (directed)", t->nlinks);
    for (int k = 0; k < MC_LINK__COUNT; k++)
        if (by_kind[k])
            printf(" %s %d", mc_link_kind_str((mc_link_kind_t)k), by_kind[k]);
    printf("\nwarnings: %d\n", t->nwarnings);
    for (int i = 0; i < t->nwarnings; i++)
        printf("  %s\n", t->warnings[i]);
    return MC_EXIT_OK;
}

static json_t *gpus_json(const mc_topo_t *t, const mc_gpu_summary_t *gpus)
{
    json_t *arr = json_array();
    for (int g = 0; g < t->ngpus; g++) {
        const mc_node_t *n = &t->nodes[t->gpu_node[g]];
        json_t *o = json_pack("{s:i, s:i, s:s, s:i, s:s, s:f, s:i, s:f, s:i}", "index", g,
                              "host", n->host, "name", n->name, "sm", n->sm, "arch", n->arch,
                              "nvlink_bw", gpus[g].nvlink_bw / GB, "nvlinks", gpus[g].nvlinks,
                              "pcie_bw", gpus[g].pcie_bw / GB, "nvlink_domain", gpus[g].domain);
        json_object_set_new(o, "fabric", gpus[g].fabric == MC_LINK__COUNT
                                             ? json_null()
                                             : json_string(mc_link_kind_str(gpus[g].fabric)));
        json_array_append_new(arr, o);
    }
    return arr;
}

static json_t *nics_json(const mc_topo_t *t)
{
    json_t *arr = json_array();
    for (int i = 0; i < t->nnodes; i++) {
        const mc_node_t *n = &t->nodes[i];
        if (n->kind == MC_NODE_NET)
            json_array_append_new(arr, json_pack("{s:s, s:i, s:i, s:f, s:i}", "name", n->name,
                                                 "host", n->host, "dev", n->dev, "bw",
                                                 n->bw / GB, "rail", n->rail));
    }
    return arr;
}

/* Per host, the kind of connection from each of its GPUs to each other ("X" for itself, as
 * nvidia-smi writes it): rows and columns follow the host's GPUs in global order. */
static json_t *pairs_json(const mc_topo_t *t, mc_err_t *err)
{
    json_t *hosts = json_array();
    for (int h = 0; h < t->nhosts; h++) {
        json_t *ids = json_array(), *rows = json_array();
        for (int a = 0; a < t->ngpus; a++) {
            if (mc_topo_gpu_host(t, a) != h)
                continue;
            json_t *row = json_array();
            json_array_append_new(ids, json_integer(a));
            for (int b = 0; b < t->ngpus; b++) {
                mc_link_kind_t k;
                if (mc_topo_gpu_host(t, b) != h)
                    continue;
                if (mc_topo_pair_kind(t, a, b, &k, err) != MC_OK) {
                    json_decref(row);
                    json_decref(ids);
                    json_decref(rows);
                    json_decref(hosts);
                    return NULL;
                }
                json_array_append_new(row, json_string(a == b ? "X" : mc_link_kind_str(k)));
            }
            json_array_append_new(rows, row);
        }
        json_array_append_new(hosts, json_pack("{s:i, s:o, s:o}", "host", h, "gpus", ids,
                                               "kinds", rows));
    }
    return hosts;
}

static int show_json(const mc_topo_t *t, const mc_gpu_summary_t *gpus, int ndomains)
{
    mc_err_t err = {0};
    json_t *pairs = pairs_json(t, &err);
    if (!pairs)
        return cli_fail(&err);
    int by_kind[MC_LINK__COUNT];
    char fp[17];
    count_links(t, by_kind);
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)t->fingerprint);
    json_t *kinds = json_object(), *warnings = json_array();
    for (int k = 0; k < MC_LINK__COUNT; k++)
        json_object_set_new(kinds, mc_link_kind_str((mc_link_kind_t)k), json_integer(by_kind[k]));
    for (int i = 0; i < t->nwarnings; i++)
        json_array_append_new(warnings, json_string(t->warnings[i]));
    json_t *o = json_pack("{s:s, s:s, s:i, s:o, s:i, s:o, s:o, s:i, s:o, s:o}", "source",
                          t->source, "fingerprint", fp, "hosts", t->nhosts, "gpus",
                          gpus_json(t, gpus), "nvlink_domains", ndomains, "gpu_pairs", pairs,
                          "nics", nics_json(t), "links", t->nlinks, "links_by_kind", kinds,
                          "warnings", warnings);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    printf("%s\n", s);
    free(s);
    json_decref(o);
    return MC_EXIT_OK;
}

int topo_show(const mc_topo_t *t, int json, int all_hosts)
{
    mc_gpu_summary_t *gpus = mc_xcalloc((size_t)t->ngpus, sizeof(*gpus));
    int ndomains = mc_topo_summarize(t, gpus);
    int rc = json ? show_json(t, gpus, ndomains) : show_text(t, gpus, ndomains, all_hosts);
    free(gpus);
    return rc;
}
