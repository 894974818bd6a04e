/* embed.cu: x[t] = widen(table[tokens[t]]), one block per token. */
#include "embed.cuh"
#include "../cuda_common.cuh" // defines: to_f32, CUDA_CHECK_LAUNCH

namespace maya {

template <typename W> static __global__ void embed_kernel(float *x, const W *table, const int32_t *tokens, int C) {
    int t = blockIdx.x;
    const W *row = table + (int64_t)tokens[t] * C;
    for (int i = threadIdx.x; i < C; i += blockDim.x) x[(int64_t)t * C + i] = to_f32(row[i]);
}

int32_t embed_rows(float *x, const void *table, DType dt, const int32_t *tokens, int T, int C, cudaStream_t st) {
    if (T <= 0) return ENG_STATUS_OK;
    switch (dt) {
    case DT_F32: embed_kernel<<<T, 256, 0, st>>>(x, (const float *)table, tokens, C); break;
    case DT_F16: embed_kernel<<<T, 256, 0, st>>>(x, (const __half *)table, tokens, C); break;
    case DT_BF16: embed_kernel<<<T, 256, 0, st>>>(x, (const __nv_bfloat16 *)table, tokens, C); break;
    default: return cuda_fail(ENG_STATUS_UNSUPPORTED, "embedding: unsupported dtype %d", (int)dt);
    }
    CUDA_CHECK_LAUNCH();
    return ENG_STATUS_OK;
}

} // namespace maya
