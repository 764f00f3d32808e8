/* util/xml: safe XML reading for every module that reads XML files (topologies, cluster files,
 * schedules): libxml2 without network access, entity substitution or DTD loading, errors as
 * "file:line: what", and RelaxNG validation against a schema held in memory. Kept apart from
 * util.h so that modules without libxml2 (the runtime) never see its headers. */
#ifndef MC_UTIL_XML_H
#define MC_UTIL_XML_H

#include <libxml/tree.h>

#include "util/util.h"

/* Parses a file (buf NULL: read path) or a buffer; a document that declares entities is
 * refused. */
mc_status_t mc_xml_read(const char *buf, size_t len, const char *path, xmlDocPtr *doc,
                        mc_err_t *err);

/* Validates doc against a RelaxNG schema held in memory. A violation is MC_ERR_PARSE with
 * "path:line: not a valid <what>: <libxml2's first message>". */
mc_status_t mc_xml_check_rng(xmlDocPtr doc, const char *rng, size_t len, const char *path,
                             const char *what, mc_err_t *err);

#endif
