/* Tests for validating schedules with their instances kept compact (mc_sched_load_compact): each
 * template checked once and each instance as a relabeling must give exactly the read errors,
 * verdicts and lines of the check of the expanded schedule, on hand-made instances that are broken
 * (a missing link, an overlap with another instance, a piece missed) and on synthesized schedules
 * with their instances edited. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>

#include "sched/sched_internal.h"
#include "tests/unit/test_sched_fixture.h"

/* xml with the first occurrence of from replaced by to. */
static char *replace(const char *xml, const char *from, const char *to)
{
    const char *at = strstr(xml, from);
    assert_non_null(at);
    return mc_xasprintf("%.*s%s%s", (int)(at - xml), xml, to, at + strlen(from));
}

/* Reads xml both ways and validates both: the same status and error, or the same violation lines.
 * Returns the number of violations (-1 for a read error); *ninst: the instances kept compact. */
static int agree(const char *xml, const mc_topo_t *topo, int *ninst, char **report)
{
    mc_err_t e1 = {0}, e2 = {0};
    mc_sched_t *full = NULL, *compact = NULL;
    mc_status_t s1 = mc_sched_parse_memory(xml, strlen(xml), "s.xml", topo, 0, &full, &e1);
    mc_status_t s2 = mc_sched_parse_memory_compact(xml, strlen(xml), "s.xml", topo, 0, &compact,
                                                   &e2);
    assert_int_equal(s1, s2);
    *ninst = compact ? compact->ninst : 0;
    if (s1 != MC_OK) {
        assert_string_equal(e1.msg, e2.msg);
        *report = mc_xstrdup(e1.msg);
        return -1;
    }
    assert_int_equal(full->ninst, 0);
    assert_int_equal(full->ntrees, compact->ntrees + compact->inst_trees);
    mc_buf_t o1 = {0}, o2 = {0};
    int n1 = mc_sched_validate(full, topo, &o1), n2 = mc_sched_validate(compact, topo, &o2);
    assert_int_equal(n1, n2);
    if (!n1) /* valid without the expanded check: every instance a clean relabeling */
        assert_int_equal(mc_sched_sym_relabels(compact, topo), 1);
    assert_string_equal(o1.len ? o1.data : "", o2.len ? o2.data : "");
    *report = mc_xstrdup(o1.len ? o1.data : "");
    mc_buf_free(&o1);
    mc_buf_free(&o2);
    mc_sched_free(full);
    mc_sched_free(compact);
    return n1;
}

static void test_broken_instances(void **state)
{
    fixture_t *fx = *state;
    char *xml = fx_two_groups(fx), *report, *inst_end = strstr(xml, "/>\n  </symmetry>");
    int ninst;
    assert_int_equal(agree(xml, fx->topo, &ninst, &report), 0);
    assert_int_equal(ninst, 1);
    free(report);
    /* the pieces of the instance: 16 times piece_of[3]; the last one made piece_of[2] */
    char *pieces = mc_xasprintf(" %d\"", fx->piece_of[3]);
    char *other = mc_xasprintf(" %d\"", fx->piece_of[2]);
    char *line = mc_xasprintf("%.*s/>\n", (int)(inst_end - strstr(xml, "    <instance ")),
                              strstr(xml, "    <instance "));
    char *twice = mc_xasprintf("%s    <instance", line);
    struct {
        const char *from, *to;
        int want;
        const char *msg;
    } cases[] = {
        /* sw0 renamed GPU0: the route GPU0 -> GPU3 has no link */
        {"nodes=\"h0/GPU1 h0/GPU3 sw0\"", "nodes=\"h0/GPU1 h0/GPU3 h0/GPU0\"", -1,
         "s.xml:64: tree 0, edge 0 -> 2 of the template has no counterpart on the instance's nodes"},
        /* rooted at GPU0, the instance shares the template's link GPU0 -> sw0: only capacity */
        {"nodes=\"h0/GPU1 h0/GPU3 sw0\"", "nodes=\"h0/GPU0 h0/GPU3 sw0\"", 1,
         "phase 0: link h0/GPU0 -> sw0 is planned at 200 GB/s, above its 100 GB/s\n"},
        /* the instance on the template's own nodes: links shared beyond capacity, GPU 3 left out */
        {"nodes=\"h0/GPU1 h0/GPU3 sw0\"", "nodes=\"h0/GPU0 h0/GPU2 sw0\"", 3,
         "phase 0: link h0/GPU0 -> sw0 is planned at"},
        /* the instance listed twice: each byte twice (16 lines), links beyond capacity (2) */
        {"    <instance", twice, 18, "piece 1: GPU 3 receives bytes [0, 128) more than once "
                                    "(again in tree 32)"},
        /* the last tree carries the other piece: GPU 3 misses its last 128 bytes */
        {pieces, other, 1, "piece 1: GPU 3 never receives bytes [1920, 2048)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *bad = replace(xml, cases[i].from, cases[i].to);
        int n = agree(bad, fx->topo, &ninst, &report);
        if (n != cases[i].want || !strstr(report, cases[i].msg))
            fail_msg("case %zu: %d violations:\n%s", i, n, report);
        free(report);
        free(bad);
    }
    free(twice);
    free(line);
    free(other);
    free(pieces);
    free(xml);
}

/* The meshcast strategy's schedule of LLaMA-2-70B's weights from DP2 x TP8 to DP4 x TP4 on four
 * DGX H100: two components, one written as an instance of the other. Read compact, it validates
 * as expanded; so do edits that break its instance. */
static void test_synthesized(void **state)
{
    (void)state;
    fx_llama_t l = fx_llama();
    const char *xml = l.xml;
    char *report;
    int ninst;
    assert_int_equal(agree(xml, l.topo, &ninst, &report), 0);
    assert_int_equal(ninst, 1);
    free(report);
    const char *at = strstr(xml, "<instance template=\"0\" nodes=\"");
    assert_non_null(at);
    at += strlen("<instance template=\"0\" nodes=\"");
    /* the instance's first two node names swapped; its first piece changed */
    const char *sp = strchr(at, ' '), *sp2 = strchr(sp + 1, ' ');
    char *from = mc_xasprintf("%.*s", (int)(sp2 - at), at);
    char *to = mc_xasprintf("%.*s %.*s", (int)(sp2 - sp - 1), sp + 1, (int)(sp - at), at);
    char *swapped = replace(xml, from, to);
    int n = agree(swapped, l.topo, &ninst, &report);
    assert_true(n != 0);
    free(report);
    const char *pieces = strstr(at, "pieces=\"") + strlen("pieces=\"");
    char *first = mc_xasprintf("pieces=\"%.*s", (int)strcspn(pieces, " \""), pieces);
    char *next = mc_xasprintf("pieces=\"%d", (atoi(pieces) + 1) % l.task->npieces);
    char *repiece = replace(xml, first, next);
    n = agree(repiece, l.topo, &ninst, &report);
    assert_true(n > 0);
    free(report);
    free(repiece);
    free(next);
    free(first);
    free(swapped);
    free(to);
    free(from);
    fx_llama_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broken_instances),
        cmocka_unit_test(test_synthesized),
    };
    return cmocka_run_group_tests_name("sched_compact", tests, fx_setup, fx_teardown);
}
