/* The parts of 'meshcast topo': per-GPU NVLink figures and NVLink domains that show and dot both
 * report, and the three subcommands' bodies. */
#ifndef MC_CLI_TOPO_H
#define MC_CLI_TOPO_H

#include "cli/cli.h"

typedef struct topo_gpu_summary {
    double nvlink_bw; /* sum of the GPU's outgoing NVLink bandwidth, bytes/s */
    int nvlinks;      /* NVLink lanes */
    double pcie_bw;   /* its upstream PCIe link, bytes/s (0 if none) */
    int domain;       /* NVLink domain index, -1 when it has no NVLink */
} topo_gpu_summary_t;

/* Fills one summary per GPU (array of t->ngpus) and returns the number of NVLink domains: sets of
 * GPUs joined by NVLinks, directly or through NVSwitches, numbered by their lowest GPU. */
int topo_summarize(const mc_topo_t *t, topo_gpu_summary_t *gpus);

int topo_show(const mc_topo_t *t, int json, int all_hosts);
int topo_dot(const mc_topo_t *t, const char *svg_path);

#endif
