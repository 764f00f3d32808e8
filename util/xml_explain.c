/* Says which attribute a RelaxNG error is about. libxml2 reports a bad attribute as "Type int
 * doesn't allow value 'x'" or only "Element tree failed to validate attributes", naming neither
 * the attribute nor what it should hold; the element's attributes and the schema's definition of
 * the element say it: the attribute holding the refused value, a required one missing, one the
 * schema does not know, one whose fixed value differs, or one that fails its <data> type or the
 * facets the schemas use (pattern, minInclusive, minExclusive, maxLength). */
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlregexp.h>
#include <libxml/xmlschemastypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xml_explain.h"

static int is_rng(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, name);
}

static int has_name(xmlNodePtr n, const char *name)
{
    xmlChar *v = xmlGetProp(n, BAD_CAST "name");
    int same = v && !strcmp((const char *)v, name);
    xmlFree(v);
    return same;
}

/* The first <element name="name"> of the schema, depth first. */
static xmlNodePtr find_element(xmlNodePtr n, const char *name)
{
    for (; n; n = n->next) {
        if (is_rng(n, "element") && has_name(n, name))
            return n;
        xmlNodePtr in = n->type == XML_ELEMENT_NODE ? find_element(n->children, name) : NULL;
        if (in)
            return in;
    }
    return NULL;
}

/* Whether value fits <data type="..."> with its <param> facets; writes what was expected. */
static int data_ok(xmlNodePtr data, const char *value, char *expected, size_t len)
{
    xmlChar *type = xmlGetProp(data, BAD_CAST "type");
    xmlSchemaTypePtr t = type ? xmlSchemaGetPredefinedType(type, BAD_CAST
                                                          "http://www.w3.org/2001/XMLSchema")
                              : NULL;
    int ok = !t || xmlSchemaValidatePredefinedType(t, BAD_CAST value, NULL) == 0;
    snprintf(expected, len, "a value of type %s", type ? (const char *)type : "?");
    for (xmlNodePtr p = data->children; p && ok; p = p->next) {
        if (!is_rng(p, "param"))
            continue;
        xmlChar *facet = xmlGetProp(p, BAD_CAST "name"), *v = xmlNodeGetContent(p);
        const char *f = facet ? (const char *)facet : "", *fv = v ? (const char *)v : "";
        if (!strcmp(f, "pattern")) {
            xmlRegexpPtr re = xmlRegexpCompile(v);
            ok = !re || xmlRegexpExec(re, BAD_CAST value) == 1;
            xmlRegFreeRegexp(re);
            snprintf(expected, len, "a value matching %s", fv);
        } else if (!strcmp(f, "minInclusive") || !strcmp(f, "minExclusive")) {
            double x = strtod(value, NULL), lo = strtod(fv, NULL);
            ok = f[3] == 'I' ? x >= lo : x > lo;
            snprintf(expected, len, "a value %s %s (type %s)", f[3] == 'I' ? ">=" : ">", fv,
                     type ? (const char *)type : "?");
        } else if (!strcmp(f, "maxLength")) {
            ok = strlen(value) <= (size_t)strtoul(fv, NULL, 10);
            snprintf(expected, len, "at most %s characters", fv);
        }
        xmlFree(facet);
        xmlFree(v);
    }
    xmlFree(type);
    return ok;
}

/* The <data> child of the <define> that ref names, or NULL. */
static xmlNodePtr define_data(xmlDocPtr schema, xmlNodePtr ref)
{
    for (xmlNodePtr d = xmlDocGetRootElement(schema)->children; d; d = d->next) {
        xmlChar *name = xmlGetProp(ref, BAD_CAST "name");
        int match = name && is_rng(d, "define") && has_name(d, (const char *)name);
        xmlFree(name);
        for (xmlNodePtr c = match ? d->children : NULL; c; c = c->next)
            if (is_rng(c, "data"))
                return c;
    }
    return NULL;
}

/* Checks el's attributes against the <attribute> children of def (inside <optional> when
 * optional); writes the first problem found. */
static int check_attrs(xmlNodePtr def, xmlNodePtr el, int optional, char *out, size_t len)
{
    for (xmlNodePtr a = def->children; a; a = a->next) {
        if (is_rng(a, "optional") && check_attrs(a, el, 1, out, len))
            return 1;
        if (!is_rng(a, "attribute"))
            continue;
        xmlChar *name = xmlGetProp(a, BAD_CAST "name");
        xmlChar *have = name ? xmlGetProp(el, name) : NULL;
        xmlNodePtr value = a->children, data = a->children;
        while (value && !is_rng(value, "value"))
            value = value->next;
        while (data && !is_rng(data, "data") && !is_rng(data, "ref"))
            data = data->next;
        if (data && is_rng(data, "ref")) /* <ref name="index"/>: the <data> of its <define> */
            data = define_data(a->doc, data);
        xmlChar *want = value ? xmlNodeGetContent(value) : NULL;
        char expected[256];
        int bad = 1;
        if (name && !have && !optional)
            snprintf(out, len, "<%s> lacks the attribute %s", (const char *)el->name, name);
        else if (have && want && strcmp((const char *)have, (const char *)want))
            snprintf(out, len, "<%s %s=\"%s\">: expected %s=\"%s\"", (const char *)el->name, name,
                     have, name, want);
        else if (have && data && !data_ok(data, (const char *)have, expected, sizeof expected))
            snprintf(out, len, "<%s %s=\"%s\">: expected %s", (const char *)el->name, name, have,
                     expected);
        else
            bad = 0;
        xmlFree(name);
        xmlFree(have);
        xmlFree(want);
        if (bad)
            return 1;
    }
    return 0;
}

/* Whether def (or an <optional> in it) declares the attribute called name. */
static int declares(xmlNodePtr def, const char *name)
{
    for (xmlNodePtr a = def->children; a; a = a->next)
        if ((is_rng(a, "attribute") && has_name(a, name)) ||
            (is_rng(a, "optional") && declares(a, name)))
            return 1;
    return 0;
}

int mc_xml_explain_value(xmlNodePtr el, const char *value, const char *type, char *out,
                         size_t len)
{
    if (!el || el->type != XML_ELEMENT_NODE || !value)
        return 0;
    for (xmlAttrPtr a = el->properties; a; a = a->next) {
        xmlChar *v = xmlNodeGetContent((xmlNodePtr)a);
        int same = v && !strcmp((const char *)v, value);
        xmlFree(v);
        if (same) {
            snprintf(out, len, "<%s %s=\"%s\">: expected a value of type %s",
                     (const char *)el->name, (const char *)a->name, value, type ? type : "?");
            return 1;
        }
    }
    return 0;
}

int mc_xml_explain_attrs(xmlNodePtr el, const char *rng, size_t rng_len, char *out, size_t len)
{
    if (!el || el->type != XML_ELEMENT_NODE)
        return 0;
    xmlDocPtr schema = xmlReadMemory(rng, (int)rng_len, "schema", NULL,
                                     XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!schema)
        return 0;
    int found = 0;
    xmlNodePtr def = find_element(xmlDocGetRootElement(schema), (const char *)el->name);
    if (def) {
        found = check_attrs(def, el, 0, out, len);
        for (xmlAttrPtr a = el->properties; a && !found; a = a->next)
            if (!declares(def, (const char *)a->name)) {
                snprintf(out, len, "<%s> has an attribute %s that the schema does not define",
                         (const char *)el->name, (const char *)a->name);
                found = 1;
            }
    }
    xmlFreeDoc(schema);
    return found;
}
