/* gemm.cuh: prefill / large-batch matmul y = x W^T (+ bias): a tensor-core kernel for bf16 weights
 * (activations split into two bf16 terms, f32 accumulation) and an f32 SIMT kernel for every dtype. */
#ifndef MAYA_CUDA_GEMM_CUH
#define MAYA_CUDA_GEMM_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "gemv.cuh" // defines: LinearArgs

namespace maya {

/* Any T >= 1, any supported dtype; x and W widened to f32. Returns OK or BACKEND. */
int32_t gemm_simt(const LinearArgs &a, cudaStream_t st);
/* bf16 weights with K % 8 == 0 only. xb: scratch of at least 2 * T * K bf16 (device) that receives
 * x as hi and lo bf16 terms. Returns OK, UNSUPPORTED (dtype/shape: use gemm_simt) or BACKEND. */
int32_t gemm_bf16_tc(const LinearArgs &a, void *xb, cudaStream_t st);
bool gemm_bf16_tc_fits(const LinearArgs &a);

} // namespace maya

#endif
