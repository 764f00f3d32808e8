/* The cluster XML schema, embedded into the library at build time so that validation works from
 * a clean clone, from the tests and after `make install` alike, and validation of a document
 * against it with libxml2's RelaxNG API, so that each violation carries its line number. The
 * assembler's .incbin reads topologies/schema/cluster.rng relative to the repository root, where
 * the Makefile runs the compiler; test_cluster checks that the copy is current. */
#include "topo/topo_cluster.h"
#include "topo/topo_internal.h"

MC_EMBED_FILE(mc_cluster_rng, "topologies/schema/cluster.rng");

const char *mc_cluster_schema_text(size_t *len)
{
    if (len)
        *len = (size_t)(mc_cluster_rng_stop - mc_cluster_rng_start);
    return mc_cluster_rng_start;
}

mc_status_t mc_cluster_validate(xmlDocPtr doc, const char *path, mc_err_t *err)
{
    size_t len;
    const char *text = mc_cluster_schema_text(&len);
    return mc_xml_check_rng(doc, text, len, path, "cluster file (topologies/schema/cluster.rng)",
                            err);
}
