#!/usr/bin/env bash
# Several consumers from the command line and task files: the canonical form and the pieces of
# examples/skip-connection.task, each strategy's bytes on the producer's NIC (p2p once per
# destination GPU that needs them, alpa-bcast once per consumer, meshcast once), validate and sim
# on the schedules, and errors with the file, line and column.
source "$(dirname "$0")/lib.sh"
TOPO="$ROOT/topologies/aws-p3.8xlarge-x5.xml"
TASK="$ROOT/examples/skip-connection.task"
MIB32=$((32 * 1024 * 1024))   # h1: f16[16,256,64,64]

expect_exit 0 "task" -- "$MESHCAST" task --topo "$TOPO" --task-file "$TASK"
expect_grep "$TMP/out" "^move h1: f16\[16,256,64,64\] A\[gpu,_,_,_\] -> B\[gpu,_,_,_\], D\[_,_,_,_\]$" \
  "task: canonical form with both consumers"
expect_grep "$TMP/out" "^ +0 +h1 +\[0:4,0:256,0:64,0:64\] +8\.00 MiB +0 +4,12-15$" \
  "task: a piece's destinations span both consumers"

nic_bytes() {
  "$MESHCAST" sim --json --links 100 --topo "$TOPO" "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(sum(int(l["bytes"]) for l in r["busiest_links"] if l["link"] == "h0/NIC0 -> h0/NET0"))'
}
for s in p2p:5 alpa-bcast:2 meshcast:1; do
  name=${s%:*} times=${s#*:}
  expect_exit 0 "$name: synth" -- "$MESHCAST" synth -q --topo "$TOPO" --strategy "$name" \
    --rlimit 2000000 --task-file "$TASK" -o "$TMP/$name.xml"
  expect_exit 0 "$name: validate" -- "$MESHCAST" validate -q --topo "$TOPO" "$TMP/$name.xml"
  expect_true "$name: A's NIC carries h1 $times time(s)" -- \
    test "$(nic_bytes "$TMP/$name.xml")" -eq $((times * MIB32))
done

expect_exit 2 "command line: consumers share a mesh" -- "$MESHCAST" task --mesh 'A={x:2}@0..1' \
  --mesh 'B={x:2}@2..3' 'f32[4,4] A[x,_] -> B[_,x], B[x,_]'
expect_grep "$TMP/err" "consumer mesh B shares GPU 2 with consumer mesh B; expected consumers on disjoint meshes \(a GPU holds one destination tile of a tensor\) at column 28" \
  "command line: the error says why"
expect_grep "$TMP/err" "^ {29}\^$" "command line: caret under the second consumer"

printf 'mesh A={x:1}@0\nmesh B={x:2}@4..5\n\nmove a: f32[4,4] A[_,_] -> B[x,_], f16[4,4] B[_,x]\n' >"$TMP/bad.task"
expect_exit 1 "task file: bad second consumer" -- "$MESHCAST" task --task-file "$TMP/bad.task"
expect_grep "$TMP/err" "bad\.task:4: dtype f16 does not match the source's f32 at column 31" \
  "task file: file, line and column"
finish
