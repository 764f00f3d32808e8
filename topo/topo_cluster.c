/* Cluster XML loader (docs/topology-format.md): validates the document against the embedded
 * RelaxNG schema, adds the hosts of every <nodes> element, builds the <network>, and checks that
 * every GPU of a networked cluster can reach a network port that is linked to a switch. */
#include <stdlib.h>
#include <string.h>

#include "topo/topo_cluster.h"
#include "topo/topo_internal.h"

/* Marks every node that has a path, inside its host, to a port linked to a switch: a backwards
 * breadth-first search from those ports over links reversed (CSR by destination). */
static char *reaches_network(const mc_topo_t *t)
{
    int n = t->nnodes;
    int *start = mc_xcalloc((size_t)n + 1, sizeof(int));
    int *from = mc_xmalloc(sizeof(int) * (size_t)(t->nlinks + 1));
    int *queue = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    char *seen = mc_xcalloc((size_t)n + 1, 1);
    for (int i = 0; i < t->nlinks; i++)
        start[t->links[i].dst + 1]++;
    for (int v = 0; v < n; v++)
        start[v + 1] += start[v];
    int *fill = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    memcpy(fill, start, sizeof(int) * (size_t)n);
    for (int i = 0; i < t->nlinks; i++)
        from[fill[t->links[i].dst]++] = t->links[i].src;
    int head = 0, tail = 0;
    for (int i = 0; i < t->nlinks; i++) {
        const mc_link_t *l = &t->links[i];
        if (t->nodes[l->src].kind == MC_NODE_NET && t->nodes[l->dst].kind == MC_NODE_SWITCH &&
            !seen[l->src]) {
            seen[l->src] = 1;
            queue[tail++] = l->src;
        }
    }
    while (head < tail) {
        int v = queue[head++];
        for (int k = start[v]; k < start[v + 1]; k++) {
            int u = from[k];
            if (!seen[u] && t->nodes[u].host == t->nodes[v].host) {
                seen[u] = 1;
                queue[tail++] = u;
            }
        }
    }
    free(fill);
    free(start);
    free(from);
    free(queue);
    return seen;
}

/* host_line[h]: the line of the <nodes> element host h comes from. */
static mc_status_t check_paths(const mc_topo_t *t, const char *path, const int *host_line,
                               mc_err_t *err)
{
    mc_status_t st = MC_OK;
    char *seen = reaches_network(t);
    for (int i = 0; i < t->nnodes; i++) {
        if (t->nodes[i].kind == MC_NODE_GPU && !seen[i]) {
            st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: %s has no path to a network port linked "
                            "to a switch (every host of a cluster needs a GPU -> NIC -> switch "
                            "path)", path, host_line[t->nodes[i].host], t->nodes[i].name);
            break;
        }
    }
    free(seen);
    return st;
}

mc_status_t mc_cluster_xml_build(mc_topo_t *t, xmlDocPtr doc, const char *path,
                                 const mc_topo_load_opts_t *opts, mc_err_t *err)
{
    mc_status_t st;
    int nhosts = 0, cap = 0, *host_line = NULL;
    xmlNodePtr network = NULL;
    MC_CHECK_GOTO(mc_cluster_validate(doc, path, err), out, st);
    for (xmlNodePtr c = xmlDocGetRootElement(doc)->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        if (!xmlStrcmp(c->name, BAD_CAST "nodes")) {
            int first = nhosts;
            MC_CHECK_GOTO(mc_cluster_add_nodes(t, c, path, opts, &nhosts, err), out, st);
            MC_GROW(host_line, cap, nhosts);
            for (int h = first; h < nhosts; h++)
                host_line[h] = (int)xmlGetLineNo(c);
        } else {
            network = c;
        }
    }
    if (!network && nhosts > 1) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%ld: %d hosts but no <network> joins them", path,
                        xmlGetLineNo(xmlDocGetRootElement(doc)), nhosts);
        goto out;
    }
    if (network) {
        MC_CHECK_GOTO(mc_cluster_fabric_build(t, network, path, err), out, st);
        MC_CHECK_GOTO(check_paths(t, path, host_line, err), out, st);
    }
out:
    free(host_line);
    return st;
}
