/* Tests for NCCL's ring search (topo/topo_rings_search.c) and the rings of a ring collective
 * (topo/topo_rings.c): the rings NCCL finds on a DGX-1 (as NCCL's own logs print them) and on an
 * MI300X box, never more ring speed on a link than it carries, the channel counts, and a ring
 * broadcast on the DGX-1 simulated at channels x speed plus its pipeline fill. */
#include "test_task_helpers.h"
#include "test_topo_helpers.h"

#include <math.h>
#include <stdlib.h>

#include "sim/sim.h"
#include "synth/synth.h"
#include "topo/topo_chain.h"
#include "topo/topo_rings.h"

#define DGX1 "topologies/dgx1-v100-hybrid-cube-mesh-topo.xml"
#define MI300X "topologies/mi300x-x2.xml"

static mc_topo_ring_search_t search_ok(const mc_topo_t *t, int first, int n)
{
    int gpus[16];
    for (int i = 0; i < n; i++)
        gpus[i] = first + i;
    mc_topo_ring_search_t r;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_ring_search(t, gpus, n, &r, &err), MC_OK);
    return r;
}

/* Every ring visits each of the n GPUs once, every hop is one direct link of kind, and no link
 * carries more rings x speed than its bandwidth (the search takes the speed off every link of a
 * hop). Returns the most rings on one link. */
static int check_rings(const mc_topo_t *t, const mc_topo_ring_search_t *r, int first, int n,
                       mc_link_kind_t kind)
{
    int *rings_on = calloc((size_t)t->nlinks, sizeof(int)), most = 0;
    mc_err_t err = {0};
    for (int c = 0; c < r->nrings; c++) {
        int seen[16] = {0};
        for (int i = 0; i < n; i++) {
            int a = r->order[c * n + i], b = r->order[c * n + (i + 1) % n];
            seen[a - first]++;
            mc_route_t route;
            assert_int_equal(mc_topo_route(t, a, b, &route, &err), MC_OK);
            assert_int_equal(route.nlinks, 1);
            assert_int_equal(t->links[route.links[0]].kind, kind);
            rings_on[route.links[0]]++;
        }
        for (int g = 0; g < n; g++)
            assert_int_equal(seen[g], 1);
    }
    for (int l = 0; l < t->nlinks; l++) {
        assert_true(rings_on[l] * r->speed <= t->links[l].bw * (1 + 1e-9));
        most = rings_on[l] > most ? rings_on[l] : most;
    }
    free(rings_on);
    return most;
}

/* The DGX-1 (8 V100, 6 NVLink lanes of 20 GB/s each, pairs joined by one or two lanes, 3 -> 4
 * not at all). NCCL's search (search.cc) starts at 40 GB/s (the two-lane pairs): the two
 * directions of the cycle of two-lane pairs, 80 GB/s in all, short of a GPU's 120. It goes down
 * to 20 GB/s (20 / 40 > 0.49) where every lane carries a ring: 6 rings, 120 GB/s, a GPU's whole
 * NVLink bandwidth, so the search stops there; 20 < 25 GB/s, so no duplication. These are the
 * rings NCCL prints on such a box (NCCL_DEBUG=INFO, NCCL 2.19.3 and 2.27.5 on an 8 x V100 hybrid
 * cube mesh: 12 channels, 0 3 2 1 5 6 7 4 on four, 0 4 7 6 5 1 2 3 on four, 0 1 3 7 5 4 6 2 and
 * 0 2 6 4 5 7 3 1 on two each): the connect step doubles the 6 to 12, channel c on ring c % 6. */
static void test_dgx1_rings(void **state)
{
    (void)state;
    mc_topo_t *t = load_ok(DGX1);
    mc_topo_ring_search_t r = search_ok(t, 0, 8);
    static const int want[6][8] = {
        {0, 3, 2, 1, 5, 6, 7, 4}, {0, 3, 2, 1, 5, 6, 7, 4}, {0, 4, 7, 6, 5, 1, 2, 3},
        {0, 4, 7, 6, 5, 1, 2, 3}, {0, 1, 3, 7, 5, 4, 6, 2}, {0, 2, 6, 4, 5, 7, 3, 1},
    };
    assert_int_equal(r.nrings, 6);
    assert_true(r.speed == 20e9);
    assert_true(r.nrings * r.speed == kind_gbps(t, 0, MC_LINK_NVL) * 1e9);
    for (int c = 0; c < 6; c++)
        assert_memory_equal(r.order + c * 8, want[c], sizeof(want[c]));
    /* the two-lane pairs carry two rings, the others one */
    assert_int_equal(check_rings(t, &r, 0, 8, MC_LINK_NVL), 2);
    mc_topo_ring_search_free(&r);
    mc_topo_free(t);
}

/* An MI300X box: 8 GPUs, each pair joined by one xGMI link of 48 GB/s. RCCL's speeds start at
 * 48 GB/s, a whole link, so the rings are link-disjoint Hamiltonian cycles; the search keeps
 * adding them until a GPU's 7 x 48 GB/s is full or its step budget is spent: here 6 rings (the
 * 7th cycle of a full decomposition is not reached within NCCL's 2^14 steps), 288 GB/s, the
 * first in PCI order. 48 GB/s with more than 4 rings is not duplicated (ncclTopoDupChannels). */
static void test_mi300x_rings(void **state)
{
    (void)state;
    mc_topo_t *t = load_ok(MI300X);
    mc_topo_ring_search_t r = search_ok(t, 0, 8);
    static const int pci[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    assert_int_equal(r.nrings, 6);
    assert_true(r.speed == 48e9);
    assert_memory_equal(r.order, pci, sizeof(pci));
    assert_int_equal(check_rings(t, &r, 0, 8, MC_LINK_XGMI), 1);
    assert_true(r.nrings * r.speed <= kind_gbps(t, 0, MC_LINK_XGMI) * 1e9);
    /* the second host's GPUs get the same rings, shifted */
    mc_topo_ring_search_t r1 = search_ok(t, 8, 8);
    assert_int_equal(r1.nrings, 6);
    for (int i = 0; i < 6 * 8; i++)
        assert_int_equal(r1.order[i], r.order[i] + 8);
    mc_topo_ring_search_free(&r1);
    mc_topo_ring_search_free(&r);
    mc_topo_free(t);
}

/* The search of gpus[0..n) through cache c is the search made afresh: the cache hands out a
 * search found on another set of GPUs (another host of the same make) only renamed onto these. */
static void assert_cached_is_fresh(mc_topo_ring_cache_t *c, const mc_topo_t *t, const int *gpus,
                                   int n)
{
    const mc_topo_ring_search_t *cached = NULL;
    mc_topo_ring_search_t fresh;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_ring_search_cached(c, t, gpus, n, &cached, &err), MC_OK);
    assert_int_equal(mc_topo_ring_search(t, gpus, n, &fresh, &err), MC_OK);
    assert_int_equal(cached->nrings, fresh.nrings);
    assert_true(cached->speed == fresh.speed);
    assert_int_equal(cached->ops, fresh.ops);
    assert_memory_equal(cached->order, fresh.order, sizeof(int) * (size_t)(fresh.nrings * n));
    mc_topo_ring_search_free(&fresh);
}

/* One cache over every host of clusters of identical boxes (each host after the first renames
 * the first's search): whole hosts listed in reverse, a host's first five GPUs, every other GPU;
 * and over every set of 4 GPUs of a DGX-1, listed in reverse: sets of the same size whose links
 * differ (pairs joined by one lane, two or none) must not share a search. */
static void test_cached_searches(void **state)
{
    (void)state;
    static const char *files[] = {"topologies/dgx1-x2.xml", "topologies/mi250-x3.xml",
                                  "topologies/mi250-x8.xml", "topologies/dgx1-x8.xml", MI300X,
                                  "topologies/pcie-rtx3090-x4.xml"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        mc_topo_t *t = load_ok(files[f]);
        mc_topo_ring_cache_t *c = mc_topo_ring_cache_new();
        for (int pick = 0; pick < 3; pick++)
            for (int h = 0; h < t->nhosts; h++) {
                int first, per = mc_topo_host_gpus(t, h, &first), gpus[16], n = 0;
                for (int i = per - 1; i >= 0 && per <= 16; i--)
                    if (pick == 0 || (pick == 1 && i < 5) || (pick == 2 && i % 2 == 0))
                        gpus[n++] = first + i;
                assert_cached_is_fresh(c, t, gpus, n);
            }
        mc_topo_ring_cache_free(c);
        mc_topo_free(t);
    }
    mc_topo_t *t = load_ok(DGX1);
    mc_topo_ring_cache_t *c = mc_topo_ring_cache_new();
    for (int set = 0; set < 256; set++) {
        int gpus[8], n = 0;
        for (int g = 7; g >= 0; g--)
            if (set >> g & 1)
                gpus[n++] = g;
        if (n == 4)
            assert_cached_is_fresh(c, t, gpus, n);
    }
    mc_topo_ring_cache_free(c);
    mc_topo_free(t);
}

/* The cache's answer to whether a GPU's host is searched is the topology's, asked once or again,
 * on hosts with NVSwitches (not searched) and without. */
static void test_searched_cached(void **state)
{
    (void)state;
    static const char *files[] = {"topologies/dgx-h100-x4.xml", MI300X};
    int seen[2] = {0, 0};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        mc_topo_t *t = load_ok(files[f]);
        mc_topo_ring_cache_t *c = mc_topo_ring_cache_new();
        for (int again = 0; again < 2; again++)
            for (int g = 0; g < t->ngpus; g++) {
                int want = mc_topo_ring_searched(t, g);
                assert_int_equal(mc_topo_ring_searched_cached(c, t, g), want);
                seen[want != 0]++;
            }
        mc_topo_ring_cache_free(c);
        mc_topo_free(t);
    }
    assert_true(seen[0] > 0 && seen[1] > 0);
}

static mc_topo_rings_t *rings_ok(const mc_topo_t *t, int first, int n, int root)
{
    int gpus[16];
    for (int i = 0; i < n; i++)
        gpus[i] = first + i;
    mc_topo_rings_t *r = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_rings_new(t, gpus, n, root, NULL, &r, &err), MC_OK);
    return r;
}

/* Channels: the DGX-1's 6 rings doubled to 12; a root outside the list joins its host's run at its
 * head; an NVSwitch host (DGX H100) keeps the list's order and a channel per NVLink lane (18);
 * two MI300X hosts: one channel per NIC (8), each entering host 1 at its c-th GPU. */
static void test_ring_channels(void **state)
{
    (void)state;
    mc_topo_t *t = load_ok(DGX1);
    mc_topo_rings_t *r = rings_ok(t, 1, 7, 0);
    assert_int_equal(r->n, 8);
    assert_int_equal(r->gpus[0], 0);
    assert_int_equal(r->nruns, 1);
    assert_int_equal(r->found[0]->nrings, 6);
    assert_int_equal(mc_topo_rings_channels(t, r, 0), 12);
    int order[16];
    mc_topo_rings_order(r, 7, order);  /* channel 7: ring 1, entered at the run's 7th GPU */
    static const int ch7[8] = {7, 4, 0, 3, 2, 1, 5, 6};
    assert_memory_equal(order, ch7, sizeof(ch7));
    mc_topo_rings_free(r);
    mc_topo_free(t);

    t = load_ok("topologies/dgx-h100-x1.xml");
    r = rings_ok(t, 1, 7, 0);
    assert_int_equal(r->n, 7);
    assert_int_equal(r->found[0]->nrings, 0);
    assert_int_equal(mc_topo_rings_channels(t, r, 0), 18);
    mc_topo_rings_order(r, 2, order);
    static const int h100[7] = {3, 4, 5, 6, 7, 1, 2};
    assert_memory_equal(order, h100, sizeof(h100));
    mc_topo_rings_free(r);
    mc_topo_free(t);

    t = load_ok(MI300X);
    r = rings_ok(t, 0, 16, -1);
    assert_int_equal(r->nruns, 2);
    assert_int_equal(mc_topo_rings_channels(t, r, 0), 8);
    for (int c = 0; c < 8; c++) {
        mc_topo_rings_order(r, c, order);
        assert_int_equal(order[8], 8 + c);
    }
    mc_topo_rings_free(r);
    mc_topo_free(t);
}

/* A broadcast of 96 MiB from GPU 0 to the other 7 GPUs of the DGX-1, by nccl-ring and by
 * alpa-bcast (Alpa's broadcast is NCCL's ring broadcast): 12 chains of 8 MiB (two channels on each
 * of the 6 rings), each of 7 NVLink hops and moving at 10 GB/s (a ring's 20 GB/s over its two
 * channels). Each chain is pipelined in NCCL's 16 steps of 512 KiB, 8 in flight, so the hops'
 * fixed cost d overlaps the steps before and a chain takes 7 d + (c + 6) x 8 MiB / c / 10 GB/s;
 * the simulator agrees within 1%, and the whole is the root's 120 GB/s of NVLink plus that fill
 * (with mesh-order chains through the CPUs: 21 times the bound). */
static void test_dgx1_broadcast_time(void **state)
{
    (void)state;
    static const char *strategies[] = {"nccl-ring", "alpa-bcast"};
    mc_topo_t *t = load_ok(DGX1);
    mc_task_t *task = task_of("S={g:1}@0", "D={g:7}@1..7", "f32[3072,8192] S[_,_] -> D[_,_]");
    for (int k = 0; k < 2; k++) {
        mc_sched_t *s = NULL;
        mc_err_t err = {0};
        assert_int_equal(mc_synth(strategies[k], task, t, NULL, &s, &err), MC_OK);
        assert_int_equal(s->ntrees, 12);
        double bytes = 96.0 * 1024 * 1024, expect = 0;
        for (int i = 0; i < s->ntrees; i++) {
            const mc_tree_t *tr = &s->trees[i];
            assert_int_equal(tr->nedges, 7);
            assert_true(tr->bytes == bytes / 12);
            double d = mc_topo_links_delay(t, tr->edges[0].links, tr->edges[0].nlinks);
            for (int e = 0; e < tr->nedges; e++) {
                assert_int_equal(tr->edges[e].nlinks, 1);
                assert_int_equal(t->links[tr->edges[e].links[0]].kind, MC_LINK_NVL);
            }
            assert_int_equal(tr->inflight, MC_NCCL_STEPS);
            assert_int_equal(tr->nchunks, 16);
            double c = tr->nchunks, chain = 7 * d + (c + 6) * bytes / 12 / c / 10e9;
            expect = chain > expect ? chain : expect;
        }
        mc_sim_result_t res = {0};
        assert_int_equal(mc_sim_run(s, t, &res, &err), MC_OK);
        if (fabs(res.makespan_s - expect) > 0.01 * expect)
            fail_msg("%s: simulated %.4g s, closed form %.4g s", strategies[k], res.makespan_s,
                     expect);
        assert_true(res.makespan_s >= bytes / 120e9);
        mc_sim_result_free(&res);
        mc_sched_free(s);
    }
    mc_task_free(task);
    mc_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dgx1_rings),
        cmocka_unit_test(test_mi300x_rings),
        cmocka_unit_test(test_cached_searches),
        cmocka_unit_test(test_searched_cached),
        cmocka_unit_test(test_ring_channels),
        cmocka_unit_test(test_dgx1_broadcast_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
