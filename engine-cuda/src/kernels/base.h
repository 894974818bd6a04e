/* kernels/base.h: what every kernel file of kernels_impl.h uses: the instruction set this
 * compilation targets (KERNELS_VECTOR: AVX2 + FMA + F16C; KERNELS_AVX512: AVX-512 F/BW/VL/DQ on
 * top), the dtype codes, bf16 / f16 / e4m3 widened one value at a time, and the matmul's vector
 * type `vecw` (8 or 16 floats) with its operations, reductions and exp.
 *
 * Like every file in kernels/, it is compiled once per instruction set inside the namespace
 * KERNELS_NS (see kernels_impl.h) and includes only intrinsics and C headers.
 */
#ifndef MAYA_KERNELS_BASE_H
#define MAYA_KERNELS_BASE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../kernels.h" // defines: kDt*, kF8Block, kQ8Block, Kernels

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define KERNELS_VECTOR 1
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
#define KERNELS_AVX512 1 // the matmul's vector is 16 lanes (vecw below); 32 registers for its tiles
#endif
#endif

// The parts a register tile is written in (tile_f8_block, tile_q8_sums): one loop nest once compiled.
#define KERNELS_INLINE inline __attribute__((always_inline))
#define KERNELS_INLINE_LAMBDA __attribute__((always_inline))

#ifndef KERNELS_NS
#error "kernels/*.h are included through kernels_impl.h, which needs KERNELS_NS"
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

static inline float f16_scalar(uint16_t h) { return half_to_f32(h); }

/* e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is subnormal (m * 2^-9),
 * 0x7F/0xFF are NaN and there are no infinities (OCP 8-bit floating point spec, "E4M3"). Written
 * in arithmetic the compiler evaluates, for f8_table below. */
static constexpr float f8_scalar(uint8_t b) {
    int exp = (b >> 3) & 0xF, mant = b & 7;
    float f = 0.0f;
    if (exp == 0) f = (float)mant * (1.0f / 512.0f);
    else if (exp == 15 && mant == 7) f = __builtin_nanf("");
    else {
        f = 1.0f + (float)mant * 0.125f; // exact: powers of two scale it below
        for (int e = 7; e < exp; e++) f *= 2.0f;
        for (int e = exp; e < 7; e++) f *= 0.5f;
    }
    return (b & 0x80) ? -f : f;
}

/* All 256 e4m3 values (a gather table for the vector widening), computed by the compiler: a table
 * built by a static initialiser would run this file's instruction set when the library is loaded,
 * before the CPU check of kernels_choose (SIGILL in the AVX-512 build on a CPU without AVX-512).
 * run.sh checks that no kernel object has a static initialiser. */
struct F8Table {
    float v[256];
};
static constexpr F8Table f8_values() {
    F8Table t{};
    for (int i = 0; i < 256; i++) t.v[i] = f8_scalar((uint8_t)i);
    return t;
}
static constexpr F8Table f8_table = f8_values();

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
static inline float vw_sum(vecw v) {
    return hsum(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}
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
    vecw b =
        _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(e, half), _mm256_set1_epi32(127)), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, a), b);
}
static inline float vw_sum(vecw v) { return hsum(v); }
static inline void vw_store(float *p, vecw v) { _mm256_storeu_ps(p, v); }
enum { TILE_NT = 3 }; // 4 rows x 3 tokens: 12 + 3 + 1 of the 16 registers
#endif
#endif

#ifndef KERNELS_VECTOR
enum { TILE_NT = 3 };
#endif

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

} // namespace KERNELS_NS
} // namespace maya

#endif
