#!/usr/bin/env bash
# What a hostile or careless user found (issue 18), one input of each kind, each with the exact
# behaviour it must get now: exit code and message. Every check here failed on the code before
# the fix (run it with MESHCAST pointing at an older build to see). The stalled-rank cases live
# with the run driver's tests.
. "$(dirname "$0")/lib.sh"
cd "$ROOT"
P3=topologies/aws-p3.8xlarge-x5.xml
H=tests/data/hostile
S=tests/data/sched
A='A={x:2}@0..1'
B='B={x:2}@4..5'
move='u8[4096] A[x] -> B[_]'

# --- emit and run check the schedule as validate does ------------------------------------------
# shared.xml puts two rate-less trees on one NIC in one phase: validate refuses it.
expect_exit 1 "emit: invalid schedule refused" -- "$MESHCAST" emit --topo $P3 $S/shared.xml -o "$TMP/gen"
expect_grep "$TMP/err" "^phase 0: link h0/NIC0 -> h0/NET0 is shared by 2 trees" "emit: violations listed"
expect_grep "$TMP/err" "^meshcast: tests/data/sched/shared\.xml: 4 violations \(meshcast validate's rules, listed above\); refusing it \(--force goes on anyway\)$" \
  "emit: refusal names the file and --force"
expect_true "emit: nothing written" -- test ! -e "$TMP/gen"
expect_exit 0 "emit --force: written" -- "$MESHCAST" emit --force --topo $P3 $S/shared.xml -o "$TMP/gen"
expect_grep "$TMP/err" "^meshcast: warning: tests/data/sched/shared\.xml: 4 violations \(meshcast validate's rules\); going on because of --force$" \
  "emit --force: warns"
# Made for another topology: refused; --force checks it link by link, as validate --force does.
sed 's/topology="a1abc54ad5792b3c"/topology="0000000000000001"/' $S/two-phases.xml >"$TMP/other.xml"
expect_exit 1 "emit: another topology's schedule refused" -- "$MESHCAST" emit --topo $P3 "$TMP/other.xml" -o "$TMP/gen3"
expect_grep "$TMP/err" "other\.xml: made for topology 0000000000000001, but topologies/aws-p3\.8xlarge-x5\.xml is a1abc54ad5792b3c; use --force to check it link by link$" \
  "emit: another topology: says --force"
expect_exit 0 "emit --force: another topology's schedule, link by link" -- "$MESHCAST" emit --force --topo $P3 "$TMP/other.xml" -o "$TMP/gen3"
expect_grep "$TMP/err" "^meshcast: warning: .*other\.xml was made for topology 0000000000000001, not topologies/aws-p3\.8xlarge-x5\.xml \(a1abc54ad5792b3c\); checked link by link because of --force$" \
  "emit --force: another topology: warns"
expect_exit 1 "run: invalid schedule refused" -- "$MESHCAST" run -q --topo $P3 $S/shared.xml
expect_grep "$TMP/err" "shared\.xml: 4 violations .*refusing it" "run: refusal"

# two-phases.xml with 250,000 chunks of 20 bytes in each of its two 5 MB trees: still valid, but
# code for 500,000 transfers.
sed 's/chunks="1"/chunks="250000"/' $S/two-phases.xml >"$TMP/tiny-chunks.xml"
expect_exit 0 "tiny chunks: a valid schedule" -- "$MESHCAST" validate -q --topo $P3 "$TMP/tiny-chunks.xml"
expect_exit 1 "emit: generated size bounded" -- "$MESHCAST" emit --topo $P3 "$TMP/tiny-chunks.xml" -o "$TMP/gen2"
expect_grep "$TMP/err" "tiny-chunks\.xml: the schedule makes 500000 chunk transfers \(tree 0 alone: 250000 chunks of 20 bytes over 1 edges\); emit generates code for at most 67977 \(65536, plus one per 4096 bytes the task delivers: 10000000\): use fewer, larger chunks$" \
  "emit: the bound and where it comes from"
expect_true "emit: nothing generated" -- test ! -e "$TMP/gen2"

# --- -o writes regular files only ----------------------------------------------------------------
synth() { "$MESHCAST" synth -q --topo $P3 --strategy p2p --mesh "$A" --mesh "$B" "$move" "$@"; }
expect_exit 2 "-o '': usage error" -- synth -o ''
expect_grep "$TMP/err" "^meshcast: the output file name is empty: expected a path$" "-o '': message"
expect_exit 2 "emit -o '': usage error" -- "$MESHCAST" emit --topo $P3 $S/two-phases.xml -o ''
mkfifo "$TMP/fifo"
expect_exit 1 "-o a named pipe: refused" -- synth -o "$TMP/fifo"
expect_grep "$TMP/err" "fifo: is a named pipe; expected a regular file to write$" "-o pipe: message"
expect_true "-o pipe: still a pipe" -- test -p "$TMP/fifo"
mkdir "$TMP/dir"
expect_exit 1 "-o a directory: refused" -- synth -o "$TMP/dir"
expect_grep "$TMP/err" "dir: is a directory; expected a regular file to write$" "-o directory: message"
echo keep >"$TMP/target"
ln -s "$TMP/target" "$TMP/link"
expect_exit 1 "-o a symbolic link: refused" -- synth -o "$TMP/link"
expect_grep "$TMP/err" "link: is a symbolic link; meshcast does not write through links \(name the file it points to instead\)$" \
  "-o link: message"
expect_true "-o link: still a link to the untouched file" -- test -L "$TMP/link" -a "$(cat "$TMP/target")" = keep
echo keep >"$TMP/ro"
chmod 444 "$TMP/ro"
expect_exit 1 "-o a read-only file: refused (root too)" -- synth -o "$TMP/ro"
expect_grep "$TMP/err" "ro: exists and its mode \(0444\) does not let you write it; meshcast does not replace it$" \
  "-o read-only: message"
expect_true "-o read-only: untouched" -- test "$(cat "$TMP/ro")" = keep
echo old >"$TMP/mode.xml"
chmod 640 "$TMP/mode.xml"
expect_exit 0 "-o an existing file: replaced" -- synth -o "$TMP/mode.xml"
expect_true "-o existing: keeps its mode 0640" -- test "$(stat -c %a "$TMP/mode.xml")" = 640
# Root replacing another user's writable file gives it back to that user (only root can test it).
if [ "$(id -u)" -eq 0 ]; then
  echo old >"$TMP/theirs.xml"
  chown 4321:4321 "$TMP/theirs.xml"
  chmod 666 "$TMP/theirs.xml"
  expect_exit 0 "-o another user's writable file, as root" -- synth -o "$TMP/theirs.xml"
  expect_true "-o as root: owner and group kept" -- test "$(stat -c %u:%g:%a "$TMP/theirs.xml")" = 4321:4321:666
else
  echo "ownership as root: not root: 1 skipped"
fi
# A file-size limit makes write() fail half-way: the temporary file goes too.
mkdir "$TMP/small"
expect_exit 1 "-o past the file-size limit: an error" -- bash -c 'ulimit -f 1; "$@"' _ \
  "$MESHCAST" synth -q --topo $P3 --strategy p2p --mesh 'A={x:8}@0..7' --mesh 'B={x:8}@8..15' \
  'u8[4096] A[x] -> B[_]' -o "$TMP/small/out.xml"
expect_grep "$TMP/err" "out\.xml: cannot write: File too large$" "-o past the limit: message"
expect_true "-o past the limit: no temporary file left" -- test -z "$(ls -A "$TMP/small")"

# A signal while the output is being written (strace delivers it as the writer calls fsync, so
# it lands in the window every time): the command dies of it and leaves no temporary file. The
# signal's default action is restored first: a shell that starts the tests in the background
# (or nohup) hands them SIGINT (SIGHUP) ignored, and meshcast rightly keeps an ignored signal so.
if strace -o /dev/null true 2>/dev/null; then
  for sig in TERM INT HUP; do
    mkdir "$TMP/sig$sig"
    expect_true "SIG$sig while writing: the command dies of it" -- bash -c '
      env --default-signal=$1 strace -o /dev/null -e trace=fsync -e inject=fsync:signal=$1 \
        "${@:2}" >/dev/null 2>&1
      [ $? -eq $((128 + $(kill -l $1))) ]' _ $sig "$MESHCAST" synth -q --topo $P3 --strategy p2p \
      --mesh "$A" --mesh "$B" "$move" -o "$TMP/sig$sig/out.xml"
    expect_true "SIG$sig while writing: no temporary file left" -- test -z "$(ls -A "$TMP/sig$sig")"
  done
else
  echo "signals while writing: strace cannot trace here: 6 skipped"
fi

# --- task files ----------------------------------------------------------------------------------
expect_exit 0 "task file with a byte-order mark" -- "$MESHCAST" task --task-file $H/bom.task
expect_grep "$TMP/out" "^task: 1 tensor, 2 meshes$" "BOM: parsed"
expect_exit 1 "task file without a move" -- "$MESHCAST" task --task-file $H/no-move.task
expect_grep "$TMP/err" "^meshcast: tests/data/hostile/no-move\.task: holds no move \(expected a line 'move LAYOUT -> LAYOUT', docs/task-format\.md\) and none is given on the command line$" \
  "no move: the file is named"
expect_exit 1 "task file that is a directory" -- "$MESHCAST" task --task-file tests/data
expect_grep "$TMP/err" "^meshcast: tests/data: is a directory; expected a file$" "directory: said so"
expect_exit 1 "non-ASCII axis in a task file" -- "$MESHCAST" task --task-file $H/utf8-axis.task
expect_grep "$TMP/err" "utf8-axis\.task:2: expected an axis name in ASCII letters, digits and '_', got 'hóst' at column 4$" \
  "non-ASCII axis: quoted whole"
expect_exit 2 "non-ASCII axis in a move" -- "$MESHCAST" task --mesh "$A" 'f32[4] A[hóst] -> A[_]'
expect_grep "$TMP/err" "got 'hóst' at column 10$" "non-ASCII axis in a move: quoted whole"
expect_grep "$TMP/err" "^           \^$" "non-ASCII axis in a move: caret under its first character"
expect_exit 1 "device outside the topology" -- "$MESHCAST" task --topo $P3 --task-file tests/data/tasks/bad-device.task
expect_grep "$TMP/err" "^meshcast: tests/data/tasks/bad-device\.task:3: device 20 of mesh B is outside the topology topologies/aws-p3\.8xlarge-x5\.xml \(GPUs 0\.\.19\) at column 18$" \
  "device range: file, line"
expect_grep "$TMP/err" "^  B=\{host:2,gpu:4\}@16\.\.23$" "device range: quoted as written"
expect_exit 2 "device range with a dash" -- "$MESHCAST" task --mesh 'A={x:2}@0-1' 'f32[4] A[x] -> A[_]'
expect_grep "$TMP/err" "^meshcast: expected '\.\.' between the first and last device id, as in 0\.\.1 at column 10$" \
  "device range with a dash: an example, not a grammar"

expect_exit 2 "device list missing" -- "$MESHCAST" task --mesh 'A={x:8}@all' 'f32[4] A[x] -> A[_]'
expect_grep "$TMP/err" "^meshcast: expected the mesh's 8 devices after '@': a range such as 0\.\.7, a first id such as 0, a list such as \[0,1,\.\.\.,7\] or an iota such as <=\[8\] at column 9$" \
  "device list missing: examples for this mesh"

# --- schedules: the line and the attribute -------------------------------------------------------
sed 's/offset="0"/offset="x"/' $S/shared.xml >"$TMP/offset.xml"
expect_exit 1 "schedule attribute of the wrong type" -- "$MESHCAST" validate --topo $P3 "$TMP/offset.xml"
expect_grep "$TMP/err" "offset\.xml:14: not a valid schedule \(docs/schedule-format\.md\): <tree offset=\"x\">: expected a value of type unsignedLong$" \
  "wrong type: attribute named"
sed 's/ root="0"//' $S/shared.xml >"$TMP/noroot.xml"
expect_exit 1 "schedule attribute missing" -- "$MESHCAST" validate --topo $P3 "$TMP/noroot.xml"
expect_grep "$TMP/err" "noroot\.xml:14: not a valid schedule \(docs/schedule-format\.md\): <tree> lacks the attribute root$" \
  "missing attribute: named"
python3 - $S/shared.xml "$TMP/long.xml" <<'PY'
import sys
s = open(sys.argv[1]).read().replace('<phase n="0">', '<phase n="0">' + '\n' * 70000, 1)
open(sys.argv[2], "w").write(s.replace('parent="0"', 'parent="99"', 1))
PY
expect_exit 1 "error past line 65535" -- "$MESHCAST" validate --topo $P3 "$TMP/long.xml"
expect_grep "$TMP/err" "long\.xml:70016: expected parent between 0 and 19$" "past line 65535: the true line"

sed 's/mesh B={x:2}@\[8,12\]/mesh B={x:2}@[8,32]/' $S/shared.xml >"$TMP/far.xml"
expect_exit 1 "schedule task beyond the topology: invalid input" -- "$MESHCAST" validate --topo $P3 "$TMP/far.xml"
expect_grep "$TMP/err" "far\.xml:6: device 32 of mesh B is outside the topology topologies/aws-p3\.8xlarge-x5\.xml \(GPUs 0\.\.19\) at column 9$" \
  "schedule task beyond the topology: the schedule's line"

expect_exit 1 "cluster attribute out of its type" -- "$MESHCAST" topo show tests/data/cluster/bad-schema-count-zero.xml
expect_grep "$TMP/err" "bad-schema-count-zero\.xml:3: not a valid cluster file \(topologies/schema/cluster\.rng\): <nodes count=\"0\">: expected a value of type positiveInteger$" \
  "cluster attribute: named with its type"

# --- topologies: physical quantities -------------------------------------------------------------
expect_exit 1 "link_speed 0 GT/s" -- "$MESHCAST" topo show $H/pci-zero-gts.xml
expect_grep "$TMP/err" "pci-zero-gts\.xml:3: <pci link_speed=\"0 GT/s\">: the rate is not above 0 GT/s, expected a rate like \"16\.0 GT/s PCIe\"$" \
  "0 GT/s: not an unknown unit"
expect_exit 1 "absurd bandwidth" -- "$MESHCAST" task --topo $H/tiny-bandwidth.xml \
  --mesh 'A={x:8}@0..7' --mesh 'B={x:8}@8..15' 'f32[1024] A[x] -> B[_]'
expect_grep "$TMP/err" "tiny-bandwidth\.xml:5: <rails bw=\"1e-308 GB/s\">: expected a bandwidth from 1 Mb/s to 100 TB/s$" \
  "absurd bandwidth: refused in units"

finish
