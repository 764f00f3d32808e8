/* Naming the attribute behind a RelaxNG error (util/xml_explain.c). */
#ifndef MC_UTIL_XML_EXPLAIN_H
#define MC_UTIL_XML_EXPLAIN_H

#include <libxml/tree.h>
#include <stddef.h>

/* For "Type TYPE doesn't allow value 'VALUE'" on element el: names the attribute holding value.
 * Returns 1 when out was written. */
int mc_xml_explain_value(xmlNodePtr el, const char *value, const char *type, char *out,
                         size_t len);
/* For "Element NAME failed to validate attributes": compares el's attributes with the schema's
 * definition of the element (a required one missing, an unknown one, a fixed value differing).
 * Returns 1 when out was written. */
int mc_xml_explain_attrs(xmlNodePtr el, const char *rng, size_t rng_len, char *out, size_t len);

#endif
