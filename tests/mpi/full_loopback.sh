#!/usr/bin/env bash
# The paper's cases at full size (2 GiB and 1 GiB tensors) through the host loopback backend with
# every strategy, every byte checked. Not part of `make test`: a full-size case needs up to tens
# of GiB of memory and minutes of CPU. Cases whose buffers would not fit in 80% of the memory
# available now are skipped and said so.  Usage: MESHCAST=build/meshcast tests/mpi/full_loopback.sh
# [CASE-REGEX, matched against "NAME;MESH;MESH;MOVE", e.g. "^single-1x1;"]
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/lib_run.sh"
avail=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) * 1024))
awk '/^case /{if(n)print n";"m[1]";"m[2]";"mv; n=$2; k=0; next} /^mesh /{m[++k]=$2; next}
     /^move /{mv=substr($0,6)} END{print n";"m[1]";"m[2]";"mv}' "$ROOT/bench/paper.cases" |
  grep -E "${1:-.}" >"$TMP/cases"
while IFS=";" read -r -u 3 name m1 m2 move; do
  synth_all "$name" "$m1" "$m2" -- "$move"
  for f in "${SCHEDS[@]}"; do
    need=$("$MESHCAST" run -q --topo "$TOPO" --print-memory "$f")
    if [ "$need" -gt $((avail / 10 * 8)) ]; then
      echo "$(basename "$f"): needs $((need >> 20)) MiB, $((avail >> 20)) MiB available: skipped"
      _skipped=$((_skipped + 1))
      continue
    fi
    expect_exit 0 "$(basename "$f"): full-size loopback" -- "$MESHCAST" run -q --topo "$TOPO" "$f"
    cat "$TMP/out"
  done
done 3<"$TMP/cases"
finish_skips
