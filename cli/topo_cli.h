/* The parts of 'meshcast topo': the subcommands' bodies. */
#ifndef MC_CLI_TOPO_H
#define MC_CLI_TOPO_H

#include "cli/cli.h"

int topo_show(const mc_topo_t *t, int json, int all_hosts);
int topo_dot(const mc_topo_t *t, const char *svg_path);

#endif
