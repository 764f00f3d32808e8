/* Tests of the simulator's re-rating (sim/sim_links.c) on random flow sets: the component it
 * gathers class by class (per link the classes of its active flows, per class its active flows)
 * is the one it gathers flow by flow, each flow an entry of its own: the same links in the same
 * order, the same flows, in the same order once sim_links_order orders them, the classes met in
 * the order of their first flows, and the same rates to the bit, connection limits and all; and
 * so are the rates when the solver takes one link of each set of twins (sim/sim_twins.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"

#define NGPU 24
#define MAXF 160
#define MAXC 24
#define MAXP 6
/* links 0..NTWIN-1 of a path bring their twin NGPU + NGPU - NTWIN + l along, which no path
 * crosses otherwise: the two are crossed by the same classes, each as many times */
#define NTWIN 8
#define TWIN_OF(l) (2 * NGPU - NTWIN + (l))

/* Route classes (a path of links and a connection limit) and flows of those classes, some active,
 * each active one with its place in the order they became active (seq); every active flow is on
 * every link of its class's path (once per time the path crosses it), a link's flows in that
 * order, and, for the gathering by classes, with inactive flows among them; per class its active
 * flows in that order; per link the classes of its flows, once per crossing, in a random order. */
typedef struct rnd_set {
    uint64_t seed;
    int nlinks, nclasses, nflows;
    int path[MAXC][2 * MAXP], plen[MAXC];
    int route_off[MAXC + 1], routes[MAXC * 2 * MAXP]; /* the paths one after another */
    int ids[MAXC];
    double conn[MAXC];
    int cls[MAXF], active[MAXF];
    unsigned seq[MAXF];
    int *on[2 * NGPU], non[2 * NGPU];
    int *all[2 * NGPU], nall[2 * NGPU]; /* a link's flows with inactive ones among them */
    int lcls[2 * NGPU][MAXC * MAXP], nlcls[2 * NGPU];
    int cflows[MAXC][MAXF], ncflows[MAXC];
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

static const int *on_link_all(const void *ctx, int l, int *n)
{
    const rnd_set_t *r = ctx;
    *n = r->nall[l];
    return r->all[l];
}

static const int *classes_on(const void *ctx, int l, int *n)
{
    const rnd_set_t *r = ctx;
    *n = r->nlcls[l];
    return r->lcls[l];
}

static const int *class_flows(const void *ctx, int c, int *n)
{
    const rnd_set_t *r = ctx;
    *n = r->ncflows[c];
    return r->cflows[c];
}

static sim_twins_t twins;

static const int *twin_route(const void *ctx, int c, int *n)
{
    (void)ctx;
    *n = twins.route_n[c];
    return twins.routes + twins.route_at[c];
}

static void draw(rnd_set_t *r)
{
    r->nclasses = 1 + rnd(r, MAXC);
    r->nflows = 1 + rnd(r, MAXF);
    r->route_off[0] = 0;
    for (int c = 0; c < r->nclasses; c++) {
        int n = 1 + rnd(r, MAXP);
        r->plen[c] = 0;
        for (int j = 0; j < n; j++) { /* a path may cross a link twice */
            int l = rnd(r, 8) == 0 && j > 0 ? r->path[c][0] : rnd(r, TWIN_OF(0));
            r->path[c][r->plen[c]++] = l;
            if (l < NTWIN) /* its twin, here or further on */
                r->path[c][r->plen[c]++] = TWIN_OF(l);
        }
        for (int j = 0; j < r->plen[c]; j++)
            r->routes[r->route_off[c] + j] = r->path[c][j];
        r->route_off[c + 1] = r->route_off[c] + r->plen[c];
        r->ids[c] = c;
        /* limits in thirds, so that the order of the capacities held back matters */
        r->conn[c] = rnd(r, 3) == 0 ? 20e9 * (1 + rnd(r, 4)) / 3 : 0;
        r->ncflows[c] = 0;
    }
    for (int l = 0; l < r->nlinks; l++)
        r->non[l] = r->nall[l] = r->nlcls[l] = 0;
    /* the flows activated in a random order: a random permutation of them */
    int order[MAXF];
    for (int f = 0; f < r->nflows; f++) {
        int at = rnd(r, f + 1);
        order[f] = order[at];
        order[at] = f;
    }
    for (int f = 0; f < r->nflows; f++)
        r->cls[f] = rnd(r, r->nclasses);
    for (int i = 0; i < r->nflows; i++) {
        int f = order[i];
        const int c = r->cls[f];
        r->active[f] = rnd(r, 4) != 0;
        for (int j = 0; j < r->plen[c]; j++) { /* an inactive flow that was on its links */
            int l = r->path[c][j];
            r->all[l][r->nall[l]++] = f;
            if (r->active[f])
                r->on[l][r->non[l]++] = f;
        }
        if (!r->active[f])
            continue;
        r->seq[f] = (unsigned)i;
        if (r->ncflows[c]++ > 0)
            continue;
        for (int j = 0; j < r->plen[c]; j++) { /* at a random place of the link's classes */
            int l = r->path[c][j], at = rnd(r, r->nlcls[l] + 1);
            memmove(r->lcls[l] + at + 1, r->lcls[l] + at, sizeof(int) * (size_t)(r->nlcls[l] - at));
            r->lcls[l][at] = c;
            r->nlcls[l]++;
        }
    }
    for (int c = 0; c < r->nclasses; c++) /* each class's flows were added in seq order */
        for (int k = 0, n = 0; k < r->nflows; k++)
            if (r->active[order[k]] && r->cls[order[k]] == c)
                r->cflows[c][n++] = order[k];
}

/* One re-rating of the component around links touched[0..n) on lk, as the simulator runs it. */
static void rerate(sim_links_t *lk, const sim_flows_t *fl, const int *touched, int n)
{
    sim_links_begin(lk);
    for (int i = 0; i < n; i++)
        sim_links_touch(lk, touched[i]);
    sim_links_rerate(lk, fl);
}

static void test_classes_as_flows(void **state)
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
        r->all[l] = malloc(sizeof(int) * MAXF * MAXP);
    }
    sim_links_t flows, classes, twinned;
    sim_links_init(&flows, t);
    sim_links_init(&classes, t);
    sim_links_init(&twinned, t);
    sim_flow_at_t *at = malloc(sizeof *at * MAXF);
    int held_some = 0, interleaved_some = 0, twins_left = 0;
    for (int round = 0; round < 6000; round++) {
        draw(r);
        int touched[3], n = 1 + rnd(r, 3);
        for (int i = 0; i < n; i++)
            touched[i] = rnd(r, r->nlinks);
        sim_flows_t ff = {.ctx = r, .nflows = r->nflows, .on_link = on_link, .path = path};
        sim_flows_t fc = {r, r->nflows, on_link_all, path, r->nclasses, classes_on, class_flows,
                          r->seq, NULL, NULL};
        sim_flows_t ft = fc;
        ft.solver_route = twin_route;
        ft.twin_first = twins.first;
        sim_twins_build(&twins, r->nlinks, twinned.cap, r->ids, r->nclasses, r->route_off,
                        r->routes, r->nclasses);
        rerate(&flows, &ff, touched, n);
        rerate(&classes, &fc, touched, n);
        rerate(&twinned, &ft, touched, n);
        /* the same component, a link of each set of twins left out of the solve */
        assert_int_equal(twinned.ncomp_links, flows.ncomp_links);
        assert_memory_equal(twinned.comp_links, flows.comp_links,
                            sizeof(int) * (size_t)flows.ncomp_links);
        assert_int_equal(twinned.ncls, classes.ncls);
        twins_left += twinned.off[twinned.ncls] < classes.off[classes.ncls];
        assert_int_equal(classes.ncomp_links, flows.ncomp_links);
        assert_memory_equal(classes.comp_links, flows.comp_links,
                            sizeof(int) * (size_t)flows.ncomp_links);
        assert_int_equal(classes.ncomp_flows, flows.ncomp_flows);
        int nf = 0;
        for (int e = 0; e < classes.ncls; e++) {
            int c = classes.ent_cls[e];
            assert_int_equal(classes.ccount[e], r->ncflows[c]);
            for (int k = 0; k < r->ncflows[c]; k++)
                at[nf++] = (sim_flow_at_t){r->cflows[c][k], e};
        }
        assert_int_equal(nf, flows.ncomp_flows);
        sim_links_order(&classes, &fc, at, nf);
        int seen = -1;
        for (int k = 0; k < nf; k++) {
            assert_int_equal(at[k].flow, flows.comp_flows[k]);
            /* the classes met in the order of their first flows */
            assert_true(at[k].entry <= seen + 1);
            interleaved_some |= at[k].entry < seen;
            seen = at[k].entry > seen ? at[k].entry : seen;
            double a = classes.crate[at[k].entry], b = flows.crate[k];
            double c = twinned.crate[at[k].entry];
            if (memcmp(&a, &b, sizeof a) != 0 || memcmp(&c, &b, sizeof c) != 0)
                fail_msg("round %d: flow %d at %.17g, %.17g without twins, %.17g flow by flow",
                         round, at[k].flow, a, c, b);
            held_some |= flows.fcap[k] > 0 && b == flows.fcap[k];
        }
    }
    /* the cases the order is for: classes met on one link with their flows interleaved, and
     * flows held at their connection's limit */
    assert_true(interleaved_some);
    assert_true(held_some);
    assert_true(twins_left > 1000);
    free(at);
    sim_twins_free(&twins);
    sim_links_free(&flows);
    sim_links_free(&classes);
    sim_links_free(&twinned);
    for (int l = 0; l < r->nlinks; l++) {
        free(r->on[l]);
        free(r->all[l]);
    }
    free(r);
    mc_topo_free(t);
}

/* Twins by hand: links 0 and 1 are crossed by classes 0 and 1 (the solver takes 1, the
 * narrower); 2 and 3 by one class each, not the same; 4 and 5 twice each by class 3, of equal
 * capacity (it takes 4, the first); 6 once and 7 twice by class 4, not twins. */
static void test_twins_by_hand(void **state)
{
    (void)state;
    const double cap[8] = {50e9, 25e9, 25e9, 25e9, 10e9, 10e9, 10e9, 10e9};
    const int off[6] = {0, 2, 5, 6, 10, 13};
    const int links[13] = {0, 1, 0, 1, 2, 3, 4, 5, 4, 5, 6, 7, 7};
    const int ids[5] = {4, 0, 1, 2, 3}; /* in any order */
    const int want_off[6] = {0, 1, 3, 4, 6, 9};
    const int want[9] = {1, 1, 2, 3, 4, 4, 6, 7, 7};
    sim_twins_t tw = {0};
    sim_twins_build(&tw, 8, cap, ids, 5, off, links, 5);
    for (int c = 0; c < 5; c++) {
        assert_int_equal(tw.route_n[c], want_off[c + 1] - want_off[c]);
        assert_memory_equal(tw.routes + tw.route_at[c], want + want_off[c],
                            sizeof(int) * (size_t)tw.route_n[c]);
    }
    sim_twins_free(&tw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_twins_by_hand),
        cmocka_unit_test(test_classes_as_flows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
