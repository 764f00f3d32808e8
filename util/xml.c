/* Safe XML reading for every loader: libxml2 without network access, without entity
 * substitution and without DTD loading, parse errors turned into "file:line: what" messages,
 * and documents that declare entities refused outright (billion laughs, external entities). */
#include <libxml/parser.h>
#include <libxml/relaxng.h>
#include <libxml/tree.h>
#include <stdlib.h>
#include <string.h>

#include "util/xml.h"
#include "util/xml_explain.h"

/* Topology files are a few hundred kilobytes; anything far larger is not one. */
#define MC_XML_MAX_BYTES (64u << 20)

/* True when the document's DOCTYPE declares any entity: we never expand entities, and a file
 * that declares them is either an attack or not a topology. */
int mc_xml_declares_entities(xmlDocPtr doc)
{
    xmlDtdPtr dtds[2] = {doc->intSubset, doc->extSubset};
    for (int i = 0; i < 2; i++)
        if (dtds[i] && (dtds[i]->entities || dtds[i]->pentities))
            return 1;
    return 0;
}

/* libxml2 keeps no line for declarations; find the first one in the text. */
int mc_xml_entity_line(const char *buf, size_t len)
{
    int line = 1;
    for (size_t i = 0; i + 8 <= len && memcmp(buf + i, "<!ENTITY", 8); i++)
        line += buf[i] == '\n';
    return line;
}

/* Some libxml2 errors (input encoding) go to its global handler even with XML_PARSE_NOERROR;
 * the context keeps them, and the message we return says what went wrong. */
static void quiet_generic_error(void *ctx, const char *msg, ...)
{
}

mc_status_t mc_xml_read(const char *buf, size_t len, const char *path, xmlDocPtr *out,
                        mc_err_t *err)
{
    mc_status_t st = MC_OK;
    char *data = NULL;
    xmlParserCtxtPtr ctxt = NULL;
    xmlDocPtr doc = NULL;
    const char *name = path ? path : "(memory)";
    *out = NULL;

    if (!buf) {
        MC_CHECK_GOTO(mc_read_file(path, &data, &len, err), out, st);
        buf = data;
    }
    if (len > MC_XML_MAX_BYTES) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s: %zu bytes is too large for a meshcast XML file "
                        "(at most %u)", name, len, MC_XML_MAX_BYTES);
        goto out;
    }
    xmlInitParser();
    xmlSetGenericErrorFunc(NULL, quiet_generic_error);
    ctxt = xmlNewParserCtxt();
    if (!ctxt) {
        st = mc_err_set(err, MC_ERR_NOMEM, "%s: cannot create an XML parser", name);
        goto out;
    }
    doc = xmlCtxtReadMemory(ctxt, buf, (int)len, name, NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                XML_PARSE_BIG_LINES);
    if (!doc || !ctxt->wellFormed) {
        xmlErrorPtr e = xmlCtxtGetLastError(ctxt);
        const char *msg = e && e->message ? e->message : "not well-formed XML\n";
        int line = e ? e->line : 0;
        int mlen = (int)strcspn(msg, "\n");
        st = mc_err_set(err, MC_ERR_PARSE, "%s:%d: malformed XML: %.*s", name, line, mlen, msg);
        goto out;
    }
    if (mc_xml_declares_entities(doc)) {
        st = mc_err_set(err, MC_ERR_INVALID,
                        "%s:%d: the DOCTYPE declares entities; meshcast XML files may not (entities "
                        "are never expanded)", name, mc_xml_entity_line(buf, len));
        goto out;
    }
    if (!xmlDocGetRootElement(doc)) {
        st = mc_err_set(err, MC_ERR_PARSE, "%s:1: expected a root element", name);
        goto out;
    }
    *out = doc;
    doc = NULL;
out:
    if (doc)
        xmlFreeDoc(doc);
    if (ctxt)
        xmlFreeParserCtxt(ctxt);
    free(data);
    return st;
}

/* Keeps the first error libxml2 reports (the later ones are usually its consequences), with a
 * line number: attribute errors come without one but name their element. */
void mc_xml_keep_first_error(void *data, xmlErrorPtr e)
{
    mc_xml_error_t *fe = data;
    if (fe->seen || !e)
        return;
    fe->seen = 1;
    fe->invalid = e->domain == XML_FROM_RELAXNGV || e->domain == XML_FROM_RELAXNGP;
    fe->line = e->line;
    if (fe->line <= 0 && e->node)
        fe->line = (int)xmlGetLineNo((xmlNodePtr)e->node);
    fe->node = e->node;
    if (e->message && !strncmp(e->message, "Type ", 5) &&
        mc_xml_explain_value(e->node, e->str2, e->str1, fe->msg, sizeof fe->msg))
        return;
    snprintf(fe->msg, sizeof fe->msg, "%s", e->message ? e->message : "invalid");
    size_t n = strlen(fe->msg);
    while (n && (fe->msg[n - 1] == '\n' || fe->msg[n - 1] == ' '))
        fe->msg[--n] = '\0';
}

void mc_xml_explain_error(mc_xml_error_t *fe, const char *rng, size_t len)
{
    if (fe->seen && fe->node && (strstr(fe->msg, "failed to validate attributes") ||
                                 !strncmp(fe->msg, "Invalid attribute ", 18)))
        mc_xml_explain_attrs(fe->node, rng, len, fe->msg, sizeof fe->msg);
}

mc_status_t mc_xml_check_rng(xmlDocPtr doc, const char *rng, size_t len, const char *path,
                             const char *what, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_xml_error_t fe = {0};
    xmlRelaxNGParserCtxtPtr pctx = xmlRelaxNGNewMemParserCtxt(rng, (int)len);
    xmlRelaxNGPtr schema = NULL;
    xmlRelaxNGValidCtxtPtr vctx = NULL;
    if (pctx) {
        xmlRelaxNGSetParserStructuredErrors(pctx, mc_xml_keep_first_error, &fe);
        schema = xmlRelaxNGParse(pctx);
    }
    vctx = schema ? xmlRelaxNGNewValidCtxt(schema) : NULL;
    if (!vctx) {
        st = mc_err_set(err, MC_ERR_INTERNAL, "the built-in %s schema does not load: line %d: %s",
                        what, fe.line, fe.msg);
        goto out;
    }
    xmlRelaxNGSetValidStructuredErrors(vctx, mc_xml_keep_first_error, &fe);
    int invalid = xmlRelaxNGValidateDoc(vctx, doc) != 0;
    if (invalid)
        mc_xml_explain_error(&fe, rng, len);
    if (invalid)
        st = mc_err_set(err, MC_ERR_PARSE, "%s:%d: not a valid %s: %s", path, fe.line, what,
                        fe.seen ? fe.msg : "invalid");
out:
    xmlRelaxNGFreeValidCtxt(vctx);
    xmlRelaxNGFree(schema);
    xmlRelaxNGFreeParserCtxt(pctx);
    return st;
}
