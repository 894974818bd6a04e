#!/usr/bin/env bash
# Native engine micro-benchmark (prefill and decode tok/s at batch 1 and 8 through the C ABI).
# Usage: engine-cuda/test/bench/run.sh [MODEL_DIR|""] [threads (0 = all cores)] [prompt_len] [gen_len]
# Without MODEL_DIR it writes (once) a random ~110M Llama-shaped bf16 model, stories110M's shape,
# to engine-cuda/build/bench-llama110m-bf16. The reported benchmark is `npm run bench:engine`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
build="$root/engine-cuda/build"
bash "$root/scripts/build-engine.sh" >/dev/null
"${CXX:-g++}" -std=c++17 -O2 -Wall -Wextra -Werror -o "$build/engine-bench" "$root/engine-cuda/test/bench/engine_bench.cpp" \
  "$root/engine-cuda/test/model_writer.cpp" -L"$build" -lmaya_engine -Wl,-rpath,"$build"
default="$build/bench-llama110m-bf16"
model="${1:-$default}"
if [[ "$model" == "$default" && ! -f "$model/model.safetensors" ]]; then
  mkdir -p "$model"
  "$build/engine-bench" --random-llama "$model" BF16
fi
"$build/engine-bench" "$model" "${2:-0}" "${3:-128}" "${4:-64}"
