/* Tests for the schedule's XML form: byte-for-byte round trips, the compiled-in schema against
 * sched/schedule.rng, refusal of a schedule made for another topology unless forced, link-by-link
 * checking when forced, clear errors for malformed files, symmetry kept as templates and
 * instances, and files of any size. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <unistd.h>

#include "sched/sched_internal.h"
#include "tests/unit/test_sched_fixture.h"

static mc_sched_t *parse(const char *xml, const mc_topo_t *topo, int force, mc_status_t want,
                         mc_err_t *err)
{
    mc_sched_t *s = NULL;
    mc_status_t st = mc_sched_parse_memory(xml, strlen(xml), "s.xml", topo, force, &s, err);
    if (st != want)
        fail_msg("status %d, want %d: %s", st, want, err->msg);
    return s;
}

/* xml with the first occurrence of from replaced by to. */
static char *replace(const char *xml, const char *from, const char *to)
{
    const char *at = strstr(xml, from);
    assert_non_null(at);
    return mc_xasprintf("%.*s%s%s", (int)(at - xml), xml, to, at + strlen(from));
}

static void test_round_trip(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = fx_valid(fx, 3);
    s->mem_limit = 1 << 20;
    s->workspace = 64;
    snprintf(s->params, sizeof s->params, "chunks=3 note=\"a<b\"");
    s->trees[1].phase = 1;
    s->trees[1].inflight = 8;
    s->nphases = 2;
    mc_sched_plan_rates(s, fx->topo);
    char *xml = mc_sched_to_xml(s, fx->topo);
    assert_non_null(strstr(xml, "chunks=\"3\" inflight=\"8\""));
    assert_non_null(strstr(xml, "route=\"h0/GPU0 sw0 h0/GPU2\""));
    assert_non_null(strstr(xml, "A[_,_] -&gt; B[x,_]"));
    assert_non_null(strstr(xml, "params=\"chunks=3 note=&quot;a&lt;b&quot;\""));
    mc_err_t err = {0};
    mc_sched_t *back = parse(xml, fx->topo, 0, MC_OK, &err);
    char *again = mc_sched_to_xml(back, fx->topo);
    assert_string_equal(again, xml);
    assert_int_equal(back->ntrees, 2);
    assert_int_equal(back->nphases, 2);
    assert_int_equal(back->trees[1].nchunks, 3);
    assert_int_equal(back->trees[1].inflight, 8);
    assert_int_equal(back->trees[0].inflight, 1);
    assert_int_equal(back->trees[1].edges[0].nlinks, 2);
    assert_int_equal(back->trees[1].edges[0].links[1], mc_topo_find_link(fx->topo, FX_SW, 3));
    assert_true(back->trees[0].rate == s->trees[0].rate);
    assert_int_equal(back->mem_limit, 1 << 20);
    assert_int_equal(mc_sched_validate(back, fx->topo, NULL), 0);
    free(again);
    free(xml);
    mc_sched_free(back);
    mc_sched_free(s);
}

static void test_save_and_load(void **state)
{
    fixture_t *fx = *state;
    char dir[] = "/tmp/mc_sched_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = mc_xasprintf("%s/s.xml", dir);
    mc_sched_t *s = fx_valid(fx, 1), *back = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_sched_save(s, fx->topo, path, &err), MC_OK);
    assert_int_equal(mc_sched_load(path, fx->topo, 0, &back, &err), MC_OK);
    assert_int_equal(back->ntrees, 2);
    mc_sched_free(back);
    char *missing = mc_xasprintf("%s/none.xml", dir);
    assert_int_not_equal(mc_sched_load(missing, fx->topo, 0, &back, &err), MC_OK);
    assert_null(back);
    unlink(path);
    rmdir(dir);
    free(missing);
    free(path);
    mc_sched_free(s);
}

static void test_schema_file_matches(void **state)
{
    char *file;
    size_t len, n;
    mc_err_t err = {0};
    assert_int_equal(mc_read_file("sched/schedule.rng", &file, &len, &err), MC_OK);
    const char *text = mc_sched_schema_text(&n);
    assert_int_equal(len, n);
    assert_memory_equal(file, text, n);
    free(file);
}

/* The same fixture with sw0 -> GPU3 missing: another topology (another fingerprint). */
static mc_topo_t *other_topo(const fixture_t *fx, int keep_all_links)
{
    mc_err_t err = {0};
    mc_topo_t *t = mc_topo_new("other");
    for (int i = 0; i < fx->topo->nnodes; i++)
        mc_topo_add_node(t, &fx->topo->nodes[i]);
    for (int i = 0; i < fx->topo->nlinks; i++) {
        const mc_link_t *l = &fx->topo->links[i];
        if (keep_all_links || !(l->src == FX_SW && l->dst == 3))
            mc_topo_add_link(t, l->src, l->dst, l->kind, l->bw / 2, l->latency, l->count);
    }
    assert_int_equal(mc_topo_finalize(t, &err), MC_OK);
    return t;
}

static void test_other_topology(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = fx_valid(fx, 1);
    char *xml = mc_sched_to_xml(s, fx->topo);
    mc_err_t err = {0};
    mc_topo_t *same_links = other_topo(fx, 1), *fewer = other_topo(fx, 0);
    assert_true(same_links->fingerprint != fx->topo->fingerprint);
    parse(xml, same_links, 0, MC_ERR_INVALID, &err);
    assert_non_null(strstr(err.msg, "use --force"));
    /* forced: checked link by link; every link exists on the slower copy */
    mc_sched_t *back = parse(xml, same_links, 1, MC_OK, &err);
    assert_int_equal(mc_sched_validate(back, same_links, NULL), 0);
    mc_sched_free(back);
    back = parse(xml, fewer, 1, MC_OK, &err);
    mc_buf_t out = {0};
    assert_int_equal(mc_sched_validate(back, fewer, &out), 1);
    assert_non_null(strstr(out.data, "tree 1, edge 1 -> 3: link sw0 -> h0/GPU3 does not exist"));
    mc_buf_free(&out);
    mc_sched_free(back);
    mc_topo_free(same_links);
    mc_topo_free(fewer);
    free(xml);
    mc_sched_free(s);
}

/* A route through a link the hardware lacks (GPU0 has no direct link to GPU2) is a violation,
 * not a read error, so validate lists it with the rest. */
static void test_route_through_missing_link(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = fx_valid(fx, 1);
    char *xml = mc_sched_to_xml(s, fx->topo);
    char *bad = replace(xml, "h0/GPU0 sw0 h0/GPU2", "h0/GPU0 h0/GPU2");
    char *unknown = replace(xml, "h0/GPU0 sw0 h0/GPU2", "h0/GPU0 sw9 h0/GPU2");
    mc_err_t err = {0};
    mc_sched_t *back = parse(bad, fx->topo, 0, MC_OK, &err);
    mc_buf_t out = {0};
    assert_int_equal(mc_sched_validate(back, fx->topo, &out), 1);
    assert_non_null(strstr(out.data, "s.xml:"));
    assert_non_null(strstr(out.data, "link h0/GPU0 -> h0/GPU2 does not exist on this topology"));
    mc_buf_free(&out);
    mc_sched_free(back);
    back = parse(unknown, fx->topo, 0, MC_OK, &err);
    assert_int_equal(mc_sched_validate(back, fx->topo, NULL), 2);
    mc_sched_free(back);
    free(unknown);
    free(bad);
    free(xml);
    mc_sched_free(s);
}

static void test_malformed(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = fx_valid(fx, 1);
    char *xml = mc_sched_to_xml(s, fx->topo);
    mc_err_t err = {0};
    struct {
        const char *from, *to;
        mc_status_t st;
        const char *msg;
    } cases[] = {
        {" root=\"0\"", "", MC_ERR_PARSE, "s.xml:"},                      /* schema */
        {"chunks=\"1\"", "chunks=\"0\"", MC_ERR_PARSE, "s.xml:"},          /* schema: >= 1 */
        {"chunks=\"1\"", "chunks=\"1\" inflight=\"0\"", MC_ERR_PARSE, "s.xml:"},
        {"chunks=\"1\"", "chunks=\"1\" inflight=\"65\"", MC_ERR_PARSE, "s.xml:"},
        {"root=\"0\"", "root=\"9\"", MC_ERR_INVALID, "root between 0 and 3"},
        {"chunks=\"1\"", "chunks=\"16777217\"", MC_ERR_INVALID, "chunks between 1 and 16777216"},
        {"parent=\"0\"", "parent=\"-1\"", MC_ERR_PARSE, "s.xml:"},
        {"bytes=\"2048\"/>", "bytes=\"2049\"/>", MC_ERR_INVALID, "differs from the task's split"},
        {"move t0", "move t0 oops", MC_ERR_PARSE, "s.xml:7:"},
        {"<phase n=\"0\">", "<phase n=\"1\">", MC_ERR_INVALID, "expected n between 0 and 0"},
        {"</schedule>", "", MC_ERR_PARSE, "s.xml"},                       /* not well formed */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *bad = replace(xml, cases[i].from, cases[i].to);
        mc_sched_t *out = NULL;
        mc_status_t st = mc_sched_parse_memory(bad, strlen(bad), "s.xml", fx->topo, 0, &out, &err);
        if (st != cases[i].st ||
            !strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: status %d: %s", i, st, err.msg);
        assert_null(out);
        free(bad);
    }
    free(xml);
    mc_sched_free(s);
}

/* Two link-disjoint groups of 16 trees, GPU0 -> sw0 -> GPU2 and GPU1 -> sw0 -> GPU3, each piece
 * in 128-byte ranges: the second group is the first on other nodes, so the file holds 16 trees
 * and one instance line, which reads back as the 32 trees (a valid schedule, written again to the
 * same bytes). Instances that do not fit their template are refused with their line. */
static void test_symmetry_instances(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = mc_sched_new(fx->task, fx->topo, "test");
    for (int g = 0; g < 2; g++)
        for (int k = 0; k < 16; k++)
            fx_edge(s, fx->topo, mc_sched_add_tree(s, fx->piece_of[2 + g], 128 * k, 128, g, 0, 1),
                    3, (int[]){g, FX_SW, 2 + g});
    mc_sched_plan_rates(s, fx->topo); /* 16 trees share each link */
    assert_int_equal(mc_sched_validate(s, fx->topo, NULL), 0);
    char *xml = mc_sched_to_xml(s, fx->topo);
    int ntrees = 0;
    for (const char *at = xml; (at = strstr(at, "<tree ")); at++)
        ntrees++;
    assert_int_equal(ntrees, 16);
    char *inst = mc_xasprintf("<instance template=\"0\" nodes=\"h0/GPU1 h0/GPU3 sw0\" pieces=\""
                              "%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d\"/>",
                              fx->piece_of[3], fx->piece_of[3], fx->piece_of[3], fx->piece_of[3],
                              fx->piece_of[3], fx->piece_of[3], fx->piece_of[3], fx->piece_of[3],
                              fx->piece_of[3], fx->piece_of[3], fx->piece_of[3], fx->piece_of[3],
                              fx->piece_of[3], fx->piece_of[3], fx->piece_of[3], fx->piece_of[3]);
    assert_non_null(strstr(xml, inst));
    mc_err_t err = {0};
    mc_sched_t *back = parse(xml, fx->topo, 0, MC_OK, &err);
    assert_int_equal(back->ntrees, 32);
    for (int t = 0; t < 32; t++) {
        assert_int_equal(back->trees[t].root, s->trees[t].root);
        assert_int_equal(back->trees[t].piece, s->trees[t].piece);
        assert_true(back->trees[t].rate == s->trees[t].rate);
        assert_int_equal((int)back->trees[t].offset, (int)s->trees[t].offset);
        assert_int_equal(back->trees[t].edges[0].child, s->trees[t].edges[0].child);
        assert_memory_equal(back->trees[t].edges[0].links, s->trees[t].edges[0].links,
                            2 * sizeof(int));
    }
    assert_int_equal(mc_sched_validate(back, fx->topo, NULL), 0);
    char *again = mc_sched_to_xml(back, fx->topo);
    assert_string_equal(again, xml);
    struct {
        const char *from, *to, *msg;
    } bad[] = {
        {"nodes=\"h0/GPU1 h0/GPU3 sw0\"", "nodes=\"h0/GPU1 h0/GPU3\"",
         "the instance names 2 nodes, its template passes 3"},
        {"nodes=\"h0/GPU1 h0/GPU3 sw0\"", "nodes=\"h0/GPU1 h0/GPU9 sw0\"",
         "node h0/GPU9 is not on this topology"},
        {"nodes=\"h0/GPU1 h0/GPU3 sw0\"", "nodes=\"sw0 h0/GPU3 h0/GPU1\"",
         "node sw0 stands for a GPU but is not one"},
        {"<instance template=\"0\"", "<instance template=\"1\"",
         "template 1 has 0 trees, the instance lists 16 pieces"},
        {"pieces=\"", "pieces=\"7 ", "expected pieces between 0 and 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *b = replace(xml, bad[i].from, bad[i].to);
        mc_sched_t *out = parse(b, fx->topo, 0, MC_ERR_INVALID, &err);
        assert_null(out);
        if (!strstr(err.msg, bad[i].msg) || !strstr(err.msg, "s.xml:"))
            fail_msg("case %zu: %s", i, err.msg);
        free(b);
    }
    free(again);
    free(inst);
    free(xml);
    mc_sched_free(back);
    mc_sched_free(s);
}

/* Two templates whose instances come in the other order: 16 trees GPU0 -> sw0 -> GPU2 (A), 16
 * over the NVLink GPU0 -> GPU1 (B), B again from GPU1 to GPU0, then A again on GPU1 and GPU3. The
 * file lists A's trees first, so A is template 0 (numbered by their first instance, A was 1 and
 * the file's first tree, template="1", was refused on reading: "expected template between 0 and
 * 0", as a synthesized MI250 all-to-all was). */
static void test_symmetry_template_order(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = mc_sched_new(fx->task, fx->topo, "test");
    const int path[4][3] = {{0, FX_SW, 2}, {0, 1, -1}, {1, 0, -1}, {1, FX_SW, 3}};
    for (int g = 0; g < 4; g++)
        for (int k = 0; k < 16; k++)
            fx_edge(s, fx->topo,
                    mc_sched_add_tree(s, fx->piece_of[2 + g / 3], 128 * k, 128, path[g][0], 0, 1),
                    path[g][2] < 0 ? 2 : 3, path[g]);
    mc_sched_plan_rates(s, fx->topo);
    char *xml = mc_sched_to_xml(s, fx->topo);
    mc_err_t err = {0};
    mc_sched_t *back = parse(xml, fx->topo, 0, MC_OK, &err);
    assert_int_equal(back->ntrees, 64);
    const char *first = strstr(xml, " template=\""), *inst = strstr(xml, "<instance template=\"1\"");
    assert_non_null(first);
    assert_int_equal(strncmp(first, " template=\"0\" ", 14), 0);
    assert_non_null(inst);
    assert_non_null(strstr(xml, "<instance template=\"0\""));
    assert_true(strstr(xml, "<instance template=\"0\"") > inst); /* B's instance first */
    char *again = mc_sched_to_xml(back, fx->topo);
    assert_string_equal(again, xml);
    free(again);
    free(xml);
    mc_sched_free(back);
    mc_sched_free(s);
}

/* No size cap: a valid schedule made 70 MiB long by comments (more than the 64 MiB that topology
 * files may have) reads back, streamed. */
static void test_any_size(void **state)
{
    fixture_t *fx = *state;
    mc_sched_t *s = fx_valid(fx, 1);
    char *xml = mc_sched_to_xml(s, fx->topo);
    const char *at = strstr(xml, "  <pieces>");
    assert_non_null(at);
    size_t head = (size_t)(at - xml), mib = 1 << 20, n = 70;
    size_t len = strlen(xml) + n * (mib + 8);
    char *big = malloc(len + 1), *w = big;
    assert_non_null(big);
    memcpy(w, xml, head);
    w += head;
    for (size_t i = 0; i < n; i++) {
        memcpy(w, "<!--", 4);
        memset(w + 4, 'x', mib);
        memcpy(w + 4 + mib, "-->\n", 4);
        w += mib + 8;
    }
    strcpy(w, at);
    mc_err_t err = {0};
    mc_sched_t *back = NULL;
    assert_int_equal(mc_sched_parse_memory(big, strlen(big), "s.xml", fx->topo, 0, &back, &err),
                     MC_OK);
    assert_true(strlen(big) > ((size_t)64 << 20));
    assert_int_equal(back->ntrees, 2);
    assert_int_equal(mc_sched_validate(back, fx->topo, NULL), 0);
    mc_sched_free(back);
    free(big);
    free(xml);
    mc_sched_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_save_and_load),
        cmocka_unit_test(test_schema_file_matches),
        cmocka_unit_test(test_other_topology),
        cmocka_unit_test(test_route_through_missing_link),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_symmetry_instances),
        cmocka_unit_test(test_symmetry_template_order),
        cmocka_unit_test(test_any_size),
    };
    return cmocka_run_group_tests_name("sched_xml", tests, fx_setup, fx_teardown);
}
