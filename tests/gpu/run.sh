#!/usr/bin/env bash
# GPU checks for a machine with one GPU (reference: H200), under five minutes:
#  1. builds meshcast with nvcc and runs the unit tests that use the GPU (GPU loopback);
#  2. runs the GPU loopback backend (a buffer set per virtual rank on GPU 0, device-to-device
#     copies, pack kernels) on every case of the paper's suite with tensors at 1/64 of the paper's
#     size and every strategy, checking every destination byte (cases left when 170 s have
#     passed are skipped and said so, to stay within five minutes);
#  3. times the pack kernel on the strided copies of the full-size strided cases (3, 4, 9)
#     against cudaMemcpyAsync of the same bytes (target: >= 90%);
#  4. runs a one-rank NCCL communicator through the nccl backend (pack, send/recv to self,
#     unpack), the lanes executor on two lanes split without blocking from it with an event
#     between them (started after and joined into the caller's stream), the set-up bound (a
#     two-rank communicator whose second rank never comes fails within 3 s + 1),
#     `meshcast run --backend nccl` under mpirun -np 1 (its lanes split from one communicator),
#     and generated code's lanes entry points (one_lanes_init, one_run_lanes) on one rank;
# and prints a summary. Usage: tests/gpu/run.sh [BUILD]   (from the repository root)
set -u
cd "$(dirname "$0")/../.."
build=${1:-build}
mc="$build/meshcast"
topo=topologies/aws-p3.8xlarge-x5.xml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
summary=()
fails=0
note() { summary+=("$1"); echo "== $1"; }
bad() { fails=$((fails + 1)); note "FAIL: $1"; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "== machine"
nvidia-smi -L 2>&1 | head -4
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -2

if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU on this machine: GPU checks skipped"
  exit 0
fi

echo "== 1. build and GPU unit tests"
if ! timeout 200 make -j"$(nproc)" BUILD="$build" >"$tmp/make.log" 2>&1; then
  tail -30 "$tmp/make.log"
  bad "build failed (see above)"
  printf '%s\n' "${summary[@]}"
  exit 1
fi
for t in test_runtime test_emit; do
  if timeout 60 "$build/tests/$t" >"$tmp/$t.log" 2>&1; then
    note "unit $t: $(grep -Eo '[0-9]+ test\(s\)\.|PASSED  \] [0-9]+|SKIPPED \] [0-9]+' "$tmp/$t.log" | tr '\n' ' ')"
  else
    cat "$tmp/$t.log"
    bad "unit $t"
  fi
done

echo "== 2. GPU loopback, paper cases at 1/64 size, every strategy"
awk '/^case /{if(n)print n";"m[1]";"m[2]";"mv; n=$2; k=0; next} /^mesh /{m[++k]=$2; next}
     /^move /{mv=substr($0,6)} END{print n";"m[1]";"m[2]";"mv}' bench/paper.cases |
  sed -e 's/i32\[1024,1024,512\]/i32[256,256,128]/' -e 's/i32\[3072,1024,170\]/i32[384,128,170]/' \
      -e 's/i32\[268435456\]/i32[4194304]/' >"$tmp/cases"
while IFS=';' read -r -u 3 name m1 m2 move; do
  if [ "$SECONDS" -gt 170 ]; then
    note "GPU loopback: $name and the cases after it skipped (time)"
    break
  fi
  for s in p2p p2p-lb alpa-bcast collectives meshcast; do
    f="$tmp/$name.$s.xml"
    timeout 60 "$mc" synth -q --topo "$topo" --strategy "$s" --rlimit 2000000 --mesh "$m1" \
      --mesh "$m2" "$move" -o "$f" >/dev/null 2>"$tmp/synth.err" || continue
    if timeout 60 "$mc" run -q --gpu --topo "$topo" "$f" >"$tmp/run.out" 2>&1 &&
       grep -q "every destination byte correct" "$tmp/run.out"; then
      note "$(sed -e "s|$tmp/||" "$tmp/run.out" | tail -1)"
    else
      cat "$tmp/run.out"
      bad "GPU loopback $name $s"
    fi
  done
done 3<"$tmp/cases"

echo "== 3. pack kernel vs cudaMemcpyAsync, full-size strided cases"
for c in "case3;i32[1024,1024,512] A[_,host,_] -> B[host,_,_]" \
         "case4;i32[1024,1024,512] A[_,(host,gpu),_] -> B[(host,gpu),_,_]" \
         "case9;i32[1024,1024,512] A[_,host,_] -> B[_,_,host]"; do
  name=${c%%;*} move=${c#*;}
  f="$tmp/full-$name.xml"
  timeout 60 "$mc" synth -q --topo "$topo" --strategy alpa-bcast --mesh 'A={host:2,gpu:4}@0..7' \
    --mesh 'B={host:2,gpu:4}@8..15' "$move" -o "$f" >/dev/null 2>&1 || { bad "synth $name"; continue; }
  if timeout 60 "$mc" run -q --topo "$topo" --bench-copies 4 "$f" >"$tmp/bench.out" 2>&1; then
    while read -r line; do note "${line#$tmp/}"; done <"$tmp/bench.out"
  else
    cat "$tmp/bench.out"
    bad "pack kernel timing $name"
  fi
done

echo "== 4. nccl backend, one rank"
if timeout 120 /usr/local/cuda/bin/nvcc -std=c++17 -arch=sm_90 -Werror all-warnings \
     -Xcompiler -Wall,-Wextra,-Werror -Iruntime -o "$tmp/nccl_self" tests/gpu/nccl_self.cu \
     runtime/cuda_exec.cu runtime/plan.c runtime/graph.c -L/usr/local/cuda/lib64 -lnccl \
     >"$tmp/nvcc.log" 2>&1 &&
   timeout 60 "$tmp/nccl_self" >"$tmp/self.out" 2>&1; then
  note "$(cat "$tmp/self.out")"
else
  cat "$tmp/nvcc.log" "$tmp/self.out" 2>/dev/null
  bad "nccl one-rank self test"
fi
f="$tmp/one.xml"
"$mc" synth -q --topo "$topo" --strategy alpa-bcast --mesh 'A={x:1}@[0]' --mesh 'B={x:1}@[0]' \
  'i32[1024,1024] A[_,_] -> B[_,_]' -o "$f" >/dev/null 2>&1
if timeout 60 mpirun --oversubscribe -np 1 "$mc" run -q --backend nccl --timeout 30 --topo "$topo" \
     "$f" >"$tmp/nccl.out" 2>&1 && grep -q "every destination byte correct" "$tmp/nccl.out"; then
  note "mpirun -np 1 meshcast run --backend nccl: $(tail -1 "$tmp/nccl.out" | sed "s|$tmp/||")"
else
  cat "$tmp/nccl.out"
  bad "mpirun -np 1 meshcast run --backend nccl"
fi
mkdir -p "$tmp/gen"
if "$mc" emit -q --topo "$topo" --standalone --name one -o "$tmp/gen" "$f" >/dev/null 2>&1 &&
   timeout 120 /usr/local/cuda/bin/nvcc -std=c++17 -arch=sm_90 -Werror all-warnings \
     -Xcompiler -Wall,-Wextra,-Werror -I"$tmp/gen" -o "$tmp/emit_lanes" tests/gpu/emit_lanes.cu \
     "$tmp/gen/one.cu" "$tmp/gen/cuda_exec.cu" "$tmp/gen/plan.c" "$tmp/gen/graph.c" \
     -L/usr/local/cuda/lib64 -lnccl >"$tmp/nvcc2.log" 2>&1 &&
   timeout 60 "$tmp/emit_lanes" >"$tmp/lanes.out" 2>&1; then
  note "$(cat "$tmp/lanes.out")"
else
  cat "$tmp/nvcc2.log" "$tmp/lanes.out" 2>/dev/null
  bad "generated code's lanes entry points"
fi

echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
