/* The hosts of a cluster: each <nodes> element builds one template host (a built-in node type,
 * or the hosts of one NCCL topology file) and stamps count copies of it into the topology, so a
 * 128-node pod costs one parse and a linear copy rather than 128 loads. */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo_cluster.h"
#include "topo/topo_internal.h"

/* "h<digits>/rest" becomes "h<host>/rest"; any other name gets the prefix added. */
static void rename_node(char *dst, size_t len, const char *src, int host)
{
    const char *rest = src;
    if (src[0] == 'h') {
        const char *p = src + 1;
        while (*p >= '0' && *p <= '9')
            p++;
        if (p > src + 1 && *p == '/')
            rest = p + 1;
    }
    if (snprintf(dst, len, "h%d/%s", host, rest) >= (int)len)
        dst[len - 1] = '\0'; /* NCCL names are short; a cut name is still unique per host */
}

/* Copies the nhosts hosts of tmpl into t as hosts host_base.., renaming "h<i>/" prefixes. */
static void stamp(mc_topo_t *t, const mc_topo_t *tmpl, int nhosts, int host_base)
{
    int base = t->nnodes;
    MC_GROW(t->nodes, t->node_cap, t->nnodes + tmpl->nnodes);
    for (int i = 0; i < tmpl->nnodes; i++) {
        mc_node_t n = tmpl->nodes[i];
        n.host = host_base + (n.host < 0 ? 0 : n.host % nhosts);
        rename_node(n.name, sizeof n.name, tmpl->nodes[i].name, n.host);
        mc_topo_add_node(t, &n);
    }
    for (int i = 0; i < tmpl->nlinks; i++) {
        const mc_link_t *l = &tmpl->links[i];
        mc_topo_add_link(t, l->src + base, l->dst + base, l->kind, l->bw, l->latency, l->count);
    }
}

/* The NCCL file named by a <nodes file=...>, relative to the cluster file's folder. */
static char *resolve(const char *cluster_path, const char *file)
{
    if (file[0] == '/' || !strchr(cluster_path, '/'))
        return mc_xstrdup(file);
    char *copy = mc_xstrdup(cluster_path);
    char *full = mc_xasprintf("%s/%s", dirname(copy), file);
    free(copy);
    return full;
}

static mc_status_t load_nccl(mc_topo_t *tmpl, const char *file, const mc_topo_load_opts_t *opts,
                             int *nhosts, mc_err_t *err)
{
    xmlDocPtr doc = NULL;
    mc_status_t st;
    MC_CHECK_GOTO(mc_xml_read(NULL, 0, file, &doc, err), out, st); /* NULL: read the file */
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (xmlStrcmp(root->name, BAD_CAST "system")) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%ld: expected an NCCL topology (root <system>), "
                        "got <%s>", file, xmlGetLineNo(root), (const char *)root->name);
        goto out;
    }
    st = mc_nccl_xml_add(tmpl, doc, file, 0, opts, nhosts, err);
out:
    xmlFreeDoc(doc);
    return st;
}

/* Every NET port of the template runs at bw (the <nodes nic_bw=...> override). */
static void set_nic_bw(mc_topo_t *tmpl, double bw)
{
    for (int i = 0; i < tmpl->nnodes; i++)
        if (tmpl->nodes[i].kind == MC_NODE_NET)
            tmpl->nodes[i].bw = bw;
    for (int i = 0; i < tmpl->nlinks; i++) {
        mc_link_t *l = &tmpl->links[i];
        if (l->kind == MC_LINK_NET &&
            (tmpl->nodes[l->src].kind == MC_NODE_NET || tmpl->nodes[l->dst].kind == MC_NODE_NET))
            l->bw = bw;
    }
}

/* An attribute's value into opts; else -1 and what was expected written to want. */
typedef int (*attr_parse_fn)(const char *v, mc_topo_load_opts_t *opts, char *want, size_t n);

/* assume_nvlink="N": what the file's GPUs without NVLink rows have (0..64 lanes). */
static int parse_nvlink(const char *v, mc_topo_load_opts_t *opts, char *want, size_t n)
{
    int64_t k;
    if (mc_parse_i64(v, &k) == 0 && k >= 0 && k <= MC_TOPO_MAX_ASSUMED_NVLINKS) {
        opts->assume_nvlink = (int)k;
        return 0;
    }
    snprintf(want, n, "the number of NVLinks per GPU to the NVSwitch, 0 to %d",
             MC_TOPO_MAX_ASSUMED_NVLINKS);
    return -1;
}

/* assume_gpu="MODEL": the model of a skeleton file's GPUs (mc_topo_gpu_model). */
static int parse_gpu(const char *v, mc_topo_load_opts_t *opts, char *want, size_t n)
{
    if (mc_topo_gpu_model(v, &opts->assume_gpu) == 0)
        return 0;
    snprintf(want, n, "a GPU model or its PCI device id, one of: %s", mc_topo_gpu_models());
    return -1;
}

/* <nodes name="...">, which only file= takes (a built-in type's `what` are known), into opts. */
static mc_status_t file_attr(xmlNodePtr el, const char *path, const char *type, const char *name,
                             const char *what, attr_parse_fn parse, mc_topo_load_opts_t *opts,
                             mc_err_t *err)
{
    char *v = (char *)xmlGetProp(el, BAD_CAST name), want[512];
    mc_status_t st = MC_OK;
    if (!v)
        return MC_OK;
    if (type)
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%ld: <nodes type=\"%s\" %s>: a built-in node "
                        "type has known %s; %s is for file=", path, xmlGetLineNo(el), type, name,
                        what, name);
    else if (parse(v, opts, want, sizeof want) != 0)
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%ld: <nodes %s=\"%s\">: expected %s", path,
                        xmlGetLineNo(el), name, v, want);
    xmlFree(v);
    return st;
}

mc_status_t mc_cluster_add_nodes(mc_topo_t *t, xmlNodePtr el, const char *path,
                                 const mc_topo_load_opts_t *opts, int *nhosts, mc_err_t *err)
{
    mc_topo_load_opts_t mine = *opts;
    mc_status_t st = MC_OK;
    int line = (int)xmlGetLineNo(el);
    char *type = (char *)xmlGetProp(el, BAD_CAST "type");
    char *file = (char *)xmlGetProp(el, BAD_CAST "file");
    char *full = NULL;
    int64_t count = 1;
    double nic_bw = 0;
    int per = 1; /* hosts in one copy (an NCCL multi-node NVLink dump holds several) */
    mc_topo_t *tmpl = NULL;
    if (!type == !file) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: <nodes> needs exactly one of type (a built-in "
                        "node type: %s) and file (an NCCL topology file)", path, line,
                        mc_node_type_names());
        goto out;
    }
    tmpl = mc_topo_new(type ? type : file);
    MC_CHECK_GOTO(mc_cluster_attr_count(el, "count", path, MC_CLUSTER_MAX_HOSTS, &count, err), out,
                  st);
    MC_CHECK_GOTO(mc_cluster_attr_bw(el, "nic_bw", path, &nic_bw, err), out, st);
    MC_CHECK_GOTO(
        file_attr(el, path, type, "assume_nvlink", "NVLinks", parse_nvlink, &mine, err), out, st);
    MC_CHECK_GOTO(file_attr(el, path, type, "assume_gpu", "GPUs", parse_gpu, &mine, err), out, st);
    if (nic_bw > 0) /* the file's ports of no known speed are warned of at the speed they get */
        mine.assume_nic_mbps = (int)(nic_bw * 8 / 1e6 + 0.5);
    if (type) {
        st = mc_node_type_add(tmpl, type, 0, err);
    } else {
        full = resolve(path, file);
        st = load_nccl(tmpl, full, &mine, &per, err);
    }
    if (st != MC_OK) {
        char inner[sizeof err->msg];
        snprintf(inner, sizeof inner, "%s", err ? err->msg : "");
        st = mc_err_set(err, st, "%s:%d: <nodes %s=\"%s\">: %s", path, line, type ? "type" : "file",
                        type ? type : file, inner);
        goto out;
    }
    if (count * per > MC_CLUSTER_MAX_HOSTS - *nhosts) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: <nodes count=\"%lld\"> brings the cluster to "
                        "%lld hosts; at most %d are allowed", path, line, (long long)count,
                        (long long)(*nhosts + count * per), MC_CLUSTER_MAX_HOSTS);
        goto out;
    }
    if (nic_bw > 0)
        set_nic_bw(tmpl, nic_bw);
    for (int i = 0; i < tmpl->nwarnings; i++)
        mc_topo_warn(t, "%s", tmpl->warnings[i]);
    for (int64_t c = 0; c < count; c++)
        stamp(t, tmpl, per, *nhosts + (int)c * per);
    *nhosts += (int)count * per;
out:
    mc_topo_free(tmpl);
    free(full);
    xmlFree(type);
    xmlFree(file);
    return st;
}
