/* Symmetry kept in schedule files (docs/schedule-format.md, "Symmetry"): trees that share links,
 * in any phase, form a group; a group that is an earlier group's trees on other nodes (the same
 * phases, byte ranges, chunks, rates and edges, with every node renumbered in order of first
 * appearance) and other pieces is written as an <instance> of that template: its node names
 * and its pieces, not its trees. A 1024-GPU meshcast schedule of 64 identical components takes
 * one component's trees and 63 short lines. Groups of fewer than MC_SCHED_SYM_MIN_TREES trees are
 * written whole: an instance saves little there, and a small file reads as it looks. */
#include <stdlib.h>
#include <string.h>

#include "sched/sched_internal.h"
#include "util/index.h"

#define MC_SCHED_SYM_MIN_TREES 16

static int find(int *up, int x)
{
    while (up[x] != x)
        x = up[x] = up[up[x]];
    return x;
}

typedef struct vec {
    int64_t *v;
    int n, cap;
} vec_t;

static void put(vec_t *k, int64_t x)
{
    if (k) {
        MC_GROW(k->v, k->cap, k->n + 1);
        k->v[k->n++] = x;
    }
}

/* The local number of node x, numbering it when new. */
static int local_of(int x, int *local, int **nodes, int *n, int *cap)
{
    if (local[x] < 0) {
        MC_GROW(*nodes, *cap, *n + 1);
        (*nodes)[*n] = x;
        local[x] = (*n)++;
    }
    return local[x];
}

int mc_sched_sym_walk(const mc_sched_t *s, const mc_topo_t *topo, const int *trees, int n,
                      int *local, int **nodes, int64_t **key, int *nkey)
{
    int nn = 0, cap = 0, ok = 1;
    vec_t k = {0};
    vec_t *kp = key ? &k : NULL;
    *nodes = NULL;
    for (int i = 0; i < n && ok; i++) {
        const mc_tree_t *tr = &s->trees[trees[i]];
        double rate = tr->rate;
        int64_t rate_bits;
        memcpy(&rate_bits, &rate, sizeof rate_bits);
        put(kp, tr->phase);
        put(kp, (int64_t)tr->offset);
        put(kp, (int64_t)tr->bytes);
        put(kp, tr->nchunks);
        put(kp, tr->inflight);
        put(kp, tr->ramp);
        put(kp, rate_bits);
        put(kp, tr->nedges);
        ok = tr->root >= 0 && tr->root < topo->ngpus;
        if (ok)
            put(kp, local_of(topo->gpu_node[tr->root], local, nodes, &nn, &cap));
        for (int e = 0; e < tr->nedges && ok; e++) {
            const mc_tree_edge_t *ed = &tr->edges[e];
            const int gpus[3] = {ed->parent, ed->child, ed->via_gpu};
            for (int j = 0; j < 3 && ok; j++) {
                ok = gpus[j] < topo->ngpus && (gpus[j] >= 0 || j == 2);
                if (ok)
                    put(kp, gpus[j] < 0 ? -1 : local_of(topo->gpu_node[gpus[j]], local, nodes,
                                                        &nn, &cap));
            }
            put(kp, ed->nlinks);
            for (int j = 0; j < ed->nlinks && ok; j++) {
                int l = ed->links[j];
                ok = l >= 0 && l < topo->nlinks;
                if (!ok)
                    break;
                put(kp, local_of(topo->links[l].src, local, nodes, &nn, &cap));
                if (j == ed->nlinks - 1)
                    put(kp, local_of(topo->links[l].dst, local, nodes, &nn, &cap));
            }
        }
    }
    for (int i = 0; i < nn; i++)
        local[(*nodes)[i]] = -1;
    if (key) {
        *key = k.v;
        *nkey = k.n;
    }
    if (!ok) {
        free(*nodes);
        *nodes = NULL;
        if (key) {
            free(k.v);
            *key = NULL;
        }
        return -1;
    }
    return nn;
}

int mc_sched_link_groups(const mc_sched_t *s, const mc_topo_t *topo, int phase, int *gid)
{
    int *up = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    int *owner = mc_xmalloc(sizeof(int) * (size_t)(topo->nlinks + 1));
    for (int l = 0; l < topo->nlinks; l++)
        owner[l] = -1;
    for (int t = 0; t < s->ntrees; t++) {
        up[t] = t;
        if (phase >= 0 && s->trees[t].phase != phase)
            continue;
        for (int e = 0; e < s->trees[t].nedges; e++)
            for (int j = 0; j < s->trees[t].edges[e].nlinks; j++) {
                int l = s->trees[t].edges[e].links[j];
                if (l < 0 || l >= topo->nlinks)
                    continue;
                if (owner[l] < 0) {
                    owner[l] = t;
                } else {
                    int a = find(up, owner[l]), b = find(up, t);
                    if (a != b)
                        up[a > b ? a : b] = a < b ? a : b;
                }
            }
    }
    int n = 0;
    for (int t = 0; t < s->ntrees; t++)
        gid[t] = phase >= 0 && s->trees[t].phase != phase ? -1
                 : find(up, t) == t                       ? n++
                                                          : gid[find(up, t)];
    free(up);
    free(owner);
    return n;
}

/* The trees in the order a file lists them: phase by phase, each phase's in index order; -1 ends
 * the list early when trees lie outside the phases. */
static int *file_order(const mc_sched_t *s)
{
    int *at = mc_xcalloc((size_t)s->nphases + 2, sizeof(int));
    int *order = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    for (int t = 0; t < s->ntrees; t++) {
        order[t] = -1;
        if (s->trees[t].phase >= 0 && s->trees[t].phase < s->nphases)
            at[s->trees[t].phase + 1]++;
    }
    for (int p = 0; p < s->nphases; p++)
        at[p + 1] += at[p];
    for (int t = 0; t < s->ntrees; t++)
        if (s->trees[t].phase >= 0 && s->trees[t].phase < s->nphases)
            order[at[s->trees[t].phase]++] = t;
    free(at);
    return order;
}

void mc_sched_sym_find(const mc_sched_t *s, const mc_topo_t *topo, mc_sched_sym_t *sym)
{
    memset(sym, 0, sizeof(*sym));
    int *gid = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    int ng = mc_sched_link_groups(s, topo, -1, gid);
    /* each group's trees, by counting */
    int *off = mc_xcalloc((size_t)ng + 2, sizeof(int));
    int *trees = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    for (int t = 0; t < s->ntrees; t++)
        off[gid[t] + 2]++;
    for (int g = 0; g < ng; g++)
        off[g + 2] += off[g + 1];
    for (int t = 0; t < s->ntrees; t++)
        trees[off[gid[t] + 1]++] = t;
    int *local = mc_xmalloc(sizeof(int) * (size_t)(topo->nnodes + 1));
    for (int x = 0; x < topo->nnodes; x++)
        local[x] = -1;
    /* distinct keys kept (few); a group with an earlier group's key is its instance */
    mc_index_t index = {0};
    int64_t **keys = mc_xcalloc((size_t)ng + 1, sizeof(int64_t *));
    int *nkeys = mc_xcalloc((size_t)ng + 1, sizeof(int));
    int *same_as = mc_xmalloc(sizeof(int) * (size_t)(ng + 1));
    int **gnodes = mc_xcalloc((size_t)ng + 1, sizeof(int *));
    int *ngnodes = mc_xcalloc((size_t)ng + 1, sizeof(int));
    for (int g = 0; g < ng; g++) {
        int64_t *key;
        int nkey;
        same_as[g] = -1;
        if (off[g + 1] - off[g] < MC_SCHED_SYM_MIN_TREES)
            continue;
        ngnodes[g] = mc_sched_sym_walk(s, topo, trees + off[g], off[g + 1] - off[g], local,
                                       &gnodes[g], &key, &nkey);
        if (ngnodes[g] < 0)
            continue; /* a route not on this topology: written as it is */
        uint64_t h = mc_hash_words(key, (size_t)nkey);
        size_t at = mc_index_start(&index, h);
        for (int j; (j = mc_index_next(&index, h, &at)) >= 0;)
            if (nkeys[j] == nkey && !memcmp(keys[j], key, sizeof(int64_t) * (size_t)nkey)) {
                same_as[g] = j;
                break;
            }
        if (same_as[g] < 0) {
            mc_index_add(&index, h, g);
            keys[g] = key;
            nkeys[g] = nkey;
        } else {
            free(key);
        }
    }
    /* templates: groups with at least one instance, numbered in the order the file lists their
     * first trees (phase by phase), as a reader meets them: numbered by their first instance, a
     * template listed first could be number 1, which no reader that has seen one tree accepts */
    int *tnum = mc_xmalloc(sizeof(int) * (size_t)(ng + 1));
    for (int g = 0; g < ng; g++)
        tnum[g] = -1;
    for (int g = 0; g < ng; g++)
        if (same_as[g] >= 0)
            tnum[same_as[g]] = -2;
    int *order = file_order(s);
    for (int i = 0; i < s->ntrees && order[i] >= 0; i++)
        if (tnum[gid[order[i]]] == -2)
            tnum[gid[order[i]]] = sym->ntemplates++;
    for (int g = 0; g < ng; g++) /* trees outside the phases, not listed */
        if (tnum[g] == -2)
            tnum[g] = sym->ntemplates++;
    free(order);
    sym->template_of = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    sym->instance_tree = mc_xcalloc((size_t)s->ntrees + 1, sizeof(char));
    for (int t = 0; t < s->ntrees; t++)
        sym->template_of[t] = tnum[gid[t]];
    for (int g = 0; g < ng; g++) {
        int r = same_as[g];
        if (r < 0)
            continue;
        MC_GROW(sym->inst, sym->inst_cap, sym->ninst + 1);
        mc_sched_instance_t *in = &sym->inst[sym->ninst++];
        in->template = tnum[r];
        in->nnodes = ngnodes[g];
        in->nodes = gnodes[g];
        gnodes[g] = NULL;
        in->ntrees = off[g + 1] - off[g];
        in->trees = mc_xmalloc(sizeof(int) * (size_t)(in->ntrees + 1));
        memcpy(in->trees, trees + off[g], sizeof(int) * (size_t)in->ntrees);
        for (int i = off[g]; i < off[g + 1]; i++)
            sym->instance_tree[trees[i]] = 1;
    }
    for (int g = 0; g < ng; g++) {
        free(keys[g]);
        free(gnodes[g]);
    }
    free(keys);
    free(nkeys);
    free(gnodes);
    free(ngnodes);
    free(same_as);
    free(tnum);
    mc_index_free(&index);
    free(local);
    free(off);
    free(trees);
    free(gid);
}

void mc_sched_sym_free(mc_sched_sym_t *sym)
{
    for (int i = 0; i < sym->ninst; i++) {
        free(sym->inst[i].nodes);
        free(sym->inst[i].trees);
    }
    free(sym->inst);
    free(sym->template_of);
    free(sym->instance_tree);
    memset(sym, 0, sizeof(*sym));
}

mc_status_t mc_sched_sym_expand(mc_sched_t *s, const mc_topo_t *topo, const int *tmpl, int n,
                                const int *nodes, int nnodes, const int *pieces,
                                const char *where, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int *tnodes = NULL;
    int *local = mc_xmalloc(sizeof(int) * (size_t)(topo->nnodes + 1));
    int *gpu = mc_xmalloc(sizeof(int) * (size_t)(topo->nnodes + 1));
    for (int x = 0; x < topo->nnodes; x++)
        local[x] = gpu[x] = -1;
    for (int g = 0; g < topo->ngpus; g++)
        gpu[topo->gpu_node[g]] = g;
    int nt = mc_sched_sym_walk(s, topo, tmpl, n, local, &tnodes, NULL, NULL);
    if (nt != nnodes) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s: the instance names %d nodes, its template "
                        "passes %d", where, nnodes, nt);
        goto out;
    }
    for (int i = 0; i < nt; i++)
        local[tnodes[i]] = i;
    for (int i = 0; i < n && st == MC_OK; i++) {
        const mc_tree_t *tr = &s->trees[tmpl[i]];
        int root = gpu[nodes[local[topo->gpu_node[tr->root]]]];
        if (root < 0) {
            st = mc_err_set(err, MC_ERR_INVALID, "%s: node %s stands for a GPU but is not one",
                            where, topo->nodes[nodes[local[topo->gpu_node[tr->root]]]].name);
            break;
        }
        int ti = mc_sched_add_tree_like(s, tr, pieces[i], root);
        tr = &s->trees[tmpl[i]]; /* adding may move the trees */
        for (int e = 0; e < tr->nedges && st == MC_OK; e++) {
            const mc_tree_edge_t *ed = &tr->edges[e];
            mc_route_t rt = {.nlinks = ed->nlinks, .via_gpu = -1};
            rt.src_gpu = gpu[nodes[local[topo->gpu_node[ed->parent]]]];
            rt.dst_gpu = gpu[nodes[local[topo->gpu_node[ed->child]]]];
            if (ed->via_gpu >= 0)
                rt.via_gpu = gpu[nodes[local[topo->gpu_node[ed->via_gpu]]]];
            int bad = rt.src_gpu < 0 || rt.dst_gpu < 0 || (ed->via_gpu >= 0 && rt.via_gpu < 0);
            for (int j = 0; j < ed->nlinks && !bad; j++) {
                const mc_link_t *l = &topo->links[ed->links[j]];
                rt.links[j] = mc_topo_find_link(topo, nodes[local[l->src]], nodes[local[l->dst]]);
                bad = rt.links[j] < 0;
            }
            if (bad)
                st = mc_err_set(err, MC_ERR_INVALID, "%s: tree %d, edge %d -> %d of the template "
                                "has no counterpart on the instance's nodes (a GPU that is not "
                                "one, or a missing link)", where, tmpl[i], ed->parent, ed->child);
            else
                st = mc_sched_add_edge_route(s, ti, &rt, err);
        }
    }
out:
    free(tnodes);
    free(local);
    free(gpu);
    return st;
}
