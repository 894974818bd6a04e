/* kernels/ggml_dot.h: matmuls over the GGUF block dtypes with the weights in their file format:
 * activations quantized to 8 bits, exact integer dot products per block, the block terms summed in
 * f32 (the method of llama.cpp's ggml_vec_dot_*_q8_* in ggml-cpu; written here from the block
 * formats).
 *
 * Activations: for the 32-weight blocks (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) the Q8 path's quantize_q8
 * (int8 per 32 with d = max|x| / 127, round to even: "A32"), so a matrix of these shares its
 * quantized input with Q8 and with every other 32-block matrix; for the K-quants (Q4_K, Q5_K,
 * Q6_K) quantize_q8k: the same rule per 256 (one d per 256) plus the sums of each 16 quants
 * (bsums), as llama.cpp's Q8_K ("A256").
 *
 * Per block, with the weights' integer quants q, the activations' qx and scales d / dx:
 *   Q4_0 / Q5_0 / Q8_0: (float)sum((q - off) qx) * (d dx)                 off 8 / 16 / 0
 *   Q4_1 / Q5_1:        (float)sum(q qx) * (d dx) + (float)sum(qx) * (m dx)
 *   Q4_K / Q5_K:        (float)sum_j sc_j sum_j(q qx) * (d dx) + (float)sum_j m_j bsum_j * (-dmin dx)
 *   Q6_K:               (float)sum_j sc_j (sum_j(q qx) - 32 bsum_j) * (d dx)
 * (j: the sub-blocks). The integer sums are exact on every path; the vector paths split them over
 * 8 int32 lanes, convert each lane and accumulate the lanes in f32 over the blocks, summing the
 * lanes at the end; the scalar path converts whole sums and adds block by block. Results of the
 * paths therefore differ by f32 rounding only (the bound in test_ggml.cpp), and within one path a
 * (row, token) result has the same bits whatever the tile or batch.
 */
#ifndef MAYA_KERNELS_GGML_DOT_H
#define MAYA_KERNELS_GGML_DOT_H

#include "base.h" // defines: hsum, f16_scalar
#include "ggml.h" // defines: Q8_0.., k4_scale_min, ggml_block_quants
#include "q8.h"   // defines: quantize_q8

namespace maya {
namespace KERNELS_NS {

static inline float gg_f16(uint16_t h) {
#ifdef KERNELS_VECTOR
    return _cvtsh_ss(h);
#else
    return f16_scalar(h);
#endif
}

/* x[0..K) -> q[0..K) int8, d[0..K/256) and bsums[0..K/16) (sums of 16 consecutive q); K a
 * multiple of 256. Per 256: d = max|x| / 127, q = round-to-even(x * 127 / max|x|). */
static void quantize_q8k(const float *x, int K, int8_t *q, float *d, int16_t *bsums) {
    for (int b = 0; b < K / 256; b++) {
        const float *xb = x + b * 256;
        int8_t *qb = q + b * 256;
        float amax = 0;
#ifdef KERNELS_VECTOR
        {
            const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
            __m256 mx = _mm256_setzero_ps();
            for (int i = 0; i < 256; i += 8) mx = _mm256_max_ps(mx, _mm256_and_ps(_mm256_loadu_ps(xb + i), absmask));
            __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
            m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
            amax = _mm_cvtss_f32(m4);
        }
        float id = amax > 0 ? 127.0f / amax : 0.0f;
        __m256 iv = _mm256_set1_ps(id);
        for (int i = 0; i < 256; i += 32) {
            __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + i), iv));
            __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + i + 8), iv));
            __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + i + 16), iv));
            __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + i + 24), iv));
            __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
            bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256((__m256i *)(qb + i), bytes);
        }
#else
        for (int i = 0; i < 256; i++) amax = fabsf(xb[i]) > amax ? fabsf(xb[i]) : amax;
        float id = amax > 0 ? 127.0f / amax : 0.0f;
        for (int i = 0; i < 256; i++) { // round to nearest even, as cvtps (|v| <= 127)
            float r = xb[i] * id + 12582912.0f;
            qb[i] = (int8_t)(int)(r - 12582912.0f);
        }
#endif
        d[b] = amax / 127.0f;
        for (int j = 0; j < 16; j++) {
            int s = 0;
            for (int i = 0; i < 16; i++) s += qb[16 * j + i];
            bsums[b * 16 + j] = (int16_t)s;
        }
    }
}

#ifdef KERNELS_VECTOR
#if defined(KERNELS_AVX512) && defined(__AVX512VNNI__)
#define GG_VNNI 1
#endif

/* acc + the 4-byte group sums of u * s (u unsigned bytes, s signed; pair sums must fit int16
 * without VNNI: |u| <= 63 here, or Q8_0's |w| <= 128 through the sign trick). */
static inline __m256i gg_dot_u8s8(__m256i acc, __m256i u, __m256i s) {
#ifdef GG_VNNI
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}
/* acc + the pair sums of a * b (int16 lanes). */
static inline __m256i gg_madd_acc(__m256i acc, __m256i a, __m256i b) {
#ifdef GG_VNNI
    return _mm256_dpwssd_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}
/* Byte i = 0x10 where bit i of the 32-bit little-endian qh is set, else 0. */
static inline __m256i gg_bits_0x10(const uint8_t *qh8) {
    uint32_t qh;
    memcpy(&qh, qh8, 4);
#ifdef KERNELS_AVX512
    return _mm256_maskz_mov_epi8((__mmask32)qh, _mm256_set1_epi8(0x10));
#else
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh),
                                    _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL,
                                                       0x0303030303030303LL)); // byte i: byte i / 8 of qh
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);  // byte i: bit i % 8
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), _mm256_set1_epi8(0x10));
#endif
}

/* ---- 32-weight blocks ---- */

/* One row's block: the 32 quants as unsigned bytes (Q8_0: the signed bytes; with VNNI, plus 128),
 * d and the min. */
template <int DT> static KERNELS_INLINE void gg_unpack32(const uint8_t *blk, __m256i *u, float *d, float *m) {
    const __m256i lo4 = _mm256_set1_epi8(0x0F);
    if (DT == Q8_0) {
        __m256i w = _mm256_loadu_si256((const __m256i *)(blk + 2));
#ifdef GG_VNNI
        w = _mm256_xor_si256(w, _mm256_set1_epi8((char)0x80));
#endif
        *u = w;
        *d = gg_f16(((const BlockQ8_0 *)blk)->d);
        *m = 0;
        return;
    }
    const uint8_t *qs = DT == Q4_0 ? blk + 2 : DT == Q4_1 ? blk + 4 : DT == Q5_0 ? blk + 6 : blk + 8;
    __m128i q = _mm_loadu_si128((const __m128i *)qs);
    __m256i v = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), lo4);
    if (DT == Q5_0) v = _mm256_or_si256(v, gg_bits_0x10(blk + 2));
    if (DT == Q5_1) v = _mm256_or_si256(v, gg_bits_0x10(blk + 4));
    *u = v;
    *d = gg_f16(*(const uint16_t *)blk);
    *m = DT == Q4_1 || DT == Q5_1 ? gg_f16(((const uint16_t *)blk)[1]) : 0.0f;
}

/* out[r][t]: NR rows (from row0) x NT tokens of a 32-block matrix over A32 activations. */
template <int DT, int NR, int NT>
static KERNELS_INLINE void gg_tile32(const int8_t *xq, const float *xd, int ldq, const uint8_t *w, int64_t row_bytes,
                                     int64_t row0, int K, float (*out)[NT]) {
    const int BB = DT == Q8_0 ? 34 : DT == Q4_0 ? 18 : DT == Q4_1 ? 20 : DT == Q5_0 ? 22 : 24;
    const int off = DT == Q4_0 ? 8 : DT == Q5_0 ? 16 : 0;
    const bool has_min = DT == Q4_1 || DT == Q5_1;
    int nb = K / 32, ldd = ldq / 32;
    // Two f32 accumulators per (row, token), so consecutive blocks do not wait on one fma chain:
    // with a min, the scaled quants and the min terms; else even and odd blocks. Summed at the end.
    __m256 tot[NR][NT], tot2[NR][NT];
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) tot[r][t] = tot2[r][t] = _mm256_setzero_ps();
    auto block = [&](int b, __m256(&A)[NR][NT]) KERNELS_INLINE_LAMBDA {
        __m256i u[NR];
        float dw[NR], mw[NR];
        for (int r = 0; r < NR; r++)
            gg_unpack32<DT>(w + (row0 + r) * row_bytes + (int64_t)b * BB, &u[r], &dw[r], &mw[r]);
        for (int t = 0; t < NT; t++) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(xq + (int64_t)t * ldq + b * 32));
            float dx = xd[(int64_t)t * ldd + b];
            __m256i corr = _mm256_setzero_si256(), gs = _mm256_setzero_si256();
            // Group sums of x (4 bytes per lane) where an offset or a min needs them.
            bool need_gs = off != 0 || has_min;
#ifdef GG_VNNI
            if (DT == Q8_0) need_gs = true; // (w + 128) x - 128 x
#endif
            if (need_gs) gs = gg_dot_u8s8(_mm256_setzero_si256(), _mm256_set1_epi8(1), x);
#ifdef GG_VNNI
            if (DT == Q8_0) corr = _mm256_sub_epi32(corr, _mm256_slli_epi32(gs, 7));
#endif
            if (off == 8) corr = _mm256_sub_epi32(corr, _mm256_slli_epi32(gs, 3));
            if (off == 16) corr = _mm256_sub_epi32(corr, _mm256_slli_epi32(gs, 4));
            __m256 gsf = has_min ? _mm256_cvtepi32_ps(gs) : _mm256_setzero_ps();
            for (int r = 0; r < NR; r++) {
                __m256i p;
#ifndef GG_VNNI
                if (DT == Q8_0) // the sign trick: |w| times x with w's sign (pair sums within int16)
                    p = gg_dot_u8s8(corr, _mm256_sign_epi8(u[r], u[r]), _mm256_sign_epi8(x, u[r]));
                else
#endif
                    p = gg_dot_u8s8(corr, u[r], x);
                A[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw[r] * dx), A[r][t]);
                if (has_min) tot2[r][t] = _mm256_fmadd_ps(gsf, _mm256_set1_ps(mw[r] * dx), tot2[r][t]);
            }
        }
    };
    int b = 0;
    for (; b + 2 <= nb; b += 2) {
        block(b, tot);
        if (has_min) block(b + 1, tot);
        else block(b + 1, tot2);
    }
    if (b < nb) block(b, tot);
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) out[r][t] = hsum(_mm256_add_ps(tot[r][t], tot2[r][t]));
}

/* ---- K-quants (256-weight blocks) ---- */

/* One row's K-quant block, prepared for its 8 vectors of 32 weights. */
struct GgKRow {
    const uint8_t *blk;
    float d, dmin;
    __m256i sc;   // Q4_K / Q5_K: the 8 scales as int16 in both 128-bit lanes; Q6_K: the 16 scales as int16
    __m256i mins; // Q4_K / Q5_K: the 8 mins as int16, each twice (m0 m0 m1 m1 ..)
};

template <int DT> static KERNELS_INLINE void gg_kprep(const uint8_t *blk, GgKRow *p) {
    p->blk = blk;
    if (DT == Q6_K) {
        const BlockQ6_K *b = (const BlockQ6_K *)blk;
        p->d = gg_f16(b->d);
        p->dmin = 0;
        p->sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b->scales));
        p->mins = _mm256_setzero_si256();
        return;
    }
    const uint16_t *h = (const uint16_t *)blk;
    p->d = gg_f16(h[0]);
    p->dmin = gg_f16(h[1]);
    // The 12 packed bytes to 8 scales then 8 mins (ggml_blocks.h's packing, four at a time).
    uint32_t a[3], o[4];
    memcpy(a, blk + 4, 12);
    o[0] = a[0] & 0x3F3F3F3Fu;                                             // sc0..3
    o[1] = (a[2] & 0x0F0F0F0Fu) | ((a[0] >> 6) & 0x03030303u) << 4;        // sc4..7
    o[2] = a[1] & 0x3F3F3F3Fu;                                             // m0..3
    o[3] = ((a[2] >> 4) & 0x0F0F0F0Fu) | ((a[1] >> 6) & 0x03030303u) << 4; // m4..7
    __m128i sm = _mm_loadu_si128((const __m128i *)o);
    p->sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    p->mins = _mm256_cvtepu8_epi16(
        _mm_shuffle_epi8(sm, _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15)));
}

/* Vector v (weights 32v .. 32v + 32 of the block): the quants as unsigned bytes, and the int16
 * scale of each maddubs pair. */
template <int DT> static KERNELS_INLINE void gg_kvec(const GgKRow &p, int v, __m256i *u, __m256i *s) {
    const __m256i lo4 = _mm256_set1_epi8(0x0F);
    if (DT == Q6_K) {
        const BlockQ6_K *b = (const BlockQ6_K *)p.blk;
        int hf = v >> 2, k = v & 3;
        __m256i L = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * hf + 32 * (k & 1)));
        __m256i H = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * hf));
        const __m256i m30 = _mm256_set1_epi8(0x30);
        __m256i lo = k < 2 ? _mm256_and_si256(L, lo4) : _mm256_and_si256(_mm256_srli_epi16(L, 4), lo4);
        __m256i hi = k == 0   ? _mm256_and_si256(_mm256_slli_epi16(H, 4), m30)
                     : k == 1 ? _mm256_and_si256(_mm256_slli_epi16(H, 2), m30)
                     : k == 2 ? _mm256_and_si256(H, m30)
                              : _mm256_and_si256(_mm256_srli_epi16(H, 2), m30);
        *u = _mm256_or_si256(lo, hi);
        // scales 2v (low lane) and 2v + 1 (high lane): both in 128-bit lane hf of p.sc
        __m256i half = hf ? _mm256_permute2x128_si256(p.sc, p.sc, 0x11) : _mm256_permute2x128_si256(p.sc, p.sc, 0x00);
        // int16 element 2k in the low lane, 2k + 1 in the high lane (one broadcast pattern each)
        __m256i pat = _mm256_add_epi16(
            _mm256_set1_epi16((short)(((4 * k + 1) << 8) | (4 * k))),
            _mm256_setr_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0x0202, 0x0202, 0x0202, 0x0202, 0x0202, 0x0202, 0x0202, 0x0202));
        *s = _mm256_shuffle_epi8(half, pat);
        return;
    }
    const uint8_t *qs = DT == Q4_K ? ((const BlockQ4_K *)p.blk)->qs : ((const BlockQ5_K *)p.blk)->qs;
    __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * (v >> 1)));
    __m256i nib = v & 1 ? _mm256_and_si256(_mm256_srli_epi16(q, 4), lo4) : _mm256_and_si256(q, lo4);
    if (DT == Q5_K) {
        __m256i H = _mm256_loadu_si256((const __m256i *)((const BlockQ5_K *)p.blk)->qh);
        const __m256i m10 = _mm256_set1_epi8(0x10);
        __m256i hb = v <= 4 ? _mm256_slli_epi16(H, 4 - v) : _mm256_srli_epi16(H, v - 4); // bit v to bit 4
        nib = _mm256_or_si256(nib, _mm256_and_si256(hb, m10));
    }
    *u = nib;
    char a = (char)(2 * v);
    *s = _mm256_shuffle_epi8(p.sc, _mm256_set1_epi16((short)(((a + 1) << 8) | a)));
}

/* out[r][t]: NR rows x NT tokens of a K-quant matrix over A256 activations (xq (NT, ldq) bytes,
 * xd (NT, ldq / 256), xbs (NT, ldq / 16)). */
template <int DT, int NR, int NT>
static KERNELS_INLINE void gg_tilek(const int8_t *xq, const float *xd, const int16_t *xbs, int ldq, const uint8_t *w,
                                    int64_t row_bytes, int64_t row0, int K, float (*out)[NT]) {
    const int BB = DT == Q4_K ? 144 : DT == Q5_K ? 176 : 210;
    int nb = K / 256, ldd = ldq / 256, ldb = ldq / 16;
    __m256 tot[NR][NT];
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) tot[r][t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        GgKRow p[NR];
        for (int r = 0; r < NR; r++) gg_kprep<DT>(w + (row0 + r) * row_bytes + (int64_t)b * BB, &p[r]);
        // Small tiles (decode) keep two integer sums per pair (even and odd vectors) so the multiply-
        // adds do not wait on each other; integer sums, so the same bits either way.
        const bool dual = NR * NT <= 2;
        __m256i acc[NR][NT], acc2[NR][NT];
        for (int r = 0; r < NR; r++)
            for (int t = 0; t < NT; t++) acc[r][t] = acc2[r][t] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int v = 0; v < 8; v++)
            for (int r = 0; r < NR; r++) {
                __m256i u, s;
                gg_kvec<DT>(p[r], v, &u, &s);
                for (int t = 0; t < NT; t++) {
                    __m256i x = _mm256_loadu_si256((const __m256i *)(xq + (int64_t)t * ldq + b * 256 + 32 * v));
                    if (dual && (v & 1)) acc2[r][t] = gg_madd_acc(acc2[r][t], _mm256_maddubs_epi16(u, x), s);
                    else acc[r][t] = gg_madd_acc(acc[r][t], _mm256_maddubs_epi16(u, x), s);
                }
            }
        if (dual)
            for (int r = 0; r < NR; r++)
                for (int t = 0; t < NT; t++) acc[r][t] = _mm256_add_epi32(acc[r][t], acc2[r][t]);
        for (int t = 0; t < NT; t++) {
            __m256i bs = _mm256_loadu_si256((const __m256i *)(xbs + (int64_t)t * ldb + b * 16));
            float dx = xd[(int64_t)t * ldd + b];
            for (int r = 0; r < NR; r++) {
                if (DT == Q6_K) {
                    __m256i a = _mm256_sub_epi32(acc[r][t], _mm256_slli_epi32(_mm256_madd_epi16(bs, p[r].sc), 5));
                    tot[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a), _mm256_set1_ps(p[r].d * dx), tot[r][t]);
                } else {
                    tot[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][t]), _mm256_set1_ps(p[r].d * dx), tot[r][t]);
                    tot[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bs, p[r].mins)),
                                                _mm256_set1_ps(-(p[r].dmin * dx)), tot[r][t]);
                }
            }
        }
    }
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) out[r][t] = hsum(tot[r][t]);
}

#ifdef KERNELS_AVX512
/* ---- K-quants, 512-bit (the avx512 table) ----
 * One vector is 64 consecutive weights of a block, so the activations load as they lie. Q4_K /
 * Q5_K: 32 quant bytes broadcast to both 256-bit halves, the upper half shifted by 4 (the high
 * nibbles, sub-block 2c + 1) and masked; Q6_K: 64 low-nibble bytes and 32 high-bit bytes broadcast,
 * shifted per half. Each 16-bit pair sum of maddubs (|u| <= 63 times |x| <= 127: fits int16) is
 * multiplied by its sub-block's scale into int32 (vpdpwssd with VNNI), exact as on the other paths;
 * the two halves are folded into 8 lanes once per block and the block terms are then the 256-bit
 * path's, the same formulas. */
static inline __m512i gg_madd_acc512(__m512i acc, __m512i a, __m512i b) {
#ifdef GG_VNNI
    return _mm512_dpwssd_epi32(acc, a, b);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

/* ---- 32-weight blocks, 512-bit: two blocks per vector (lanes 0-7 block b, 8-15 block b + 1), as
 * the Q8 path's tile ---- */

/* Blocks b and b + 1 of one row: the quants as unsigned bytes (as gg_unpack32), d and the min in
 * the lanes of each block. */
template <int DT> static KERNELS_INLINE void gg_unpack32x2(const uint8_t *blk, __m512i *u, __m512 *d, __m512 *m) {
    const int BB = DT == Q8_0 ? 34 : DT == Q4_0 ? 18 : DT == Q4_1 ? 20 : DT == Q5_0 ? 22 : 24;
    const uint8_t *b1 = blk + BB;
    if (DT == Q8_0) {
        __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(blk + 2))),
                                       _mm256_loadu_si256((const __m256i *)(b1 + 2)), 1);
#ifdef GG_VNNI
        w = _mm512_xor_si512(w, _mm512_set1_epi8((char)0x80));
#endif
        *u = w;
    } else {
        const int qo = DT == Q4_0 ? 2 : DT == Q4_1 ? 4 : DT == Q5_0 ? 6 : 8;
        __m256i two =
            _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(b1 + qo)), _mm_loadu_si128((const __m128i *)(blk + qo)));
        // [qs_b, qs_b, qs_b1, qs_b1], the second copy of each shifted to its high nibbles
        __m512i q = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), _mm512_castsi256_si512(two));
        __m512i v =
            _mm512_and_si512(_mm512_srlv_epi64(q, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4)), _mm512_set1_epi8(0x0F));
        if (DT == Q5_0 || DT == Q5_1) {
            uint32_t h0, h1;
            memcpy(&h0, blk + (DT == Q5_0 ? 2 : 4), 4);
            memcpy(&h1, b1 + (DT == Q5_0 ? 2 : 4), 4);
            v = _mm512_or_si512(v, _mm512_maskz_mov_epi8((__mmask64)h0 | (__mmask64)h1 << 32, _mm512_set1_epi8(0x10)));
        }
        *u = v;
    }
    *d = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(gg_f16(*(const uint16_t *)blk)),
                              _mm512_set1_ps(gg_f16(*(const uint16_t *)b1)));
    if (DT == Q4_1 || DT == Q5_1)
        *m = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(gg_f16(((const uint16_t *)blk)[1])),
                                  _mm512_set1_ps(gg_f16(((const uint16_t *)b1)[1])));
    else *m = _mm512_setzero_ps();
}

/* gg_tile32 on 512-bit vectors: the same integer block sums; the f32 terms of even blocks in lanes
 * 0-7 and odd blocks in lanes 8-15 (an odd last block alone in lanes 0-7). */
template <int DT, int NR, int NT>
static KERNELS_INLINE void gg_tile32x2(const int8_t *xq, const float *xd, int ldq, const uint8_t *w, int64_t row_bytes,
                                       int64_t row0, int K, float (*out)[NT]) {
    const int BB = DT == Q8_0 ? 34 : DT == Q4_0 ? 18 : DT == Q4_1 ? 20 : DT == Q5_0 ? 22 : 24;
    const int off = DT == Q4_0 ? 8 : DT == Q5_0 ? 16 : 0;
    const bool has_min = DT == Q4_1 || DT == Q5_1;
    int nb = K / 32, ldd = ldq / 32;
    // With a min, the min terms go to tot2. One accumulator otherwise, whatever the tile (so a
    // (row, token) sums in the same order in any tile: batch invariance).
    const bool dual = has_min;
    __m512 tot[NR][NT], tot2[dual ? NR : 1][dual ? NT : 1];
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) tot[r][t] = _mm512_setzero_ps();
    for (int r = 0; r < (dual ? NR : 1); r++)
        for (int t = 0; t < (dual ? NT : 1); t++) tot2[r][t] = _mm512_setzero_ps();
    const __m512i ones = _mm512_set1_epi8(1);
    int b = 0;
    for (; b + 2 <= nb; b += 2) {
        __m512i u[NR];
        __m512 dw[NR], mw[NR];
        for (int r = 0; r < NR; r++)
            gg_unpack32x2<DT>(w + (row0 + r) * row_bytes + (int64_t)b * BB, &u[r], &dw[r], &mw[r]);
        for (int t = 0; t < NT; t++) {
            __m512i x = _mm512_loadu_si512((const void *)(xq + (int64_t)t * ldq + b * 32));
            __m512 dx = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(xd[(int64_t)t * ldd + b]),
                                             _mm512_set1_ps(xd[(int64_t)t * ldd + b + 1]));
            __m512i corr = _mm512_setzero_si512(), gs = _mm512_setzero_si512();
            bool need_gs = off != 0 || has_min;
#ifdef GG_VNNI
            if (DT == Q8_0) need_gs = true;
#endif
            if (need_gs) {
#ifdef GG_VNNI
                gs = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, x);
#else
                gs = _mm512_madd_epi16(_mm512_maddubs_epi16(ones, x), _mm512_set1_epi16(1));
#endif
            }
#ifdef GG_VNNI
            if (DT == Q8_0) corr = _mm512_sub_epi32(corr, _mm512_slli_epi32(gs, 7));
#endif
            if (off == 8) corr = _mm512_sub_epi32(corr, _mm512_slli_epi32(gs, 3));
            if (off == 16) corr = _mm512_sub_epi32(corr, _mm512_slli_epi32(gs, 4));
            __m512 gsf = has_min ? _mm512_cvtepi32_ps(gs) : _mm512_setzero_ps();
            for (int r = 0; r < NR; r++) {
                __m512i p;
#ifdef GG_VNNI
                p = _mm512_dpbusd_epi32(corr, u[r], x);
#else
                if (DT == Q8_0) { // |w| times x with w's sign: pair sums within int16
                    __m512i aw = _mm512_abs_epi8(u[r]);
                    __m512i sx = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(u[r]), _mm512_setzero_si512(), x);
                    p = _mm512_add_epi32(corr, _mm512_madd_epi16(_mm512_maddubs_epi16(aw, sx), _mm512_set1_epi16(1)));
                } else
                    p = _mm512_add_epi32(corr, _mm512_madd_epi16(_mm512_maddubs_epi16(u[r], x), _mm512_set1_epi16(1)));
#endif
                __m512 pf = _mm512_cvtepi32_ps(p), sc = _mm512_mul_ps(dw[r], dx);
                tot[r][t] = _mm512_fmadd_ps(pf, sc, tot[r][t]);
                if (has_min)
                    tot2[dual ? r : 0][dual ? t : 0] =
                        _mm512_fmadd_ps(gsf, _mm512_mul_ps(mw[r], dx), tot2[dual ? r : 0][dual ? t : 0]);
            }
        }
    }
    if (b < nb) { // an odd last block in lanes 0-7 (the upper half of its pair zeroed)
        for (int r = 0; r < NR; r++) {
            __m256i u;
            float d, m;
            gg_unpack32<DT>(w + (row0 + r) * row_bytes + (int64_t)b * BB, &u, &d, &m);
            for (int t = 0; t < NT; t++) {
                __m256i x = _mm256_loadu_si256((const __m256i *)(xq + (int64_t)t * ldq + b * 32));
                float dx = xd[(int64_t)t * ldd + b];
                __m256i corr = _mm256_setzero_si256(), gs = _mm256_setzero_si256();
                bool need_gs = off != 0 || has_min;
#ifdef GG_VNNI
                if (DT == Q8_0) need_gs = true;
#endif
                if (need_gs) gs = gg_dot_u8s8(_mm256_setzero_si256(), _mm256_set1_epi8(1), x);
#ifdef GG_VNNI
                if (DT == Q8_0) corr = _mm256_sub_epi32(corr, _mm256_slli_epi32(gs, 7));
#endif
                if (off == 8) corr = _mm256_sub_epi32(corr, _mm256_slli_epi32(gs, 3));
                if (off == 16) corr = _mm256_sub_epi32(corr, _mm256_slli_epi32(gs, 4));
                __m256i p;
#ifndef GG_VNNI
                if (DT == Q8_0) p = gg_dot_u8s8(corr, _mm256_sign_epi8(u, u), _mm256_sign_epi8(x, u));
                else
#endif
                    p = gg_dot_u8s8(corr, u, x);
                __m512 pf = _mm512_castps256_ps512(_mm256_cvtepi32_ps(p));
                tot[r][t] = _mm512_mask3_fmadd_ps(pf, _mm512_set1_ps(d * dx), tot[r][t], 0xFF);
                if (has_min) {
                    __m512 gsf = _mm512_castps256_ps512(_mm256_cvtepi32_ps(gs));
                    tot2[dual ? r : 0][dual ? t : 0] =
                        _mm512_mask3_fmadd_ps(gsf, _mm512_set1_ps(m * dx), tot2[dual ? r : 0][dual ? t : 0], 0xFF);
                }
            }
        }
    }
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++)
            out[r][t] = _mm512_reduce_add_ps(dual ? _mm512_add_ps(tot[r][t], tot2[r][t]) : tot[r][t]);
}

/* Vector c (weights 64c .. 64c + 64 of the block) of a prepared row: the quants as unsigned bytes
 * and the int16 scale of each maddubs pair. sc512: p.sc broadcast to both halves. */
template <int DT> static KERNELS_INLINE void gg_kvec512(const GgKRow &p, __m512i sc512, int c, __m512i *u, __m512i *s) {
    const __m512i lo4 = _mm512_set1_epi8(0x0F);
    if (DT == Q6_K) {
        const BlockQ6_K *b = (const BlockQ6_K *)p.blk;
        int hf = c >> 1, k = c & 1;
        __m512i L = _mm512_loadu_si512((const void *)(b->ql + 64 * hf));
        __m512i H = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b->qh + 32 * hf)));
        __m512i lo = k ? _mm512_and_si512(_mm512_srli_epi16(L, 4), lo4) : _mm512_and_si512(L, lo4);
        // High bits to bits 4-5: k 0 takes qh bits 0-1 (first half) and 2-3 (second); k 1 bits 4-5 and 6-7.
        __m512i hi = k ? _mm512_srlv_epi64(H, _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2))
                       : _mm512_sllv_epi64(H, _mm512_setr_epi64(4, 4, 4, 4, 2, 2, 2, 2));
        *u = _mm512_or_si512(lo, _mm512_and_si512(hi, _mm512_set1_epi8(0x30)));
        // 128-bit lane i: sub-block 4c + i's scale (16 weights each)
        *s = _mm512_permutexvar_epi16(
            _mm512_add_epi16(_mm512_set1_epi16((short)(4 * c)),
                             _mm512_setr_epi64(0, 0, 0x0001000100010001LL, 0x0001000100010001LL, 0x0002000200020002LL,
                                               0x0002000200020002LL, 0x0003000300030003LL, 0x0003000300030003LL)),
            sc512);
        return;
    }
    const uint8_t *qs = DT == Q4_K ? ((const BlockQ4_K *)p.blk)->qs : ((const BlockQ5_K *)p.blk)->qs;
    __m512i q = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qs + 32 * c)));
    __m512i nib = _mm512_and_si512(_mm512_srlv_epi64(q, _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4)), lo4);
    if (DT == Q5_K) { // bit 2c (first half) or 2c + 1 (second half) of qh[l] adds 16
        __m512i H = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)((const BlockQ5_K *)p.blk)->qh));
        __m512i bit = _mm512_mask_blend_epi64(0xF0, _mm512_set1_epi8((char)(1 << (2 * c))),
                                              _mm512_set1_epi8((char)(1 << (2 * c + 1))));
        nib = _mm512_or_si512(nib, _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(H, bit), _mm512_set1_epi8(0x10)));
    }
    *u = nib;
    // scales 2c (first half) and 2c + 1 (second half): bytes of int16 element 2c / 2c + 1 in each lane
    __m512i idx = _mm512_add_epi8(_mm512_set1_epi16((short)(((4 * c + 1) << 8) | (4 * c))),
                                  _mm512_setr_epi64(0, 0, 0, 0, 0x0202020202020202LL, 0x0202020202020202LL,
                                                    0x0202020202020202LL, 0x0202020202020202LL));
    *s = _mm512_shuffle_epi8(sc512, idx);
}

/* gg_tilek on 512-bit vectors: the same (row, token) results up to the lanes' f32 order. */
template <int DT, int NR, int NT>
static KERNELS_INLINE void gg_tilek512(const int8_t *xq, const float *xd, const int16_t *xbs, int ldq, const uint8_t *w,
                                       int64_t row_bytes, int64_t row0, int K, float (*out)[NT]) {
    const int BB = DT == Q4_K ? 144 : DT == Q5_K ? 176 : 210;
    int nb = K / 256, ldd = ldq / 256, ldb = ldq / 16;
    __m256 tot[NR][NT];
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) tot[r][t] = _mm256_setzero_ps();
    // Small tiles (decode): two integer sums per pair (even and odd vectors), so the multiply-adds
    // do not wait on each other.
    const bool dual = NR * NT <= 2;
    for (int b = 0; b < nb; b++) {
        GgKRow p[NR];
        __m512i sc512[NR];
        for (int r = 0; r < NR; r++) {
            gg_kprep<DT>(w + (row0 + r) * row_bytes + (int64_t)b * BB, &p[r]);
            sc512[r] = _mm512_broadcast_i64x4(p[r].sc);
        }
        __m512i acc[NR][NT], acc2[NR][NT];
        for (int r = 0; r < NR; r++)
            for (int t = 0; t < NT; t++) acc[r][t] = acc2[r][t] = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++)
            for (int r = 0; r < NR; r++) {
                __m512i u, s;
                gg_kvec512<DT>(p[r], sc512[r], c, &u, &s);
                for (int t = 0; t < NT; t++) {
                    __m512i x = _mm512_loadu_si512((const void *)(xq + (int64_t)t * ldq + b * 256 + 64 * c));
                    if (dual && (c & 1)) acc2[r][t] = gg_madd_acc512(acc2[r][t], _mm512_maddubs_epi16(u, x), s);
                    else acc[r][t] = gg_madd_acc512(acc[r][t], _mm512_maddubs_epi16(u, x), s);
                }
            }
        for (int t = 0; t < NT; t++) {
            __m256i bs = _mm256_loadu_si256((const __m256i *)(xbs + (int64_t)t * ldb + b * 16));
            float dx = xd[(int64_t)t * ldd + b];
            for (int r = 0; r < NR; r++) {
                __m512i a512 = dual ? _mm512_add_epi32(acc[r][t], acc2[r][t]) : acc[r][t];
                __m256i a = _mm256_add_epi32(_mm512_castsi512_si256(a512), _mm512_extracti64x4_epi64(a512, 1));
                if (DT == Q6_K) {
                    a = _mm256_sub_epi32(a, _mm256_slli_epi32(_mm256_madd_epi16(bs, p[r].sc), 5));
                    tot[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a), _mm256_set1_ps(p[r].d * dx), tot[r][t]);
                } else {
                    tot[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a), _mm256_set1_ps(p[r].d * dx), tot[r][t]);
                    tot[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bs, p[r].mins)),
                                                _mm256_set1_ps(-(p[r].dmin * dx)), tot[r][t]);
                }
            }
        }
    }
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) out[r][t] = hsum(tot[r][t]);
}
#endif // KERNELS_AVX512
#endif // KERNELS_VECTOR

/* The scalar form of both: integer sums per block, then the formulas of the file comment, block by
 * block. out[r][t] for NR rows x NT tokens (any counts). */
static inline void gg_sums_scalar(int dtype, const int8_t *xq, const float *xd, const int16_t *xbs, int ldq,
                                  const uint8_t *w, int64_t row_bytes, int64_t row0, int NR, int NT, int K, float *out,
                                  int ldo) {
    bool is_k = dtype == Q4_K || dtype == Q5_K || dtype == Q6_K;
    int bs = is_k ? 256 : 32, bb = ggml_block_bytes(dtype), nb = K / bs;
    int off = dtype == Q4_0 ? 8 : dtype == Q5_0 ? 16 : dtype == Q6_K ? 32 : 0;
    for (int r = 0; r < NR; r++) {
        for (int t = 0; t < NT; t++) out[r * ldo + t] = 0;
        for (int b = 0; b < nb; b++) {
            const uint8_t *blk = w + (row0 + r) * row_bytes + (int64_t)b * bb;
            int16_t q[256];
            ggml_block_quants(dtype, blk, q);
            const uint16_t *h = (const uint16_t *)blk;
            if (!is_k) {
                float d = gg_f16(h[0]), m = dtype == Q4_1 || dtype == Q5_1 ? gg_f16(h[1]) : 0.0f;
                for (int t = 0; t < NT; t++) {
                    const int8_t *x = xq + (int64_t)t * ldq + b * 32;
                    int32_t is = 0, sx = 0;
                    for (int i = 0; i < 32; i++) {
                        is += (q[i] - off) * x[i];
                        sx += x[i];
                    }
                    float dx = xd[(int64_t)t * (ldq / 32) + b];
                    float v = out[r * ldo + t] + (float)is * (d * dx);
                    if (dtype == Q4_1 || dtype == Q5_1) v += (float)sx * (m * dx);
                    out[r * ldo + t] = v;
                }
                continue;
            }
            int sc[16], mn[8];
            float d, dmin = 0;
            if (dtype == Q6_K) {
                const BlockQ6_K *b6 = (const BlockQ6_K *)blk;
                d = gg_f16(b6->d);
                for (int j = 0; j < 16; j++) sc[j] = b6->scales[j];
            } else {
                d = gg_f16(h[0]);
                dmin = gg_f16(h[1]);
                for (int j = 0; j < 8; j++) k4_scale_min(blk + 4, j, &sc[j], &mn[j]);
            }
            for (int t = 0; t < NT; t++) {
                const int8_t *x = xq + (int64_t)t * ldq + b * 256;
                const int16_t *bsum = xbs + (int64_t)t * (ldq / 16) + b * 16;
                float dx = xd[(int64_t)t * (ldq / 256) + b];
                int32_t is = 0, ms = 0;
                if (dtype == Q6_K) {
                    for (int j = 0; j < 16; j++) {
                        int32_t s = 0;
                        for (int i = 0; i < 16; i++) s += q[16 * j + i] * x[16 * j + i];
                        is += sc[j] * (s - off * bsum[j]);
                    }
                    out[r * ldo + t] += (float)is * (d * dx);
                } else {
                    for (int j = 0; j < 8; j++) {
                        int32_t s = 0;
                        for (int i = 0; i < 32; i++) s += q[32 * j + i] * x[32 * j + i];
                        is += sc[j] * s;
                        ms += mn[j] * (bsum[2 * j] + bsum[2 * j + 1]);
                    }
                    float v = out[r * ldo + t] + (float)is * (d * dx);
                    out[r * ldo + t] = v + (float)ms * (-(dmin * dx));
                }
            }
        }
    }
}

/* NR x NT tile into y (+ bias), dispatching on the dtype. */
template <int NR, int NT>
static inline void gg_tile(int dtype, const int8_t *xq, const float *xd, const int16_t *xbs, int ldq, const void *w,
                           int64_t row_bytes, int64_t row0, int K, float *y, int ldy, const float *bias) {
    float out[NR][NT];
    const uint8_t *wb = (const uint8_t *)w;
#ifdef KERNELS_VECTOR
    switch (dtype) {
#ifdef KERNELS_AVX512
    case Q8_0: gg_tile32x2<Q8_0, NR, NT>(xq, xd, ldq, wb, row_bytes, row0, K, out); break;
    case Q4_0: gg_tile32x2<Q4_0, NR, NT>(xq, xd, ldq, wb, row_bytes, row0, K, out); break;
    case Q4_1: gg_tile32x2<Q4_1, NR, NT>(xq, xd, ldq, wb, row_bytes, row0, K, out); break;
    case Q5_0: gg_tile32x2<Q5_0, NR, NT>(xq, xd, ldq, wb, row_bytes, row0, K, out); break;
    case Q5_1: gg_tile32x2<Q5_1, NR, NT>(xq, xd, ldq, wb, row_bytes, row0, K, out); break;
#else
    case Q8_0: gg_tile32<Q8_0, NR, NT>(xq, xd, ldq, wb, row_bytes, row0, K, out); break;
    case Q4_0: gg_tile32<Q4_0, NR, NT>(xq, xd, ldq, wb, row_bytes, row0, K, out); break;
    case Q4_1: gg_tile32<Q4_1, NR, NT>(xq, xd, ldq, wb, row_bytes, row0, K, out); break;
    case Q5_0: gg_tile32<Q5_0, NR, NT>(xq, xd, ldq, wb, row_bytes, row0, K, out); break;
    case Q5_1: gg_tile32<Q5_1, NR, NT>(xq, xd, ldq, wb, row_bytes, row0, K, out); break;
#endif
#ifdef KERNELS_AVX512
    case Q4_K: gg_tilek512<Q4_K, NR, NT>(xq, xd, xbs, ldq, wb, row_bytes, row0, K, out); break;
    case Q5_K: gg_tilek512<Q5_K, NR, NT>(xq, xd, xbs, ldq, wb, row_bytes, row0, K, out); break;
    default: gg_tilek512<Q6_K, NR, NT>(xq, xd, xbs, ldq, wb, row_bytes, row0, K, out); break;
#else
    case Q4_K: gg_tilek<Q4_K, NR, NT>(xq, xd, xbs, ldq, wb, row_bytes, row0, K, out); break;
    case Q5_K: gg_tilek<Q5_K, NR, NT>(xq, xd, xbs, ldq, wb, row_bytes, row0, K, out); break;
    default: gg_tilek<Q6_K, NR, NT>(xq, xd, xbs, ldq, wb, row_bytes, row0, K, out); break;
#endif
    }
#else
    gg_sums_scalar(dtype, xq, xd, xbs, ldq, wb, row_bytes, row0, NR, NT, K, &out[0][0], NT);
#endif
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) y[(int64_t)t * ldy + r] = out[r][t] + (bias ? bias[r] : 0.0f);
}

/* Matmul of a block-dtype matrix over activations already quantized: A32 (quantize_q8; xbs
 * unused) for the 32-blocks, A256 (quantize_q8k) for the K-quants; ldq bytes per token. Decode
 * from DRAM: one row (one stream) at a time for up to 4 tokens; else NR rows x 4 tokens. */
static void matmul_ggml_pre(const int8_t *xq, const float *xd, const int16_t *xbs, int ldq, int T, const void *w,
                            int dtype, int K, int r0, int r1, float *y, int ldy, const float *bias, bool is_streaming) {
    bool is_k = dtype == Q4_K || dtype == Q5_K || dtype == Q6_K;
    int ldd = ldq / (is_k ? 256 : 32), ldb = ldq / 16;
    int64_t rb = ggml_row_bytes(dtype, K);
#define GG_TILE(NR, NT)                                                                                                \
    gg_tile<NR, NT>(dtype, xq + (int64_t)t * ldq, xd + (int64_t)t * ldd, is_k ? xbs + (int64_t)t * ldb : nullptr, ldq, \
                    w, rb, r, K, y + (int64_t)t * ldy + r, ldy, bias ? bias + r : nullptr)
    if (is_streaming && T < 8) {
        for (int r = r0; r < r1; r++) {
            int t = 0;
            for (; T - t >= 4; t += 4) GG_TILE(1, 4);
            if (T - t == 3) GG_TILE(1, 3);
            else if (T - t == 2) GG_TILE(1, 2);
            else if (T - t == 1) GG_TILE(1, 1);
        }
        return;
    }
    for (int t = 0; t < T;) {
        int nt = T - t >= 4 ? 4 : T - t, r = r0;
#ifdef KERNELS_AVX512
        for (; dtype != Q4_1 && dtype != Q5_1 && r + 4 <= r1; r += 4) { // 4 rows x 4 tokens (32 registers)
            if (nt == 4) GG_TILE(4, 4);
            else if (nt == 3) GG_TILE(4, 3);
            else if (nt == 2) GG_TILE(4, 2);
            else GG_TILE(4, 1);
        }
#endif
        for (; r + 2 <= r1; r += 2) {
            if (nt == 4) GG_TILE(2, 4);
            else if (nt == 3) GG_TILE(2, 3);
            else if (nt == 2) GG_TILE(2, 2);
            else GG_TILE(2, 1);
        }
        for (; r < r1; r++) {
            if (nt == 4) GG_TILE(1, 4);
            else if (nt == 3) GG_TILE(1, 3);
            else if (nt == 2) GG_TILE(1, 2);
            else GG_TILE(1, 1);
        }
        t += nt;
    }
#undef GG_TILE
}

/* Block-dtype matmul from f32 activations: quantizes up to 32 tokens at a time into scratch (A256:
 * 32 K bytes + K / 8 floats + 2 K int16; within kMatmulRows * K floats). */
static void matmul_ggml(const float *x, int ldx, int T, const void *w, int dtype, int K, int r0, int r1, float *y,
                        int ldy, const float *bias, float *scratch, bool is_streaming) {
    const int kChunk = 32;
    bool is_k = dtype == Q4_K || dtype == Q5_K || dtype == Q6_K;
    float *xd = scratch;
    int16_t *xbs = (int16_t *)(scratch + kChunk * (K / 32));
    int8_t *xq = (int8_t *)(xbs + kChunk * (K / 16));
    for (int t0 = 0; t0 < T; t0 += kChunk) {
        int n = T - t0 < kChunk ? T - t0 : kChunk;
        for (int t = 0; t < n; t++) {
            const float *xt = x + (int64_t)(t0 + t) * ldx;
            if (is_k)
                quantize_q8k(xt, K, xq + (int64_t)t * K, xd + (int64_t)t * (K / 256), xbs + (int64_t)t * (K / 16));
            else quantize_q8(xt, K, xq + (int64_t)t * K, xd + (int64_t)t * (K / 32));
        }
        matmul_ggml_pre(xq, xd, xbs, K, n, w, dtype, K, r0, r1, y + (int64_t)t0 * ldy, ldy, bias, is_streaming);
    }
}

} // namespace KERNELS_NS
} // namespace maya

#endif
