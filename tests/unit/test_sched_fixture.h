/* A small fixture shared by the sched tests: four GPUs on one host, each linked to a PCIe switch
 * "sw0" at 100 GB/s, plus NVLink between GPU0 and GPU1; and the task
 * "f32[4,256] A[_,_] -> B[x,_]" with A = GPUs 0,1 (both hold everything) and B = GPUs 2,3, which
 * splits into two pieces of 2 rows x 256 x 4 B = 2048 bytes: rows 0-1 for GPU2, rows 2-3 for
 * GPU3, each held by GPUs 0 and 1. Routes are given by node ids so that the tests do not depend
 * on the router. */
#ifndef TEST_SCHED_FIXTURE_H
#define TEST_SCHED_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"
#include "synth/synth.h"

#define FX_BW 100e9
#define FX_SW 4 /* node id of sw0 */

typedef struct fixture {
    mc_topo_t *topo;
    mc_task_t *task;
    int piece_of[4]; /* piece index by destination GPU (2 and 3) */
} fixture_t;

static inline void fx_init(fixture_t *fx)
{
    mc_err_t err = {0};
    fx->topo = mc_topo_new("fixture");
    for (int i = 0; i < 4; i++) {
        mc_node_t n = {.kind = MC_NODE_GPU, .host = 0, .dev = i, .busid = -1, .rail = -1};
        snprintf(n.name, sizeof n.name, "h0/GPU%d", i);
        mc_topo_add_node(fx->topo, &n);
    }
    mc_node_t sw = {.kind = MC_NODE_PCI, .host = 0, .dev = -1, .busid = -1, .rail = -1};
    snprintf(sw.name, sizeof sw.name, "sw0");
    mc_topo_add_node(fx->topo, &sw);
    for (int i = 0; i < 4; i++)
        mc_topo_add_link_pair(fx->topo, i, FX_SW, MC_LINK_PCI, FX_BW, 1e-6, 1);
    mc_topo_add_link_pair(fx->topo, 0, 1, MC_LINK_NVL, 2 * FX_BW, 1e-6, 1);
    if (mc_topo_finalize(fx->topo, &err) != MC_OK ||
        mc_task_parse_text("mesh A={x:2}@0..1\nmesh B={x:2}@2..3\n"
                           "move t0: f32[4,256] A[_,_] -> B[x,_]\n", "fixture", &fx->task, &err) ||
        mc_task_split(fx->task, &err) != MC_OK || fx->task->npieces != 2) {
        fprintf(stderr, "fixture: %s\n", err.msg);
        abort();
    }
    for (int p = 0; p < 2; p++)
        fx->piece_of[fx->task->pieces[p].dests[0]] = p;
}

static inline void fx_free(fixture_t *fx)
{
    mc_task_free(fx->task);
    mc_topo_free(fx->topo);
}

/* cmocka group fixtures: *state is a fixture_t. */
static int fx_setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof(*fx));
    fx_init(fx);
    *state = fx;
    return 0;
}

static int fx_teardown(void **state)
{
    fx_free(*state);
    free(*state);
    return 0;
}

/* Adds edge a->b to tree ti along node ids nodes[0..n). */
static inline void fx_edge(mc_sched_t *s, const mc_topo_t *t, int ti, int n, const int *nodes)
{
    mc_route_t r = {.src_gpu = t->nodes[nodes[0]].gpu, .dst_gpu = t->nodes[nodes[n - 1]].gpu,
                    .via_gpu = -1, .nlinks = n - 1};
    for (int i = 0; i + 1 < n; i++)
        r.links[i] = mc_topo_find_link(t, nodes[i], nodes[i + 1]);
    mc_err_t err = {0};
    if (mc_sched_add_edge_route(s, ti, &r, &err) != MC_OK)
        abort();
}

/* The valid schedule: GPU0 sends rows 0-1 to GPU2 and GPU1 sends rows 2-3 to GPU3, both through
 * sw0 in phase 0 on disjoint links. Trees 0 and 1. */
static inline mc_sched_t *fx_valid(const fixture_t *fx, int nchunks)
{
    mc_sched_t *s = mc_sched_new(fx->task, fx->topo, "test");
    int a = mc_sched_add_tree(s, fx->piece_of[2], 0, 2048, 0, 0, nchunks);
    fx_edge(s, fx->topo, a, 3, (int[]){0, FX_SW, 2});
    int b = mc_sched_add_tree(s, fx->piece_of[3], 0, 2048, 1, 0, nchunks);
    fx_edge(s, fx->topo, b, 3, (int[]){1, FX_SW, 3});
    return s;
}

/* The fixture's two link-disjoint groups of 16 trees (GPU0 -> sw0 -> GPU2 and GPU1 -> sw0 ->
 * GPU3) as XML: the file holds the first and one instance line for the second. */
static inline char *fx_two_groups(const fixture_t *fx)
{
    mc_sched_t *s = mc_sched_new(fx->task, fx->topo, "test");
    for (int g = 0; g < 2; g++)
        for (int k = 0; k < 16; k++)
            fx_edge(s, fx->topo, mc_sched_add_tree(s, fx->piece_of[2 + g], 128 * k, 128, g, 0, 1),
                    3, (int[]){g, FX_SW, 2 + g});
    mc_sched_plan_rates(s, fx->topo);
    char *xml = mc_sched_to_xml(s, fx->topo);
    mc_sched_free(s);
    if (!strstr(xml, "<instance template=\"0\" nodes=\"h0/GPU1 h0/GPU3 sw0\""))
        abort();
    return xml;
}

/* The meshcast strategy's schedule of three LLaMA-2-70B weights from DP2 x TP8 to DP4 x TP4 on
 * four DGX H100, with its topology, task and XML: two components, one an instance of the other
 * in the file. fx_llama_free frees them. */
typedef struct fx_llama {
    mc_topo_t *topo;
    mc_task_t *task;
    mc_sched_t *s;
    char *xml;
} fx_llama_t;

static inline fx_llama_t fx_llama(void)
{
    fx_llama_t l = {0};
    mc_err_t err = {0};
    mc_synth_opts_t opts = MC_SYNTH_OPTS_DEFAULT;
    opts.rlimit = 2000000;
    if (mc_topo_load("topologies/dgx-h100-x4.xml", &l.topo, &err) != MC_OK ||
        mc_task_parse_text("mesh train={dp:2,tp:8}@0..15\nmesh gen={dp:4,tp:4}@16..31\n"
                           "move q: bf16[80,8192,8192] train[_,tp,_] -> gen[_,tp,_]\n"
                           "move o: bf16[80,8192,8192] train[_,_,tp] -> gen[_,_,tp]\n"
                           "move embed: bf16[32000,8192] train[tp,_] -> gen[tp,_]\n",
                           "llama", &l.task, &err) != MC_OK ||
        mc_task_split(l.task, &err) != MC_OK ||
        mc_synth("meshcast", l.task, l.topo, &opts, &l.s, &err) != MC_OK) {
        fprintf(stderr, "fixture: %s\n", err.msg);
        abort();
    }
    l.xml = mc_sched_to_xml(l.s, l.topo);
    return l;
}

static inline void fx_llama_free(fx_llama_t *l)
{
    free(l->xml);
    mc_sched_free(l->s);
    mc_task_free(l->task);
    mc_topo_free(l->topo);
}

#endif
