/* Planned per-tree rates: within each phase every tree is a flow over the links of its edges
 * (weighted by how many of its edges cross each link) and gets its max-min fair share, so trees
 * that share links in one phase stay within every link's capacity by construction. A tree whose
 * edges have a connection limit (mc_topo_conn_cap) is planned no faster, as the simulator holds
 * it: the limit is one more link of the tree's own, and what it leaves goes to the others. */
#include <stdlib.h>

#include "sched/sched.h"

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

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

/* Appends tree t's distinct links and their multiplicities to links[]/weight[] from *n on; then,
 * when its edges have a connection limit, the link id own (weight 1), whose capacity it sets in
 * *own_cap (the tightest limit), else 0. */
static void tree_links(const mc_topo_t *topo, const mc_tree_t *t, int own, double *own_cap,
                       int **links, double **weight, int *n, int *cap)
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
            push_link(l, links, weight, n, cap);
        }
        double c = on_topo && ed->parent >= 0 && ed->parent < topo->ngpus && ed->child >= 0 &&
                   ed->child < topo->ngpus
                       ? mc_topo_conn_cap(topo, ed->parent, ed->child, ed->links, ed->nlinks)
                       : 0;
        if (c > 0 && (*own_cap == 0 || c < *own_cap))
            *own_cap = c;
    }
    mc_sort(*links + start, (size_t)(*n - start), sizeof(int), cmp_int);
    int w = start;
    for (int r = start; r < *n; r++) {
        if (w > start && (*links)[w - 1] == (*links)[r]) {
            (*weight)[w - 1] += 1.0;
            continue;
        }
        (*links)[w] = (*links)[r];
        (*weight)[w++] = 1.0;
    }
    *n = w;
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
    double *weight = NULL;
    mc_sched_maxmin_t *m = mc_sched_maxmin_new(topo->nlinks + s->ntrees);
    for (int p = 0; p < s->nphases; p++) {
        int nt = 0, n = 0;
        off[0] = 0;
        for (int t = 0; t < s->ntrees; t++) {
            if (s->trees[t].phase != p)
                continue;
            tree_links(topo, &s->trees[t], topo->nlinks + t, &cap[topo->nlinks + t], &links,
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
}
