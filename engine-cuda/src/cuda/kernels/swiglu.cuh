/* swiglu.cuh: the gated MLP activation and the residual add. */
#ifndef MAYA_CUDA_SWIGLU_CUH
#define MAYA_CUDA_SWIGLU_CUH

#include <cuda_runtime.h>
#include <stdint.h>

namespace maya {

/* out (T, I) = silu(gu[:, :I]) * gu[:, I:], gu (T, 2I) as the fused [gate; up] projection writes it.
 * Returns OK or BACKEND. */
int32_t swiglu(float *out, const float *gu, int T, int I, cudaStream_t st);
/* x (n) += h (n). Returns OK or BACKEND. */
int32_t residual_add(float *x, const float *h, int64_t n, cudaStream_t st);

} // namespace maya

#endif
