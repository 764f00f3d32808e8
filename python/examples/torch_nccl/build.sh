#!/usr/bin/env bash
# Builds the PyTorch + emitted CUDA example: synthesizes the paper's case 1 (16 GPUs) at a small
# size, emits its CUDA with the standalone runtime sources, and compiles everything into
# build/libcase1.so, which run_schedule.py loads with ctypes. Needs nvcc and NCCL (CUDA_HOME,
# default /usr/local/cuda). Usage: [OUT=DIR] build.sh [MESHCAST]   (make python-nccl-example)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
meshcast=${1:-$root/build/meshcast}
cuda=${CUDA_HOME:-/usr/local/cuda}
out=${OUT:-$here/build}
mkdir -p "$out"
"$meshcast" synth -q --topo "$root/topologies/aws-p3.8xlarge-x5.xml" --rlimit 2000000 \
  --mesh 'A={host:2,gpu:4}@0..7' --mesh 'B={host:2,gpu:4}@8..15' \
  'f32[256,64,32] A[host,_,_] -> B[_,host,_]' -o "$out/case1.xml"
"$meshcast" emit --topo "$root/topologies/aws-p3.8xlarge-x5.xml" "$out/case1.xml" \
  --name case1 --standalone -o "$out/src" >/dev/null
# plan.c is C (cc), the .cu files go through nvcc; one shared library with the entry points
# case1_run, case1_workspace_bytes, case1_src_bytes, case1_dst_bytes and case1_error.
cc -std=c11 -O2 -fPIC -I"$out/src" -c "$out/src/plan.c" -o "$out/plan.o"
"$cuda/bin/nvcc" -O2 -std=c++17 -arch=sm_90 -Xcompiler -fPIC -I"$out/src" -I"$cuda/include" \
  -shared -o "$out/libcase1.so" "$out/src/case1.cu" "$out/src/cuda_exec.cu" "$out/plan.o" \
  -L"$cuda/lib64" -Xlinker -rpath,"$cuda/lib64" -lnccl -lcudart
echo "built $out/libcase1.so (schedule $out/case1.xml)"
