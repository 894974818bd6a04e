/* ggml_quants.cpp: the GGUF block quantizers (see ggml_quants.h). Algorithm: llama.cpp's
 * ggml-quants.c reference quantizers (no importance matrix), the method restated in our own code:
 * - Q8_0: d = max|x| / 127, q = round-half-away(x / d).
 * - Q4_0 / Q5_0: d = m / -8 (-16), m the element of largest magnitude; q = min(15 (31),
 *   trunc(x / d + 8.5 (16.5))).
 * - Q4_K: per sub-block of 32, a scale and min fitted by weighted least squares over 21 trial
 *   scales (make_qkx2_quants: weights sqrt(mean x^2) + |x|, rmin -1, rdelta 0.1, 4-bit levels);
 *   the 8 scales and mins quantized to 6 bits against the block's largest (d = max / 63); then the
 *   quants recomputed from the stored scales.
 * - Q6_K: per sub-block of 16, make_qx_quants (weights x^2, 19 trial scales around -32 / max);
 *   the 16 scales to int8 against the largest (d = max / -128); quants recomputed likewise.
 * Arithmetic in f32 in the reference's order, rounding by nearest_int (round half to even).
 */
#include "ggml_quants.h"

#include <math.h>
#include <string.h>

#include <thread>
#include <vector>

#include "kernels/ggml_blocks.h" // defines: Block*, ggml_row_bytes

namespace maya {

uint16_t f32_to_f16(float x) {
    uint32_t b;
    memcpy(&b, &x, 4);
    uint16_t sign = (uint16_t)((b >> 16) & 0x8000);
    uint32_t a = b & 0x7FFFFFFF;
    if (a >= 0x7F800000) return (uint16_t)(sign | (a > 0x7F800000 ? 0x7E00 : 0x7C00)); // NaN, infinity
    if (a >= 0x477FF000) return (uint16_t)(sign | 0x7C00);                             // rounds past 65504
    if (a < 0x38800000) { // below 2^-14: a multiple of 2^-24, rounded to even
        float f;
        memcpy(&f, &a, 4);
        float r = f * 16777216.0f + 12582912.0f; // exact scaling, then the rounding add
        return (uint16_t)(sign | (uint16_t)(int)(r - 12582912.0f));
    }
    uint32_t h = ((((a >> 23) - 127 + 15) << 10) | ((a & 0x7FFFFF) >> 13)), rem = a & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; // a carry into the exponent is right too
    return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    float f;
    if (exp == 0) f = ldexpf((float)mant, -24);
    else if (exp == 31) {
        uint32_t bits = 0x7F800000u | (mant << 13);
        memcpy(&f, &bits, 4);
    } else f = ldexpf((float)(mant | 0x400), (int)exp - 25);
    uint32_t fb;
    memcpy(&fb, &f, 4);
    fb |= sign;
    memcpy(&f, &fb, 4);
    return f;
}

/* Round to nearest, ties to even, for |v| < 2^22 (the reference's nearest_int). */
static inline int nearest_int(float v) {
    float s = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &s, 4);
    return (i & 0x007FFFFF) - 0x00400000;
}

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }

static void quantize_q8_0(const float *x, int64_t K, BlockQ8_0 *y) {
    for (int64_t i = 0; i < K / 32; i++, x += 32) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
        y[i].d = f32_to_f16(d);
        for (int j = 0; j < 32; j++) y[i].qs[j] = (int8_t)roundf(x[j] * id);
    }
}

/* Q4_0 (nmax 8) and Q5_0 (nmax 16): the quants of one block and d. */
static void quantize_x_0(const float *x, int nmax, int *q, uint16_t *d16) {
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    float d = max / (float)-nmax, id = d != 0 ? 1.0f / d : 0.0f;
    *d16 = f32_to_f16(d);
    for (int j = 0; j < 32; j++) q[j] = imin(2 * nmax - 1, (int)(int8_t)(x[j] * id + ((float)nmax + 0.5f)));
}

static void quantize_q4_0(const float *x, int64_t K, BlockQ4_0 *y) {
    int q[32];
    for (int64_t i = 0; i < K / 32; i++, x += 32) {
        quantize_x_0(x, 8, q, &y[i].d);
        for (int j = 0; j < 16; j++) y[i].qs[j] = (uint8_t)(q[j] | q[j + 16] << 4);
    }
}

static void quantize_q5_0(const float *x, int64_t K, BlockQ5_0 *y) {
    int q[32];
    for (int64_t i = 0; i < K / 32; i++, x += 32) {
        quantize_x_0(x, 16, q, &y[i].d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            y[i].qs[j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
            qh |= (uint32_t)((q[j] & 0x10) >> 4) << j;
            qh |= (uint32_t)((q[j + 16] & 0x10) >> 4) << (j + 16);
        }
        memcpy(y[i].qh, &qh, 4);
    }
}

/* make_qkx2_quants: levels L[i] in [0, nmax] with x ~ scale * L - min; weighted least squares over
 * nstep + 1 trial scales. Returns the scale; *the_min = the (non-negative) min. */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min,
                              uint8_t *Laux, float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0], sum_w = weights[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; i++) L[i] = 0;
        *the_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min), scale = 1 / iscale, best_error = 0;
    for (int i = 0; i < n; i++) {
        int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)imax(0, imin(nmax, l));
        float diff = scale * L[i] + min - x[i];
        best_error += weights[i] * (diff * diff);
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = imax(0, imin(nmax, nearest_int(iscale * (x[i] - min))));
            Laux[i] = (uint8_t)l;
            float w = weights[i];
            sum_l += w * (float)l;
            sum_l2 += w * (float)l * (float)l;
            sum_xl += w * (float)l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                cur_error += weights[i] * (diff * diff);
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

static void quantize_q4_k(const float *x, int64_t K, BlockQ4_K *y) {
    uint8_t L[256], Laux[32];
    float weights[32], mins[8], scales[8];
    for (int64_t i = 0; i < K / 256; i++, x += 256) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; j++) {
            float sum_x2 = 0;
            for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
            float av_x = sqrtf(sum_x2 / 32);
            for (int l = 0; l < 32; l++) weights[l] = av_x + fabsf(x[32 * j + l]);
            scales[j] = make_qkx2_quants(32, 15, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -1.0f, 0.1f, 20);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f, inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
        uint8_t *s = y[i].scales;
        memset(s, 0, 12);
        for (int j = 0; j < 8; j++) {
            int ls = imin(63, (uint8_t)nearest_int(inv_scale * scales[j]));
            int lm = imin(63, (uint8_t)nearest_int(inv_min * mins[j]));
            if (j < 4) {
                s[j] = (uint8_t)ls;
                s[j + 4] = (uint8_t)lm;
            } else {
                s[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
                s[j - 4] |= (uint8_t)((ls >> 4) << 6);
                s[j] |= (uint8_t)((lm >> 4) << 6);
            }
        }
        y[i].d = f32_to_f16(max_scale / 63.0f);
        y[i].dmin = f32_to_f16(max_min / 63.0f);
        float dd = f16_to_f32(y[i].d), dm = f16_to_f32(y[i].dmin);
        for (int j = 0; j < 8; j++) {
            int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
            int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | (s[j] >> 6) << 4;
            float d = dd * (float)sc;
            if (d == 0) continue;
            float dmj = dm * (float)m;
            for (int ii = 0; ii < 32; ii++)
                L[32 * j + ii] = (uint8_t)imax(0, imin(15, nearest_int((x[32 * j + ii] + dmj) / d)));
        }
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) y[i].qs[32 * c + l] = (uint8_t)(L[64 * c + l] | L[64 * c + 32 + l] << 4);
    }
}

/* make_qx_quants with weights x^2: levels in [-nmax, nmax - 1] stored plus nmax; returns the scale. */
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    if (amax < 1e-15f) {
        for (int i = 0; i < n; i++) L[i] = 0;
        return 0.0f;
    }
    float iscale = (float)-nmax / max, sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i])));
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f, best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i])));
            float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) L[i] = (int8_t)(nmax + imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i]))));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

static void quantize_q6_k(const float *x, int64_t K, BlockQ6_K *y) {
    int8_t L[256];
    float scales[16];
    for (int64_t i = 0; i < K / 256; i++, x += 256) {
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < 16; ib++) {
            scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
            if (fabsf(scales[ib]) > max_abs_scale) {
                max_abs_scale = fabsf(scales[ib]);
                max_scale = scales[ib];
            }
        }
        if (max_abs_scale < 1e-15f) {
            memset(&y[i], 0, sizeof(BlockQ6_K));
            continue;
        }
        float iscale = -128.0f / max_scale;
        y[i].d = f32_to_f16(1 / iscale);
        for (int ib = 0; ib < 16; ib++) y[i].scales[ib] = (int8_t)imin(127, nearest_int(iscale * scales[ib]));
        float dd = f16_to_f32(y[i].d);
        for (int j = 0; j < 16; j++) {
            float d = dd * (float)y[i].scales[j];
            if (d == 0) continue;
            for (int ii = 0; ii < 16; ii++)
                L[16 * j + ii] = (int8_t)(imax(-32, imin(31, nearest_int(x[16 * j + ii] / d))) + 32);
        }
        for (int h = 0; h < 2; h++) {
            uint8_t *ql = y[i].ql + 64 * h, *qh = y[i].qh + 32 * h;
            const int8_t *Lh = L + 128 * h;
            for (int l = 0; l < 32; l++) {
                ql[l] = (uint8_t)((Lh[l] & 15) | (Lh[l + 64] & 15) << 4);
                ql[l + 32] = (uint8_t)((Lh[l + 32] & 15) | (Lh[l + 96] & 15) << 4);
                qh[l] =
                    (uint8_t)((Lh[l] >> 4) | (Lh[l + 32] >> 4) << 2 | (Lh[l + 64] >> 4) << 4 | (Lh[l + 96] >> 4) << 6);
            }
        }
    }
}

bool ggml_can_quantize(int dtype) {
    return dtype == ENG_WEIGHT_DTYPE_Q8_0 || dtype == ENG_WEIGHT_DTYPE_Q4_0 || dtype == ENG_WEIGHT_DTYPE_Q5_0 ||
           dtype == ENG_WEIGHT_DTYPE_Q4_K || dtype == ENG_WEIGHT_DTYPE_Q6_K;
}

void ggml_quantize_row(int dtype, const float *x, int64_t K, void *dst) {
    switch (dtype) {
    case ENG_WEIGHT_DTYPE_Q8_0: quantize_q8_0(x, K, (BlockQ8_0 *)dst); break;
    case ENG_WEIGHT_DTYPE_Q4_0: quantize_q4_0(x, K, (BlockQ4_0 *)dst); break;
    case ENG_WEIGHT_DTYPE_Q5_0: quantize_q5_0(x, K, (BlockQ5_0 *)dst); break;
    case ENG_WEIGHT_DTYPE_Q4_K: quantize_q4_k(x, K, (BlockQ4_K *)dst); break;
    case ENG_WEIGHT_DTYPE_Q6_K: quantize_q6_k(x, K, (BlockQ6_K *)dst); break;
    default: break;
    }
}

void ggml_quantize_matrix(int dtype, const void *src, int src_dtype, int64_t rows, int64_t cols, void *dst,
                          int n_threads) {
    int64_t rb = ggml_row_bytes(dtype, cols);
    auto work = [&](int64_t r0, int64_t r1) {
        std::vector<float> row((size_t)cols);
        for (int64_t r = r0; r < r1; r++) {
            for (int64_t i = 0; i < cols; i++) {
                int64_t k = r * cols + i;
                if (src_dtype == ENG_WEIGHT_DTYPE_F32) memcpy(&row[(size_t)i], (const uint8_t *)src + 4 * k, 4);
                else {
                    uint16_t h;
                    memcpy(&h, (const uint8_t *)src + 2 * k, 2);
                    if (src_dtype == ENG_WEIGHT_DTYPE_F16) row[(size_t)i] = f16_to_f32(h);
                    else {
                        uint32_t bits = (uint32_t)h << 16;
                        memcpy(&row[(size_t)i], &bits, 4);
                    }
                }
            }
            ggml_quantize_row(dtype, row.data(), cols, (uint8_t *)dst + r * rb);
        }
    };
    int n = n_threads < 1 ? 1 : n_threads;
    if (rows < 64 * (int64_t)n) n = 1; // small matrices: not worth a thread
    if (n == 1) {
        work(0, rows);
        return;
    }
    std::vector<std::thread> th;
    for (int i = 0; i < n; i++) th.emplace_back(work, rows * i / n, rows * (i + 1) / n);
    for (std::thread &t : th) t.join();
}

} // namespace maya
