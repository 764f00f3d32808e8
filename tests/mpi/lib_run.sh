# Helpers for the tests of `meshcast run` and `meshcast emit` (sourced after tests/cli/lib.sh):
# synthesizing a case with every strategy, the small versions of the paper's cases, and mpirun
# set up for the 2-core CI machine (root allowed, oversubscribed, loopback network only, bounded).
TOPO="$ROOT/topologies/aws-p3.8xlarge-x5.xml"
STRATEGIES=${STRATEGIES:-"p2p p2p-lb alpa-bcast collectives meshcast"}
SYNTH=${SYNTH:-$MESHCAST}   # the binary that synthesizes (another build may run the schedules)
_skipped=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Open MPI leaves allocations of the components it unloads at MPI_Finalize, which LeakSanitizer
# reports without a module to suppress them by; leaks are checked on the loopback runs instead,
# which allocate and free the same buffers.
MPIRUN=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 120 mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader,tcp
        --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo
        --mca btl_vader_single_copy_mechanism none --mca mpi_yield_when_idle 1)

# synth_all NAME MESH... -- MOVE: writes $TMP/NAME.STRATEGY.xml for every strategy that can make
# the schedule and lists them in SCHEDS. A strategy the binary lacks is skipped; one that fails
# is reported (it is synth's failure, not the runtime's) and skipped.
synth_all() {
  local name=$1 meshes=() s; shift
  while [ "$1" != "--" ]; do meshes+=(--mesh "$1"); shift; done
  shift
  SCHEDS=()
  for s in $STRATEGIES; do
    if "$SYNTH" synth -q --topo "$TOPO" --strategy "$s" --rlimit 2000000 "${meshes[@]}" "$@" \
         -o "$TMP/$name.$s.xml" >"$TMP/synth.out" 2>&1; then
      SCHEDS+=("$TMP/$name.$s.xml")
    else
      grep -q "unknown strategy" "$TMP/synth.out" ||
        { echo "note: $name: synth --strategy $s failed:"; head -2 "$TMP/synth.out"; }
      _skipped=$((_skipped + 1))
    fi
  done
}

# The paper's cases (bench/paper.cases) with small tensors and their meshes as given, one per
# line: NAME;MESH;MESH;MOVE. With "mpi" as first argument, the meshes' gpu axes shrink to 2 so
# that no case needs more than 10 ranks.
paper_small() {
  awk -v mpi="${1:-}" '
    /^case /  { if (name) print name ";" m[1] ";" m[2] ";" mv; name = $2; n = 0; next }
    /^mesh /  { m[++n] = $2; next }
    /^move /  { mv = substr($0, 6); next }
    END       { if (name) print name ";" m[1] ";" m[2] ";" mv }' "$ROOT/bench/paper.cases" |
  sed -e 's/i32\[1024,1024,512\]/i32[48,24,16]/' -e 's/i32\[3072,1024,170\]/i32[48,16,10]/' \
      -e 's/i32\[268435456\]/i32[6000]/' |
  if [ "${1:-}" = mpi ]; then
    sed -e 's/{host:2,gpu:4}@0\.\.7/{host:2,gpu:2}@[0,1,4,5]/' \
        -e 's/{host:2,gpu:4}@8\.\.15/{host:2,gpu:2}@[8,9,12,13]/' \
        -e 's/{host:3,gpu:4}@8\.\.19/{host:3,gpu:2}@[8,9,12,13,16,17]/' \
        -e 's/{host:1,gpu:4}@0\.\.3/{host:1,gpu:2}@[0,1]/' \
        -e 's/{host:2,gpu:4}@4\.\.11/{host:2,gpu:2}@[4,5,8,9]/'
  else cat; fi
}

# random_moves N SEED: N random moves between two 2x2 meshes, one per line as paper_small prints
# them: dtypes of 1 to 8 bytes, 1 to 3 dimensions of uneven sizes, each dimension split over
# nothing, one axis or both, on either side.
random_moves() {
  python3 - "$1" "$2" <<'PY'
import random, sys
rng = random.Random(int(sys.argv[2]))
def layout(mesh, axes, nd):
    dims = ["_"] * nd
    free = list(axes)
    rng.shuffle(free)
    for d in range(nd):
        k = rng.choice([0, 0, 1, 1, 2]) if free else 0
        k = min(k, len(free))
        if k == 1:
            dims[d] = free.pop()
        elif k == 2:
            dims[d] = "(%s,%s)" % (free.pop(), free.pop())
    return "%s[%s]" % (mesh, ",".join(dims))
for i in range(int(sys.argv[1])):
    nd = rng.randint(1, 3)
    shape = [rng.choice([5, 6, 7, 8, 12]) for _ in range(nd)]
    dt = rng.choice(["i8", "bf16", "f32", "f64"])
    print("random%d;A={host:2,gpu:2}@[0,1,4,5];B={x:2,y:2}@[8,9,12,13];%s[%s] %s -> %s" % (
        i, dt, ",".join(map(str, shape)), layout("A", ["host", "gpu"], nd),
        layout("B", ["x", "y"], nd)))
PY
}

# ranks_of SCHEDULE: the number of ranks `meshcast run` needs for it (the GPUs it involves).
ranks_of() {
  "$MESHCAST" run -q --topo "$TOPO" --print-ranks "$1"
}

# fault_sched: sets sched to Alpa's broadcast schedule of the paper's case 3 on 8 ranks (2x2
# meshes), the fault tests' subject.
fault_sched() {
  STRATEGIES=alpa-bcast synth_all c3 'A={host:2,gpu:2}@[0,1,4,5]' 'B={host:2,gpu:2}@[8,9,12,13]' \
    -- 'i32[48,24,16] A[_,host,_] -> B[host,_,_]'
  need_scheds "case 3 on 8 ranks"
  sched=${SCHEDS[0]}
}

# mpi_cases: for every case line on fd 3 (as paper_small prints them), synthesizes every strategy
# and runs the schedules in one mpirun job per rank count they need (relays outside the meshes
# add ranks); every byte must arrive.
mpi_cases() {
  local name m1 m2 move n f
  while IFS=";" read -r -u 3 name m1 m2 move; do
    synth_all "$name" "$m1" "$m2" -- "$move"
    declare -A by_n=()
    for f in "${SCHEDS[@]}"; do
      n=$(ranks_of "$f")
      by_n[$n]="${by_n[$n]:-} $f"
    done
    for n in "${!by_n[@]}"; do
      read -r -a group <<<"${by_n[$n]}"
      expect_exit 0 "$name ($move): mpirun -np $n" -- "${MPIRUN[@]}" -np "$n" "$MESHCAST" run \
        -q --backend mpi --timeout 20 --topo "$TOPO" "${group[@]}"
      expect_true "$name: every schedule's bytes correct on $n ranks" -- \
        test "$(grep -c "mpi: $n ranks, .* every destination byte correct" "$TMP/out")" -eq ${#group[@]}
    done
    unset by_n
  done
}

# need_scheds WHAT: the tests that follow need the schedules in SCHEDS; without any (every
# strategy failed to synthesize, see the notes above) they fail once, clearly, and stop.
need_scheds() {
  if [ ${#SCHEDS[@]} -eq 0 ]; then
    expect_true "$1: no strategy could synthesize a schedule" -- false
    finish_skips
    exit
  fi
}

finish_skips() {
  echo "$_skipped skipped"
  finish
}
