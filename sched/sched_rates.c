/* Planned per-tree rates: within each phase every tree is a flow over the links of its edges
 * (weighted by how many of its edges cross each link) and gets its max-min fair share, so trees
 * that share links in one phase stay within every link's capacity by construction. A tree whose
 * edges have a connection limit (mc_topo_conn_cap) is planned no faster, as the simulator holds
 * it: the limit is one more link of the tree's own, and what it leaves goes to the others. */
#include <stdlib.h>

#include "sched/sched.h"

static void push_link(int l, int **links, double **weight, int *n, int *cap)
{
    if (*n + 1 > *cap) {
        int c = *cap;
        MC_GROW(*links, c, *n + 1);
        *weight = mc_xrealloc(*weight, sizeof(double) * (size_t)c);
        *cap = c;
    }
    (*links)[(*n)++] = l;
}

/* Appends tree t's distinct links and their multiplicities to links[]/weight[] from *n on, in
 * the order its edges first cross them (the solver's rates do not depend on the order of a
 * flow's links: it fixes links by level and then link id, and a flow's weight on a link is one
 * number); then, when its edges have a connection limit, the link id own (weight 1), whose
 * capacity it sets in *own_cap (the tightest limit), else 0. at[l] is -1 for every link on entry
 * and on return: while a tree is read, the place of its entry for l. */
static void tree_links(const mc_topo_t *topo, const mc_tree_t *t, int own, double *own_cap,
                       int *at, int **links, double **weight, int *n, int *cap)
{
    int start = *n;
    *own_cap = 0;
    for (int e = 0; e < t->nedges; e++) {
        const mc_tree_edge_t *ed = &t->edges[e];
        int on_topo = 1;
        for (int j = 0; j < ed->nlinks; j++) {
            int l = ed->links[j];
            if (l < 0 || l >= topo->nlinks) {
                on_topo = 0;
                continue;
            }
            if (at[l] >= 0) {
                (*weight)[at[l]] += 1.0;
                continue;
            }
            at[l] = *n;
            push_link(l, links, weight, n, cap);
            (*weight)[*n - 1] = 1.0;
        }
        double c = on_topo && ed->parent >= 0 && ed->parent < topo->ngpus && ed->child >= 0 &&
                   ed->child < topo->ngpus
                       ? mc_topo_conn_cap(topo, ed->parent, ed->child, ed->links, ed->nlinks)
                       : 0;
        if (c > 0 && (*own_cap == 0 || c < *own_cap))
            *own_cap = c;
    }
    for (int i = start; i < *n; i++)
        at[(*links)[i]] = -1;
    if (*own_cap > 0 && *n > start) {
        push_link(own, links, weight, n, cap);
        (*weight)[*n - 1] = 1.0;
    }
}

void mc_sched_plan_rates(mc_sched_t *s, const mc_topo_t *topo)
{
    /* the topology's links, then one per tree for its connection limit */
    double *cap = mc_xmalloc(sizeof(double) * (size_t)(topo->nlinks + s->ntrees + 1));
    for (int l = 0; l < topo->nlinks; l++)
        cap[l] = topo->links[l].bw;
    int *trees = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    int *off = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    double *rate = mc_xmalloc(sizeof(double) * (size_t)(s->ntrees + 1));
    int *links = NULL, ncap = 0;
    int *at = mc_xmalloc(sizeof(int) * (size_t)(topo->nlinks + 1));
    for (int l = 0; l < topo->nlinks; l++)
        at[l] = -1;
    double *weight = NULL;
    mc_sched_maxmin_t *m = mc_sched_maxmin_new(topo->nlinks + s->ntrees);
    for (int p = 0; p < s->nphases; p++) {
        int nt = 0, n = 0;
        off[0] = 0;
        for (int t = 0; t < s->ntrees; t++) {
            if (s->trees[t].phase != p)
                continue;
            tree_links(topo, &s->trees[t], topo->nlinks + t, &cap[topo->nlinks + t], at, &links,
                       &weight, &n, &ncap);
            trees[nt++] = t;
            off[nt] = n;
        }
        mc_sched_maxmin_solve(m, nt, off, links, weight, cap, rate);
        for (int i = 0; i < nt; i++)
            s->trees[trees[i]].rate = off[i + 1] > off[i] ? rate[i] : 0.0;
    }
    mc_sched_maxmin_free(m);
    free(cap);
    free(trees);
    free(off);
    free(rate);
    free(links);
    free(weight);
    free(at);
}
