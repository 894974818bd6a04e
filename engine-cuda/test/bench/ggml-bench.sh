#!/usr/bin/env bash
# Kernel micro-benchmark of the matrix dtypes, GGUF block dtypes included (ggml_bench.cpp): one
# thread, decode GB/s and prefill multiply-adds per ns. Links the three kernel objects directly (the
# kernel tables are internal to the library). MAYA_ENGINE_SIMD=scalar|avx2|avx512 picks the path.
# Usage: engine-cuda/test/bench/ggml-bench.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
bash "$root/scripts/build-engine.sh" >/dev/null
obj="$root/engine-cuda/build/obj"
"${CXX:-g++}" -std=c++17 -O2 -Wall -Wextra -Werror -I"$root/engine-cuda/include" -o "$root/engine-cuda/build/ggml-bench" \
  "$root/engine-cuda/test/bench/ggml_bench.cpp" "$obj/kernels_scalar.o" "$obj/kernels_avx2.o" "$obj/kernels_avx512.o" "$obj/common.o" -pthread
"$root/engine-cuda/build/ggml-bench"
