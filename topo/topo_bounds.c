/* Physical quantities in a topology, bounded at load time: a bandwidth of 1e-308 GB/s or 1e300
 * GB/s is a typo or an attack, and either would turn every lower bound and simulated time into
 * a meaningless 300-digit number. The bounds are wide enough for any hardware in sight (the
 * fastest links today are NVLink 5 at 900 GB/s per direction, the slowest NICs 1 Gb/s) and are
 * documented in docs/topology.md. */
#include <math.h>
#include <stdio.h>

#include "topo/topo_bounds.h"

static const struct {
    double lo, hi;
    const char *text;
} bounds[] = {
    [MC_QTY_BANDWIDTH] = {1e6 / 8, 1e14, "a bandwidth from 1 Mb/s to 100 TB/s"},
    [MC_QTY_LATENCY] = {0, 1, "a latency from 0 to 1 s"},
    [MC_QTY_RATIO] = {1e-3, 1e3, "a ratio from 1:1000 to 1000:1"},
};

int mc_topo_quantity_check(mc_quantity_t kind, double v, char *expected, size_t len)
{
    if (isfinite(v) && v >= bounds[kind].lo && v <= bounds[kind].hi)
        return 0;
    snprintf(expected, len, "%s", bounds[kind].text);
    return -1;
}

mc_status_t mc_topo_check_quantities(const mc_topo_t *t, mc_err_t *err)
{
    char expected[96];
    for (int i = 0; i < t->nlinks; i++) {
        const mc_link_t *l = &t->links[i];
        /* expected describes whichever of the two fails first */
        if (mc_topo_quantity_check(MC_QTY_BANDWIDTH, l->bw, expected, sizeof expected) == 0 &&
            mc_topo_quantity_check(MC_QTY_LATENCY, l->latency, expected, sizeof expected) == 0)
            continue;
        return mc_err_set(err, MC_ERR_INVALID, "%s: link %s -> %s (%g bytes/s, %g s): expected %s",
                          t->source, t->nodes[l->src].name, t->nodes[l->dst].name, l->bw,
                          l->latency, expected);
    }
    return MC_OK;
}
