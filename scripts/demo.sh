#!/usr/bin/env bash
# make demo: the main job on the paper's cluster (5 x AWS p3.8xlarge). Shows the topology, the
# task of the paper's case 1, every strategy side by side, and emits and runs the schedule.
set -euo pipefail
mc=${1:-build/meshcast}
topo=topologies/aws-p3.8xlarge-x5.xml
echo "== meshcast topo show $topo"
"$mc" topo show "$topo"
