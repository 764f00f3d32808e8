#!/usr/bin/env bash
# meshcast run --backend loopback on every case of the paper's suite (its meshes, small tensors)
# and on random layouts, with every strategy's schedule: every destination byte must arrive.
# Plus the errors of run: wrong bytes named, bad arguments, an undersized workspace.
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/lib_run.sh"

while IFS=";" read -r -u 3 name m1 m2 move; do
  synth_all "$name" "$m1" "$m2" -- "$move"
  for f in "${SCHEDS[@]}"; do
    expect_exit 0 "$name $(basename "$f"): loopback" -- "$MESHCAST" run -q --topo "$TOPO" "$f"
    expect_grep "$TMP/out" "loopback: [0-9]+ ranks, .* every destination byte correct" \
      "$name $(basename "$f"): summary"
  done
done 3< <(paper_small; random_moves 12 1)

# A schedule whose trees do not deliver everything: drop every tree but the first.
synth_all cut 'A={host:2,gpu:4}@0..7' 'B={host:2,gpu:4}@8..15' -- 'i32[48,24,16] A[host,_,_] -> B[host,_,_]'
need_scheds "case 1 for the error tests"
python3 - "${SCHEDS[0]}" "$TMP/cut.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
t = ET.parse(sys.argv[1])
trees = [(ph, tr) for ph in t.getroot().iter("phase") for tr in ph.findall("tree")]
for ph, tr in trees[1:]:
    ph.remove(tr)
t.write(sys.argv[2])
PY
# run refuses it as validate does, naming the bytes never delivered; --force runs it and the
# byte check finds what is missing.
expect_exit 1 "missing trees: refused" -- "$MESHCAST" run -q --topo "$TOPO" "$TMP/cut.xml"
expect_grep "$TMP/err" "never receives bytes" "missing trees: the violations are listed"
expect_grep "$TMP/err" "cut\.xml: [0-9]+ violations .* refusing it \(--force goes on anyway\)" \
  "missing trees: refused with the file named"
expect_exit 1 "missing trees: wrong bytes" -- "$MESHCAST" run -q --force --topo "$TOPO" "$TMP/cut.xml"
expect_grep "$TMP/err" "warning: .*cut\.xml: [0-9]+ violations .*going on because of --force" \
  "missing trees: --force warns"
expect_grep "$TMP/out" "^GPU [0-9]+, tensor t0, element \[[0-9]+,[0-9]+,[0-9]+\], byte 0: 0x[0-9a-f]{2}, expected 0x[0-9a-f]{2}$" \
  "missing trees: the first wrong bytes are named"
expect_grep "$TMP/out" "WRONG BYTES" "missing trees: summary says so"

expect_exit 2 "no schedule" -- "$MESHCAST" run --topo "$TOPO"
expect_exit 2 "bad backend" -- "$MESHCAST" run --topo "$TOPO" --backend tcp "${SCHEDS[0]}"
expect_exit 2 "--gpu needs loopback" -- "$MESHCAST" run --topo "$TOPO" --backend mpi --gpu "${SCHEDS[0]}"
expect_exit 1 "missing file" -- "$MESHCAST" run -q --topo "$TOPO" "$TMP/none.xml"
# Case 3 moves dim-1 slices into dim-0 tiles: pieces are strided in the source, so roots pack
# into staging and the plan needs workspace.
ws=$(ls "$TMP"/case3.*.xml 2>/dev/null | head -1)
[ -n "$ws" ] || ws=/nonexistent
expect_exit 1 "workspace too small" -- "$MESHCAST" run -q --topo "$TOPO" --workspace 0 "$ws"
expect_grep "$TMP/err" "the workspace buffer has 0 bytes, the plan needs at least [0-9]+" \
  "workspace too small: named"
expect_exit 0 "help" -- "$MESHCAST" run --help
finish_skips
