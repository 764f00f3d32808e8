/* Tests for the plan's estimate with every tree's pipeline fill at the pace of its busiest link
 * (mc_plan_fill_ps, synth_meshcast_fill.c), on hand-made plans: a tree of depth d whose busiest
 * link is loaded for B seconds takes B + (d - 1) B / n + n hop with n = sqrt((d - 1) B / hop),
 * i.e. B + 2 sqrt((d - 1) B hop); fewer chunks when its bytes allow fewer; B alone at depth 1;
 * and two trees on one link each pay the fill at the pace of the link's whole load. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

#include "synth/meshcast/mc_meshcast.h"

#define HOP_S 10e-6
#define MIN_CHUNK 131072u

/* A chain tree of the given depth, every edge paying HOP_S per chunk. */
static mc_cand_t chain(int depth, double *hop)
{
    mc_cand_t c = {0};
    for (int e = 0; e < depth; e++)
        hop[e] = HOP_S;
    c.nedges = depth;
    c.depth = depth;
    c.edge_hop = hop;
    return c;
}

/* A plan of one piece of `units` units over ncands candidates, all crossing link 0 at
 * unit_ps each. */
static void plan_on_one_link(mc_plan_t *pl, int ncands, int units, int64_t unit_ps,
                             int *links, int64_t *link_ps)
{
    static int units_of[1];
    units_of[0] = units;
    links[0] = 0;
    link_ps[0] = unit_ps;
    pl->npieces = 1;
    pl->units = units_of;
    pl->ncands = ncands;
    pl->cands = calloc((size_t)ncands, sizeof(mc_pcand_t));
    for (int c = 0; c < ncands; c++)
        pl->cands[c] = (mc_pcand_t){.piece = 0, .unit_ps = unit_ps, .nlinks = 1, .links = links,
                                    .link_ps = link_ps};
    pl->nlinks = 1;
}

static double fill_s(const mc_plan_t *pl, const mc_cand_t *const *cand, uint64_t unit_bytes,
                     int *units)
{
    mc_plan_sol_t s = {.nphases = 1, .units = units};
    uint64_t ub[1] = {unit_bytes};
    return (double)mc_plan_fill_ps(pl, cand, ub, MIN_CHUNK, &s) * 1e-12;
}

/* One tree of depth 3 loading its link for 1 ms: 1 ms + 2 sqrt(2 x 1 ms x 10 us); with bytes
 * for 4 chunks only, 1 ms + 2 x 1 ms / 4 + 4 x 10 us; at depth 1, 1 ms. */
static void test_one_tree_closed_form(void **state)
{
    (void)state;
    double hop[3];
    int links[1], units[1] = {32};
    int64_t link_ps[1];
    mc_plan_t pl;
    mc_cand_t c = chain(3, hop);
    const mc_cand_t *cand[1] = {&c};
    plan_on_one_link(&pl, 1, 32, 31250000, links, link_ps); /* 32 x 31.25 us = 1 ms */
    double t = fill_s(&pl, cand, 1 << 20, units);
    assert_true(fabs(t - (1e-3 + 2 * sqrt(2 * 1e-3 * HOP_S))) < 1e-9);
    t = fill_s(&pl, cand, MIN_CHUNK / 8, units); /* 32 units of 16 KiB: 4 chunks */
    assert_true(fabs(t - (1e-3 + 2 * 1e-3 / 4 + 4 * HOP_S)) < 1e-9);
    c.depth = 1;
    assert_true(fabs(fill_s(&pl, cand, 1 << 20, units) - 1e-3) < 1e-9);
    free(pl.cands);
}

/* Two trees of depth 2 sharing their link, 16 units each: each is paced by the link's whole
 * load (1 ms), not by its own half, so each takes 1 ms + 2 sqrt(1 ms x 10 us); the plan's
 * estimate (the link's load) is below it. */
static void test_shared_link_paces_both(void **state)
{
    (void)state;
    double hop_a[2], hop_b[2];
    int links[1], units[2] = {16, 16};
    int64_t link_ps[1];
    mc_plan_t pl;
    mc_cand_t a = chain(2, hop_a), b = chain(2, hop_b);
    const mc_cand_t *cand[2] = {&a, &b};
    plan_on_one_link(&pl, 2, 32, 31250000, links, link_ps);
    double t = fill_s(&pl, cand, 1 << 20, units);
    assert_true(fabs(t - (1e-3 + 2 * sqrt(1e-3 * HOP_S))) < 1e-9);
    mc_plan_sol_t s = {.nphases = 1, .units = units};
    assert_int_equal(mc_plan_check(&pl, &s), 0);
    assert_true((double)s.est_ps * 1e-12 < t - 1e-5);
    free(pl.cands);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_tree_closed_form),
        cmocka_unit_test(test_shared_link_paces_both),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
