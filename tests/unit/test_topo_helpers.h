/* Helpers the topology tests share: loading with a clear failure message, and the figures the
 * tests compare against what was derived by hand from the files (GB/s = 1e9 bytes/s). */
#ifndef TEST_TOPO_HELPERS_H
#define TEST_TOPO_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "topo/topo.h"

#define SHARED "../shared/topo-xml/"
#define DATA "tests/data/topo/"

static inline mc_topo_t *load_ok(const char *path)
{
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    if (mc_topo_load(path, &t, &err) != MC_OK)
        fail_msg("loading %s: %s", path, err.msg);
    return t;
}

static inline mc_topo_t *load_text_ok(const char *xml)
{
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    if (mc_topo_load_memory(xml, strlen(xml), "inline.xml", &t, &err) != MC_OK)
        fail_msg("loading inline XML: %s", err.msg);
    return t;
}

/* Sum of a GPU's outgoing links of one kind, GB/s. */
static inline double kind_gbps(const mc_topo_t *t, int gpu, mc_link_kind_t kind)
{
    double bw = 0;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == t->gpu_node[gpu] && t->links[i].kind == kind)
            bw += t->links[i].bw;
    return bw / 1e9;
}

/* Sum of a GPU's outgoing NVLink bandwidth, GB/s. */
static inline double nvlink_gbps(const mc_topo_t *t, int gpu)
{
    return kind_gbps(t, gpu, MC_LINK_NVL);
}

static inline int count_nodes(const mc_topo_t *t, mc_node_kind_t kind)
{
    int n = 0;
    for (int i = 0; i < t->nnodes; i++)
        n += t->nodes[i].kind == kind;
    return n;
}

/* Bandwidth of the link of a kind between two named nodes, GB/s; -1 when there is none. */
static inline double kind_link_gbps(const mc_topo_t *t, const char *a, const char *b,
                                    mc_link_kind_t kind)
{
    int src = mc_topo_find_node(t, a), dst = mc_topo_find_node(t, b);
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == src && t->links[i].dst == dst && t->links[i].kind == kind)
            return t->links[i].bw / 1e9;
    return -1;
}

/* The same for the first link of any kind. */
static inline double link_gbps(const mc_topo_t *t, const char *a, const char *b)
{
    int l = mc_topo_find_link(t, mc_topo_find_node(t, a), mc_topo_find_node(t, b));
    return l < 0 ? -1 : t->links[l].bw / 1e9;
}

static inline int has_warning(const mc_topo_t *t, const char *text)
{
    for (int i = 0; i < t->nwarnings; i++)
        if (strstr(t->warnings[i], text))
            return 1;
    return 0;
}

/* The NET ports' speeds, GB/s, must all equal gbps. */
static inline void assert_nets(const mc_topo_t *t, int count, double gbps)
{
    assert_int_equal(count_nodes(t, MC_NODE_NET), count);
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].kind == MC_NODE_NET)
            assert_float_equal(t->nodes[i].bw / 1e9, gbps, 1e-9);
}

static inline void assert_all_nvlink(const mc_topo_t *t, int ngpus, int sm, double gbps)
{
    assert_int_equal(t->ngpus, ngpus);
    for (int g = 0; g < ngpus; g++) {
        assert_int_equal(t->nodes[t->gpu_node[g]].sm, sm);
        assert_float_equal(nvlink_gbps(t, g), gbps, 1e-9);
    }
}

/* Loading must fail with a status and a message naming the file and line and saying what. */
static inline void assert_refused(const char *path, mc_status_t want, const char *where,
                                  const char *what)
{
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    mc_status_t st = mc_topo_load(path, &t, &err);
    assert_null(t);
    if (st != want || !strstr(err.msg, where) || !strstr(err.msg, what))
        fail_msg("%s: status %d, message '%s'; expected status %d with '%s' and '%s'", path, st,
                 err.msg, want, where, what);
}

#endif
