/* Tests of the simulator's re-rating (sim/sim_links.c) on random flow sets: the component it
 * gathers when it knows each route class's active flows (and skips the links whose flows are all
 * of classes met) is the one it gathers reading every link's flows, the same flows, links and
 * solver entries in the same order, and the same rates to the bit. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "sim/sim_internal.h"

#define NGPU 24
#define MAXF 160
#define MAXC 24
#define MAXP 6

/* Route classes (a path of links and a connection limit) and flows of those classes, some active;
 * every active flow is on every link of its class's path (once per time the path crosses it), the
 * flows of a link in a random order; per class its active flows. */
typedef struct rnd_set {
    uint64_t seed;
    int nlinks, nclasses, nflows;
    int path[MAXC][MAXP], plen[MAXC];
    double conn[MAXC];
    int cls[MAXF], active[MAXF];
    int *on[2 * NGPU], non[2 * NGPU];
    int nactive[MAXC];
} rnd_set_t;

static int rnd(rnd_set_t *r, int n)
{
    r->seed = r->seed * 6364136223846793005ull + 1442695040888963407ull;
    return (int)(r->seed >> 33) % n;
}

static const int *on_link(const void *ctx, int l, int *n)
{
    const rnd_set_t *r = ctx;
    *n = r->non[l];
    return r->on[l];
}

static const int *path(const void *ctx, int f, int *nlinks, double *cap)
{
    const rnd_set_t *r = ctx;
    *nlinks = r->plen[r->cls[f]];
    *cap = r->conn[r->cls[f]];
    return r->path[r->cls[f]];
}

static void draw(rnd_set_t *r)
{
    r->nclasses = 1 + rnd(r, MAXC);
    r->nflows = 1 + rnd(r, MAXF);
    for (int c = 0; c < r->nclasses; c++) {
        r->plen[c] = 1 + rnd(r, MAXP);
        for (int j = 0; j < r->plen[c]; j++) /* a path may cross a link twice */
            r->path[c][j] = rnd(r, 8) == 0 && j > 0 ? r->path[c][0] : rnd(r, r->nlinks);
        r->conn[c] = rnd(r, 3) == 0 ? 20e9 * (1 + rnd(r, 4)) : 0;
    }
    for (int l = 0; l < r->nlinks; l++)
        r->non[l] = 0;
    memset(r->nactive, 0, sizeof r->nactive);
    for (int f = 0; f < r->nflows; f++) {
        r->cls[f] = rnd(r, r->nclasses);
        r->active[f] = rnd(r, 4) != 0;
        if (!r->active[f])
            continue;
        const int c = r->cls[f];
        for (int j = 0; j < r->plen[c]; j++) { /* at a random place of the link's flows */
            int l = r->path[c][j], at = rnd(r, r->non[l] + 1);
            memmove(r->on[l] + at + 1, r->on[l] + at, sizeof(int) * (size_t)(r->non[l] - at));
            r->on[l][at] = f;
            r->non[l]++;
        }
        r->nactive[c]++;
    }
}

/* One re-rating of the component around links touched[0..n) on lk, as the simulator runs it. */
static void rerate(sim_links_t *lk, const sim_flows_t *fl, const int *touched, int n)
{
    sim_links_begin(lk);
    for (int i = 0; i < n; i++)
        sim_links_touch(lk, touched[i]);
    sim_links_rerate(lk, fl);
}

static void test_component_skips_met_classes(void **state)
{
    (void)state;
    mc_topo_t *t = mc_topo_new("test");
    for (int i = 0; i < NGPU; i++) {
        mc_node_t n = {.kind = MC_NODE_GPU, .host = 0, .dev = i, .busid = -1, .rail = -1};
        snprintf(n.name, sizeof n.name, "h0/GPU%d", i);
        mc_topo_add_node(t, &n);
    }
    rnd_set_t *r = calloc(1, sizeof *r);
    r->seed = 4242;
    for (int i = 0; i < NGPU; i++) /* a ring: 2 NGPU links of 1 to 4 times 25 GB/s */
        mc_topo_add_link_pair(t, i, (i + 1) % NGPU, MC_LINK_NVL, 25e9 * (1 + rnd(r, 4)), 1e-6,
                              1);
    mc_err_t err = {0};
    assert_int_equal(mc_topo_finalize(t, &err), MC_OK);
    r->nlinks = t->nlinks;
    assert_int_equal(r->nlinks, 2 * NGPU);
    for (int l = 0; l < r->nlinks; l++) {
        r->on[l] = malloc(sizeof(int) * MAXF * MAXP);
    }
    sim_links_t all, skip;
    sim_links_init(&all, t);
    sim_links_init(&skip, t);
    int skipped_some = 0;
    for (int round = 0; round < 3000; round++) {
        draw(r);
        int touched[3], n = 1 + rnd(r, 3);
        for (int i = 0; i < n; i++)
            touched[i] = rnd(r, r->nlinks);
        sim_flows_t fa = {r, r->nflows, on_link, path, r->cls, r->nclasses, NULL};
        sim_flows_t fs = fa;
        fs.class_active = r->nactive;
        rerate(&all, &fa, touched, n);
        rerate(&skip, &fs, touched, n);
        assert_int_equal(skip.ncomp_flows, all.ncomp_flows);
        assert_int_equal(skip.ncomp_links, all.ncomp_links);
        assert_int_equal(skip.ncls, all.ncls);
        assert_memory_equal(skip.comp_flows, all.comp_flows, sizeof(int) * (size_t)all.ncomp_flows);
        assert_memory_equal(skip.comp_links, all.comp_links, sizeof(int) * (size_t)all.ncomp_links);
        assert_memory_equal(skip.comp_cls, all.comp_cls, sizeof(int) * (size_t)all.ncomp_flows);
        assert_memory_equal(skip.ccount, all.ccount, sizeof(int) * (size_t)all.ncls);
        if (memcmp(skip.rates, all.rates, sizeof(double) * (size_t)all.ncomp_flows) != 0)
            fail_msg("round %d: rates differ", round);
        /* the case the skip is for: a link of the component with flows, all of classes on a
         * link found before it */
        for (int i = 1; i < all.ncomp_links && !skipped_some; i++) {
            int l = all.comp_links[i], met = r->non[l] > 0;
            for (int k = 0; k < r->non[l] && met; k++) {
                int seen = 0;
                for (int j = 0; j < i && !seen; j++)
                    for (int x = 0; x < r->non[all.comp_links[j]] && !seen; x++)
                        seen = r->cls[r->on[all.comp_links[j]][x]] == r->cls[r->on[l][k]];
                met = seen;
            }
            skipped_some = met;
        }
    }
    assert_true(skipped_some);
    sim_links_free(&all);
    sim_links_free(&skip);
    for (int l = 0; l < r->nlinks; l++) {
        free(r->on[l]);
    }
    free(r);
    mc_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_component_skips_met_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
