/* Tests for the 'collectives' strategy (normal form of arXiv 2112.01075) on one DGX H100 host of
 * topologies/dgx-h100-x4.xml: the plans it picks, the worked numbers of the research note
 * (array-redistribution.md section 5.5), its memory against brute force, --memory-limit, the
 * cases it refuses; and an all-gather round NCCL's rings on the DGX-1. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/collectives/collective_internal.h"

#define TOPO "topologies/dgx-h100-x4.xml"

typedef struct coll_fixture {
    mc_topo_t *topo;
    mc_task_t *task;
    mc_sched_t *s;
} coll_fixture_t;

static int coll_setup(void **state)
{
    coll_fixture_t *f = mc_xcalloc(1, sizeof(*f));
    mc_err_t err = {0};
    if (mc_topo_load(TOPO, &f->topo, &err) != MC_OK) {
        print_error("%s\n", err.msg);
        return -1;
    }
    *state = f;
    return 0;
}

static void coll_drop(coll_fixture_t *f)
{
    mc_sched_free(f->s);
    mc_task_free(f->task);
    f->s = NULL;
    f->task = NULL;
}

static int coll_teardown(void **state)
{
    coll_fixture_t *f = *state;
    coll_drop(f);
    mc_topo_free(f->topo);
    free(f);
    return 0;
}

static void coll_task(coll_fixture_t *f, const char *text)
{
    mc_err_t err = {0};
    coll_drop(f);
    assert_int_equal(mc_task_parse_text(text, "test", &f->task, &err), MC_OK);
    assert_int_equal(mc_task_split(f->task, &err), MC_OK);
}

/* Runs a strategy through mc_synth (which validates) with a memory limit (0: none). */
static void coll_synth_ok(coll_fixture_t *f, const char *strategy, const char *text,
                          uint64_t limit)
{
    mc_synth_opts_t o = MC_SYNTH_OPTS_DEFAULT;
    mc_err_t err = {0};
    o.memory_limit = limit;
    coll_task(f, text);
    mc_status_t st = mc_synth(strategy, f->task, f->topo, &o, &f->s, &err);
    if (st != MC_OK)
        print_error("%s\n", err.msg);
    assert_int_equal(st, MC_OK);
    assert_int_equal(mc_sched_validate(f->s, f->topo, NULL), 0);
}

/* Bytes the schedule delivers to a GPU. */
static uint64_t coll_recv_bytes(const mc_sched_t *s, int gpu)
{
    uint64_t n = 0;
    for (int t = 0; t < s->ntrees; t++)
        for (int e = 0; e < s->trees[t].nedges; e++)
            n += s->trees[t].edges[e].child == gpu ? s->trees[t].bytes : 0;
    return n;
}

static int box_has(const mc_box_t *b, const int64_t *x, int nd)
{
    for (int d = 0; d < nd; d++)
        if (x[d] < b->lo[d] || x[d] >= b->hi[d])
            return 0;
    return 1;
}

/* Element coordinates of linear index e (row-major). */
static void coords(const mc_layout_t *l, int64_t e, int64_t *x)
{
    for (int d = l->ndims - 1; d >= 0; d--) {
        x[d] = e % l->shape[d];
        e /= l->shape[d];
    }
}

/* Plans tensor 0 of the fixture's task with plan, lowers it, and checks the lowering's received
 * bytes and largest live tile per device against a walk over every element: at each step a
 * device receives the elements of its next tile that are not in its current one, unless it
 * already has them or no device needs them from another. Also checks that on even shapes no live
 * tile exceeds max(source tile, destination tile), (live_peak != 0) the largest live tile, and
 * (with the strategy's plan) that the schedule the strategy made delivers the same bytes. */
static void coll_check_plan(coll_fixture_t *f, coll_plan_fn plan, int uneven, uint64_t live_peak)
{
    mc_err_t err = {0};
    coll_prog_t p;
    coll_stats_t st = {0};
    const mc_tensor_move_t *mv = &f->task->tensors[0];
    assert_int_equal(coll_prog_init(&p, f->task, 0, "collectives", &err), MC_OK);
    plan(&p);
    mc_sched_t *s = mc_sched_new(f->task, f->topo, "collectives");
    assert_int_equal(coll_lower(s, f->topo, 0, &p, 0, &(mc_synth_opts_t){0}, &st, &err), MC_OK);
    const mc_mesh_t *m = &p.space->meshes[0];
    int nd = mv->src.ndims, ndev = m->ndevices;
    int64_t nel = 1, x[MC_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        nel *= mv->src.shape[d];
    uint64_t esz = (uint64_t)mc_dtype_size(mv->src.dtype), max_live = 0;
    char *have = mc_xcalloc((size_t)(nel * ndev), 1), *needed = mc_xcalloc((size_t)nel, 1);
    uint64_t *recv = mc_xcalloc((size_t)ndev, sizeof(uint64_t));
    mc_box_t *cur = mc_xmalloc(sizeof(mc_box_t) * (size_t)ndev);
    mc_box_t *next = mc_xmalloc(sizeof(mc_box_t) * (size_t)ndev);
    for (int64_t e = 0; e < nel; e++) {
        coords(&mv->src, e, x);
        for (int q = 0; q < ndev; q++) {
            mc_box_t a, b;
            mc_layout_tile(f->task, &mv->src, m->devices[q], &a);
            mc_layout_tile(f->task, &mv->dst, m->devices[q], &b);
            have[e * ndev + q] = (char)box_has(&a, x, nd);
            needed[e] |= (char)(box_has(&b, x, nd) && !have[e * ndev + q]);
        }
    }
    for (int i = 0; i <= p.nsteps; i++) {
        for (int q = 0; q < ndev; q++) {
            mc_layout_tile(p.space, coll_prog_layout(&p, i), m->devices[q], &next[q]);
            uint64_t live = mc_box_elems(&next[q], nd) * esz;
            assert_true(live <= st.live_peak_bytes[q]);
            max_live = live > max_live ? live : max_live;
        }
        for (int64_t e = 0; i && e < nel; e++) {
            coords(&mv->src, e, x);
            for (int q = 0; q < ndev; q++)
                if (needed[e] && box_has(&next[q], x, nd) && !box_has(&cur[q], x, nd) &&
                    !have[e * ndev + q]) {
                    have[e * ndev + q] = 2; /* received in this step */
                    recv[q] += esz;
                }
        }
        memcpy(cur, next, sizeof(mc_box_t) * (size_t)ndev);
    }
    for (int q = 0; q < ndev; q++) {
        int g = m->devices[q];
        uint64_t src = mc_task_src_bytes(f->task, g), dst = mc_task_dst_bytes(f->task, g);
        assert_int_equal(st.recv_bytes[q], recv[q]);
        if (plan == coll_plan_collectives)
            assert_int_equal(coll_recv_bytes(f->s, g), recv[q]);
        if (!uneven)
            assert_true(st.live_peak_bytes[q] <= (src > dst ? src : dst));
    }
    if (live_peak)
        assert_int_equal(max_live, live_peak);
    free(have);
    free(needed);
    free(recv);
    free(cur);
    free(next);
    coll_stats_free(&st);
    mc_sched_free(s);
    coll_prog_free(&p);
}

/* Both plans of the strategy's task checked by coll_check_plan. */
static void coll_check_program(coll_fixture_t *f, int uneven, uint64_t live_peak)
{
    coll_check_plan(f, coll_plan_normal_form, uneven, live_peak);
    coll_check_plan(f, coll_plan_collectives, uneven, live_peak);
}

/* The research note's worked case (openxla/xla #15207): 640 elements received per device by the
 * two all-to-alls, against a need of 448. */
#define WORKED "mesh M={x:4,y:2}@0..7\nmove f32[16,16,16] M[y,_,x] -> M[_,(x,y),_]\n"

static void test_worked_two_alltoalls(void **state)
{
    coll_fixture_t *f = *state;
    mc_err_t err = {0};
    coll_prog_t p;
    coll_stats_t st = {0};
    coll_task(f, WORKED);
    assert_int_equal(coll_prog_init(&p, f->task, 0, "collectives", &err), MC_OK);
    coll_plan_normal_form(&p);
    char *desc = coll_prog_describe(&p);
    assert_string_equal(desc, "all-to-all(x),all-to-all(y)");
    free(desc);
    f->s = mc_sched_new(f->task, f->topo, "collectives");
    assert_int_equal(coll_lower(f->s, f->topo, 0, &p, 0, &(mc_synth_opts_t){0}, &st, &err), MC_OK);
    f->s->nphases = st.nphases;
    mc_sched_plan_rates(f->s, f->topo);
    assert_int_equal(st.nphases, 2);
    for (int g = 0; g < 8; g++) {
        assert_int_equal(st.recv_bytes[g], 640 * 4);
        assert_int_equal(coll_recv_bytes(f->s, g), 640 * 4);
        assert_int_equal(mc_task_need_bytes(f->task, g), 448 * 4);
        /* Shards: 512 + 512 - 64 shared elements. The first all-to-all leaves on each GPU 3 x 64
         * elements that the second one forwards: 192 elements staged. */
        assert_int_equal(mc_sched_peak_mem(f->s, g), (960 + 192) * 4);
    }
    /* Stated: the shards plus one array of max(512, 512) elements; validate checks it. */
    f->s->mem_limit = coll_mem_bound(f->s, 0);
    assert_int_equal(f->s->mem_limit, (960 + 512) * 4);
    assert_int_equal(mc_sched_validate(f->s, f->topo, NULL), 0);
    coll_stats_free(&st);
    coll_prog_free(&p);
}

/* The strategy fuses the two all-to-alls into one: exactly the need, nothing staged. */
static void test_worked_fused(void **state)
{
    coll_fixture_t *f = *state;
    coll_synth_ok(f, "collectives", WORKED, 0);
    assert_string_equal(f->s->params, "t0=all-to-all(x+y)");
    assert_int_equal(f->s->nphases, 1);
    for (int g = 0; g < 8; g++)
        assert_int_equal(coll_recv_bytes(f->s, g), 448 * 4);
    assert_int_equal(coll_sched_peak(f->s, f->topo, NULL), 960 * 4);
    assert_int_equal(f->s->mem_limit, (960 + 512) * 4);
}

static void test_worked_xla_replicates(void **state)
{
    coll_fixture_t *f = *state;
    coll_synth_ok(f, "xla", WORKED, 0);
    assert_string_equal(f->s->params, "t0=all-gather(x+y),slice(x+y)");
    /* XLA's all-gather brings each GPU 3584 elements. The 64-element cells that their only
     * destination already holds (8 of them) are in no piece and cannot be in a schedule, so the
     * schedule moves 56 cells, 49 of them to each GPU (7 it holds): 3136 elements. */
    for (int g = 0; g < 8; g++)
        assert_int_equal(coll_recv_bytes(f->s, g), 3136 * 4);
    /* 42 of the 49 received cells are only staged (the GPU needs 7). */
    assert_int_equal(coll_sched_peak(f->s, f->topo, NULL), (960 + 42 * 64) * 4);
}

/* XLA's grouping of equal dimensions: on [x,y,_,z] -> [x,_,(y,z),_] each half of dimension 0
 * is resharded by its own four GPUs, so a GPU receives at most the rest of its group's half
 * (16384 - 4096 elements), where full replication over all eight would bring it cells of the
 * other half too. */
static void test_xla_groups(void **state)
{
    coll_fixture_t *f = *state;
    coll_synth_ok(f, "xla", "mesh M={x:2,y:2,z:2}@0..7\n"
                            "move f32[8,16,16,16] M[x,y,_,z] -> M[x,_,(y,z),_]\n", 0);
    for (int g = 0; g < 8; g++) {
        assert_true(coll_recv_bytes(f->s, g) > 0);
        assert_true(coll_recv_bytes(f->s, g) <= (16384 - 4096) * 4);
    }
}

/* The OCaml implementation's README example: {x:2,y:3}, an array of 6, [x] -> [y]: DynSlice,
 * AllPermute, AllGather, local sizes 3, 1, 1, 2. */
static void test_ocaml_example(void **state)
{
    coll_fixture_t *f = *state;
    coll_synth_ok(f, "collectives", "mesh M={x:2,y:3}@0..5\nmove f32[6] M[x] -> M[y]\n", 0);
    assert_string_equal(f->s->params, "t0=slice(y),permute,all-gather(x)");
    coll_check_program(f, 0, 3 * 4);
}

static void test_plans(void **state)
{
    coll_fixture_t *f = *state;
    static const struct {
        const char *task, *strategy, *params;
    } cases[] = {
        /* swap of equal-size axes between dimensions: one permute */
        {"mesh M={x:4,y:2}@0..7\nmove f32[16,8] M[(x,y),_] -> M[(y,x),_]\n", "collectives",
         "t0=permute"},
        {"mesh M={a:2,b:2,c:2}@0..7\nmove f32[8,8,8] M[a,b,c] -> M[c,b,a]\n", "collectives",
         "t0=permute"},
        /* one 8-way all-to-all: the three axes move as one block */
        {"mesh M={a:2,b:2,c:2}@0..7\nmove f32[8,8,8] M[(a,b,c),_,_] -> M[_,(a,b,c),_]\n",
         "collectives", "t0=all-to-all(a+b+c)"},
        /* axis order matters: (tp,dp) is a local slice (test_local_slice), (dp,tp) is not */
        {"mesh M={dp:2,tp:4}@0..7\nmove f32[64,8] M[tp,_] -> M[(dp,tp),_]\n", "collectives",
         "t0=slice(dp),permute"},
        {"mesh M={x:4,y:2}@0..7\nmove f32[64,8] M[x,_] -> M[_,y]\n", "collectives",
         "t0=slice(y),all-gather(x)"},
        /* ReaL: {pp:2,dp:2,tp:2} -> {dp:2,tp:4} on the same GPUs, refined to three axes */
        {"mesh A={pp:2,dp:2,tp:2}@0..7\nmesh B={dp:2,tp:4}@0..7\n"
         "move bf16[8,16,8] A[pp,tp,_] -> B[_,tp,_]\n", "collectives", "t0=all-to-all(pp+dp+tp)"},
        /* XLA's rungs */
        {"mesh M={x:4,y:2}@0..7\nmove f32[16,8] M[(x,y),_] -> M[(y,x),_]\n", "xla", "t0=permute"},
        {"mesh M={x:8}@0..7\nmove f32[16,8] M[x,_] -> M[_,x]\n", "xla", "t0=all-to-all(x)"},
        {"mesh M={x:4,y:2}@0..7\nmove f32[16,8] M[x,y] -> M[x,_]\n", "xla", "t0=all-gather(y)"},
        /* TryComplexReshardHandling, PatternMatchMergeOrSplitSharding: [X,Y] -> [X*Y,1] */
        {"mesh M={x:4,y:2}@0..7\nmove f32[16,8] M[x,y] -> M[(x,y),_]\n", "xla",
         "t0=all-to-all(x+y)"},
        /* ReshardPartialReplicateWithAllToAll both ways: [2,3] <-> [1,2,3] last_tile_dim_replicate */
        {"mesh M={a:2,b:3}@0..5\nmove f32[12,12] M[a,b] -> M[_,a]\n", "xla",
         "t0=all-gather(b),all-to-all(a)"},
        {"mesh M={a:2,b:3}@0..5\nmove f32[12,12] M[_,a] -> M[a,b]\n", "xla",
         "t0=all-to-all(a+b),slice(b)"},
        /* TryComplexReshardHandling, PatternMatchPartiallyReplicateDim: gather x, all-to-all */
        {"mesh M={x:2,y:3}@0..5\nmove f32[12,12] M[x,y] -> M[y,_]\n", "xla",
         "t0=all-gather(x),all-to-all(y)"},
        /* TryComplexReshardHandling, partially replicated to tiled: y moves onto dimension 1 */
        {"mesh M={x:2,y:2}@0..3\nmove f32[8,8,8] M[x,_,_] -> M[_,y,x]\n", "xla",
         "t0=slice(y),all-to-all(x+y)"},
        /* grouping on dimension 0 (x on both sides): the replication stays inside each group */
        {"mesh M={x:2,y:2,z:2}@0..7\nmove f32[8,16,16,16] M[x,y,_,z] -> M[x,_,(y,z),_]\n", "xla",
         "t0=all-gather(y+z),slice(y+z)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        coll_synth_ok(f, cases[i].strategy, cases[i].task, 0);
        if (strcmp(f->s->params, cases[i].params))
            print_error("case %zu: %s\n", i, f->s->params);
        assert_string_equal(f->s->params, cases[i].params);
    }
}

/* A pure local slice moves nothing: no tree at all. */
static void check_local(coll_fixture_t *f, const char *task, coll_plan_fn plan, const char *want)
{
    mc_err_t err = {0};
    coll_prog_t p;
    coll_task(f, task);
    assert_int_equal(f->task->npieces, 0);
    assert_int_equal(coll_prog_init(&p, f->task, 0, "test", &err), MC_OK);
    plan(&p);
    char *desc = coll_prog_describe(&p);
    assert_string_equal(desc, want);
    free(desc);
    f->s = mc_sched_new(f->task, f->topo, "test");
    assert_int_equal(coll_lower(f->s, f->topo, 0, &p, 0, &(mc_synth_opts_t){0}, NULL, &err), MC_OK);
    assert_int_equal(f->s->ntrees, 0);
    coll_prog_free(&p);
}

static void test_local_slice(void **state)
{
    check_local(*state, "mesh M={dp:2,tp:4}@0..7\nmove f32[64,8] M[tp,_] -> M[(tp,dp),_]\n",
                coll_plan_collectives, "slice(dp)");
    check_local(*state, "mesh M={x:4,y:2}@0..7\nmove f32[16,8] M[x,_] -> M[x,y]\n",
                coll_plan_xla, "slice(y)");
}

/* Received bytes and live tiles of every step against an element-by-element walk, and the normal
 * form's bound max(source tile, destination tile) on even shapes. */
static void test_memory_brute_force(void **state)
{
    coll_fixture_t *f = *state;
    static const char *even[] = {
        WORKED,
        "mesh M={a:2,b:2,c:2}@0..7\nmove f32[8,8,8] M[(a,b,c),_,_] -> M[_,_,(c,b,a)]\n",
        "mesh M={a:2,b:2,c:2}@0..7\nmove f32[8,8,8] M[a,_,_] -> M[_,b,c]\n",
        "mesh M={a:2,b:2,c:2}@0..7\nmove f32[8,8,8] M[(a,b),c,_] -> M[_,_,(b,c)]\n",
        "mesh M={x1:2,x2:2,y1:3}@0..11\nmove f32[12,12] M[(x2,x1),y1] -> M[y1,(x2,x1)]\n",
        "mesh M={x:2,y:3}@0..5\nmove f32[6,4] M[x,_] -> M[y,_]\n",
    };
    for (size_t i = 0; i < sizeof(even) / sizeof(even[0]); i++) {
        coll_synth_ok(f, "collectives", even[i], 0);
        coll_check_program(f, 0, 0);
    }
    static const char *uneven[] = {
        "mesh M={a:2,b:2,c:2}@0..7\nmove f32[17,5] M[(a,b,c),_] -> M[_,(c,b,a)]\n",
        "mesh M={a:2,b:2,c:2}@0..7\nmove f32[33,16,8,1] M[(b,a),c,_,_] -> M[_,_,(a,c),b]\n",
    };
    for (size_t i = 0; i < sizeof(uneven) / sizeof(uneven[0]); i++) {
        coll_synth_ok(f, "collectives", uneven[i], 0);
        coll_check_program(f, 1, 0);
    }
}

static void test_memory_limit(void **state)
{
    coll_fixture_t *f = *state;
    mc_synth_opts_t o = MC_SYNTH_OPTS_DEFAULT;
    mc_err_t err = {0};
    o.memory_limit = 960 * 4 - 1;
    coll_task(f, WORKED);
    assert_int_equal(mc_synth("collectives", f->task, f->topo, &o, &f->s, &err), MC_ERR_INVALID);
    assert_null(f->s);
    assert_non_null(strstr(err.msg, "strategy collectives cannot stay within --memory-limit"));
    assert_non_null(strstr(err.msg, "needs 3840 bytes"));
    assert_int_equal(mc_synth("xla", f->task, f->topo, &o, &f->s, &err), MC_ERR_INVALID);
    assert_non_null(strstr(err.msg, "strategy xla"));
    assert_non_null(strstr(err.msg, "needs 14592 bytes"));
    o.memory_limit++;
    assert_int_equal(mc_synth("collectives", f->task, f->topo, &o, &f->s, &err), MC_OK);
    assert_int_equal(f->s->mem_limit, 3840);
}

/* The meshcast strategy's choice, with the xla schedule standing in for its trees. */
static void referee(coll_fixture_t *f, uint64_t limit, double t, const char *want_prefix)
{
    mc_synth_opts_t o = MC_SYNTH_OPTS_DEFAULT;
    mc_err_t err = {0};
    mc_sched_t *before = f->s;
    char strategy[sizeof before->strategy];
    memcpy(strategy, before->strategy, sizeof strategy);
    o.memory_limit = limit;
    assert_int_equal(mc_synth_collectives_referee(f->task, f->topo, &o, 0, &f->s, &t, &err),
                     MC_OK);
    if (!want_prefix) {
        assert_ptr_equal(f->s, before);
        return;
    }
    assert_string_equal(f->s->strategy, strategy);
    if (strncmp(f->s->params, want_prefix, strlen(want_prefix)))
        print_error("%s\n", f->s->params);
    assert_int_equal(strncmp(f->s->params, want_prefix, strlen(want_prefix)), 0);
    assert_int_equal(mc_sched_validate(f->s, f->topo, NULL), 0);
}

static void test_referee(void **state)
{
    coll_fixture_t *f = *state;
    coll_synth_ok(f, "xla", WORKED, 0);
    referee(f, 0, 1e-9, NULL); /* trees faster than any collective: they stay */
    referee(f, 0, 1.0, "plan=collectives(t0=all-to-all(x+y)) why=faster");
    coll_synth_ok(f, "xla", WORKED, 0);
    /* xla needs 14592 bytes per GPU; the collective form 3840 */
    referee(f, 8192, 1e-9, "plan=collectives(t0=all-to-all(x+y)) why=memory");
    assert_int_equal(f->s->mem_limit, 5888);
    coll_synth_ok(f, "xla", WORKED, 0);
    referee(f, 3000, 1.0, NULL); /* neither fits */
    coll_synth_ok(f, "p2p", "mesh A={x:4}@0..3\nmesh B={x:4}@4..7\nmove f32[8] A[x] -> B[x]\n", 0);
    referee(f, 0, 1e-9, NULL); /* cross-mesh: not for collectives, and faster than Alpa's */
    coll_synth_ok(f, "p2p", "mesh A={x:4}@0..3\nmesh B={x:4}@4..7\nmove f32[8] A[x] -> B[x]\n", 0);
    /* cross-mesh and slower than Alpa's plan: it replaces them (its params, the schedule's name) */
    referee(f, 0, 1.0, "plan=alpa-p2p(sender=least-loaded");
}

static void test_refused(void **state)
{
    coll_fixture_t *f = *state;
    mc_err_t err = {0};
    coll_task(f, "mesh A={x:4}@0..3\nmesh B={x:4}@4..7\nmove f32[8] A[x] -> B[x]\n");
    assert_int_equal(mc_synth("collectives", f->task, f->topo, NULL, &f->s, &err),
                     MC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "expected a same-mesh redistribution"));
    coll_task(f, "mesh A={x:2,y:3}@0..5\nmesh B={x:3,y:2}@0..5\nmove f32[6,6] A[x,_] -> B[_,y]\n");
    assert_int_equal(mc_synth("xla", f->task, f->topo, NULL, &f->s, &err), MC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "no common refinement"));
    coll_task(f, "mesh A={x:4}@0..3\nmove f32[10] A[x{4,2,2,2}] -> A[_]\n");
    assert_int_equal(mc_synth("collectives", f->task, f->topo, NULL, &f->s, &err),
                     MC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "explicit shard sizes"));
}

/* An all-gather as NCCL runs it, on the DGX-1 hybrid cube-mesh (each GPU has NVLinks to four
 * others; the other pairs of the two quads meet only over PCIe and QPI, 6e9 B/s): every hop of
 * xla's and collectives' all-gather is one NVLink, round NCCL's searched rings, and the schedule
 * takes nccl-ring's time to the picosecond (the same chains). Sent from each holder to every
 * peer, three of each block's seven copies crossed QPI. */
static void test_allgather_rings(void **state)
{
    (void)state;
    mc_topo_t *topo = NULL;
    mc_task_t *task = NULL;
    mc_err_t err = {0};
    assert_int_equal(mc_topo_load("topologies/dgx1-v100-hybrid-cube-mesh-topo.xml", &topo, &err),
                     MC_OK);
    assert_int_equal(mc_task_parse_text("mesh M={g:8}@0..7\nmove f32[8,1048576] M[g,_] -> M[_,_]\n",
                                        "test", &task, &err), MC_OK);
    assert_int_equal(mc_task_split(task, &err), MC_OK);
    double want = 0;
    const char *strategies[] = {"nccl-ring", "xla", "collectives"};
    for (int k = 0; k < 3; k++) {
        mc_sched_t *s = NULL;
        mc_sim_result_t sim = {0};
        assert_int_equal(mc_synth(strategies[k], task, topo, NULL, &s, &err), MC_OK);
        assert_int_equal(mc_sched_validate(s, topo, NULL), 0);
        for (int t = 0; t < s->ntrees; t++)
            for (int e = 0; e < s->trees[t].nedges; e++) {
                const mc_tree_edge_t *ed = &s->trees[t].edges[e];
                assert_int_equal(ed->nlinks, 1);
                assert_int_equal(topo->links[ed->links[0]].kind, MC_LINK_NVL);
            }
        assert_int_equal(mc_sim_run_totals(s, topo, &sim, &err), MC_OK);
        if (k == 0)
            want = sim.makespan_s;
        assert_true(sim.makespan_s == want);
        mc_sim_result_free(&sim);
        mc_sched_free(s);
    }
    mc_task_free(task);
    mc_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_two_alltoalls),
        cmocka_unit_test(test_worked_fused),
        cmocka_unit_test(test_worked_xla_replicates),
        cmocka_unit_test(test_xla_groups),
        cmocka_unit_test(test_ocaml_example),
        cmocka_unit_test(test_plans),
        cmocka_unit_test(test_local_slice),
        cmocka_unit_test(test_memory_brute_force),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_referee),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_allgather_rings),
    };
    return cmocka_run_group_tests(tests, coll_setup, coll_teardown);
}
