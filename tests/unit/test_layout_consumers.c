/* Tensors with several consumers (`move NAME: SRC -> DST1, DST2, ...`): a piece's destinations
 * are the union over the consumers, so each GPU needs exactly what it needs from the same tensor
 * written as one move per consumer; the bound counts a byte two consumers need once where it
 * leaves its source and once per destination where it enters; the meshcast strategy crosses the
 * slow link once per byte where p2p crosses it once per consumer, relaying from one consumer to
 * the other; every strategy's simulated time stays above the bound; bad moves are refused with
 * the file, line and what was expected. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "cost/cost.h"
#include "layout/layout.h"
#include "sim/sim.h"
#include "synth/synth.h"
#include "tests/unit/test_layout_random.h"

#define AWS "topologies/aws-p3.8xlarge-x5.xml"

/* One source tile on host 0, two consumers on host 1, each splitting it over two GPUs. */
static const char fan2[] = "mesh A={x:1}@0\n"
                           "mesh B={x:2}@4..5\n"
                           "mesh C={x:2}@6..7\n"
                           "move act: f32[256,256] A[_,_] -> B[x,_], C[_,x]\n";
#define FAN2_TILE (256u * 256u * 4u)

static mc_topo_t *topo_of(const char *path)
{
    mc_topo_t *topo = NULL;
    mc_err_t err = {0};
    if (mc_topo_load(path, &topo, &err) != MC_OK)
        fail_msg("%s", err.msg);
    return topo;
}

static void test_pieces_span_consumers(void **state)
{
    (void)state;
    mc_task_t *t = task_of(fan2);
    assert_int_equal(t->ntensors, 1);
    assert_int_equal(t->tensors[0].nmore, 1);
    /* The quadrants of the tile: each needed by one GPU of B (rows) and one of C (columns). */
    assert_int_equal(t->npieces, 4);
    for (int i = 0; i < t->npieces; i++) {
        const mc_piece_t *p = &t->pieces[i];
        assert_int_equal(p->bytes, FAN2_TILE / 4);
        assert_int_equal(p->ndests, 2);
        assert_true(p->dests[0] == 4 || p->dests[0] == 5);
        assert_true(p->dests[1] == 6 || p->dests[1] == 7);
    }
    for (int g = 4; g < 8; g++) {
        assert_int_equal(mc_task_need_bytes(t, g), FAN2_TILE / 2);
        assert_int_equal(mc_task_dst_bytes(t, g), FAN2_TILE / 2);
    }
    assert_int_equal(mc_task_total_bytes(t), 2 * FAN2_TILE);
    assert_ptr_equal(mc_task_dst_layout(t, 0, 6), &t->tensors[0].more[0]);
    assert_null(mc_task_dst_layout(t, 0, 0));
    /* The canonical text names both consumers and reads back to itself. */
    char *text = mc_task_to_text(t);
    assert_non_null(strstr(text, "-> B[x,_], C[_,x]"));
    mc_task_t *u = task_of(text);
    char *again = mc_task_to_text(u);
    assert_string_equal(text, again);
    free(again);
    free(text);
    mc_task_free(u);
    mc_task_free(t);
}

/* A random move from A to B and C (disjoint meshes in thirds of 0..universe-1) as one move with
 * two consumers (multi) and as two moves (apart). */
static void random_fan(char *multi, char *apart, size_t len, int universe, int64_t scale)
{
    char ma[1024], mb[1024], mc[1024], s[512], d1[512], d2[512], shape_txt[96];
    int na, nb, nc, sa[4], sb[4], sc[4], nd = 1 + rnd(3), third = universe / 3;
    random_mesh(ma, sizeof(ma), "A", rnd(3) * third, third, third, &na, sa);
    random_mesh(mb, sizeof(mb), "B", 0, third, third, &nb, sb);
    random_mesh(mc, sizeof(mc), "C", third, third, third, &nc, sc);
    int64_t shape[MC_MAX_DIMS];
    random_shape(nd, scale, shape, shape_txt, sizeof(shape_txt));
    random_specs(s, sizeof(s), "A", na, sa, nd, shape);
    random_specs(d1, sizeof(d1), "B", nb, sb, nd, shape);
    random_specs(d2, sizeof(d2), "C", nc, sc, nd, shape);
    int n = snprintf(multi, len, "%s%s%smove x: f32[%s] %s -> %s, %s\n", ma, mb, mc, shape_txt, s,
                     d1, d2);
    assert_true(n > 0 && (size_t)n < len);
    n = snprintf(apart, len, "%s%s%smove x: f32[%s] %s -> %s\nmove y: f32[%s] %s -> %s\n", ma, mb,
                 mc, shape_txt, s, d1, shape_txt, s, d2);
    assert_true(n > 0 && (size_t)n < len);
}

/* Each GPU needs, holds at the end and copies locally what it would with one move per consumer;
 * the pieces merge destinations, so fewer distinct bytes move (strictly fewer on many tasks). */
static void test_same_needs_as_one_move_per_consumer(void **state)
{
    (void)state;
    int shared = 0;
    for (int iter = 0; iter < 200; iter++) {
        char multi[4096], apart[4096];
        random_fan(multi, apart, sizeof(multi), 24, 1 + rnd(40));
        mc_task_t *m = task_of(multi), *a = task_of(apart);
        uint64_t nm[24], na[24];
        mc_task_need_bytes_all(m, 24, nm);
        mc_task_need_bytes_all(a, 24, na);
        for (int g = 0; g < 24; g++) {
            if (nm[g] != na[g] || mc_task_dst_bytes(m, g) != mc_task_dst_bytes(a, g) ||
                mc_task_peak_mem_bound(m, g) > mc_task_peak_mem_bound(a, g))
                fail_msg("%s\nGPU %d: needs %llu, apart %llu", multi, g,
                         (unsigned long long)nm[g], (unsigned long long)na[g]);
        }
        uint64_t cm = 0, ca = 0;
        for (int i = 0; i < m->ncopies; i++)
            cm += m->copies[i].bytes;
        for (int i = 0; i < a->ncopies; i++)
            ca += a->copies[i].bytes;
        assert_int_equal(cm, ca);
        assert_int_equal(mc_task_total_bytes(m), mc_task_total_bytes(a));
        /* The distinct bytes that move: a byte both consumers need is one piece's, not two. */
        uint64_t dm = 0, da = 0;
        for (int i = 0; i < m->npieces; i++)
            dm += m->pieces[i].bytes;
        for (int i = 0; i < a->npieces; i++)
            da += a->pieces[i].bytes;
        assert_true(dm <= da);
        shared += dm < da;
        mc_task_free(m);
        mc_task_free(a);
    }
    assert_true(shared >= 50);
}

/* Distinct bytes: host 0 sends the tile once, host 1 receives it once, though four GPUs in two
 * consumers need it; each GPU's ingress and each pair's flow still count its own half. */
static void test_bound_counts_shared_bytes_once(void **state)
{
    (void)state;
    mc_topo_t *topo = topo_of(AWS);
    mc_task_t *t = task_of(fan2);
    uint64_t in[5], out[5];
    mc_task_host_bytes(t, topo, in, out);
    assert_int_equal(out[0], FAN2_TILE);
    assert_int_equal(in[1], FAN2_TILE);
    mc_bound_t b;
    mc_err_t err = {0};
    assert_int_equal(mc_task_bound_terms(t, topo, &b, &err), MC_OK);
    /* One 10 Gb/s NIC per host: the tile's time through it. */
    double nic = FAN2_TILE / 1.25e9;
    assert_true(b.host_cut_s >= nic * (1 - 1e-9) && b.host_cut_s <= nic * (1 + 1e-9));
    assert_true(b.seconds >= nic);
    /* Against the same bytes written as two tensors (the bound cannot know they are the same):
     * the source-side terms halve, the per-destination ones stay. */
    mc_task_t *apart = task_of("mesh A={x:1}@0\nmesh B={x:2}@4..5\nmesh C={x:2}@6..7\n"
                               "move xb: f32[256,256] A[_,_] -> B[x,_]\n"
                               "move xc: f32[256,256] A[_,_] -> C[_,x]\n");
    mc_bound_t a;
    assert_int_equal(mc_task_bound_terms(apart, topo, &a, &err), MC_OK);
    const double half[] = {b.egress_s / a.egress_s, b.host_cut_s / a.host_cut_s,
                           b.mesh_cut_s / a.mesh_cut_s, b.cut_s / a.cut_s, b.lp_s / a.lp_s};
    for (size_t i = 0; i < sizeof(half) / sizeof(half[0]); i++)
        if (fabs(half[i] - 0.5) > 1e-6)
            fail_msg("term %zu: %.9g of the two-tensor task's, expected half", i, half[i]);
    assert_true(fabs(b.ingress_s - a.ingress_s) <= 1e-12 && fabs(b.flow_s - a.flow_s) <= 1e-12);
    mc_task_free(apart);
    mc_task_free(t);
    mc_topo_free(topo);
}

/* Bytes carried by the links that leave host 0 for the network. */
static double host0_net_bytes(const mc_topo_t *topo, const mc_sim_result_t *r)
{
    double bytes = 0;
    for (int i = 0; i < topo->nlinks; i++) {
        const mc_link_t *l = &topo->links[i];
        if (l->kind == MC_LINK_NET && topo->nodes[l->src].host == 0 &&
            topo->nodes[l->dst].host != 0)
            bytes += r->link_bytes[i];
    }
    return bytes;
}

static mc_sched_t *synth_of(const char *strategy, mc_task_t *t, const mc_topo_t *topo)
{
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    opts.rlimit = 2000000;
    opts.budget_s = 1000; /* only the rlimit may stop Z3 */
    mc_sched_t *s = NULL;
    mc_err_t err = {0};
    if (mc_synth(strategy, t, topo, &opts, &s, &err) != MC_OK)
        fail_msg("%s: %s", strategy, err.msg);
    return s;
}

/* The closed form: the baselines reshard to each consumer on its own, so the tile crosses
 * host 0's NIC once per consumer; meshcast crosses once and a consumer relays to the other. */
static void test_meshcast_crosses_once(void **state)
{
    (void)state;
    mc_topo_t *topo = topo_of(AWS);
    mc_task_t *t = task_of(fan2);
    static const struct {
        const char *strategy;
        int crossings;
    } want[] = {{"p2p", 2}, {"p2p-lb", 2}, {"alpa-bcast", 2}, {"meshcast", 1}};
    double makespan[4];
    for (int k = 0; k < 4; k++) {
        mc_sched_t *s = synth_of(want[k].strategy, t, topo);
        mc_sim_result_t r;
        mc_err_t err = {0};
        assert_int_equal(mc_sim_run_totals(s, topo, &r, &err), MC_OK);
        double bytes = host0_net_bytes(topo, &r);
        if (fabs(bytes - (double)want[k].crossings * FAN2_TILE) > 0.5)
            fail_msg("%s: %.0f bytes leave host 0, expected %d x %u", want[k].strategy, bytes,
                     want[k].crossings, FAN2_TILE);
        makespan[k] = r.makespan_s;
        if (k == 3) {
            int relays = 0;
            for (int i = 0; i < s->ntrees; i++)
                for (int e = 0; e < s->trees[i].nedges; e++) {
                    const mc_tree_edge_t *ed = &s->trees[i].edges[e];
                    const mc_layout_t *from = mc_task_dst_layout(t, 0, ed->parent);
                    const mc_layout_t *to = mc_task_dst_layout(t, 0, ed->child);
                    relays += from && to && from->mesh != to->mesh;
                }
            assert_true(relays > 0);
        }
        mc_sim_result_free(&r);
        mc_sched_free(s);
    }
    /* The NIC is the bottleneck: crossing once takes about half as long. */
    assert_true(makespan[3] < 0.6 * makespan[0]);
    mc_task_free(t);
    mc_topo_free(topo);
}

/* The cost model lays each strategy's traffic the same way: the busiest link (host 0's NIC path)
 * carries the tile twice for p2p and alpa-bcast (one broadcast per consumer), once for meshcast. */
static void test_cost_model_counts_consumers(void **state)
{
    (void)state;
    mc_topo_t *topo = topo_of(AWS);
    mc_task_t *t = task_of(fan2);
    mc_cost_topo_t *ct = mc_cost_topo_new(topo);
    static const struct {
        mc_cost_strategy_t strategy;
        int crossings;
    } want[] = {{MC_COST_P2P, 2}, {MC_COST_ALPA_BCAST, 2}, {MC_COST_MESHCAST, 1}};
    for (int k = 0; k < 3; k++) {
        mc_cost_opts_t o = {.strategy = want[k].strategy};
        mc_cost_t c;
        mc_err_t err = {0};
        assert_int_equal(mc_cost_estimate(ct, t, &o, &c, &err), MC_OK);
        double nic = want[k].crossings * FAN2_TILE / 1.25e9;
        if (fabs(c.bandwidth_s - nic) > 1e-9 * nic)
            fail_msg("%s: busiest link %.9g s, expected %d x the tile over 10 Gb/s (%.9g s)",
                     mc_cost_strategy_name(want[k].strategy), c.bandwidth_s, want[k].crossings,
                     nic);
    }
    mc_cost_topo_free(ct);
    mc_task_free(t);
    mc_topo_free(topo);
}

/* xla and collectives redistribute inside one mesh: a tensor with several consumers is refused
 * with a message saying so, even when one consumer is the source's own mesh. */
static void test_same_mesh_strategies_refuse(void **state)
{
    (void)state;
    mc_topo_t *topo = topo_of(AWS);
    mc_task_t *t = task_of("mesh A={x:2}@0..1\nmesh B={x:2}@4..5\n"
                           "move h: f32[8,8] A[x,_] -> A[_,x], B[x,_]\n");
    static const char *strategies[] = {"xla", "collectives"};
    for (int k = 0; k < 2; k++) {
        mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
        mc_sched_t *s = NULL;
        mc_err_t err = {0};
        char want[160];
        assert_int_equal(mc_synth(strategies[k], t, topo, &opts, &s, &err), MC_ERR_UNSUPPORTED);
        assert_null(s);
        snprintf(want, sizeof want, "strategy %s: tensor h has 2 consumers; expected one "
                 "(collectives redistribute inside one mesh)", strategies[k]);
        assert_string_equal(err.msg, want);
    }
    mc_task_free(t);
    mc_topo_free(topo);
}

/* Random several-consumer tasks on the paper's cluster and on two DGX-1: no strategy's simulated
 * schedule beats the bound. */
static void test_sim_never_beats_bound(void **state)
{
    (void)state;
    static const char *topos[] = {AWS, "topologies/dgx1-x2.xml"};
    static const char *strategies[] = {"p2p", "alpa-bcast", "meshcast"};
    int timed = 0;
    for (size_t k = 0; k < sizeof(topos) / sizeof(topos[0]); k++) {
        mc_topo_t *topo = topo_of(topos[k]);
        for (int iter = 0; iter < 12; iter++) {
            char multi[4096], apart[4096];
            random_fan(multi, apart, sizeof(multi), topo->ngpus - topo->ngpus % 3, 1 << 14);
            mc_task_t *t = task_of(multi);
            mc_bound_t b;
            mc_err_t err = {0};
            if (mc_task_bound(t, topo, &b, &err) != MC_OK)
                fail_msg("%s\n%s", multi, err.msg);
            for (size_t s = 0; s < sizeof(strategies) / sizeof(strategies[0]) && t->npieces; s++) {
                mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
                opts.rlimit = 200000;
                opts.budget_s = 1000;
                mc_sched_t *sc = NULL;
                mc_sim_result_t r;
                /* alpa-bcast refuses a consumer sharing a GPU with the source: its own rule. */
                if (mc_synth(strategies[s], t, topo, &opts, &sc, &err) != MC_OK)
                    continue;
                if (mc_sim_run_totals(sc, topo, &r, &err) != MC_OK)
                    fail_msg("%s\n%s: %s", multi, strategies[s], err.msg);
                if (r.makespan_s < b.seconds * (1 - 1e-9))
                    fail_msg("%s\n%s on %s simulated %.9g s, below the bound %.9g s (%s)", multi,
                             strategies[s], topos[k], r.makespan_s, b.seconds,
                             mc_bound_kind_str(b.binding));
                timed++;
                mc_sim_result_free(&r);
                mc_sched_free(sc);
            }
            mc_task_free(t);
        }
        mc_topo_free(topo);
    }
    assert_true(timed >= 48);
}

static void expect_error(const char *text, const char *want)
{
    mc_task_t *t = NULL;
    mc_err_t err = {0};
    assert_int_not_equal(mc_task_parse_text(text, "bad.task", &t, &err), MC_OK);
    assert_null(t);
    if (!strstr(err.msg, want))
        fail_msg("got: %s\nexpected it to contain: %s", err.msg, want);
}

static void test_parse_errors(void **state)
{
    (void)state;
    const char *meshes = "mesh A={x:1}@0\nmesh B={x:2}@4..5\nmesh C={x:2}@5..6\n";
    char text[1024];
    snprintf(text, sizeof(text), "%smove a: f32[4,4] A[_,_] -> B[x,_], C[_,x]\n", meshes);
    expect_error(text, "bad.task:4: consumer mesh C shares GPU 5 with consumer mesh B; expected "
                       "consumers on disjoint meshes (a GPU holds one destination tile of a "
                       "tensor) at column 31");
    snprintf(text, sizeof(text), "%smove a: f32[4,4] A[_,_] -> B[x,_], B[_,x]\n", meshes);
    expect_error(text, "bad.task:4: consumer mesh B shares GPU 4 with consumer mesh B");
    snprintf(text, sizeof(text), "%smove a: f32[4,4] A[_,_] -> B[x,_], f16[4,4] C[_,x]\n", meshes);
    expect_error(text, "bad.task:4: dtype f16 does not match the source's f32 at column 31");
    snprintf(text, sizeof(text), "%smove a: f32[4,4] A[_,_] -> B[x,_],\n", meshes);
    expect_error(text, "bad.task:4: expected the destination layout at column 30");
    snprintf(text, sizeof(text), "%smove a: f32[4,4] A[_,_] -> B[x,_] C[_,x]\n", meshes);
    expect_error(text, "bad.task:4: expected the end of the move");
    /* Nine consumers: one more than a tensor may have. */
    int off = snprintf(text, sizeof(text), "mesh A={x:1}@0\n");
    for (int i = 0; i < 9; i++)
        off += snprintf(text + off, sizeof(text) - (size_t)off, "mesh M%d={x:1}@%d\n", i, i + 1);
    off += snprintf(text + off, sizeof(text) - (size_t)off, "move a: f32[4] A[_] -> M0[_]");
    for (int i = 1; i < 9; i++)
        off += snprintf(text + off, sizeof(text) - (size_t)off, ", M%d[_]", i);
    snprintf(text + off, sizeof(text) - (size_t)off, "\n");
    expect_error(text, "bad.task:11: expected at most 8 consumers of one tensor");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces_span_consumers),
        cmocka_unit_test(test_same_needs_as_one_move_per_consumer),
        cmocka_unit_test(test_bound_counts_shared_bytes_once),
        cmocka_unit_test(test_meshcast_crosses_once),
        cmocka_unit_test(test_cost_model_counts_consumers),
        cmocka_unit_test(test_same_mesh_strategies_refuse),
        cmocka_unit_test(test_sim_never_beats_bound),
        cmocka_unit_test(test_parse_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
