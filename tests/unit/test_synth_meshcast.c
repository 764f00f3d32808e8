/* Tests for the meshcast strategy end to end on the paper's cluster (5 hosts of 4 V100, one
 * 10 Gb/s NIC of 1.25e9 B/s each): every schedule validates and never beats the lower bound, the
 * hand-worked optimum is found on small cases, results repeat under the same rlimit, and a budget
 * too small for Z3 still gives a valid schedule; on sixteen such hosts, a plan too large to time
 * loses to one that is timed; under leaves and spines, a plan known by its estimate is timed
 * before it loses, and over hosts of two kinds, one too large to time gives way to its trees placed
 * whole; a share's trees never relay through the destinations of another share of its piece, and
 * a piece straddling two hosts reaches a third from both, and a host holding a piece on one GPU
 * serves no group of its own. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/synth.h"
#include "test_task_helpers.h"
#include "test_topo_helpers.h"

#define TOPO "topologies/aws-p3.8xlarge-x5.xml"
#define NIC_BW 1.25e9

typedef struct fixture {
    mc_topo_t *topo;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    mc_err_t err = {0};
    if (mc_topo_load(TOPO, &f->topo, &err) != MC_OK) {
        fprintf(stderr, "%s\n", err.msg);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    mc_topo_free(f->topo);
    free(f);
    return 0;
}

/* Synthesizes, checks validity and the bound; returns the simulated makespan and fills res. */
static double run(const mc_topo_t *topo, mc_task_t *t, const mc_synth_opts_t *opts,
                  mc_sched_t **out, mc_sim_result_t *res)
{
    mc_err_t err = {0};
    mc_sched_t *s = NULL;
    mc_bound_t b;
    if (mc_synth_meshcast(t, topo, opts, &s, &err) != MC_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(mc_sched_validate(s, topo, NULL), 0);
    assert_int_equal(mc_task_bound(t, topo, &b, &err), MC_OK);
    assert_int_equal(mc_sim_run(s, topo, res, &err), MC_OK);
    assert_true(res->makespan_s >= b.seconds * (1 - 1e-9));
    /* the trees state their gap to the bound; a baseline's plan raced last states why it won */
    assert_true(strstr(s->params, "gap=") || strstr(s->params, " why="));
    *out = s;
    return res->makespan_s;
}

/* Bytes the schedule sends out of host h's network port. */
static double host_out_bytes(const mc_topo_t *topo, const mc_sim_result_t *res, int h)
{
    double b = 0;
    for (int l = 0; l < topo->nlinks; l++) {
        const mc_node_t *s = &topo->nodes[topo->links[l].src];
        if (s->kind == MC_NODE_NET && s->host == h && topo->links[l].kind == MC_LINK_NET)
            b += res->link_bytes[l];
    }
    return b;
}

/* Synthesizes the task, whose data leaves hosts 0..nsenders-1 and whose optimum sends 1 GiB
 * through each one's NIC exactly once (1 GiB / 1.25e9 B/s = 0.859 s): asserts both within 1%. */
static void once_through_nic(fixture_t *f, const char *m1, const char *m2, const char *move,
                             int npieces, int nsenders)
{
    mc_task_t *t = task_of(m1, m2, move);
    assert_int_equal(t->npieces, npieces);
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    opts.rlimit = 2000000;
    mc_sched_t *s;
    mc_sim_result_t res = {0};
    double ms = run(f->topo, t, &opts, &s, &res);
    double once = (double)(1u << 30) / NIC_BW;
    for (int h = 0; h < nsenders; h++)
        assert_float_equal(host_out_bytes(f->topo, &res, h), (double)(1u << 30), 1);
    assert_true(ms >= once);
    assert_true(ms < once * 1.01);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_task_free(t);
}

/* One 1 GiB piece on GPU 0 needed by the 4 GPUs of host 1: one network crossing, then NVLink
 * fans it out inside host 1, pipelined. */
static void test_replicated_destination_host(void **state)
{
    once_through_nic(*state, "A={gpu:1}@[0]", "B={gpu:4}@4..7", "i32[268435456] A[_] -> B[_]", 1,
                     1);
}

/* GPUs 0 and 1 (host 0) hold one half each (512 MiB); GPU 4 (host 1) needs the first, GPU 8
 * (host 2) the second. Both halves must leave through host 0's one NIC, at once or one after the
 * other. */
static void test_two_pieces_share_one_nic(void **state)
{
    once_through_nic(*state, "A={gpu:2}@[0,1]", "B={host:2}@[4,8]",
                     "i32[268435456] A[gpu] -> B[host]", 2, 1);
}

/* Overlapping meshes (a reallocation): hosts 0-1 hold the tensor in quarters, replicated per
 * host; the new mesh spans hosts 0-3 with neighbouring GPUs swapped, so hosts 0-1 fetch their
 * quarters inside the host and hosts 2-3 need all 1 GiB. A host that holds a piece serves itself,
 * and hosts 2 and 3 are served one from each holder host: 1 GiB out of each of the two NICs. */
static void test_holder_hosts_serve_themselves(void **state)
{
    /* (p2p-lb's plan, raced last, is kept: 859.014 ms at the bound, the trees 859.052 ms) */
    once_through_nic(*state, "A={host:2,gpu:4}@0..7",
                     "B={host:4,gpu:4}@[1,0,3,2,5,4,7,6,9,8,11,10,13,12,15,14]",
                     "i32[268435456] A[gpu] -> B[gpu]", 4, 2);
}

/* The paper's case 2 (fully replicated on hosts 0-1 -> dim0 over hosts 2-3) twice with the same
 * rlimit: byte-identical schedules. */
static void test_same_rlimit_same_schedule(void **state)
{
    fixture_t *f = *state;
    char *xml[2];
    for (int i = 0; i < 2; i++) {
        mc_task_t *t = task_of("A={host:2,gpu:4}@0..7", "B={host:2,gpu:4}@8..15",
                               "i32[1024,1024,512] A[_,_,_] -> B[host,_,_]");
        mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
        opts.rlimit = 300000;
        opts.budget_s = 1000; /* only the rlimit may stop Z3 */
        mc_sched_t *s;
        mc_sim_result_t res = {0};
        run(f->topo, t, &opts, &s, &res);
        xml[i] = mc_sched_to_xml(s, f->topo);
        mc_sim_result_free(&res);
        mc_sched_free(s);
        mc_task_free(t);
    }
    assert_string_equal(xml[0], xml[1]);
    free(xml[0]);
    free(xml[1]);
}

/* An rlimit of 1 and a budget of a microsecond stop Z3 at once: the greedy plan comes back,
 * valid and no faster than the bound. The paper's case 7 (one host, dim0 4-way -> replicated on
 * two hosts) needs the source NIC for 2 GiB: 1.718 s at least. */
static void test_stopped_solver_still_valid(void **state)
{
    fixture_t *f = *state;
    mc_synth_opts_t opts[2] = {MC_SYNTH_OPTS_DEFAULT, MC_SYNTH_OPTS_DEFAULT};
    opts[0].rlimit = 1;
    opts[1].budget_s = 1e-6;
    for (int i = 0; i < 2; i++) {
        mc_task_t *t = task_of("A={host:1,gpu:4}@0..3", "B={host:2,gpu:4}@4..11",
                               "i32[1024,1024,512] A[gpu,_,_] -> B[_,_,_]");
        mc_sched_t *s;
        mc_sim_result_t res = {0};
        double ms = run(f->topo, t, &opts[i], &s, &res);
        assert_true(ms >= 2.0 * (1u << 30) / NIC_BW);
        mc_sim_result_free(&res);
        mc_sched_free(s);
        mc_task_free(t);
    }
}

/* Sixteen such hosts (tests/data/cluster/p3-x16.xml), a 64 MiB all-gather: each host's NIC takes
 * in the other hosts' 60 MiB, 50.3 ms at least. The solved plan's trees are too many to time
 * within the referee's allowance, so only their estimate was known (50.3 ms; 74.6 ms once
 * simulated); the balanced plan's chains move more chunks but are timed within one allowance,
 * and they are kept: within 2% of the bound, and no slower than XLA's all-gather. */
static void test_timed_chains_beat_an_estimate(void **state)
{
    (void)state;
    mc_topo_t *topo = load_ok("tests/data/cluster/p3-x16.xml");
    mc_err_t err = {0};
    mc_task_t *t = task_of("A={g:64}@0..63", "B={g:64}@0..63", "f32[4096,4096] A[g,_] -> B[_,_]");
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    opts.rlimit = 2000000;
    mc_sched_t *s, *xla;
    mc_sim_result_t res = {0}, xres = {0};
    mc_bound_t b;
    double ms = run(topo, t, &opts, &s, &res);
    assert_int_equal(mc_task_bound(t, topo, &b, &err), MC_OK);
    assert_true(ms <= 1.02 * b.seconds);
    assert_int_equal(mc_synth_xla(t, topo, &opts, &xla, &err), MC_OK);
    assert_int_equal(mc_sim_run(xla, topo, &xres, &err), MC_OK);
    assert_true(ms <= xres.makespan_s);
    mc_sim_result_free(&res);
    mc_sim_result_free(&xres);
    mc_sched_free(s);
    mc_sched_free(xla);
    mc_task_free(t);
    mc_topo_free(topo);
}

/* Synthesizes task t (freed) on the cluster file under rlimit 2,000,000 and asserts its
 * simulated time within `within` times the lower bound. */
static void assert_near_bound(const char *cluster, mc_task_t *t, double within)
{
    mc_topo_t *topo = load_ok(cluster);
    mc_err_t err = {0};
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    opts.rlimit = 2000000;
    mc_sched_t *s;
    mc_sim_result_t res = {0};
    mc_bound_t b;
    double ms = run(topo, t, &opts, &s, &res);
    assert_int_equal(mc_task_bound(t, topo, &b, &err), MC_OK);
    assert_true(ms <= within * b.seconds);
    mc_sim_result_free(&res);
    mc_sched_free(s);
    mc_task_free(t);
    mc_topo_free(topo);
}

/* Eight such hosts under leaves of two and three spines at 2:1 (tests/data/cluster/p3-leaves.xml),
 * a 1 GiB all-gather: the GPUs of one leaf take in 896 MiB over its 2:1 uplinks, 966 ms at
 * least. The priced plan, too large for the half allowance it races with, was known by its
 * estimate only and lost to plans simulated at 2.01 s and more: 2.00 of the bound with XLA's
 * ring. Timed, it ends at 1.04. */
static void test_estimated_plan_timed(void **state)
{
    (void)state;
    assert_near_bound("tests/data/cluster/p3-leaves.xml",
                      task_of("A={g:32}@0..31", "B={g:32}@0..31",
                              "f32[16384,16384] A[g,_] -> B[_,_]"),
                      1.10);
}

/* Four A100 and four H100 boxes (tests/data/cluster/a100-h100-mix.xml), 64 MiB moved all to
 * all from shards of 7, 1, 2 and 6 parts to even ones: a GPU of 7 parts sends 1.75 times the
 * mean, which its own NICs alone carry in 1.50 times the bound (the direct sends). The priced
 * trees relay it over the host's other NICs, but their solved plan is too large to time; its
 * trees placed whole by load are timed instead, and kept: within 1.2 of the bound. */
static void test_priced_balanced_timed(void **state)
{
    (void)state;
    char dst[512], move[512];
    int n = snprintf(dst, sizeof dst, "B={g:64}@[");
    for (int g = 63; g >= 0; g--)
        n += snprintf(dst + n, sizeof dst - (size_t)n, "%d%s", g, g ? "," : "]");
    n = snprintf(move, sizeof move, "f32[4096,4096] A[g{");
    for (int g = 0; g < 64; g++)
        n += snprintf(move + n, sizeof move - (size_t)n, "%d%s", (int[]){112, 16, 32, 96}[g % 4],
                      g < 63 ? "," : "},_] -> B[_,g]");
    assert_near_bound("tests/data/cluster/a100-h100-mix.xml", task_of("A={g:64}@0..63", dst, move),
                      1.2);
}

/* Three MI250 hosts; the tensor is replicated on GPUs 4-11, the second half of host 0 and the first
 * of host 1, and every GPU needs it. Hosts 0 and 1 serve their own destinations and host 2 is
 * served from host 0 (synth_meshcast_shares.c): its priced trees may not relay through GPUs 0-3,
 * which their own share serves, or those would receive the bytes twice (the synthesis stopped at
 * a schedule with 9 violations). */
static void test_other_shares_destinations_not_relays(void **state)
{
    (void)state;
    assert_near_bound("topologies/mi250-x3.xml",
                      task_of("A={g:8}@4..11", "B={g:24}@0..23", "f32[512,512] A[_,_] -> B[_,_]"),
                      3.0);
}

/* The same hosts and holders, 64 MiB: host 2 takes the tensor in over its four NICs, but GPUs 4-7
 * of host 0 reach only two NICs of their host, as GPUs 8-11 of host 1 do. Served from host 0
 * alone it came in at half the rate, 2.12 of the bound; served from both holder hosts
 * (synth_meshcast_shares.c), within 1.2. */
static void test_straddled_piece_served_from_every_holder_host(void **state)
{
    (void)state;
    assert_near_bound("topologies/mi250-x3.xml",
                      task_of("A={g:8}@4..11", "B={g:24}@0..23", "f32[4096,4096] A[_,_] -> B[_,_]"),
                      1.2);
}

/* Eight MI250 hosts; 64 MiB replicated on the 8 GPUs of host 2 and GPU 24 of host 3, needed on
 * 13 GPUs of hosts 0 and 1 and 4 of host 3. Host 3 serves its own four and the trees leaving it
 * may pass through its other four GPUs only; host 0 was its group and took its bytes in through
 * those: 2.20 of the bound. Now one group, from host 2 and open to host 3 (synth_meshcast_shares.c,
 * strongest_first): within 1.4. */
static void test_weak_holder_host_serves_no_group(void **state)
{
    (void)state;
    assert_near_bound("topologies/mi250-x8.xml",
                      task_of("A={g:9}@16..24",
                              "B={g:17}@[0,1,2,3,5,6,7,8,9,10,11,14,15,25,26,27,29]",
                              "f32[4096,4096] A[_,_] -> B[_,_]"),
                      1.4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replicated_destination_host),
        cmocka_unit_test(test_two_pieces_share_one_nic),
        cmocka_unit_test(test_holder_hosts_serve_themselves),
        cmocka_unit_test(test_same_rlimit_same_schedule),
        cmocka_unit_test(test_stopped_solver_still_valid),
        cmocka_unit_test(test_timed_chains_beat_an_estimate),
        cmocka_unit_test(test_estimated_plan_timed),
        cmocka_unit_test(test_priced_balanced_timed),
        cmocka_unit_test(test_other_shares_destinations_not_relays),
        cmocka_unit_test(test_straddled_piece_served_from_every_holder_host),
        cmocka_unit_test(test_weak_holder_host_serves_no_group),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
