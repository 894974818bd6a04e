/* attention.cu: one block per (token, kv head, split). The block holds the G = H / Hkv query heads
 * of its kv head (GQA heads packed: each K/V tile is read once for all of them) and walks its
 * positions in tiles of kAttnTile: K tile -> scores for G heads -> online softmax (running max m
 * and sum l per head) -> V tile accumulated into the G x D output. Rows of the K/V tile are padded
 * by one float so that threads reading different positions hit different banks.
 * With n_split > 1 each block writes its unnormalised output and (m, l); attention_combine merges
 * the pieces of each (token, head): out = sum_s o_s e^(m_s - M) / sum_s l_s e^(m_s - M).
 */
#include "attention.cuh"
#include "../cuda_common.cuh" // defines: CUDA_CHECK, ceil_div
#include "../paging.h"        // defines: kv_offset, split_range

namespace maya {

namespace {

constexpr int kAttnThreads = 128;

struct Smem {
    float *q, *kv, *s, *acc, *m, *l, *corr;
};

__device__ Smem carve(float *base, int G, int D) {
    Smem p;
    p.q = base;
    p.kv = p.q + G * D;
    p.s = p.kv + kAttnTile * (D + 1);
    p.acc = p.s + G * kAttnTile;
    p.m = p.acc + G * D;
    p.l = p.m + G;
    p.corr = p.l + G;
    return p;
}

__global__ void __launch_bounds__(kAttnThreads) attention_kernel(AttnArgs a) {
    extern __shared__ float smem[];
    int t = blockIdx.x, g = blockIdx.y, split = blockIdx.z;
    int G = a.H / a.Hkv, D = a.D, KP = D + 1;
    int n = a.tok_pos[t] + 1;
    int j0, j1;
    split_range(n, a.n_split, kAttnTile, split, &j0, &j1);
    if (j0 >= j1) return; // the combine reads only the non-empty pieces
    Smem sm = carve(smem, G, D);
    const int32_t *bt = a.bt + a.tok_bt[t];
    const float *q = a.q + (int64_t)t * a.H * D + (int64_t)g * G * D;
    for (int e = threadIdx.x; e < G * D; e += blockDim.x) {
        sm.q[e] = q[e];
        sm.acc[e] = 0.0f;
    }
    for (int h = threadIdx.x; h < G; h += blockDim.x) {
        sm.m[h] = -INFINITY;
        sm.l[h] = 0.0f;
    }
    __syncthreads();
    for (int j = j0; j < j1; j += kAttnTile) {
        int np = j1 - j < kAttnTile ? j1 - j : kAttnTile;
        for (int e = threadIdx.x; e < np * D; e += blockDim.x) {
            int p = e / D, d = e % D;
            sm.kv[p * KP + d] = a.kcache[kv_offset(bt, j + p, a.bs, a.Hkv, g, D) + d];
        }
        __syncthreads();
        for (int e = threadIdx.x; e < G * np; e += blockDim.x) {
            int h = e / np, p = e % np;
            const float *qh = sm.q + h * D, *kp = sm.kv + p * KP;
            float dot = 0.0f;
            for (int d = 0; d < D; d++) dot += qh[d] * kp[d];
            sm.s[h * kAttnTile + p] = dot * a.scale;
        }
        __syncthreads();
        for (int h = threadIdx.x; h < G; h += blockDim.x) {
            float *s = sm.s + h * kAttnTile, mx = sm.m[h];
            for (int p = 0; p < np; p++) mx = fmaxf(mx, s[p]);
            float sum = 0.0f;
            for (int p = 0; p < np; p++) {
                s[p] = expf(s[p] - mx);
                sum += s[p];
            }
            float c = expf(sm.m[h] - mx); // 0 on the first tile (m = -inf)
            sm.corr[h] = c;
            sm.l[h] = sm.l[h] * c + sum;
            sm.m[h] = mx;
        }
        for (int e = threadIdx.x; e < np * D; e += blockDim.x) { // V tile replaces K (scores are done)
            int p = e / D, d = e % D;
            sm.kv[p * KP + d] = a.vcache[kv_offset(bt, j + p, a.bs, a.Hkv, g, D) + d];
        }
        __syncthreads();
        for (int e = threadIdx.x; e < G * D; e += blockDim.x) {
            int h = e / D, d = e % D;
            const float *s = sm.s + h * kAttnTile;
            float v = sm.acc[e] * sm.corr[h];
            for (int p = 0; p < np; p++) v += s[p] * sm.kv[p * KP + d];
            sm.acc[e] = v;
        }
        __syncthreads();
    }
    if (a.n_split == 1) {
        float *o = a.out + (int64_t)t * a.H * D + (int64_t)g * G * D;
        for (int e = threadIdx.x; e < G * D; e += blockDim.x) o[e] = sm.acc[e] / sm.l[e / D];
        return;
    }
    int64_t row = ((int64_t)split * a.T + t) * a.H + (int64_t)g * G; // first head of this block
    for (int e = threadIdx.x; e < G * D; e += blockDim.x) a.o_part[row * D + e] = sm.acc[e];
    for (int h = threadIdx.x; h < G; h += blockDim.x) {
        a.ml_part[(row + h) * 2] = sm.m[h];
        a.ml_part[(row + h) * 2 + 1] = sm.l[h];
    }
}

/* One block per (token, head), D threads (looping when D > blockDim). */
__global__ void attention_combine_kernel(AttnArgs a) {
    int t = blockIdx.x, h = blockIdx.y, D = a.D;
    int n = a.tok_pos[t] + 1, j0, j1;
    int used = split_range(n, a.n_split, kAttnTile, 0, &j0, &j1);
    float M = -INFINITY;
    for (int s = 0; s < used; s++) M = fmaxf(M, a.ml_part[(((int64_t)s * a.T + t) * a.H + h) * 2]);
    float L = 0.0f;
    for (int s = 0; s < used; s++) {
        const float *ml = a.ml_part + (((int64_t)s * a.T + t) * a.H + h) * 2;
        L += ml[1] * expf(ml[0] - M);
    }
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float v = 0.0f;
        for (int s = 0; s < used; s++) {
            int64_t row = ((int64_t)s * a.T + t) * a.H + h;
            v += a.o_part[row * D + d] * expf(a.ml_part[row * 2] - M);
        }
        a.out[((int64_t)t * a.H + h) * D + d] = v / L;
    }
}

} // namespace

size_t attention_smem_bytes(int H, int Hkv, int D) {
    int G = H / Hkv;
    return sizeof(float) * (size_t)(2 * G * D + kAttnTile * (D + 1) + G * kAttnTile + 3 * G);
}

int32_t attention_prepare(int H, int Hkv, int D, size_t smem_limit) {
    size_t need = attention_smem_bytes(H, Hkv, D);
    if (need > smem_limit)
        return cuda_fail(ENG_STATUS_UNSUPPORTED,
                         "attention: %d query heads per kv head with head size %d need %zu bytes of shared memory; the "
                         "device has %zu",
                         H / Hkv, D, need, smem_limit);
    CUDA_CHECK(cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)need));
    return ENG_STATUS_OK;
}

int32_t attention(const AttnArgs &a, cudaStream_t st) {
    if (a.T <= 0) return ENG_STATUS_OK;
    size_t smem = attention_smem_bytes(a.H, a.Hkv, a.D);
    attention_kernel<<<dim3(a.T, a.Hkv, a.n_split), kAttnThreads, smem, st>>>(a);
    CUDA_CHECK(cudaGetLastError());
    if (a.n_split > 1) {
        int threads = a.D < 128 ? a.D : 128; // (a named count: clang-format 14 misreads `<` inside <<<>>>)
        attention_combine_kernel<<<dim3(a.T, a.H), threads, 0, st>>>(a);
        CUDA_CHECK(cudaGetLastError());
    }
    return ENG_STATUS_OK;
}

} // namespace maya
