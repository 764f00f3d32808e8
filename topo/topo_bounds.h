/* Bounds on the physical quantities a topology file may give (topo/topo_bounds.c). */
#ifndef MC_TOPO_BOUNDS_H
#define MC_TOPO_BOUNDS_H

#include <stddef.h>

#include "topo/topo.h"

typedef enum { MC_QTY_BANDWIDTH, MC_QTY_LATENCY, MC_QTY_RATIO } mc_quantity_t;

/* 0 when v (bytes/s, seconds or a plain ratio) is within the bounds of its kind; otherwise -1,
 * with what was expected written to expected ("a bandwidth from 1 Mb/s to 100 TB/s"). */
int mc_topo_quantity_check(mc_quantity_t kind, double v, char *expected, size_t len);

/* Checks every link's bandwidth and latency once the graph is built, so that no loader, present
 * or future, hands an absurd figure to the bounds and the simulator. */
mc_status_t mc_topo_check_quantities(const mc_topo_t *t, mc_err_t *err);

#endif
