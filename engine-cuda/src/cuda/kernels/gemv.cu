/* gemv.cu: one warp per weight row. Lanes read the row in 16-byte vectors (8 bf16/f16 or 4 f32)
 * spaced 512 bytes apart, so a warp's loads are coalesced and a block of 8 warps keeps 8 rows in
 * flight per SM slot; x (a few KB per token) stays in L1/L2. Each (row, token) sum has a fixed
 * order (lane-strided, then a butterfly), whatever T is, so decode results do not depend on the
 * batch size within this kernel. */
#include "gemv.cuh"
#include "../cuda_common.cuh" // defines: to_f32, warp_sum, CUDA_CHECK_LAUNCH

namespace maya {

constexpr int kGemvWarps = 8;

template <typename W, int NT, bool VEC>
static __global__ void __launch_bounds__(kGemvWarps * 32) gemv_kernel(LinearArgs a) {
    int r = blockIdx.x * kGemvWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= a.rows) return;
    const W *row = (const W *)a.w + (int64_t)r * a.K;
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = 0.0f;
    if (VEC) {
        constexpr int E = 16 / sizeof(W); // elements per 16-byte load
        const uint4 *rv = (const uint4 *)row;
        int n_vec = a.K / E;
#pragma unroll 4
        for (int c = lane; c < n_vec; c += 32) {
            uint4 raw = __ldg(rv + c);
            const W *wv = (const W *)&raw;
            float wf[E];
#pragma unroll
            for (int e = 0; e < E; e++) wf[e] = to_f32(wv[e]);
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const float4 *xv = (const float4 *)(a.x + (int64_t)t * a.ldx + (int64_t)c * E);
#pragma unroll
                for (int e4 = 0; e4 < E / 4; e4++) {
                    float4 xx = __ldg(xv + e4);
                    acc[t] += wf[4 * e4] * xx.x + wf[4 * e4 + 1] * xx.y + wf[4 * e4 + 2] * xx.z + wf[4 * e4 + 3] * xx.w;
                }
            }
        }
    } else {
        for (int k = lane; k < a.K; k += 32) {
            float wk = to_f32(row[k]);
#pragma unroll
            for (int t = 0; t < NT; t++) acc[t] += wk * a.x[(int64_t)t * a.ldx + k];
        }
    }
#pragma unroll
    for (int t = 0; t < NT; t++) {
        float s = warp_sum(acc[t]);
        if (lane == 0) a.y[(int64_t)t * a.ldy + r] = s + (a.bias ? a.bias[r] : 0.0f);
    }
}

template <typename W, int NT>
static void launch(const LinearArgs &a, bool vec, cudaStream_t st) {
    dim3 grid(ceil_div(a.rows, kGemvWarps));
    if (vec) gemv_kernel<W, NT, true><<<grid, kGemvWarps * 32, 0, st>>>(a);
    else gemv_kernel<W, NT, false><<<grid, kGemvWarps * 32, 0, st>>>(a);
}

template <typename W>
static void launch_t(const LinearArgs &a, bool vec, cudaStream_t st) {
    switch (a.T) {
    case 1: launch<W, 1>(a, vec, st); break;
    case 2: launch<W, 2>(a, vec, st); break;
    case 3: launch<W, 3>(a, vec, st); break;
    case 4: launch<W, 4>(a, vec, st); break;
    case 5: launch<W, 5>(a, vec, st); break;
    case 6: launch<W, 6>(a, vec, st); break;
    case 7: launch<W, 7>(a, vec, st); break;
    default: launch<W, 8>(a, vec, st); break;
    }
}

int32_t gemv(const LinearArgs &a, cudaStream_t st) {
    if (a.T < 1 || a.T > kGemvMaxTokens) return cuda_fail(ENG_STATUS_INVALID_ARG, "gemv: %d tokens", a.T);
    int esize = a.dtype == DT_F32 ? 4 : 2;
    // 16-byte loads need 16-byte aligned rows (K * esize) and x rows (ldx floats).
    bool vec = (a.K * esize) % 16 == 0 && a.ldx % 4 == 0 && ((uintptr_t)a.w % 16) == 0 && ((uintptr_t)a.x % 16) == 0;
    switch (a.dtype) {
    case DT_F32: launch_t<float>(a, vec, st); break;
    case DT_F16: launch_t<__half>(a, vec, st); break;
    case DT_BF16: launch_t<__nv_bfloat16>(a, vec, st); break;
    default: return cuda_fail(ENG_STATUS_UNSUPPORTED, "gemv: unsupported dtype %d", (int)a.dtype);
    }
    CUDA_CHECK_LAUNCH();
    return ENG_STATUS_OK;
}

} // namespace maya
