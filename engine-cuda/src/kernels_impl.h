/* kernels_impl.h: the kernel table, included once per instruction set (see kernels.h).
 *
 * The includer defines KERNELS_NS (namespace) and KERNELS_TABLE (table name) and sets the
 * instruction set with its compiler flags; the bodies live in kernels/, one file per concern:
 *   base.h         instruction-set switches, dtype codes, scalar widening, the vector type vecw
 *   tiles.h        f32 / bf16 / f16 matmul register tiles and row orders
 *   fp8.h          FP8 e4m3 widening, block-scaled tiles and matmuls
 *   q8.h           8-bit weights: activation quantization, integer block dots, Q8 matmuls
 *   ggml.h         GGUF block dtypes: dequantization as ggml's (ggml_blocks.h: the layouts)
 *   ggml_dot.h     GGUF block dtypes: quantized activations, integer block dots, matmuls
 *   matmul.h       Kernels::matmul and row_to_f32 over any dtype
 *   elementwise.h  dot, axpy, scale, RMSNorm, SiLU * up
 *   attention.h    softmax, attention scores and sums, MLA's rows_accum / row_dot
 *   kv.h           the KV cache's row formats (f32, bf16, f16, q8_0): store and widen
 * Only intrinsics and C headers are used there, so no inline function of a shared header is
 * compiled with two different instruction sets (the one-definition-rule hazard of multi-ISA builds).
 */
#include "kernels/attention.h"
#include "kernels/base.h"
#include "kernels/elementwise.h"
#include "kernels/fp8.h"
#include "kernels/ggml.h"
#include "kernels/ggml_dot.h"
#include "kernels/kv.h"
#include "kernels/matmul.h"
#include "kernels/q8.h"
#include "kernels/tiles.h"

namespace maya {

extern const Kernels KERNELS_TABLE;
const Kernels KERNELS_TABLE = {
#if defined(KERNELS_AVX512)
    "avx512",
    ENG_SIMD_AVX512,
#elif defined(KERNELS_VECTOR)
    "avx2",
    ENG_SIMD_AVX2,
#else
    "scalar",
    ENG_SIMD_SCALAR,
#endif
    KERNELS_NS::matmul,
    KERNELS_NS::dot,
    KERNELS_NS::axpy,
    KERNELS_NS::scale,
    KERNELS_NS::rmsnorm,
    KERNELS_NS::silu_mul,
    KERNELS_NS::softmax,
    KERNELS_NS::row_to_f32,
    KERNELS_NS::attn_scores,
    KERNELS_NS::attn_accum,
    KERNELS_NS::quantize_q8,
    KERNELS_NS::matmul_q8_pre,
    KERNELS_NS::quantize_q8k,
    KERNELS_NS::matmul_ggml_pre,
#ifdef F8_BITS
    KERNELS_NS::F8_X_SCALE,
#else
    1.0f,
#endif
    KERNELS_NS::matmul_f8x,
    KERNELS_NS::rows_accum,
    KERNELS_NS::row_dot,
    KERNELS_NS::kv_store,
    KERNELS_NS::kv_to_f32,
};

} // namespace maya
