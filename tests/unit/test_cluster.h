/* Helpers shared by the cluster loader tests (test_cluster*.c), on top of the topology tests'
 * helpers: a file that must fail with a given message, and a link looked up by node names. */
#ifndef MC_TEST_CLUSTER_H
#define MC_TEST_CLUSTER_H

#include "test_topo_helpers.h"

#undef DATA /* the topology tests' data folder; the cluster tests have their own */
#define DATA "tests/data/cluster/"
#define GB 1e9

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

#endif
