/* swiglu.cuh: the gated MLP activation (the residual add is fused with RMSNorm: rmsnorm.cuh). */
#ifndef MAYA_CUDA_SWIGLU_CUH
#define MAYA_CUDA_SWIGLU_CUH

#include <cuda_runtime.h>
#include <stdint.h>

namespace maya {

/* out (T, I) = silu(gu[:, :I]) * gu[:, I:], gu (T, 2I) as the fused [gate; up] projection writes it.
 * Returns OK or BACKEND. */
int32_t swiglu(float *out, const float *gu, int T, int I, cudaStream_t st);

} // namespace maya

#endif
