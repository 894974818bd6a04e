/* kernels/fp8.h: FP8 e4m3 weights with 128 x 128 block scales: widening (to f16 bits for F16C, or
 * straight to f32 bits when the matrix holds no NaN byte), the block-scaled register tiles, the
 * widened-copy path for many tokens, and the FP8 matmuls (Kernels::matmul with dtype F8 or
 * F8_FINITE, Kernels::matmul_f8x).
 */
#ifndef MAYA_KERNELS_FP8_H
#define MAYA_KERNELS_FP8_H

#include "base.h"  // defines: vecw, f8_table, F8_BLOCK
#include "tiles.h" // defines: kConvertMinTokens, kStreamConvertMinTokens

namespace maya {
namespace KERNELS_NS {

/* out[0..n) = W[row, 0..n) of a block-scaled FP8 matrix with n columns: byte * scale of its block. */
static void f8_row_to_f32(float *out, const uint8_t *w, const float *wscale, int64_t row, int n) {
    const uint8_t *src = w + row * n;
    const float *sc = wscale + (row / F8_BLOCK) * (int64_t)((n + F8_BLOCK - 1) / F8_BLOCK);
    for (int k0 = 0; k0 < n; k0 += F8_BLOCK) {
        int k1 = k0 + F8_BLOCK < n ? k0 + F8_BLOCK : n, k = k0;
        float s = sc[k0 / F8_BLOCK];
#ifdef KERNELS_VECTOR
        // e4m3 bits moved into an f16 (sign to bit 15, exponent and mantissa << 7) are the same
        // value times 2^-8, subnormals included (both formats have exponent-0 subnormals), so
        // F16C widens them and the scale absorbs the 2^8. NaN (0x7F / 0xFF) gets the all-ones
        // f16 exponent, so it stays NaN.
        __m256 sv = _mm256_set1_ps(s * 256.0f);
        const __m128i mag = _mm_set1_epi16(0x7F), sgn = _mm_set1_epi16((short)0x80), inf = _mm_set1_epi16(0x7C00);
        for (; k + 8 <= k1; k += 8) {
            __m128i b = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(src + k)));
            __m128i m = _mm_and_si128(b, mag);
            __m128i h = _mm_or_si128(_mm_slli_epi16(m, 7), _mm_slli_epi16(_mm_and_si128(b, sgn), 8));
            h = _mm_or_si128(h, _mm_and_si128(_mm_cmpeq_epi16(m, mag), inf));
            _mm256_storeu_ps(out + k, _mm256_mul_ps(_mm256_cvtph_ps(h), sv));
        }
#endif
        for (; k < k1; k++) out[k] = f8_table.v[src[k]] * s;
    }
}

/* FP8 rows x tokens: each 128-column block accumulates unscaled products in its own registers,
 * then adds them times the block's scale to the running total. Every (row, token) pair follows
 * the same sequence whatever NR / NT, so FP8 results never depend on the batch. */
#ifdef KERNELS_VECTOR
/* e4m3 -> f16 bits, value times 2^-8 (see f8_row_to_f32), from the sign-extended bytes: << 7 puts
 * exponent and mantissa at bits 7-13 and the sign at 15 (bit 14 cleared by the mask); magnitude 0x7F
 * (NaN) becomes f16 0x3F80, which + 0x4000 turns into an f16 NaN. */
template <bool FINITE = false> static inline __m256i f8_to_f16x16(__m256i sext) {
    __m256i h = _mm256_and_si256(_mm256_slli_epi16(sext, 7), _mm256_set1_epi16((short)0xBF80));
    if (FINITE) return h; // kDtF8Finite: the loader found no NaN byte
    __m256i nan = _mm256_cmpeq_epi16(_mm256_and_si256(h, _mm256_set1_epi16(0x3F80)), _mm256_set1_epi16(0x3F80));
    return _mm256_or_si256(h, _mm256_and_si256(nan, _mm256_set1_epi16(0x4000)));
}
/* 8 e4m3 bytes -> 8 floats times 2^-8. */
static inline __m256 f8x8(const uint8_t *p) {
    __m128i b = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)p));
    __m128i h = _mm_and_si128(_mm_slli_epi16(b, 7), _mm_set1_epi16((short)0xBF80));
    __m128i nan = _mm_cmpeq_epi16(_mm_and_si128(h, _mm_set1_epi16(0x3F80)), _mm_set1_epi16(0x3F80));
    return _mm256_cvtph_ps(_mm_or_si128(h, _mm_and_si128(nan, _mm_set1_epi16(0x4000))));
}
#ifdef KERNELS_AVX512
/* 16 e4m3 bytes -> 16 floats times 2^-8. */
static inline vecw f8xvw(const uint8_t *p) {
    return _mm512_cvtph_ps(f8_to_f16x16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p))));
}
/* 32 e4m3 bytes -> two vectors of 16 floats times 2^-8 (512-bit integer steps, masked NaN fix;
 * FINITE: bytes known not to be NaN, kDtF8Finite, skip it). */
template <bool FINITE> static inline void f8x2vw(const uint8_t *p, vecw *lo, vecw *hi) {
    __m512i b = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)p));
    __m512i h = _mm512_and_si512(_mm512_slli_epi16(b, 7), _mm512_set1_epi16((short)0xBF80));
    if (!FINITE) {
        __mmask32 nan =
            _mm512_cmpeq_epi16_mask(_mm512_and_si512(h, _mm512_set1_epi16(0x3F80)), _mm512_set1_epi16(0x3F80));
        h = _mm512_mask_add_epi16(h, nan, h, _mm512_set1_epi16(0x4000));
    }
    *lo = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
    *hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
}
/* Bytes known finite (kDtF8Finite): 16 e4m3 bytes -> 16 floats of value times 2^-120,
 * straight to f32 bits. Sign-extended to 32 bits and shifted left 20, a byte s eeee mmm puts its
 * exponent and mantissa at f32 bits 26-20 (exponent field 0000eeee) and the sign, copied into
 * bits 31-27, at 31; the mask keeps bit 31 and 26-20. An exponent-0 (subnormal) e4m3 lands as the
 * f32 subnormal of the same value times 2^-120, so every byte widens exactly. Three integer steps
 * per 16 weights against F16C's conversion: decode from DRAM on two cores 27 -> 30 GB/s, one
 * core's arithmetic 15 -> 20 GB/s. The products would underflow f32 at 2^-120, so the caller
 * passes x times 2^32 (F8_X_SCALE, exact below |x| = 2^96): products and sums are the f16 path's
 * times 2^-80, the same roundings, the same results (a product |x w| under 2^-38, where the scaled
 * one turns subnormal, is the only exception). */
static inline vecw f8vw_bits(const uint8_t *p) {
    __m512i b = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_slli_epi32(b, 20), _mm512_set1_epi32((int)0x87F00000)));
}
#else
static inline vecw f8xvw(const uint8_t *p) { return f8x8(p); }
/* 16 e4m3 bytes -> two vectors of 8 floats times 2^-8 (FINITE: as above). */
template <bool FINITE> static inline void f8x2vw(const uint8_t *p, vecw *lo, vecw *hi) {
    __m256i h = f8_to_f16x16<FINITE>(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p)));
    *lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
    *hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
}
/* 8 bytes -> 8 floats, as the AVX-512 f8vw_bits (one core from DRAM: 11.9 -> 15.1 GB/s against
 * F16C, two cores 26.8 -> 29.1). */
static inline vecw f8vw_bits(const uint8_t *p) {
    __m256i b = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(b, 20), _mm256_set1_epi32((int)0x87F00000)));
}
#endif
#define F8_BITS 1
static const float F8_X_SCALE = 4294967296.0f; // 2^32
#endif

#ifdef KERNELS_VECTOR
/* One 128-column block [k0, k1) of tile_f8 on the vector tables: adds the block's products, times
 * sc[r] * xs, to tot[r][t]; returns the first column past the last whole vector (the caller's scalar
 * tail). Within a block the vector path runs two accumulators (even and odd vectors of each pair,
 * then one odd vector into the first), so a (row, token) sum is not one chain of dependent FMAs; the
 * order is a function of the column alone, the same for every tile shape. */
template <int NR, int NT, bool FINITE, bool SCR, bool BITS>
static KERNELS_INLINE int tile_f8_block(const float *x, int ldx, const uint8_t *w, int64_t row0, int K, int k0, int k1,
                                        const float *wsc, const float *sc, float xs, vecw (*tot)[NT]) {
    int k = k0;
    vecw acc[NR][NT], acc2[NR][NT];
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) acc[r][t] = acc2[r][t] = vw_zero();
    for (; k + 2 * VW <= k1; k += 2 * VW)
        for (int r = 0; r < NR; r++) {
            vecw w0, w1;
            if (SCR) {
                w0 = vw_loadx(wsc + (int64_t)r * K + k);
                w1 = vw_loadx(wsc + (int64_t)r * K + k + VW);
            }
#ifdef F8_BITS
            else if (BITS) {
                w0 = f8vw_bits(w + (row0 + r) * (int64_t)K + k);
                w1 = f8vw_bits(w + (row0 + r) * (int64_t)K + k + VW);
            }
#endif
            else {
                f8x2vw<FINITE>(w + (row0 + r) * (int64_t)K + k, &w0, &w1);
            }
            for (int t = 0; t < NT; t++) {
                acc[r][t] = vw_fma(w0, vw_loadx(x + (int64_t)t * ldx + k), acc[r][t]);
                acc2[r][t] = vw_fma(w1, vw_loadx(x + (int64_t)t * ldx + k + VW), acc2[r][t]);
            }
        }
    if (k + VW <= k1) {
        for (int r = 0; r < NR; r++) {
            vecw wv = SCR ? vw_loadx(wsc + (int64_t)r * K + k) : f8xvw(w + (row0 + r) * (int64_t)K + k);
#ifdef F8_BITS
            if (BITS) wv = f8vw_bits(w + (row0 + r) * (int64_t)K + k);
#endif
            for (int t = 0; t < NT; t++) acc[r][t] = vw_fma(wv, vw_loadx(x + (int64_t)t * ldx + k), acc[r][t]);
        }
        k += VW;
    }
    for (int r = 0; r < NR; r++) {
        vecw s = vw_set1(sc[r] * xs);
        for (int t = 0; t < NT; t++) tot[r][t] = vw_fma(vw_add(acc[r][t], acc2[r][t]), s, tot[r][t]);
    }
    return k;
}
#else
/* One block of tile_f8 on the scalar table: eight partial sums per (row, token), added times sc[r]
 * to out[r][t]; returns the first column past the last whole group of 8. */
template <int NR, int NT>
static KERNELS_INLINE int tile_f8_block(const float *x, int ldx, const uint8_t *w, int64_t row0, int K, int k0, int k1,
                                        const float *sc, float (*out)[NT]) {
    int k = k0;
    float acc[NR][NT][8];
    memset(acc, 0, sizeof acc);
    for (; k + 8 <= k1; k += 8)
        for (int r = 0; r < NR; r++)
            for (int j = 0; j < 8; j++) {
                float wv = f8_table.v[w[(row0 + r) * (int64_t)K + k + j]];
                for (int t = 0; t < NT; t++) acc[r][t][j] += wv * x[(int64_t)t * ldx + k + j];
            }
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) {
            float s = 0;
            for (int j = 0; j < 8; j++) s += acc[r][t][j];
            out[r][t] += s * sc[r];
        }
    return k;
}
#endif

/* NR rows x NT tokens of an FP8 matrix, block by block (tile_f8_block), plus the columns past each
 * block's last whole vector one at a time.
 * SCR: the rows were widened into wsc ((NR, K) floats, f8_rows_raw) and are read from there: the
 * same values, so the same sums.
 * BITS (vector tables, FINITE): weights widened by f8vw_bits and x given times F8_X_SCALE; the same
 * sums as the f16 path. */
template <int NR, int NT, bool FINITE, bool SCR = false, bool BITS = false>
static inline void tile_f8(const float *x, int ldx, const uint8_t *w, const float *wscale, int64_t row0, int K,
                           float *y, int ldy, const float *bias, const float *wsc = nullptr) {
    (void)wsc;
    // Unscaled products: the f16 path's weights are value times 2^-8; the bits path's times 2^-120,
    // with x times 2^32, so 2^-88. The block scale puts it back; the scalar tail takes x's 2^32 out.
    const float xs = BITS ? 0x1p88f : 256.0f, tail_xs = BITS ? 0x1p-32f : 1.0f;
    (void)xs;
    int nbk = (K + F8_BLOCK - 1) / F8_BLOCK;
    float out[NR][NT];
#ifdef KERNELS_VECTOR
    vecw tot[NR][NT];
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) tot[r][t] = vw_zero();
#else
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) out[r][t] = 0;
#endif
    float tail[NR][NT];
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) tail[r][t] = 0;
    for (int kb = 0; kb < nbk; kb++) {
        int k0 = kb * F8_BLOCK, k1 = k0 + F8_BLOCK < K ? k0 + F8_BLOCK : K;
        float sc[NR];
        for (int r = 0; r < NR; r++) sc[r] = wscale[((row0 + r) / F8_BLOCK) * nbk + kb];
#ifdef KERNELS_VECTOR
        int k = tile_f8_block<NR, NT, FINITE, SCR, BITS>(x, ldx, w, row0, K, k0, k1, wsc, sc, xs, tot);
#else
        int k = tile_f8_block<NR, NT>(x, ldx, w, row0, K, k0, k1, sc, out);
#endif
        for (; k < k1; k++) // the last block's columns past a multiple of the vector width
            for (int r = 0; r < NR; r++) {
                float wv = f8_table.v[w[(row0 + r) * (int64_t)K + k]] * sc[r] * tail_xs;
                for (int t = 0; t < NT; t++) tail[r][t] += wv * x[(int64_t)t * ldx + k];
            }
    }
#ifdef KERNELS_AVX512
    if (NR * NT >= 6) vw_sum_many(&tot[0][0], NR * NT, &out[0][0]);
    else
#endif
#ifdef KERNELS_VECTOR
        for (int r = 0; r < NR; r++)
            for (int t = 0; t < NT; t++) out[r][t] = vw_sum(tot[r][t]);
#endif
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) y[(int64_t)t * ldy + r] = out[r][t] + tail[r][t] + (bias ? bias[r] : 0.0f);
}

#ifdef KERNELS_VECTOR
/* Rows [r0, r1) of an FP8 matrix into out ((r1 - r0, K) floats) exactly as tile_f8 widens them in
 * registers (values times 2^-8, no block scale), block by block; columns past the last whole vector
 * of a block are left alone (the tile reads those bytes itself). */
template <bool FINITE> static void f8_rows_raw(float *out, const uint8_t *w, int K, int r0, int r1) {
    for (int r = r0; r < r1; r++) {
        const uint8_t *src = w + (int64_t)r * K;
        float *o = out + (int64_t)(r - r0) * K;
        for (int k0 = 0; k0 < K; k0 += F8_BLOCK) {
            int k1 = k0 + F8_BLOCK < K ? k0 + F8_BLOCK : K, k = k0;
            for (; k + 2 * VW <= k1; k += 2 * VW) {
                vecw a, b;
                f8x2vw<FINITE>(src + k, &a, &b);
                vw_store(o + k, a);
                vw_store(o + k + VW, b);
            }
            if (k + VW <= k1) vw_store(o + k, f8xvw(src + k));
        }
    }
}
#endif

#ifdef F8_BITS
/* One token, rows [r0, r1) from DRAM, bits path (xs = x times F8_X_SCALE): tile_f8<1, 1, true,
 * false, true>'s sums in its order (two accumulators per block, the block's scale into the running
 * total, the columns past the last whole vector added apart), with a whole block's steps unrolled. */
static void f8_rows_one_token(const float *xs, const uint8_t *w, const float *wscale, int K, int r0, int r1, float *y,
                              const float *bias) {
    int nbk = (K + F8_BLOCK - 1) / F8_BLOCK, kfull = K / F8_BLOCK * F8_BLOCK;
    for (int r = r0; r < r1; r++) {
        const uint8_t *wr = w + (int64_t)r * K;
        const float *sc = wscale + (int64_t)(r / F8_BLOCK) * nbk;
        vecw tot = vw_zero();
        float tail = 0;
        for (int k0 = 0; k0 < kfull; k0 += F8_BLOCK) {
            vecw a0 = vw_zero(), a1 = vw_zero();
            for (int k = k0; k < k0 + F8_BLOCK; k += 2 * VW) {
                a0 = vw_fma(f8vw_bits(wr + k), vw_loadx(xs + k), a0);
                a1 = vw_fma(f8vw_bits(wr + k + VW), vw_loadx(xs + k + VW), a1);
            }
            tot = vw_fma(vw_add(a0, a1), vw_set1(sc[k0 / F8_BLOCK] * 0x1p88f), tot);
        }
        if (kfull < K) {
            int k = kfull;
            vecw a0 = vw_zero(), a1 = vw_zero();
            for (; k + 2 * VW <= K; k += 2 * VW) {
                a0 = vw_fma(f8vw_bits(wr + k), vw_loadx(xs + k), a0);
                a1 = vw_fma(f8vw_bits(wr + k + VW), vw_loadx(xs + k + VW), a1);
            }
            if (k + VW <= K) {
                a0 = vw_fma(f8vw_bits(wr + k), vw_loadx(xs + k), a0);
                k += VW;
            }
            float s = sc[kfull / F8_BLOCK];
            tot = vw_fma(vw_add(a0, a1), vw_set1(s * 0x1p88f), tot);
            for (; k < K; k++) tail += f8_table.v[wr[k]] * s * 0x1p-32f * xs[k];
        }
        y[r] = vw_sum(tot) + tail + (bias ? bias[r] : 0.0f);
    }
}
#endif

/* FP8 tiles that widen the weights in registers: one row at a time for up to 4 tokens when W
 * streams from DRAM, else 2 rows x 3 tokens. */
template <bool FINITE, bool BITS>
static void f8_register_tiles(const float *x, int ldx, int T, const uint8_t *w, const float *wscale, int K, int r0,
                              int r1, float *y, int ldy, const float *bias, bool is_streaming) {
#define F8_TILE(NR, NT)                                                                                             \
    tile_f8<NR, NT, FINITE, false, BITS>(x + (int64_t)t * ldx, ldx, w, wscale, r, K, y + (int64_t)t * ldy + r, ldy, \
                                         bias ? bias + r : nullptr)
    if (is_streaming) {
        for (int r = r0; r < r1; r++) {
            int t = 0;
            for (; T - t >= 4; t += 4) F8_TILE(1, 4);
            if (T - t == 3) F8_TILE(1, 3);
            else if (T - t == 2) F8_TILE(1, 2);
            else if (T - t == 1) F8_TILE(1, 1);
        }
        return;
    }
    for (int t = 0; t < T;) {
        int nt = T - t >= 3 ? 3 : T - t, r = r0;
        for (; r + 2 <= r1; r += 2) {
            if (nt == 3) F8_TILE(2, 3);
            else if (nt == 2) F8_TILE(2, 2);
            else F8_TILE(2, 1);
        }
        for (; r < r1; r++) {
            if (nt == 3) F8_TILE(1, 3);
            else if (nt == 2) F8_TILE(1, 2);
            else F8_TILE(1, 1);
        }
        t += nt;
    }
#undef F8_TILE
}

/* FP8 matmul: streaming (decode from DRAM) one row at a time for up to 4 tokens, else 2 rows x 3
 * tokens from cache. Many tokens: the row block is widened once into scratch, then 2 x 4 tiles
 * read it (the same values and sums; no widening per token tile). */
template <bool FINITE>
static void matmul_f8(const float *x, int ldx, int T, const uint8_t *w, const float *wscale, int K, int r0, int r1,
                      float *y, int ldy, const float *bias, bool is_streaming, float *scratch) {
#ifdef KERNELS_VECTOR
    if (T >= (is_streaming ? kStreamConvertMinTokens : kConvertMinTokens)) {
        f8_rows_raw<FINITE>(scratch, w, K, r0, r1);
#define F8S_TILE(NR, NT)                                                                                     \
    tile_f8<NR, NT, FINITE, true>(x + (int64_t)t * ldx, ldx, w, wscale, r, K, y + (int64_t)t * ldy + r, ldy, \
                                  bias ? bias + r : nullptr, scratch + (int64_t)(r - r0) * K)
        for (int t = 0; t < T;) {
            int nt = T - t >= 4 ? 4 : T - t, r = r0;
            for (; r + 2 <= r1; r += 2) {
                if (nt == 4) F8S_TILE(2, 4);
                else if (nt == 3) F8S_TILE(2, 3);
                else if (nt == 2) F8S_TILE(2, 2);
                else F8S_TILE(2, 1);
            }
            for (; r < r1; r++) {
                if (nt == 4) F8S_TILE(1, 4);
                else if (nt == 3) F8S_TILE(1, 3);
                else if (nt == 2) F8S_TILE(1, 2);
                else F8S_TILE(1, 1);
            }
            t += nt;
        }
#undef F8S_TILE
        return;
    }
#else
    (void)scratch;
#endif
    f8_register_tiles<FINITE, false>(x, ldx, T, w, wscale, K, r0, r1, y, ldy, bias, is_streaming);
}

/* kDtF8Finite weights over x given times F8_X_SCALE (Kernels::matmul_f8x): the bits path, the same
 * results as matmul. One token from DRAM runs f8_rows_one_token, else the register tiles. */
static void matmul_f8x(const float *xs, int ldx, int T, const uint8_t *w, const float *wscale, int K, int r0, int r1,
                       float *y, int ldy, const float *bias, bool is_streaming) {
#ifdef F8_BITS
    if (T == 1 && is_streaming) f8_rows_one_token(xs, w, wscale, K, r0, r1, y, bias);
    else f8_register_tiles<true, true>(xs, ldx, T, w, wscale, K, r0, r1, y, ldy, bias, is_streaming);
#else
    f8_register_tiles<true, false>(xs, ldx, T, w, wscale, K, r0, r1, y, ldy, bias, is_streaming); // f8_x_scale 1
#endif
}

} // namespace KERNELS_NS
} // namespace maya

#endif
