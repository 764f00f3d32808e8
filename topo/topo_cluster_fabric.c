/* The network of a cluster file: one first level of switches (a single switch, one switch per
 * rail, or one leaf per block of hosts) that every network port links to, and optionally spines
 * joining those switches, each leaf's uplinks sized from its downlinks and the
 * oversubscription. Links are MC_LINK_NET pairs; switches have host -1. */
#include <libxml/tree.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo_cluster.h"

/* Network ports in host order, each with its position among its host's ports (by dev). */
typedef struct port {
    int node, host, index;
} port_t;

static const mc_topo_t *sort_t; /* qsort has no context argument in C11 */

static int cmp_ports(const void *pa, const void *pb)
{
    const port_t *a = pa, *b = pb;
    const mc_node_t *x = &sort_t->nodes[a->node], *y = &sort_t->nodes[b->node];
    if (x->host != y->host)
        return x->host < y->host ? -1 : 1;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return a->node - b->node;
}

static port_t *collect_ports(const mc_topo_t *t, int *nports)
{
    port_t *ports = mc_xmalloc(sizeof(port_t) * (size_t)(t->nnodes + 1));
    int n = 0;
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].kind == MC_NODE_NET && t->nodes[i].host >= 0)
            ports[n++] = (port_t){i, t->nodes[i].host, 0};
    sort_t = t;
    mc_sort(ports, (size_t)n, sizeof(port_t), cmp_ports);
    for (int i = 1; i < n; i++)
        ports[i].index = ports[i].host == ports[i - 1].host ? ports[i - 1].index + 1 : 0;
    *nports = n;
    return ports;
}

/* The first-level switch a port links to: its rail, its host's leaf, or the single switch. */
static int leaf_of(const port_t *p, int rails, int per_leaf)
{
    return rails ? p->index : per_leaf > 0 ? p->host / per_leaf : 0;
}

static int add_switch(mc_topo_t *t, const char *prefix, int index, int rail)
{
    mc_node_t n = {.kind = MC_NODE_SWITCH, .host = -1, .busid = -1, .dev = -1, .rail = rail};
    if (index >= 0)
        snprintf(n.name, sizeof n.name, "%s%d", prefix, index);
    else
        snprintf(n.name, sizeof n.name, "%s", prefix);
    return mc_topo_add_node(t, &n);
}

/* Reads the bw and latency attributes every fabric level has. */
static mc_status_t link_attrs(xmlNodePtr el, const char *path, double *bw, double *lat,
                              mc_err_t *err)
{
    *bw = 0;
    *lat = mc_topo_default_latency(MC_LINK_NET);
    mc_status_t st = mc_cluster_attr_bw(el, "bw", path, bw, err);
    return st != MC_OK ? st : mc_cluster_attr_latency(el, "latency", path, lat, err);
}

/* Spines above the nleaf first-level switches leaf0..: every leaf links to every spine, with
 * per-link bandwidth bw when given, else the leaf's downlink total over the oversubscription,
 * split evenly over the spines. */
static mc_status_t add_spines(mc_topo_t *t, xmlNodePtr el, const char *path, int leaf0,
                              int nleaf, const double *down, mc_err_t *err)
{
    double bw, lat, ratio = 1.0;
    int64_t count = 1;
    mc_status_t st;
    if ((st = link_attrs(el, path, &bw, &lat, err)) != MC_OK ||
        (st = mc_cluster_attr_ratio(el, "oversubscription", path, &ratio, err)) != MC_OK ||
        (st = mc_cluster_attr_count(el, "count", path, MC_CLUSTER_MAX_HOSTS, &count, err)) != MC_OK)
        return st;
    if (bw > 0 && xmlHasProp(el, BAD_CAST "oversubscription"))
        return mc_err_set(err, MC_ERR_INVALID, "%s:%ld: <spines>: give either bw (per link) or "
                          "oversubscription, not both", path, xmlGetLineNo(el));
    if (count * nleaf > MC_CLUSTER_MAX_UPLINKS)
        return mc_err_set(err, MC_ERR_INVALID, "%s:%ld: <spines count=\"%lld\"> over %d switches "
                          "makes %lld uplinks; at most %d are allowed", path, xmlGetLineNo(el),
                          (long long)count, nleaf, (long long)count * nleaf,
                          MC_CLUSTER_MAX_UPLINKS);
    int spine0 = t->nnodes;
    for (int s = 0; s < count; s++)
        add_switch(t, "spine", s, -1);
    for (int l = 0; l < nleaf; l++)
        for (int s = 0; s < count; s++)
            mc_topo_add_link_pair(t, leaf0 + l, spine0 + s, MC_LINK_NET,
                                 bw > 0 ? bw : down[l] / ratio / (double)count, lat, 1);
    return MC_OK;
}

mc_status_t mc_cluster_fabric_build(mc_topo_t *t, xmlNodePtr network, const char *path,
                                    mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int nports;
    port_t *ports = collect_ports(t, &nports);
    double *down = NULL;
    xmlNodePtr level = NULL, spines = NULL;
    for (xmlNodePtr c = network->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        if (!xmlStrcmp(c->name, BAD_CAST "spines"))
            spines = c;
        else
            level = c;
    }
    double bw, lat;
    int64_t per_leaf = 0;
    MC_CHECK_GOTO(link_attrs(level, path, &bw, &lat, err), out, st);
    const char *kind = (const char *)level->name;
    int rails = !strcmp(kind, "rails"), leaves = !strcmp(kind, "leaves");
    if (leaves)
        MC_CHECK_GOTO(mc_cluster_attr_count(level, "hosts", path, MC_CLUSTER_MAX_HOSTS, &per_leaf,
                                            err), out, st);
    int nleaf = 1;
    for (int i = 0; i < nports; i++)
        if (leaf_of(&ports[i], rails, (int)per_leaf) + 1 > nleaf)
            nleaf = leaf_of(&ports[i], rails, (int)per_leaf) + 1;
    int leaf0 = t->nnodes;
    for (int k = 0; k < nleaf; k++)
        add_switch(t, rails ? "rail" : leaves ? "leaf" : "switch", rails || leaves ? k : -1,
                   rails ? k : -1);
    down = mc_xcalloc((size_t)nleaf, sizeof(double));
    int capped = 0;
    for (int i = 0; i < nports; i++) {
        int k = leaf_of(&ports[i], rails, (int)per_leaf);
        mc_node_t *net = &t->nodes[ports[i].node];
        if (rails)
            net->rail = k;
        /* A port cannot drive a link faster than itself. */
        double link_bw = bw > 0 && bw < net->bw ? bw : net->bw;
        if (bw > net->bw && !capped++)
            mc_topo_warn(t, "%s:%ld: <%s bw> is faster than port %s (%.4g GB/s); its links run at "
                         "the port's speed", path, xmlGetLineNo(level), kind, net->name,
                         net->bw / 1e9);
        mc_topo_add_link_pair(t, ports[i].node, leaf0 + k, MC_LINK_NET, link_bw, lat, 1);
        down[k] += link_bw;
    }
    if (spines)
        st = add_spines(t, spines, path, leaf0, nleaf, down, err);
out:
    free(down);
    free(ports);
    return st;
}
