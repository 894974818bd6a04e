/* swiglu.cu: elementwise; silu(g) = g / (1 + exp(-g)) with expf, as the CPU kernel. */
#include "swiglu.cuh"
#include "../cuda_common.cuh" // defines: CUDA_CHECK_LAUNCH, ceil_div

namespace maya {

static __global__ void swiglu_kernel(float *out, const float *gu, int T, int I) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)T * I) return;
    int64_t t = i / I, c = i % I;
    float g = gu[t * 2 * I + c], u = gu[t * 2 * I + I + c];
    out[i] = g / (1.0f + expf(-g)) * u;
}

int32_t swiglu(float *out, const float *gu, int T, int I, cudaStream_t st) {
    int64_t n = (int64_t)T * I;
    if (n <= 0) return ENG_STATUS_OK;
    swiglu_kernel<<<ceil_div(n, 256), 256, 0, st>>>(out, gu, T, I);
    CUDA_CHECK_LAUNCH();
    return ENG_STATUS_OK;
}

} // namespace maya
