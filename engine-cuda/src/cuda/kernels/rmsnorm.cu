/* rmsnorm.cu: one warp per row for short rows (per-head norms), one 256-thread block otherwise, and
 * the fused residual + norm between blocks. Each thread reads and writes the same elements, so
 * in-place use is safe. */
#include "rmsnorm.cuh"
#include "../cuda_common.cuh" // defines: warp_sum, CUDA_CHECK_LAUNCH

namespace maya {

/* Sum of v over the block (256 threads); every thread gets the total. partial: 32 floats of smem. */
static __device__ float block_sum(float v, float *partial) {
    v = warp_sum(v);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads(); // partial may still be read from a previous call
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < (int)blockDim.x / 32 ? partial[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0) partial[0] = t;
    }
    __syncthreads();
    return partial[0];
}

static __global__ void add_rmsnorm_kernel(float *x, float *h, const float *post_w, const float *next_w, int n,
                                          float eps) {
    __shared__ float partial[32];
    float *xr = x + (int64_t)blockIdx.x * n, *hr = h + (int64_t)blockIdx.x * n;
    float inv = 1.0f;
    if (post_w) {
        float ss = 0;
        for (int i = threadIdx.x; i < n; i += blockDim.x) ss += hr[i] * hr[i];
        inv = 1.0f / sqrtf(block_sum(ss, partial) / (float)n + eps);
    }
    float ss = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = xr[i] + (post_w ? hr[i] * inv * post_w[i] : hr[i]);
        xr[i] = v;
        ss += v * v;
    }
    if (!next_w) return;
    float inv2 = 1.0f / sqrtf(block_sum(ss, partial) / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) hr[i] = xr[i] * inv2 * next_w[i];
}

static __global__ void rmsnorm_block_kernel(float *out, int ld_out, const float *x, int ld_x, const int32_t *rows,
                                            const float *w, int n, float eps) {
    __shared__ float partial[32];
    int r = blockIdx.x;
    const float *xr = x + (int64_t)(rows ? rows[r] : r) * ld_x;
    float ss = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
    ss = warp_sum(ss);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) partial[warp] = ss;
    __syncthreads();
    if (warp == 0) {
        float v = lane < (int)blockDim.x / 32 ? partial[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) partial[0] = v;
    }
    __syncthreads();
    float inv = 1.0f / sqrtf(partial[0] / (float)n + eps);
    float *o = out + (int64_t)r * ld_out;
    for (int i = threadIdx.x; i < n; i += blockDim.x) o[i] = xr[i] * inv * w[i];
}

static __global__ void rmsnorm_warp_kernel(float *out, int ld_out, const float *x, int ld_x, const int32_t *rows,
                                           const float *w, int n_rows, int n, float eps) {
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= n_rows) return;
    const float *xr = x + (int64_t)(rows ? rows[r] : r) * ld_x;
    float ss = 0;
    for (int i = lane; i < n; i += 32) ss += xr[i] * xr[i];
    ss = warp_sum(ss);
    float inv = 1.0f / sqrtf(ss / (float)n + eps);
    float *o = out + (int64_t)r * ld_out;
    for (int i = lane; i < n; i += 32) o[i] = xr[i] * inv * w[i];
}

int32_t rmsnorm_rows(float *out, int ld_out, const float *x, int ld_x, const int32_t *rows, const float *w, int n_rows,
                     int n, float eps, cudaStream_t st) {
    if (n_rows <= 0) return ENG_STATUS_OK;
    if (n <= 512) {
        const int warps = 8;
        rmsnorm_warp_kernel<<<ceil_div(n_rows, warps), warps * 32, 0, st>>>(out, ld_out, x, ld_x, rows, w, n_rows, n,
                                                                            eps);
    } else {
        rmsnorm_block_kernel<<<n_rows, 256, 0, st>>>(out, ld_out, x, ld_x, rows, w, n, eps);
    }
    CUDA_CHECK_LAUNCH();
    return ENG_STATUS_OK;
}

int32_t add_rmsnorm_rows(float *x, float *h, const float *post_w, const float *next_w, int T, int n, float eps,
                         cudaStream_t st) {
    if (T <= 0) return ENG_STATUS_OK;
    add_rmsnorm_kernel<<<T, 256, 0, st>>>(x, h, post_w, next_w, n, eps);
    CUDA_CHECK_LAUNCH();
    return ENG_STATUS_OK;
}

} // namespace maya
