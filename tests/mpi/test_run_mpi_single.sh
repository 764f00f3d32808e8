#!/usr/bin/env bash
# mpirun -np N meshcast run --backend mpi on small versions of the paper's single-sender cases
# and on random layouts between two 2x2 meshes, every strategy's schedule in one MPI job per
# case: every destination byte must arrive.
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/lib_run.sh"

while IFS=";" read -r -u 3 name m1 m2 move; do
  synth_all "$name" "$m1" "$m2" -- "$move"
  [ ${#SCHEDS[@]} -eq 0 ] && continue
  n=$(ranks_of "${SCHEDS[0]}")
  expect_exit 0 "$name ($move): mpirun -np $n" -- "${MPIRUN[@]}" -np "$n" "$MESHCAST" run -q \
    --backend mpi --timeout 20 --topo "$TOPO" "${SCHEDS[@]}"
  expect_true "$name: every schedule's bytes correct" -- \
    test "$(grep -c "mpi: $n ranks, .* every destination byte correct" "$TMP/out")" -eq ${#SCHEDS[@]}
done 3< <(paper_small mpi | grep '^single'; random_moves 3 7)
finish_skips
