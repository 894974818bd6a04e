#!/usr/bin/env bash
# `npm run engine:cuda:check` (part of `npm test`; no GPU needed): compiles every CUDA source for the
# configured target (sm_90a by default) with warnings as errors when nvcc is present, and runs the
# CUDA backend's host-side C tests (selection, error paths, paging index math) as a machine without
# the CUDA library sees them. Objects are cached, so a rerun without changes costs seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v nvcc >/dev/null 2>&1; then
  bash scripts/build-engine-cuda.sh --check
else
  echo "engine:cuda:check: nvcc not found: CUDA sources not compiled (the CPU engine needs none)"
fi
MAYA_ENGINE_CUDA_LIB=/nonexistent/libmaya_engine_cuda.so bash engine-cuda/test/run.sh cuda_
