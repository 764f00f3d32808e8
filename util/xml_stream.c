/* Streaming XML reading for files of any size (schedules): libxml2's reader walks the document
 * once, validates it against a RelaxNG schema as it goes, and hands the caller each element as
 * it starts (attributes only) or, for the element names the caller asks for, whole; those
 * subtrees are freed as soon as the caller has read them. Memory is that of the largest such
 * element, not of the file, so no size cap is needed; the protections of mc_xml_read stay (no
 * network, no entity substitution, documents that declare entities refused). */
#include <libxml/relaxng.h>
#include <libxml/xmlreader.h>
#include <stdlib.h>
#include <string.h>

#include "util/xml.h"

/* The reader frees elements behind it: an attribute error is explained as it is reported. */
typedef struct stream_error {
    mc_xml_error_t fe;
    const char *rng;
    size_t rng_len;
} stream_error_t;

static void keep_first_explained(void *data, xmlErrorPtr e)
{
    stream_error_t *se = data;
    int seen = se->fe.seen;
    mc_xml_keep_first_error(&se->fe, e);
    if (!seen)
        mc_xml_explain_error(&se->fe, se->rng, se->rng_len);
    se->fe.node = NULL;
}

static int listed(const char *name, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(name, names[i]))
            return 1;
    return 0;
}

static mc_status_t error_of(const mc_xml_error_t *fe, const char *name, const char *what,
                            mc_err_t *err)
{
    if (fe->invalid)
        return mc_err_set(err, MC_ERR_PARSE, "%s:%d: not a valid %s: %s", name, fe->line, what,
                          fe->msg);
    return mc_err_set(err, MC_ERR_PARSE, "%s:%d: malformed XML: %s", name, fe->line,
                      fe->seen ? fe->msg : "not well-formed XML, or bytes its declared encoding "
                      "cannot decode");
}

/* The buffer read in pieces: xmlReaderForMemory takes an int length, this has no limit. */
typedef struct source {
    const char *buf;
    size_t len, at;
} source_t;

static int source_read(void *ctx, char *out, int n)
{
    source_t *src = ctx;
    size_t k = src->len - src->at < (size_t)n ? src->len - src->at : (size_t)n;
    memcpy(out, src->buf + src->at, k);
    src->at += k;
    return (int)k;
}

static int source_close(void *ctx)
{
    return 0;
}

mc_status_t mc_xml_stream(const char *buf, size_t len, const char *path, const char *rng,
                          size_t rng_len, const char *what, const char *const *whole,
                          mc_xml_visit_fn visit, void *ctx, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    stream_error_t se = {.rng = rng, .rng_len = rng_len};
    mc_xml_error_t *fe = &se.fe, schema_fe = {0};
    const char *name = path ? path : "(memory)";
    source_t src = {.buf = buf, .len = len};
    xmlTextReaderPtr reader = NULL;
    xmlRelaxNGParserCtxtPtr pctx = NULL;
    xmlRelaxNGPtr schema = NULL;
    int seen_root = 0, ret;
    xmlInitParser();
    pctx = xmlRelaxNGNewMemParserCtxt(rng, (int)rng_len);
    if (pctx) {
        xmlRelaxNGSetParserStructuredErrors(pctx, mc_xml_keep_first_error, &schema_fe);
        schema = xmlRelaxNGParse(pctx);
    }
    reader = xmlReaderForIO(source_read, source_close, &src, name, NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                XML_PARSE_BIG_LINES);
    if (!schema || !reader || xmlTextReaderRelaxNGSetSchema(reader, schema) != 0) {
        st = mc_err_set(err, MC_ERR_INTERNAL, "%s: cannot set up the %s reader (schema line %d: "
                        "%s)", name, what, schema_fe.line, schema_fe.seen ? schema_fe.msg : "-");
        goto out;
    }
    xmlTextReaderSetStructuredErrorHandler(reader, keep_first_explained, &se);
    ret = xmlTextReaderRead(reader);
    while (ret == 1 && !fe->seen) {
        int type = xmlTextReaderNodeType(reader), expand = 0;
        mc_status_t vst = MC_OK;
        if (type == XML_READER_TYPE_DOCUMENT_TYPE &&
            mc_xml_declares_entities(xmlTextReaderCurrentDoc(reader))) {
            st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: the DOCTYPE declares entities; meshcast "
                            "XML files may not (entities are never expanded)", name,
                            mc_xml_entity_line(buf, len));
            goto out;
        }
        if (type == XML_READER_TYPE_ELEMENT) {
            xmlNodePtr node = xmlTextReaderCurrentNode(reader);
            seen_root = 1;
            expand = listed((const char *)node->name, whole);
            if (expand && !xmlTextReaderExpand(reader)) {
                /* the error handler has the reason, except for bytes the declared encoding
                 * cannot decode: libxml2 reports those to no handler */
                ret = -1;
                if (!fe->seen)
                    fe->line = xmlTextReaderGetParserLineNumber(reader);
                break;
            }
            if (fe->seen)
                break;
            vst = visit(ctx, node, xmlTextReaderDepth(reader));
        }
        /* past an expanded element's subtree, which the reader validates (and frees) only now:
         * a schema violation in it is the error to report, even when visit found one too */
        ret = expand ? xmlTextReaderNext(reader) : xmlTextReaderRead(reader);
        if (vst != MC_OK && !fe->seen) {
            st = vst;
            goto out;
        }
    }
    if (fe->seen || ret < 0 || xmlTextReaderIsValid(reader) == 0) {
        st = error_of(fe, name, what, err);
        goto out;
    }
    if (!seen_root)
        st = mc_err_set(err, MC_ERR_PARSE, "%s:1: expected a root element", name);
out:
    xmlFreeTextReader(reader);
    xmlRelaxNGFree(schema);
    xmlRelaxNGFreeParserCtxt(pctx);
    return st;
}
