# Helpers for the command-line tests: each check runs the meshcast binary ($MESHCAST) and compares
# its exit code and output. A test file sources this, calls checks, and ends with 'finish', which
# prints "N passed, N failed" for tests/run.sh.
set -u
: "${MESHCAST:?set MESHCAST to the meshcast binary}"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SHARED=$(cd "$ROOT/../shared" 2>/dev/null && pwd || echo "$ROOT/../shared")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
_passed=0 _failed=0

# expect_exit CODE DESCRIPTION -- command args...: runs the command, output in $TMP/out, $TMP/err
expect_exit() {
  local code=$1 desc=$2; shift 3
  "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
  if [ "$rc" -eq "$code" ]; then _passed=$((_passed + 1))
  else _failed=$((_failed + 1)); echo "FAIL: $desc: exit $rc, expected $code"
    # a crash (exit 128 + signal) shows its whole report: which process, where
    sed 's/^/  err: /' "$TMP/err" | head -$([ "$rc" -gt 128 ] && echo 60 || echo 5); fi
}

# expect_grep FILE REGEX DESCRIPTION: the file ($TMP/out or $TMP/err) matches the regex
expect_grep() {
  if grep -Eq -- "$2" "$1"; then _passed=$((_passed + 1))
  else _failed=$((_failed + 1)); echo "FAIL: $3: no match for /$2/ in $(basename "$1")"; head -5 "$1" | sed 's/^/  /'; fi
}

# expect_true DESCRIPTION -- command: the command succeeds (for jq-style checks with python3)
expect_true() {
  local desc=$1; shift 2
  if "$@" >/dev/null 2>&1; then _passed=$((_passed + 1))
  else _failed=$((_failed + 1)); echo "FAIL: $desc"; fi
}

finish() {
  echo "$_passed passed, $_failed failed"
  [ "$_failed" -eq 0 ]
}
