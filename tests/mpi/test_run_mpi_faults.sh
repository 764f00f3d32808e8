#!/usr/bin/env bash
# Faults under mpirun, each with its own clear error and well within the timeout: a peer that
# never arrives, a job with a different number of ranks than the schedule needs, a workspace
# smaller than the plan needs.
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/lib_run.sh"

fault_sched
expect_true "8 ranks" -- test "$(ranks_of "$sched")" -eq 8

# Rank 0 (GPU 0) holds data everybody downstream waits for, and never takes part.
start=$SECONDS
expect_exit 1 "absent peer" -- "${MPIRUN[@]}" -np 8 "$MESHCAST" run -q --backend mpi --timeout 2 \
  --absent-rank 0 --topo "$TOPO" "$sched"
# Whoever times out first names itself, its step and the peer it waited for (rank 0, or a rank
# that itself waits for rank 0).
expect_grep "$TMP/err" "meshcast: rank [1-7], step [0-9]+: timed out after 2.0 s waiting for the (receive|send) of [0-9]+ bytes \(tag [0-9]+\) (from|to) rank [0-7]" \
  "absent peer: names the rank, the step and the peer"
expect_true "absent peer: ends well within the limit" -- test $((SECONDS - start)) -lt 60

expect_exit 1 "3 ranks for an 8-rank schedule" -- "${MPIRUN[@]}" -np 3 "$MESHCAST" run -q \
  --backend mpi --timeout 5 --topo "$TOPO" "$sched"
expect_grep "$TMP/err" "the schedule needs 8 ranks \(one per GPU it involves\), mpirun started 3" \
  "3 ranks: says how many are needed"

expect_exit 1 "workspace too small" -- "${MPIRUN[@]}" -np 8 "$MESHCAST" run -q --backend mpi \
  --timeout 5 --workspace 16 --topo "$TOPO" "$sched"
expect_grep "$TMP/err" "rank [0-7]: the workspace buffer has 16 bytes, the plan needs at least [0-9]+" \
  "workspace too small: says which buffer and what it needs"
finish_skips
