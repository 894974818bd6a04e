#!/usr/bin/env bash
# Builds and runs the engine's C-level tests: engine-cuda/test/*.cpp linked with the library's
# sources compiled with -DTESTING (objects cached in engine-cuda/build/test-obj).
# Usage: engine-cuda/test/run.sh [name-filter]. Exit status 0 = all checks passed on every kernel
# path this CPU supports (each run forced with MAYA_ENGINE_SIMD; see the loop at the end).
# MAYA_ENGINE_CXXFLAGS adds flags (e.g. "-g -fsanitize=address,undefined").
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
src="$root/engine-cuda/src"
tst="$root/engine-cuda/test"
# Extra flags get their own object directory and binary, so sanitizer builds never mix with plain ones.
tag="${MAYA_ENGINE_CXXFLAGS:+-$(printf %s "$MAYA_ENGINE_CXXFLAGS" | md5sum | cut -c1-8)}"
obj="$root/engine-cuda/build/test-obj$tag"
bin="$root/engine-cuda/build/engine-tests$tag"
cxx="${CXX:-g++}"
command -v "$cxx" >/dev/null 2>&1 || { echo "engine tests: C++ compiler '$cxx' not found" >&2; exit 1; }
mkdir -p "$obj"
# shellcheck disable=SC2206
extra=(${MAYA_ENGINE_CXXFLAGS:-})
flags=(-std=c++17 -O2 -DTESTING -pthread -Wall -Wextra -Werror -I"$root/engine-cuda/include" "${extra[@]}")
avx2=()
avx512=()
case "$(uname -m)" in
  x86_64|amd64)
    avx2=(-mavx2 -mfma -mf16c)
    avx512=(-mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma -mf16c)
    if echo 'int main(){}' | "$cxx" -mavx512vnni -x c++ - -o /dev/null >/dev/null 2>&1; then avx512+=(-mavx512vnni); fi
    ;;
esac
newest_header=$(stat -c %Y "$root"/engine-cuda/include/engine.h "$src"/*.h "$src"/kernels/*.h "$src"/cuda/*.h "$tst"/*.h "$0" | sort -n | tail -n 1)
jobs="${MAYA_ENGINE_JOBS:-2}" # parallel compiles, as in build-engine.sh
objs=()
pids=()
relink=0
for f in "$src"/*.cpp "$tst"/*.cpp; do
  name="$(basename "$(dirname "$f")")_$(basename "$f" .cpp)"
  o="$obj/$name.o"
  objs+=("$o")
  if [[ -f "$o" ]] && (( $(stat -c %Y "$o") >= $(stat -c %Y "$f") && $(stat -c %Y "$o") >= newest_header )); then
    continue
  fi
  isa=()
  [[ "$(basename "$f")" == kernels_avx2.cpp ]] && isa=("${avx2[@]}")
  [[ "$(basename "$f")" == kernels_avx512.cpp ]] && isa=("${avx512[@]}")
  nice -n 10 "$cxx" "${flags[@]}" "${isa[@]}" -c "$f" -o "$o.tmp" && mv "$o.tmp" "$o" &
  pids+=($!)
  relink=1
  if (( ${#pids[@]} >= jobs )); then
    wait "${pids[0]}" || { echo "engine tests: compile failed" >&2; exit 1; }
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || { echo "engine tests: compile failed" >&2; exit 1; }; done
if (( relink )) || [[ ! -f "$bin" ]]; then
  "$cxx" "${flags[@]}" -o "$bin" "${objs[@]}" -ldl
fi
# The shared library exports exactly the eng_* ABI (checked when no sanitizer flags are set).
if [[ -z "${MAYA_ENGINE_CXXFLAGS:-}" ]] && command -v nm >/dev/null 2>&1; then
  bash "$root/scripts/build-engine.sh" >/dev/null
  leaked=$(nm -D --defined-only "$root/engine-cuda/build/libmaya_engine.so" | awk '{print $3}' | grep -v '^eng_' || true)
  if [[ -n "$leaked" ]]; then echo "engine tests: libmaya_engine.so exports non-ABI symbols:" >&2; echo "$leaked" >&2; exit 1; fi
fi
# No kernel file built for an instruction set above the baseline may run code when the library is
# loaded (a static initialiser): it would run before kernels_choose checks the CPU, and crash with
# SIGILL on a CPU without that set (the AVX-512 file on an AVX2-only CPU).
if command -v nm >/dev/null 2>&1; then
  for o in "$obj"/src_kernels_avx2.o "$obj"/src_kernels_avx512.o "$root"/engine-cuda/build/obj/kernels_avx2.o \
    "$root"/engine-cuda/build/obj/kernels_avx512.o; do
    if [[ -f "$o" ]] && nm "$o" | grep -q '_GLOBAL__sub_I'; then
      echo "engine tests: $o has a static initialiser: it would run its instruction set at load, on any CPU" >&2
      exit 1
    fi
  done
fi
# Every kernel path this CPU runs (scalar, avx2, avx512), each forced with MAYA_ENGINE_SIMD; a path
# the CPU lacks is named as skipped, never counted as passed. MAYA_ENGINE_SIMD set by the caller
# runs that path only.
if [[ -n "${MAYA_ENGINE_SIMD:-}" ]]; then
  paths="$MAYA_ENGINE_SIMD"
else
  paths="$("$bin" --simd-paths)"
fi
skipped=""
for p in scalar avx2 avx512; do [[ " $paths " == *" $p "* ]] || skipped+=" $p"; done
echo "engine tests: kernel paths: $paths${skipped:+ (skipped, this CPU lacks them:$skipped)}" >&2
status=0
for p in $paths; do
  echo "engine tests: === MAYA_ENGINE_SIMD=$p" >&2
  MAYA_ENGINE_SIMD="$p" MAYA_REPO_ROOT="$root" "$bin" "$@" || { echo "engine tests: FAILED on the $p path" >&2; status=1; }
done
exit $status
