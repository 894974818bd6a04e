/* kernels/ggml.h: the GGUF block dtypes (ggml_blocks.h) as the kernels read them: dequantization
 * of a row to f32, value for value as llama.cpp's dequantize_row_* computes it in f32 (ggml-quants.c:
 * Q4_1 / Q5_1 d * q + m; K-quants (d * sc) * q - dmin * m and (d * sc) * q; the same operations in
 * the same order, without fused multiply-adds), so a row here equals ggml's to_float bit for bit.
 */
#ifndef MAYA_KERNELS_GGML_H
#define MAYA_KERNELS_GGML_H

#include "base.h"        // defines: f16_scalar
#include "ggml_blocks.h" // defines: Block*, ggml_row_bytes

namespace maya {
namespace KERNELS_NS {

enum {
    Q8_0 = kDtQ8_0,
    Q4_0 = kDtQ4_0,
    Q4_1 = kDtQ4_1,
    Q5_0 = kDtQ5_0,
    Q5_1 = kDtQ5_1,
    Q4_K = kDtQ4_K,
    Q5_K = kDtQ5_K,
    Q6_K = kDtQ6_K
};

static inline bool is_ggml(int dtype) { return dtype >= Q8_0 && dtype <= Q6_K; }

/* Q4_K / Q5_K sub-block j's 6-bit scale and min (ggml_blocks.h's packing). */
static inline void k4_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* The unsigned quants of one block, in weight order: q in [0, 15] (4-bit), [0, 31] (5-bit),
 * [0, 63] (Q6_K) or the int8 of Q8_0; n: 32 or 256. The offset each type subtracts (8, 16, 32) is
 * not applied here. */
static inline void ggml_block_quants(int dtype, const uint8_t *blk, int16_t *q) {
    switch (dtype) {
    case Q8_0: {
        const BlockQ8_0 *b = (const BlockQ8_0 *)blk;
        for (int i = 0; i < 32; i++) q[i] = b->qs[i];
        return;
    }
    case Q4_0:
    case Q4_1: {
        const uint8_t *qs = dtype == Q4_0 ? ((const BlockQ4_0 *)blk)->qs : ((const BlockQ4_1 *)blk)->qs;
        for (int j = 0; j < 16; j++) {
            q[j] = qs[j] & 15;
            q[j + 16] = qs[j] >> 4;
        }
        return;
    }
    case Q5_0:
    case Q5_1: {
        const uint8_t *qs = dtype == Q5_0 ? ((const BlockQ5_0 *)blk)->qs : ((const BlockQ5_1 *)blk)->qs;
        const uint8_t *qh8 = dtype == Q5_0 ? ((const BlockQ5_0 *)blk)->qh : ((const BlockQ5_1 *)blk)->qh;
        uint32_t qh = (uint32_t)qh8[0] | (uint32_t)qh8[1] << 8 | (uint32_t)qh8[2] << 16 | (uint32_t)qh8[3] << 24;
        for (int j = 0; j < 16; j++) {
            q[j] = (int16_t)((qs[j] & 15) | ((qh >> j) & 1) << 4);
            q[j + 16] = (int16_t)((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
        }
        return;
    }
    case Q4_K:
    case Q5_K: {
        const uint8_t *qs = dtype == Q4_K ? ((const BlockQ4_K *)blk)->qs : ((const BlockQ5_K *)blk)->qs;
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) {
                q[64 * c + l] = qs[32 * c + l] & 15;
                q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
            }
        if (dtype == Q5_K) {
            const uint8_t *qh = ((const BlockQ5_K *)blk)->qh;
            for (int j = 0; j < 8; j++)
                for (int l = 0; l < 32; l++) q[32 * j + l] = (int16_t)(q[32 * j + l] | ((qh[l] >> j) & 1) << 4);
        }
        return;
    }
    case Q6_K: {
        const BlockQ6_K *b = (const BlockQ6_K *)blk;
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
            int16_t *o = q + 128 * h;
            for (int l = 0; l < 32; l++) {
                o[l] = (int16_t)((ql[l] & 15) | ((qh[l] >> 0) & 3) << 4);
                o[l + 32] = (int16_t)((ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4);
                o[l + 64] = (int16_t)((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4);
                o[l + 96] = (int16_t)((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4);
            }
        }
        return;
    }
    default: return;
    }
}

/* out[0..block) = the block's weights in f32, as ggml's to_float. */
static void ggml_block_to_f32(int dtype, const uint8_t *blk, float *out) {
    int16_t q[256];
    ggml_block_quants(dtype, blk, q);
    switch (dtype) {
    case Q8_0: {
        float d = f16_scalar(((const BlockQ8_0 *)blk)->d);
        for (int i = 0; i < 32; i++) out[i] = (float)q[i] * d;
        return;
    }
    case Q4_0:
    case Q5_0: {
        float d = f16_scalar(*(const uint16_t *)blk);
        int off = dtype == Q4_0 ? 8 : 16;
        for (int i = 0; i < 32; i++) out[i] = (float)(q[i] - off) * d;
        return;
    }
    case Q4_1:
    case Q5_1: {
        const uint16_t *h = (const uint16_t *)blk;
        float d = f16_scalar(h[0]), m = f16_scalar(h[1]);
        for (int i = 0; i < 32; i++) out[i] = (float)q[i] * d + m;
        return;
    }
    case Q4_K:
    case Q5_K: {
        const uint16_t *h = (const uint16_t *)blk;
        float d = f16_scalar(h[0]), dmin = f16_scalar(h[1]);
        const uint8_t *s = blk + 4;
        for (int j = 0; j < 8; j++) {
            int sc, m;
            k4_scale_min(s, j, &sc, &m);
            float d1 = d * (float)sc, m1 = dmin * (float)m;
            for (int l = 0; l < 32; l++) out[32 * j + l] = d1 * (float)q[32 * j + l] - m1;
        }
        return;
    }
    case Q6_K: {
        const BlockQ6_K *b = (const BlockQ6_K *)blk;
        float d = f16_scalar(b->d);
        for (int i = 0; i < 256; i++) out[i] = d * (float)b->scales[i / 16] * (float)(q[i] - 32);
        return;
    }
    default: return;
    }
}

/* out[0..n) = row `row` of a (rows, n) matrix of a block dtype (n a multiple of its block). */
static void ggml_row_to_f32(float *out, const void *w, int dtype, int64_t row, int n) {
    int bs = ggml_block_size(dtype), bb = ggml_block_bytes(dtype);
    const uint8_t *p = (const uint8_t *)w + row * ggml_row_bytes(dtype, n);
    for (int b = 0; b < n / bs; b++) ggml_block_to_f32(dtype, p + (int64_t)b * bb, out + b * bs);
}

} // namespace KERNELS_NS
} // namespace maya

#endif
