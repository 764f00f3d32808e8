/* The schedule schema, compiled in so that a meshcast binary validates schedules wherever it is
 * installed. The text is sched/schedule.rng byte for byte (tests/unit/test_sched_xml.c checks it). */
#include <libxml/relaxng.h>
#include <string.h>

#include "sched/sched_internal.h"

static const char schema[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!-- RelaxNG schema of meshcast schedule files (docs/schedule-format.md). meshcast embeds this\n"
    "     text (sched/sched_schema.c) and validates every schedule it reads against it. -->\n"
    "<grammar xmlns=\"http://relaxng.org/ns/structure/1.0\"\n"
    "         datatypeLibrary=\"http://www.w3.org/2001/XMLSchema-datatypes\">\n"
    "  <start>\n"
    "    <element name=\"schedule\">\n"
    "      <attribute name=\"version\"><value>1</value></attribute>\n"
    "      <attribute name=\"strategy\">\n"
    "        <data type=\"string\"><param name=\"maxLength\">31</param></data>\n"
    "      </attribute>\n"
    "      <attribute name=\"params\">\n"
    "        <data type=\"string\"><param name=\"maxLength\">255</param></data>\n"
    "      </attribute>\n"
    "      <attribute name=\"topology\">\n"
    "        <data type=\"string\"><param name=\"pattern\">[0-9a-f]{16}</param></data>\n"
    "      </attribute>\n"
    "      <attribute name=\"mem-limit\"><data type=\"unsignedLong\"/></attribute>\n"
    "      <attribute name=\"workspace\"><data type=\"unsignedLong\"/></attribute>\n"
    "      <element name=\"task\"><text/></element>\n"
    "      <element name=\"pieces\">\n"
    "        <zeroOrMore>\n"
    "          <element name=\"piece\">\n"
    "            <attribute name=\"n\"><ref name=\"index\"/></attribute>\n"
    "            <attribute name=\"tensor\"><ref name=\"index\"/></attribute>\n"
    "            <attribute name=\"box\">\n"
    "              <data type=\"string\">\n"
    "                <param name=\"pattern\">[0-9]+:[0-9]+(,[0-9]+:[0-9]+)*</param>\n"
    "              </data>\n"
    "            </attribute>\n"
    "            <attribute name=\"bytes\"><data type=\"unsignedLong\"/></attribute>\n"
    "          </element>\n"
    "        </zeroOrMore>\n"
    "      </element>\n"
    "      <zeroOrMore>\n"
    "        <element name=\"phase\">\n"
    "          <attribute name=\"n\"><ref name=\"index\"/></attribute>\n"
    "          <zeroOrMore><ref name=\"tree\"/></zeroOrMore>\n"
    "        </element>\n"
    "      </zeroOrMore>\n"
    "    </element>\n"
    "  </start>\n"
    "\n"
    "  <define name=\"index\">\n"
    "    <data type=\"int\"><param name=\"minInclusive\">0</param></data>\n"
    "  </define>\n"
    "\n"
    "  <define name=\"tree\">\n"
    "    <element name=\"tree\">\n"
    "      <attribute name=\"piece\"><ref name=\"index\"/></attribute>\n"
    "      <attribute name=\"offset\"><data type=\"unsignedLong\"/></attribute>\n"
    "      <attribute name=\"bytes\"><data type=\"unsignedLong\"/></attribute>\n"
    "      <attribute name=\"root\"><ref name=\"index\"/></attribute>\n"
    "      <attribute name=\"chunks\">\n"
    "        <data type=\"int\"><param name=\"minInclusive\">1</param></data>\n"
    "      </attribute>\n"
    "      <optional>\n"
    "        <attribute name=\"rate\">\n"
    "          <data type=\"double\"><param name=\"minExclusive\">0</param></data>\n"
    "        </attribute>\n"
    "      </optional>\n"
    "      <zeroOrMore>\n"
    "        <element name=\"edge\">\n"
    "          <attribute name=\"parent\"><ref name=\"index\"/></attribute>\n"
    "          <attribute name=\"child\"><ref name=\"index\"/></attribute>\n"
    "          <optional><attribute name=\"via\"><ref name=\"index\"/></attribute></optional>\n"
    "          <attribute name=\"route\">\n"
    "            <data type=\"string\"><param name=\"pattern\">\\S+( \\S+)+</param></data>\n"
    "          </attribute>\n"
    "        </element>\n"
    "      </zeroOrMore>\n"
    "    </element>\n"
    "  </define>\n"
    "</grammar>\n";

const char *mc_sched_schema_text(size_t *len)
{
    *len = sizeof schema - 1;
    return schema;
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
    if (b->len)
        mc_buf_printf(b, "; %.*s", (int)n, e->message);
    else
        mc_buf_printf(b, "%d: %.*s", e->line, (int)n, e->message);
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
