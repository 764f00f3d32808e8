/* Helpers the synthesis tests share: a task of two meshes and one move, split into pieces. */
#ifndef TEST_TASK_HELPERS_H
#define TEST_TASK_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "layout/layout.h"

static inline mc_task_t *task_of(const char *m1, const char *m2, const char *move)
{
    mc_task_t *t = mc_task_new();
    mc_err_t err = {0};
    assert_int_equal(mc_task_add_mesh(t, m1, &err), MC_OK);
    assert_int_equal(mc_task_add_mesh(t, m2, &err), MC_OK);
    assert_int_equal(mc_task_add_move(t, move, &err), MC_OK);
    assert_int_equal(mc_task_split(t, &err), MC_OK);
    return t;
}

#endif
