/* gemv.cu: one warp per weight row (of one of up to three matrices sharing x). Lanes read the row in 16-byte vectors (8 bf16/f16 or 4 f32)
 * spaced 512 bytes apart, so a warp's loads are coalesced and a block of 8 warps keeps 8 rows in
 * flight per SM slot; x (a few KB per token) stays in L1/L2. Each (row, token) sum has a fixed
 * order (lane-strided, then a butterfly), whatever T is, so decode results do not depend on the
 * batch size within this kernel. */
#include "gemv.cuh"
#include "../cuda_common.cuh" // defines: to_f32, warp_sum, CUDA_CHECK_LAUNCH

namespace maya {

constexpr int kGemvWarps = 8;

struct GemvJobs {
    LinearArgs job[kGemvMaxJobs];
    int block_end[kGemvMaxJobs]; // cumulative blocks per job
    int n_jobs;
};

template <typename W, int NT, bool VEC>
static __global__ void __launch_bounds__(kGemvWarps * 32) gemv_kernel(GemvJobs jobs) {
    int j = 0, b = blockIdx.x;
    while (j + 1 < jobs.n_jobs && b >= jobs.block_end[j]) j++;
    const LinearArgs &a = jobs.job[j];
    int first = j > 0 ? jobs.block_end[j - 1] : 0;
    int r = (b - first) * kGemvWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
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
static void launch(const GemvJobs &g, bool vec, cudaStream_t st) {
    dim3 grid(g.block_end[g.n_jobs - 1]);
    if (vec) gemv_kernel<W, NT, true><<<grid, kGemvWarps * 32, 0, st>>>(g);
    else gemv_kernel<W, NT, false><<<grid, kGemvWarps * 32, 0, st>>>(g);
}

template <typename W>
static void launch_t(const GemvJobs &a, int T, bool vec, cudaStream_t st) {
    switch (T) {
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

int32_t gemv_multi(const LinearArgs *jobs, int n_jobs, cudaStream_t st) {
    if (n_jobs < 1 || n_jobs > kGemvMaxJobs) return cuda_fail(ENG_STATUS_INVALID_ARG, "gemv: %d jobs", n_jobs);
    const LinearArgs &a = jobs[0];
    if (a.T < 1 || a.T > kGemvMaxTokens) return cuda_fail(ENG_STATUS_INVALID_ARG, "gemv: %d tokens", a.T);
    int esize = a.dtype == DT_F32 ? 4 : 2;
    // 16-byte loads need 16-byte aligned rows (K * esize) and x rows (ldx floats).
    bool vec = (a.K * esize) % 16 == 0 && a.ldx % 4 == 0 && ((uintptr_t)a.x % 16) == 0;
    GemvJobs g;
    g.n_jobs = n_jobs;
    int blocks = 0;
    for (int j = 0; j < n_jobs; j++) {
        const LinearArgs &b = jobs[j];
        if (b.dtype != a.dtype || b.T != a.T || b.K != a.K || b.x != a.x || b.ldx != a.ldx)
            return cuda_fail(ENG_STATUS_INVALID_ARG, "gemv: jobs differ in dtype, T, K or x");
        vec = vec && ((uintptr_t)b.w % 16) == 0;
        g.job[j] = b;
        blocks += ceil_div(b.rows, kGemvWarps);
        g.block_end[j] = blocks;
    }
    switch (a.dtype) {
    case DT_F32: launch_t<float>(g, a.T, vec, st); break;
    case DT_F16: launch_t<__half>(g, a.T, vec, st); break;
    case DT_BF16: launch_t<__nv_bfloat16>(g, a.T, vec, st); break;
    default: return cuda_fail(ENG_STATUS_UNSUPPORTED, "gemv: unsupported dtype %d", (int)a.dtype);
    }
    CUDA_CHECK_LAUNCH();
    return ENG_STATUS_OK;
}

int32_t gemv(const LinearArgs &a, cudaStream_t st) { return gemv_multi(&a, 1, st); }

} // namespace maya
