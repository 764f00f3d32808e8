#!/usr/bin/env bash
# Command-line tests for 'meshcast synth': exit codes, the one-line summary, atomic output that
# 'meshcast validate' accepts, and the paper's case 1 with figures derived from its cluster
# (one 1.25e9 B/s NIC per host: p2p pushes 4 GiB through a source NIC, alpa-bcast 1 GiB).
. "$(dirname "$0")/lib.sh"
cd "$ROOT"
topo=topologies/aws-p3.8xlarge-x5.xml
A='A={host:2,gpu:4}@0..7'
B='B={host:2,gpu:4}@8..15'
move='i32[1024,1024,512] A[host,_,_] -> B[host,_,_]'

expect_exit 0 "help" -- "$MESHCAST" synth --help
expect_grep "$TMP/out" '^usage: meshcast synth' "help text"
expect_grep "$TMP/out" 'alpa-bcast' "help lists the strategies"
expect_exit 2 "no topology" -- "$MESHCAST" synth --mesh "$A" --mesh "$B" "$move" -o "$TMP/s.xml"
expect_exit 2 "no output" -- "$MESHCAST" synth --topo $topo --mesh "$A" --mesh "$B" "$move"
expect_exit 2 "unknown strategy" -- "$MESHCAST" synth --topo $topo --strategy nope \
  --mesh "$A" --mesh "$B" "$move" -o "$TMP/s.xml"
expect_grep "$TMP/err" "unknown strategy 'nope'.*p2p-lb" "unknown strategy names the known ones"
expect_true "nothing written on failure" -- test ! -e "$TMP/s.xml"
expect_exit 2 "bad chunk" -- "$MESHCAST" synth --topo $topo --strategy p2p --chunk 0 \
  --mesh "$A" --mesh "$B" "$move" -o "$TMP/s.xml"
expect_exit 2 "bad memory limit" -- "$MESHCAST" synth --topo $topo --strategy p2p \
  --memory-limit lots --mesh "$A" --mesh "$B" "$move" -o "$TMP/s.xml"
expect_exit 2 "bad notation" -- "$MESHCAST" synth --topo $topo --strategy p2p \
  --mesh "$A" --mesh "$B" 'i32[1024] A[nope] -> B[_]' -o "$TMP/s.xml"
expect_exit 1 "missing topology file" -- "$MESHCAST" synth --topo "$TMP/none.xml" \
  --strategy p2p --mesh "$A" --mesh "$B" "$move" -o "$TMP/s.xml"

# p2p: 8 single-edge trees in one phase; GPU 0 and GPU 4 each push 4 x 1 GiB through their
# host's NIC: 4 * 2^30 / 1.25e9 = 3.436 s against a bound of 2^30 / 1.25e9 = 859 ms: ratio 4.00.
expect_exit 0 "p2p case1" -- "$MESHCAST" synth --topo $topo --strategy p2p \
  --mesh "$A" --mesh "$B" "$move" -o "$TMP/p2p.xml"
expect_grep "$TMP/out" '^p2p: 8 trees, 1 phase, simulated 3\.43[6-9] s, lower bound 859\.0. ms .* ratio 4\.00' "p2p summary"
expect_exit 0 "p2p schedule validates" -- "$MESHCAST" validate --topo $topo "$TMP/p2p.xml"
# A simulation stopped at its allowance is not passed off as simulated.
expect_exit 0 "p2p case1, sim-work 1" -- "$MESHCAST" synth --topo $topo --strategy p2p \
  --sim-work 1 --mesh "$A" --mesh "$B" "$move" -o "$TMP/p2p1.xml"
expect_grep "$TMP/out" '^p2p: 8 trees, 1 phase, estimated \(the simulation stopped at --sim-work\) at least .* ratio >=' "summary says estimated"
# what it reached (nothing, after one unit) is below the bound: the bound is the larger lower bound
expect_grep "$TMP/out" 'at least 859.01 ms, lower bound 859.01 ms .*ratio >=1.00' "estimate at least the bound"
expect_exit 2 "bad sim-work" -- "$MESHCAST" synth --topo $topo --strategy p2p --sim-work -3 \
  --mesh "$A" --mesh "$B" "$move" -o "$TMP/s.xml"

# alpa-bcast: one round of two ring chains (host 0 -> host 2, host 1 -> host 3), each run as two
# channels (NCCL duplicates its ring channels), 1 GiB per NIC.
expect_exit 0 "alpa-bcast case1" -- "$MESHCAST" synth --topo $topo --strategy alpa-bcast \
  --mesh "$A" --mesh "$B" "$move" -o "$TMP/bc.xml"
expect_grep "$TMP/out" '^alpa-bcast: 4 trees, 1 phase, .* ratio 1\.0[0-4]' "alpa-bcast summary"
expect_exit 0 "alpa-bcast schedule validates" -- "$MESHCAST" validate --topo $topo "$TMP/bc.xml"

# A task file works the same; a forced chunk size is honoured (a channel's 512 MiB / 128 MiB = 4
# chunks).
printf 'mesh %s\nmesh %s\nmove %s\n' "$A" "$B" "$move" > "$TMP/case1.task"
expect_exit 0 "task file and --chunk" -- "$MESHCAST" synth --topo $topo --strategy alpa-bcast \
  --task-file "$TMP/case1.task" --chunk 128M -o "$TMP/bc4.xml"
expect_grep "$TMP/bc4.xml" 'chunks="4"' "forced chunk count"

# One GPU to three rail-joined hosts (h100-single-3x8 in `modern`): the referee's losing variants
# stop at the fastest's simulated time, so the allowance reaches the channel race, whose channels
# (2 per large tree, or 4 per tree once the rail stripes' 2-channel try is covered) hide the
# network's per-message overhead (1.19 of the bound before; 1.07 with the rail stripes).
h100=topologies/dgx-h100-x4.xml
expect_exit 0 "single sender to 3 hosts" -- "$MESHCAST" synth -q --topo $h100 \
  --mesh 'A={gpu:1}@[0]' --mesh 'B={host:3,gpu:8}@8..31' 'i32[268435456] A[_] -> B[_]' \
  -o "$TMP/single.xml"
expect_grep "$TMP/out" '^meshcast: .* ratio 1\.(0[0-9]|1[0-5])' "single sender within 1.15 of the bound"
expect_grep "$TMP/out" 'plan=[^ ]*\+ch[248]' "single sender cut into channels"

# A component with too many candidates for Z3's relaxation (151 trees: a permutation of 8 MiB
# pieces between the hosts of 4 DGX H100s) takes the fractional model's split, rounded unit by
# unit to the least-loaded links. Each host sends 3 pieces (24 MiB) over its 8 NICs: 3 MiB per
# NIC's PCIe link fractionally; rounding may add a 256 KiB unit (1/32 of a piece), no more. The
# greedy seeds alone, which fill units up to the slowest tree's fixed cost, left 4 MiB on some.
expect_exit 0 "permutation over 4 hosts" -- "$MESHCAST" synth -q --topo $h100 \
  --mesh 'M={X:4,Y:4,Z:2}@0..31' 'bf16[8192,8192] M[(X,Y),_] -> M[(Y,X),_]' -o "$TMP/perm.xml"
expect_exit 0 "permutation simulated" -- "$MESHCAST" sim --topo $h100 --links 400 "$TMP/perm.xml"
expect_true "no NIC PCIe link above 3.25 MiB" -- awk '/ PCI busy /{for(i=1;i<NF;i++)
  if($(i+1)=="MiB" && $i+0>3.25) bad=1; n++} END{exit bad || n==0}' "$TMP/out"

# An all-gather over four DGX A100 (32 GPUs, 8 rails), 256 MiB: the estimate preferred pieces
# split over chains across the hosts and then through each host, which were too large to
# simulate within the allowance and were kept on their estimate at 1.64 of the bound; ranked with
# their fill at shared pace, the stars over the hosts are certified, simulated and raced.
dgxa=topologies/dgx-a100-x4.xml
expect_exit 0 "all-gather over 4 hosts" -- "$MESHCAST" synth -q --rlimit 2000000 --topo $dgxa \
  --mesh 'M={g:32}@0..31' 'f32[8192,8192] M[g,_] -> M[_,_]' -o "$TMP/ag.xml"
expect_grep "$TMP/out" '^meshcast: .* ratio 1\.(0[0-9]|10)' "all-gather within 1.10 of the bound"
expect_grep "$TMP/out" ' sim_s=' "all-gather simulated, not estimated"
# The summary's time is then the referee's run of the written schedule, taken from its memo
# (mc_sim_run_memo): that of a fresh simulation of the file, and the same line with no allowance.
cp "$TMP/out" "$TMP/ag.out"
expect_exit 0 "all-gather simulated afresh" -- "$MESHCAST" sim --topo $dgxa "$TMP/ag.xml"
expect_true "summary's time is the fresh simulation's" -- bash -c \
  '[ "$(grep -o "simulated [^,]*" "$1" | cut -d" " -f2-)" = "$(awk "/^makespan/{print \$2 \" \" \$3}" "$2")" ]' \
  _ "$TMP/ag.out" "$TMP/out"
expect_exit 0 "all-gather, sim-work 0" -- "$MESHCAST" synth -q --rlimit 2000000 --sim-work 0 \
  --topo $dgxa --mesh 'M={g:32}@0..31' 'f32[8192,8192] M[g,_] -> M[_,_]' -o "$TMP/ag0.xml"
expect_true "the same line without an allowance" -- bash -c \
  'diff <(sed "s/ag0\.xml/ag.xml/" "$1") "$2"' _ "$TMP/out" "$TMP/ag.out"
expect_true "the same schedule without an allowance" -- cmp "$TMP/ag.xml" "$TMP/ag0.xml"

# An all-gather over eight DGX H100 (64 GPUs), 1 GiB: the plan from the shape-based candidates
# (585 trees) is too large to simulate within the allowance and states its estimate (2.61 ms); the
# priced plan is simulated (2.98 ms). The simulated one is written: the estimate left out what
# the simulator charges, and the other plan simulates at 4.54 ms, 1.80 of the bound.
printf '<cluster version="1" name="h100-x8"><nodes type="dgx-h100" count="8"/><network><rails latency="1us"/></network></cluster>\n' > "$TMP/h100-x8.xml"
expect_exit 0 "all-gather over 8 hosts" -- "$MESHCAST" synth -q --rlimit 2000000 --sim-work 0 \
  --topo "$TMP/h100-x8.xml" --mesh 'M={g:64}@0..63' 'f32[16384,16384] M[g,_] -> M[_,_]' \
  -o "$TMP/ag8.xml"
expect_grep "$TMP/out" '^meshcast: .* simulated .* ratio 1\.(0[0-9]|1[0-9])' "8-host all-gather simulated, within 1.20 of the bound"
expect_grep "$TMP/out" ' sim_s=' "8-host all-gather states a simulated time"

# One GPU's 1 GiB to the other 63 GPUs of 8 MI250 boxes (RCCL's rccl-topo_8p1h.xml: 4 NICs of
# 24 GB/s for 8 GPUs whose x8 PCIe bridges carry 12 GB/s, a partial xGMI mesh): each NIC needs
# the stripes of both its GPUs, and the root host's trees, every stripe starting at GPU 0, must
# be planned around each other's load on its one- and two-lane xGMI links. One rail per NIC and
# the root's hops to non-neighbours over PCIe: 2.34 of the bound (fractional optimum 1.36); a
# rail per GPU: 2.24 (1.21); the root host's trees planned together: 1.06, fractional 1.00.
printf '<cluster version="1" name="mi250-x8"><nodes file="%s" count="8"/><network><switch latency="1us"/></network></cluster>\n' \
  "$ROOT/topologies/rccl-topo_8p1h.xml" > "$TMP/mi250-x8.xml"
expect_exit 0 "broadcast over 8 MI250 hosts" -- "$MESHCAST" synth -q --rlimit 2000000 \
  --topo "$TMP/mi250-x8.xml" --mesh 'S={g:1}@0' --mesh 'D={g:63}@1..63' \
  'f32[16384,16384] S[_,_] -> D[_,_]' -o "$TMP/mi250b.xml"
expect_grep "$TMP/out" '^meshcast: .* simulated .* ratio 1\.(0[0-9]|1[0-5])' "8-host MI250 broadcast within 1.15 of the bound"
expect_true "its fractional optimum within 1% of the bound" -- awk '{for(i=1;i<=NF;i++){
  split($i,kv,"="); v[kv[1]]=kv[2]}} END{exit !(v["frac_s"] > 0 && v["frac_s"] <= 1.01 * v["bound_s"])}' "$TMP/out"

# An uneven reshuffle of 4 MiB over eight DGX-1 boxes (64 GPUs; shards of 28, 4, 8 and 24 rows,
# to the mesh in reverse): NCCL's rings (24,192 trees), raced last, simulate 3e-15 of their time
# below the 4,032-tree plan, both 226.4 us. A tie within the simulator's rounding keeps the plan
# with fewer trees (the rings were written before).
printf '<cluster version="1" name="dgx1-x8"><nodes file="%s" count="8"/><network><switch latency="1us"/></network></cluster>\n' \
  "$ROOT/topologies/dgx1-v100-hybrid-cube-mesh-topo.xml" > "$TMP/dgx1-x8.xml"
rows=$(for i in $(seq 16); do printf '28,4,8,24,'; done)
expect_exit 0 "uneven over 8 DGX-1 hosts" -- "$MESHCAST" synth -q --rlimit 2000000 \
  --topo "$TMP/dgx1-x8.xml" --mesh 'A={g:64}@0..63' --mesh "B={g:64}@[$(seq -s, 63 -1 0)]" \
  "f32[1024,1024] A[g{${rows%,}},_] -> B[_,g]" -o "$TMP/dgx1u.xml"
expect_grep "$TMP/out" '^meshcast: 4032 trees, 1 phase, simulated 226\.4 us' "the tie keeps the 4,032 trees"

# An all-gather of 512 MiB over four MI300X boxes (RCCL's rccl-topo_8p_940.xml: 8 GPUs on a full
# xGMI mesh, a NIC each): the priced plan spreads every shard over several trees (328 trees, 1.10
# of the bound); the balanced synthesis puts each shard whole on its own rail's chain across the
# hosts, wrapped around from its host, with a star at every host: 1.03.
printf '<cluster version="1" name="mi300x-x4"><nodes file="%s" count="4"/><network><rails latency="1us"/></network></cluster>\n' \
  "$ROOT/topologies/rccl-topo_8p_940.xml" > "$TMP/mi300x-x4.xml"
expect_exit 0 "all-gather over 4 MI300X hosts" -- "$MESHCAST" synth -q --rlimit 2000000 \
  --topo "$TMP/mi300x-x4.xml" --mesh 'M={g:32}@0..31' 'f32[16384,8192] M[g,_] -> M[_,_]' \
  -o "$TMP/mi300ag.xml"
expect_grep "$TMP/out" '^meshcast: .* simulated .* ratio 1\.0[0-6]' "4-host MI300X all-gather within 1.06 of the bound"
expect_grep "$TMP/out" 'plan=balanced' "by the balanced synthesis"

# 1 MiB sharded over the 8 GPUs of one PCIe box (one NIC, two CPU sockets), needed whole on every
# GPU of the other: the single-phase trees pay a message per 128 KiB shard at every relay and
# simulate 334.5 us; Alpa's scatter and all-gather in two phases, 277.9 us. The meshcast strategy
# races that plan too, so it is never slower than alpa-p2p (bench/probe, session 19).
expect_exit 0 "host broadcast over two one-NIC PCIe boxes" -- "$MESHCAST" synth -q --rlimit 2000000 \
  --topo "$ROOT/topologies/pcie-8gpu-1nic.xml" --mesh 'A={gpu:8}@0..7' --mesh 'B={gpu:8}@8..15' \
  'f32[512,512] A[gpu,_] -> B[_,_]' -o "$TMP/hb1m.xml"
expect_grep "$TMP/out" '^meshcast: 16 trees, 2 phases, simulated 277\.9 us' "as fast as alpa-p2p"
expect_grep "$TMP/out" 'plan=alpa-p2p\(.*\) why=faster .* trees_sim_s=0\.000334' "says it raced the trees"

# Twenty GPUs over five p3.8xlarge hosts, a 5x4 mesh to a 2x10 one (xla and the collectives
# refuse: no common refinement): the trees in chunks took 3.88 ms; p2p-lb's whole messages reach
# the bound, 3.86 ms, and the meshcast strategy kept them. Since session 39 its own trees reach
# the bound too (132 of them, the referee racing every kind of plan where components repeat),
# and p2p-lb's 36 whole messages are kept as the smaller schedule at the same time.
printf 'mesh M={a:5,b:4}@0..19\nmesh N={a:2,b:10}@0..19\nmove t: f32[3000,2000] M[a,b] -> N[b,a]\n' > "$TMP/odd.task"
expect_exit 0 "5x4 mesh to a 2x10 one over five hosts" -- "$MESHCAST" synth -q --rlimit 2000000 \
  --topo "$ROOT/topologies/aws-p3.8xlarge-x5.xml" --task-file "$TMP/odd.task" -o "$TMP/odd.xml"
expect_grep "$TMP/out" '^meshcast: .* simulated 3\.86 ms, lower bound 3\.86 ms' "at the bound, as p2p-lb"
expect_grep "$TMP/out" 'plan=p2p-lb\(.*\) why=fewer-trees' "says p2p-lb's plan won, as fast with fewer trees"

# A memory bound below the shards themselves cannot hold: the schedule is refused, not written.
expect_exit 1 "memory limit too small" -- "$MESHCAST" synth --topo $topo --strategy p2p \
  --memory-limit 1K --mesh "$A" --mesh "$B" "$move" -o "$TMP/mem.xml"
expect_grep "$TMP/err" 'strategy p2p cannot stay within --memory-limit 1.00 KiB: it needs [0-9]+ bytes' "says it cannot, with the bytes it needs"
expect_true "nothing written when invalid" -- test ! -e "$TMP/mem.xml"
finish
