#!/usr/bin/env bash
# mpirun -np N meshcast run --backend mpi on small versions of the paper's single-sender cases
# and on random layouts between two 2x2 meshes, every strategy's schedule in one MPI job per
# case: every destination byte must arrive.
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/lib_run.sh"

mpi_cases 3< <(paper_small mpi | grep '^single'; random_moves 3 7)
finish_skips
