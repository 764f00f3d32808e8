#!/usr/bin/env bash
# Command-line tests for 'meshcast bench': exit codes, suite and case selection, the exact CSV
# header, the geometric-mean rows, the SVG, case-file errors with line numbers, and the suite's
# invariant: every baseline schedule of every paper case validates and never beats the bound.
. "$(dirname "$0")/lib.sh"
cd "$ROOT"
header='suite,case,strategy,bytes,lower_bound_s,sim_s,ratio,algbw_gbps,synth_s,peak_mem_bytes,simulated,valid,exec_s,exec_steps_s,exec_nccl_s,cost_s,cost_err'

expect_exit 0 "help" -- "$MESHCAST" bench --help
expect_grep "$TMP/out" '^usage: meshcast bench' "help text"
expect_exit 2 "unknown suite" -- "$MESHCAST" bench --suite nosuch
expect_exit 2 "unknown strategy" -- "$MESHCAST" bench --suite paper --strategies p2p,nope
expect_exit 2 "stray argument" -- "$MESHCAST" bench extra
expect_exit 2 "no matching case" -- "$MESHCAST" bench --suite paper --cases 'zzz*'
expect_exit 0 "list" -- "$MESHCAST" bench --suite paper --list
expect_grep "$TMP/out" '^paper .*16 cases' "paper suite has 16 cases"
expect_grep "$TMP/out" 'case8-same-as-case7' "case 8 kept and named as the duplicate"

# Case 1 with two strategies: exact header, two rows, two geomean rows. 2 x 4 GPUs x 1 GiB = 8 GiB
# delivered; bound 2^30 / 1.25e9 = 0.859 s; p2p 4x the bound, alpa-bcast near it.
expect_exit 0 "case1 csv" -- "$MESHCAST" bench --suite paper --cases case1 \
  --strategies p2p,alpa-bcast --csv --svg "$TMP/chart.svg"
expect_true "csv header" -- test "$(head -1 "$TMP/out")" = "$header"
expect_true "four rows" -- test "$(wc -l < "$TMP/out")" -eq 5
expect_grep "$TMP/out" '^paper,case1,p2p,8589934592,0\.859[0-9]*,3\.43[5-9][0-9]*,(3\.999|4\.00)[0-9]*,.*,yes,yes,' "p2p row, simulated"
expect_grep "$TMP/out" '^paper,case1,alpa-bcast,8589934592,0\.859[0-9]*,0\.8[5-9][0-9]*,1\.0[0-4][0-9]*,.*,yes,' "alpa-bcast row"
# The plans the runtime executes take the schedule's time (one tree per destination, no relay):
# exec_s equals sim_s, with the dependency graph, in lockstep steps and on nccl lanes alike.
expect_grep "$TMP/out" '^paper,case1,p2p,[^,]*,[^,]*,(3\.43[0-9]*),.*,yes,yes,\1,\1,\1,' \
  "p2p row: executed as simulated"
# The cost model's estimate and its signed error: p2p's four sends per source NIC are exact
# arithmetic; its summary goes to stderr so that stdout stays one CSV.
expect_grep "$TMP/out" '^paper,case1,p2p,[^,]*,[^,]*,(3\.43[0-9]*),.*,\1,-?0\.000000$' \
  "p2p row: cost model's estimate equals the simulated time"
expect_grep "$TMP/out" '^all,geomean,p2p,.*,,,,,$' "geomean row: no estimate"
expect_grep "$TMP/err" '^cost model p2p +worst error +0\.0% \(paper/case1\)' "csv: summary on stderr"
expect_grep "$TMP/out" '^all,geomean,p2p,' "geomean row"
expect_grep "$TMP/chart.svg" '<svg' "svg written"
expect_true "no progress line when stderr is not a terminal" -- \
  test "$(grep -vc '^cost model ' "$TMP/err")" -eq 0
# On a terminal (script gives the command one) the progress line names the case and strategy.
if command -v script >/dev/null; then
  expect_exit 0 "progress on a terminal" -- script -qec \
    "'$MESHCAST' bench --suite paper --cases case1 --strategies p2p >/dev/null" /dev/null
  expect_grep "$TMP/out" 'bench: paper/case1 p2p' "progress line"
fi

# The table form carries the same figures.
expect_exit 0 "case1 table" -- "$MESHCAST" bench --suite paper --cases case1 --strategies p2p
expect_grep "$TMP/out" '^suite +case +strategy +bytes +bound +sim +time/lb +exec ' "table header"
expect_grep "$TMP/out" '^paper +case1 +p2p .* 4\.00 +4\.00 ' "exec column: executed time / bound"
expect_grep "$TMP/out" '^paper: executed plan / simulated schedule at most 1\.000 \(case1, p2p\)$' \
  "the worst executed / simulated of the suite"
expect_grep "$TMP/out" '^all +geomean +p2p ' "table geomean row"
# Each destination GPU of case 1 receives its 1 GiB tile once: peak memory 1 GiB, recv/GPU 1 GiB.
expect_grep "$TMP/out" '^paper +case1 +p2p .* 1\.00 GiB +1\.00 GiB +[-+][0-9.]+% +yes$' "peak memory and bytes received per GPU"
# The cost model's column and summary: p2p's four sends per source NIC are exact arithmetic.
expect_grep "$TMP/out" '^paper +case1 +p2p .* \+0\.0% +yes$' "cost model column"
expect_grep "$TMP/out" '^cost model p2p +worst error +0\.0% \(paper/case1\), median +0\.0% over 1 rows$' \
  "cost model summary"

# A simulation stopped at its allowance marks its row: estimated, not simulated.
expect_exit 0 "case1 sim-work 1" -- "$MESHCAST" bench --suite paper --cases case1 --strategies p2p \
  --sim-work 1 --csv
expect_grep "$TMP/out" '^paper,case1,p2p,.*,no,yes,0,0,0,[^,]*,[^,]*$' "estimated row says simulated=no, its plans not timed (0)"
expect_exit 0 "case1 sim-work 1 table" -- "$MESHCAST" bench --suite paper --cases case1 \
  --strategies p2p --sim-work 1
expect_grep "$TMP/out" '^paper +case1 +p2p +[0-9.]+ GiB +[0-9.]+ ms +>=' "estimated row marked >= in the table"
expect_exit 2 "bad sim-work" -- "$MESHCAST" bench --suite paper --cases case1 --sim-work lots

# Case-file errors name the file and line.
printf 'suite bad\ncase x\nmesh A={x:1}@[0]\n' > "$TMP/bad.cases"
expect_exit 1 "case before topology" -- "$MESHCAST" bench --suite "$TMP/bad.cases"
expect_grep "$TMP/err" 'bad\.cases:2: .*topology' "error names file and line"
printf 'topology %s/topologies/aws-p3.8xlarge-x5.xml\ncase x\nmesh A={x:1}@[0]\nmesh B={x:1}@[1]\nmove f32[8] A[_] -> C[_]\n' "$ROOT" > "$TMP/bad2.cases"
expect_exit 1 "bad task line" -- "$MESHCAST" bench --suite "$TMP/bad2.cases"
expect_grep "$TMP/err" 'bad2\.cases:5:' "task error carries the case file's line"

# What 'make demo' runs: every strategy on case 1; strategies that do not handle cross-mesh
# tasks say n/a and are not failures.
expect_exit 0 "demo command" -- "$MESHCAST" bench --suite paper --cases case1
expect_grep "$TMP/out" '^paper +case1 +alpa-bcast .* yes$' "demo shows alpa-bcast"

# The invariant over the whole paper suite for the baselines.
expect_exit 0 "paper suite, baselines" -- "$MESHCAST" bench --suite paper \
  --strategies p2p,p2p-lb,alpa-bcast --csv
expect_true "48 rows" -- test "$(grep -c '^paper,' "$TMP/out")" -eq 48
expect_true "every schedule valid" -- test "$(grep '^paper,' "$TMP/out" | grep -vc ',yes,')" -eq 0
expect_true "never below the bound" -- awk -F, '/^paper,/ && $7 < 1 - 1e-9 {exit 1}' "$TMP/out"

# The cost model stays within 10% of the meshcast schedule's simulated time on the paper's suite
# (docs/cost-model.md), and p2p's estimate, its traffic being the schedule's, within 1%.
expect_exit 0 "paper suite, meshcast and p2p" -- "$MESHCAST" bench --suite paper \
  --strategies meshcast,p2p --rlimit 2000000
expect_true "meshcast estimate within 10%" -- awk '/^cost model meshcast/ {gsub("%", "", $6); \
  found = 1; bad = $6 + 0 > 10} END {exit bad || !found}' "$TMP/out"
expect_true "p2p estimate within 1%" -- awk '/^cost model p2p/ {gsub("%", "", $6); \
  found = 1; bad = $6 + 0 > 1} END {exit bad || !found}' "$TMP/out"
finish
