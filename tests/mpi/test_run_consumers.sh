#!/usr/bin/env bash
# Tensors with several consumers (one move, destinations in several meshes, each in its own
# layout): every strategy's schedule runs under the loopback and MPI backends and every
# destination byte of every consumer arrives; the meshcast strategy reaches the second consumer
# without crossing the slow link again; emit writes the task with all its consumers.
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/lib_run.sh"

# NAME;STRATEGIES THAT MUST MAKE IT;MESH|MESH|...;MOVE. Consumers in other hosts, in the
# source's own mesh (alpa-bcast moves only between disjoint meshes), with uneven shapes, three
# of them. collectives refuses every one: it redistributes inside one mesh.
cases() {
  cat <<'CASES'
fan2;p2p p2p-lb alpa-bcast meshcast;A={x:1}@0|B={x:2}@4..5|C={x:2}@6..7;f32[256,256] A[_,_] -> B[x,_], C[_,x]
mesh2;p2p p2p-lb alpa-bcast meshcast;A={host:2,gpu:2}@[0,1,4,5]|B={x:2,y:2}@[8,9,12,13]|C={x:4}@16..19;bf16[7,12,5] A[host,gpu,_] -> B[_,(x,y),_], C[_,_,x]
self;p2p p2p-lb meshcast;A={x:2}@0..1|B={x:2}@4..5;f64[6,10] A[x,_] -> A[_,x], B[x,_]
three;p2p p2p-lb alpa-bcast meshcast;A={x:2}@[0,4]|B={x:2}@[8,9]|C={x:1}@12|D={x:2}@[16,17];i8[9,7] A[x,_] -> B[_,x], C[_,_], D[x,_]
CASES
}

# synth_case NAME WANT MESHES MOVE: every strategy's schedule for MOVE between MESHES (split
# by |) into SCHEDS; each strategy in WANT must make one.
synth_case() {
  local ms s
  IFS="|" read -r -a ms <<<"$3"
  synth_all "$1" "${ms[@]}" -- "$4"
  for s in $2; do
    expect_true "$1 ($4): $s synthesizes it" -- test -f "$TMP/$1.$s.xml"
  done
}

# loopback NAME SCHEDULE [LABEL]: the schedule runs under the loopback backend.
loopback() {
  expect_exit 0 "$1 $(basename "$2")${3:-}: loopback" -- "$MESHCAST" run -q --topo "$TOPO" "$2"
}

while IFS=";" read -r -u 3 name want meshes move; do
  synth_case "$name" "$want" "$meshes" "$move"
  for f in "${SCHEDS[@]}"; do
    loopback "$name" "$f"
    expect_grep "$TMP/out" "loopback: [0-9]+ ranks, .* every destination byte correct" \
      "$name $(basename "$f"): loopback bytes"
    n=$(ranks_of "$f")
    expect_exit 0 "$name $(basename "$f"): mpirun -np $n" -- "${MPIRUN[@]}" -np "$n" "$MESHCAST" \
      run -q --backend mpi --timeout 20 --topo "$TOPO" "$f"
    expect_grep "$TMP/out" "mpi: $n ranks, .* every destination byte correct" \
      "$name $(basename "$f"): mpi bytes"
  done
done 3< <(cases)

# Random moves to two or three consumers (2x2 meshes on hosts 2-3 and 4, one GPU of host 1),
# each dimension split over nothing, one axis or two on every side: loopback, every strategy.
random_fans() {
  python3 - "$1" "$2" <<'PY'
import random, sys
rng = random.Random(int(sys.argv[2]))
def layout(mesh, axes, nd):
    dims, free = ["_"] * nd, list(axes)
    rng.shuffle(free)
    for d in range(nd):
        k = min(rng.choice([0, 1, 1, 2]), len(free))
        if k == 1:
            dims[d] = free.pop()
        elif k == 2:
            dims[d] = "(%s,%s)" % (free.pop(), free.pop())
    return "%s[%s]" % (mesh, ",".join(dims))
consumers = [("B", ["x", "y"]), ("C", ["u", "v"]), ("D", ["w"])]
for i in range(int(sys.argv[1])):
    nd = rng.randint(1, 3)
    shape = ",".join(str(rng.choice([5, 6, 7, 8, 12])) for _ in range(nd))
    dt = rng.choice(["i8", "bf16", "f32", "f64"])
    cs = consumers[:rng.randint(2, 3)]
    print("rfan%d;p2p p2p-lb meshcast;A={host:2,gpu:2}@[0,1,4,5]|B={x:2,y:2}@[8,9,12,13]|"
          "C={u:2,v:2}@16..19|D={w:1}@6;%s[%s] %s -> %s" % (
        i, dt, shape, layout("A", ["host", "gpu"], nd),
        ", ".join(layout(m, ax, nd) for m, ax in cs)))
PY
}
while IFS=";" read -r -u 3 name want meshes move; do
  synth_case "$name" "$want" "$meshes" "$move"
  for f in "${SCHEDS[@]}"; do
    loopback "$name" "$f" " ($move)"
  done
done 3< <(random_fans 8 5)

# emit writes the several-consumer task into the header and lays out each destination GPU's
# buffer in its own consumer's layout (the lowering `run` executed above); --check agrees.
f="$TMP/three.meshcast.xml"
expect_exit 0 "three: emit" -- "$MESHCAST" emit -q --topo "$TOPO" "$f" -o "$TMP/emit" --name three
expect_grep "$TMP/emit/three.h" "^ \*   move t0: i8\[9,7\] A\[x,_\] -> B\[_,x\], C\[_,_\], D\[x,_\]$" \
  "three: the header names the three consumers"
expect_exit 0 "three: emit --check" -- "$MESHCAST" emit -q --topo "$TOPO" --check "$TMP/emit" "$f" --name three

# The bytes each schedule puts on host 0's NIC (its only way out) for fan2: one source tile of
# 256*256*4 bytes; each consumer on host 1 needs all of it (split over its two GPUs). p2p sends
# each destination its part, so the tile crosses once per consumer; meshcast crosses once and
# relays inside host 1.
tile=$((256 * 256 * 4))
nic_bytes() {
  "$MESHCAST" sim --json --links 100 --topo "$TOPO" "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(sum(int(l["bytes"]) for l in r["busiest_links"] if l["link"] == "h0/NIC0 -> h0/NET0"))'
}
expect_true "fan2: p2p crosses host 0's NIC twice per byte (2 x $tile)" -- \
  test "$(nic_bytes "$TMP/fan2.p2p.xml")" -eq $((2 * tile))
expect_true "fan2: alpa-bcast, one broadcast per consumer, crosses twice too" -- \
  test "$(nic_bytes "$TMP/fan2.alpa-bcast.xml")" -eq $((2 * tile))
expect_true "fan2: meshcast crosses it once per byte ($tile)" -- \
  test "$(nic_bytes "$TMP/fan2.meshcast.xml")" -eq "$tile"
finish_skips
