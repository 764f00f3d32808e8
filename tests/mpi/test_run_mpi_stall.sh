#!/usr/bin/env bash
# A rank that stops (SIGSTOP, as a debugger or a frozen node would) at each stage of a run under
# mpirun: set-up (before the start), transfer, check (before the results are gathered). Every wait
# is bounded, so the job must end within --timeout plus the stated 2 s of slack (plus mpirun's
# own start and teardown), naming the stopped rank; before, only the transfer was bounded and a
# rank stopped at set-up left the others in an untimed barrier.
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/lib_run.sh"

fault_sched

for stage in set-up transfer check; do
  start=$SECONDS
  expect_exit 1 "rank 3 stopped at $stage" -- "${MPIRUN[@]}" -np 8 "$MESHCAST" run -q \
    --backend mpi --timeout 3 --stop-rank 3 --stop-at "$stage" --topo "$TOPO" "$sched"
  expect_true "stopped at $stage: the job ends within the timeout and its slack" -- \
    test $((SECONDS - start)) -lt 20
  case $stage in
  transfer) # whoever notices first: rank 0 at the check, or a peer waiting on rank 3
    gate="rank 0, check: timed out after 3.0 s without a rank arriving: rank 3 did not reach it"
    peer="rank [0-7], step [0-9]+: timed out after 3.0 s waiting for the (send|receive) of"
    want="meshcast: ($gate|$peer [0-9]+ bytes \(tag [0-9]+\) (to|from) rank [0-7])" ;;
  *) want="meshcast: rank 0, $stage: timed out after 3.0 s without a rank arriving: rank 3"
     want="$want did not reach it \(stalled or dead\)" ;;
  esac
  expect_grep "$TMP/err" "$want" "stopped at $stage: names the rank and the stage"
done

expect_exit 2 "--stop-at without --stop-rank" -- "$MESHCAST" run -q --backend mpi \
  --stop-at check --topo "$TOPO" "$sched"
expect_exit 2 "unknown stage" -- "$MESHCAST" run -q --stop-rank 1 --stop-at lunch --topo "$TOPO" \
  "$sched"
expect_grep "$TMP/err" "--stop-at: expected set-up, transfer or check, got 'lunch'" \
  "unknown stage: named"
finish_skips
