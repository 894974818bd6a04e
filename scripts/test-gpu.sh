#!/usr/bin/env bash
# GPU checks (`npm run test:gpu -- RESULTS_DIR`): one prepared script for a machine with an NVIDIA GPU,
# never part of CI. Builds the engine and its CUDA library, then runs, each logged into RESULTS_DIR:
#   1. kernels.log     engine-cuda/test/cuda/test_cuda_kernels.cu: every CUDA kernel against a host reference
#   2. engine-cuda.log the C tests on the CUDA backend: golden fixtures (greedy identical, logits within
#                      2e-2), backend selection, the scheduler and speculative-decoding tests, and
#                      test_cuda_backend.cpp's GPU-only comparison with the CPU backend (batched, alone,
#                      chunked, prefix-cached, device argmax) on fixtures and random models. A model the
#                      CUDA backend refuses at load (MoE, MLA, FP8, Q8, vision, GGUF blocks, non-f32 KV:
#                      its documented limits) runs on the CPU through auto, each refusal named in the log
#                      (test_main.cpp test_ctx_create); the dense fixtures must run on the GPU.
#   3. bench.log       `npm run bench:engine -- --backend cuda` (cuda-bench.md / .json: GLM-4-9B-shaped
#                      bf16 decode vs the measured HBM roofline, batch 8/32/64, time to first token);
#                      where Node or node_modules is absent (the device machines have neither), the
#                      native engine-bench instead (engine-cuda/test/bench/engine_bench.cpp): the same
#                      shape written streamed (40 layers; MAYA_TEST_GPU_BENCH_LAYERS sets fewer), prefill
#                      and decode at batch 1 and 8, beside gpu-membw's read bandwidth
# and summary.md (one line per step). Every step runs even after a failure; the exit status is 1 if
# any failed. Without a GPU it fails at once. MAYA_TEST_GPU_SKIP_BENCH=1 leaves out step 3.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
out="${1:-}"
if [[ -z "$out" ]]; then
  echo "usage: npm run test:gpu -- RESULTS_DIR" >&2
  exit 2
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
summary="$out/summary.md"
: >"$summary"
failed=0
note() { echo "$1" | tee -a "$summary"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  note "test:gpu: FAIL no NVIDIA GPU visible (nvidia-smi); the GPU checks need one."
  exit 1
fi
has_nvcc=1
command -v nvcc >/dev/null 2>&1 || has_nvcc=0
prebuilt=(engine-cuda/build/libmaya_engine_cuda.so engine-cuda/build/test-cuda-kernels engine-cuda/build/gpu-membw)
if (( ! has_nvcc )); then
  for f in "${prebuilt[@]}"; do
    if [[ ! -f "$f" ]]; then
      note "test:gpu: FAIL nvcc not found and no prebuilt $f (run 'bash scripts/build-engine-cuda.sh --tests' where nvcc is and carry engine-cuda/build)"
      exit 1
    fi
  done
  note "test:gpu: nvcc not found: using the prebuilt CUDA library, kernel tests and probe in engine-cuda/build"
fi
{ nvidia-smi; nvcc --version; date -u; git rev-parse HEAD 2>/dev/null; } >"$out/env.txt" 2>&1

step() { # step NAME LOG COMMAND...
  local name="$1" log="$2" t0=$SECONDS
  shift 2
  if "$@" >"$out/$log" 2>&1; then
    note "- PASS $name ($((SECONDS - t0)) s, $log)"
  else
    note "- FAIL $name ($((SECONDS - t0)) s, $log): $(tail -n 3 "$out/$log" | tr '\n' ' ')"
    failed=1
  fi
}

export MAYA_ENGINE_JOBS="${MAYA_ENGINE_JOBS:-$(nproc)}"
step "build engine + CUDA library" build.log env MAYA_ENGINE_CUDA=$(( has_nvcc ? 1 : 0 )) bash scripts/build-engine.sh
if [[ ! -f engine-cuda/build/libmaya_engine_cuda.so ]]; then
  note "test:gpu: FAIL engine-cuda/build/libmaya_engine_cuda.so was not built"
  exit 1
fi

kernel_tests() {
  if (( has_nvcc )); then bash scripts/build-engine-cuda.sh --tests || return 1; fi
  engine-cuda/build/test-cuda-kernels
}
step "CUDA kernels vs host reference" kernels.log kernel_tests

engine_tests() {
  # The GPU-only comparisons are compiled in with -DMAYA_GPU_TESTS (a separate object dir and binary).
  local rc=0 flags="-DMAYA_GPU_TESTS"
  echo "== golden fixtures on the CUDA backend (tensor-core prefill: logits within 2e-2)"
  MAYA_ENGINE_BACKEND=cuda MAYA_ENGINE_CXXFLAGS="$flags" bash engine-cuda/test/run.sh fixture || rc=1
  echo "== golden fixtures on the CUDA backend, f32 activations throughout (logits within 1e-3, as the CPU)"
  MAYA_CUDA_TC_MIN_TOKENS=0 MAYA_ENGINE_BACKEND=cuda MAYA_ENGINE_CXXFLAGS="$flags" bash engine-cuda/test/run.sh fixture || rc=1
  echo "== backend selection with a GPU"
  MAYA_ENGINE_BACKEND=cuda MAYA_ENGINE_CXXFLAGS="$flags" bash engine-cuda/test/run.sh cuda || rc=1
  echo "== scheduler tests on the CUDA backend"
  MAYA_ENGINE_BACKEND=cuda MAYA_ENGINE_CXXFLAGS="$flags" bash engine-cuda/test/run.sh scheduler || rc=1
  echo "== speculative decoding on the CUDA backend (prompt lookup; greedy invariance, sampling distribution)"
  MAYA_ENGINE_BACKEND=cuda MAYA_ENGINE_CXXFLAGS="$flags" bash engine-cuda/test/run.sh speculative || rc=1
  echo "== CUDA vs CPU backend, batch / chunk / prefix-cache invariance"
  MAYA_ENGINE_CXXFLAGS="$flags" bash engine-cuda/test/run.sh gpu_matches_cpu || rc=1
  return "$rc"
}
step "engine C tests on the CUDA backend" engine-cuda.log engine_tests

native_bench() {
  # GLM-4-9B-shaped bf16 decode through the C ABI, its weight bytes per second against the device's
  # measured read bandwidth (the roofline of batch-1 decode).
  local bin=engine-cuda/build/engine-bench dir="${TMPDIR:-/tmp}/maya-bench-glm4-9b" bw
  "${CXX:-g++}" -std=c++17 -O2 -Wall -Wextra -Werror -o "$bin" engine-cuda/test/bench/engine_bench.cpp \
    engine-cuda/test/model_writer.cpp -Lengine-cuda/build -lmaya_engine -Wl,-rpath,"$root/engine-cuda/build" || return 1
  if [[ ! -f "$dir/model.safetensors" ]]; then
    mkdir -p "$dir" && "$bin" --random-glm4-9b "$dir" "${MAYA_TEST_GPU_BENCH_LAYERS:-40}" || return 1
  fi
  bw="$(engine-cuda/build/gpu-membw 4096 20)" || return 1
  echo "device read bandwidth (gpu-membw): $bw GB/s"
  MAYA_ENGINE_BACKEND=cuda "$bin" "$dir" 0 128 128 | tee "$out/native-bench.txt" || return 1
  # "batch 1: prefill P tok/s, decode D tok/s (G GB/s of weights), ..."
  awk -v bw="$bw" '/^batch/ { g = substr($9, 2) + 0;
    printf "- native bench, GLM-4-9B shape bf16, batch %s decode %s tok/s = %.1f GB/s of weights, %.0f%% of %s GB/s\n",
      $2, $7, g, 100 * g / bw, bw }' "$out/native-bench.txt" | tee "$out/native-bench.md"
}

if [[ "${MAYA_TEST_GPU_SKIP_BENCH:-0}" != 1 ]]; then
  if command -v node >/dev/null 2>&1 && [[ -d node_modules ]]; then
    step "bench:engine --backend cuda" bench.log npx tsx bench/engine.bench.ts --backend cuda --runs 3 --out "$out"
    [[ -f "$out/cuda-bench.md" ]] && cat "$out/cuda-bench.md" >>"$summary"
  else
    step "native engine-bench on the CUDA backend (no Node here)" bench.log native_bench
    [[ -f "$out/native-bench.md" ]] && cat "$out/native-bench.md" >>"$summary"
  fi
fi
echo "test:gpu: results in $out"
exit "$failed"
