/* kernels.h: the CPU hot loops behind one table of function pointers.
 *
 * kernels_impl.h is compiled twice: kernels_avx2.cpp (-mavx2 -mfma -mf16c) and kernels_scalar.cpp
 * (baseline x86-64 / any target). kernels_select() picks one at context creation with
 * __builtin_cpu_supports; MAYA_ENGINE_SIMD=scalar in the environment forces the portable table
 * (comparisons, tests of the fallback). (A 16-lane AVX-512 build was measured: <= 10% faster
 * prefill on this CPU, so it is not worth a third build.) Both produce the same results up to float summation order.
 * Weights are read in their stored dtype (F32/F16/BF16 widened to f32 in registers; FP8 e4m3
 * widened with its block scale into the per-worker scratch row block).
 */
#ifndef MAYA_KERNELS_H
#define MAYA_KERNELS_H

#include <stdint.h>

namespace maya {

/* Rows of W a matmul work unit covers (and the scratch a worker needs: kMatmulRows * K floats).
 * 16 rows x K f32 stays in L2 (K = 4096: 256 KiB) while all tokens of a prefill chunk pass it. */
const int kMatmulRows = 16;

struct Kernels {
    const char *name;
    int32_t simd; // ENG_INFO_SIMD: 0 scalar, 1 avx2
    /* y[t*ldy + r] = dot(x[t*ldx ..], W[r, 0..K)) (+ bias[r]) for t in [0, T), r in [r0, r1), with W
     * a row-major (rows, K) matrix of `dtype` (DType). r1 - r0 <= kMatmulRows; scratch holds
     * kMatmulRows * K floats. bias may be null. is_streaming: W is read from DRAM (a model larger
     * than the caches), which changes the loop order, never the result. wscale: the FP8 block
     * scales of W (dtype DT_F8_E4M3: (ceil(rows/128), ceil(K/128)) floats), else ignored. */
    void (*matmul)(const float *x, int ldx, int T, const void *w, int dtype, int K, int r0, int r1, float *y,
                   int ldy, const float *bias, float *scratch, bool is_streaming, const float *wscale);
    float (*dot)(const float *a, const float *b, int n);
    void (*axpy)(float *y, float a, const float *x, int n); // y += a * x
    void (*scale)(float *y, float a, int n);                // y *= a
    /* out = x / sqrt(mean(x^2) + eps) * w (out may alias x) */
    void (*rmsnorm)(float *out, const float *x, const float *w, int n, float eps);
    void (*silu_mul)(float *out, const float *gate, const float *up, int n); // out = silu(gate) * up
    /* out = W[row, 0..n) of a (rows, n) matrix; wscale as for matmul. */
    void (*row_to_f32)(float *out, const void *w, int dtype, int64_t row, int n, const float *wscale);
    /* Attention over n consecutive cached positions of one kv head (k, v: (n, D)) for the `group`
     * query heads sharing it (q, out: (group, D)); scores/probs: (group, ld), columns j0..j0+n. */
    void (*attn_scores)(float *scores, int ld, int j0, const float *q, int group, const float *k, int n, int D,
                        float scale);
    void (*attn_accum)(float *out, const float *probs, int ld, int j0, int group, const float *v, int n, int D);
};

extern const Kernels kernels_scalar;
extern const Kernels kernels_avx2;

/* The fastest table the running CPU supports. */
const Kernels &kernels_select();

} // namespace maya

#endif
