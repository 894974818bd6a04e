/* kernels_impl.h: kernel bodies, included once per instruction set (see kernels.h).
 *
 * The includer defines KERNELS_NS (namespace) and KERNELS_TABLE (table name). Only intrinsics and
 * C headers are used here, so no inline function of a shared header is compiled with two
 * different instruction sets (the one-definition-rule hazard of multi-ISA builds).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define KERNELS_VECTOR 1
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
#define KERNELS_AVX512 1 // the matmul's vector is 16 lanes (vecw below); 32 registers for its tiles
#endif
#endif

namespace maya {
namespace KERNELS_NS {

enum { F32 = kDtF32, F16 = kDtF16, BF16 = kDtBF16, F8 = kDtF8, Q8 = kDtQ8, F8_FINITE = kDtF8Finite };
enum { F8_BLOCK = kF8Block };

static inline float bf16_scalar(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline float f16_scalar(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
    if (exp == 0) {
        if (mant == 0) bits = sign;
        else {
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) { mant <<= 1; exp--; }
            bits = sign | (exp << 23) | ((mant & 0x3FF) << 13);
        }
    } else if (exp == 31) bits = sign | 0x7F800000u | (mant << 13);
    else bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is subnormal (m * 2^-9),
 * 0x7F/0xFF are NaN and there are no infinities (OCP 8-bit floating point spec, "E4M3"). */
static inline float f8_scalar(uint8_t b) {
    uint32_t sign = (uint32_t)(b >> 7) << 31, exp = (b >> 3) & 0xF, mant = b & 7;
    float f;
    if (exp == 0) f = (float)mant * (1.0f / 512.0f);
    else if (exp == 15 && mant == 7) f = NAN;
    else {
        uint32_t bits = ((exp - 7 + 127) << 23) | (mant << 20);
        memcpy(&f, &bits, 4);
    }
    uint32_t fb;
    memcpy(&fb, &f, 4);
    fb |= sign;
    memcpy(&f, &fb, 4);
    return f;
}

/* All 256 e4m3 values (a gather table for the vector widening). */
struct F8Table {
    float v[256];
    F8Table() {
        for (int i = 0; i < 256; i++) v[i] = f8_scalar((uint8_t)i);
    }
};
static const F8Table f8_table;

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

enum { Q8_BLOCK = kQ8Block };

/* out[0..n) = W[row, 0..n) of a Q8 matrix (see quantize_q8). */
static void q8_row_to_f32(float *out, const int8_t *w, const float *wscale, int64_t row, int n) {
    const int8_t *src = w + row * n;
    const float *sc = wscale + row * (int64_t)(n / Q8_BLOCK);
    for (int i = 0; i < n; i++) out[i] = (float)src[i] * sc[i / Q8_BLOCK];
}

template <int DT> static inline float load1(const void *w, int64_t i) {
    if (DT == F32) return ((const float *)w)[i];
    uint16_t h = ((const uint16_t *)w)[i];
    return DT == BF16 ? bf16_scalar(h) : f16_scalar(h);
}

#ifdef KERNELS_VECTOR
static inline __m256 load8(const void *w, int64_t i, int dt) {
    if (dt == F32) return _mm256_loadu_ps((const float *)w + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
    if (dt == F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
/* The matmul's vector type (one place to widen it). */
#ifdef KERNELS_AVX512
typedef __m512 vecw;
enum { VW = 16 };
static inline vecw vw_zero() { return _mm512_setzero_ps(); }
static inline vecw vw_set1(float a) { return _mm512_set1_ps(a); }
static inline vecw vw_loadx(const float *p) { return _mm512_loadu_ps(p); }
static inline vecw vw_loadw(const void *w, int64_t i, int dt) {
    if (dt == F32) return _mm512_loadu_ps((const float *)w + i);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + i));
    if (dt == F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); // bf16: exact
}
static inline vecw vw_fma(vecw a, vecw b, vecw c) { return _mm512_fmadd_ps(a, b, c); }
static inline vecw vw_add(vecw a, vecw b) { return _mm512_add_ps(a, b); }
static inline vecw vw_sub(vecw a, vecw b) { return _mm512_sub_ps(a, b); }
static inline vecw vw_mul(vecw a, vecw b) { return _mm512_mul_ps(a, b); }
static inline vecw vw_div(vecw a, vecw b) { return _mm512_div_ps(a, b); }
static inline vecw vw_min(vecw a, vecw b) { return _mm512_min_ps(a, b); }
static inline vecw vw_max(vecw a, vecw b) { return _mm512_max_ps(a, b); }
static inline vecw vw_fnma(vecw a, vecw b, vecw c) { return _mm512_fnmadd_ps(a, b, c); } // c - a * b
static inline vecw vw_round(vecw a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vecw vw_pow2_mul(vecw p, vecw n) { return _mm512_scalef_ps(p, n); } // p * 2^n
static inline float vw_sum(vecw v) { return hsum(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1))); }
static inline void vw_store(float *p, vecw v) { _mm512_storeu_ps(p, v); }
/* out[i] = vw_sum(a[i]) for i < n, bit for bit: 16 vectors at a time go through one transposing
 * tree that adds lanes l + 8, then + 4, + 2, + 1 as vw_sum does (the same operands in every add),
 * at about 3 operations a vector instead of 8. */
static inline void vw_sum_many(const vecw *a, int n, float *out) {
    for (int i0 = 0; i0 < n; i0 += 16) {
        int m = n - i0 < 16 ? n - i0 : 16;
        __m512 v[16], s[8], t[4];
        for (int i = 0; i < 16; i++) v[i] = i < m ? a[i0 + i] : _mm512_setzero_ps();
        for (int i = 0; i < 8; i++) // 128-bit lanes [x0 + x2, x1 + x3, y0 + y2, y1 + y3]: lane l + l + 8
            s[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                                 _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
        for (int i = 0; i < 4; i++) // 128-bit lane j: vector 4i + j, its lanes l + 4
            t[i] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0x88),
                                 _mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0xDD));
        __m512 s1 = _mm512_add_ps(_mm512_unpacklo_ps(t[0], t[1]), _mm512_unpackhi_ps(t[0], t[1])); // + 2
        __m512 s2 = _mm512_add_ps(_mm512_unpacklo_ps(t[2], t[3]), _mm512_unpackhi_ps(t[2], t[3]));
        __m512 r = _mm512_add_ps(_mm512_shuffle_ps(s1, s2, 0x44), _mm512_shuffle_ps(s1, s2, 0xEE)); // + 1
        // element 4j + e holds vector j + 4e
        r = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
        _mm512_mask_storeu_ps(out + i0, (__mmask16)((1u << m) - 1), r);
    }
}
/* Tokens per register tile of the cached (prefill) order: 4 rows x 6 tokens = 24 accumulators +
 * 6 activations + 1 weight vector of the 32 registers. */
enum { TILE_NT = 6 };
#else
typedef __m256 vecw;
enum { VW = 8 };
static inline vecw vw_zero() { return _mm256_setzero_ps(); }
static inline vecw vw_set1(float a) { return _mm256_set1_ps(a); }
static inline vecw vw_loadx(const float *p) { return _mm256_loadu_ps(p); }
static inline vecw vw_loadw(const void *w, int64_t i, int dt) { return load8(w, i, dt); }
static inline vecw vw_fma(vecw a, vecw b, vecw c) { return _mm256_fmadd_ps(a, b, c); }
static inline vecw vw_add(vecw a, vecw b) { return _mm256_add_ps(a, b); }
static inline vecw vw_sub(vecw a, vecw b) { return _mm256_sub_ps(a, b); }
static inline vecw vw_mul(vecw a, vecw b) { return _mm256_mul_ps(a, b); }
static inline vecw vw_div(vecw a, vecw b) { return _mm256_div_ps(a, b); }
static inline vecw vw_min(vecw a, vecw b) { return _mm256_min_ps(a, b); }
static inline vecw vw_max(vecw a, vecw b) { return _mm256_max_ps(a, b); }
static inline vecw vw_fnma(vecw a, vecw b, vecw c) { return _mm256_fnmadd_ps(a, b, c); } // c - a * b
static inline vecw vw_round(vecw a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
/* p * 2^n, n an integer in [-126, 128] (p in [0.7, 1.5] here, so n = 128 stays finite) */
static inline vecw vw_pow2_mul(vecw p, vecw n) {
    __m256i e = _mm256_cvtps_epi32(n);
    __m256i half = _mm256_srai_epi32(e, 1); // 2^n as 2^(n/2) * 2^(n - n/2): each factor a normal float
    vecw a = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
    vecw b = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(e, half), _mm256_set1_epi32(127)), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, a), b);
}
static inline float vw_sum(vecw v) { return hsum(v); }
static inline void vw_store(float *p, vecw v) { _mm256_storeu_ps(p, v); }
enum { TILE_NT = 3 }; // 4 rows x 3 tokens: 12 + 3 + 1 of the 16 registers
#endif
#endif

static void row_to_f32(float *out, const void *w, int dtype, int64_t row, int n, const float *wscale) {
    if (dtype == F8) { f8_row_to_f32(out, (const uint8_t *)w, wscale, row, n); return; }
    if (dtype == Q8) { q8_row_to_f32(out, (const int8_t *)w, wscale, row, n); return; }
    int64_t base = row * n;
    if (dtype == F32) { memcpy(out, (const float *)w + base, (size_t)n * 4); return; }
    int i = 0;
#ifdef KERNELS_VECTOR
    for (; i + VW <= n; i += VW) vw_store(out + i, vw_loadw(w, base + i, dtype));
#endif
    if (dtype == BF16) for (; i < n; i++) out[i] = load1<BF16>(w, base + i);
    else for (; i < n; i++) out[i] = load1<F16>(w, base + i);
}

#ifndef KERNELS_VECTOR
enum { TILE_NT = 3 };
#endif

/* NR rows of W x NT tokens: one pass over K. All (row, token) dot products accumulate in the same
 * order whatever NR/NT, so a token's result does not depend on its batch neighbours. */
template <int NR, int NT, int DT>
static inline void tile(const float *x, int ldx, const void *w, int64_t row0, int K, float *y, int ldy,
                        const float *bias) {
    float out[NR][NT];
    int k = 0;
#ifdef KERNELS_VECTOR
    vecw acc[NR][NT];
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) acc[r][t] = vw_zero();
    for (; k + VW <= K; k += VW) {
        if (NR == 1) { // one weight vector, activations loaded as used: NT + 2 registers
            vecw wv = vw_loadw(w, row0 * (int64_t)K + k, DT);
            for (int t = 0; t < NT; t++) acc[0][t] = vw_fma(wv, vw_loadx(x + (int64_t)t * ldx + k), acc[0][t]);
        } else { // NT activation vectors reused by NR rows: NR * NT + NT + 1 registers
            vecw xv[NT];
            for (int t = 0; t < NT; t++) xv[t] = vw_loadx(x + (int64_t)t * ldx + k);
            for (int r = 0; r < NR; r++) {
                vecw wv = vw_loadw(w, (row0 + r) * (int64_t)K + k, DT);
                for (int t = 0; t < NT; t++) acc[r][t] = vw_fma(wv, xv[t], acc[r][t]);
            }
        }
    }
#ifdef KERNELS_AVX512
    if (NR * NT >= 6) vw_sum_many(&acc[0][0], NR * NT, &out[0][0]);
    else
#endif
        for (int r = 0; r < NR; r++)
            for (int t = 0; t < NT; t++) out[r][t] = vw_sum(acc[r][t]);
#else
    float acc[NR][NT][8];
    memset(acc, 0, sizeof acc);
    for (; k + 8 <= K; k += 8)
        for (int r = 0; r < NR; r++)
            for (int j = 0; j < 8; j++) {
                float wv = load1<DT>(w, (row0 + r) * (int64_t)K + k + j);
                for (int t = 0; t < NT; t++) acc[r][t][j] += wv * x[(int64_t)t * ldx + k + j];
            }
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) {
            float s = 0;
            for (int j = 0; j < 8; j++) s += acc[r][t][j];
            out[r][t] = s;
        }
#endif
    for (; k < K; k++)
        for (int r = 0; r < NR; r++) {
            float wv = load1<DT>(w, (row0 + r) * (int64_t)K + k);
            for (int t = 0; t < NT; t++) out[r][t] += wv * x[(int64_t)t * ldx + k];
        }
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) y[(int64_t)t * ldy + r] = out[r][t] + (bias ? bias[r] : 0.0f);
}

/* Software prefetch spread over the tiles of a block: `per_tile` cache lines of [p, end) before
 * each tile, so the next block arrives while this one computes instead of in one burst. */
struct Prefetch {
    const char *p = nullptr, *end = nullptr;
    int per_tile = 0;
    void step() {
#ifdef KERNELS_VECTOR
        for (int i = 0; i < per_tile && p < end; i++, p += 64) _mm_prefetch(p, _MM_HINT_T1);
#endif
    }
};

template <int NT, int DT>
static void rows_tile(const float *x, int ldx, const void *w, int K, int r0, int r1, float *y, int ldy,
                      const float *bias, int64_t wrow0, Prefetch *pf) {
    // wrow0: W row index of r0 (differs from r0 when w is the converted scratch copy).
    int r = r0;
    for (; r + 4 <= r1; r += 4) {
        if (pf) pf->step();
        tile<4, NT, DT>(x, ldx, w, wrow0 + (r - r0), K, y + r, ldy, bias ? bias + r : nullptr);
    }
    for (; r < r1; r++) tile<1, NT, DT>(x, ldx, w, wrow0 + (r - r0), K, y + r, ldy, bias ? bias + r : nullptr);
}

template <int DT>
static void rows_all_tokens(const float *x, int ldx, int T, const void *w, int K, int r0, int r1, float *y,
                            int ldy, const float *bias, int64_t wrow0, Prefetch *pf = nullptr) {
#define ROWS_TILE(NT)                                                                                          \
    rows_tile<NT, DT>(x + (int64_t)t * ldx, ldx, w, K, r0, r1, y + (int64_t)t * ldy, ldy, bias, wrow0, pf)
    int t = 0;
    if (TILE_NT == 6)
        for (; T - t >= 6; t += 6) ROWS_TILE(6);
    // 4 rows x 3 tokens; a remainder of 4 runs as 2 + 2, not 3 + 1.
    for (; T - t > 4 || T - t == 3; t += 3) ROWS_TILE(3);
    for (; T - t >= 2; t += 2) ROWS_TILE(2);
    if (T - t == 1) ROWS_TILE(1);
#undef ROWS_TILE
}

/* Streaming order: each row of W is read once from memory (one stream) for up to 8 tokens at a
 * time: 8 accumulators + the widened weights + one activation vector fit the 16 registers. */
template <int DT>
static void rows_streaming(const float *x, int ldx, int T, const void *w, int K, int r0, int r1, float *y, int ldy,
                           const float *bias) {
    for (int r = r0; r < r1; r++) {
        const float *b = bias ? bias + r : nullptr;
        int t = 0;
        for (; T - t >= 8; t += 8) tile<1, 8, DT>(x + (int64_t)t * ldx, ldx, w, r, K, y + (int64_t)t * ldy + r, ldy, b);
        const float *xt = x + (int64_t)t * ldx;
        float *yt = y + (int64_t)t * ldy + r;
        switch (T - t) {
        case 7: tile<1, 7, DT>(xt, ldx, w, r, K, yt, ldy, b); break;
        case 6: tile<1, 6, DT>(xt, ldx, w, r, K, yt, ldy, b); break;
        case 5: tile<1, 5, DT>(xt, ldx, w, r, K, yt, ldy, b); break;
        case 4: tile<1, 4, DT>(xt, ldx, w, r, K, yt, ldy, b); break;
        case 3: tile<1, 3, DT>(xt, ldx, w, r, K, yt, ldy, b); break;
        case 2: tile<1, 2, DT>(xt, ldx, w, r, K, yt, ldy, b); break;
        case 1: tile<1, 1, DT>(xt, ldx, w, r, K, yt, ldy, b); break;
        default: break;
        }
    }
}

/* Below this many tokens, widening bf16/f16 in registers (weights re-read from L1 per token group)
 * beats widening the row block once into f32 scratch (re-read from L2). Measured single-thread on
 * the 2-core Zen 5 box, bf16 2048x768: T=16 direct 79 vs copy 63 GFLOP/s; T=64 79 vs 81; T=256
 * 79 vs 87. */
static const int kConvertMinTokens = 48;
/* The same crossover when W streams from DRAM (bf16 2048x768, one core): T=4 one-row 9.4 vs copy
 * 5.9 GB/s; T=6 4.8 vs 5.8; T=8 4.4 vs 4.9; T=16 2.4 vs 3.4. */
static const int kStreamConvertMinTokens = 6;

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
        __mmask32 nan = _mm512_cmpeq_epi16_mask(_mm512_and_si512(h, _mm512_set1_epi16(0x3F80)), _mm512_set1_epi16(0x3F80));
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

/* Within a block the vector path runs two accumulators (even and odd vectors of each pair, then
 * one odd vector into the first), so a (row, token) sum is not one chain of dependent FMAs; the
 * order is a function of the column alone, the same for every tile shape. */
/* SCR: the rows were widened into wsc ((NR, K) floats, f8_rows_raw) and are read from there: the
 * same values, so the same sums. */
/* BITS (vector tables, FINITE): weights widened by f8vw_bits and x given times F8_X_SCALE; the same
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
        int k0 = kb * F8_BLOCK, k1 = k0 + F8_BLOCK < K ? k0 + F8_BLOCK : K, k = k0;
        float sc[NR];
        for (int r = 0; r < NR; r++) sc[r] = wscale[((row0 + r) / F8_BLOCK) * nbk + kb];
#ifdef KERNELS_VECTOR
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
#else
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
#define F8_TILE(NR, NT) tile_f8<NR, NT, FINITE, false, BITS>(x + (int64_t)t * ldx, ldx, w, wscale, r, K, y + (int64_t)t * ldy + r, ldy, \
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
#define F8S_TILE(NR, NT)                                                                                            \
    tile_f8<NR, NT, FINITE, true>(x + (int64_t)t * ldx, ldx, w, wscale, r, K, y + (int64_t)t * ldy + r, ldy,        \
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


/* Q8 (8-bit weights, ENG_PARAM_WEIGHT_DTYPE q8): int8 in [-127, 127] per block of 32 columns with
 * one f32 scale per (row, block) (wscale: (rows, K/32)); K is a multiple of 32. Activations are
 * quantized the same way per token (q = round(x / d), d = max|x| / 127 of the block), then each
 * block's integer dot product is exact and the blocks are summed in f32:
 * y = sum_b (dw_b * dx_b) * isum_b, in block order, whatever the tile shape or batch. */

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

/* NR rows x NT tokens of Q8 weights against quantized activations (xq: (NT, ldq) bytes, xd: (NT,
 * ldq / 32) scales). */
template <int NR, int NT>
static inline void tile_q8(const int8_t *xq, const float *xd, int ldq, const int8_t *w, const float *wscale,
                           int64_t row0, int K, float *y, int ldy, const float *bias) {
    int nb = K / Q8_BLOCK, ldd = ldq / Q8_BLOCK;
    float out[NR][NT];
#if defined(KERNELS_AVX512) && defined(__AVX512VNNI__)
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
            wu[r] = _mm512_xor_si512(_mm512_loadu_si512((const void *)(w + (row0 + r) * (int64_t)K + b * Q8_BLOCK)), flip);
            ws[r] = _mm512_permutexvar_ps(pair_idx, _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd((const double *)(wscale + (row0 + r) * (int64_t)nb + b)))));
        }
        for (int t = 0; t < NT; t++) {
            __m512i xv = _mm512_loadu_si512((const void *)(xq + (int64_t)t * ldq + b * Q8_BLOCK));
            __m512i corr = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), flip, xv));
            __m512 xs = _mm512_permutexvar_ps(pair_idx, _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd((const double *)(xd + (int64_t)t * ldd + b)))));
            for (int r = 0; r < NR; r++) {
                __m512 p = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(corr, wu[r], xv));
                tot[r][t] = _mm512_fmadd_ps(p, _mm512_mul_ps(ws[r], xs), tot[r][t]);
            }
        }
    }
    for (; b < nb; b++) // an odd last block, in the low 8 lanes
        for (int r = 0; r < NR; r++) {
            const __m256i flip8 = _mm256_set1_epi8((char)0x80);
            __m256i wu = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(w + (row0 + r) * (int64_t)K + b * Q8_BLOCK)), flip8);
            float dw = wscale[(row0 + r) * (int64_t)nb + b];
            for (int t = 0; t < NT; t++) {
                __m256i xv = _mm256_loadu_si256((const __m256i *)(xq + (int64_t)t * ldq + b * Q8_BLOCK));
                __m256i corr = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_epi32(_mm256_setzero_si256(), flip8, xv));
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
#elif defined(KERNELS_VECTOR)
    __m256 tot[NR][NT];
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) tot[r][t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m256i xv[NT];
        for (int t = 0; t < NT; t++) xv[t] = _mm256_loadu_si256((const __m256i *)(xq + (int64_t)t * ldq + b * Q8_BLOCK));
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
#else
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
#endif
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) y[(int64_t)t * ldy + r] = out[r][t] + (bias ? bias[r] : 0.0f);
}

/* Q8 matmul over activations already quantized (see quantize_q8). Decode from DRAM: one row at a
 * time for up to 4 tokens; prefill or cached: 4 rows x 4 tokens. */
static void matmul_q8_pre(const int8_t *xq, const float *xd, int ldq, int T, const int8_t *w, const float *wscale,
                          int K, int r0, int r1, float *y, int ldy, const float *bias, bool is_streaming) {
    int ldd = ldq / Q8_BLOCK;
#define Q8_TILE(NR, NT) tile_q8<NR, NT>(xq + (int64_t)t * ldq, xd + (int64_t)t * ldd, ldq, w, wscale, r, K, \
                                        y + (int64_t)t * ldy + r, ldy, bias ? bias + r : nullptr)
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


/* Few tokens (decode): stream W once, widening in registers. Many tokens (prefill): widen the
 * row block once into scratch and run the f32 tiles over every token from L2.
 * is_streaming: W comes from DRAM (the model does not fit the caches). Then rows are read one at a
 * time: on the Zen 5 box, 4 interleaved row streams read 6.6-7.7 GB/s per core against 15-17 GB/s
 * for one (bf16, K = 768; the hardware prefetcher follows one stream far better). From cache, 4 rows
 * at a time are faster (41 vs 22 GB/s at T = 1). Each (row, token) sums in the same order either
 * way, so results are bit-identical. */
static void matmul(const float *x, int ldx, int T, const void *w, int dtype, int K, int r0, int r1, float *y,
                   int ldy, const float *bias, float *scratch, bool is_streaming, const float *wscale) {
    if (dtype == F8 || dtype == F8_FINITE) { // the same sums: F8_FINITE only skips the NaN fix-up
        if (dtype == F8) matmul_f8<false>(x, ldx, T, (const uint8_t *)w, wscale, K, r0, r1, y, ldy, bias, is_streaming, scratch);
        else matmul_f8<true>(x, ldx, T, (const uint8_t *)w, wscale, K, r0, r1, y, ldy, bias, is_streaming, scratch);
        return;
    }
    if (dtype == Q8) {
        matmul_q8(x, ldx, T, (const int8_t *)w, wscale, K, r0, r1, y, ldy, bias, scratch, is_streaming);
        return;
    }
    // Copy (f32 weights: one sequential stream) or widen the row block into scratch first?
    bool is_copy = (dtype != F32 && T >= kConvertMinTokens) || (is_streaming && T >= kStreamConvertMinTokens);
    if (is_copy) {
        for (int r = r0; r < r1; r++) row_to_f32(scratch + (int64_t)(r - r0) * K, w, dtype, r, K, wscale);
        Prefetch pf; // streaming: the next row block comes into L2 while this one computes (never faults)
        if (is_streaming) {
            int64_t row_bytes = (int64_t)K * (dtype == F32 ? 4 : 2);
            int n_tiles = ((r1 - r0) / 4 > 0 ? (r1 - r0) / 4 : 1) * ((T + 2) / 3);
            pf.p = (const char *)w + r1 * row_bytes;
            pf.end = pf.p + (r1 - r0) * row_bytes;
            pf.per_tile = (int)(((r1 - r0) * row_bytes / 64 + n_tiles - 1) / n_tiles);
        }
        rows_all_tokens<F32>(x, ldx, T, scratch, K, r0, r1, y, ldy, bias, 0, is_streaming ? &pf : nullptr);
        return;
    }
    if (is_streaming) {
        if (dtype == F32) rows_streaming<F32>(x, ldx, T, w, K, r0, r1, y, ldy, bias);
        else if (dtype == BF16) rows_streaming<BF16>(x, ldx, T, w, K, r0, r1, y, ldy, bias);
        else rows_streaming<F16>(x, ldx, T, w, K, r0, r1, y, ldy, bias);
        return;
    }
    if (dtype == F32) rows_all_tokens<F32>(x, ldx, T, w, K, r0, r1, y, ldy, bias, r0);
    else if (dtype == BF16) rows_all_tokens<BF16>(x, ldx, T, w, K, r0, r1, y, ldy, bias, r0);
    else rows_all_tokens<F16>(x, ldx, T, w, K, r0, r1, y, ldy, bias, r0);
}

static float dot(const float *a, const float *b, int n) {
    int i = 0;
    float s = 0;
#ifdef KERNELS_VECTOR
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    s = hsum(_mm256_add_ps(acc0, acc1));
#endif
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

static void axpy(float *y, float a, const float *x, int n) {
    int i = 0;
#ifdef KERNELS_VECTOR
    __m256 av = _mm256_set1_ps(a);
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
#endif
    for (; i < n; i++) y[i] += a * x[i];
}

static void scale(float *y, float a, int n) {
    for (int i = 0; i < n; i++) y[i] *= a;
}

static void rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    float ss = dot(x, x, n);
    float inv = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * inv * w[i];
}

#ifdef KERNELS_VECTOR
/* e^x a vector at a time: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two, Cody and Waite), e^r
 * by the degree-5 polynomial of Cephes' expf (S. Moshier; its published coefficients), then times
 * 2^n. Within 2 ulp of expf; x is clamped to [-87.3, 88.7] (results from 1.2e-38 to 3.4e38);
 * NaN stays NaN. */
static inline vecw vw_exp(vecw x) {
    x = vw_max(vw_set1(-87.33654f), vw_min(vw_set1(88.72283f), x)); // min/max(c, x) return x when x is NaN
    vecw n = vw_round(vw_mul(x, vw_set1(1.44269504088896341f)));
    vecw r = vw_fnma(n, vw_set1(0.693359375f), x);
    r = vw_fnma(n, vw_set1(-2.12194440e-4f), r);
    vecw p = vw_set1(1.9875691500e-4f);
    p = vw_fma(p, r, vw_set1(1.3981999507e-3f));
    p = vw_fma(p, r, vw_set1(8.3334519073e-3f));
    p = vw_fma(p, r, vw_set1(4.1665795894e-2f));
    p = vw_fma(p, r, vw_set1(1.6666665459e-1f));
    p = vw_fma(p, r, vw_set1(5.0000001201e-1f));
    p = vw_fma(p, vw_mul(r, r), vw_add(r, vw_set1(1.0f)));
    return vw_pow2_mul(p, n);
}
#endif

static void silu_mul(float *out, const float *gate, const float *up, int n) {
    int i = 0;
#ifdef KERNELS_VECTOR
    for (; i + VW <= n; i += VW) {
        vecw g = vw_loadx(gate + i);
        vecw e = vw_exp(vw_sub(vw_zero(), g));
        vw_store(out + i, vw_mul(vw_div(g, vw_add(vw_set1(1.0f), e)), vw_loadx(up + i)));
    }
#endif
    for (; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

/* row[0..n) = softmax(row[0..n)) (n >= 1). */
static void softmax(float *row, int n) {
    float mx = row[0], sum = 0;
    for (int j = 1; j < n; j++) mx = row[j] > mx ? row[j] : mx;
    int j = 0;
#ifdef KERNELS_VECTOR
    vecw m = vw_set1(mx), acc = vw_zero();
    for (; j + VW <= n; j += VW) {
        vecw e = vw_exp(vw_sub(vw_loadx(row + j), m));
        vw_store(row + j, e);
        acc = vw_add(acc, e);
    }
    sum = vw_sum(acc);
#endif
    for (; j < n; j++) {
        row[j] = expf(row[j] - mx);
        sum += row[j];
    }
    float inv = 1.0f / sum;
    for (j = 0; j < n; j++) row[j] *= inv;
}

#ifdef KERNELS_AVX512
/* Query rows x keys, 16 dimensions per step: each (row, key) sums its 16 lanes over d in order,
 * then vw_sum's tree, whatever the tile (vw_sum_many is bit-identical to it). */
template <int NR, int NK>
static inline void scores_tile(float *scores, int ld, const float *const *qr, const float *k, int D, float scale) {
    __m512 acc[NR * NK];
    for (int i = 0; i < NR * NK; i++) acc[i] = _mm512_setzero_ps();
    for (int d = 0; d < D; d += 16) {
        __m512 kv[NK];
        for (int j = 0; j < NK; j++) kv[j] = _mm512_loadu_ps(k + (int64_t)j * D + d);
        for (int r = 0; r < NR; r++) {
            __m512 qv = _mm512_loadu_ps(qr[r] + d);
            for (int j = 0; j < NK; j++) acc[r * NK + j] = _mm512_fmadd_ps(qv, kv[j], acc[r * NK + j]);
        }
    }
    float out[NR * NK];
    if (NR * NK >= 6) vw_sum_many(acc, NR * NK, out);
    else
        for (int i = 0; i < NR * NK; i++) out[i] = vw_sum(acc[i]);
    for (int r = 0; r < NR; r++)
        for (int j = 0; j < NK; j++) scores[(int64_t)r * ld + j] = out[r * NK + j] * scale;
}
#endif

/* Query row i of attn_scores / attn_accum: token i / group, head i % group. */
static inline const float *query_row(const float *q, int ldq, int group, int D, int i) {
    return q + (int64_t)(i / group) * ldq + (int64_t)(i % group) * D;
}

static void attn_scores(float *scores, int ld, int j0, const float *q, int ldq, int nq, int group, const float *k, int n,
                        int D, float scale) {
    int R = nq * group;
#ifdef KERNELS_AVX512
    if (D % 16 == 0) { // 4 rows x 4 keys share their loads; a row left over goes key by key (one stream)
        int i = 0;
        for (; i + 4 <= R; i += 4) {
            const float *qr[4] = {query_row(q, ldq, group, D, i), query_row(q, ldq, group, D, i + 1),
                                  query_row(q, ldq, group, D, i + 2), query_row(q, ldq, group, D, i + 3)};
            float *row = scores + (int64_t)i * ld + j0;
            int j = 0;
            for (; j + 4 <= n; j += 4) scores_tile<4, 4>(row + j, ld, qr, k + (int64_t)j * D, D, scale);
            for (; j < n; j++) scores_tile<4, 1>(row + j, ld, qr, k + (int64_t)j * D, D, scale);
        }
        for (; i < R; i++) {
            const float *qr[1] = {query_row(q, ldq, group, D, i)};
            float *row = scores + (int64_t)i * ld + j0;
            for (int j = 0; j < n; j++) scores_tile<1, 1>(row + j, ld, qr, k + (int64_t)j * D, D, scale);
        }
        return;
    }
#endif
#ifdef KERNELS_VECTOR
    if (D % 8 == 0) { // q held in registers 64 dims at a time, one k row per iteration
        for (int h = 0; h < R; h++) {
            float *row = scores + (int64_t)h * ld + j0;
            const float *qh = query_row(q, ldq, group, D, h);
            for (int j = 0; j < n; j++) row[j] = 0;
            for (int d0 = 0; d0 < D; d0 += 64) {
                int nv = (D - d0) / 8 < 8 ? (D - d0) / 8 : 8;
                __m256 qv[8];
                for (int i = 0; i < nv; i++) qv[i] = _mm256_loadu_ps(qh + d0 + 8 * i);
                for (int j = 0; j < n; j++) {
                    const float *kr = k + (int64_t)j * D + d0;
                    __m256 acc = _mm256_mul_ps(qv[0], _mm256_loadu_ps(kr));
                    for (int i = 1; i < nv; i++) acc = _mm256_fmadd_ps(qv[i], _mm256_loadu_ps(kr + 8 * i), acc);
                    row[j] += hsum(acc);
                }
            }
            for (int j = 0; j < n; j++) row[j] *= scale;
        }
        return;
    }
#endif
    for (int j = 0; j < n; j++)
        for (int h = 0; h < R; h++)
            scores[(int64_t)h * ld + j0 + j] = dot(query_row(q, ldq, group, D, h), k + (int64_t)j * D, D) * scale;
}

#ifdef KERNELS_AVX512
/* o[r][d0 .. d0 + 16 NV) += sum_j p[r][j] v[j][...], in increasing j: per element the same chain
 * of fused multiply-adds as one axpy per position. */
template <int NR, int NV>
static inline void accum_tile(float *const *o, const float *const *p, const float *v, int n, int d0, int ldv) {
    __m512 acc[NR][NV];
    for (int r = 0; r < NR; r++)
        for (int c = 0; c < NV; c++) acc[r][c] = _mm512_loadu_ps(o[r] + d0 + 16 * c);
    for (int j = 0; j < n; j++) {
        const float *vr = v + (int64_t)j * ldv + d0;
        __m512 vv[NV];
        for (int c = 0; c < NV; c++) vv[c] = _mm512_loadu_ps(vr + 16 * c);
        for (int r = 0; r < NR; r++) {
            __m512 pj = _mm512_set1_ps(p[r][j]);
            for (int c = 0; c < NV; c++) acc[r][c] = _mm512_fmadd_ps(pj, vv[c], acc[r][c]);
        }
    }
    for (int r = 0; r < NR; r++)
        for (int c = 0; c < NV; c++) _mm512_storeu_ps(o[r] + d0 + 16 * c, acc[r][c]);
}
#endif

static void attn_accum(float *out, int ldo, const float *probs, int ld, int j0, int nq, int group, const float *v, int n,
                       int D, int ldv) {
    int R = nq * group;
#ifdef KERNELS_AVX512
    if (D % 16 == 0) { // up to 4 rows x 64 dims in registers; each v row loaded once for them all
        for (int i = 0; i < R; i += 4) {
            int nr = R - i < 4 ? R - i : 4;
            const float *p[4];
            float *o[4];
            for (int r = 0; r < nr; r++) {
                p[r] = probs + (int64_t)(i + r) * ld + j0;
                o[r] = (float *)query_row(out, ldo, group, D, i + r);
            }
            for (int d0 = 0; d0 < D; d0 += 64) {
                int nv = (D - d0) / 16 < 4 ? (D - d0) / 16 : 4;
#define ACCUM(NR) \
    (nv == 4 ? accum_tile<NR, 4>(o, p, v, n, d0, ldv) : nv == 3 ? accum_tile<NR, 3>(o, p, v, n, d0, ldv) \
             : nv == 2 ? accum_tile<NR, 2>(o, p, v, n, d0, ldv) : accum_tile<NR, 1>(o, p, v, n, d0, ldv))
                if (nr == 4) ACCUM(4);
                else if (nr == 3) ACCUM(3);
                else if (nr == 2) ACCUM(2);
                else ACCUM(1);
#undef ACCUM
            }
        }
        return;
    }
#endif
#ifdef KERNELS_VECTOR
    if (D % 8 == 0) { // out accumulated in registers 64 dims at a time
        for (int h = 0; h < R; h++) {
            const float *p = probs + (int64_t)h * ld + j0;
            float *oh = (float *)query_row(out, ldo, group, D, h);
            for (int d0 = 0; d0 < D; d0 += 64) {
                int nv = (D - d0) / 8 < 8 ? (D - d0) / 8 : 8;
                __m256 acc[8];
                for (int i = 0; i < nv; i++) acc[i] = _mm256_loadu_ps(oh + d0 + 8 * i);
                for (int j = 0; j < n; j++) {
                    __m256 pj = _mm256_set1_ps(p[j]);
                    const float *vr = v + (int64_t)j * ldv + d0;
                    for (int i = 0; i < nv; i++) acc[i] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vr + 8 * i), acc[i]);
                }
                for (int i = 0; i < nv; i++) _mm256_storeu_ps(oh + d0 + 8 * i, acc[i]);
            }
        }
        return;
    }
#endif
    for (int j = 0; j < n; j++)
        for (int h = 0; h < R; h++)
            axpy((float *)query_row(out, ldo, group, D, h), probs[(int64_t)h * ld + j0 + j], v + (int64_t)j * ldv, D);
}

/* MLA's absorbed query for one token and head: out[0..K) = sum over i < n, in increasing i, of
 * a[i] * W[row0 + i, 0..K), each weight the value row_to_f32 gives, one fused multiply-add per
 * column and row: row_to_f32 of every row then attn_accum over them, bit for bit. FP8 on the vector
 * tables (K a multiple of the vector width) widens in registers; anything else goes through that
 * widened copy in scratch (n * K floats). out may hold anything on entry. */
static void rows_accum(float *out, const float *a, int n, const void *w, int dtype, int64_t row0, int K,
                       const float *wscale, float *scratch) {
    if (dtype == F8_FINITE) dtype = F8; // the same values; row_to_f32 takes the stored dtype
#ifdef KERNELS_VECTOR
    if (dtype == F8 && K % VW == 0) {
        const uint8_t *w8 = (const uint8_t *)w;
        int nbk = (K + F8_BLOCK - 1) / F8_BLOCK;
        for (int c0 = 0; c0 < K; c0 += 4 * VW) { // up to 4 vectors of columns, all in one 128-column block
            int nv = (K - c0) / VW < 4 ? (K - c0) / VW : 4;
            vecw acc[4] = {vw_zero(), vw_zero(), vw_zero(), vw_zero()};
            for (int i = 0; i < n; i++) {
                int64_t r = row0 + i;
                vecw sv = vw_set1(wscale[(r / F8_BLOCK) * nbk + c0 / F8_BLOCK] * 256.0f), av = vw_set1(a[i]);
                const uint8_t *p = w8 + r * K + c0;
                for (int v = 0; v < nv; v++) acc[v] = vw_fma(av, vw_mul(f8xvw(p + v * VW), sv), acc[v]);
            }
            for (int v = 0; v < nv; v++) vw_store(out + c0 + v * VW, acc[v]);
        }
        return;
    }
#endif
    for (int i = 0; i < n; i++) row_to_f32(scratch + (int64_t)i * K, w, dtype, row0 + i, K, wscale);
    memset(out, 0, sizeof(float) * (size_t)K);
    attn_accum(out, 0, a, n, 0, 1, 1, scratch, n, K, K);
}

/* dot(W[row, 0..K), x) with W's row as row_to_f32 gives it: row_to_f32 then dot, bit for bit (FP8
 * on the vector tables widens in registers; else through scratch, K floats). */
static float row_dot(const void *w, int dtype, int64_t row, int K, const float *wscale, const float *x, float *scratch) {
    if (dtype == F8_FINITE) dtype = F8;
#ifdef KERNELS_VECTOR
    if (dtype == F8) {
        const uint8_t *p = (const uint8_t *)w + row * K;
        const float *sc = wscale + (row / F8_BLOCK) * (int64_t)((K + F8_BLOCK - 1) / F8_BLOCK);
        // dot's own steps: two 8-float accumulators over 16 columns, then 8, then one at a time.
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        int i = 0;
        for (; i + 16 <= K; i += 16) {
            __m256 sv = _mm256_set1_ps(sc[i / F8_BLOCK] * 256.0f); // 16 | 128: one block
            acc0 = _mm256_fmadd_ps(_mm256_mul_ps(f8x8(p + i), sv), _mm256_loadu_ps(x + i), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_mul_ps(f8x8(p + i + 8), sv), _mm256_loadu_ps(x + i + 8), acc1);
        }
        for (; i + 8 <= K; i += 8) {
            if ((i + 7) / F8_BLOCK != i / F8_BLOCK) break; // 8 columns across a block edge: the copy
            acc0 = _mm256_fmadd_ps(_mm256_mul_ps(f8x8(p + i), _mm256_set1_ps(sc[i / F8_BLOCK] * 256.0f)),
                                   _mm256_loadu_ps(x + i), acc0);
        }
        if (i + 8 > K) {
            float s = hsum(_mm256_add_ps(acc0, acc1));
            for (; i < K; i++) s += f8_table.v[p[i]] * sc[i / F8_BLOCK] * x[i];
            return s;
        }
    }
#endif
    row_to_f32(scratch, w, dtype, row, K, wscale);
    return dot(scratch, x, K);
}

} // namespace KERNELS_NS

extern const Kernels KERNELS_TABLE;
const Kernels KERNELS_TABLE = {
#if defined(KERNELS_AVX512)
    "avx512", ENG_SIMD_AVX512,
#elif defined(KERNELS_VECTOR)
    "avx2", ENG_SIMD_AVX2,
#else
    "scalar", ENG_SIMD_SCALAR,
#endif
    KERNELS_NS::matmul, KERNELS_NS::dot, KERNELS_NS::axpy, KERNELS_NS::scale,
    KERNELS_NS::rmsnorm, KERNELS_NS::silu_mul, KERNELS_NS::softmax, KERNELS_NS::row_to_f32,
    KERNELS_NS::attn_scores, KERNELS_NS::attn_accum,
    KERNELS_NS::quantize_q8, KERNELS_NS::matmul_q8_pre,
#ifdef F8_BITS
    KERNELS_NS::F8_X_SCALE,
#else
    1.0f,
#endif
    KERNELS_NS::matmul_f8x, KERNELS_NS::rows_accum, KERNELS_NS::row_dot,
};

} // namespace maya
