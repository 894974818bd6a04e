/* kernels/q8.h: 8-bit weights (ENG_PARAM_WEIGHT_DTYPE q8): activations quantized per block of 32,
 * exact integer block dot products (VNNI, AVX2 or plain integers) summed in f32, and the Q8
 * matmuls.
 */
#ifndef MAYA_KERNELS_Q8_H
#define MAYA_KERNELS_Q8_H

#include "base.h" // defines: vecw, vw_sum_many, hsum

namespace maya {
namespace KERNELS_NS {

/* Q8 (8-bit weights, ENG_PARAM_WEIGHT_DTYPE q8): int8 in [-127, 127] per block of 32 columns with
 * one f32 scale per (row, block) (wscale: (rows, K/32)); K is a multiple of 32. Activations are
 * quantized the same way per token (q = round(x / d), d = max|x| / 127 of the block), then each
 * block's integer dot product is exact and the blocks are summed in f32:
 * y = sum_b (dw_b * dx_b) * isum_b, in block order, whatever the tile shape or batch. */
enum { Q8_BLOCK = kQ8Block };

/* out[0..n) = W[row, 0..n) of a Q8 matrix (see quantize_q8). */
static void q8_row_to_f32(float *out, const int8_t *w, const float *wscale, int64_t row, int n) {
    const int8_t *src = w + row * n;
    const float *sc = wscale + row * (int64_t)(n / Q8_BLOCK);
    for (int i = 0; i < n; i++) out[i] = (float)src[i] * sc[i / Q8_BLOCK];
}

/* x[0..K) -> q[0..K) int8 and d[0..K/32) scales. */
static void quantize_q8(const float *x, int K, int8_t *q, float *d) {
    for (int b = 0; b < K / Q8_BLOCK; b++) {
        const float *xb = x + b * Q8_BLOCK;
        int8_t *qb = q + b * Q8_BLOCK;
#ifdef KERNELS_AVX512
        __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
        float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
        float db = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
        __m512 iv = _mm512_set1_ps(id);
        _mm_storeu_si128((__m128i *)qb, _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, iv))));
        _mm_storeu_si128((__m128i *)(qb + 16), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, iv))));
#elif defined(KERNELS_VECTOR)
        const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
        __m256 v[4], mx = _mm256_setzero_ps();
        for (int j = 0; j < 4; j++) {
            v[j] = _mm256_loadu_ps(xb + 8 * j);
            mx = _mm256_max_ps(mx, _mm256_and_ps(v[j], absmask));
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        float amax = _mm_cvtss_f32(m4);
        float db = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
        __m256 iv = _mm256_set1_ps(id);
        __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v[0], iv)), i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v[1], iv));
        __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v[2], iv)), i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v[3], iv));
        // packs interleave the 128-bit lanes; the dword permute restores the order.
        __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
        bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)qb, bytes);
#else
        float amax = 0;
        for (int i = 0; i < Q8_BLOCK; i++) amax = fabsf(xb[i]) > amax ? fabsf(xb[i]) : amax;
        float db = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
        // Round to nearest even (as cvtps): adding and removing 1.5 * 2^23 (|v| <= 127).
        for (int i = 0; i < Q8_BLOCK; i++) {
            float r = xb[i] * id + 12582912.0f; // not folded: no -ffast-math
            qb[i] = (int8_t)(int)(r - 12582912.0f);
        }
#endif
        d[b] = db;
    }
}

#ifdef KERNELS_VECTOR
/* 8 int32 lanes of sum(w * x) over one block of 32 (|w| unsigned times x with w's sign). */
static inline __m256i q8_block_dot(__m256i aw, __m256i sw, __m256i xv) {
    __m256i sx = _mm256_sign_epi8(xv, sw);
#if defined(KERNELS_AVX512) && defined(__AVX512VNNI__)
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), aw, sx);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sx), _mm256_set1_epi16(1)); // |pair sums| <= 2 * 127^2
#endif
}
#endif

/* out[r][t] = the Q8 dot product of row row0 + r and token t (xq: (NT, ldq) bytes, xd: (NT, ldq / 32)
 * scales), one version per instruction set. */
#if defined(KERNELS_AVX512) && defined(__AVX512VNNI__)
template <int NR, int NT>
static KERNELS_INLINE void tile_q8_sums(const int8_t *xq, const float *xd, int ldq, const int8_t *w,
                                        const float *wscale, int64_t row0, int K, float (*out)[NT]) {
    int nb = K / Q8_BLOCK, ldd = ldq / Q8_BLOCK;
    // Two blocks per 512-bit vector: lanes 0-7 sum block b, lanes 8-15 block b + 1. vpdpbusd
    // multiplies unsigned by signed bytes: w + 128 (its sign bit flipped, once per row) times x,
    // started from -128 * (x's 4-byte group sums, once per token), is sum(w * x) exactly, so a
    // (row, token) pair costs 4 operations per 64 weights and the tile holds no per-row
    // correction. An odd last block runs alone in the low half. The same sequence for every
    // (row, token) whatever NR / NT.
    const __m512i pair_idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512 tot[NR][NT];
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) tot[r][t] = _mm512_setzero_ps();
    int b = 0;
    for (; b + 2 <= nb; b += 2) {
        __m512i wu[NR];
        __m512 ws[NR];
        for (int r = 0; r < NR; r++) {
            wu[r] =
                _mm512_xor_si512(_mm512_loadu_si512((const void *)(w + (row0 + r) * (int64_t)K + b * Q8_BLOCK)), flip);
            ws[r] = _mm512_permutexvar_ps(pair_idx, _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd(
                                                        (const double *)(wscale + (row0 + r) * (int64_t)nb + b)))));
        }
        for (int t = 0; t < NT; t++) {
            __m512i xv = _mm512_loadu_si512((const void *)(xq + (int64_t)t * ldq + b * Q8_BLOCK));
            __m512i corr =
                _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), flip, xv));
            __m512 xs = _mm512_permutexvar_ps(pair_idx, _mm512_castps128_ps512(_mm_castpd_ps(
                                                            _mm_load_sd((const double *)(xd + (int64_t)t * ldd + b)))));
            for (int r = 0; r < NR; r++) {
                __m512 p = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(corr, wu[r], xv));
                tot[r][t] = _mm512_fmadd_ps(p, _mm512_mul_ps(ws[r], xs), tot[r][t]);
            }
        }
    }
    for (; b < nb; b++) // an odd last block, in the low 8 lanes
        for (int r = 0; r < NR; r++) {
            const __m256i flip8 = _mm256_set1_epi8((char)0x80);
            __m256i wu = _mm256_xor_si256(
                _mm256_loadu_si256((const __m256i *)(w + (row0 + r) * (int64_t)K + b * Q8_BLOCK)), flip8);
            float dw = wscale[(row0 + r) * (int64_t)nb + b];
            for (int t = 0; t < NT; t++) {
                __m256i xv = _mm256_loadu_si256((const __m256i *)(xq + (int64_t)t * ldq + b * Q8_BLOCK));
                __m256i corr =
                    _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_epi32(_mm256_setzero_si256(), flip8, xv));
                __m256 p = _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(corr, wu, xv));
                __m512 p16 = _mm512_castps256_ps512(p); // upper lanes: zero them
                p16 = _mm512_maskz_mov_ps(0x00FF, p16);
                tot[r][t] = _mm512_fmadd_ps(p16, _mm512_set1_ps(dw * xd[(int64_t)t * ldd + b]), tot[r][t]);
            }
        }
    if (NR * NT >= 6) vw_sum_many(&tot[0][0], NR * NT, &out[0][0]);
    else
        for (int r = 0; r < NR; r++)
            for (int t = 0; t < NT; t++) out[r][t] = vw_sum(tot[r][t]);
}
#elif defined(KERNELS_VECTOR)
template <int NR, int NT>
static KERNELS_INLINE void tile_q8_sums(const int8_t *xq, const float *xd, int ldq, const int8_t *w,
                                        const float *wscale, int64_t row0, int K, float (*out)[NT]) {
    int nb = K / Q8_BLOCK, ldd = ldq / Q8_BLOCK;
    __m256 tot[NR][NT];
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) tot[r][t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m256i xv[NT];
        for (int t = 0; t < NT; t++)
            xv[t] = _mm256_loadu_si256((const __m256i *)(xq + (int64_t)t * ldq + b * Q8_BLOCK));
        for (int r = 0; r < NR; r++) {
            __m256i wv = _mm256_loadu_si256((const __m256i *)(w + (row0 + r) * (int64_t)K + b * Q8_BLOCK));
            __m256i aw = _mm256_abs_epi8(wv);
            float dw = wscale[(row0 + r) * (int64_t)nb + b];
            for (int t = 0; t < NT; t++) {
                __m256 p = _mm256_cvtepi32_ps(q8_block_dot(aw, wv, xv[t]));
                tot[r][t] = _mm256_fmadd_ps(p, _mm256_set1_ps(dw * xd[(int64_t)t * ldd + b]), tot[r][t]);
            }
        }
    }
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) out[r][t] = hsum(tot[r][t]);
}
#else
template <int NR, int NT>
static KERNELS_INLINE void tile_q8_sums(const int8_t *xq, const float *xd, int ldq, const int8_t *w,
                                        const float *wscale, int64_t row0, int K, float (*out)[NT]) {
    int nb = K / Q8_BLOCK, ldd = ldq / Q8_BLOCK;
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) {
            const int8_t *wr = w + (row0 + r) * (int64_t)K;
            const int8_t *xr = xq + (int64_t)t * ldq;
            float s = 0;
            for (int b = 0; b < nb; b++) {
                int32_t is = 0;
                for (int i = 0; i < Q8_BLOCK; i++) is += (int32_t)wr[b * Q8_BLOCK + i] * xr[b * Q8_BLOCK + i];
                s += (float)is * (wscale[(row0 + r) * (int64_t)nb + b] * xd[(int64_t)t * ldd + b]);
            }
            out[r][t] = s;
        }
}
#endif

/* NR rows x NT tokens of Q8 weights against quantized activations, plus the bias. */
template <int NR, int NT>
static inline void tile_q8(const int8_t *xq, const float *xd, int ldq, const int8_t *w, const float *wscale,
                           int64_t row0, int K, float *y, int ldy, const float *bias) {
    float out[NR][NT];
    tile_q8_sums<NR, NT>(xq, xd, ldq, w, wscale, row0, K, out);
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) y[(int64_t)t * ldy + r] = out[r][t] + (bias ? bias[r] : 0.0f);
}

/* Q8 matmul over activations already quantized (see quantize_q8). Decode from DRAM: one row at a
 * time for up to 4 tokens; prefill or cached: 4 rows x 4 tokens. */
static void matmul_q8_pre(const int8_t *xq, const float *xd, int ldq, int T, const int8_t *w, const float *wscale,
                          int K, int r0, int r1, float *y, int ldy, const float *bias, bool is_streaming) {
    int ldd = ldq / Q8_BLOCK;
#define Q8_TILE(NR, NT)                                                                                                \
    tile_q8<NR, NT>(xq + (int64_t)t * ldq, xd + (int64_t)t * ldd, ldq, w, wscale, r, K, y + (int64_t)t * ldy + r, ldy, \
                    bias ? bias + r : nullptr)
    if (is_streaming && T < 8) { // decode: one row (one DRAM stream) at a time
        for (int r = r0; r < r1; r++) {
            int t = 0;
            for (; T - t >= 4; t += 4) Q8_TILE(1, 4);
            if (T - t == 3) Q8_TILE(1, 3);
            else if (T - t == 2) Q8_TILE(1, 2);
            else if (T - t == 1) Q8_TILE(1, 1);
        }
        return;
    }
    // Many tokens (or cached weights): 4 rows x 4 tokens per register tile (16 accumulators;
    // measured faster than 4 x 3 though the compiler spills a few registers).
    for (int t = 0; t < T;) {
        int nt = T - t >= 4 ? 4 : T - t, r = r0;
        for (; r + 4 <= r1; r += 4) {
            if (nt == 4) Q8_TILE(4, 4);
            else if (nt == 3) Q8_TILE(4, 3);
            else if (nt == 2) Q8_TILE(4, 2);
            else Q8_TILE(4, 1);
        }
        for (; r < r1; r++) {
            if (nt == 4) Q8_TILE(1, 4);
            else if (nt == 3) Q8_TILE(1, 3);
            else if (nt == 2) Q8_TILE(1, 2);
            else Q8_TILE(1, 1);
        }
        t += nt;
    }
#undef Q8_TILE
}

/* Q8 matmul from f32 activations: quantizes up to 32 tokens at a time into scratch (32 K bytes +
 * K floats, within the kMatmulRows * K floats of scratch). */
static void matmul_q8(const float *x, int ldx, int T, const int8_t *w, const float *wscale, int K, int r0, int r1,
                      float *y, int ldy, const float *bias, float *scratch, bool is_streaming) {
    const int kChunk = 32;
    float *xd = scratch;
    int8_t *xq = (int8_t *)(scratch + kChunk * (K / Q8_BLOCK));
    for (int t0 = 0; t0 < T; t0 += kChunk) {
        int n = T - t0 < kChunk ? T - t0 : kChunk;
        for (int t = 0; t < n; t++)
            quantize_q8(x + (int64_t)(t0 + t) * ldx, K, xq + (int64_t)t * K, xd + (int64_t)t * (K / Q8_BLOCK));
        matmul_q8_pre(xq, xd, K, n, w, wscale, K, r0, r1, y + (int64_t)t0 * ldy, ldy, bias, is_streaming);
    }
}

} // namespace KERNELS_NS
} // namespace maya

#endif
