/* Internals of the cluster XML loader (topo_cluster*.c, topo_nodes.c): the embedded schema, the
 * unit parser, the built-in node types, host replication and the network fabric. */
#ifndef MC_TOPO_CLUSTER_H
#define MC_TOPO_CLUSTER_H

#include <libxml/tree.h>

#include "topo/topo.h"

/* More hosts than this in one cluster is taken for a typo (a 1024-node pod is 128 hosts). */
#define MC_CLUSTER_MAX_HOSTS 16384
/* Leaf-to-spine links (leaves x spines): a large fat tree has a few thousand. */
#define MC_CLUSTER_MAX_UPLINKS (1 << 20)

/* topologies/schema/cluster.rng, embedded at build time (NUL-terminated). */
const char *mc_cluster_schema_text(size_t *len);

/* Validates doc against the embedded schema; the first violation is reported as
 * "path:line: ...". */
mc_status_t mc_cluster_validate(xmlDocPtr doc, const char *path, mc_err_t *err);

/* Attribute name of node parsed as a quantity; *out keeps its value when the attribute is
 * absent. Errors name path, the node's line, the attribute and the units expected. */
mc_status_t mc_cluster_attr_bw(xmlNodePtr node, const char *name, const char *path, double *out,
                               mc_err_t *err); /* bytes/s, > 0 */
mc_status_t mc_cluster_attr_latency(xmlNodePtr node, const char *name, const char *path,
                                    double *out, mc_err_t *err); /* seconds, >= 0 */
mc_status_t mc_cluster_attr_ratio(xmlNodePtr node, const char *name, const char *path,
                                  double *out, mc_err_t *err); /* "2:1" or "2", > 0 */
mc_status_t mc_cluster_attr_count(xmlNodePtr node, const char *name, const char *path,
                                  int64_t max, int64_t *out, mc_err_t *err); /* 1..max */

/* Built-in node types. Adds one host of the named type as host number host; nets are ports
 * named h<host>/NET<i> with rail i. Returns MC_ERR_INVALID for an unknown name. */
mc_status_t mc_node_type_add(mc_topo_t *t, const char *type, int host, mc_err_t *err);
/* The names of the built-in types, comma-separated (for error messages and docs). */
const char *mc_node_type_names(void);

/* Adds the hosts of one <nodes> element as hosts *nhosts.. and advances *nhosts. */
/* A <nodes assume_nvlink> overrides opts for its file. */
mc_status_t mc_cluster_add_nodes(mc_topo_t *t, xmlNodePtr el, const char *path,
                                 const mc_topo_load_opts_t *opts, int *nhosts, mc_err_t *err);

/* Adds the switches of <network> and links every host's network ports to them. */
mc_status_t mc_cluster_fabric_build(mc_topo_t *t, xmlNodePtr network, const char *path,
                                    mc_err_t *err);

#endif
