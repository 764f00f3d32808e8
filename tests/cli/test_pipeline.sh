#!/usr/bin/env bash
# Command-line tests for 'meshcast pipeline' on the shipped examples: usage errors, bad files
# named with their line, the closed forms the JSON must meet (without communication 1F1B takes
# (B + S - 1)(f + b); the critical path splits into compute and communication; peak stored
# activations min(B, S - i) and min(B, 2(S - i) - 1)), and the SVG timeline.
. "$(dirname "$0")/lib.sh"
cd "$ROOT"
gpt=examples/gpt3-aws.pipeline

# py EXPR FILE: EXPR over the JSON in FILE (as j) is true
py() {
  python3 -c 'import json,sys; j=json.load(open(sys.argv[2])); sys.exit(0 if eval(sys.argv[1]) else 1)' "$@"
}

expect_exit 0 "help" -- "$MESHCAST" pipeline --help
expect_grep "$TMP/out" '^usage: meshcast pipeline' "help text"
expect_exit 0 "listed in meshcast --help" -- "$MESHCAST" --help
expect_grep "$TMP/out" '^  pipeline ' "command listed"
expect_exit 2 "no file" -- "$MESHCAST" pipeline
expect_exit 2 "bad order" -- "$MESHCAST" pipeline --order gpipe $gpt
expect_grep "$TMP/err" "order expects 1f1b, eager-1f1b or both, got 'gpipe'" "bad order named"
expect_exit 2 "unknown strategy" -- "$MESHCAST" pipeline --strategy fastest $gpt
expect_exit 2 "bad budget" -- "$MESHCAST" pipeline --budget soon $gpt
expect_exit 1 "missing file" -- "$MESHCAST" pipeline "$TMP/none.pipeline"

printf 'microbatches 2\nstage A={gpu:4}@0..3 forward 1ms backward 2ms\n' >"$TMP/notopo.pipeline"
expect_exit 2 "no topology anywhere" -- "$MESHCAST" pipeline "$TMP/notopo.pipeline"
expect_grep "$TMP/err" "has no 'topology' line: give --topo FILE" "missing topology explained"
expect_exit 0 "topology from --topo" -- "$MESHCAST" pipeline -q --topo topologies/aws-p3.8xlarge-x5.xml "$TMP/notopo.pipeline"
expect_grep "$TMP/out" '^iteration +6\.00 ms +6\.00 ms$' "one stage, two micro-batches: 2 x (1 + 2) ms"

printf 'microbatches 2\nstage A={gpu:4}@0..3 forward 1ms backward 2ms\nstage B={gpu:4}@2..5 forward 1ms backward 2ms\n' >"$TMP/bad.pipeline"
expect_exit 1 "overlapping stages" -- "$MESHCAST" pipeline --topo topologies/aws-p3.8xlarge-x5.xml "$TMP/bad.pipeline"
expect_grep "$TMP/err" "bad.pipeline:3: GPU 2 of stage B is already in stage A \(line 2\); expected disjoint meshes" "file, line, expected"
printf 'microbatches 2\nstage A={gpu:4}@0..3 forward 1ms backward 2ms\nstage B={gpu:4}@4..7 forward 1ms backward 2ms\nactivation h: f16[8] A[gpu] -> B[gpus]\n' >"$TMP/bad.pipeline"
expect_exit 1 "bad layout" -- "$MESHCAST" pipeline --topo topologies/aws-p3.8xlarge-x5.xml "$TMP/bad.pipeline"
expect_grep "$TMP/err" "bad.pipeline:4: unknown axis 'gpus' \(mesh B has gpu\)" "layout error with file and line"
expect_grep "$TMP/err" '^ +\^$' "caret under the column"

# GPT-3-like on the paper's cluster: S = 4, B = 16, f = 1.06e13 / (4 x 50e12) = 53 ms,
# b = 106.5 ms.
expect_exit 0 "gpt3 p2p JSON" -- "$MESHCAST" pipeline --strategy p2p --json $gpt
cp "$TMP/out" "$TMP/p2p.json"
expect_true "both orders" -- py '[o["order"] for o in j["orders"]] == ["1f1b", "eager-1f1b"]' "$TMP/p2p.json"
expect_true "1F1B without communication: (B + S - 1)(f + b)" -- \
  py 'abs(j["orders"][0]["no_comm_iteration_s"] - 19 * (0.053 + 0.1065)) < 1e-9' "$TMP/p2p.json"
expect_true "critical path = compute + communication" -- \
  py 'all(abs(o["critical_compute_s"] + o["exposed_comm_s"] - o["iteration_s"]) < 1e-9 for o in j["orders"])' "$TMP/p2p.json"
expect_true "communication never helps" -- \
  py 'all(o["iteration_s"] >= o["no_comm_iteration_s"] - 1e-12 for o in j["orders"])' "$TMP/p2p.json"
expect_true "peak stored activations: min(B, S - i) and min(B, 2(S - i) - 1)" -- \
  py 'j["orders"][0]["peak_stored"] == [4, 3, 2, 1] and j["orders"][1]["peak_stored"] == [7, 5, 3, 1]' "$TMP/p2p.json"
expect_true "six transfers, each stage's forward and backward" -- \
  py 'len(j["transfers"]) == 6 and [t["direction"] for t in j["transfers"]] == ["forward", "backward"] * 3' "$TMP/p2p.json"
expect_true "later boundaries reuse the first schedule" -- \
  py '[t["schedule_of"] for t in j["transfers"]] == [None, 0, 0, 0, 0, 0]' "$TMP/p2p.json"
expect_true "p2p sends the replicated 40 MiB to each of 4 GPUs over one 1.25 GB/s NIC" -- \
  py 'all(t["bytes"] == 4 * 40 * 2**20 and t["seconds"] > 4 * 40 * 2**20 / 1.25e9 for t in j["transfers"])' "$TMP/p2p.json"

expect_exit 0 "gpt3 alpa-bcast JSON" -- "$MESHCAST" pipeline --strategy alpa-bcast --json $gpt
cp "$TMP/out" "$TMP/bcast.json"
expect_true "a broadcast crosses the NIC once: under twice the bound" -- \
  py 'all(t["seconds"] < 2 * t["lower_bound_s"] for t in j["transfers"])' "$TMP/bcast.json"
expect_true "eager-1F1B hides more than 1F1B" -- \
  py 'j["orders"][1]["iteration_s"] < j["orders"][0]["iteration_s"] and j["orders"][1]["exposed_comm_s"] < j["orders"][0]["exposed_comm_s"]' "$TMP/bcast.json"

# Synthesis options reach the strategy.
expect_exit 1 "memory limit passed to the strategy" -- "$MESHCAST" pipeline --strategy p2p --memory-limit 1K $gpt
expect_grep "$TMP/err" "strategy p2p cannot stay within --memory-limit 1.00 KiB" "the strategy's refusal"

expect_exit 0 "one order" -- "$MESHCAST" pipeline --strategy p2p --order eager-1f1b $gpt
expect_grep "$TMP/out" '^ +eager-1f1b$' "one column"
expect_grep "$TMP/out" '^peak activations A +7$' "eager-1F1B's peak on stage A"

# Skip connections: the U-Transformer's h1 goes to B and D in one move, so one transfer to both;
# each consumer's gradient comes back on its own.
expect_exit 0 "utransformer" -- "$MESHCAST" pipeline --strategy p2p --json examples/utransformer-aws.pipeline
expect_true "skip connection A -> B,D and both gradients" -- \
  py 'sum(t["from"] == "A" for t in j["transfers"]) == 1 and any(t["from"] == "A" and t["to"] == "B,D" and t["direction"] == "forward" for t in j["transfers"]) and all(any(t["from"] == c and t["to"] == "A" for t in j["transfers"]) for c in "BD")' "$TMP/out"
expect_exit 0 "utransformer text" -- "$MESHCAST" pipeline --strategy p2p examples/utransformer-aws.pipeline
expect_grep "$TMP/out" "^transfer +A -> B,D +forward +1 tensor " "the text names both receiving stages"

# Timeline: per order 4 stages x 2 lanes; one bar per step (2 x 4 x 16) and per transfer (6 x 16).
expect_exit 0 "timeline" -- "$MESHCAST" pipeline --strategy alpa-bcast --timeline "$TMP/t.svg" $gpt
expect_true "SVG written" -- python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' "$TMP/t.svg"
expect_true "two lanes per stage per order" -- test "$(grep -Ec '>[A-D] (compute|comm)</text>' "$TMP/t.svg")" -eq 16
expect_true "one bar per step and transfer" -- test "$(grep -c '<rect' "$TMP/t.svg")" -eq $((2 * (128 + 96)))
expect_exit 1 "timeline into a missing folder" -- "$MESHCAST" pipeline --strategy p2p --timeline "$TMP/none/t.svg" $gpt

finish
