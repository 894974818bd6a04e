/* kernels/kv.h: the KV cache's row formats (ENG_KV_DTYPE_*): a row of n floats (one kv head's key
 * or value at one position; MLA: the latent plus the rope key) stored as f32, bf16, f16 or q8_0,
 * and read back as f32 rows for the attention kernels.
 *
 * q8_0 is ggml's block_q8_0 (ggml-common.h): per 32 values one f16 scale d = amax / 127 and 32
 * int8 q = round(x / d), x read back as q * d; a row whose length is not a multiple of 32 ends in
 * one shorter block (same layout, fewer bytes). Rows are stored by the scalar code on every path,
 * so a cache holds the same bits whichever kernel path wrote it; kv_to_f32 widens with the
 * vector unit where there is one, and every path gives the same floats (each value is one exact
 * conversion or one product).
 */
#ifndef MAYA_KERNELS_KV_H
#define MAYA_KERNELS_KV_H

#include "base.h" // defines: bf16_scalar, f16_scalar, load8

namespace maya {
namespace KERNELS_NS {

/* f32 -> bf16, rounding to nearest even (NaN stays a quiet NaN). */
static inline uint16_t bf16_from_f32(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((b >> 16) | 0x40);
    return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

/* f32 -> IEEE binary16, rounding to nearest even (overflow to infinity, subnormals kept): the
 * bits F16C's vcvtps2ph gives with round-to-nearest. */
static inline uint16_t f16_from_f32(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    uint32_t sign = (b >> 16) & 0x8000u, a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu)); // NaN
    if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);                       // rounds past 65504: infinity
    if (a < 0x38800000u) {                                                         // below 2^-14: subnormal (or zero)
        if (a < 0x33000000u) return (uint16_t)sign;                                // below half the smallest subnormal
        uint32_t e = a >> 23, m = (a & 0x7FFFFFu) | 0x800000u;
        int shift = (int)(126 - e); // value = m * 2^(e - 150); a subnormal unit is 2^-24
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        q += rem > half || (rem == half && (q & 1u));
        return (uint16_t)(sign | q);
    }
    uint32_t r = a - 0x38000000u; // rebias 127 -> 15 (exponent field shifts by 112 << 23)
    r += 0xFFFu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

/* dst (one row, kv_row_bytes bytes) = src[0..n) in dtype. */
static void kv_store(void *dst, const float *src, int n, int dtype) {
    if (dtype == kKvF32) {
        memcpy(dst, src, sizeof(float) * (size_t)n);
        return;
    }
    if (dtype == kKvBF16 || dtype == kKvF16) {
        uint16_t *h = (uint16_t *)dst;
        for (int i = 0; i < n; i++) h[i] = dtype == kKvBF16 ? bf16_from_f32(src[i]) : f16_from_f32(src[i]);
        return;
    }
    uint8_t *p = (uint8_t *)dst;
    for (int b0 = 0; b0 < n; b0 += kKvQ8Block) { // ggml's quantize_row_q8_0_ref, block by block
        int nb = n - b0 < kKvQ8Block ? n - b0 : kKvQ8Block;
        float amax = 0;
        for (int i = 0; i < nb; i++) amax = fabsf(src[b0 + i]) > amax ? fabsf(src[b0 + i]) : amax;
        float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
        uint16_t dh = f16_from_f32(d);
        memcpy(p, &dh, 2);
        for (int i = 0; i < nb; i++) p[2 + i] = (uint8_t)(int8_t)roundf(src[b0 + i] * id);
        p += 2 + nb;
    }
}

/* dst[r * n + i] = value i of stored row r, for n_rows consecutive rows of n values. */
static void kv_to_f32(float *dst, const void *src, int n_rows, int n, int dtype) {
    int64_t total = (int64_t)n_rows * n;
    if (dtype == kKvF32) {
        memcpy(dst, src, sizeof(float) * (size_t)total);
        return;
    }
    if (dtype == kKvBF16 || dtype == kKvF16) {
        int64_t i = 0;
#ifdef KERNELS_VECTOR
        for (; i + 8 <= total; i += 8) _mm256_storeu_ps(dst + i, load8(src, i, dtype == kKvBF16 ? BF16 : F16));
#endif
        const uint16_t *h = (const uint16_t *)src;
        for (; i < total; i++) dst[i] = dtype == kKvBF16 ? bf16_scalar(h[i]) : f16_scalar(h[i]);
        return;
    }
    const uint8_t *p = (const uint8_t *)src;
    for (int r = 0; r < n_rows; r++)
        for (int b0 = 0; b0 < n; b0 += kKvQ8Block) {
            int nb = n - b0 < kKvQ8Block ? n - b0 : kKvQ8Block, i = 0;
            uint16_t dh;
            memcpy(&dh, p, 2);
            float d = f16_scalar(dh);
            const int8_t *q = (const int8_t *)(p + 2);
            float *o = dst + (int64_t)r * n + b0;
#ifdef KERNELS_VECTOR
            __m256 dv = _mm256_set1_ps(d);
            for (; i + 8 <= nb; i += 8) {
                __m128i q8 = _mm_loadl_epi64((const __m128i *)(q + i));
                _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), dv));
            }
#endif
            for (; i < nb; i++) o[i] = (float)q[i] * d;
            p += 2 + nb;
        }
}

} // namespace KERNELS_NS
} // namespace maya

#endif
