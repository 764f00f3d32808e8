/* Tests for the benchmark case files (bench/bench_case.c): directives, paths relative to the file,
 * task text that keeps the file's line numbers, every malformed-file error with its line, case
 * patterns, and the shipped paper suite's sixteen cases. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

static char dir[] = "/tmp/mc_bench_XXXXXX";

static int make_dir(void **state)
{
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    char *cmd = mc_xasprintf("rm -rf '%s'", dir);
    int rc = system(cmd);
    free(cmd);
    return rc;
}

/* Writes text to DIR/name.cases and loads it; returns the status, err filled. */
static mc_status_t load(const char *name, const char *text, mc_bench_suite_t **s, mc_err_t *err)
{
    char *path = mc_xasprintf("%s/%s.cases", dir, name);
    assert_int_equal(mc_write_file_atomic(path, text, strlen(text), err), MC_OK);
    mc_status_t st = mc_bench_suite_load(path, s, err);
    free(path);
    return st;
}

static void test_parse(void **state)
{
    static const char text[] = "# two cases\n"
                               "topology ../topo/a.xml\n"
                               "case one  first case # a comment\n"
                               "mesh A={x:2}@0..1\n"
                               "\n"
                               "move f32[8] A[x] -> A[_]\n"
                               "topology /abs/b.xml\n"
                               "default no\n"
                               "case two\n"
                               "  mesh A={x:2}@0..1\n"
                               "move f32[8] A[x] -> A[_]\n";
    mc_bench_suite_t *s = NULL;
    mc_err_t err = {0};
    assert_int_equal(load("mine", text, &s, &err), MC_OK);
    assert_string_equal(s->name, "mine");
    assert_int_equal(s->default_run, 0);
    assert_int_equal(s->ncases, 2);
    assert_string_equal(s->cases[0].name, "one");
    assert_string_equal(s->cases[0].desc, "first case");
    assert_int_equal(s->cases[0].line, 3);
    char *want = mc_xasprintf("%s/../topo/a.xml", dir);
    assert_string_equal(s->cases[0].topo_path, want);
    free(want);
    assert_string_equal(s->cases[1].topo_path, "/abs/b.xml");
    assert_string_equal(s->cases[1].desc, "");
    /* Lines 1-3 blank, the case's lines at 4 and 6: errors keep the file's numbering. */
    assert_string_equal(s->cases[0].task_text,
                        "\n\n\nmesh A={x:2}@0..1\n\nmove f32[8] A[x] -> A[_]\n");
    assert_string_equal(s->cases[1].task_text, "\n\n\n\n\n\n\n\n\nmesh A={x:2}@0..1\n"
                                                "move f32[8] A[x] -> A[_]\n");
    mc_bench_suite_free(s);
}

/* Each malformed file gives MC_ERR_PARSE naming file:line and what was expected. */
static void test_errors(void **state)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"case x\nmesh A={x:1}@[0]\n", ".cases:1: expected a 'topology FILE' line"},
        {"topology t.xml\nmesh A={x:1}@[0]\n", ".cases:2: expected a directive"},
        {"topology t.xml\ncase\n", ".cases:2: expected 'case NAME"},
        {"topology t.xml\ncase x\nmesh A={x:1}@[0]\ncase x\nmesh A={x:1}@[0]\n",
         ".cases:4: case 'x' already defined on line 2"},
        {"topology t.xml\ndefault maybe\n", ".cases:2: expected 'default yes' or 'default no'"},
        {"topology t.xml\ncase x\ncase y\nmesh A={x:1}@[0]\n", ".cases:2: case 'x' has no"},
        {"topology t.xml\n", "expected at least one 'case NAME' line"},
        {"suite\n", ".cases:1: expected a value after 'suite'"},
        {"topology t.xml\ncase x\nmesh A={x:1}@[0]\ndefault no\nmove f32[1] A[_] -> A[_]\n",
         ".cases:5: expected a directive"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        mc_bench_suite_t *s = NULL;
        mc_err_t err = {0};
        assert_int_equal(load("bad", bad[i].text, &s, &err), MC_ERR_PARSE);
        assert_null(s);
        if (!strstr(err.msg, bad[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].want);
    }
}

static void test_match(void **state)
{
    assert_true(mc_bench_match(NULL, "case1"));
    assert_true(mc_bench_match("case1", "case1"));
    assert_false(mc_bench_match("case1", "case10"));
    assert_true(mc_bench_match("single-*", "single-2x2"));
    assert_true(mc_bench_match("case2,single-*", "case2"));
    assert_false(mc_bench_match("case2,single-*", "case3"));
}

/* The shipped suite: the nine many-to-many cases (case 8 named as case 7's duplicate) and the
 * seven single-sender cases, on the paper's cluster, all run by default; the folder listing
 * finds it. */
static void test_paper_suite(void **state)
{
    static const char *const names[] = {
        "case1", "case2", "case3", "case4", "case5", "case6", "case7", "case8-same-as-case7",
        "case9", "single-1x1", "single-1x2", "single-1x3", "single-1x4", "single-2x2",
        "single-3x2", "single-4x2"};
    mc_bench_suite_t *s = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_bench_suite_load("bench/paper.cases", &s, &err), MC_OK);
    assert_string_equal(s->name, "paper");
    assert_int_equal(s->default_run, 1);
    assert_int_equal(s->ncases, 16);
    for (int i = 0; i < 16; i++) {
        assert_string_equal(s->cases[i].name, names[i]);
        assert_string_equal(s->cases[i].topo_path, "bench/../topologies/aws-p3.8xlarge-x5.xml");
    }
    /* case 8 states exactly case 7's task. */
    assert_string_equal(strstr(s->cases[6].task_text, "mesh"),
                        strstr(s->cases[7].task_text, "mesh"));
    mc_bench_suite_free(s);
    char **paths = NULL;
    int n = 0, found = 0;
    assert_int_equal(mc_bench_list("bench", &paths, &n, &err), MC_OK);
    for (int i = 0; i < n; i++) {
        found |= !strcmp(paths[i], "bench/paper.cases");
        free(paths[i]);
    }
    free(paths);
    assert_true(found);
    assert_int_equal(mc_bench_list("no/such/folder", &paths, &n, &err), MC_ERR_IO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_paper_suite),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
