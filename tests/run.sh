#!/usr/bin/env bash
# Runs every test of meshcast: the cmocka unit tests in BUILD/tests, the command-line tests in
# tests/cli, the MPI tests in tests/mpi, and the Python tests in python/tests (Debian's pytest
# under /usr/bin/python3, loading BUILD/libmeshcast.so). Prints one line per program and a
# closing "N passed, N failed, N skipped" line counting individual tests; exits 1 if any failed.
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/$build/meshcast"
[[ "$build" = /* ]] && bin="$build/meshcast"
bdir=$(dirname "$bin")
passed=0 failed=0 skipped=0 broken=()
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

count() { # program-name log-file exit-code
  local p f s
  p=$(grep -Eo '^\[  PASSED  \] [0-9]+|^[0-9]+ passed' "$2" | grep -Eo '[0-9]+' | awk '{s+=$1} END {print s+0}')
  f=$(grep -Eo '^\[  FAILED  \] [0-9]+|[0-9]+ failed' "$2" | grep -Eo '[0-9]+' | awk '{s+=$1} END {print s+0}')
  s=$(grep -Eo '^\[  SKIPPED \] [0-9]+|[0-9]+ skipped' "$2" | grep -Eo '[0-9]+' | awk '{s+=$1} END {print s+0}')
  p=${p:-0} f=${f:-0} s=${s:-0}
  if [ "$3" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  if [ "$f" -ne 0 ]; then
    broken+=("$1")
    printf '%-40s FAIL (%s passed, %s failed)\n' "$1" "$p" "$f"
    sed 's/^/    /' "$2" | grep -E 'FAIL|ERROR|error|Assert|expected|runtime error|Sanitizer' | head -40
  else
    printf '%-40s ok   (%s passed%s)\n' "$1" "$p" "$([ "$s" -ne 0 ] && echo ", $s skipped")"
  fi
}

cd "$root"
for t in "$bdir"/tests/test_*; do
  [ -x "$t" ] || continue
  name=unit/$(basename "$t")
  "$t" >"$log/out" 2>&1; rc=$?
  count "$name" "$log/out" "$rc"
done
for dir in tests/cli tests/mpi; do
  for t in "$dir"/test_*.sh; do
    [ -f "$t" ] || continue
    MESHCAST="$bin" bash "$t" >"$log/out" 2>&1; rc=$?
    count "$t" "$log/out" "$rc"
  done
done
# pytest's summary line ("3 passed, 1 skipped in 2.1s") feeds count(); exit 5 means it collected
# nothing, which is not a failure. A sanitized library cannot be loaded into an uninstrumented
# interpreter, so a sanitizer build skips the Python tests and says so.
py=/usr/bin/python3
if [ -d python/tests ]; then
  if ! "$py" -c 'import pytest, cffi' 2>/dev/null; then
    printf '%-40s skipped (no pytest or cffi for %s)\n' python/tests "$py"
    skipped=$((skipped + 1))
  elif nm -D "$bdir/libmeshcast.so" 2>/dev/null | grep -q __asan_init; then
    printf '%-40s skipped (sanitizer build)\n' python/tests
    skipped=$((skipped + 1))
  else
    (cd python/tests && MESHCAST_LIB="$bdir/libmeshcast.so" PYTHONPATH="$root/python" \
      "$py" -m pytest -q -p no:cacheprovider . >"$log/out" 2>&1); rc=$?
    [ "$rc" -eq 5 ] && rc=0
    count python/tests "$log/out" "$rc"
  fi
fi
echo
[ ${#broken[@]} -ne 0 ] && echo "failing: ${broken[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
