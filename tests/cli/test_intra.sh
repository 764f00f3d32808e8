#!/usr/bin/env bash
# Same-mesh redistribution from the command line: the 'collectives' strategy on the research
# note's worked case (its plan and stated memory bound, checked by validate), --memory-limit for
# collectives and xla, refusals, the intra suite (every schedule valid, collectives at least 1.2x
# faster than xla in geometric mean), and every schedule run byte-exact under mpirun on one DGX.
source "$(dirname "$0")/lib.sh"
STRATEGIES="xla collectives"
source "$ROOT/tests/mpi/lib_run.sh"
TOPO="$ROOT/topologies/dgx-h100-x1.xml"
M='M={x:4,y:2}@0..7'
WORKED='f32[16,16,16] M[y,_,x] -> M[_,(x,y),_]'
synth() { "$MESHCAST" synth -q --topo "$TOPO" "$@"; }

expect_exit 0 "collectives on the worked case" -- synth --strategy collectives --mesh "$M" \
  "$WORKED" -o "$TMP/w.xml"
expect_grep "$TMP/w.xml" 'params="t0=all-to-all\(x\+y\)"' "one all-to-all over x and y"
# Shards 512 + 512 - 64 shared elements plus one array of 512: 1472 x 4 bytes.
expect_grep "$TMP/w.xml" 'mem-limit="5888"' "stated bound"
expect_exit 0 "validate checks the stated bound" -- "$MESHCAST" validate --topo "$TOPO" "$TMP/w.xml"

# The peak is the shards' 3840 bytes: the fused all-to-all stages nothing.
expect_exit 1 "collectives above --memory-limit" -- synth --strategy collectives \
  --memory-limit 3839 --mesh "$M" "$WORKED" -o "$TMP/no.xml"
expect_grep "$TMP/err" 'strategy collectives cannot stay within --memory-limit .* needs 3840 bytes' \
  "collectives says what it needs"
expect_true "nothing written" -- test ! -e "$TMP/no.xml"
expect_exit 0 "collectives within --memory-limit" -- synth --strategy collectives \
  --memory-limit 3840 --mesh "$M" "$WORKED" -o "$TMP/yes.xml"
expect_grep "$TMP/yes.xml" 'mem-limit="3840"' "the tighter limit is stated"
expect_exit 1 "xla above --memory-limit" -- synth --strategy xla --memory-limit 8K --mesh "$M" \
  "$WORKED" -o "$TMP/no.xml"
expect_grep "$TMP/err" 'strategy xla cannot stay within .* needs 14592 bytes' "xla says what it needs"

expect_exit 1 "cross-mesh refused" -- synth --strategy collectives --mesh 'A={x:4}@0..3' \
  --mesh 'B={x:4}@4..7' 'f32[8] A[x] -> B[x]' -o "$TMP/no.xml"
expect_grep "$TMP/err" 'expected a same-mesh redistribution' "refusal says why"

expect_exit 0 "bench intra: every schedule valid" -- "$MESHCAST" bench --suite intra \
  --strategies xla,collectives --csv
expect_true "collectives >= 1.2x faster than xla in geometric mean" -- awk -F, '
  $2 == "geomean" { t[$3] = $6 } END { exit !(t["xla"] / t["collectives"] >= 1.2) }' "$TMP/out"
expect_true "every intra case ran both" -- test "$(grep -c ',yes,' "$TMP/out")" -eq \
  "$(($(grep -c '^intra,' "$TMP/out") + 2))"

# Small same-mesh cases (the second mesh names the same GPUs in the same order), run under MPI.
mpi_cases 3<<'CASES'
worked;A={x:4,y:2}@0..7;B={x:4,y:2}@0..7;i32[16,16,16] A[y,_,x] -> B[_,(x,y),_]
ocaml;A={x:2,y:3}@0..5;B={x:2,y:3}@0..5;f32[6,5] A[x,_] -> B[y,_]
dt-s0s0s1;A={a:2,b:2,c:2}@0..7;B={a:2,b:2,c:2}@0..7;i16[8,8,8] A[(a,b),c,_] -> B[a,b,c]
uneven;A={a:2,b:2,c:2}@0..7;B={a:2,b:2,c:2}@0..7;f64[17,5] A[(a,b,c),_] -> B[_,(c,b,a)]
real;A={pp:2,dp:2,tp:2}@0..7;B={pp:1,dp:2,tp:4}@0..7;bf16[4,24,8] A[pp,tp,_] -> B[pp,tp,_]
CASES
# Across two hosts an all-gather crosses the network once per host and fans out there.
TOPO="$ROOT/topologies/dgx-h100-x4.xml"
mpi_cases 3<<'CASES'
hosts;A={h:2,g:2}@[0,1,8,9];B={h:2,g:2}@[0,1,8,9];u8[12,18] A[_,(h,g)] -> B[_,_]
CASES
finish_skips
