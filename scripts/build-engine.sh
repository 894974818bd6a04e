#!/usr/bin/env bash
# Builds engine-cuda/build/libmaya_engine.so from engine-cuda/src with the machine's g++.
#
# Incremental: an object is rebuilt when its source or any engine header is newer; the library is
# relinked when an object is newer. Warnings are errors (-Wall -Wextra -Werror), as in the nvcc build. Downloads nothing. The hot kernels are compiled three times
# (kernels_avx512.cpp with -mavx512f/bw/vl/dq (+vnni when the compiler has it), kernels_avx2.cpp with
# -mavx2 -mfma -mf16c on x86-64, kernels_scalar.cpp baseline) and chosen at run time. When nvcc is on PATH, the CUDA backend (engine-cuda/src/cuda) is built as a second library,
# build/libmaya_engine_cuda.so (scripts/build-engine-cuda.sh), which the engine dlopens on request;
# without nvcc that step is reported and skipped, and the engine runs on the CPU.
# Environment: CXX (default g++), MAYA_ENGINE_JOBS (parallel compiles, default 2),
# MAYA_ENGINE_CXXFLAGS (extra flags, e.g. -g -fsanitize=address), MAYA_ENGINE_CUDA (0 skip the CUDA
# library, 1 require it; see below), MAYA_CUDA_GENCODE (nvcc targets; see build-engine-cuda.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/engine-cuda/src"
inc="$root/engine-cuda/include"
out="$root/engine-cuda/build"
obj="$out/obj"
lib="$out/libmaya_engine.so"
cxx="${CXX:-g++}"
jobs="${MAYA_ENGINE_JOBS:-2}"

if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "build-engine: C++ compiler '$cxx' not found. Install g++ (Debian/Ubuntu: apt-get install g++) or set CXX." >&2
  exit 1
fi

mkdir -p "$obj"
flags=(-std=c++17 -O3 -fPIC -fvisibility=hidden -fvisibility-inlines-hidden -pthread -Wall -Wextra -Werror -I"$inc")
# shellcheck disable=SC2206
extra=(${MAYA_ENGINE_CXXFLAGS:-})
avx2=()
avx512=()
case "$(uname -m)" in
  x86_64|amd64)
    avx2=(-mavx2 -mfma -mf16c)
    avx512=(-mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma -mf16c)
    # VNNI (int8 dot products of the q8 weights) where the compiler knows it; the kernel checks
    # the CPU at run time.
    if echo 'int main(){}' | "$cxx" -mavx512vnni -x c++ - -o /dev/null >/dev/null 2>&1; then avx512+=(-mavx512vnni); fi
    ;;
esac

# Newest header mtime: every object depends on every header (few, small files; kernels/ holds the
# kernel bodies kernels_impl.h includes).
newest_header=$(stat -c %Y "$inc"/engine.h "$src"/*.h "$src"/kernels/*.h "$src"/cuda/*.h "$src"/exports.map "$0" | sort -n | tail -n 1)

pids=()
objs=()
for f in "$src"/*.cpp; do
  name="$(basename "$f" .cpp)"
  o="$obj/$name.o"
  objs+=("$o")
  if [[ -f "$o" ]]; then
    t_o=$(stat -c %Y "$o")
    t_s=$(stat -c %Y "$f")
    if (( t_o >= t_s && t_o >= newest_header )); then continue; fi
  fi
  isa=()
  [[ "$name" == kernels_avx2 ]] && isa=("${avx2[@]}")
  [[ "$name" == kernels_avx512 ]] && isa=("${avx512[@]}")
  echo "build-engine: compiling $name.cpp"
  nice -n 10 "$cxx" "${flags[@]}" "${isa[@]}" "${extra[@]}" -c "$f" -o "$o.tmp" && mv "$o.tmp" "$o" &
  pids+=($!)
  if (( ${#pids[@]} >= jobs )); then
    wait "${pids[0]}" || { echo "build-engine: compile failed" >&2; exit 1; }
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || { echo "build-engine: compile failed" >&2; exit 1; }; done

relink=0
if [[ ! -f "$lib" ]]; then relink=1; else
  t_l=$(stat -c %Y "$lib")
  for o in "${objs[@]}"; do (( $(stat -c %Y "$o") > t_l )) && relink=1; done
  # An object of a deleted source would not be listed; a changed set of objects relinks too.
  [[ "$(ls "$obj"/*.o | wc -l)" != "${#objs[@]}" ]] && { rm -f "$obj"/*.o.tmp; relink=1; }
fi
if (( relink )); then
  echo "build-engine: linking $lib"
  # -z nodelete: dlclose never unmaps the library. A host that drops a context without
  # eng_ctx_free (a terminated Node worker) leaves its pool threads running library code;
  # unmapping it under them would crash the process.
  # exports.map: only eng_* is exported (std:: template instances would otherwise leak out).
  "$cxx" -shared -pthread -Wl,-z,defs -Wl,-z,nodelete -Wl,--version-script="$src/exports.map" "${extra[@]}" \
    -o "$lib.tmp" "${objs[@]}" -ldl && mv "$lib.tmp" "$lib"
else
  echo "build-engine: $lib is up to date"
fi

# MAYA_ENGINE_CUDA: unset = build the CUDA library when nvcc is present, and only warn if that fails
# (the CPU engine is complete without it); 1 = it must build; 0 = skip it.
cuda="${MAYA_ENGINE_CUDA:-auto}"
if [[ "$cuda" == 0 ]]; then
  echo "build-engine: MAYA_ENGINE_CUDA=0: CUDA backend not built"
elif command -v nvcc >/dev/null 2>&1; then
  if ! bash "$root/scripts/build-engine-cuda.sh"; then
    if [[ "$cuda" == 1 ]]; then echo "build-engine: the CUDA backend failed to build" >&2; exit 1; fi
    echo "build-engine: warning: the CUDA backend failed to build (above); the engine runs on the CPU" >&2
  fi
elif [[ "$cuda" == 1 ]]; then
  echo "build-engine: MAYA_ENGINE_CUDA=1 but nvcc is not on PATH" >&2
  exit 1
else
  echo "build-engine: nvcc not found: CUDA backend not built (the engine runs on the CPU; install the CUDA toolkit and rerun to add it)"
fi
