/* Tests for the candidates priced by link load (candidates_frac.c, candidates_steiner.c,
 * candidates_price.c) on the DGX-1 hybrid cube-mesh: the column generation lowers the fractional
 * optimum when the starting trees are poor, the broadcast from one GPU approaches the root's
 * max-flow (Edmonds: link-disjoint arborescences reach it), the pipeline-fill weight of the third
 * split is its closed form and makes that split shallower, the referee's later forms reach the
 * second fastest plan, and results repeat under an rlimit. And the packing rounds on a six-link
 * xGMI mesh (tests/data/topo/xgmi-six-link-mesh.xml: eight GPUs, each linked to six others), where
 * the duals of the split the first rounds reach name no single tree that relieves it: a broadcast
 * from GPU 0 reaches every GPU over six arc-disjoint arborescences at the rate of its six xGMI
 * links, and the packing rounds must find the set of trees that does. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/meshcast/mc_meshcast.h"
#include "test_synth_helpers.h"

#define TOPO "topologies/dgx1-v100-hybrid-cube-mesh-topo.xml"
#define MESH_TOPO "tests/data/topo/xgmi-six-link-mesh.xml"
#define BCAST_BYTES (256.0 * 1024 * 1024)

static int setup(void **state)
{
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    if (mc_topo_load(TOPO, &t, &err) != MC_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    mc_topo_free(*state);
    return 0;
}

static mc_task_t *bcast_task(void)
{
    mc_task_t *t = mc_task_new();
    mc_err_t err = {0};
    assert_int_equal(mc_task_add_mesh(t, "S={g:1}@0", &err), MC_OK);
    assert_int_equal(mc_task_add_mesh(t, "D={g:7}@1..7", &err), MC_OK);
    assert_int_equal(mc_task_add_move(t, "f32[8192,8192] S[_,_] -> D[_,_]", &err), MC_OK);
    assert_int_equal(mc_task_split(t, &err), MC_OK);
    return t;
}

/* The smallest over GPUs 1..7 of the maximum flow from GPU 0 in the topology graph (every node,
 * every link at its bandwidth), computed here with igraph, independently of meshcast's model. */
static double min_maxflow_from_gpu0(const mc_topo_t *topo)
{
    igraph_t g;
    igraph_vector_int_t edges;
    igraph_vector_t cap;
    igraph_vector_int_init(&edges, 0);
    igraph_vector_init(&cap, 0);
    for (int l = 0; l < topo->nlinks; l++) {
        igraph_vector_int_push_back(&edges, topo->links[l].src);
        igraph_vector_int_push_back(&edges, topo->links[l].dst);
        igraph_vector_push_back(&cap, topo->links[l].bw);
    }
    assert_int_equal(igraph_create(&g, &edges, topo->nnodes, IGRAPH_DIRECTED), IGRAPH_SUCCESS);
    double least = 0;
    for (int d = 1; d < topo->ngpus; d++) {
        igraph_real_t v;
        assert_int_equal(igraph_maxflow_value(&g, &v, topo->gpu_node[0], topo->gpu_node[d], &cap,
                                              NULL),
                         IGRAPH_SUCCESS);
        if (d == 1 || v < least)
            least = v;
    }
    igraph_destroy(&g);
    igraph_vector_destroy(&cap);
    igraph_vector_int_destroy(&edges);
    return least;
}

/* The broadcast's single share priced from the star out of GPU 0 alone, against bytes over the
 * root's max-flow (ideal). */
typedef struct priced {
    mc_shares_t sh;
    mc_cands_t cs;
    double *frac[MC_SPLITS];
    mc_price_stats_t st;
    int count;
    double ideal;
} priced_t;

static void price_from_star(const mc_topo_t *topo, const mc_task_t *task, priced_t *p)
{
    mc_err_t err = {0};
    memset(p, 0, sizeof(*p));
    mc_shares_build(task, topo, &p->sh);
    assert_int_equal(p->sh.n, 1);
    int parent[7], child[7], first = 0, at;
    for (int i = 0; i < 7; i++) {
        parent[i] = 0;
        child[i] = i + 1;
    }
    assert_int_equal(mc_cands_push(&p->cs, topo, p->sh.s[0].piece, 0, 7, parent, child, &at,
                                   &err),
                     MC_OK);
    p->ideal = BCAST_BYTES / min_maxflow_from_gpu0(topo);
    p->count = 1;
    assert_int_equal(mc_cands_price(&p->cs, task, topo, &p->sh, &first, &p->count, p->ideal,
                                    p->frac, &p->st, &err),
                     MC_OK);
}

static void priced_free(priced_t *p)
{
    for (int k = 0; k < MC_SPLITS; k++)
        free(p->frac[k]);
    mc_cands_free(&p->cs);
    mc_shares_free(&p->sh);
}

/* One share (the whole broadcast) with a single, poor candidate: the star from GPU 0, whose
 * routes to the GPUs without an NVLink to it cross PCIe and the CPUs. Pricing must add trees,
 * each reaching all 7 GPUs, and lower the fractional optimum to within 10% of bytes over the
 * root's max-flow (the star alone is 63 times that; trees over NVLink alone reach 1.05 of it,
 * the rest would need the 6 GB/s inter-socket link). */
static void test_pricing_improves_poor_start(void **state)
{
    const mc_topo_t *topo = *state;
    mc_task_t *task = bcast_task();
    priced_t p;
    price_from_star(topo, task, &p);
    assert_true(p.st.added >= 2);
    assert_int_equal(p.count, 1 + p.st.added);
    assert_true(p.st.first_s > 3 * p.ideal);
    assert_true(p.st.frac_s < p.st.first_s);
    assert_true(p.st.frac_s <= 1.1 * p.ideal);
    assert_true(p.st.frac_s >= p.ideal * (1 - 1e-9));
    double sum[MC_SPLITS] = {0};
    for (int c = 0; c < p.cs.n; c++) {
        const mc_cand_t *t = &p.cs.c[c];
        char seen[8] = {1};
        for (int e = 0; e < t->nedges; e++) {
            assert_true(seen[t->parent[e]]); /* parents before children */
            seen[t->child[e]] = 1;
        }
        for (int g = 1; g < 8; g++)
            assert_true(seen[g]);
        for (int k = 0; k < MC_SPLITS; k++)
            sum[k] += p.frac[k][c];
    }
    for (int k = 0; k < MC_SPLITS; k++)
        assert_true(sum[k] > 1 - 1e-6 && sum[k] < 1 + 1e-6); /* every share's bytes placed */
    priced_free(&p);
    mc_task_free(task);
}

/* The whole strategy on the same broadcast: valid, never below the bound, and within 1.3x of
 * bytes over the root's max-flow (the shape-based candidates alone gave 6.3x; what is left is
 * pipeline fill and per-message overheads the simulator charges). */
static void test_broadcast_near_maxflow(void **state)
{
    const mc_topo_t *topo = *state;
    mc_task_t *task = bcast_task();
    char plan[64];
    double bound_s, t = synth_sim(topo, task, &bound_s, plan);
    assert_true(t <= 1.3 * BCAST_BYTES / min_maxflow_from_gpu0(topo));
    mc_task_free(task);
}

static mc_task_t *allgather8(void)
{
    mc_task_t *t = mc_task_new();
    mc_err_t err = {0};
    assert_int_equal(mc_task_add_mesh(t, "M={g:8}@0..7", &err), MC_OK);
    assert_int_equal(mc_task_add_move(t, "f32[4096,4096] M[g,_] -> M[_,_]", &err), MC_OK);
    return t;
}

/* An all-gather over the 8 GPUs (pricing adds trees for 8 shares at once) twice under the same
 * rlimit and an unreachable budget: byte-identical schedules. */
static void test_priced_same_rlimit_same_schedule(void **state)
{
    synth_repeats(*state, allgather8, 2, NULL, "priced=0");
}

/* Fraction-weighted depth of a split's trees (one share: the fractions sum to 1). */
static double mean_depth(const mc_cands_t *cs, const double *x)
{
    double d = 0;
    for (int c = 0; c < cs->n; c++)
        d += x[c] * cs->c[c].depth;
    return d;
}

/* mc_frac_fill's closed form: 1 for a star (no fill), 1 + 2 sqrt((depth - 1) hop / t) for the
 * chain 0 -> 1 -> 2 -> 3 over single NVLink routes (hop: the route's alpha and latency), a quarter
 * of the excess at 16 times the transfer; and on the broadcast, the split weighted by it is
 * shallower than the split of least load. */
static void test_fill_split_is_shallower(void **state)
{
    const mc_topo_t *topo = *state;
    mc_cands_t cs = {0};
    mc_err_t err = {0};
    mc_route_t r;
    int sp[1] = {0}, sc[1] = {1}, cp[3] = {0, 1, 2}, cc[3] = {1, 2, 3};
    int star = mc_cands_append(&cs, topo, 0, 0, 1, sp, sc, &err);
    int chain = mc_cands_append(&cs, topo, 0, 0, 3, cp, cc, &err);
    assert_true(star >= 0 && chain >= 0);
    assert_int_equal(cs.c[chain].depth, 3);
    double hop = 0;
    for (int e = 0; e < 3; e++) {
        assert_int_equal(mc_topo_route(topo, cp[e], cc[e], &r, &err), MC_OK);
        double h = mc_topo_links_delay(topo, r.links, r.nlinks);
        hop = h > hop ? h : hop;
    }
    assert_true(hop > 1e-6);
    double t = 500e-6, excess = 2 * sqrt(2 * hop / t);
    assert_true(fabs(mc_frac_fill(&cs.c[star], t) - 1) < 1e-12);
    assert_true(fabs(mc_frac_fill(&cs.c[chain], t) - (1 + excess)) < 1e-9);
    assert_true(fabs(mc_frac_fill(&cs.c[chain], 16 * t) - (1 + excess / 4)) < 1e-9);
    mc_cands_free(&cs);

    mc_task_t *task = bcast_task();
    priced_t p;
    price_from_star(topo, task, &p);
    assert_true(p.st.added > 0);
    assert_true(mean_depth(&p.cs, p.frac[MC_SPLIT_FILL]) <
                mean_depth(&p.cs, p.frac[MC_SPLIT_LOAD]));
    priced_free(&p);
    mc_task_free(task);
}

static mc_task_t *gpu5_task(void)
{
    mc_task_t *task = mc_task_new();
    mc_err_t err = {0};
    assert_int_equal(mc_task_add_mesh(task, "S={g:1}@5", &err), MC_OK);
    assert_int_equal(mc_task_add_mesh(task, "D={g:4}@0..3", &err), MC_OK);
    assert_int_equal(mc_task_add_move(task, "bf16[6144,8192] S[_,_] -> D[_,_]", &err), MC_OK);
    assert_int_equal(mc_task_split(task, &err), MC_OK);
    return task;
}

/* 96 MiB from GPU 5 to the other quad: the plan that gains most from evening out and staggering
 * is not the fastest as decoded, so the referee's later forms must reach the second fastest too
 * (1.34 of the bound from the fastest alone, 1.24 with both). */
static void test_referee_tries_second_fastest(void **state)
{
    mc_task_t *task = gpu5_task();
    char plan[64];
    double bound_s, t = synth_sim(*state, task, &bound_s, plan);
    assert_true(t <= 1.30 * bound_s);
    mc_task_free(task);
}

/* The same: its winner, evened out and staggered, runs faster with 4/3 of its chunks three
 * times over (1.244 of the bound as it was, 1.217 after the steps), which the referee's last
 * races find. */
static void test_referee_steps_chunk_counts(void **state)
{
    mc_task_t *task = gpu5_task();
    char plan[64];
    double bound_s, t = synth_sim(*state, task, &bound_s, plan);
    assert_non_null(strstr(plan, "+fine"));
    assert_true(t <= 1.23 * bound_s);
    mc_task_free(task);
}

/* The six-link mesh (MESH_TOPO). */
static mc_topo_t *six_link_mesh(void)
{
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    if (mc_topo_load(MESH_TOPO, &t, &err) != MC_OK)
        fail_msg("%s", err.msg);
    return t;
}

/* The broadcast's bytes over the bandwidth of GPU 0's xGMI links: the time of the six
 * arborescences, each on one of them. */
static double xgmi_time(const mc_topo_t *topo)
{
    double bw = 0;
    int links = 0;
    for (int l = 0; l < topo->nlinks; l++)
        if (topo->links[l].src == topo->gpu_node[0] && topo->links[l].kind == MC_LINK_XGMI) {
            bw += topo->links[l].bw;
            links++;
        }
    assert_int_equal(links, 6);
    return BCAST_BYTES / bw;
}

/* The broadcast from GPU 0 on the six-link mesh: the fractional optimum the strategy's pricing
 * reaches from its shape candidates (frac_s in the schedule's params) is within 1% of the six
 * arborescences' time (1.44 of it before the packing rounds, the duals naming no cheaper tree),
 * and the schedule, valid and never below the bound, within 1.2x (1.34 before: NCCL's rings
 * won; what is left is pipeline fill and per-message overheads). */
static void test_packing_reaches_arborescences(void **state)
{
    (void)state;
    mc_topo_t *topo = six_link_mesh();
    mc_task_t *task = bcast_task();
    mc_sched_t *s = NULL;
    synth_rlimit(topo, task, &s);
    const char *at = strstr(s->params, "frac_s=");
    assert_non_null(at);
    double frac_s = strtod(at + strlen("frac_s="), NULL);
    assert_true(frac_s > 0);
    assert_true(frac_s <= 1.01 * xgmi_time(topo));
    double bound_s, t = checked_sim(topo, task, s, &bound_s);
    assert_true(t <= 1.2 * xgmi_time(topo));
    mc_sched_free(s);
    mc_task_free(task);
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pricing_improves_poor_start),
        cmocka_unit_test(test_broadcast_near_maxflow),
        cmocka_unit_test(test_fill_split_is_shallower),
        cmocka_unit_test(test_referee_tries_second_fastest),
        cmocka_unit_test(test_referee_steps_chunk_counts),
        cmocka_unit_test(test_priced_same_rlimit_same_schedule),
        cmocka_unit_test(test_packing_reaches_arborescences),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
