#!/usr/bin/env bash
# make demo: meshcast's main job on the resharding paper's cluster (5 x AWS p3.8xlarge, 4 V100
# each, one 10 Gb/s NIC per host). Shows the topology, the paper's case 1 as a task with its lower
# bound, every strategy side by side, then synthesizes, validates, simulates, emits and runs the
# schedule on the loopback backend with every destination byte checked.
set -euo pipefail
mc=${1:-build/meshcast}
topo=topologies/aws-p3.8xlarge-x5.xml
meshes=(--mesh 'A={host:2,gpu:4}@0..7' --mesh 'B={host:2,gpu:4}@8..15')
move='i32[1024,1024,512] A[host,_,_] -> B[host,_,_]'
out=${DEMO_OUT:-build/demo}
mkdir -p "$out"

step() { printf '\n== %s\n' "$*"; }

step "meshcast topo show $topo"
"$mc" topo show "$topo"

step "meshcast task: the paper's case 1 (2 GiB, dim 0 split over 2 hosts -> the same on 2 other hosts)"
"$mc" task --topo "$topo" "${meshes[@]}" "$move"

step "meshcast bench --suite paper --cases case1: every strategy, simulated on the same topology"
"$mc" bench --suite paper --cases case1

step "meshcast synth (strategy meshcast, deterministic rlimit)"
"$mc" synth --topo "$topo" "${meshes[@]}" "$move" --rlimit 2000000 -o "$out/case1.xml"

step "meshcast validate"
"$mc" validate --topo "$topo" "$out/case1.xml"

step "meshcast sim"
"$mc" sim --topo "$topo" "$out/case1.xml"

step "meshcast emit (CUDA code for a training repository)"
"$mc" emit --topo "$topo" "$out/case1.xml" -o "$out/gen" --name case1
ls -l "$out/gen"

# Every rank's shards live in this one process: about 10 GiB of memory for the 2 GiB tensor.
step "meshcast run --backend loopback: case 1 in full, every destination byte checked"
"$mc" run --topo "$topo" --backend loopback "$out/case1.xml"
