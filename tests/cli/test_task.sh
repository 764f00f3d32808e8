#!/usr/bin/env bash
# Command-line tests of 'meshcast task': the paper's case 1 on its cluster (text and JSON, with
# the figures derived by hand in tests/unit/test_layout_bound.c), task files, every term of a
# DGX-1 broadcast's bound with where it binds, and every kind of malformed input with its exit
# code.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
P3=topologies/aws-p3.8xlarge-x5.xml
A='A={host:2,gpu:4}@0..7'
B='B={host:2,gpu:4}@8..15'
CASE1='i32[1024,1024,512] A[host,_,_] -> B[host,_,_]'

expect_exit 0 "help" -- "$MESHCAST" task --help
expect_grep "$TMP/out" '^usage: meshcast task' "help text"

# Case 1: two 1 GiB pieces, 8 GiB in all (each of 8 destination GPUs gets 1 GiB); each source
# host must push 1 GiB through its 1.25e9 B/s NIC: 0.859 s plus the 14 us network alpha and the
# 7 us of latencies of a route between hosts.
expect_exit 0 "case 1" -- "$MESHCAST" task --topo "$P3" --mesh "$A" --mesh "$B" "$CASE1"
expect_grep "$TMP/out" '^pieces: 2 ' "case 1 has two pieces"
expect_grep "$TMP/out" '^ +0 +t0 +\[0:512,0:1024,0:512\] +1\.00 GiB +0-3 +8-11$' "case 1 first piece"
expect_grep "$TMP/out" '^bytes to move: 8589934592 ' "case 1 total bytes"
expect_grep "$TMP/out" '^  GPU 12 +host 3 +1073741824 ' "case 1 GPU 12 needs 1 GiB"
expect_grep "$TMP/out" '^  host 2 +1073741824 ' "case 1 host 2 needs 1 GiB"
expect_grep "$TMP/out" '^lower bound: 859\.01 ms, bound by host-cut \(host 0\)$' "case 1 bound"
expect_grep "$TMP/out" '^peak memory bound: 1\.00 GiB' "case 1 memory bound"

expect_exit 0 "case 1 json" -- "$MESHCAST" task --json --topo "$P3" --mesh "$A" --mesh "$B" "$CASE1"
cp "$TMP/out" "$TMP/case1.json"
expect_true "case 1 json figures" -- python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["bytes_total"] == 8589934592
assert len(j["pieces"]) == 2 and j["npieces"] == 2
assert j["pieces"][0]["holders"] == [0, 1, 2, 3] and j["pieces"][0]["dests"] == [8, 9, 10, 11]
assert j["bound"] == "host-cut" and j["bound_where"] == 0
assert abs(j["lower_bound_s"] - (2**30 / 1.25e9 + 21e-6)) < 1e-9
assert len(j["need_bytes"]) == 20
assert j["need_bytes"][:8] == [0] * 8 and j["need_bytes"][8:16] == [2**30] * 8
assert j["host_need_bytes"] == [0, 0, 2**30, 2**30, 0]
' "$TMP/case1.json"

# Case 6 from a task file: 2 -> 3 hosts; a source host must send 1,069,547,520 bytes.
expect_exit 0 "case 6 task file" -- "$MESHCAST" task --topo "$P3" --task-file tests/data/tasks/paper-case6.task
expect_grep "$TMP/out" '^pieces: 4 ' "case 6 has four pieces"
expect_grep "$TMP/out" '^  host 3 +713031680 ' "case 6 middle host needs 1024 rows"
expect_grep "$TMP/out" '^lower bound: 855\.66 ms, bound by host-cut \(host 0\)$' "case 6 bound"

# LLaMA-2-70B on 1024 H100s (tests/data/tasks/llama70b-1024.task): every destination host needs
# the whole model, 2 x 68,975,329,280 bytes, through its 8 NICs of 50e9 B/s, each behind a
# 48e9 B/s PCIe Gen5 hop from its GPU: 8 x 48e9 B/s, 0.3592465 s, plus the least wait of a message
# between hosts: the network alpha and the latencies of a route, 14 + 6 us. 9 tensors x 8 source x 4 destination shards, overlapping in 8 pieces each.
expect_exit 0 "1024 GPUs" -- "$MESHCAST" task --json --topo topologies/dgx-h100-x128.xml \
  --task-file tests/data/tasks/llama70b-1024.task
cp "$TMP/out" "$TMP/llama.json"
expect_true "1024-GPU figures" -- python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
model = 2 * 68975329280
assert j["bytes_total"] == 128 * model and j["npieces"] == 72
assert len(j["need_bytes"]) == 1024 and j["need_bytes"][512] == model // 4 and j["need_bytes"][0] == 0
assert j["host_need_bytes"][64:] == [model] * 64 and j["host_need_bytes"][:64] == [0] * 64
assert j["bound"] == "host-cut" and j["bound_where"] == 64
assert abs(j["lower_bound_s"] - (model / 384e9 + 20e-6)) < 1e-9
' "$TMP/llama.json"

# Every term with where it binds. A 256 MiB broadcast from GPU 0 on the DGX-1 cube-mesh: the
# least max-flow from GPU 0 to a GPU of the other quad is 6 NVLinks (120e9 B/s) plus PCIe over
# QPI (6e9 B/s), 126e9 B/s, below GPU 0's own 132e9 (tests/unit/test_layout_bound_flow.c).
DGX1=topologies/dgx1-v100-hybrid-cube-mesh-topo.xml
BCAST='f32[8192,8192] S[_,_] -> D[_,_]'
expect_exit 0 "dgx1 broadcast" -- "$MESHCAST" task --topo "$DGX1" --mesh 'S={g:1}@0' \
  --mesh 'D={g:7}@1..7' "$BCAST"
expect_grep "$TMP/out" '^lower bound: 2\.13 ms, bound by flow \(holder group of GPU 0 to GPU 4\)$' \
  "broadcast bound by the flow term"
expect_grep "$TMP/out" '^  egress +2\.03 ms +holder group of GPU 0$' "egress term and its group"
expect_grep "$TMP/out" '^  flow +2\.13 ms +holder group of GPU 0 to GPU 4$' "flow term and its pair"
expect_grep "$TMP/out" '^  cut +2\.13 ms +bytes out of GPUs 0-3$' "cut term and its set"
expect_grep "$TMP/out" '^  host-cut +0\.0 us +-$' "a term that does not apply"
expect_exit 0 "dgx1 broadcast json" -- "$MESHCAST" task --json --topo "$DGX1" --mesh 'S={g:1}@0' \
  --mesh 'D={g:7}@1..7' "$BCAST"
cp "$TMP/out" "$TMP/bcast.json"
expect_true "broadcast terms in json" -- python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["bound"] == "flow" and j["bound_where"] == 4
assert abs(j["terms_s"]["flow"] - 2**28 / 126e9) < 1e-12
assert abs(j["terms_s"]["cut"] - 2**28 / 126e9) < 1e-12
assert j["terms_where"]["flow"] == {"text": "holder group of GPU 0 to GPU 4", "gpu": 4, "holder": 0}
assert j["terms_where"]["cut"]["gpus"] == [0, 1, 2, 3] and j["terms_where"]["cut"]["into"] is False
assert j["terms_where"]["host-cut"] is None and j["terms_where"]["ingress"]["gpu"] == 1
' "$TMP/bcast.json"

# The host-relay term (tests/unit/test_layout_bound_relay.c): 4 MiB from GPU 0 to the 31 other
# GPUs of four DGX H100 hosts. The three other hosts need it all; host 0's GPUs send at most
# 384e9 B/s out and each host takes 384e9 B/s in, and bytes a third host relays wait two network
# waits of 20 us: 20 us + (3 x 4 MiB + 3 x 20 us x 384e9 B/s) / (4 x 384e9 B/s) = 43.19 us (the
# cuts alone: 34.8 us, what main printed before the term).
expect_exit 0 "h100 x4 broadcast" -- "$MESHCAST" task --json --topo topologies/dgx-h100-x4.xml \
  --mesh 'S={g:1}@0' --mesh 'D={g:31}@1..31' 'f32[1024,1024] S[_,_] -> D[_,_]'
cp "$TMP/out" "$TMP/relay.json"
expect_true "broadcast over four hosts bound by the host-relay term" -- python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
want = 20e-6 + (3 * 4194304 + 3 * 20e-6 * 384e9) / (4 * 384e9)
assert abs(j["lower_bound_s"] - want) < 1e-12, j["lower_bound_s"]
assert abs(j["terms_s"]["host-relay"] + j["terms_s"]["latency"] - want) < 1e-12
assert j["terms_where"]["host-relay"] == {"text": "out of host 0", "host": 0}
' "$TMP/relay.json"

# The reach term (tests/unit/test_layout_bound_relay.c): 4 MiB from GPU 0 over RCCL's MI300X box,
# one xGMI link of 48e9 B/s between every two GPUs, a message's wait d = 3.9 us. Into each GPU the
# link from GPU 0 opens at d, the six others at 2d: (S + 13 d x 48e9) / (7 x 48e9) = 19.73 us
# (main printed 16.38 us: S / 336e9 + d).
expect_exit 0 "mi300x broadcast" -- "$MESHCAST" task --json --topo topologies/rccl-topo_8p_940.xml \
  --mesh 'S={g:1}@0' --mesh 'D={g:7}@1..7' 'f32[1024,1024] S[_,_] -> D[_,_]'
cp "$TMP/out" "$TMP/reach.json"
expect_true "broadcast over an xGMI mesh bound by the reach term" -- python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
want = (4194304 + 13 * 3.9e-6 * 48e9) / (7 * 48e9)
assert abs(j["lower_bound_s"] - want) < 1e-12, j["lower_bound_s"]
assert j["bound"] == "reach" and j["terms_where"]["reach"]["gpu"] == j["bound_where"]
' "$TMP/reach.json"

# Without a topology: pieces and needs only; JSON says there is no bound.
expect_exit 0 "no topology" -- "$MESHCAST" task --json --mesh 'A={g:4}' 'u8[5] A[g] -> A[_]'
cp "$TMP/out" "$TMP/ag.json"
expect_true "all-gather of 5 bytes over 2,2,1,0" -- python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["need_bytes"] == [3, 3, 4, 5] and j["bytes_total"] == 15
assert j["lower_bound_s"] is None and j["bound"] is None
assert [c["gpu"] for c in j["local_copies"]] == [0, 1, 2]
' "$TMP/ag.json"

# Long tables are truncated with a count.
expect_exit 0 "limit" -- "$MESHCAST" task --limit 3 --mesh 'A={x:8}' 'f32[64] A[x] -> A[_]'
expect_grep "$TMP/out" '^pieces: 8 ' "eight pieces"
expect_grep "$TMP/out" '^  \.\.\. 5 more pieces' "truncated piece table"

# Malformed notation: exit 2, the message points at the column.
bad() { # description expected-message move [meshes...]
  local desc=$1 msg=$2 move=$3; shift 3
  local args=()
  for m in "$@"; do args+=(--mesh "$m"); done
  expect_exit 2 "$desc" -- "$MESHCAST" task --topo "$P3" "${args[@]}" "$move"
  expect_grep "$TMP/err" "$msg" "$desc: message"
  expect_grep "$TMP/err" '^ +\^$' "$desc: caret"
}
bad "unknown axis" "unknown axis 'hots'" 'i32[8,8] A[hots,_] -> B[_,gpu]' "$A" "$B"
bad "axis used twice" "axis host is used twice" 'i32[8,8] A[host,host] -> B[_,gpu]' "$A" "$B"
bad "mesh size vs devices" "the mesh has 8 devices but 0..6 gives 7" 'i32[8] A[_] -> A[_]' 'A={host:2,gpu:4}@0..6'
bad "device outside topology" "device 20 of mesh B is outside the topology" 'i32[8] A[host] -> B[_]' "$A" 'B={x:8}@16..23'
bad "overflow" "overflows 64-bit byte counts" 'f64[4294967296,4294967296] A[_,_] -> B[_,_]' "$A" "$B"
bad "bad dtype" "unknown dtype 'f33'" 'f33[8] A[_] -> B[_]' "$A" "$B"
bad "shape mismatch" "shape does not match" 'f32[8,8] A[host,_] -> f32[8,9] B[host,_]' "$A" "$B"
bad "explicit sizes" "sum to 9, expected" 'f32[10] A[gpu{4,2,2,1}] -> B[_]' "$A" "$B"
expect_exit 2 "no move" -- "$MESHCAST" task --mesh "$A"
expect_exit 2 "unknown option" -- "$MESHCAST" task --bogus "$CASE1"
expect_exit 2 "bad limit" -- "$MESHCAST" task --limit -1 --mesh "$A" 'u8[8] A[host] -> A[_]'

# Task-file errors: exit 1, file and line.
expect_exit 1 "task file error" -- "$MESHCAST" task --task-file tests/data/tasks/bad-axis.task
expect_grep "$TMP/err" 'tests/data/tasks/bad-axis\.task:5: unknown axis .gpus.' "task file line"
expect_exit 1 "task file device outside topology" -- "$MESHCAST" task --topo "$P3" --task-file tests/data/tasks/bad-device.task
expect_grep "$TMP/err" 'bad-device\.task:3: device 20 of mesh B is outside the topology' "task file blamed"
expect_exit 1 "missing task file" -- "$MESHCAST" task --task-file tests/data/tasks/none.task

finish
