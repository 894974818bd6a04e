/* kernels/ggml_blocks.h: the GGUF (ggml) block formats Maya reads, as ggml stores them, and their
 * sizes: what the GGUF reader, the loader and the kernels share.
 *
 * Layouts from llama.cpp's ggml/src/ggml-common.h (facts: field order and sizes; the value each
 * block encodes is given per struct). f16 fields are IEEE half bits. A matrix row of K weights is
 * K / block weights of consecutive blocks; rows are contiguous. Every block size is even, so the
 * u16 fields of blocks in a 2-byte aligned tensor are aligned.
 *
 * Unlike the other files of kernels/, this one is not compiled inside an instruction-set
 * namespace: it holds only structs and `static inline` integer functions (internal linkage, so no
 * one-definition hazard across the per-ISA builds), and checkpoint / model code includes it too.
 */
#ifndef MAYA_KERNELS_GGML_BLOCKS_H
#define MAYA_KERNELS_GGML_BLOCKS_H

#include <stdint.h>

#include "../../include/engine.h" // defines: ENG_WEIGHT_DTYPE_*

namespace maya {

enum { kGgmlQK = 32, kGgmlQKK = 256, kGgmlKScaleSize = 12 };

/* Q8_0: w[i] = d * qs[i]. */
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[32];
};
/* Q4_0: w[j] = d * (lo(qs[j]) - 8), w[j + 16] = d * (hi(qs[j]) - 8). */
struct BlockQ4_0 {
    uint16_t d;
    uint8_t qs[16];
};
/* Q4_1: as Q4_0 without the - 8, plus m: w = d * q + m. */
struct BlockQ4_1 {
    uint16_t d, m;
    uint8_t qs[16];
};
/* Q5_0: q = nibble as Q4_0 | bit j of qh (little-endian u32) << 4; w[j] = d * (q - 16). */
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[16];
};
/* Q5_1: q as Q5_0; w = d * q + m. */
struct BlockQ5_1 {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[16];
};
/* Q4_K: 8 sub-blocks of 32 with 6-bit scale sc_j and min m_j packed in scales[12] (j < 4: sc =
 * s[j] & 63, m = s[j + 4] & 63; else sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4, m = (s[j + 4] >> 4)
 * | (s[j] >> 6) << 4). Chunk c of 64 weights uses qs[32c .. 32c + 32): its low nibbles are sub-block
 * 2c, its high nibbles sub-block 2c + 1. w = d * sc_j * q - dmin * m_j. */
struct BlockQ4_K {
    uint16_t d, dmin;
    uint8_t scales[kGgmlKScaleSize];
    uint8_t qs[128];
};
/* Q5_K: Q4_K plus a 5th bit per weight: bit j of qh[l] for weight l of sub-block j. */
struct BlockQ5_K {
    uint16_t d, dmin;
    uint8_t scales[kGgmlKScaleSize];
    uint8_t qh[32];
    uint8_t qs[128];
};
/* Q6_K: 16 sub-blocks of 16 with int8 scales; two halves of 128, half h using ql[64h ..],
 * qh[32h ..]: for l < 32, q[l] = lo(ql[l]) | (qh[l] & 3) << 4, q[l + 32] = lo(ql[l + 32]) | (qh[l] >> 2
 * & 3) << 4, q[l + 64] = hi(ql[l]) | (qh[l] >> 4 & 3) << 4, q[l + 96] = hi(ql[l + 32]) | (qh[l] >> 6)
 * << 4; w[i] = d * scales[i / 16] * (q[i] - 32) (i within the block). */
struct BlockQ6_K {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint16_t d;
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 &&
                  sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 && sizeof(BlockQ4_K) == 144 &&
                  sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210,
              "ggml block sizes");

/* True for the ggml block dtypes (ENG_WEIGHT_DTYPE_Q8_0 .. Q6_K). */
static inline bool ggml_is_block_dtype(int dtype) {
    return dtype >= ENG_WEIGHT_DTYPE_Q8_0 && dtype <= ENG_WEIGHT_DTYPE_Q6_K;
}
/* True for the K-quants (blocks of 256, activations quantized per 256). */
static inline bool ggml_is_k_dtype(int dtype) {
    return dtype >= ENG_WEIGHT_DTYPE_Q4_K && dtype <= ENG_WEIGHT_DTYPE_Q6_K;
}
/* Weights per block: 32 or 256 for a block dtype, 1 for any other. */
static inline int ggml_block_size(int dtype) {
    return !ggml_is_block_dtype(dtype) ? 1 : ggml_is_k_dtype(dtype) ? kGgmlQKK : kGgmlQK;
}
/* Bytes per block of a block dtype; for the element dtypes (F32, F16, BF16, FP8, Maya's Q8 without
 * its scales) the bytes per weight; 0 for any other code. */
static inline int ggml_block_bytes(int dtype) {
    switch (dtype) {
    case ENG_WEIGHT_DTYPE_F32: return 4;
    case ENG_WEIGHT_DTYPE_F16:
    case ENG_WEIGHT_DTYPE_BF16: return 2;
    case ENG_WEIGHT_DTYPE_FP8:
    case ENG_WEIGHT_DTYPE_Q8: return 1;
    case ENG_WEIGHT_DTYPE_Q8_0: return 34;
    case ENG_WEIGHT_DTYPE_Q4_0: return 18;
    case ENG_WEIGHT_DTYPE_Q4_1: return 20;
    case ENG_WEIGHT_DTYPE_Q5_0: return 22;
    case ENG_WEIGHT_DTYPE_Q5_1: return 24;
    case ENG_WEIGHT_DTYPE_Q4_K: return 144;
    case ENG_WEIGHT_DTYPE_Q5_K: return 176;
    case ENG_WEIGHT_DTYPE_Q6_K: return 210;
    default: return 0;
    }
}
/* Bytes of one row of K weights, or 0 when K is not a multiple of the block size (or the code is
 * unknown). Maya's Q8 and FP8 scales are stored apart and not counted. */
static inline int64_t ggml_row_bytes(int dtype, int64_t K) {
    int64_t bs = ggml_block_size(dtype);
    if (K < 0 || K % bs != 0) return 0;
    return K / bs * ggml_block_bytes(dtype);
}

} // namespace maya

#endif
