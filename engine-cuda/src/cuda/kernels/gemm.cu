/* gemm.cu: two tiled matmuls over the same LinearArgs.
 *
 * gemm_simt: 64 weight rows x 64 tokens per 256-thread block, K in steps of 16 through shared
 * memory (weights widened to f32 on the way in), 4 x 4 outputs per thread.
 * gemm_bf16_tc: 64 x 64 tiles, 4 warps each owning 32 x 32 as 2 x 2 wmma 16x16x16 bf16 fragments
 * with f32 accumulators, K in steps of 32 loaded with 16-byte vectors; x enters as two bf16 terms
 * (hi + lo), so each tile takes two MMAs and the result is close to an f32-activation matmul. The epilogue stages each
 * fragment through shared memory to add the bias and write y[t][r] with bounds checks.
 */
#include <mma.h>

#include "gemm.cuh"
#include "../cuda_common.cuh" // defines: to_f32, CUDA_CHECK_LAUNCH

namespace maya {

namespace {

constexpr int kTile = 64, kSimtK = 16;

template <typename W> __global__ void __launch_bounds__(256) gemm_simt_kernel(LinearArgs a) {
    __shared__ float ws[kSimtK][kTile + 4]; // [k][row]
    __shared__ float xs[kSimtK][kTile + 4]; // [k][token]
    int r0 = blockIdx.x * kTile, t0 = blockIdx.y * kTile;
    int tr = threadIdx.x % 16, tt = threadIdx.x / 16; // 16 x 16 threads, 4 x 4 outputs each
    const W *w = (const W *)a.w;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < a.K; k0 += kSimtK) {
        for (int e = threadIdx.x; e < kTile * kSimtK; e += 256) {
            int i = e / kSimtK, k = e % kSimtK; // row-major reads along K
            int r = r0 + i, t = t0 + i, kk = k0 + k;
            ws[k][i] = (r < a.rows && kk < a.K) ? to_f32(w[(int64_t)r * a.K + kk]) : 0.0f;
            xs[k][i] = (t < a.T && kk < a.K) ? a.x[(int64_t)t * a.ldx + kk] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kSimtK; k++) {
            float wr[4], xr[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                wr[i] = ws[k][tr + 16 * i];
                xr[i] = xs[k][tt + 16 * i];
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] += wr[i] * xr[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int r = r0 + tr + 16 * i;
        if (r >= a.rows) continue;
        float b = a.bias ? a.bias[r] : 0.0f;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int t = t0 + tt + 16 * j;
            if (t < a.T) a.y[(int64_t)t * a.ldy + r] = acc[i][j] + b;
        }
    }
}

/* x (T, ldx) f32 -> hi, lo (T, K) bf16 with hi + lo = x to about 2^-17 relative (hi = bf16(x),
 * lo = bf16(x - hi)). Bf16 weights times hi and lo in f32 accumulators then give nearly the f32
 * product: one bf16 rounding of x alone moved the GLM-4 fixture's logits by 2e-2, the pair by 4e-5
 * (measured on the CPU path with the same roundings). */
__global__ void split_bf16_kernel(__nv_bfloat16 *hi, __nv_bfloat16 *lo, const float *x, int T, int K, int ldx) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)T * K) return;
    float v = x[(i / K) * ldx + i % K];
    __nv_bfloat16 h = __float2bfloat16(v);
    hi[i] = h;
    lo[i] = __float2bfloat16(v - __bfloat162float(h));
}

constexpr int kTcK = 32, kTcPad = 8; // pad rows by 16 bytes against bank conflicts

__global__ void __launch_bounds__(128)
    gemm_tc_kernel(LinearArgs a, const __nv_bfloat16 *xhi, const __nv_bfloat16 *xlo) {
    using namespace nvcuda;
    __shared__ __align__(32) __nv_bfloat16 ws[kTile][kTcK + kTcPad];
    __shared__ __align__(32) __nv_bfloat16 xs[kTile][kTcK + kTcPad]; // hi part of x
    __shared__ __align__(32) __nv_bfloat16 xl[kTile][kTcK + kTcPad]; // lo part of x
    __shared__ __align__(32) float stage[4][16 * 16];
    int r0 = blockIdx.x * kTile, t0 = blockIdx.y * kTile;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int wr = (warp / 2) * 32, wt = (warp % 2) * 32;
    const __nv_bfloat16 *w = (const __nv_bfloat16 *)a.w;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
    const uint4 zero = make_uint4(0, 0, 0, 0);
    for (int k0 = 0; k0 < a.K; k0 += kTcK) {
        // 64 rows x 32 k = 256 vectors of 8 bf16 for each operand; 2 per thread.
        for (int v = threadIdx.x; v < kTile * kTcK / 8; v += 128) {
            int i = v / (kTcK / 8), kk = k0 + (v % (kTcK / 8)) * 8;
            int r = r0 + i, t = t0 + i;
            bool has_t = t < a.T && kk < a.K;
            uint4 wv = (r < a.rows && kk < a.K) ? *(const uint4 *)(w + (int64_t)r * a.K + kk) : zero;
            uint4 xv = has_t ? *(const uint4 *)(xhi + (int64_t)t * a.K + kk) : zero;
            uint4 xlv = has_t ? *(const uint4 *)(xlo + (int64_t)t * a.K + kk) : zero;
            *(uint4 *)&ws[i][(v % (kTcK / 8)) * 8] = wv;
            *(uint4 *)&xs[i][(v % (kTcK / 8)) * 8] = xv;
            *(uint4 *)&xl[i][(v % (kTcK / 8)) * 8] = xlv;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kTcK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb[2], fl[2];
#pragma unroll
            for (int i = 0; i < 2; i++) wmma::load_matrix_sync(fa[i], &ws[wr + 16 * i][kk], kTcK + kTcPad);
#pragma unroll
            for (int j = 0; j < 2; j++) {
                wmma::load_matrix_sync(fb[j], &xs[wt + 16 * j][kk], kTcK + kTcPad);
                wmma::load_matrix_sync(fl[j], &xl[wt + 16 * j][kk], kTcK + kTcPad);
            }
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    wmma::mma_sync(acc[i][j], fa[i], fl[j], acc[i][j]); // the small term first
                    wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
                }
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            // stage[m][n] column-major: element (row m, token n) at n * 16 + m.
            wmma::store_matrix_sync(stage[warp], acc[i][j], 16, wmma::mem_col_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                int n = e / 16, m = e % 16;
                int r = r0 + wr + 16 * i + m, t = t0 + wt + 16 * j + n;
                if (r < a.rows && t < a.T) a.y[(int64_t)t * a.ldy + r] = stage[warp][e] + (a.bias ? a.bias[r] : 0.0f);
            }
            __syncwarp();
        }
}

} // namespace

int32_t gemm_simt(const LinearArgs &a, cudaStream_t st) {
    if (a.T <= 0) return ENG_STATUS_OK;
    dim3 grid(ceil_div(a.rows, kTile), ceil_div(a.T, kTile));
    switch (a.dtype) {
    case DT_F32: gemm_simt_kernel<float><<<grid, 256, 0, st>>>(a); break;
    case DT_F16: gemm_simt_kernel<__half><<<grid, 256, 0, st>>>(a); break;
    case DT_BF16: gemm_simt_kernel<__nv_bfloat16><<<grid, 256, 0, st>>>(a); break;
    default: return cuda_fail(ENG_STATUS_UNSUPPORTED, "gemm: unsupported dtype %d", (int)a.dtype);
    }
    CUDA_CHECK_LAUNCH();
    return ENG_STATUS_OK;
}

bool gemm_bf16_tc_fits(const LinearArgs &a) { return a.dtype == DT_BF16 && a.K % 8 == 0 && (uintptr_t)a.w % 16 == 0; }

int32_t gemm_bf16_tc(const LinearArgs &a, void *xb, cudaStream_t st) {
    if (!gemm_bf16_tc_fits(a))
        return cuda_fail(ENG_STATUS_UNSUPPORTED, "gemm_bf16_tc: needs bf16 weights, K %% 8 == 0");
    if (a.T <= 0) return ENG_STATUS_OK;
    int64_t n = (int64_t)a.T * a.K;
    __nv_bfloat16 *hi = (__nv_bfloat16 *)xb, *lo = hi + n;
    split_bf16_kernel<<<ceil_div(n, 256), 256, 0, st>>>(hi, lo, a.x, a.T, a.K, a.ldx);
    CUDA_CHECK_LAUNCH();
    dim3 grid(ceil_div(a.rows, kTile), ceil_div(a.T, kTile));
    gemm_tc_kernel<<<grid, 128, 0, st>>>(a, hi, lo);
    CUDA_CHECK_LAUNCH();
    return ENG_STATUS_OK;
}

} // namespace maya
