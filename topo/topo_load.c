/* Loading a topology file: read the XML safely, dispatch on the root element (<system> is NCCL
 * topology XML, <cluster> is meshcast's cluster format, <graphs> is refused as NCCL's graph
 * dialect), then number the GPUs and build the graph. */
#include <string.h>

#include "topo/topo_bounds.h"
#include "topo/topo_internal.h"

static mc_status_t build(mc_topo_t *t, xmlDocPtr doc, const char *name,
                         const mc_topo_load_opts_t *opts, mc_err_t *err)
{
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (!strcmp((const char *)root->name, "cluster"))
        return mc_cluster_xml_build(t, doc, name, opts, err);
    int nhosts = 0; /* <system>, <graphs> and anything else: the NCCL reader says what it is */
    return mc_nccl_xml_add(t, doc, name, 0, opts, &nhosts, err);
}

static mc_status_t load(const char *buf, size_t len, const char *name,
                        const mc_topo_load_opts_t *opts, mc_topo_t **out, mc_err_t *err)
{
    mc_topo_load_opts_t dflt = MC_TOPO_LOAD_OPTS_DEFAULT;
    mc_status_t st;
    xmlDocPtr doc = NULL;
    mc_topo_t *t = NULL;
    *out = NULL;
    MC_CHECK_GOTO(mc_xml_read(buf, len, name, &doc, err), out, st);
    t = mc_topo_new(name);
    MC_CHECK_GOTO(build(t, doc, name, opts ? opts : &dflt, err), out, st);
    MC_CHECK_GOTO(mc_topo_finalize(t, err), out, st);
    MC_CHECK_GOTO(mc_topo_check_quantities(t, err), out, st);
    *out = t;
    t = NULL;
out:
    mc_topo_free(t);
    if (doc)
        xmlFreeDoc(doc);
    return st;
}

mc_status_t mc_topo_load(const char *path, mc_topo_t **out, mc_err_t *err)
{
    return load(NULL, 0, path, NULL, out, err);
}

mc_status_t mc_topo_load_with(const char *path, const mc_topo_load_opts_t *opts, mc_topo_t **out,
                              mc_err_t *err)
{
    return load(NULL, 0, path, opts, out, err);
}

mc_status_t mc_topo_load_memory(const char *buf, size_t len, const char *name, mc_topo_t **out,
                                mc_err_t *err)
{
    return load(buf, len, name ? name : "(memory)", NULL, out, err);
}
