/* rope.cu: one block per token. The angle is the f32 product pos * inv_freq[i] and its cos/sin
 * are taken in double and rounded, as the CPU backend does, so both rotate identically. */
#include "rope.cuh"
#include "../cuda_common.cuh" // defines: CUDA_CHECK_LAUNCH
#include "../paging.h"        // defines: kv_offset

namespace maya {

static __global__ void rope_kv_kernel(RopeArgs a) {
    int t = blockIdx.x, half = a.rotary_dim / 2, D = a.D;
    int pos = a.tok_pos[t];
    int n_pairs = (a.H + a.Hkv) * half;
    for (int p = threadIdx.x; p < n_pairs; p += blockDim.x) {
        int head = p / half, i = p % half;
        float *x = head < a.H ? a.q + ((int64_t)t * a.H + head) * D : a.k + ((int64_t)t * a.Hkv + head - a.H) * D;
        float ang = (float)pos * a.inv_freq[i];
        float c = (float)cos((double)ang), s = (float)sin((double)ang);
        int i0 = a.is_interleaved ? 2 * i : i, i1 = a.is_interleaved ? 2 * i + 1 : i + half;
        float x0 = x[i0], x1 = x[i1];
        x[i0] = x0 * c - x1 * s;
        x[i1] = x1 * c + x0 * s;
    }
    __syncthreads();
    const int32_t *bt = a.bt + a.tok_bt[t];
    for (int e = threadIdx.x; e < a.Hkv * D; e += blockDim.x) {
        int g = e / D, d = e % D;
        int64_t off = kv_offset(bt, pos, a.bs, a.Hkv, g, D) + d;
        a.kcache[off] = a.k[(int64_t)t * a.Hkv * D + e];
        a.vcache[off] = a.v[(int64_t)t * a.Hkv * D + e];
    }
}

int32_t rope_write_kv(const RopeArgs &a, cudaStream_t st) {
    if (a.T <= 0) return ENG_STATUS_OK;
    rope_kv_kernel<<<a.T, 128, 0, st>>>(a);
    CUDA_CHECK_LAUNCH();
    return ENG_STATUS_OK;
}

} // namespace maya
