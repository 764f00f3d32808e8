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

/* The first error libxml2 reports (the later ones are usually its consequences), with a line
 * number: attribute errors come without one but name their element. invalid: a RelaxNG error,
 * else a parse error. mc_xml_keep_first_error is the structured error handler filling it. */
typedef struct mc_xml_error {
    int seen, line, invalid;
    char msg[512];
    xmlNodePtr node;    /* the element it is about, while it lives */
} mc_xml_error_t;
void mc_xml_keep_first_error(void *data, xmlErrorPtr e);
/* An attribute error of fe, while its element lives, made to name the attribute (a required one
 * missing, an unknown one) from the schema's text (util/xml_explain.c). */
void mc_xml_explain_error(mc_xml_error_t *fe, const char *rng, size_t len);

/* Whether doc's DOCTYPE declares any entity (meshcast files may not), and the line of the first
 * declaration in the text (libxml2 keeps none). */
int mc_xml_declares_entities(xmlDocPtr doc);
int mc_xml_entity_line(const char *buf, size_t len);

/* Called by mc_xml_stream for each element: as it starts (its attributes, no children yet), or
 * whole when its name is in the caller's list. depth: 0 for the root. */
typedef mc_status_t (*mc_xml_visit_fn)(void *ctx, xmlNodePtr node, int depth);

/* Reads a document of any size in one pass (util/xml_stream.c), validating it against a RelaxNG
 * schema held in memory as it goes, and calls visit for every element; the elements named in
 * whole (NULL-terminated) are visited whole and not descended into. Errors as mc_xml_read's and
 * mc_xml_check_rng's; visit's first error stops the walk. */
mc_status_t mc_xml_stream(const char *buf, size_t len, const char *path, const char *rng,
                          size_t rng_len, const char *what, const char *const *whole,
                          mc_xml_visit_fn visit, void *ctx, mc_err_t *err);

#endif
