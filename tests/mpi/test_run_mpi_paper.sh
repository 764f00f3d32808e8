#!/usr/bin/env bash
# mpirun -np N meshcast run --backend mpi on small versions of the many-to-many cases of the
# paper's suite (same layouts, gpu axes of 2 so that no case needs more than 10 ranks, small
# tensors), every strategy's schedule of a case in one MPI job: every destination byte must
# arrive. CASES (a regex on the case name) picks the cases; test_run_mpi_single.sh runs the rest.
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/lib_run.sh"
CASES=${CASES:-^case}

mpi_cases 3< <(paper_small mpi | grep -E "$CASES")
finish_skips
