#!/usr/bin/env bash
# Command-line tests for 'meshcast sim' on hand-written schedules for the paper's cluster, with
# figures derived from the cluster: a 5 MB row crosses 10 links (6 PCIe at 0.5 us,
# 4 network at 1 us: 7 us) behind one 1.25e9 B/s NIC, and pays NCCL's 14 us network alpha, so one
# phase takes 14 + 7 us + 4 ms = 4.021 ms; two phases 8.042 ms; both rows at once share host 0's
# NIC: 21 us + 8 ms. The lower bound is host 0's NIC: 10 MB / 1.25e9 B/s plus the least wait of a
# message between hosts, alpha and the path's latencies, 14 + 7 us: 8.021 ms.
. "$(dirname "$0")/lib.sh"
cd "$ROOT"
topo=topologies/aws-p3.8xlarge-x5.xml
data=tests/data/sched
fp=$("$MESHCAST" validate -q --topo $topo $data/two-phases.xml 2>&1 | grep -o 'is [0-9a-f]\{16\}' | cut -c4-)
for f in two-phases shared; do
  if [ -n "$fp" ]; then sed "s/topology=\"[0-9a-f]*\"/topology=\"$fp\"/" $data/$f.xml >"$TMP/$f.xml"
  else cp $data/$f.xml "$TMP/$f.xml"; fi
done

# json_near FILE KEY VALUE: the JSON's KEY is VALUE within 1e-6 relative
json_near() {
  python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; w=float(sys.argv[3]); sys.exit(abs(v-w) > 1e-6*abs(w))' "$@"
}

expect_exit 0 "help" -- "$MESHCAST" sim --help
expect_grep "$TMP/out" '^usage: meshcast sim' "help text"
expect_exit 2 "no topology" -- "$MESHCAST" sim "$TMP/two-phases.xml"
expect_exit 2 "no schedule" -- "$MESHCAST" sim --topo $topo
expect_exit 2 "bad --links" -- "$MESHCAST" sim --topo $topo --links many "$TMP/two-phases.xml"
expect_exit 1 "missing schedule" -- "$MESHCAST" sim --topo $topo "$TMP/none.xml"
expect_exit 1 "other topology" -- "$MESHCAST" sim --topo topologies/dgx-a100-x4.xml "$TMP/two-phases.xml"

expect_exit 0 "two phases" -- "$MESHCAST" sim --topo $topo "$TMP/two-phases.xml"
expect_grep "$TMP/out" '^makespan +8\.04 ms$' "makespan text"
expect_grep "$TMP/out" '^bound +8\.02 ms \(host-cut\)$' "bound text"
expect_grep "$TMP/out" '^ratio +1\.003$' "ratio text"
expect_grep "$TMP/out" '^algbw +1\.243 GB/s' "algbw: 10 MB / 8.042 ms"
expect_grep "$TMP/out" '^  h0/NIC0 -> h0/NET0 .* 99%' "the busiest link is host 0's NIC"

expect_exit 0 "two phases, JSON" -- "$MESHCAST" sim --json --topo $topo "$TMP/two-phases.xml"
cp "$TMP/out" "$TMP/two.json"
expect_true "makespan_s" -- json_near "$TMP/two.json" makespan_s 0.008042
expect_true "lower_bound_s" -- json_near "$TMP/two.json" lower_bound_s 0.008021
expect_true "ratio" -- json_near "$TMP/two.json" ratio 1.0026181
expect_true "algbw_gbps" -- json_near "$TMP/two.json" algbw_gbps 1.2434718

# The plans the runtime executes: the two rows, plus a token from GPU 0 to GPU 1 (0 bytes over
# NVLink: 3.4 us of alpha and 0.5 us of hop) that keeps row 1 off host 0's NIC until row 0 is
# through, as the phases say: 8.042 + 0.0039 = 8.0459 ms.
expect_exit 0 "executed" -- "$MESHCAST" sim --topo $topo --executed "$TMP/two-phases.xml"
expect_grep "$TMP/out" '^executed +8\.05 ms \(dependency graph, 3 sends\), 1\.000 x the makespan, 1\.003 x the bound$' \
  "executed text"
expect_true "one chunk in flight: no warning" -- test ! -s "$TMP/err"
expect_exit 0 "executed, JSON" -- "$MESHCAST" sim --json --topo $topo --executed "$TMP/two-phases.xml"
cp "$TMP/out" "$TMP/exec.json"
expect_true "executed_s" -- json_near "$TMP/exec.json" executed_s 0.0080459
expect_exit 0 "executed in steps" -- "$MESHCAST" sim --topo $topo --executed --steps "$TMP/two-phases.xml"
expect_grep "$TMP/out" '^executed +8\.05 ms \(lockstep micro-steps, 3 sends\)' "steps text"
expect_exit 2 "--steps alone" -- "$MESHCAST" sim --topo $topo --steps "$TMP/two-phases.xml"
expect_grep "$TMP/err" '--steps, --nccl and --lanes go with --executed' "--steps alone: says why"
expect_exit 2 "--nccl and --steps" -- "$MESHCAST" sim --topo $topo --executed --nccl --steps \
  "$TMP/two-phases.xml"
expect_grep "$TMP/err" 'one of --steps, --nccl and --lanes' "--nccl and --steps: says why"
expect_exit 0 "executed on nccl lanes" -- "$MESHCAST" sim --topo $topo --executed --lanes 4 \
  "$TMP/two-phases.xml"
expect_grep "$TMP/out" '^executed +8\.05 ms \(nccl, 4 lanes, 3 sends\)' "lanes text"
# The plans' own lanes: the two rows are in different phases, so they share lane 0.
expect_exit 0 "executed on the plans' lanes" -- "$MESHCAST" sim --topo $topo --executed --nccl \
  "$TMP/two-phases.xml"
expect_grep "$TMP/out" '^executed +8\.05 ms \(nccl, 1 lane, 3 sends\), 1\.000 x the makespan' \
  "--nccl text"

# A baseline that models NCCL's collective kernels keeps 8 chunks in flight per edge: sim times
# it so; the plans meshcast's runtime would execute send one at a time, which --executed says.
expect_exit 0 "alpa-bcast schedule" -- "$MESHCAST" synth -q --strategy alpa-bcast --topo $topo \
  --mesh 'A={x:1}@0' --mesh 'B={x:2}@[4,8]' 'f32[4194304] A[_] -> B[_]' -o "$TMP/bcast.xml"
expect_grep "$TMP/bcast.xml" ' chunks="[0-9]*" inflight="8"' "its chains keep NCCL's 8 steps in flight"
expect_exit 0 "executed, chunks in flight" -- "$MESHCAST" sim --topo $topo --executed "$TMP/bcast.xml"
expect_grep "$TMP/err" 'keeps up to 8 chunks in flight per edge, as NCCL.s collective kernels do' \
  "executed: warns that the runtime sends one chunk at a time"
# --in-flight 1 chunks the same baseline for meshcast's runtime: its plans then run as timed.
expect_exit 0 "alpa-bcast for the runtime" -- "$MESHCAST" synth -q --strategy alpa-bcast --topo $topo \
  --in-flight 1 --mesh 'A={x:1}@0' --mesh 'B={x:2}@[4,8]' 'f32[4194304] A[_] -> B[_]' \
  -o "$TMP/bcast1.xml"
expect_true "no inflight attribute" -- test -z "$(grep -l 'inflight=' "$TMP/bcast1.xml")"
expect_exit 0 "executed, one in flight" -- "$MESHCAST" sim --topo $topo --executed "$TMP/bcast1.xml"
expect_grep "$TMP/out" '^executed .*, 1\.000 x the makespan' "its plans run as it is timed"
expect_true "no warning" -- test ! -s "$TMP/err"
expect_exit 2 "--in-flight 0" -- "$MESHCAST" synth -q --strategy alpa-bcast --topo $topo \
  --in-flight 0 --mesh 'A={x:1}@0' --mesh 'B={x:2}@[4,8]' 'f32[4194304] A[_] -> B[_]'
expect_grep "$TMP/err" '--in-flight: expected chunks in flight between 1 and 64' "--in-flight 0: says why"

expect_exit 0 "shared NIC" -- "$MESHCAST" sim --json --topo $topo "$TMP/shared.xml"
cp "$TMP/out" "$TMP/shared.json"
expect_true "shared: makespan_s" -- json_near "$TMP/shared.json" makespan_s 0.008021
expect_grep "$TMP/err" 'has 4 violations.*timing it anyway' "shared: violations warned about"

# timeline: 16 busy links (10 per route, 4 of them shared by both, plus GPU1's own PCIe link:
# 10 + 1 + 5), one bar per link per phase (20)
expect_exit 0 "timeline" -- "$MESHCAST" sim --topo $topo --timeline "$TMP/t.svg" "$TMP/two-phases.xml"
expect_true "SVG written" -- python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' "$TMP/t.svg"
expect_true "one row per busy link" -- test "$(grep -c -- ' -&gt; ' "$TMP/t.svg")" -eq 16
expect_true "one bar per interval" -- test "$(grep -c '<rect' "$TMP/t.svg")" -eq 20
expect_exit 1 "timeline into a missing folder" -- "$MESHCAST" sim --topo $topo \
  --timeline "$TMP/none/t.svg" "$TMP/two-phases.xml"


# Relays that are no destination of their trees stage them whole, so they receive ahead of a
# slower child as the simulator lets them: the executed plans end with the schedule (they took
# 1.047 x its 322.4 us when such a relay had two staging slots).
expect_exit 0 "relays receive ahead" -- "$MESHCAST" sim --json -q \
  --topo topologies/dgx1-v100-hybrid-cube-mesh-topo.xml --executed $data/dgx1-relay-ahead.xml
cp "$TMP/out" "$TMP/relay.json"
expect_true "relays: executed_s is the makespan" -- python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(abs(j["executed_s"]-j["makespan_s"]) > 1e-9*j["makespan_s"])' "$TMP/relay.json"
expect_true "relays: makespan_s" -- json_near "$TMP/relay.json" makespan_s 0.0003223904
# On the nccl backend's lanes too: a relay's receive and its forwarding send are edges of their
# own lanes (9 lanes), so the relay receives ahead there as well (1.047 x the makespan with a lane
# per tree, the edges of a tree in lockstep).
expect_exit 0 "relays receive ahead on lanes" -- "$MESHCAST" sim --json -q \
  --topo topologies/dgx1-v100-hybrid-cube-mesh-topo.xml --executed --nccl $data/dgx1-relay-ahead.xml
cp "$TMP/out" "$TMP/relay-nccl.json"
expect_true "relays on lanes: executed_s is the makespan" -- python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(abs(j["executed_s"]-j["makespan_s"]) > 1e-9*j["makespan_s"] or j["executed_order"] != "nccl, 9 lanes")' "$TMP/relay-nccl.json"

# Ramped chunks (docs/schedule-format.md, `ramp`): a transpose between the DGX-1's halves with
# every tree's chunks ramped 2 moves each chunk in its own size in the simulator, the executed
# plans (dependency graph and nccl lanes) and the loopback run, whose roots pack their strided
# tiles into staging slots that must hold the largest chunk (slots of the first chunk's size
# delivered 13 M wrong bytes).
dgx1=topologies/dgx1-v100-hybrid-cube-mesh-topo.xml
expect_exit 0 "DGX-1 transpose" -- "$MESHCAST" synth -q --rlimit 200000 --topo $dgx1 \
  --mesh 'A={g:4}@0..3' --mesh 'B={g:4}@4..7' -o "$TMP/b.xml" 'bf16[4096,4096] A[g,_] -> B[_,g]'
sed 's/ chunks="\([0-9]*\)" ramp="[0-9]*"/ chunks="\1"/; s/ chunks="\([0-9]*\)"/ chunks="\1" ramp="2"/' \
  "$TMP/b.xml" > "$TMP/ramp.xml"
expect_exit 0 "ramped: valid" -- "$MESHCAST" validate -q --topo $dgx1 "$TMP/ramp.xml"
for order in "" --nccl; do
  expect_exit 0 "ramped: executed $order" -- "$MESHCAST" sim --json -q --topo $dgx1 --executed \
    $order "$TMP/ramp.xml"
  cp "$TMP/out" "$TMP/ramp.json"
  expect_true "ramped: executed_s is the makespan $order" -- python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(abs(j["executed_s"]-j["makespan_s"]) > 1e-9*j["makespan_s"])' "$TMP/ramp.json"
done
expect_exit 0 "ramped: run" -- "$MESHCAST" run --topo $dgx1 "$TMP/ramp.xml"
expect_grep "$TMP/out" 'every destination byte correct' "ramped: every byte arrives"
sed 's/ ramp="2"/ ramp="9"/' "$TMP/ramp.xml" > "$TMP/ramp9.xml"
expect_exit 1 "ramp 9" -- "$MESHCAST" sim --topo $dgx1 "$TMP/ramp9.xml"
expect_grep "$TMP/err" 'ramp9.xml:[0-9]*: .*attribute ramp' "ramp 9: the file, the line and the attribute"

finish
