/* 'meshcast topo dot': the topology as a Graphviz graph (one cluster per host, switches outside),
 * a pair of links that mirror each other drawn as one two-headed edge; with --svg the drawing is
 * rendered by Graphviz's dot program and written atomically. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/topo_cli.h"

static const char *shape(mc_node_kind_t k)
{
    static const char *shapes[MC_NODE__COUNT] = {"box", "ellipse", "octagon", "house",
                                                 "diamond", "circle", "doubleoctagon"};
    return (unsigned)k < MC_NODE__COUNT ? shapes[k] : "ellipse";
}

/* The link back from l's destination to its source with the same kind and bandwidth, or -1. */
static int mirror(const mc_topo_t *t, int link)
{
    const mc_link_t *l = &t->links[link];
    igraph_vector_int_t out;
    int found = -1;
    if (igraph_vector_int_init(&out, 0) != IGRAPH_SUCCESS)
        return -1;
    if (igraph_incident(&t->graph, &out, l->dst, IGRAPH_OUT) == IGRAPH_SUCCESS)
        for (igraph_integer_t i = 0; i < igraph_vector_int_size(&out) && found < 0; i++) {
            const mc_link_t *m = &t->links[VECTOR(out)[i]];
            if (m->dst == l->src && m->kind == l->kind && m->bw == l->bw)
                found = (int)VECTOR(out)[i];
        }
    igraph_vector_int_destroy(&out);
    return found;
}

static void node_line(mc_buf_t *b, const mc_topo_t *t, int i, const mc_gpu_summary_t *gpus)
{
    const mc_node_t *n = &t->nodes[i];
    mc_buf_printf(b, "    \"%s\" [shape=%s, label=\"%s", n->name, shape(n->kind), n->name);
    if (n->kind == MC_NODE_GPU && n->arch[0])
        mc_buf_printf(b, "\\nGPU %d, %s\\nxGMI %.1f GB/s", n->gpu, n->arch,
                      gpus[n->gpu].nvlink_bw / 1e9);
    else if (n->kind == MC_NODE_GPU)
        mc_buf_printf(b, "\\nGPU %d, sm %d\\nNVLink %.1f GB/s", n->gpu, n->sm,
                      gpus[n->gpu].nvlink_bw / 1e9);
    else if (n->kind == MC_NODE_NET)
        mc_buf_printf(b, "\\n%g Gb/s", n->bw * 8 / 1e9);
    mc_buf_printf(b, "\"];\n");
}

static void write_dot(const mc_topo_t *t, mc_buf_t *b)
{
    mc_gpu_summary_t *gpus = mc_xcalloc((size_t)t->ngpus, sizeof(*gpus));
    mc_topo_summarize(t, gpus);
    mc_buf_printf(b, "digraph topology {\n  graph [rankdir=TB, fontname=\"Helvetica\"];\n"
                     "  node [fontname=\"Helvetica\", fontsize=10];\n"
                     "  edge [fontname=\"Helvetica\", fontsize=8];\n");
    for (int h = -1; h < t->nhosts; h++) {
        if (h >= 0)
            mc_buf_printf(b, "  subgraph cluster_h%d {\n    label=\"host %d\";\n", h, h);
        for (int i = 0; i < t->nnodes; i++)
            if (t->nodes[i].host == h)
                node_line(b, t, i, gpus);
        if (h >= 0)
            mc_buf_printf(b, "  }\n");
    }
    for (int i = 0; i < t->nlinks; i++) {
        const mc_link_t *l = &t->links[i];
        int m = mirror(t, i);
        if (m >= 0 && m < i)
            continue; /* drawn with its mirror */
        mc_buf_printf(b, "  \"%s\" -> \"%s\" [label=\"%s %.3g\"%s];\n", t->nodes[l->src].name,
                      t->nodes[l->dst].name, mc_link_kind_str(l->kind), l->bw / 1e9,
                      m >= 0 ? ", dir=both" : "");
    }
    mc_buf_printf(b, "}\n");
    free(gpus);
}

/* Runs dot -Tsvg on the DOT text and returns what it printed. */
static mc_status_t render_svg(const mc_buf_t *dot, mc_buf_t *svg, mc_err_t *err)
{
    char tmp[] = "/tmp/meshcast-dot-XXXXXX";
    mc_status_t st = MC_OK;
    FILE *p = NULL;
    int fd = mkstemp(tmp);
    if (fd < 0)
        return mc_err_set(err, MC_ERR_IO, "cannot create a temporary file for dot");
    if (write(fd, dot->data, dot->len) != (ssize_t)dot->len) {
        st = mc_err_set(err, MC_ERR_IO, "%s: cannot write the DOT text", tmp);
        close(fd);
        goto out;
    }
    close(fd);
    char *cmd = mc_xasprintf("dot -Tsvg %s 2>/dev/null", tmp);
    p = popen(cmd, "r");
    free(cmd);
    if (!p) {
        st = mc_err_set(err, MC_ERR_IO, "cannot run Graphviz's dot");
        goto out;
    }
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
        mc_buf_append(svg, chunk, n);
    int rc = pclose(p);
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0 || svg->len == 0)
        st = mc_err_set(err, MC_ERR_IO, "Graphviz's dot failed (is the graphviz package "
                        "installed? 'make deps' installs it)");
out:
    unlink(tmp);
    return st;
}

int topo_dot(const mc_topo_t *t, const char *svg_path)
{
    mc_buf_t dot = {0}, svg = {0};
    mc_err_t err = {0};
    int rc = MC_EXIT_OK;
    write_dot(t, &dot);
    if (!svg_path) {
        fwrite(dot.data, 1, dot.len, stdout);
    } else if (render_svg(&dot, &svg, &err) != MC_OK ||
               mc_write_file_atomic(svg_path, svg.data, svg.len, &err) != MC_OK) {
        rc = cli_fail(&err);
    } else {
        printf("wrote %s\n", svg_path);
    }
    mc_buf_free(&dot);
    mc_buf_free(&svg);
    return rc;
}
