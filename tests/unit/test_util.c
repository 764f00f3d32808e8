/* Tests for util/: status text, strict number parsing, atomic writes (whole and in parts), text
 * files, line-oriented reading, growable buffers, sorting and searching ints, computations on a
 * second thread. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

static void test_status(void **state)
{
    assert_string_equal(mc_status_str(MC_OK), "ok");
    assert_int_equal(mc_status_exit_code(MC_OK), 0);
    assert_int_equal(mc_status_exit_code(MC_ERR_USAGE), 2);
    assert_int_equal(mc_status_exit_code(MC_ERR_PARSE), 1);
    mc_err_t err = {0};
    assert_int_equal(mc_err_set(&err, MC_ERR_PARSE, "%s:%d: expected %s", "f.xml", 3, "x"),
                     MC_ERR_PARSE);
    assert_string_equal(err.msg, "f.xml:3: expected x");
}

static void test_parse_numbers(void **state)
{
    int64_t i;
    uint64_t u;
    double d;
    assert_int_equal(mc_parse_i64("0x10", &i), 0);
    assert_int_equal(i, 16);
    assert_int_equal(mc_parse_i64("12a", &i), -1);
    assert_int_equal(mc_parse_i64("", &i), -1);
    assert_int_equal(mc_parse_u64("-1", &u), -1);
    assert_int_equal(mc_parse_u64("99999999999999999999999", &u), -1);
    assert_int_equal(mc_parse_double("2.5e9", &d), 0);
    assert_float_equal(d, 2.5e9, 1);
    assert_int_equal(mc_parse_double("inf", &d), -1);
}

static void test_atomic_write(void **state)
{
    char dir[] = "/tmp/mc_util_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = mc_xasprintf("%s/out.txt", dir);
    mc_err_t err = {0};
    assert_int_equal(mc_write_file_atomic(path, "hello", 5, &err), MC_OK);
    char *data;
    size_t len;
    assert_int_equal(mc_read_file(path, &data, &len, &err), MC_OK);
    assert_int_equal(len, 5);
    assert_string_equal(data, "hello");
    free(data);
    char *bad = mc_xasprintf("%s/missing/out.txt", dir);
    assert_int_equal(mc_write_file_atomic(bad, "x", 1, &err), MC_ERR_IO);
    assert_non_null(strstr(err.msg, "missing/out.txt"));
    /* in parts: nothing at path until the commit; an abort leaves the old file and no other */
    mc_atomic_file_t f;
    assert_int_equal(mc_atomic_open(path, &f, &err), MC_OK);
    assert_int_equal(mc_atomic_write(&f, "par", 3, &err), MC_OK);
    assert_int_equal(mc_atomic_write(&f, "ts", 2, &err), MC_OK);
    assert_int_equal(mc_read_file(path, &data, &len, &err), MC_OK);
    assert_string_equal(data, "hello");
    free(data);
    assert_int_equal(mc_atomic_commit(&f, &err), MC_OK);
    assert_int_equal(mc_read_file(path, &data, &len, &err), MC_OK);
    assert_string_equal(data, "parts");
    free(data);
    assert_int_equal(mc_atomic_open(path, &f, &err), MC_OK);
    assert_int_equal(mc_atomic_write(&f, "x", 1, &err), MC_OK);
    mc_atomic_abort(&f);
    mc_atomic_abort(&f);
    assert_int_equal(mc_read_file(path, &data, &len, &err), MC_OK);
    assert_string_equal(data, "parts");
    free(data);
    unlink(path);
    assert_int_equal(rmdir(dir), 0); /* no temporary file left */
    free(path);
    free(bad);
}

/* A text file reads back, without a leading byte-order mark; one with a NUL byte is refused
 * as not text. */
static void test_text_file(void **state)
{
    char dir[] = "/tmp/mc_util_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = mc_xasprintf("%s/f.txt", dir);
    mc_err_t err = {0};
    char *data = NULL;
    assert_int_equal(mc_write_file_atomic(path, "a\nb\n", 4, &err), MC_OK);
    assert_int_equal(mc_read_text_file(path, &data, &err), MC_OK);
    assert_string_equal(data, "a\nb\n");
    free(data);
    /* A leading byte-order mark is dropped. */
    assert_int_equal(mc_write_file_atomic(path, "\xEF\xBB\xBFmesh A\n", 10, &err), MC_OK);
    assert_int_equal(mc_read_text_file(path, &data, &err), MC_OK);
    assert_string_equal(data, "mesh A\n");
    free(data);
    assert_int_equal(mc_write_file_atomic(path, "a\0b", 3, &err), MC_OK);
    assert_int_equal(mc_read_text_file(path, &data, &err), MC_ERR_PARSE);
    assert_null(data);
    assert_non_null(strstr(err.msg, "f.txt: expected a text file (found a NUL byte)"));
    unlink(path);
    rmdir(dir);
    free(path);
}

typedef struct lines_seen {
    int n, stop_at;
    char seen[4][16];
} lines_seen_t;

static mc_status_t see_line(void *ctx, char *line, int lineno)
{
    lines_seen_t *s = ctx;
    assert_int_equal(lineno, s->n + 1);
    snprintf(s->seen[s->n++], sizeof(s->seen[0]), "%s", line);
    return lineno == s->stop_at ? MC_ERR_PARSE : MC_OK;
}

/* Lines are numbered from 1 and cut at the newlines; the first failure stops the walk. Keywords
 * need a blank after them, and the blanks after it are skipped. */
static void test_lines_and_keywords(void **state)
{
    char text[] = "one\ntwo\n\nfour";
    lines_seen_t s = {0};
    assert_int_equal(mc_parse_lines(text, see_line, &s), MC_OK);
    assert_int_equal(s.n, 4);
    assert_string_equal(s.seen[1], "two");
    assert_string_equal(s.seen[2], "");
    assert_string_equal(s.seen[3], "four");
    char again[] = "one\ntwo\nthree";
    lines_seen_t t = {.stop_at = 2};
    assert_int_equal(mc_parse_lines(again, see_line, &t), MC_ERR_PARSE);
    assert_int_equal(t.n, 2);
    assert_string_equal(mc_line_keyword("stage \t A={x:1}", "stage"), "A={x:1}");
    assert_null(mc_line_keyword("stages A", "stage"));
    assert_null(mc_line_keyword("stage", "stage"));
}

static void test_buf_and_format(void **state)
{
    mc_buf_t b = {0};
    for (int i = 0; i < 1000; i++)
        mc_buf_printf(&b, "%d,", i);
    assert_int_equal(strncmp(b.data, "0,1,2,", 6), 0);
    assert_int_equal(b.len, strlen(b.data));
    assert_int_equal(b.len, 10 * 2 + 90 * 3 + 900 * 4);
    assert_string_equal(b.data + b.len - 8, "998,999,");
    mc_buf_free(&b);
    /* a text longer than the free room is formatted again once the buffer has grown; an empty
     * one leaves it as it was */
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    mc_buf_printf(&b, "<%s>", "a");
    mc_buf_printf(&b, "%s", "");
    mc_buf_printf(&b, "[%s]%d", big, 7);
    assert_int_equal(b.len, 3 + 1 + 999 + 2);
    assert_int_equal(strncmp(b.data, "<a>[xxx", 7), 0);
    assert_string_equal(b.data + b.len - 4, "xx]7");
    mc_buf_free(&b);
    char s[32];
    assert_string_equal(mc_fmt_bytes(1u << 30, s, sizeof s), "1.00 GiB");
    assert_string_equal(mc_fmt_bytes(12, s, sizeof s), "12 B");
    assert_string_equal(mc_fmt_seconds(0.0025, s, sizeof s), "2.50 ms");
    /* A 1e-308 GB/s link once made this a 31-digit number without its unit. */
    assert_string_equal(mc_fmt_seconds(5.12e21, s, sizeof s), "5.12e+21 s");
    assert_string_equal(mc_fmt_seconds(86400, s, sizeof s), "86400.000 s");
    assert_string_equal(mc_fmt_seconds(1e5, s, sizeof s), "1e+05 s");
}

/* mc_buf_num writes what printf's "%s%lld" writes, the extremes and the signs among them. */
static void test_buf_num(void **state)
{
    (void)state;
    const long long v[] = {0, 1, -1, 9, 10, -10, 99, 100, 123456789, -987654321, 1ll << 40,
                           LLONG_MAX, LLONG_MIN, LLONG_MIN + 1};
    mc_buf_t b = {0}, want = {0};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        mc_buf_num(&b, i % 2 ? ",x:" : "", v[i]);
        mc_buf_printf(&want, "%s%lld", i % 2 ? ",x:" : "", v[i]);
    }
    for (long long x = -100000; x < 100000; x += 7) {
        mc_buf_num(&b, ";", x);
        mc_buf_printf(&want, ";%lld", x);
    }
    const unsigned long long u[] = {0, 1, 9, 10, 1ull << 40, LLONG_MAX, 1ull << 63, ULLONG_MAX};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        mc_buf_unum(&b, "\" offset=\"", u[i]);
        mc_buf_printf(&want, "\" offset=\"%llu", u[i]);
    }
    mc_buf_str(&b, "</tree>\n");
    mc_buf_printf(&want, "</tree>\n");
    assert_int_equal(b.len, want.len);
    assert_string_equal(b.data, want.data);
    mc_buf_free(&b);
    mc_buf_free(&want);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* mc_sort_ints against qsort on arrays of every size up to 600 (insertion and radix), values
 * negative and positive, spread over one, two or four bytes, with repeats; mc_find_int finds
 * every value present and none absent. */
static void test_sort_and_find_ints(void **state)
{
    (void)state;
    unsigned seed = 12345;
    int a[600], b[600];
    const unsigned spread[] = {0xffu, 0xffffu, 0xffffffffu};
    for (int n = 0; n <= 600; n += n < 40 ? 1 : 37)
        for (int k = 0; k < 3; k++) {
            for (int i = 0; i < n; i++) {
                seed = seed * 1103515245u + 12345u;
                unsigned r = (seed >> 1) & spread[k];
                a[i] = b[i] = (int)(k == 2 ? r : r - spread[k] / 2);
            }
            mc_sort_ints(a, (size_t)n);
            qsort(b, (size_t)n, sizeof(int), cmp_int);
            assert_memory_equal(a, b, sizeof(int) * (size_t)n);
            for (int i = 0; i < n; i++) {
                int at = mc_find_int(a, n, a[i]);
                assert_true(at >= 0 && a[at] == a[i] && (at == 0 || a[at - 1] < a[i]));
                int j = i; /* the next value, past the repeats of a[i] */
                while (j < n && a[j] == a[i])
                    j++;
                if (a[i] != INT_MAX && (j == n || a[j] != a[i] + 1))
                    assert_int_equal(mc_find_int(a, n, a[i] + 1), -1);
            }
        }
    assert_int_equal(mc_find_int(a, 0, 7), -1);
}

/* A sum of n terms into its own slot, as mc_run_both runs it. */
typedef struct sum_task {
    long n;
    double sum;
} sum_task_t;

static void sum_terms(void *arg)
{
    sum_task_t *t = arg;
    double s = 0;
    for (long i = 1; i <= t->n; i++)
        s += 1.0 / (double)i;
    t->sum = s;
}

/* Over 20 rounds, two sums (a short and a long one) run at once by `pair`: once it returns,
 * each holds what it gives alone. */
static void sums_at_once(void (*pair)(sum_task_t *a, sum_task_t *b))
{
    for (int round = 0; round < 20; round++) {
        sum_task_t a = {1000 + round, 0}, b = {2000000 + round, 0}, want_a = a, want_b = b;
        sum_terms(&want_a);
        sum_terms(&want_b);
        pair(&a, &b);
        assert_memory_equal(&a.sum, &want_a.sum, sizeof a.sum);
        assert_memory_equal(&b.sum, &want_b.sum, sizeof b.sum);
    }
}

static void by_run_both(sum_task_t *a, sum_task_t *b)
{
    mc_run_both(sum_terms, a, sum_terms, b);
}

static void by_apart(sum_task_t *a, sum_task_t *b)
{
    mc_apart_t *th = mc_apart_start(sum_terms, b);
    sum_terms(a);
    mc_apart_join(th);
}

/* mc_run_both returns once both computations are done. */
static void test_run_both(void **state)
{
    (void)state;
    sums_at_once(by_run_both);
}

/* mc_apart_start's computation is done once mc_apart_join returns; joining none (NULL) does
 * nothing. */
static void test_apart(void **state)
{
    (void)state;
    sums_at_once(by_apart);
    mc_apart_join(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_parse_numbers),
        cmocka_unit_test(test_atomic_write),
        cmocka_unit_test(test_text_file),
        cmocka_unit_test(test_lines_and_keywords),
        cmocka_unit_test(test_buf_and_format),
        cmocka_unit_test(test_buf_num),
        cmocka_unit_test(test_sort_and_find_ints),
        cmocka_unit_test(test_run_both),
        cmocka_unit_test(test_apart),
    };
    return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
