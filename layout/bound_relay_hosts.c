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

/* A host and how long its ingress takes to move what it needs. */
typedef struct host_time {
    double t;
    int h;
} host_time_t;

/* By time, the longest first, then by host. */
static int by_time(const void *a, const void *b)
{
    const host_time_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t > y->t ? -1 : 1;
    return x->h - y->h;
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
                            const uint64_t *s, const double *cap_in, double cap_out,
                            host_time_t *order, mc_best_t *best, mc_err_t *err)
{
    int n = 0;
    double c = al->cross;
    uint64_t bytes = 0;
    for (int h = 0; h < topo->nhosts; h++)
        if (s[h] && cap_in[h] > 0) {
            order[n++] = (host_time_t){(double)s[h] / cap_in[h], h};
            bytes += s[h];
        }
    if (n == 0 || !(cap_out > 0))
        return MC_OK;
    if ((double)bytes <= c * cap_out)
        return mc_bound_term(best, bytes, cap_out, c, a, "host", topo, NULL, err);
    mc_sort(order, (size_t)n, sizeof(host_time_t), by_time);
    uint64_t s_k = 0, best_s = 0;
    double c_k = 0, best_c = 0, best_t = -INFINITY;
    for (int i = 0; i < n; i++) {
        s_k += s[order[i].h];
        c_k += cap_in[order[i].h];
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

/* A link every route from a's GPUs to each GPU m of a set D crosses (the NIC on m's rail, where
 * the sender's side picks the rail by the receiver, NCCL's PXN), with b[m] the bytes m needs of
 * the pieces held only on a. A byte reaches m on a message from a GPU of a, over the link after
 * the network wait c, or relayed by a GPU r outside a, which had it no sooner than c and whose
 * message waits at least w_m (the least wait of a route into m from another GPU of its host, or
 * c from a third host). The relayed bytes enter m over its links (in_bw) after c + w_m, so by T
 *   sum_m max(0, b_m - in_bw[m] max(0, T - c - w_m)) <= cap(link) (T - c),
 * whose least T, found by bisection (the left side falls and the right grows), is the term; at
 * it, cap(link) (T - c) bytes go over the link, the term's bytes. */
static mc_status_t one_link(const mc_topo_t *topo, const mc_bound_ctx_t *al, int a, int link,
                            const int *ms, int n, const uint64_t *b, const double *w,
                            mc_best_t *best, mc_err_t *err)
{
    double c = al->cross, cap = al->index.cap[link], total = 0;
    for (int i = 0; i < n; i++)
        total += (double)b[ms[i]];
    if (!(cap > 0))
        return MC_OK;
    double lo = c, hi = c + total / cap;
    for (int it = 0; it < 64; it++) {
        double t = 0.5 * (lo + hi), direct = 0;
        for (int i = 0; i < n; i++)
            direct += fmax(0, (double)b[ms[i]] - al->in_bw[ms[i]] * fmax(0, t - c - w[ms[i]]));
        if (direct > cap * (t - c))
            lo = t; /* infeasible: every T up to here is */
        else
            hi = t;
    }
    return mc_bound_term(best, (uint64_t)floor(cap * (lo - c)), cap, c, a, "host", topo, NULL,
                         err);
}

/* (link, GPU) pairs, ordered by link then GPU. */
static int by_link(const void *x, const void *y)
{
    const int *p = x, *q = y;
    return p[0] != q[0] ? p[0] - q[0] : p[1] - q[1];
}

/* one_link over every link that all routes from a's GPUs to some GPU needing a's bytes cross;
 * cnt (per link, zero) and pairs, ms, w (per GPU) are scratch. */
static mc_status_t over_links(const mc_topo_t *topo, const mc_bound_ctx_t *al, int a,
                              const uint64_t *b, int *cnt, int *pairs, int *ms, double *w,
                              mc_best_t *best, mc_err_t *err)
{
    mc_err_t ignored = {0};
    mc_route_t r;
    int first, n = mc_topo_host_gpus(topo, a, &first), np = 0;
    for (int m = 0; m < topo->ngpus; m++) {
        if (!b[m])
            continue;
        int mfirst, mn = mc_topo_host_gpus(topo, mc_topo_gpu_host(topo, m), &mfirst);
        w[m] = al->cross;
        for (int g = mfirst; g < mfirst + mn; g++)
            if (g != m && mc_topo_route(topo, g, m, &r, &ignored) == MC_OK)
                w[m] = fmin(w[m], mc_topo_links_delay(topo, r.links, r.nlinks));
        for (int g = first; g < first + n; g++) {
            if (mc_topo_route(topo, g, m, &r, &ignored) != MC_OK)
                return mc_err_set(err, MC_ERR_INTERNAL, "%s:%d: GPU %d has no route to %d",
                                  __FILE__, __LINE__, g, m);
            for (int i = 0; i < r.nlinks; i++)
                if (++cnt[r.links[i]] == n) { /* on every route: a route crosses a link once */
                    pairs[2 * np] = r.links[i];
                    pairs[2 * np++ + 1] = m;
                }
        }
        for (int g = first; g < first + n; g++)
            if (mc_topo_route(topo, g, m, &r, &ignored) == MC_OK)
                for (int i = 0; i < r.nlinks; i++)
                    cnt[r.links[i]] = 0;
    }
    mc_sort(pairs, (size_t)np, 2 * sizeof(int), by_link);
    mc_status_t st = MC_OK;
    for (int i = 0, j; i < np && st == MC_OK; i = j) {
        int k = 0;
        for (j = i; j < np && pairs[2 * j] == pairs[2 * i]; j++)
            ms[k++] = pairs[2 * j + 1];
        st = one_link(topo, al, a, pairs[2 * i], ms, k, b, w, best, err);
    }
    return st;
}

mc_status_t mc_bound_relay_hosts(const mc_topo_t *topo, const mc_bound_ctx_t *al,
                                 const double *cap_in, const double *cap_out, mc_best_t *best,
                                 mc_err_t *err)
{
    int nh = topo->nhosts, ng = topo->ngpus;
    mc_status_t st = MC_OK;
    if (nh < 2 || !isfinite(al->cross))
        return MC_OK;
    /* the classes held on one host only, grouped by that host */
    int *first = mc_xcalloc((size_t)nh + 1, sizeof(int));
    int *home = mc_xmalloc(sizeof(int) * (size_t)(al->ncls + 1));
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
    int *cls = mc_xmalloc(sizeof(int) * (size_t)(first[nh] + 1));
    int *fill = mc_xmalloc(sizeof(int) * (size_t)nh);
    for (int h = 0; h < nh; h++)
        fill[h] = first[h];
    for (int i = 0; i < al->ncls; i++)
        if (home[i] >= 0)
            cls[fill[home[i]]++] = i;
    uint64_t *s = mc_xmalloc(sizeof(uint64_t) * (size_t)nh);
    uint64_t *b = mc_xmalloc(sizeof(uint64_t) * (size_t)ng);
    int *stamp = mc_xmalloc(sizeof(int) * (size_t)nh);
    host_time_t *order = mc_xmalloc(sizeof(host_time_t) * (size_t)nh);
    int *cnt = mc_xcalloc((size_t)topo->nlinks + 1, sizeof(int));
    int *pairs = mc_xmalloc(sizeof(int) * 2 * (size_t)ng * MC_ROUTE_MAX_LINKS);
    int *ms = mc_xmalloc(sizeof(int) * (size_t)ng);
    double *w = mc_xmalloc(sizeof(double) * (size_t)ng);
    for (int a = 0; a < nh && st == MC_OK; a++) {
        if (first[a] == first[a + 1])
            continue;
        for (int h = 0; h < nh; h++) {
            s[h] = 0;
            stamp[h] = -1;
        }
        for (int g = 0; g < ng; g++)
            b[g] = 0;
        for (int k = first[a]; k < first[a + 1]; k++) {
            const mc_piece_t *p = al->cls[cls[k]].p;
            uint64_t bytes = al->cls[cls[k]].bytes;
            for (int j = 0; j < p->ndests; j++) {
                int h = mc_topo_gpu_host(topo, p->dests[j]);
                if (h == a)
                    continue;
                b[p->dests[j]] += bytes;
                if (stamp[h] != k) { /* distinct bytes: once per host */
                    stamp[h] = k;
                    s[h] += bytes;
                }
            }
        }
        if (nh > 2)
            st = one_host(topo, al, a, s, cap_in, cap_out[a], order, best, err);
        if (st == MC_OK && al->routed)
            st = over_links(topo, al, a, b, cnt, pairs, ms, w, best, err);
    }
    free(first);
    free(home);
    free(cls);
    free(fill);
    free(s);
    free(b);
    free(stamp);
    free(order);
    free(cnt);
    free(pairs);
    free(ms);
    free(w);
    return st;
}
