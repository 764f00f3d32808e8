/* Tests for mc_synth_opts_set: the option values 'meshcast synth' and 'meshcast bench' accept. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "synth/synth.h"

static void test_sizes(void **state)
{
    mc_synth_opts_t o = MC_SYNTH_OPTS_DEFAULT;
    mc_err_t err = {0};
    assert_int_equal(mc_synth_opts_set(&o, "chunk", "512K", &err), MC_OK);
    assert_int_equal(o.chunk_bytes, 524288);
    assert_int_equal(mc_synth_opts_set(&o, "chunk", "2MiB", &err), MC_OK);
    assert_int_equal(o.chunk_bytes, 2097152);
    assert_int_equal(mc_synth_opts_set(&o, "memory-limit", "3G", &err), MC_OK);
    assert_int_equal(o.memory_limit, 3221225472ull);
    assert_int_equal(mc_synth_opts_set(&o, "memory-limit", "1000", &err), MC_OK);
    assert_int_equal(o.memory_limit, 1000);
    assert_int_equal(mc_synth_opts_set(&o, "rlimit", "123456", &err), MC_OK);
    assert_int_equal(o.rlimit, 123456);
    assert_int_equal(mc_synth_opts_set(&o, "budget", "2.5", &err), MC_OK);
    assert_true(o.budget_s == 2.5);
}

/* Without a budget the optimizer has 10 s, unless an rlimit bounds it: then only the rlimit does,
 * so that results under an rlimit do not depend on the machine's speed or load. */
static void test_budget_default(void **state)
{
    mc_synth_opts_t o = MC_SYNTH_OPTS_DEFAULT;
    mc_err_t err = {0};
    assert_true(mc_synth_budget_s(&o) == 10.0);
    assert_int_equal(mc_synth_opts_set(&o, "rlimit", "2000000", &err), MC_OK);
    assert_true(mc_synth_budget_s(&o) >= 1e9);
    assert_int_equal(mc_synth_opts_set(&o, "budget", "3", &err), MC_OK);
    assert_true(mc_synth_budget_s(&o) == 3.0);
}

static void test_bad_values(void **state)
{
    mc_synth_opts_t o = MC_SYNTH_OPTS_DEFAULT;
    mc_err_t err = {0};
    assert_int_equal(mc_synth_opts_set(&o, "chunk", "0", &err), MC_ERR_USAGE);
    assert_non_null(strstr(err.msg, "--chunk"));
    assert_int_equal(mc_synth_opts_set(&o, "chunk", "K", &err), MC_ERR_USAGE);
    assert_int_equal(mc_synth_opts_set(&o, "memory-limit", "12X", &err), MC_ERR_USAGE);
    /* 2^44 T overflows 64 bits. */
    assert_int_equal(mc_synth_opts_set(&o, "memory-limit", "17592186044416T", &err),
                     MC_ERR_USAGE);
    assert_int_equal(mc_synth_opts_set(&o, "budget", "-1", &err), MC_ERR_USAGE);
    assert_int_equal(mc_synth_opts_set(&o, "rlimit", "1.5", &err), MC_ERR_USAGE);
    assert_int_equal(mc_synth_opts_set(&o, "colour", "red", &err), MC_ERR_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_budget_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
