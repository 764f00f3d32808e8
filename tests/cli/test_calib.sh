#!/usr/bin/env bash
# Command-line tests for the calibration suite (bench/calib.cases, docs/simulator.md): it runs
# only the strategy each case names, prints the comparison with the published figures, every
# bandwidth-bound row is within 10%, and a case whose figure the simulator misses fails the run.
# 'measured' lines are checked with the case file's line numbers.
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

expect_exit 0 "calib suite" -- "$MESHCAST" bench --suite calib
expect_grep "$TMP/out" '^calibration: simulated against published' "comparison printed"
expect_grep "$TMP/out" '^h100-sendrecv-nvlink +sendrecv +4\.00 GiB +180 +180 ' "sendrecv at the connection limit"
expect_grep "$TMP/out" '^a100-allgather-8 +all_gather +8\.00 GiB +230 ' "A100 all-gather row"
expect_grep "$TMP/out" '^v100-allgather-8 +all_gather +4\.00 GiB +129 ' "DGX-1 all-gather row, on NCCL's searched rings"
# NCCL keeps 8 steps of a connection in flight: a single ring's broadcast hides its per-step
# overhead behind the bytes (337.8 GB/s, -8.7%, when every step waited for the one before).
expect_grep "$TMP/out" '^h100-broadcast-8 +broadcast +4\.00 GiB +370 +36[5-9]\.[0-9] +-0\.' \
  "broadcast within 1%: the steps in flight overlap their overheads"
expect_grep "$TMP/out" '8 of 8 within 10%' "every bandwidth-bound row within 10%"
expect_true "one row per case" -- test "$(grep -c '^calib ' "$TMP/out")" -eq 9
expect_exit 0 "not in the default run" -- "$MESHCAST" bench --list
expect_grep "$TMP/out" '^calib .*not run by default' "calib is listed as not run by default"

# A published figure the simulator misses by more than 10% fails the run and says so.
printf 'topology %s/topologies/dgx-h100-x1.xml\ncase off\nmesh A={x:1}@[0]\nmesh B={x:1}@[1]\nmove f32[33554432] A[_] -> B[_]\nmeasured sendrecv 300 p2p https://example.org/made-up-for-the-test\n' "$ROOT" > "$TMP/off.cases"
expect_exit 1 "figure off by more than 10%" -- "$MESHCAST" bench --suite "$TMP/off.cases"
expect_grep "$TMP/err" '1 bandwidth-bound calibration row' "the miss is reported"

# bad_case NAME BODY WHAT MESSAGE: a case file NAME.cases on the one-host topology with BODY
# fails the run (exit 1) with MESSAGE (a grep pattern) on stderr.
bad_case() {
    printf 'topology %s/topologies/dgx-h100-x1.xml\n%b' "$ROOT" "$2" > "$TMP/$1.cases"
    expect_exit 1 "$3" -- "$MESHCAST" bench --suite "$TMP/$1.cases"
    expect_grep "$TMP/err" "$1\.cases:$4" "$3: error names file, line and what was expected"
}
bad_case bad 'case x\nmesh A={x:1}@[0]\nmeasured scatter 10 p2p src\n' "unknown operation" \
    "4: unknown operation 'scatter'"
bad_case bad2 'case x\nmesh A={x:1}@[0]\nmeasured sendrecv fast p2p src\n' "bad figure" \
    "4: expected 'measured OP GBPS STRATEGY SOURCE'"
bad_case bad3 'measured sendrecv 1 p2p src\n' "measured outside a case" \
    "2: 'measured' belongs inside a case"
finish
