/* The schedule schema, compiled in so that a meshcast binary validates schedules wherever it is
 * installed, and the check of a document against it. The assembler's .incbin reads
 * sched/schedule.rng relative to the repository root, where the Makefile runs the compiler (as
 * topo/topo_cluster_schema.c does); tests/unit/test_sched_xml.c checks that the copy is current. */
#include <libxml/relaxng.h>
#include <string.h>

#include "sched/sched_internal.h"

__asm__(".pushsection .rodata\n"
        ".balign 16\n"
        "mc_sched_rng_start:\n"
        ".incbin \"sched/schedule.rng\"\n"
        "mc_sched_rng_stop:\n"
        ".byte 0\n"
        ".popsection\n");

extern const char mc_sched_rng_start[], mc_sched_rng_stop[];

const char *mc_sched_schema_text(size_t *len)
{
    *len = (size_t)(mc_sched_rng_stop - mc_sched_rng_start);
    return mc_sched_rng_start;
}

/* Keeps libxml2's messages: the first names the line, later ones often say which attribute. */
static void collect_error(void *ctx, xmlErrorPtr e)
{
    mc_buf_t *b = ctx;
    if (!e || !e->message || b->len > 400)
        return;
    size_t n = strlen(e->message);
    while (n && e->message[n - 1] == '\n')
        n--;
    int line = e->line;
    if (line <= 0 && e->node) /* attribute errors name their element instead */
        line = (int)xmlGetLineNo((xmlNodePtr)e->node);
    if (b->len)
        mc_buf_printf(b, "; %.*s", (int)n, e->message);
    else
        mc_buf_printf(b, "%d: %.*s", line, (int)n, e->message);
}

mc_status_t mc_sched_schema_check(xmlDocPtr doc, const char *name, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_buf_t msg = {0};
    size_t len;
    const char *text = mc_sched_schema_text(&len);
    xmlRelaxNGParserCtxtPtr pctx = xmlRelaxNGNewMemParserCtxt(text, (int)len);
    xmlRelaxNGPtr rng = pctx ? xmlRelaxNGParse(pctx) : NULL;
    xmlRelaxNGValidCtxtPtr vctx = rng ? xmlRelaxNGNewValidCtxt(rng) : NULL;
    if (!vctx) {
        st = mc_err_set(err, MC_ERR_INTERNAL, "%s: the built-in schedule schema does not load", name);
        goto out;
    }
    xmlRelaxNGSetValidStructuredErrors(vctx, collect_error, &msg);
    if (xmlRelaxNGValidateDoc(vctx, doc) != 0)
        st = mc_err_set(err, MC_ERR_PARSE, "%s:%s (expected a schedule as in docs/schedule-format.md)",
                        name, msg.len ? msg.data : " not a valid schedule");
out:
    mc_buf_free(&msg);
    xmlRelaxNGFreeValidCtxt(vctx);
    xmlRelaxNGFree(rng);
    xmlRelaxNGFreeParserCtxt(pctx);
    return st;
}
