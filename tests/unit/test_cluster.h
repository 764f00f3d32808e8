/* Helpers shared by the cluster loader tests (test_cluster*.c): loading a file that must load,
 * one that must fail with a given message, and reading figures off the graph. Static inline so
 * that each test program takes only what it uses. */
#ifndef MC_TEST_CLUSTER_H
#define MC_TEST_CLUSTER_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "topo/topo.h"

#define GB 1e9
#define DATA "tests/data/cluster/"

static inline mc_topo_t *load(const char *path)
{
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    if (mc_topo_load(path, &t, &err) != MC_OK)
        fail_msg("%s: %s", path, err.msg);
    return t;
}

/* path must fail as invalid input with a message that starts with where ("file:line:") and
 * contains what and what2 (either may be NULL). */
static inline void expect_load_error(const char *path, const char *where, const char *what,
                                     const char *what2)
{
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    mc_status_t st = mc_topo_load(path, &t, &err);
    if (st == MC_OK)
        fail_msg("%s loaded", path);
    assert_null(t);
    assert_int_equal(mc_status_exit_code(st), MC_EXIT_INVALID);
    if (strncmp(err.msg, where, strlen(where)) || (what && !strstr(err.msg, what)) ||
        (what2 && !strstr(err.msg, what2)))
        fail_msg("%s: unexpected message: %s", path, err.msg);
}

/* The link between two named nodes (a -> b); fails the test when there is none. */
static inline const mc_link_t *named_link(const mc_topo_t *t, const char *a, const char *b)
{
    int l = mc_topo_find_link(t, mc_topo_find_node(t, a), mc_topo_find_node(t, b));
    if (l < 0)
        fail_msg("no link %s -> %s", a, b);
    return &t->links[l];
}

/* Sum of a GPU's outgoing NVLink bandwidth. */
static inline double gpu_nvlink_bw(const mc_topo_t *t, int gpu)
{
    double bw = 0;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == t->gpu_node[gpu] && t->links[i].kind == MC_LINK_NVL)
            bw += t->links[i].bw;
    return bw;
}

#endif
