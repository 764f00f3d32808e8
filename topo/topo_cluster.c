/* Cluster XML loader: placeholder until the cluster format lands (returns "not supported"). */
#include "topo/topo_internal.h"

mc_status_t mc_cluster_xml_build(mc_topo_t *t, xmlDocPtr doc, const char *path, mc_err_t *err)
{
    return mc_err_set(err, MC_ERR_UNSUPPORTED, "%s: cluster XML is not supported yet", path);
}
