/* kernels.h: the CPU hot loops behind one table of function pointers.
 *
 * kernels_impl.h is compiled three times: kernels_avx512.cpp (-mavx512f -mavx512bw -mavx512vl
 * -mavx512dq on top of the AVX2 set: 16-lane matmul vectors, 4x6 register tiles),
 * kernels_avx2.cpp (-mavx2 -mfma -mf16c) and kernels_scalar.cpp (baseline x86-64 / any target).
 * kernels_choose() picks, per context at its creation, the fastest the CPU supports
 * (__builtin_cpu_supports) or the one ENG_PARAM_SIMD names (a table the CPU lacks is an
 * UNSUPPORTED error, an unknown code INVALID_ARG). All produce the same
 * results up to float summation order; within one table a (row, token) dot never depends on the
 * other tokens of the batch.
 * Weights are read in their stored dtype (F32/F16/BF16 widened to f32 in registers; FP8 e4m3
 * widened with its block scale into the per-worker scratch row block).
 */
#ifndef MAYA_KERNELS_H
#define MAYA_KERNELS_H

#include <stdint.h>

#include "../include/engine.h" // defines: ENG_SIMD_*, ENG_WEIGHT_DTYPE_* (a C header: no inline code for the ISA builds)

namespace maya {

/* IEEE half (binary16) bits to float, exactly (subnormals, infinities and NaN kept); the one
 * scalar conversion, shared by the kernels' f16 loads and the checkpoint's element reads. */
static inline float half_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
    if (exp == 0) {
        if (mant == 0) bits = sign;
        else {
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) {
                mant <<= 1;
                exp--;
            }
            bits = sign | (exp << 23) | ((mant & 0x3FF) << 13);
        }
    } else if (exp == 31) bits = sign | 0x7F800000u | (mant << 13);
    else bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    float f;
    __builtin_memcpy(&f, &bits, 4);
    return f;
}

/* Rows of W a matmul work unit covers (and the scratch a worker needs: kMatmulRows * K floats).
 * 16 rows x K f32 stays in L2 (K = 4096: 256 KiB) while all tokens of a prefill chunk pass it. */
const int kMatmulRows = 16;
/* The codes of the kernels' `dtype` arguments: checkpoint.h's DType values (engine.h's
 * ENG_WEIGHT_DTYPE_*), and the edge of an FP8 block scale: model.h's kFp8Block. Restated here because
 * the per-ISA builds (kernels_impl.h) must include no C++ library header (checkpoint.h's <string> and
 * <vector> would have their inline functions compiled with two instruction sets); cpu_backend.cpp
 * pins each with a static_assert. */
const int kDtF32 = ENG_WEIGHT_DTYPE_F32, kDtF16 = ENG_WEIGHT_DTYPE_F16, kDtBF16 = ENG_WEIGHT_DTYPE_BF16,
          kDtF8 = ENG_WEIGHT_DTYPE_FP8, kDtQ8 = ENG_WEIGHT_DTYPE_Q8;
/* The GGUF block dtypes (kernels/ggml_blocks.h), stored as ggml lays them out. */
const int kDtQ8_0 = ENG_WEIGHT_DTYPE_Q8_0, kDtQ4_0 = ENG_WEIGHT_DTYPE_Q4_0, kDtQ4_1 = ENG_WEIGHT_DTYPE_Q4_1,
          kDtQ5_0 = ENG_WEIGHT_DTYPE_Q5_0, kDtQ5_1 = ENG_WEIGHT_DTYPE_Q5_1, kDtQ4_K = ENG_WEIGHT_DTYPE_Q4_K,
          kDtQ5_K = ENG_WEIGHT_DTYPE_Q5_K, kDtQ6_K = ENG_WEIGHT_DTYPE_Q6_K;
const int kF8Block = 128;
/* The matmul's dtype for an FP8 e4m3 matrix the loader found free of NaN bytes (0x7F / 0xFF;
 * model_check_f8): the same results as DT_F8_E4M3 with fewer instructions per weight. Only
 * matmul takes it. */
const int kDtF8Finite = 6;
/* Columns per scale of the Q8 weights and activations (as llama.cpp's Q8_0). */
const int kQ8Block = 32;
/* The KV cache's row formats (kernels/kv.h): engine.h's ENG_KV_DTYPE_* codes, and the values per
 * scale of q8_0 rows. */
const int kKvF32 = ENG_KV_DTYPE_F32, kKvF16 = ENG_KV_DTYPE_F16, kKvBF16 = ENG_KV_DTYPE_BF16,
          kKvQ8_0 = ENG_KV_DTYPE_Q8_0;
const int kKvQ8Block = 32;
/* Bytes of one stored KV row of n values (static: no shared inline symbol across the ISA builds). */
static inline int64_t kv_row_bytes(int dtype, int n) {
    if (dtype == kKvQ8_0) return (int64_t)n + 2 * (int64_t)((n + kKvQ8Block - 1) / kKvQ8Block);
    return (int64_t)n * (dtype == kKvF32 ? 4 : 2);
}

struct Kernels {
    const char *name;
    int32_t simd; // ENG_INFO_SIMD: ENG_SIMD_*
    /* y[t*ldy + r] = dot(x[t*ldx ..], W[r, 0..K)) (+ bias[r]) for t in [0, T), r in [r0, r1), with W
     * a row-major (rows, K) matrix of `dtype` (DType). r1 - r0 <= kMatmulRows; scratch holds
     * kMatmulRows * K floats. bias may be null. is_streaming: W is read from DRAM (a model larger
     * than the caches), which changes the loop order, never the result. wscale: the FP8 block
     * scales of W (dtype DT_F8_E4M3: (ceil(rows/128), ceil(K/128)) floats), else ignored. */
    void (*matmul)(const float *x, int ldx, int T, const void *w, int dtype, int K, int r0, int r1, float *y, int ldy,
                   const float *bias, float *scratch, bool is_streaming, const float *wscale);
    float (*dot)(const float *a, const float *b, int n);
    void (*axpy)(float *y, float a, const float *x, int n); // y += a * x
    void (*scale)(float *y, float a, int n);                // y *= a
    /* out = x / sqrt(mean(x^2) + eps) * w (out may alias x) */
    void (*rmsnorm)(float *out, const float *x, const float *w, int n, float eps);
    void (*silu_mul)(float *out, const float *gate, const float *up, int n); // out = silu(gate) * up
    void (*softmax)(float *row, int n);                                      // in place, n >= 1
    /* out = W[row, 0..n) of a (rows, n) matrix; wscale as for matmul. */
    void (*row_to_f32)(float *out, const void *w, int dtype, int64_t row, int n, const float *wscale);
    /* Attention over n consecutive cached positions of one kv head (k, v: (n, D), v rows ldv floats
     * apart: MLA reads the latent part of its cache rows) for nq tokens x group query heads sharing
     * it: row i is token i / group, head i % group, at q + (i / group) * ldq + (i % group) * D (out
     * likewise with ldo); scores/probs: (nq * group, ld), columns j0..j0+n. A (row, position) pair
     * gets the same bits whatever nq, group or n it is computed with. */
    void (*attn_scores)(float *scores, int ld, int j0, const float *q, int ldq, int nq, int group, const float *k,
                        int n, int D, float scale);
    void (*attn_accum)(float *out, int ldo, const float *probs, int ld, int j0, int nq, int group, const float *v,
                       int n, int D, int ldv);
    /* Q8 weights (dtype DT_Q8: int8 per block of kQ8Block columns, wscale (rows, K/32) f32): matmul
     * above quantizes x per token itself; these split that so a batch is quantized once per step.
     * quantize_q8: x[0..K) -> q (K int8) and d (K/32 scales), K a multiple of 32. matmul_q8: as
     * matmul, over quantized activations xq (T, ldq) bytes and xd (T, ldq/32) scales. */
    void (*quantize_q8)(const float *x, int K, int8_t *q, float *d);
    void (*matmul_q8)(const int8_t *xq, const float *xd, int ldq, int T, const int8_t *w, const float *wscale, int K,
                      int r0, int r1, float *y, int ldy, const float *bias, bool is_streaming);
    /* GGUF block dtypes (kernels/ggml_dot.h; matmul above quantizes x itself): the 32-weight blocks
     * take quantize_q8's activations, the K-quants quantize_q8k's: per 256 columns q (int8), d (one
     * f32) and bsums (the int16 sums of each 16 q), K a multiple of 256. matmul_ggml: as matmul over
     * quantized activations xq (T, ldq) bytes, xd (T, ldq / 32 or ldq / 256) and, K-quants, xbs
     * (T, ldq / 16); the same bits as matmul. */
    void (*quantize_q8k)(const float *x, int K, int8_t *q, float *d, int16_t *bsums);
    void (*matmul_ggml)(const int8_t *xq, const float *xd, const int16_t *xbs, int ldq, int T, const void *w, int dtype,
                        int K, int r0, int r1, float *y, int ldy, const float *bias, bool is_streaming);
    /* FP8 weights known finite (kDtF8Finite) over activations given times f8_x_scale: matmul's
     * results, bit for bit, without its scratch. The vector tables widen e4m3 bytes straight to
     * f32 bits (value times 2^-120) and need x times 2^32 so no product underflows; the caller
     * scales x once per step for every row block (a scaled copy per row block, inside the kernel,
     * made one-core decode from DRAM slower: 10.4 against 16.8 GB/s). The scalar table: scale 1. */
    float f8_x_scale;
    void (*matmul_f8x)(const float *xs, int ldx, int T, const uint8_t *w, const float *wscale, int K, int r0, int r1,
                       float *y, int ldy, const float *bias, bool is_streaming);
    /* MLA's absorbed attention a token at a time (weights of any dtype, rows as row_to_f32 gives
     * them; FP8 widened in registers). rows_accum: out[0..K) = sum_i<n a[i] W[row0 + i, :], the bits
     * of row_to_f32 per row then attn_accum (scratch: n * K floats). row_dot: dot(W[row, :], x), the
     * bits of row_to_f32 then dot (scratch: K floats). */
    void (*rows_accum)(float *out, const float *a, int n, const void *w, int dtype, int64_t row0, int K,
                       const float *wscale, float *scratch);
    float (*row_dot)(const void *w, int dtype, int64_t row, int K, const float *wscale, const float *x, float *scratch);
    /* The KV cache's rows (kernels/kv.h): kv_store writes src[0..n) as one row of kv_dtype
     * (kv_row_bytes(kv_dtype, n) bytes; the same bits on every table); kv_to_f32 reads n_rows
     * consecutive stored rows of n values into dst (n_rows * n floats). */
    void (*kv_store)(void *dst, const float *src, int n, int kv_dtype);
    void (*kv_to_f32)(float *dst, const void *src, int n_rows, int n, int kv_dtype);
};
/* Row blocks of at most this many tokens use matmul_f8x (decode); more take matmul's widened copy. */
const int kF8ScaledMaxTokens = 5;

extern const Kernels kernels_scalar;
extern const Kernels kernels_avx2;
extern const Kernels kernels_avx512;

/* The table an ENG_PARAM_SIMD value names (1 scalar, 2 avx2, 3 avx512), or for 0 the fastest the
 * running CPU supports. Returns OK, INVALID_ARG (unknown code) or UNSUPPORTED (the CPU lacks it). */
int32_t kernels_choose(int64_t simd, const Kernels **out);
/* The tables this CPU runs, scalar first (at most 3). Returns the count. */
int kernels_supported(const Kernels **out);

} // namespace maya

#endif
