/* Schedules whose instances stay compact (mc_sched_load_compact), for validating large files
 * without expanding them: an instance is kept once it is known to expand (its template's distinct
 * links exist between the renamed nodes, its GPUs are GPUs), which costs one link lookup per
 * distinct link of the template rather than one per link crossing of every tree. Validation then
 * checks each template once and each instance as a relabeling (mc_sched_sym_relabels); when that
 * does not prove an instance clean, the expanded schedule (mc_sched_sym_expanded) is checked so
 * that the report is the full check's, line for line. */
#include <stdlib.h>
#include <string.h>

#include "sched/sched_internal.h"

/* The template record of the trees tmpl[0..n), or NULL when a tree names a GPU or link this
 * topology lacks (the expansion then says so). */
static mc_sched_tmpl_t *tmpl_build(mc_sched_t *s, const mc_topo_t *topo, int k, const int *tmpl,
                                   int n)
{
    int *local = mc_xmalloc(sizeof(int) * (size_t)(topo->nnodes + 1));
    for (int x = 0; x < topo->nnodes; x++)
        local[x] = -1;
    int *nodes = NULL;
    int nn = mc_sched_sym_walk(s, topo, tmpl, n, local, &nodes, NULL, NULL);
    if (nn < 0) {
        free(local);
        return NULL;
    }
    s->tmpl = mc_xrealloc(s->tmpl, sizeof(*s->tmpl) * (size_t)(s->ntmpl + 1)); /* few of them */
    mc_sched_tmpl_t *t = &s->tmpl[s->ntmpl++];
    memset(t, 0, sizeof *t);
    t->k = k;
    t->ntrees = n;
    t->trees = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    memcpy(t->trees, tmpl, sizeof(int) * (size_t)n);
    t->nnodes = nn;
    t->nodes = nodes;
    for (int i = 0; i < nn; i++)
        local[nodes[i]] = i;
    char *seen = mc_xcalloc((size_t)topo->nlinks + 1, 1);
    char *gpu = mc_xcalloc((size_t)nn + 1, 1);
    int lcap = 0, gcap = 0, ocap = 0, nloc = 0;
    t->loc_off = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        const mc_tree_t *tr = &s->trees[tmpl[i]];
        t->loc_off[i] = nloc;
        MC_GROW(t->loc, ocap, nloc + 1 + 3 * tr->nedges);
        t->loc[nloc++] = local[topo->gpu_node[tr->root]];
        for (int e = 0; e < tr->nedges; e++) {
            const mc_tree_edge_t *ed = &tr->edges[e];
            t->loc[nloc++] = local[topo->gpu_node[ed->parent]];
            t->loc[nloc++] = local[topo->gpu_node[ed->child]];
            t->loc[nloc++] = ed->via_gpu < 0 ? -1 : local[topo->gpu_node[ed->via_gpu]];
            for (int j = 0; j < ed->nlinks; j++) {
                int l = ed->links[j];
                if (seen[l])
                    continue;
                seen[l] = 1;
                MC_GROW(t->links, lcap, t->nlinks + 1);
                t->links[t->nlinks++] = l;
            }
        }
        for (int j = t->loc_off[i]; j < nloc; j++)
            if (t->loc[j] >= 0 && !gpu[t->loc[j]]) {
                gpu[t->loc[j]] = 1;
                MC_GROW(t->gpus, gcap, t->ngpus + 1);
                t->gpus[t->ngpus++] = t->loc[j];
            }
    }
    t->ends = mc_xmalloc(sizeof(int) * (size_t)(2 * t->nlinks + 1));
    for (int j = 0; j < t->nlinks; j++) {
        t->ends[2 * j] = local[topo->links[t->links[j]].src];
        t->ends[2 * j + 1] = local[topo->links[t->links[j]].dst];
    }
    free(gpu);
    free(seen);
    free(local);
    return t;
}

mc_status_t mc_sched_sym_keep(mc_sched_t *s, const mc_topo_t *topo, int k, const int *tmpl, int n,
                              const int *nodes, int nnodes, const int *pieces, const char *where,
                              mc_err_t *err)
{
    int ti = 0;
    while (ti < s->ntmpl && s->tmpl[ti].k != k)
        ti++;
    mc_sched_tmpl_t *t = ti < s->ntmpl ? &s->tmpl[ti] : tmpl_build(s, topo, k, tmpl, n);
    int ok = t && t->nnodes == nnodes;
    for (int j = 0; ok && j < t->ngpus; j++)
        ok = topo->nodes[nodes[t->gpus[j]]].gpu >= 0;
    int *links = ok ? mc_xmalloc(sizeof(int) * (size_t)(t->nlinks + 1)) : NULL;
    for (int j = 0; ok && j < t->nlinks; j++)
        ok = (links[j] = mc_topo_find_link(topo, nodes[t->ends[2 * j]],
                                           nodes[t->ends[2 * j + 1]])) >= 0;
    if (!ok) {
        free(links);
        return mc_sched_sym_expand(s, topo, tmpl, n, nodes, nnodes, pieces, where, err);
    }
    MC_GROW(s->inst, s->inst_cap, s->ninst + 1);
    mc_sched_inst_t *in = &s->inst[s->ninst++];
    in->tmpl = (int)(t - s->tmpl);
    in->nodes = mc_xmalloc(sizeof(int) * (size_t)(nnodes + 1));
    memcpy(in->nodes, nodes, sizeof(int) * (size_t)nnodes);
    in->pieces = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    memcpy(in->pieces, pieces, sizeof(int) * (size_t)n);
    in->links = links;
    s->inst_trees += n;
    return MC_OK;
}

void mc_sched_inst_tree(const mc_sched_t *s, const mc_topo_t *topo, int i, int j, mc_tree_t *out,
                        mc_tree_edge_t *edges)
{
    const mc_sched_inst_t *in = &s->inst[i];
    const mc_sched_tmpl_t *t = &s->tmpl[in->tmpl];
    const mc_tree_t *tr = &s->trees[t->trees[j]];
    const int *loc = t->loc + t->loc_off[j];
    *out = *tr;
    out->piece = in->pieces[j];
    out->root = topo->nodes[in->nodes[loc[0]]].gpu;
    out->edges = edges;
    out->edge_cap = tr->nedges;
    for (int e = 0; e < tr->nedges; e++, loc += 3)
        edges[e] = (mc_tree_edge_t){.parent = topo->nodes[in->nodes[loc[1]]].gpu,
                                    .child = topo->nodes[in->nodes[loc[2]]].gpu,
                                    .via_gpu = loc[3] < 0 ? -1 : topo->nodes[in->nodes[loc[3]]].gpu};
}

int mc_sched_sym_relabels(const mc_sched_t *s, const mc_topo_t *topo)
{
    /* owner per link: -1 free, 0..ntmpl-1 a template's trees, ntmpl other trees, then instances */
    int *owner = mc_xmalloc(sizeof(int) * (size_t)(topo->nlinks + 1));
    int *tmpl_of = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    char *mark = mc_xcalloc((size_t)topo->nnodes + 1, 1);
    int ok = 1;
    for (int l = 0; l < topo->nlinks; l++)
        owner[l] = -1;
    for (int t = 0; t < s->ntrees; t++)
        tmpl_of[t] = s->ntmpl;
    for (int k = 0; k < s->ntmpl; k++)
        for (int j = 0; j < s->tmpl[k].ntrees; j++)
            tmpl_of[s->tmpl[k].trees[j]] = k;
    for (int t = 0; t < s->ntrees && ok; t++)
        for (int e = 0; e < s->trees[t].nedges && ok; e++)
            for (int j = 0; j < s->trees[t].edges[e].nlinks && ok; j++) {
                int l = s->trees[t].edges[e].links[j];
                if (l < 0 || l >= topo->nlinks)
                    continue;
                ok = owner[l] < 0 || owner[l] == tmpl_of[t];
                owner[l] = tmpl_of[t];
            }
    for (int i = 0; i < s->ninst && ok; i++) {
        const mc_sched_inst_t *in = &s->inst[i];
        const mc_sched_tmpl_t *t = &s->tmpl[in->tmpl];
        for (int j = 0; j < t->nnodes && ok; j++) {
            ok = !mark[in->nodes[j]];
            mark[in->nodes[j]] = 1;
        }
        for (int j = 0; j < t->nnodes; j++)
            mark[in->nodes[j]] = 0;
        for (int j = 0; j < t->nlinks && ok; j++) {
            int l = in->links[j];
            ok = owner[l] < 0 && topo->links[l].bw == topo->links[t->links[j]].bw;
            owner[l] = s->ntmpl + 1 + i;
        }
    }
    free(mark);
    free(tmpl_of);
    free(owner);
    return ok;
}

mc_sched_t *mc_sched_sym_expanded(const mc_sched_t *s, const mc_topo_t *topo)
{
    mc_sched_t *x = mc_sched_new(s->task, topo, s->strategy);
    mc_err_t err = {0};
    x->topo_fingerprint = s->topo_fingerprint;
    memcpy(x->params, s->params, sizeof x->params);
    x->nphases = s->nphases;
    x->mem_limit = s->mem_limit;
    x->workspace = s->workspace;
    for (int i = 0; i < s->nnotes; i++) {
        MC_GROW(x->notes, x->note_cap, x->nnotes + 1);
        x->notes[x->nnotes++] = mc_xstrdup(s->notes[i]);
    }
    for (int t = 0; t < s->ntrees; t++) {
        const mc_tree_t *tr = &s->trees[t];
        int ti = mc_sched_add_tree_like(x, tr, tr->piece, tr->root);
        x->trees[ti].edges = mc_xmalloc(sizeof(mc_tree_edge_t) * (size_t)(tr->nedges + 1));
        x->trees[ti].edge_cap = tr->nedges + 1;
        x->trees[ti].nedges = tr->nedges;
        memcpy(x->trees[ti].edges, tr->edges, sizeof(mc_tree_edge_t) * (size_t)tr->nedges);
    }
    /* kept instances expand (mc_sched_sym_keep checked every link and GPU they need) */
    for (int i = 0; i < s->ninst; i++) {
        const mc_sched_tmpl_t *t = &s->tmpl[s->inst[i].tmpl];
        mc_sched_sym_expand(x, topo, t->trees, t->ntrees, s->inst[i].nodes, t->nnodes,
                            s->inst[i].pieces, "instance", &err);
    }
    return x;
}

void mc_sched_sym_compact_free(mc_sched_t *s)
{
    for (int i = 0; i < s->ninst; i++) {
        free(s->inst[i].nodes);
        free(s->inst[i].pieces);
        free(s->inst[i].links);
    }
    for (int k = 0; k < s->ntmpl; k++) {
        mc_sched_tmpl_t *t = &s->tmpl[k];
        free(t->trees);
        free(t->nodes);
        free(t->links);
        free(t->ends);
        free(t->gpus);
        free(t->loc_off);
        free(t->loc);
    }
    free(s->inst);
    free(s->tmpl);
}
