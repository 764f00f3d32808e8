/* Planned per-tree rates: within each phase every tree is a flow over the links of its edges
 * (weighted by how many of its edges cross each link) and gets its max-min fair share, so trees
 * that share links in one phase stay within every link's capacity by construction. */
#include <stdlib.h>

#include "sched/sched.h"

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Appends tree t's distinct links and their multiplicities to links[]/weight[] from *n on. */
static void tree_links(const mc_tree_t *t, int nlinks, int **links, double **weight, int *n,
                       int *cap)
{
    int start = *n;
    for (int e = 0; e < t->nedges; e++)
        for (int j = 0; j < t->edges[e].nlinks; j++) {
            int l = t->edges[e].links[j];
            if (l < 0 || l >= nlinks)
                continue;
            if (*n + 1 > *cap) {
                int c = *cap;
                MC_GROW(*links, c, *n + 1);
                *weight = mc_xrealloc(*weight, sizeof(double) * (size_t)c);
                *cap = c;
            }
            (*links)[(*n)++] = l;
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
}

void mc_sched_plan_rates(mc_sched_t *s, const mc_topo_t *topo)
{
    double *cap = mc_xmalloc(sizeof(double) * (size_t)(topo->nlinks + 1));
    for (int l = 0; l < topo->nlinks; l++)
        cap[l] = topo->links[l].bw;
    int *trees = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    int *off = mc_xmalloc(sizeof(int) * (size_t)(s->ntrees + 1));
    double *rate = mc_xmalloc(sizeof(double) * (size_t)(s->ntrees + 1));
    int *links = NULL, ncap = 0;
    double *weight = NULL;
    mc_sched_maxmin_t *m = mc_sched_maxmin_new(topo->nlinks);
    for (int p = 0; p < s->nphases; p++) {
        int nt = 0, n = 0;
        off[0] = 0;
        for (int t = 0; t < s->ntrees; t++) {
            if (s->trees[t].phase != p)
                continue;
            tree_links(&s->trees[t], topo->nlinks, &links, &weight, &n, &ncap);
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
