/* Internals shared by the files of topo/: the NCCL XML reader that the cluster loader reuses
 * for nodes given as NCCL files, and the route and shortest-path caches' cleanup. */
#ifndef MC_TOPO_INTERNAL_H
#define MC_TOPO_INTERNAL_H

#include <libxml/tree.h>

#include "topo/topo.h"
#include "util/xml.h"

/* Adds the hosts of one NCCL topology XML document (root <system>) to t, numbering them from
 * host_base; *nhosts gets how many hosts it held (distinct host_hash values, at least 1). Node
 * names are prefixed "h<host>/". Errors name the document's file and line. */
mc_status_t mc_nccl_xml_add(mc_topo_t *t, xmlDocPtr doc, const char *path, int host_base,
                            const mc_topo_load_opts_t *opts, int *nhosts, mc_err_t *err);

/* Builds t from a cluster XML document (root <cluster>, docs/topology-format.md), validated
 * against topologies/schema/cluster.rng; nodes given as NCCL files are read with
 * mc_nccl_xml_add. Does not call mc_topo_finalize. */
mc_status_t mc_cluster_xml_build(mc_topo_t *t, xmlDocPtr doc, const char *path,
                                 const mc_topo_load_opts_t *opts, mc_err_t *err);

/* Frees the routes topo_route.c cached inside t. */
void mc_topo_route_cache_free(mc_topo_t *t);
/* Frees the shortest-path trees topo_host_spt.c cached inside t. */
void mc_topo_host_spt_cache_free(mc_topo_t *t);

#endif
