/* ggml_quants.h: quantizers to the GGUF block formats (kernels/ggml_blocks.h), for
 * MAYA_WEIGHT_DTYPE=q4_k_m (a Q4_K_M mixture built at load from safetensors).
 *
 * The method is llama.cpp's reference quantizers without an importance matrix (ggml/src/ggml-quants.c:
 * quantize_row_q8_0_ref, q4_0_ref, q5_0_ref, q4_K_ref with make_qkx2_quants, q6_K_ref with
 * make_qx_quants), re-implemented here from their published algorithm; given the same f32 input
 * they produce the blocks llama-quantize writes (test_ggml.cpp checks this on the fixtures; see
 * there for where f32 rounding can make a block differ).
 */
#ifndef MAYA_GGML_QUANTS_H
#define MAYA_GGML_QUANTS_H

#include <stdint.h>

namespace maya {

/* IEEE half bits of x, rounded to nearest even (as F16C's vcvtps2ph with rounding mode 0). */
uint16_t f32_to_f16(float x);

/* True for the block dtypes ggml_quantize_row writes (DT_Q8_0, DT_Q4_0, DT_Q5_0, DT_Q4_K, DT_Q6_K). */
bool ggml_can_quantize(int dtype);
/* x[0..K) -> one row of dtype blocks at dst (ggml_row_bytes(dtype, K) bytes); K a multiple of the
 * block. */
void ggml_quantize_row(int dtype, const float *x, int64_t K, void *dst);

/* A (rows, cols) matrix stored as F32, F16 or BF16 (ENG_WEIGHT_DTYPE_*) to rows of dtype blocks at
 * dst (rows * ggml_row_bytes(dtype, cols) bytes), each row widened to f32 then ggml_quantize_row;
 * rows split over up to n_threads threads (the same bytes whatever the count). */
void ggml_quantize_matrix(int dtype, const void *src, int src_dtype, int64_t rows, int64_t cols, void *dst,
                          int n_threads);

} // namespace maya

#endif
