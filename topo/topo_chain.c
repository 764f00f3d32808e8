/* NCCL's pipelined chain: its modelled time and chunk count (topo/topo_chain.h). */
#include <math.h>

#include "topo/topo_chain.h"

double mc_chain_time(const double *delay, const double *bw, int n, double bytes, int c,
                     int inflight)
{
    double chunk = bytes / c, first = 0, pace = 0;
    int w = inflight > 1 ? inflight : 1;
    for (int i = 0; i < n; i++) {
        double own = chunk / bw[i];
        first += delay[i] + own;
        pace = fmax(pace, fmax(own, (delay[i] + own) / w));
    }
    return first + (c - 1) * pace;
}

/* With u = 1 / c the pace is the largest of lines a + b u (one per route and regime), and
 * (c - 1) times a line is a / u - b u + b - a, convex in u, so the chain's time, the bytes' fill
 * plus the largest of those, is convex in u and has no local minimum in c but the least: the
 * first count whose next is no faster, found by bisection. */
int mc_chain_chunks(const double *delay, const double *bw, int n, double bytes, int most,
                    int inflight)
{
    int lo = 1, hi = most > 1 ? most : 1;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (mc_chain_time(delay, bw, n, bytes, mid + 1, inflight) <
            mc_chain_time(delay, bw, n, bytes, mid, inflight))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
