/* The cluster XML schema, embedded into the library at build time so that validation works from
 * a clean clone, from the tests and after `make install` alike, and validation of a document
 * against it with libxml2's RelaxNG API, so that each violation carries its line number. The
 * assembler's .incbin reads topologies/schema/cluster.rng relative to the repository root, where
 * the Makefile runs the compiler; test_cluster checks that the copy is current. */
#include <libxml/relaxng.h>
#include <libxml/xmlerror.h>
#include <string.h>

#include "topo/topo_cluster.h"

__asm__(".pushsection .rodata\n"
        ".balign 16\n"
        "mc_cluster_rng_start:\n"
        ".incbin \"topologies/schema/cluster.rng\"\n"
        "mc_cluster_rng_stop:\n"
        ".byte 0\n"
        ".popsection\n");

extern const char mc_cluster_rng_start[], mc_cluster_rng_stop[];

const char *mc_cluster_schema_text(size_t *len)
{
    if (len)
        *len = (size_t)(mc_cluster_rng_stop - mc_cluster_rng_start);
    return mc_cluster_rng_start;
}

/* Keeps the first error libxml2 reports; the later ones are usually its consequences. */
typedef struct first_error {
    int seen;
    int line;
    char msg[512];
} first_error_t;

static void keep_first(void *data, xmlErrorPtr e)
{
    first_error_t *fe = data;
    if (fe->seen || !e)
        return;
    fe->seen = 1;
    fe->line = e->line;
    /* Attribute errors come without a line but with the element they concern. */
    if (fe->line <= 0 && e->node)
        fe->line = (int)xmlGetLineNo((xmlNodePtr)e->node);
    snprintf(fe->msg, sizeof fe->msg, "%s", e->message ? e->message : "invalid");
    size_t n = strlen(fe->msg);
    while (n && (fe->msg[n - 1] == '\n' || fe->msg[n - 1] == ' '))
        fe->msg[--n] = '\0';
}

mc_status_t mc_cluster_validate(xmlDocPtr doc, const char *path, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    first_error_t fe = {0};
    size_t len;
    const char *text = mc_cluster_schema_text(&len);
    xmlRelaxNGParserCtxtPtr pctx = xmlRelaxNGNewMemParserCtxt(text, (int)len);
    xmlRelaxNGPtr schema = NULL;
    xmlRelaxNGValidCtxtPtr vctx = NULL;
    if (!pctx) {
        st = mc_err_set(err, MC_ERR_NOMEM, "%s: cannot read the cluster schema", path);
        goto out;
    }
    xmlRelaxNGSetParserStructuredErrors(pctx, keep_first, &fe);
    schema = xmlRelaxNGParse(pctx);
    if (!schema) {
        st = mc_err_set(err, MC_ERR_INTERNAL, "the embedded cluster schema is broken: line %d: %s",
                        fe.line, fe.msg);
        goto out;
    }
    vctx = xmlRelaxNGNewValidCtxt(schema);
    if (!vctx) {
        st = mc_err_set(err, MC_ERR_NOMEM, "%s: cannot validate", path);
        goto out;
    }
    xmlRelaxNGSetValidStructuredErrors(vctx, keep_first, &fe);
    if (xmlRelaxNGValidateDoc(vctx, doc) != 0)
        st = mc_err_set(err, MC_ERR_INVALID,
                        "%s:%d: not a valid cluster file (topologies/schema/cluster.rng): %s", path,
                        fe.line, fe.seen ? fe.msg : "invalid");
out:
    xmlRelaxNGFreeValidCtxt(vctx);
    xmlRelaxNGFree(schema);
    xmlRelaxNGFreeParserCtxt(pctx);
    return st;
}
