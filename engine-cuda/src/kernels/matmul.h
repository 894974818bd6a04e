/* kernels/matmul.h: Kernels::matmul and row_to_f32 over a matrix of any dtype: FP8, Q8 and the GGUF
 * block dtypes go to their files; f32 / bf16 / f16 choose between the register tiles and a widened copy of the row
 * block.
 */
#ifndef MAYA_KERNELS_MATMUL_H
#define MAYA_KERNELS_MATMUL_H

#include "base.h"     // defines: vecw, load1
#include "fp8.h"      // defines: f8_row_to_f32, matmul_f8
#include "ggml.h"     // defines: is_ggml, ggml_row_to_f32
#include "ggml_dot.h" // defines: matmul_ggml
#include "q8.h"       // defines: q8_row_to_f32, matmul_q8
#include "tiles.h"    // defines: rows_all_tokens, rows_streaming, Prefetch

namespace maya {
namespace KERNELS_NS {

static void row_to_f32(float *out, const void *w, int dtype, int64_t row, int n, const float *wscale) {
    if (dtype == F8) {
        f8_row_to_f32(out, (const uint8_t *)w, wscale, row, n);
        return;
    }
    if (dtype == Q8) {
        q8_row_to_f32(out, (const int8_t *)w, wscale, row, n);
        return;
    }
    if (is_ggml(dtype)) {
        ggml_row_to_f32(out, w, dtype, row, n);
        return;
    }
    int64_t base = row * n;
    if (dtype == F32) {
        memcpy(out, (const float *)w + base, (size_t)n * 4);
        return;
    }
    int i = 0;
#ifdef KERNELS_VECTOR
    for (; i + VW <= n; i += VW) vw_store(out + i, vw_loadw(w, base + i, dtype));
#endif
    if (dtype == BF16)
        for (; i < n; i++) out[i] = load1<BF16>(w, base + i);
    else
        for (; i < n; i++) out[i] = load1<F16>(w, base + i);
}

/* Few tokens (decode): stream W once, widening in registers. Many tokens (prefill): widen the
 * row block once into scratch and run the f32 tiles over every token from L2.
 * is_streaming: W comes from DRAM (the model does not fit the caches). Then rows are read one at a
 * time: on the Zen 5 box, 4 interleaved row streams read 6.6-7.7 GB/s per core against 15-17 GB/s
 * for one (bf16, K = 768; the hardware prefetcher follows one stream far better). From cache, 4 rows
 * at a time are faster (41 vs 22 GB/s at T = 1). Each (row, token) sums in the same order either
 * way, so results are bit-identical. */
static void matmul(const float *x, int ldx, int T, const void *w, int dtype, int K, int r0, int r1, float *y, int ldy,
                   const float *bias, float *scratch, bool is_streaming, const float *wscale) {
    if (dtype == F8 || dtype == F8_FINITE) { // the same sums: F8_FINITE only skips the NaN fix-up
        if (dtype == F8)
            matmul_f8<false>(x, ldx, T, (const uint8_t *)w, wscale, K, r0, r1, y, ldy, bias, is_streaming, scratch);
        else matmul_f8<true>(x, ldx, T, (const uint8_t *)w, wscale, K, r0, r1, y, ldy, bias, is_streaming, scratch);
        return;
    }
    if (dtype == Q8) {
        matmul_q8(x, ldx, T, (const int8_t *)w, wscale, K, r0, r1, y, ldy, bias, scratch, is_streaming);
        return;
    }
    if (is_ggml(dtype)) { // quantized activations, integer block dots (ggml_dot.h)
        matmul_ggml(x, ldx, T, w, dtype, K, r0, r1, y, ldy, bias, scratch, is_streaming);
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

} // namespace KERNELS_NS
} // namespace maya

#endif
