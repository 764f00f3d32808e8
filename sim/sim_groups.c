/* Splits one phase of a schedule into groups the simulator can time apart (docs/simulator.md,
 * "Cost"): trees that share no link, even transitively, never change each other's rates, so each
 * group is simulated alone; and a group whose trees are the same edges over links of the same
 * bandwidths and delays as an earlier group's, renumbered in order of first use, is that group's
 * simulation on other links: it is simulated once and its per-link results copied. Large
 * schedules made of symmetric components (the meshcast strategy at 1024 GPUs: 64 components, one
 * distinct) then cost what one component costs. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"
#include "util/index.h"

/* The trees of `phase` in groups joined through shared links: group ids in first-tree order. */
static void split(const mc_sched_t *s, const mc_topo_t *topo, int phase, sim_groups_t *g)
{
    int *gid = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    g->ngroups = mc_sched_link_groups(s, topo, phase, gid);
    g->tree_off = mc_xcalloc((size_t)g->ngroups + 2, sizeof(int));
    int nt = 0;
    for (int t = 0; t < s->ntrees; t++)
        if (gid[t] >= 0) {
            g->tree_off[gid[t] + 2]++;
            nt++;
        }
    for (int k = 0; k < g->ngroups; k++)
        g->tree_off[k + 2] += g->tree_off[k + 1];
    g->trees = mc_xmalloc(sizeof(int) * (size_t)(nt + 1));
    for (int t = 0; t < s->ntrees; t++)
        if (gid[t] >= 0)
            g->trees[g->tree_off[gid[t] + 1]++] = t;
    free(gid);
}

typedef struct keys {
    int64_t *v;          /* the distinct groups' keys, one after another */
    size_t n, cap;
    size_t *off, *len;   /* per distinct group: its key in v */
    int kept;            /* 0: no keys (a phase of one group has no other group to be) */
} keys_t;

static void put(keys_t *k, int64_t x)
{
    if (!k->kept)
        return;
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 1024;
        k->v = mc_xrealloc(k->v, sizeof(int64_t) * k->cap);
    }
    k->v[k->n++] = x;
}

static int64_t bits(double d)
{
    int64_t x;
    memcpy(&x, &d, sizeof x);
    return x;
}

/* Group k's links in order of first use (appended to g->links) and its key (when kept):
 * everything the simulation of the group reads, with GPUs and links renumbered in order of first
 * use. */
static void describe(const mc_sched_t *s, const mc_topo_t *topo, sim_groups_t *g, int k,
                     int *local_link, int *local_gpu, int *nlinks_cap, keys_t *keys)
{
    int nl = 0, ng = 0, first = g->link_off[k];
    keys->off[k] = keys->n;
    for (int i = g->tree_off[k]; i < g->tree_off[k + 1]; i++) {
        const mc_tree_t *tr = &s->trees[g->trees[i]];
        put(keys, tr->nchunks);
        put(keys, tr->inflight);
        put(keys, tr->ramp);
        put(keys, (int64_t)tr->bytes);
        put(keys, tr->nedges);
        for (int e = 0; e < tr->nedges; e++) {
            const mc_tree_edge_t *ed = &tr->edges[e];
            const int gpus[2] = {ed->parent, ed->child};
            for (int j = 0; j < 2; j++) {
                int x = gpus[j];
                if (x < 0 || x >= topo->ngpus) { /* sim reports it */
                    put(keys, -1 - (int64_t)x);
                    continue;
                }
                if (local_gpu[x] < 0)
                    local_gpu[x] = ng++;
                put(keys, local_gpu[x]);
                /* the connection limit (mc_topo_conn_cap) depends on the GPU's architecture */
                put(keys, topo->nodes[topo->gpu_node[x]].sm);
            }
            put(keys, ed->nlinks);
            for (int j = 0; j < ed->nlinks; j++) {
                int l = ed->links[j];
                if (l < 0 || l >= topo->nlinks) {
                    put(keys, -1 - (int64_t)l);
                    continue;
                }
                if (local_link[l] < 0) {
                    MC_GROW(g->links, *nlinks_cap, first + nl + 1);
                    g->links[first + nl] = l;
                    local_link[l] = nl++;
                }
                put(keys, local_link[l]);
            }
        }
    }
    for (int j = 0; j < nl; j++) {
        int l = g->links[first + j];
        put(keys, bits(topo->links[l].bw));
        put(keys, bits(mc_topo_links_delay(topo, &l, 1)));
        put(keys, topo->links[l].kind);
        local_link[l] = -1;
    }
    g->link_off[k + 1] = first + nl;
    for (int i = g->tree_off[k]; i < g->tree_off[k + 1]; i++) {
        const mc_tree_t *tr = &s->trees[g->trees[i]];
        for (int e = 0; e < tr->nedges; e++) {
            const mc_tree_edge_t *ed = &tr->edges[e];
            if (ed->parent >= 0 && ed->parent < topo->ngpus)
                local_gpu[ed->parent] = -1;
            if (ed->child >= 0 && ed->child < topo->ngpus)
                local_gpu[ed->child] = -1;
        }
    }
}

void sim_groups_build(const mc_sched_t *s, const mc_topo_t *topo, int phase, sim_groups_t *g)
{
    memset(g, 0, sizeof(*g));
    split(s, topo, phase, g);
    int n = g->ngroups, links_cap = 0;
    keys_t keys = {.off = mc_xmalloc(sizeof(size_t) * (size_t)(n + 1)),
                   .len = mc_xmalloc(sizeof(size_t) * (size_t)(n + 1)),
                   .kept = n > 1};
    int *local_link = mc_xmalloc(sizeof(int) * (size_t)(topo->nlinks + 1));
    int *local_gpu = mc_xmalloc(sizeof(int) * (size_t)(topo->ngpus + 1));
    for (int l = 0; l < topo->nlinks; l++)
        local_link[l] = -1;
    for (int x = 0; x < topo->ngpus; x++)
        local_gpu[x] = -1;
    g->link_off = mc_xcalloc((size_t)n + 1, sizeof(int));
    /* identical keys, by their hash; a copy's key is dropped at once */
    mc_index_t index = {0};
    g->same_as = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    for (int k = 0; k < n; k++) {
        describe(s, topo, g, k, local_link, local_gpu, &links_cap, &keys);
        g->same_as[k] = -1;
        if (!keys.kept) {
            g->ndistinct++;
            continue;
        }
        keys.len[k] = keys.n - keys.off[k];
        const int64_t *v = keys.v + keys.off[k];
        uint64_t h = mc_hash_words(v, keys.len[k]);
        size_t at = mc_index_start(&index, h);
        for (int j; (j = mc_index_next(&index, h, &at)) >= 0;)
            if (keys.len[j] == keys.len[k] &&
                !memcmp(keys.v + keys.off[j], v, sizeof(int64_t) * keys.len[k])) {
                g->same_as[k] = j;
                keys.n = keys.off[k];
                break;
            }
        if (g->same_as[k] < 0) {
            mc_index_add(&index, h, k);
            g->ndistinct++;
        }
    }
    mc_index_free(&index);
    free(keys.v);
    free(keys.off);
    free(keys.len);
    free(local_link);
    free(local_gpu);
}

void sim_groups_free(sim_groups_t *g)
{
    free(g->tree_off);
    free(g->trees);
    free(g->link_off);
    free(g->links);
    free(g->same_as);
    memset(g, 0, sizeof(*g));
}
