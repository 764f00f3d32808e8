/* Tests for the rail trees of small shares (mc_cands_add_rails_small, candidates_rails.c; docs/
 * synthesis.md, "Session 16: broadcasts over many hosts"): on 4 DGX A100 hosts joined by 8 rails,
 * one GPU's piece to the 24 GPUs of the 3 other hosts on its own rail (8 shares divide the
 * rails). By the alpha-beta cost of a rail's stripe (network message wait h = 14 us + 6 us of
 * route latency, 25 GB/s ports): 64 KiB (2.6 us of bytes) goes as a star from the rail's GPU (one
 * wait and 3 x 2.6 us, where hubs pay two waits), 4 MiB (168 us) through every other host as a hub
 * (two waits and about twice the bytes, where a star sends them 3 times); the striped schedule
 * splits the piece by the trees' stripes and leaves the trees of stripe 0 out. On hosts of one NIC
 * (8 RTX 3090 boxes) the same trees over their one rail, entered behind the NIC's switch and
 * fanned out inside each box by alpha-beta cost ("Session 18: small broadcasts over several
 * hosts"). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"
#include "tests/unit/test_layout_random.h"
#include "tests/unit/test_topo_helpers.h"

#define TOPO "topologies/dgx-a100-x4.xml"
#define HOSTCAST(type) "mesh S={g:1}@0\nmesh D={g:24}@8..31\nmove " type " S[_,_] -> D[_,_]\n"

typedef struct small {
    mc_topo_t *topo;
    mc_task_t *task;
    mc_shares_t sh;
    mc_cands_t cs;
} small_t;

/* The rail trees of text's one share on topology file path, leaving host 0 beside 7 other
 * shares (one rail each). */
static void small_init_on(small_t *s, const char *path, const char *text)
{
    mc_err_t err = {0};
    memset(s, 0, sizeof *s);
    s->topo = load_ok(path);
    s->task = task_of(text);
    mc_shares_build(s->task, s->topo, &s->sh);
    assert_int_equal(s->sh.n, 1);
    mc_piece_t view = s->task->pieces[s->sh.s[0].piece];
    view.ndests = s->sh.s[0].ndests;
    view.dests = (int *)s->sh.s[0].dests;
    char *taken = calloc((size_t)s->topo->ngpus, 1);
    assert_int_equal(mc_cands_add_rails_small(&s->cs, s->topo, s->sh.s[0].piece, &view, 0, 8, 1,
                                              taken, &err),
                     MC_OK);
    free(taken);
}

static void small_init(small_t *s, const char *text)
{
    small_init_on(s, TOPO, text);
}

static void small_free(small_t *s)
{
    mc_cands_free(&s->cs);
    mc_shares_free(&s->sh);
    mc_task_free(s->task);
    mc_topo_free(s->topo);
}

/* Tree c's edges between hosts: how many, and into from[] their parents. */
static int crossings(const small_t *s, const mc_cand_t *c, int *from)
{
    int n = 0;
    for (int e = 0; e < c->nedges; e++)
        if (mc_topo_gpu_host(s->topo, c->parent[e]) != mc_topo_gpu_host(s->topo, c->child[e]))
            from[n++] = c->parent[e];
    return n;
}

/* 64 KiB: one tree carries it all, entering the 3 hosts straight from one GPU of host 0. */
static void test_star_for_tiny(void **state)
{
    (void)state;
    small_t s;
    small_init(&s, HOSTCAST("f32[128,128]"));
    int with = 0, from[8];
    for (int c = 0; c < s.cs.n; c++) {
        if (s.cs.c[c].stripe <= 0)
            continue;
        with++;
        assert_true(s.cs.c[c].stripe > 1 - 1e-9);
        assert_int_equal(crossings(&s, &s.cs.c[c], from), 3);
        assert_int_equal(from[1], from[0]);
        assert_int_equal(from[2], from[0]);
        assert_int_equal(mc_topo_gpu_host(s.topo, from[0]), 0);
    }
    assert_int_equal(with, 1);
    small_free(&s);
}

/* 4 MiB: a third on each of 3 two-level trees: host 0 sends to the hub, the hub to the 2 others. */
static void test_hubs_for_4mib(void **state)
{
    (void)state;
    small_t s;
    small_init(&s, HOSTCAST("f32[1024,1024]"));
    int with = 0, from[8], hubs[3];
    for (int c = 0; c < s.cs.n; c++) {
        if (s.cs.c[c].stripe <= 0)
            continue;
        assert_true(s.cs.c[c].stripe > 1.0 / 3 - 1e-9 && s.cs.c[c].stripe < 1.0 / 3 + 1e-9);
        assert_int_equal(crossings(&s, &s.cs.c[c], from), 3);
        int home = 0, hub = -1;
        for (int i = 0; i < 3; i++) {
            int h = mc_topo_gpu_host(s.topo, from[i]);
            home += h == 0;
            assert_true(h == 0 || hub < 0 || h == hub);
            hub = h == 0 ? hub : h;
        }
        assert_int_equal(home, 1);
        hubs[with++] = hub;
    }
    assert_int_equal(with, 3);
    assert_true(hubs[0] != hubs[1] && hubs[1] != hubs[2] && hubs[0] != hubs[2]);
    small_free(&s);
}

/* The striped schedule of an empty one over those trees: 3 trees, a third each in multiples of
 * 4 KiB (1,396,736 bytes), the last the rest (1,400,832), end to end; the chains (stripe 0) carry
 * nothing and are left out; valid. */
static void test_split_by_stripe(void **state)
{
    (void)state;
    small_t s;
    small_init(&s, HOSTCAST("f32[1024,1024]"));
    mc_err_t err = {0};
    assert_true(s.cs.n > 3);
    mc_sched_t *base = mc_sched_new(s.task, s.topo, "meshcast"), *d = NULL;
    assert_int_equal(mc_sched_striped(base, s.topo, &s.cs, 128 * 1024, NULL, &d, &err), MC_OK);
    assert_int_equal(d->ntrees, 3);
    uint64_t off = 0;
    for (int t = 0; t < 3; t++) {
        assert_int_equal(d->trees[t].offset, off);
        assert_int_equal(d->trees[t].bytes, t < 2 ? 1396736 : 4194304 - 2 * 1396736);
        off += d->trees[t].bytes;
    }
    assert_int_equal(mc_sched_validate(d, s.topo, NULL), 0);
    mc_sched_free(d);
    mc_sched_free(base);
    small_free(&s);
}

/* Over 8 OCI A100 hosts the 4 MiB go through 7 hubs, 599,186.3 bytes each: every tree ends where
 * the stripes so far end, rounded to 4 KiB, so no two parts differ by more than 4 KiB (each part
 * rounded down left the last tree 8 KiB more than the others; over 56 trees, 64 KiB more). */
static void test_split_spreads_remainder(void **state)
{
    (void)state;
    small_t s;
    small_init_on(&s, "topologies/oci-a100-x8.xml",
                  "mesh S={g:1}@0\nmesh D={g:56}@8..63\nmove f32[1024,1024] S[_,_] -> D[_,_]\n");
    mc_err_t err = {0};
    mc_sched_t *base = mc_sched_new(s.task, s.topo, "meshcast"), *d = NULL;
    assert_int_equal(mc_sched_striped(base, s.topo, &s.cs, 128 * 1024, NULL, &d, &err), MC_OK);
    assert_int_equal(d->ntrees, 7);
    uint64_t least = UINT64_MAX, most = 0, sum = 0;
    for (int t = 0; t < d->ntrees; t++) {
        least = d->trees[t].bytes < least ? d->trees[t].bytes : least;
        most = d->trees[t].bytes > most ? d->trees[t].bytes : most;
        sum += d->trees[t].bytes;
    }
    assert_int_equal(sum, 4194304);
    assert_true(most - least <= 4096);
    assert_int_equal(mc_sched_validate(d, s.topo, NULL), 0);
    mc_sched_free(d);
    mc_sched_free(base);
    small_free(&s);
}

/* How many edges of c (or of the n edges par -> chi) between GPUs of host h cross a SYS link (the
 * link between a PCIe box's CPUs). */
static int sys_crossings(const mc_topo_t *topo, const int *par, const int *chi, int n, int h)
{
    mc_err_t err = {0};
    int k = 0;
    for (int e = 0; e < n; e++) {
        mc_route_t rt;
        if (mc_topo_gpu_host(topo, par[e]) != h || mc_topo_gpu_host(topo, chi[e]) != h)
            continue;
        assert_int_equal(mc_topo_route(topo, par[e], chi[e], &rt, &err), MC_OK);
        for (int i = 0; i < rt.nlinks; i++)
            k += topo->links[rt.links[i]].kind == MC_LINK_SYS;
    }
    return k;
}

/* One RTX 3090 box (two PCIe switches of 4 GPUs under two CPUs joined by a 10 GB/s link, the NIC
 * behind GPUs 4-7's switch): from GPU 4 to the 7 others, the shortest-path tree is a star that
 * crosses the CPUs' link 4 times (GPUs 0-3); the alpha-beta tree for 600 KB in 128 KiB chunks
 * crosses it once, is cheaper by its own cost, and reaches every GPU once. */
static void test_fanout_crosses_cpus_once(void **state)
{
    (void)state;
    mc_err_t err = {0};
    mc_topo_t *topo = load_ok("topologies/pcie-rtx3090x8-1nic-topo.xml");
    int in = 4, want[7] = {0, 1, 2, 3, 5, 6, 7}, par[16], chi[16], spar[16], schi[16];
    double bytes = 4194304.0 / 7, chunk = 128 * 1024, most;
    int n = mc_cands_host_fanout(topo, &in, 1, want, 7, bytes, chunk, par, chi);
    int k = mc_cands_host_spt(topo, 4, want, 7, spar, schi, &err);
    assert_int_equal(n, 7);
    assert_int_equal(k, 7);
    assert_int_equal(sys_crossings(topo, spar, schi, k, 0), 4);
    assert_int_equal(sys_crossings(topo, par, chi, n, 0), 1);
    int seen[8] = {0};
    seen[4] = 1;
    for (int e = 0; e < n; e++) {
        assert_true(seen[par[e]]);
        assert_false(seen[chi[e]]);
        seen[chi[e]] = 1;
    }
    assert_true(mc_cands_fanout_cost(topo, par, chi, n, bytes, chunk, &most) <
                mc_cands_fanout_cost(topo, spar, schi, k, bytes, chunk, &most));
    mc_topo_free(topo);
}

/* 8 RTX 3090 boxes, one 7 GB/s NIC each: GPU 0's 4 MiB to the 56 GPUs of the 7 other boxes has
 * rail trees on the boxes' one rail (none before: they needed two), through every other box as a
 * hub (two network waits, 4 MiB and 3.4 MiB over a NIC, where a chain waits 7 times), each box
 * entered at a GPU behind its NIC's switch (GPUs 4-7: the route from the NIC crosses no SYS link)
 * and its GPUs reached over the CPUs' link once per tree. */
static void test_one_nic_hosts(void **state)
{
    (void)state;
    small_t s;
    small_init_on(&s, "topologies/rtx3090-x8.xml",
                  "mesh S={g:1}@0\nmesh D={g:56}@8..63\nmove f32[1024,1024] S[_,_] -> D[_,_]\n");
    int with = 0, from[64];
    for (int c = 0; c < s.cs.n; c++) {
        const mc_cand_t *t = &s.cs.c[c];
        if (t->stripe <= 0)
            continue;
        with++;
        assert_true(t->stripe > 1.0 / 7 - 1e-9 && t->stripe < 1.0 / 7 + 1e-9);
        assert_int_equal(crossings(&s, t, from), 7);
        for (int e = 0; e < t->nedges; e++)
            if (mc_topo_gpu_host(s.topo, t->parent[e]) != mc_topo_gpu_host(s.topo, t->child[e]))
                assert_true(t->child[e] % 8 >= 4);
        for (int h = 1; h < 8; h++)
            assert_int_equal(sys_crossings(s.topo, t->parent, t->child, t->nedges, h), 1);
    }
    assert_int_equal(with, 7);
    small_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_star_for_tiny),
        cmocka_unit_test(test_hubs_for_4mib),
        cmocka_unit_test(test_split_by_stripe),
        cmocka_unit_test(test_split_spreads_remainder),
        cmocka_unit_test(test_fanout_crosses_cpus_once),
        cmocka_unit_test(test_one_nic_hosts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
