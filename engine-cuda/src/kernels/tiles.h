/* kernels/tiles.h: the f32 / bf16 / f16 matmul: register tiles of rows x tokens over K, the
 * cached and streaming orders of a row block, and where widening a row block into f32 scratch
 * first pays.
 */
#ifndef MAYA_KERNELS_TILES_H
#define MAYA_KERNELS_TILES_H

#include "base.h" // defines: vecw, TILE_NT, load1

namespace maya {
namespace KERNELS_NS {

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
static void rows_all_tokens(const float *x, int ldx, int T, const void *w, int K, int r0, int r1, float *y, int ldy,
                            const float *bias, int64_t wrow0, Prefetch *pf = nullptr) {
#define ROWS_TILE(NT) \
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

} // namespace KERNELS_NS
} // namespace maya

#endif
