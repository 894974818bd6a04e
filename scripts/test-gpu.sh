#!/usr/bin/env bash
# GPU checks (`npm run test:gpu`): run on a machine with an NVIDIA GPU, never in CI.
# The engine has only its CPU backend so far; the CUDA backend (and its kernel tests against the
# CPU reference) is a later issue. Until it lands this script says so and fails, rather than
# passing without having tested anything on a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "test:gpu: no NVIDIA GPU visible (nvidia-smi); GPU tests need one." >&2
  exit 1
fi
bash scripts/build-engine.sh
if ! grep -q 'ENG_BACKEND_CUDA_BUILT' engine-cuda/src/*.h 2>/dev/null; then
  echo "test:gpu: this build has no CUDA backend yet (CPU only); nothing GPU-specific to test." >&2
  exit 1
fi
bash engine-cuda/test/run.sh --backend cuda
