/* Maximum flow (Dinic's algorithm) on a small network whose arcs keep their ids, so the lower
 * bounds can build one network per region of the topology and solve it many times with different
 * sources and sinks by changing only the capacities of the terminal arcs. igraph's maxflow copies
 * and indexes the whole graph on every call, which costs more than the flow itself here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layout/bound_internal.h"

/* Residual capacity below which an arc counts as saturated: bandwidths are bytes/s (1e9 and up),
 * so this is far below any rounding that matters and stops the search on rounding dust. */
#define FLOW_EPS 1e-3

void mc_flow_init(mc_flow_t *f, int nnodes)
{
    memset(f, 0, sizeof(*f));
    f->n = nnodes;
    f->head = mc_xmalloc(sizeof(int) * (size_t)nnodes);
    f->level = mc_xmalloc(sizeof(int) * (size_t)nnodes);
    f->iter = mc_xmalloc(sizeof(int) * (size_t)nnodes);
    f->queue = mc_xmalloc(sizeof(int) * (size_t)nnodes);
    for (int i = 0; i < nnodes; i++)
        f->head[i] = -1;
}

void mc_flow_free(mc_flow_t *f)
{
    free(f->head);
    free(f->level);
    free(f->iter);
    free(f->queue);
    free(f->next);
    free(f->to);
    free(f->cap);
    free(f->res);
    memset(f, 0, sizeof(*f));
}

static void push_arc(mc_flow_t *f, int u, int v, double cap)
{
    if (f->m == f->cap_m) {
        f->cap_m = f->cap_m ? 2 * f->cap_m : 64;
        f->next = mc_xrealloc(f->next, sizeof(int) * (size_t)f->cap_m);
        f->to = mc_xrealloc(f->to, sizeof(int) * (size_t)f->cap_m);
        f->cap = mc_xrealloc(f->cap, sizeof(double) * (size_t)f->cap_m);
        f->res = mc_xrealloc(f->res, sizeof(double) * (size_t)f->cap_m);
    }
    f->to[f->m] = v;
    f->cap[f->m] = cap;
    f->next[f->m] = f->head[u];
    f->head[u] = f->m++;
}

int mc_flow_arc(mc_flow_t *f, int u, int v, double cap)
{
    int id = f->m;
    push_arc(f, u, v, cap);
    push_arc(f, v, u, 0); /* its residual twin is id ^ 1 */
    return id;
}

void mc_flow_set(mc_flow_t *f, int arc, double cap)
{
    f->cap[arc] = cap;
}

static int levels(mc_flow_t *f, int s, int t)
{
    for (int i = 0; i < f->n; i++)
        f->level[i] = -1;
    int qh = 0, qt = 0;
    f->level[s] = 0;
    f->queue[qt++] = s;
    while (qh < qt) {
        int u = f->queue[qh++];
        for (int a = f->head[u]; a >= 0; a = f->next[a])
            if (f->res[a] > FLOW_EPS && f->level[f->to[a]] < 0) {
                f->level[f->to[a]] = f->level[u] + 1;
                f->queue[qt++] = f->to[a];
            }
    }
    return f->level[t] >= 0;
}

/* One augmenting path of at most limit along the level graph; depth is at most the level of t. */
static double augment(mc_flow_t *f, int u, int t, double limit)
{
    if (u == t)
        return limit;
    for (int *a = &f->iter[u]; *a >= 0; *a = f->next[*a]) {
        int v = f->to[*a];
        if (f->res[*a] <= FLOW_EPS || f->level[v] != f->level[u] + 1)
            continue;
        double got = augment(f, v, t, fmin(limit, f->res[*a]));
        if (got > 0) {
            f->res[*a] -= got;
            f->res[*a ^ 1] += got;
            return got;
        }
    }
    return 0;
}

double mc_flow_max(mc_flow_t *f, int s, int t)
{
    memcpy(f->res, f->cap, sizeof(double) * (size_t)f->m);
    double total = 0;
    while (levels(f, s, t)) {
        memcpy(f->iter, f->head, sizeof(int) * (size_t)f->n);
        for (double got; (got = augment(f, s, t, HUGE_VAL)) > 0;)
            total += got;
    }
    f->work += f->m;
    return total;
}
