/* gemv.cu: decode matmuls. A warp owns R consecutive rows (of one of up to three matrices sharing
 * x); its lanes read each row in 16-byte vectors (8 bf16/f16 or 4 f32) 512 bytes apart, so loads
 * are coalesced, and each x vector read (from L1/L2: x is a few KB per token) serves all R rows,
 * which keeps L1 traffic below the weight stream even at 8 tokens. Every (row, token) sum has one
 * fixed order (lane-strided vectors, then a butterfly) whatever T and R are, so decode results do
 * not depend on the batch size within this kernel. */
#include "gemv.cuh"
#include "../cuda_common.cuh" // defines: to_f32, warp_sum, CUDA_CHECK_LAUNCH

namespace maya {

constexpr int kGemvWarps = 8;

/* Rows per warp: 2 for one token, 4 for more (more x reuse; 4 x 8 accumulators per lane). */
template <int NT> __host__ __device__ constexpr int rows_per_warp() { return NT >= 2 ? 4 : 2; }

struct GemvJobs {
    LinearArgs job[kGemvMaxJobs];
    int block_end[kGemvMaxJobs]; // cumulative blocks per job
    int n_jobs;
};

template <typename W, int NT, bool VEC>
static __global__ void __launch_bounds__(kGemvWarps * 32) gemv_kernel(GemvJobs jobs) {
    constexpr int R = rows_per_warp<NT>();
    int j = 0, b = blockIdx.x;
    while (j + 1 < jobs.n_jobs && b >= jobs.block_end[j]) j++;
    const LinearArgs &a = jobs.job[j];
    int first = j > 0 ? jobs.block_end[j - 1] : 0;
    int r0 = ((b - first) * kGemvWarps + threadIdx.x / 32) * R, lane = threadIdx.x % 32;
    if (r0 >= a.rows) return;
    int n_rows = a.rows - r0 < R ? a.rows - r0 : R; // rows past the end read row r0 again, unused
    const W *w0 = (const W *)a.w + (int64_t)r0 * a.K;
    float acc[R][NT];
#pragma unroll
    for (int i = 0; i < R; i++)
#pragma unroll
        for (int t = 0; t < NT; t++) acc[i][t] = 0.0f;
    if (VEC) {
        constexpr int E = 16 / sizeof(W); // elements per 16-byte load
        int n_vec = a.K / E;
#pragma unroll 2
        for (int c = lane; c < n_vec; c += 32) {
            float wf[R][E];
#pragma unroll
            for (int i = 0; i < R; i++) {
                uint4 raw = __ldg((const uint4 *)(w0 + (int64_t)(i < n_rows ? i : 0) * a.K) + c);
                const W *wv = (const W *)&raw;
#pragma unroll
                for (int e = 0; e < E; e++) wf[i][e] = to_f32(wv[e]);
            }
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const float4 *xv = (const float4 *)(a.x + (int64_t)t * a.ldx + (int64_t)c * E);
#pragma unroll
                for (int e4 = 0; e4 < E / 4; e4++) {
                    float4 xx = __ldg(xv + e4);
#pragma unroll
                    for (int i = 0; i < R; i++)
                        acc[i][t] += wf[i][4 * e4] * xx.x + wf[i][4 * e4 + 1] * xx.y + wf[i][4 * e4 + 2] * xx.z +
                                     wf[i][4 * e4 + 3] * xx.w;
                }
            }
        }
    } else {
        for (int k = lane; k < a.K; k += 32) {
#pragma unroll
            for (int i = 0; i < R; i++) {
                float wk = to_f32(w0[(int64_t)(i < n_rows ? i : 0) * a.K + k]);
#pragma unroll
                for (int t = 0; t < NT; t++) acc[i][t] += wk * a.x[(int64_t)t * a.ldx + k];
            }
        }
    }
#pragma unroll
    for (int i = 0; i < R; i++)
#pragma unroll
        for (int t = 0; t < NT; t++) {
            float s = warp_sum(acc[i][t]);
            if (lane == 0 && i < n_rows) a.y[(int64_t)t * a.ldy + r0 + i] = s + (a.bias ? a.bias[r0 + i] : 0.0f);
        }
}

template <typename W, int NT> static void launch(GemvJobs g, bool vec, cudaStream_t st) {
    int blocks = 0, per_block = kGemvWarps * rows_per_warp<NT>();
    for (int j = 0; j < g.n_jobs; j++) g.block_end[j] = blocks += ceil_div(g.job[j].rows, per_block);
    if (vec) gemv_kernel<W, NT, true><<<blocks, kGemvWarps * 32, 0, st>>>(g);
    else gemv_kernel<W, NT, false><<<blocks, kGemvWarps * 32, 0, st>>>(g);
}

template <typename W> static void launch_t(const GemvJobs &a, int T, bool vec, cudaStream_t st) {
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
    for (int j = 0; j < n_jobs; j++) {
        const LinearArgs &b = jobs[j];
        if (b.dtype != a.dtype || b.T != a.T || b.K != a.K || b.x != a.x || b.ldx != a.ldx)
            return cuda_fail(ENG_STATUS_INVALID_ARG, "gemv: jobs differ in dtype, T, K or x");
        vec = vec && ((uintptr_t)b.w % 16) == 0;
        g.job[j] = b;
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
