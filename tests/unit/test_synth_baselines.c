/* Tests for the baseline strategies on the paper's cluster (5 hosts x 4 V100, one 1.25e9 B/s NIC
 * per host): who sends what to whom, the phases, the ring chains, and simulated times derived by
 * hand from the NIC bandwidth. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/synth.h"

#define PAPER_TOPO "topologies/aws-p3.8xlarge-x5.xml"
#define NIC_BW 1.25e9
#define GIB 1073741824.0

typedef struct fixture {
    mc_topo_t *topo;
    mc_task_t *task;
    mc_sched_t *s;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = mc_xcalloc(1, sizeof(*f));
    mc_err_t err = {0};
    if (mc_topo_load(PAPER_TOPO, &f->topo, &err) != MC_OK) {
        print_error("%s\n", err.msg);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    mc_sched_free(f->s);
    mc_task_free(f->task);
    mc_topo_free(f->topo);
    free(f);
    return 0;
}

/* Builds and splits a task, runs a strategy through mc_synth (which validates). */
static void synth(fixture_t *f, const char *strategy, const char *text)
{
    mc_err_t err = {0};
    mc_sched_free(f->s);
    mc_task_free(f->task);
    f->s = NULL;
    f->task = NULL;
    assert_int_equal(mc_task_parse_text(text, "test", &f->task, &err), MC_OK);
    assert_int_equal(mc_task_split(f->task, &err), MC_OK);
    mc_status_t st = mc_synth(strategy, f->task, f->topo, NULL, &f->s, &err);
    if (st != MC_OK)
        print_error("%s\n", err.msg);
    assert_int_equal(st, MC_OK);
    assert_int_equal(mc_sched_validate(f->s, f->topo, NULL), 0);
}

static double simulate(fixture_t *f)
{
    mc_sim_result_t r = {0};
    mc_err_t err = {0};
    assert_int_equal(mc_sim_run(f->s, f->topo, &r, &err), MC_OK);
    double t = r.makespan_s;
    mc_sim_result_free(&r);
    mc_bound_t b;
    assert_int_equal(mc_task_bound(f->task, f->topo, &b, &err), MC_OK);
    assert_true(t >= b.seconds * (1 - 1e-9));
    return t;
}

/* The tree whose (single) edge ends at dest. */
static const mc_tree_t *tree_to(const mc_sched_t *s, int dest)
{
    for (int i = 0; i < s->ntrees; i++)
        if (s->trees[i].nedges == 1 && s->trees[i].edges[0].child == dest)
            return &s->trees[i];
    fail_msg("no tree reaches GPU %d", dest);
    return NULL;
}

static const char case1[] = "mesh A={host:2,gpu:4}@0..7\n"
                            "mesh B={host:2,gpu:4}@8..15\n"
                            "move i32[1024,1024,512] A[host,_,_] -> B[host,_,_]\n";

static const char case7[] = "mesh A={host:1,gpu:4}@0..3\n"
                            "mesh B={host:2,gpu:4}@4..11\n"
                            "move i32[1024,1024,512] A[gpu,_,_] -> B[_,_,_]\n";

/* Case 1, p2p: each destination GPU of host 2 pulls its 1 GiB half from GPU 0 (the first
 * replica), those of host 3 from GPU 4; 8 single-edge trees in one phase. GPU 0 sends 4 GiB
 * through host 0's NIC: 4 GiB / 1.25e9 B/s = 3.436 s. */
static void test_p2p_case1(void **state)
{
    fixture_t *f = *state;
    synth(f, "p2p", case1);
    assert_int_equal(f->s->ntrees, 8);
    assert_int_equal(f->s->nphases, 1);
    for (int d = 8; d < 16; d++) {
        const mc_tree_t *t = tree_to(f->s, d);
        assert_int_equal(t->root, d < 12 ? 0 : 4);
        assert_int_equal(t->phase, 0);
        assert_true(t->bytes == (uint64_t)GIB);
    }
    double t = simulate(f);
    assert_true(t >= 4 * GIB / NIC_BW);
    assert_true(t <= 4 * GIB / NIC_BW * 1.01);
}

/* Case 1, p2p-lb: loads start at 0 and grow by 2^28 elements per send, so the replicas of host
 * 2's destination tile are served by GPUs 0, 1, 2, 3 in turn (host 3's by 4..7). The NIC is
 * still shared by the four sends: same 3.436 s. */
static void test_p2p_lb_case1(void **state)
{
    fixture_t *f = *state;
    synth(f, "p2p-lb", case1);
    assert_int_equal(f->s->ntrees, 8);
    for (int d = 8; d < 16; d++)
        assert_int_equal(tree_to(f->s, d)->root, d - 8);
    double t = simulate(f);
    assert_true(t >= 4 * GIB / NIC_BW && t <= 4 * GIB / NIC_BW * 1.01);
}

/* Case 1, alpa-bcast: two works (host 0 -> host 2, host 1 -> host 3) share no host: one round;
 * each a ring chain root -> the four destination GPUs in rank order, run as two channels of half
 * the bytes each (NCCL duplicates its ring channels). 1 GiB crosses each NIC once, pipelined:
 * about 1 GiB / 1.25e9 = 0.859 s. */
static void test_alpa_bcast_case1(void **state)
{
    fixture_t *f = *state;
    synth(f, "alpa-bcast", case1);
    assert_int_equal(f->s->nphases, 1);
    assert_int_equal(f->s->ntrees, 4);
    for (int i = 0; i < 4; i++) {
        const mc_tree_t *t = &f->s->trees[i];
        assert_true(t->bytes == (uint64_t)GIB / 2);
        assert_true(t->offset == (uint64_t)(i % 2) * (uint64_t)GIB / 2);
        int base = t->root == 0 ? 8 : 12;
        assert_true(t->root == 0 || t->root == 4);
        assert_int_equal(t->nedges, 4);
        assert_int_equal(t->edges[0].parent, t->root);
        for (int e = 0; e < 4; e++)
            assert_int_equal(t->edges[e].child, base + e);
        for (int e = 1; e < 4; e++)
            assert_int_equal(t->edges[e].parent, base + e - 1);
        assert_true(t->nchunks > 1);
    }
    double t = simulate(f);
    assert_true(t >= GIB / NIC_BW);
    assert_true(t <= GIB / NIC_BW * 1.05);
}

/* The trees of phase ph, in schedule order, into out; returns how many. */
static int trees_in_phase(const mc_sched_t *s, int ph, const mc_tree_t **out, int max)
{
    int n = 0;
    for (int i = 0; i < s->ntrees; i++)
        if (s->trees[i].phase == ph) {
            assert_true(n < max);
            out[n++] = &s->trees[i];
        }
    return n;
}

/* Case 1, alpa-p2p: B[host,_,_] is replicated over gpu inside each host and its node entry
 * (dimension 0, 2 shards) covers B's 2 hosts, so Alpa's _rewrite_allgather_spec adds
 * gcd(4, 512) = 4 shards to dimension 0: GPU 8 + k receives rows [128k, 128k + 128) of the top
 * half (256 MiB) from the least-loaded holder, GPU k (GPUs 12..15 from 4..7), in phase 0; in phase
 * 1 each part rings through the other three GPUs of its host (8 -> 9 -> 10 -> 11, 9 -> 10 -> 11 ->
 * 8, ...). 1 GiB crosses each NIC once: 0.859 s, plus the NVLink all-gather. */
static void test_alpa_p2p_case1(void **state)
{
    fixture_t *f = *state;
    const mc_tree_t *t[16];
    synth(f, "alpa-p2p", case1);
    assert_int_equal(f->s->nphases, 2);
    assert_non_null(strstr(f->s->params, "local-allgather=t0:d0x4"));
    assert_int_equal(trees_in_phase(f->s, 0, t, 16), 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(t[i]->nedges, 1);
        int d = t[i]->edges[0].child;
        assert_int_equal(t[i]->root, d - 8);
        assert_true(t[i]->bytes == (uint64_t)GIB / 4);
        assert_true(t[i]->offset == (uint64_t)(d % 4) * (uint64_t)GIB / 4);
    }
    assert_int_equal(trees_in_phase(f->s, 1, t, 16), 8);
    for (int i = 0; i < 8; i++) {
        int r = t[i]->root, base = r < 12 ? 8 : 12;
        assert_true(t[i]->offset == (uint64_t)(r % 4) * (uint64_t)GIB / 4);
        assert_int_equal(t[i]->nedges, 3);
        for (int e = 0; e < 3; e++)
            assert_int_equal(t[i]->edges[e].child, base + (r - base + e + 1) % 4);
    }
    double time = simulate(f);
    assert_true(time >= GIB / NIC_BW && time <= GIB / NIC_BW * 1.10);
}

/* Alpa's conditions for the rewrite. A destination replicated across hosts (node entry
 * replicated: 1 shard < 2 hosts) or one whose node entry is the replication (B[gpu,_]: the host
 * axis, stride 4, is the replicated one) is plain send/recv, one phase, as p2p-lb. On one host a
 * fully replicated destination is rewritten, dimension by dimension: i32[2,1024] over 4 replicas
 * takes gcd(4, 2) = 2 shards on dimension 0, then gcd(2, 1024) = 2 on dimension 1, so GPU 5
 * (replica 1) receives row 0, columns 512..1023: bytes [2048, 4096). */
static void test_alpa_p2p_conditions(void **state)
{
    fixture_t *f = *state;
    synth(f, "alpa-p2p", case7);
    assert_int_equal(f->s->nphases, 1);
    assert_non_null(strstr(f->s->params, "local-allgather=none"));
    synth(f, "alpa-p2p", "mesh A={host:2,gpu:4}@0..7\nmesh B={host:2,gpu:4}@8..15\n"
                         "move f32[64,64] A[host,_] -> B[gpu,_]\n");
    assert_int_equal(f->s->nphases, 1);
    synth(f, "alpa-p2p", "mesh A={x:1}@[0]\nmesh B={host:1,gpu:4}@4..7\n"
                         "move i32[2,1024] A[_,_] -> B[_,_]\n");
    assert_int_equal(f->s->nphases, 2);
    assert_non_null(strstr(f->s->params, "local-allgather=t0:d0x2+d1x2"));
    const mc_tree_t *t[8];
    assert_int_equal(trees_in_phase(f->s, 0, t, 8), 4);
    for (int i = 0; i < 4; i++) {
        int d = t[i]->edges[0].child - 4;
        assert_int_equal(t[i]->root, 0);
        assert_int_equal(t[i]->offset, 2048 * (uint64_t)d);
        assert_int_equal(t[i]->bytes, 2048);
    }
    assert_int_equal(trees_in_phase(f->s, 1, t, 8), 4);
}

/* A part Alpa slices out of the middle of a row-major tile is one message, not one per row:
 * i32[3,1024] replicated over host 1 takes gcd(4, 3) = 1 shard on dimension 0, then
 * gcd(4, 1024) = 4 on dimension 1, so replica k receives columns [256k, 256k + 256) of all 3 rows
 * (3 strided runs of 1 KiB) as one 3 KiB send, and the ring all-gather moves each part as one
 * chain. The parts are laid end to end in the piece: replica k's is bytes [3072k, 3072k + 3072).
 * The same parts, sent row by row, made 1.2 M trees of a 94 MB all-gather on MI250 hosts. */
static void test_alpa_p2p_strided_part(void **state)
{
    fixture_t *f = *state;
    synth(f, "alpa-p2p", "mesh A={x:1}@[0]\nmesh B={host:1,gpu:4}@4..7\n"
                         "move i32[3,1024] A[_,_] -> B[_,_]\n");
    assert_non_null(strstr(f->s->params, "local-allgather=t0:d1x4"));
    const mc_tree_t *t[8];
    assert_int_equal(trees_in_phase(f->s, 0, t, 8), 4);
    for (int i = 0; i < 4; i++) {
        int k = t[i]->edges[0].child - 4;
        assert_int_equal(t[i]->bytes, 3072);
        assert_int_equal(t[i]->offset, 3072 * (uint64_t)k);
    }
    assert_int_equal(trees_in_phase(f->s, 1, t, 8), 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(t[i]->bytes, 3072);
        assert_int_equal(t[i]->nedges, 3);
    }
}

/* nccl-ring, the calibration yardstick: an all-gather over host 0's four GPUs (NVLink lanes of
 * 20 GB/s, GPU 0 with 4) moves each GPU's quarter around NCCL's searched rings from its owner on:
 * at 20 GB/s every lane of GPU 0 carries a ring, so 4 rings (80 GB/s), doubled to 8 channels by
 * NCCL's connect step; each chain visits the other three GPUs, one NVLink hop each, all in one
 * phase. */
static void test_nccl_ring(void **state)
{
    fixture_t *f = *state;
    synth(f, "nccl-ring", "mesh M={x:4}@0..3\nmove f32[1024,1024] M[x,_] -> M[_,_]\n");
    assert_int_equal(f->s->nphases, 1);
    int per_piece[4] = {0};
    mc_err_t err = {0};
    for (int i = 0; i < f->s->ntrees; i++) {
        const mc_tree_t *t = &f->s->trees[i];
        int seen = 1 << t->root;
        assert_int_equal(t->phase, 0);
        assert_int_equal(t->nedges, 3);
        for (int e = 0; e < 3; e++) {
            mc_route_t r;
            assert_int_equal(t->edges[e].parent, e ? t->edges[e - 1].child : t->root);
            assert_int_equal(mc_topo_route(f->topo, t->edges[e].parent, t->edges[e].child, &r,
                                           &err),
                             MC_OK);
            assert_int_equal(r.nlinks, 1);
            assert_int_equal(f->topo->links[r.links[0]].kind, MC_LINK_NVL);
            seen |= 1 << t->edges[e].child;
        }
        assert_int_equal(seen, 15);
        per_piece[t->root]++;
    }
    for (int g = 0; g < 4; g++)
        assert_int_equal(per_piece[g], 8);
}

/* Case 7: four 512 MiB pieces, each on one GPU of host 0, all going to hosts 1 and 2: every pair
 * of works shares the sender host and the receivers, so the solver makes four rounds of one
 * broadcast each, chained 0..3 -> 4,5,6,7 -> 8,9,10,11. alpa-bcast issues all four at once (one
 * phase; Alpa's workers do not wait between rounds), alpa-bcast-rounds puts a barrier after each
 * round (four phases). Either way 2 GiB cross host 0's NIC: 1.718 s plus pipeline fills. */
static void test_alpa_bcast_case7(void **state)
{
    fixture_t *f = *state;
    static const char *variants[] = {"alpa-bcast", "alpa-bcast-rounds"};
    for (int v = 0; v < 2; v++) {
        synth(f, variants[v], case7);
        assert_int_equal(f->s->nphases, v ? 4 : 1);
        assert_int_equal(f->s->ntrees, 8); /* two channels each */
        int seen[4] = {0};
        for (int i = 0; i < 8; i++) {
            const mc_tree_t *t = &f->s->trees[i];
            assert_in_range(t->root, 0, 3);
            seen[t->phase]++;
            assert_int_equal(t->nedges, 8);
            for (int e = 0; e < 8; e++)
                assert_int_equal(t->edges[e].child, 4 + e);
        }
        for (int p = 0; p < 4; p++)
            assert_int_equal(seen[p], v ? 2 : p ? 0 : 8);
        double t = simulate(f);
        assert_true(t >= 2 * GIB / NIC_BW);
        assert_true(t <= 2 * GIB / NIC_BW * 1.10);
    }
}

/* Alpa's load-balancing workers are (mesh, host) pairs (nic_constraints = src + dst), not hosts:
 * meshes A on GPUs 0,1 (host 0) and 4,5 (host 1), B on 6,7 (host 1) and 2,3 (host 0). Piece 0
 * goes host 0 -> host 1, piece 1 host 1 -> host 0. As hosts the two works share both hosts (two
 * rounds); as workers (A,h0)->(B,h1) and (A,h1)->(B,h0) they share none: one round, so even
 * alpa-bcast-rounds has a single phase, and the two broadcasts run together in 1 GiB / NIC. */
static void test_alpa_bcast_workers(void **state)
{
    fixture_t *f = *state;
    static const char text[] = "mesh A={host:2,gpu:2}@[0,1,4,5]\n"
                               "mesh B={host:2,gpu:2}@[6,7,2,3]\n"
                               "move i32[1024,1024,256] A[host,_,_] -> B[host,_,_]\n";
    synth(f, "alpa-bcast-rounds", text);
    assert_int_equal(f->s->nphases, 1);
    assert_int_equal(f->s->ntrees, 4); /* two channels each */
    for (int i = 0; i < 4; i++) {
        const mc_tree_t *t = &f->s->trees[i];
        int top = t->root < 4;
        assert_int_equal(t->root, top ? 0 : 4);
        assert_int_equal(t->nedges, 2);
        assert_int_equal(t->edges[0].child, top ? 6 : 2);
        assert_int_equal(t->edges[1].child, top ? 7 : 3);
    }
    double t = simulate(f);
    assert_true(t >= 0.5 * GIB / NIC_BW && t <= 0.5 * GIB / NIC_BW * 1.05);
}

/* Single sender to 4 hosts x 2 GPUs: one chain 0 -> 4,5 -> 8,9 -> 12,13 -> 16,17 that crosses
 * four NICs in a pipeline: about 1 GiB / 1.25e9 = 0.859 s, where p2p sends 8 GiB through host
 * 0's NIC: 6.87 s. */
static void test_single_sender(void **state)
{
    fixture_t *f = *state;
    static const char text[] = "mesh S={host:1,gpu:1}@[0]\n"
                               "mesh D={host:4,gpu:2}@[4,5,8,9,12,13,16,17]\n"
                               "move i32[268435456] S[_] -> D[_]\n";
    static const int chain[] = {4, 5, 8, 9, 12, 13, 16, 17};
    synth(f, "alpa-bcast", text);
    assert_int_equal(f->s->ntrees, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(f->s->trees[i].nedges, 8);
        for (int e = 0; e < 8; e++)
            assert_int_equal(f->s->trees[i].edges[e].child, chain[e]);
    }
    double t = simulate(f);
    assert_true(t >= GIB / NIC_BW && t <= GIB / NIC_BW * 1.05);
    synth(f, "p2p", text);
    assert_int_equal(f->s->ntrees, 8);
    t = simulate(f);
    assert_true(t >= 8 * GIB / NIC_BW && t <= 8 * GIB / NIC_BW * 1.01);
}

/* p2p's first replica is the first holder in the source mesh's device order, not the lowest GPU
 * id (synth_holders_in_mesh_order, by the mesh's rank table): with A listed as 6, 1, 2, 0, a
 * tensor replicated over A is sent to GPU 4 by GPU 6. */
static void test_first_replica_in_mesh_order(void **state)
{
    fixture_t *f = *state;
    static const char text[] = "mesh A={g:4}@[6,1,2,0]\n"
                               "mesh B={g:1}@[4]\n"
                               "move i32[1024] A[_] -> B[_]\n";
    synth(f, "p2p", text);
    assert_int_equal(f->s->ntrees, 1);
    assert_int_equal(f->s->trees[0].root, 6);
    assert_int_equal(f->s->trees[0].edges[0].child, 4);
}

/* Two tensors, each 1 GiB halves over 2 source hosts -> 2 destination GPUs per host. p2p-lb's
 * loads carry over from tensor to tensor (Alpa shares them across the pipeline): tensor 0's
 * destinations 8, 9 take GPUs 0, 1 (12, 13 take 4, 5), so tensor 1's take the still unloaded
 * GPUs 2, 3 (and 6, 7). alpa-bcast solves each tensor afresh: a round each, two phases in
 * alpa-bcast-rounds, one phase (no barrier) in alpa-bcast. */
static void test_two_tensors(void **state)
{
    fixture_t *f = *state;
    static const char text[] = "mesh A={host:2,gpu:4}@0..7\n"
                               "mesh B={host:2,gpu:2}@[8,9,12,13]\n"
                               "move x: i32[1024,1024,512] A[host,_,_] -> B[host,_,_]\n"
                               "move y: i32[1024,1024,512] A[host,_,_] -> B[host,_,_]\n";
    synth(f, "p2p-lb", text);
    assert_int_equal(f->s->ntrees, 8);
    for (int i = 0; i < 8; i++) {
        const mc_tree_t *t = &f->s->trees[i];
        int tensor = f->task->pieces[t->piece].tensor, d = t->edges[0].child;
        int want = (d >= 12 ? 4 : 0) + (d % 4) + 2 * tensor;
        assert_int_equal(t->root, want);
    }
    synth(f, "alpa-bcast-rounds", text);
    assert_int_equal(f->s->nphases, 2);
    for (int i = 0; i < f->s->ntrees; i++)
        assert_int_equal(f->s->trees[i].phase, f->task->pieces[f->s->trees[i].piece].tensor);
    synth(f, "alpa-bcast", text);
    assert_int_equal(f->s->nphases, 1);
}

/* The fixture on four DGX H100 hosts instead of the paper's cluster. */
static void use_dgx_h100_x4(fixture_t *f)
{
    mc_err_t err = {0};
    mc_topo_free(f->topo);
    f->topo = NULL;
    assert_int_equal(mc_topo_load("topologies/dgx-h100-x4.xml", &f->topo, &err), MC_OK);
}

/* nccl-ring over two DGX H100 hosts (8 NICs each, GPUs with 18 NVLink lanes): every piece runs
 * on 24 channels (18 rounded up to 3 per NIC), and channel c's ring enters each host at the GPU
 * on rail c mod 8, so that the channels' bytes cross on every rail (one ring order for all
 * channels sent all of them through one NIC per host: 8.98 of the bound on 8 A100 hosts). */
static void test_nccl_ring_rails(void **state)
{
    fixture_t *f = *state;
    use_dgx_h100_x4(f);
    synth(f, "nccl-ring", "mesh M={g:16}@0..15\nmove bf16[1536,1024] M[g,_] -> M[_,_]\n");
    assert_int_equal(f->s->ntrees, 16 * 24);
    int crossings = 0;
    for (int i = 0; i < f->s->ntrees; i++) {
        const mc_tree_t *t = &f->s->trees[i];
        assert_int_equal(t->nedges, 15);
        for (int e = 0; e < t->nedges; e++) {
            int a = t->edges[e].parent, b = t->edges[e].child;
            if (a / 8 == b / 8)
                continue;
            crossings++;
            assert_int_equal(b % 8, (i % 24) % 8);
        }
    }
    /* a chain from host 0 crosses once; one from host 1 crosses back unless it started at the
     * host's first GPU of the channel's ring */
    assert_true(crossings >= 16 * 24);
}

/* On DGX H100 nodes (8 GPUs, 8 NICs, one rail per GPU), a broadcast from GPU 0 to GPUs 1, 2 of
 * its own host and 8, 9 of the next: the hosts can drive two NICs in common (host 1's group GPUs
 * sit next to NICs 0 and 1), so two chains of half the bytes each, entering host 1 at GPU 8 and
 * at GPU 9, each run as two channels. A broadcast from GPU 0 alone to host 1 can only use GPU 0's
 * NIC: one chain (two channels). */
static void test_chains_per_nic(void **state)
{
    fixture_t *f = *state;
    use_dgx_h100_x4(f);
    synth(f, "alpa-bcast", "mesh A={x:1}@[0]\nmesh B={h:2,g:2}@[1,2,8,9]\n"
                           "move bf16[4096,4096] A[_,_] -> B[_,_]\n");
    assert_int_equal(f->s->ntrees, 4); /* two chains, two channels each */
    for (int i = 0; i < 4; i++) {
        const mc_tree_t *t = &f->s->trees[i];
        int k = i / 2;
        assert_int_equal(t->bytes, 8388608);
        assert_int_equal(t->offset, 8388608 * (uint64_t)i);
        assert_int_equal(t->nedges, 4);
        assert_int_equal(t->edges[0].child, 1);
        assert_int_equal(t->edges[1].child, 2);
        assert_int_equal(t->edges[2].child, 8 + k);
        assert_int_equal(t->edges[3].child, 9 - k);
    }
    synth(f, "alpa-bcast", "mesh A={x:1}@[0]\nmesh B={g:8}@8..15\n"
                           "move bf16[4096,4096] A[_,_] -> B[_,_]\n");
    assert_int_equal(f->s->ntrees, 2);
    assert_int_equal(f->s->trees[0].nedges, 8);
}

/* Alpa's broadcast resharding runs between disjoint meshes only: a same-mesh task is
 * MC_ERR_UNSUPPORTED (bench shows n/a), while p2p still handles it. */
static void test_same_mesh(void **state)
{
    fixture_t *f = *state;
    static const char text[] = "mesh M={host:2,gpu:4}@0..7\n"
                               "move f32[64,64] M[host,gpu] -> M[gpu,host]\n";
    mc_err_t err = {0};
    mc_task_free(f->task);
    f->task = NULL;
    assert_int_equal(mc_task_parse_text(text, "test", &f->task, &err), MC_OK);
    assert_int_equal(mc_task_split(f->task, &err), MC_OK);
    mc_sched_t *s = NULL;
    assert_int_equal(mc_synth("alpa-bcast", f->task, f->topo, NULL, &s, &err),
                     MC_ERR_UNSUPPORTED);
    assert_null(s);
    assert_non_null(strstr(err.msg, "share GPU 0"));
    synth(f, "p2p", text);
    assert_true(f->s->ntrees > 0);
}

/* An unknown strategy is a usage error naming the known ones. */
static void test_unknown_strategy(void **state)
{
    fixture_t *f = *state;
    mc_err_t err = {0};
    mc_task_free(f->task);
    f->task = NULL;
    assert_int_equal(mc_task_parse_text(case1, "test", &f->task, &err), MC_OK);
    assert_int_equal(mc_task_split(f->task, &err), MC_OK);
    mc_sched_t *s = NULL;
    assert_int_equal(mc_synth("nope", f->task, f->topo, NULL, &s, &err), MC_ERR_USAGE);
    assert_null(s);
    assert_non_null(strstr(err.msg, "alpa-bcast"));
    int n;
    const mc_strategy_t *all = mc_synth_strategies(&n);
    assert_true(n >= 3);
    assert_string_equal(all[0].name, "p2p");
    assert_string_equal(all[1].name, "p2p-lb");
    assert_string_equal(all[2].name, "alpa-bcast");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_p2p_case1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_p2p_lb_case1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alpa_bcast_case1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alpa_bcast_case7, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alpa_p2p_case1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alpa_p2p_conditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alpa_p2p_strided_part, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nccl_ring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alpa_bcast_workers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_sender, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_tensors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chains_per_nic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nccl_ring_rails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_replica_in_mesh_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_mesh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_strategy, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
