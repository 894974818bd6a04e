#!/usr/bin/env bash
# Builds engine-cuda/build/libmaya_engine_cuda.so (the CUDA backend) from engine-cuda/src/cuda with nvcc.
#
# Called by build-engine.sh when nvcc is on PATH. `--check` compiles every .cu (the library's and the
# GPU kernel test's) to an object and stops: the CI check behind `npm run engine:cuda:check`.
# `--tests` also links engine-cuda/build/test-cuda-kernels (engine-cuda/test/cuda; run by test-gpu.sh)
# and builds engine-cuda/build/gpu-membw (the benchmark's bandwidth probe). Everything links cudart
# statically, so engine-cuda/build can be built where nvcc is and carried to a GPU machine without it. The CUDA runtime is linked statically
# (libcudart_static.a), so the library needs only the NVIDIA driver (libcuda.so.1) at run time, not
# the toolkit. Incremental like build-engine.sh: an object is rebuilt when its source or any engine
# or CUDA header is newer. Warnings are errors.
# Environment: MAYA_CUDA_GENCODE (default "-gencode=arch=compute_90a,code=sm_90a": Hopper, H100/H200;
# add e.g. "-gencode=arch=compute_80,code=sm_80" for Ampere), CUDA_HOME (default: nvcc's parent),
# MAYA_ENGINE_JOBS (parallel compiles, default 2).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/engine-cuda/src"
cu="$src/cuda"
out="$root/engine-cuda/build"
obj="$out/cuda-obj"
lib="$out/libmaya_engine_cuda.so"
jobs="${MAYA_ENGINE_JOBS:-2}"
mode="${1:-lib}" # lib | --check | --tests

if ! command -v nvcc >/dev/null 2>&1; then
  echo "build-engine-cuda: nvcc not found" >&2
  exit 1
fi
# The toolkit holding libcudart_static.a: CUDA_HOME, nvcc's parent (nvcc may be a wrapper script), /usr/local/cuda.
find_cudart() {
  local c
  for c in "${CUDA_HOME:-}" "$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")" /usr/local/cuda; do
    [[ -n "$c" ]] || continue
    for d in "$c/lib64" "$c/targets/$(uname -m)-linux/lib"; do
      [[ -f "$d/libcudart_static.a" ]] && { echo "$d"; return 0; }
    done
  done
  return 1
}
# shellcheck disable=SC2206
gencode=(${MAYA_CUDA_GENCODE:--gencode=arch=compute_90a,code=sm_90a})
flags=(-std=c++17 -O3 "${gencode[@]}" -Werror all-warnings
       -Xcompiler -fPIC,-fvisibility=hidden,-fvisibility-inlines-hidden,-Wall,-Wextra,-Werror
       -I"$root/engine-cuda/include")
tag="$(printf %s "${gencode[*]}" | md5sum | cut -c1-8)" # objects per target set
obj="$obj-$tag"
mkdir -p "$obj"
newest_header=$(stat -c %Y "$root"/engine-cuda/include/engine.h "$src"/*.h "$cu"/*.h "$cu"/*.cuh "$cu"/kernels/*.cuh \
  "$cu"/exports.map "$0" | sort -n | tail -n 1)

sources=("$cu"/*.cu "$cu"/kernels/*.cu)
test_src="$root/engine-cuda/test/cuda/test_cuda_kernels.cu"
[[ "$mode" != lib ]] && sources+=("$test_src")
objs=()
pids=()
names=()
for f in "${sources[@]}"; do
  name="$(basename "$f" .cu)"
  o="$obj/$name.o"
  objs+=("$o")
  if [[ -f "$o" ]] && (( $(stat -c %Y "$o") >= $(stat -c %Y "$f") && $(stat -c %Y "$o") >= newest_header )); then
    continue
  fi
  echo "build-engine-cuda: compiling ${f#"$root"/}"
  nice -n 10 nvcc "${flags[@]}" -c "$f" -o "$o.tmp" && mv "$o.tmp" "$o" &
  pids+=($!)
  names+=("$name")
  if (( ${#pids[@]} >= jobs )); then
    wait "${pids[0]}" || { echo "build-engine-cuda: compile of ${names[0]}.cu failed" >&2; exit 1; }
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "build-engine-cuda: compile of ${names[$i]}.cu failed" >&2; exit 1; }
done
if [[ "$mode" == --check ]]; then
  echo "build-engine-cuda: ${#sources[@]} CUDA sources compile cleanly (${gencode[*]})"
  exit 0
fi

if ! libdir="$(find_cudart)"; then
  echo "build-engine-cuda: libcudart_static.a not found (set CUDA_HOME to the CUDA toolkit)" >&2
  exit 1
fi
if [[ "$mode" == --tests ]]; then
  echo "build-engine-cuda: linking $out/test-cuda-kernels and $out/gpu-membw"
  "${CXX:-g++}" -pthread -o "$out/test-cuda-kernels" "${objs[@]}" -L"$libdir" -lcudart_static -ldl -lrt
  nice -n 10 nvcc -O3 "${gencode[@]}" -o "$out/gpu-membw" "$root/engine-cuda/test/bench/gpu_membw.cu"
  exit 0
fi
lib_objs=()
for o in "${objs[@]}"; do [[ "$o" == */test_cuda_kernels.o ]] || lib_objs+=("$o"); done
objs=("${lib_objs[@]}")
relink=0
if [[ ! -f "$lib" ]]; then relink=1; else
  t_l=$(stat -c %Y "$lib")
  for o in "${objs[@]}"; do (( $(stat -c %Y "$o") > t_l )) && relink=1; done
  [[ "$(stat -c %Y "$obj")" -gt "$t_l" ]] && relink=1 # a target set built for the first time
fi
if (( relink )); then
  echo "build-engine-cuda: linking $lib"
  # -z nodelete as for the engine: the library is never unmapped under running code.
  "${CXX:-g++}" -shared -pthread -Wl,-z,defs -Wl,-z,nodelete -Wl,--version-script="$cu/exports.map" \
    -o "$lib.tmp" "${objs[@]}" -L"$libdir" -lcudart_static -ldl -lrt && mv "$lib.tmp" "$lib"
else
  echo "build-engine-cuda: $lib is up to date"
fi
