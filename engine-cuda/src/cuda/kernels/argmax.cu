/* argmax.cu: one 1024-thread block per row: each thread keeps the best (value, index) of a strided
 * slice, then a warp-shuffle and shared-memory reduction that prefers the larger value, then the
 * lower index. Index V is the "none yet" sentinel, so -inf entries can still be chosen (as the
 * host's argmax returns the first of an all -inf row) while NaNs never are. */
#include "argmax.cuh"
#include "../cuda_common.cuh" // defines: CUDA_CHECK_LAUNCH

namespace maya {

namespace {

constexpr int kArgmaxThreads = 1024;

__device__ __forceinline__ void take_better(float &v, int &i, float ov, int oi) {
    if (ov > v || (ov == v && oi < i)) v = ov, i = oi;
}

__global__ void __launch_bounds__(kArgmaxThreads) argmax_kernel(int32_t *out, const float *logits, int V) {
    __shared__ float sv[32];
    __shared__ int si[32];
    const float *row = logits + (int64_t)blockIdx.x * V;
    float best = -INFINITY;
    int bi = V;
    for (int i = threadIdx.x; i < V; i += blockDim.x) {
        float x = row[i];
        if (x > best || (bi == V && x == best)) best = x, bi = i;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, best, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        take_better(best, bi, ov, oi);
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) sv[warp] = best, si[warp] = bi;
    __syncthreads();
    if (warp == 0) {
        int n_warps = blockDim.x / 32;
        best = lane < n_warps ? sv[lane] : -INFINITY;
        bi = lane < n_warps ? si[lane] : V;
        for (int o = 16; o > 0; o >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, best, o);
            int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            take_better(best, bi, ov, oi);
        }
        if (lane == 0) out[blockIdx.x] = bi == V ? 0 : bi;
    }
}

} // namespace

int32_t argmax_rows(int32_t *out, const float *logits, int n_rows, int V, cudaStream_t st) {
    if (n_rows <= 0) return ENG_STATUS_OK;
    argmax_kernel<<<n_rows, kArgmaxThreads, 0, st>>>(out, logits, V);
    CUDA_CHECK_LAUNCH();
    return ENG_STATUS_OK;
}

} // namespace maya
