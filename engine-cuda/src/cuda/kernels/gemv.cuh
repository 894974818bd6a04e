/* gemv.cuh: decode matmul y = x W^T (+ bias) for a few tokens, streaming W once at full bandwidth. */
#ifndef MAYA_CUDA_GEMV_CUH
#define MAYA_CUDA_GEMV_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "../../checkpoint.h" // defines: DType

namespace maya {

/* Most tokens one gemv launch handles (each keeps an accumulator per lane). */
constexpr int kGemvMaxTokens = 8;

struct LinearArgs {
    const void *w; // (rows, K) stored dtype, device
    DType dtype;
    int rows, K;
    const float *x; // (T, ldx) f32
    int ldx;
    float *y; // (T, ldy) f32; y[t][r]
    int ldy;
    const float *bias; // (rows) or null
    int T;
};

/* T in [1, kGemvMaxTokens]. Returns OK, INVALID_ARG or BACKEND. */
int32_t gemv(const LinearArgs &a, cudaStream_t st);
/* Up to kGemvMaxJobs matmuls in one launch (q/k/v, gate/up), with the same dtype, T, K and x; their
 * rows are spread over one grid so that small matrices (k, v of GQA models) do not leave SMs idle.
 * Returns OK, INVALID_ARG or BACKEND. */
constexpr int kGemvMaxJobs = 3;
int32_t gemv_multi(const LinearArgs *jobs, int n_jobs, cudaStream_t st);

} // namespace maya

#endif
