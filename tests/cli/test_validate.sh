#!/usr/bin/env bash
# Command-line tests for 'meshcast validate': a valid hand-written schedule on the paper's cluster
# (tests/data/sched/two-phases.xml), then the same schedule broken one way each, and schedules made
# for another topology, refused unless --force checks them link by link.
. "$(dirname "$0")/lib.sh"
cd "$ROOT"
topo=topologies/aws-p3.8xlarge-x5.xml
data=tests/data/sched

# The data files name the topology's fingerprint; if the topology file changed since they were
# written, restamp copies so that these tests check the schedules, not the stamp.
fp=$("$MESHCAST" validate -q --topo $topo $data/two-phases.xml 2>&1 | grep -o 'is [0-9a-f]\{16\}' | cut -c4-)
for f in two-phases shared shared-rates; do
  if [ -n "$fp" ]; then sed "s/topology=\"[0-9a-f]*\"/topology=\"$fp\"/" $data/$f.xml >"$TMP/$f.xml"
  else cp $data/$f.xml "$TMP/$f.xml"; fi
done
good="$TMP/two-phases.xml"

expect_exit 0 "help" -- "$MESHCAST" validate --help
expect_grep "$TMP/out" '^usage: meshcast validate' "help text"
expect_exit 2 "no topology" -- "$MESHCAST" validate "$good"
expect_exit 2 "no schedule" -- "$MESHCAST" validate --topo $topo
expect_exit 2 "two schedules" -- "$MESHCAST" validate --topo $topo "$good" "$good"
expect_exit 2 "unknown option" -- "$MESHCAST" validate --topo $topo --frobnicate "$good"
expect_exit 1 "missing schedule file" -- "$MESHCAST" validate --topo $topo "$TMP/none.xml"
expect_exit 1 "not a schedule" -- "$MESHCAST" validate --topo $topo $topo
expect_grep "$TMP/err" 'aws-p3.8xlarge-x5.xml:[0-9]+:' "schema error names the file and line"

# bytes the declared encoding cannot decode inside an element read whole (found by fuzz_sched):
# refused with the line, never a schedule without its task
sed -e 's/encoding="UTF-8"/encoding="UTF-7"/' -e 's/move t0:/move t\xff\xff\xff\xff0:/' "$good" >"$TMP/utf7.xml"
for cmd in validate sim; do
  expect_exit 1 "undecodable bytes ($cmd)" -- "$MESHCAST" $cmd --topo $topo "$TMP/utf7.xml"
  expect_grep "$TMP/err" 'utf7.xml:[0-9]+: malformed XML' "undecodable bytes named ($cmd)"
done

expect_exit 0 "valid schedule" -- "$MESHCAST" validate --topo $topo "$good"
expect_grep "$TMP/out" 'valid \(hand, 2 trees in 2 phases\)' "valid summary"
expect_exit 0 "planned rates within capacity" -- "$MESHCAST" validate --topo $topo "$TMP/shared-rates.xml"

# break_it NAME SED-SCRIPT: a copy of the valid schedule with one change
break_it() { sed "$2" "$good" >"$TMP/$1.xml"; }

break_it missing-edge '/child="8"/d'
expect_exit 1 "a missing edge" -- "$MESHCAST" validate --topo $topo "$TMP/missing-edge.xml"
expect_grep "$TMP/out" '^piece 0: GPU 8 never receives bytes \[0, 5000000\)$' "missing edge reported"
expect_true "one line per violation" -- test "$(wc -l <"$TMP/out")" -eq 1

expect_exit 1 "a link used twice in a phase" -- "$MESHCAST" validate --topo $topo "$TMP/shared.xml"
expect_grep "$TMP/out" '^phase 0: link h0/NIC0 -> h0/NET0 is shared by 2 trees' "shared NIC reported"
expect_true "four shared links, four lines" -- test "$(wc -l <"$TMP/out")" -eq 4
expect_grep "$TMP/err" '4 violations' "violation count on stderr"

# tree 1 rooted at GPU 8 (host 2), which never holds row 1
break_it bad-root 's/root="1"/root="8"/; s/parent="1" child="12" route="h0\/GPU1 h0\/PCI0 h0\/CPU0 h0\/NIC0 h0\/NET0/parent="8" child="12" route="h2\/GPU0 h2\/PCI0 h2\/CPU0 h2\/NIC0 h2\/NET0/'
expect_exit 1 "a root that does not hold the data" -- "$MESHCAST" validate --topo $topo "$TMP/bad-root.xml"
expect_grep "$TMP/out" '^tree 1: root GPU 8 does not hold bytes \[0, 5000000\) of piece 1 when phase 1 starts$' \
  "bad root reported"
expect_true "bad root: one line" -- test "$(wc -l <"$TMP/out")" -eq 1

break_it short '0,/bytes="5000000" root="0"/s//bytes="2500000" root="0"/'
expect_exit 1 "a destination left without some bytes" -- "$MESHCAST" validate --topo $topo "$TMP/short.xml"
expect_grep "$TMP/out" '^piece 0: GPU 8 never receives bytes \[2500000, 5000000\)$' "short tree reported"

break_it no-link 's/h0\/NET0 switch h2\/NET0/h0\/NET0 h2\/NET0/'
expect_exit 1 "a link that does not exist" -- "$MESHCAST" validate --topo $topo "$TMP/no-link.xml"
expect_grep "$TMP/out" 'no-link.xml:15: tree 0, edge 0 -> 8: link h0/NET0 -> h2/NET0 does not exist on this topology' \
  "missing link reported with its line"

break_it twice 's/<phase n="1">/<phase n="1">\n    <tree piece="0" offset="0" bytes="5000000" root="1" chunks="1">\n      <edge parent="1" child="8" route="h0\/GPU1 h0\/PCI0 h0\/CPU0 h0\/NIC0 h0\/NET0 switch h2\/NET0 h2\/NIC0 h2\/CPU0 h2\/PCI0 h2\/GPU0"\/>\n    <\/tree>/'
expect_exit 1 "bytes received twice" -- "$MESHCAST" validate --topo $topo "$TMP/twice.xml"
expect_grep "$TMP/out" 'GPU 8 receives bytes \[0, 5000000\) more than once' "duplicate reported"

break_it memory 's/mem-limit="0"/mem-limit="9000000"/'
expect_exit 1 "memory above the stated bound" -- "$MESHCAST" validate --topo $topo "$TMP/memory.xml"
expect_grep "$TMP/out" '^GPU 0: peak memory 10000000 bytes is above the stated bound of 9000000$' "memory reported"

# made for another topology: refused, unless forced; then checked link by link
slow=$data/aws-p3.8xlarge-x5-slow-switch.xml
expect_exit 1 "other topology refused" -- "$MESHCAST" validate --topo $slow "$good"
expect_grep "$TMP/err" 'made for topology [0-9a-f]{16}.*use --force' "refusal explains --force"
expect_exit 0 "other topology, same links, forced" -- "$MESHCAST" validate --force --topo $slow "$good"
expect_grep "$TMP/err" 'checking it link by link' "forced note"
expect_exit 1 "other hardware, forced" -- "$MESHCAST" validate --force --topo topologies/dgx-a100-x4.xml "$good"
expect_grep "$TMP/out" 'link h0/NET0 -> switch does not exist on this topology' "missing links listed"

# A schedule written with symmetry (one template of 574 trees, one instance) is checked with its
# instance kept compact; the summary counts the trees the instance stands for.
cat >"$TMP/sym.task" <<'EOF2'
mesh train={dp:2,tp:8}@0..15
mesh gen={dp:4,tp:4}@16..31
move q: bf16[80,8192,8192] train[_,tp,_] -> gen[_,tp,_]
move o: bf16[80,8192,8192] train[_,_,tp] -> gen[_,_,tp]
EOF2
expect_exit 0 "synth with symmetry" -- "$MESHCAST" synth -q --rlimit 2000000 --topo topologies/dgx-h100-x4.xml --task-file "$TMP/sym.task" -o "$TMP/sym.xml"
expect_grep "$TMP/sym.xml" '<instance template="0"' "schedule written with an instance"
expect_exit 0 "valid with symmetry" -- "$MESHCAST" validate --topo topologies/dgx-h100-x4.xml "$TMP/sym.xml"
ntrees=$(grep -c '<tree ' "$TMP/sym.xml")
expect_grep "$TMP/out" "valid \(meshcast, $((2 * ntrees)) trees in 1 phase\)" "instance trees counted"

finish
