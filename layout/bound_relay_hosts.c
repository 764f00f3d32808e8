/* The host-relay term of the lower bound (docs/synthesis.md, "Lower bound", "Relays between
 * hosts"). Bytes held only on host A and needed on other hosts reach each such host
 * h either on a message from a GPU of A or on a message from a GPU of a third host that received
 * them first. The first kind all leave A, to each host apart (a message has one destination); the
 * second kind crossed between hosts twice, so waited two network waits. A few relays spare A's
 * links but pay a wait; this term charges the cheaper mix of the two, which is what keeps a small
 * broadcast over many hosts above the one wait of the plain cuts. */
#include <math.h>
#include <stdlib.h>

#include "layout/bound_internal.h"

/* Ranks hosts by how long their ingress takes to move what they need (descending), then id. */
static const double *rank_time;
static int by_time(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (rank_time[x] != rank_time[y])
        return rank_time[x] > rank_time[y] ? -1 : 1;
    return x - y;
}

/* One holder host a, with s[h] the distinct bytes host h needs of the pieces held only on a.
 * A schedule that ends by T: no byte crosses between hosts before c = al->cross, and a byte
 * relayed by a third host crossed twice, so none of those enters h before 2c. With x_h the bytes
 * h gets on messages from a's GPUs and C_a, C_h the maximum flows out of a and into h:
 *   sum_h x_h <= C_a (T - c)           (they all leave a, each host's apart)
 *   s_h - x_h <= C_h max(0, T - 2c)    (the rest entered h after 2c)
 * If sum_h s_h <= c C_a, T >= c + sum s / C_a (the least T meets both with no relay). Otherwise
 * T > 2c, and for any set K of hosts, summing s_h - C_h (T - 2c) <= x_h over K:
 *   T >= c + (S_K + c C_K) / (C_K + C_a) = S_K / (C_K + C_a) + c (1 + C_K / (C_K + C_a)),
 * the largest over K reached on the hosts whose s_h / C_h is largest (those still taking relayed
 * bytes at the least feasible T), so the sets tried are the prefixes in that order. */
static mc_status_t one_host(const mc_topo_t *topo, const mc_bound_ctx_t *al, int a,
                            const uint64_t *s, const double *cap_in, double cap_out, int *order,
                            double *t_in, mc_best_t *best, mc_err_t *err)
{
    int n = 0;
    double c = al->cross;
    uint64_t bytes = 0;
    for (int h = 0; h < topo->nhosts; h++)
        if (s[h] && cap_in[h] > 0) {
            order[n++] = h;
            t_in[h] = (double)s[h] / cap_in[h];
            bytes += s[h];
        }
    if (n == 0 || !(cap_out > 0))
        return MC_OK;
    if ((double)bytes <= c * cap_out)
        return mc_bound_term(best, bytes, cap_out, c, a, "host", topo, NULL, err);
    rank_time = t_in;
    mc_sort(order, (size_t)n, sizeof(int), by_time);
    uint64_t s_k = 0, best_s = 0;
    double c_k = 0, best_c = 0, best_t = -INFINITY;
    for (int i = 0; i < n; i++) {
        s_k += s[order[i]];
        c_k += cap_in[order[i]];
        double t = c + ((double)s_k + c * c_k) / (c_k + cap_out);
        if (t > best_t) {
            best_t = t;
            best_s = s_k;
            best_c = c_k;
        }
    }
    return mc_bound_term(best, best_s, best_c + cap_out, c * (1 + best_c / (best_c + cap_out)), a,
                         "host", topo, NULL, err);
}

mc_status_t mc_bound_relay_hosts(const mc_topo_t *topo, const mc_bound_ctx_t *al,
                                 const double *cap_in, const double *cap_out, mc_best_t *best,
                                 mc_err_t *err)
{
    int nh = topo->nhosts;
    mc_status_t st = MC_OK;
    if (nh < 3 || !isfinite(al->cross))
        return MC_OK;
    /* the classes held on one host only, grouped by that host */
    int *first = mc_xmalloc(sizeof(int) * (size_t)(nh + 1)), *cls = NULL;
    int *home = mc_xmalloc(sizeof(int) * (size_t)(al->ncls + 1));
    for (int h = 0; h <= nh; h++)
        first[h] = 0;
    for (int i = 0; i < al->ncls; i++) {
        const mc_piece_t *p = al->cls[i].p;
        home[i] = mc_topo_gpu_host(topo, p->holders[0]);
        for (int j = 1; j < p->nholders && home[i] >= 0; j++)
            if (mc_topo_gpu_host(topo, p->holders[j]) != home[i])
                home[i] = -1;
        if (home[i] >= 0)
            first[home[i] + 1]++;
    }
    for (int h = 0; h < nh; h++)
        first[h + 1] += first[h];
    cls = mc_xmalloc(sizeof(int) * (size_t)(first[nh] + 1));
    int *fill = mc_xmalloc(sizeof(int) * (size_t)nh);
    for (int h = 0; h < nh; h++)
        fill[h] = first[h];
    for (int i = 0; i < al->ncls; i++)
        if (home[i] >= 0)
            cls[fill[home[i]]++] = i;
    uint64_t *s = mc_xmalloc(sizeof(uint64_t) * (size_t)nh);
    int *stamp = mc_xmalloc(sizeof(int) * (size_t)nh), *order = mc_xmalloc(sizeof(int) * (size_t)nh);
    double *t_in = mc_xmalloc(sizeof(double) * (size_t)nh);
    for (int a = 0; a < nh && st == MC_OK; a++) {
        if (first[a] == first[a + 1])
            continue;
        for (int h = 0; h < nh; h++) {
            s[h] = 0;
            stamp[h] = -1;
        }
        for (int k = first[a]; k < first[a + 1]; k++) {
            const mc_piece_t *p = al->cls[cls[k]].p;
            for (int j = 0; j < p->ndests; j++) {
                int h = mc_topo_gpu_host(topo, p->dests[j]);
                if (h != a && stamp[h] != k) { /* distinct bytes: once per host */
                    stamp[h] = k;
                    s[h] += al->cls[cls[k]].bytes;
                }
            }
        }
        st = one_host(topo, al, a, s, cap_in, cap_out[a], order, t_in, best, err);
    }
    free(first);
    free(home);
    free(cls);
    free(fill);
    free(s);
    free(stamp);
    free(order);
    free(t_in);
    return st;
}
