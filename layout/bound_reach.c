/* The reach term of the lower bound (docs/synthesis.md, "Lower bound", "When each link can first
 * carry the bytes"): a GPU receives what it needs over its incoming links, and a link can carry
 * none of it before some GPU that routes into the GPU over that link holds a byte of it and that
 * GPU's message has waited its route's overhead. On a partial mesh the fast links into a GPU are
 * often those from GPUs the holder reaches only through relays, each paying a message's wait, so
 * a small broadcast is held back by more than one wait. */
#include <math.h>
#include <stdlib.h>

#include "layout/bound_internal.h"

/* Per GPU, the least time any byte held only by the GPUs of H (held[g] != 0) can be at it, into
 * t[]: 0 on H; elsewhere a GPU holds a byte only once a message brought it, which waited its
 * route's overhead after its sender held the byte (store and forward: a relay sends what it has
 * received). Dijkstra over the GPUs with the routes' overheads as lengths; delay[x * n + y] is the
 * overhead of the route x -> y. */
static void earliest(int n, const char *held, const double *delay, double *t, char *done)
{
    for (int g = 0; g < n; g++) {
        t[g] = held[g] ? 0 : INFINITY;
        done[g] = 0;
    }
    for (;;) {
        int x = -1;
        for (int g = 0; g < n; g++)
            if (!done[g] && isfinite(t[g]) && (x < 0 || t[g] < t[x]))
                x = g;
        if (x < 0)
            return;
        done[x] = 1;
        for (int y = 0; y < n; y++)
            if (!done[y] && y != x)
                t[y] = fmin(t[y], t[x] + delay[x * n + y]);
    }
}

/* Orders (open time, capacity) pairs by open time. */
static int by_open(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* GPU m needs b bytes of the group: link l into it can carry them from open(l) on (the least over
 * the GPUs u routing into m over l of t[u] + the route's overhead) at its capacity. So by T at
 * most sum_l cap_l max(0, T - open(l)) bytes have entered m, and the least T that reaches b, on
 * the links open by then (K), is b / C_K + sum_K cap_l open(l) / C_K: bytes b over C_K, plus the
 * mean open time weighted by capacity as its wait. last[u * n + m] is the last link of the route
 * u -> m (-1 for none); open[] is all INFINITY between calls. */
static mc_status_t one_gpu(const mc_topo_t *topo, const mc_bound_ctx_t *al, int m, uint64_t b,
                           const double *t, const double *delay, const int *last, double *open,
                           double *pairs, mc_best_t *best, mc_err_t *err)
{
    int n = topo->ngpus, np = 0;
    for (int u = 0; u < n; u++) {
        int l = last[u * n + m];
        if (l >= 0 && isfinite(t[u]))
            open[l] = fmin(open[l], t[u] + delay[u * n + m]);
    }
    for (int u = 0; u < n; u++) {
        int l = last[u * n + m];
        if (l >= 0 && isfinite(open[l])) {
            pairs[2 * np] = open[l];
            pairs[2 * np++ + 1] = al->index.cap[l];
            open[l] = INFINITY; /* counted once, and left as found for the next GPU */
        }
    }
    mc_sort(pairs, (size_t)np, 2 * sizeof(double), by_open);
    double cap = 0, weighted = 0;
    for (int i = 0; i < np; i++) {
        cap += pairs[2 * i + 1];
        weighted += pairs[2 * i + 1] * pairs[2 * i];
        if (!(cap > 0))
            continue;
        double at = ((double)b + weighted) / cap;
        if (i == np - 1 || at <= pairs[2 * i + 2])
            return mc_bound_term(best, b, cap, weighted / cap, m, "GPU", topo, NULL, err);
    }
    return MC_OK;
}

mc_status_t mc_bound_reach(const mc_topo_t *topo, const mc_bound_ctx_t *al, mc_best_t *best,
                           mc_err_t *err)
{
    int n = topo->ngpus;
    mc_status_t st = MC_OK;
    mc_err_t ignored = {0};
    mc_route_t r;
    double *delay = mc_xmalloc(sizeof(double) * (size_t)n * (size_t)n);
    int *last = mc_xmalloc(sizeof(int) * (size_t)n * (size_t)n);
    for (int x = 0; x < n; x++)
        for (int y = 0; y < n; y++) {
            int ok = x != y && mc_topo_route(topo, x, y, &r, &ignored) == MC_OK && r.nlinks > 0;
            delay[x * n + y] = ok ? mc_topo_links_delay(topo, r.links, r.nlinks) : INFINITY;
            last[x * n + y] = ok ? r.links[r.nlinks - 1] : -1;
        }
    int *order = mc_xmalloc(sizeof(int) * (size_t)al->ncls);
    int *start = mc_xmalloc(sizeof(int) * (size_t)(al->ncls + 1));
    int ngroups = mc_bound_holder_groups(al, 0, order, start);
    char *held = mc_xmalloc((size_t)n), *done = mc_xmalloc((size_t)n);
    double *t = mc_xmalloc(sizeof(double) * (size_t)n);
    double *open = mc_xmalloc(sizeof(double) * (size_t)(topo->nlinks + 1));
    double *pairs = mc_xmalloc(sizeof(double) * 2 * (size_t)n);
    uint64_t *need = mc_xmalloc(sizeof(uint64_t) * (size_t)n);
    for (int l = 0; l < topo->nlinks; l++)
        open[l] = INFINITY;
    for (int gi = 0; gi < ngroups && st == MC_OK; gi++) {
        const mc_piece_t *p = al->cls[order[start[gi]]].p;
        for (int g = 0; g < n; g++) {
            held[g] = 0;
            need[g] = 0;
        }
        for (int j = 0; j < p->nholders; j++)
            held[p->holders[j]] = 1;
        for (int k = start[gi]; k < start[gi + 1]; k++) {
            const mc_piece_t *q = al->cls[order[k]].p;
            for (int j = 0; j < q->ndests; j++)
                need[q->dests[j]] += al->cls[order[k]].bytes;
        }
        earliest(n, held, delay, t, done);
        for (int m = 0; m < n && st == MC_OK; m++)
            if (need[m])
                st = one_gpu(topo, al, m, need[m], t, delay, last, open, pairs, best, err);
    }
    free(delay);
    free(last);
    free(order);
    free(start);
    free(held);
    free(done);
    free(t);
    free(open);
    free(pairs);
    free(need);
    return st;
}
