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
 * lanes at the end; the scalar path converts whole sums and adds block by block (Q4_0 / Q5_0 into
 * four running sums, block b into sum b % 4, then (s0 + s1) + (s2 + s3)). Results of the paths
 * therefore differ by f32 rounding only (the bound in test_ggml.cpp), and within one path a (row,
 * token) result has the same bits whatever the tile or batch. The avx512 path with VNNI computes
 * Q4_0, Q5_0, Q4_K and Q5_K in the scalar path's order (the row-lane forms below): there it equals
 * the scalar path bit for bit.
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

#ifdef GG_VNNI
/* ---- Row-lane forms (AVX512 with VNNI): Q4_0, Q5_0, Q4_K, Q5_K ----
 * Their results are the scalar path's (gg_sums_scalar), bit for bit, for every T, tile and batch:
 * the exact integer sum of each (sub-)block, then per block the scalar path's f32 operations in its
 * order, each rounded once (il_mul / il_add: never fused into a multiply-add). Q4_0 / Q5_0 keep four
 * running sums per (row, token) (block b into sum b % 4, combined as (s0 + s1) + (s2 + s3)), so a
 * row alone need not wait on one chain of adds; the K-quants one (their blocks are 8 times longer).
 * - GEMM (8 tokens or more, il_matmul): a task's rows are converted, 16 at a time and 2048 weights
 *   at a time, into a scratch layout (on the stack) where the 4-byte groups of the 16 rows
 *   interleave: vector (j, g) holds weights 32j + 4g .. 32j + 4g + 3 of each row as unsigned bytes,
 *   so vpdpbusd against one token's 4 activation bytes broadcast yields the 16 rows' partial sums,
 *   8 of them a 32-weight block sum per row, and the block's f32 terms cost one conversion and a
 *   few operations per 16 rows (the tiles above: per row). The conversion is paid once per 16 rows
 *   and 2048 weights for up to 64 tokens. llama.cpp gets a like interleaving by repacking the
 *   file's Q4_0 / Q4_K rows at load (its "repack" buffers, 8 rows per block); converting per task
 *   keeps the mapped file as it is (no copy, no load time, the same memory) and leaves decode free
 *   to read one row at a time.
 * - Few tokens (il_gemv): one row at a time, so a matrix streamed from DRAM is read in order (as the
 *   tiles do); the lane sums are reduced to the per-block integers and the f32 terms follow. */
enum { kIlChunk = 2048 };

struct IlScratch {
    __m512i q[kIlChunk / 32][8]; // (j, g): lane r = weights 32j + 4g .. + 3 of row r, unsigned bytes
    __m512 f1[kIlChunk / 32];    // 32-blocks: d of block j; K-quants: d of block j
    __m512 f2[kIlChunk / 32];    // K-quants: dmin of block j
    __m512i sc[kIlChunk / 32];   // K-quants: sub-block j's scale
    __m512i mn[kIlChunk / 32];   // K-quants: sub-block j's min in both int16 halves
};

/* Z[i] (i < 8): lanes 0-7 dwords 0-7 of row i, lanes 8-15 those of row i + 8. dst[g]: lane r =
 * dword g of row r (an 8 x 8 transpose in each 256-bit half, then the halves' quarters merged). */
static KERNELS_INLINE void il_transpose(const __m512i *Z, __m512i *dst) {
    __m512i t[8], s[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(Z[2 * i], Z[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(Z[2 * i], Z[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) {     // rows 4h .. 4h + 3 (and 8 + 4h ..): 128-bit lane L of s[4h + c]
        const __m512i *u = t + 4 * h; // holds dword c (L even) or c + 4 (L odd) of those 4 rows
        s[4 * h + 0] = _mm512_unpacklo_epi64(u[0], u[2]);
        s[4 * h + 1] = _mm512_unpackhi_epi64(u[0], u[2]);
        s[4 * h + 2] = _mm512_unpacklo_epi64(u[1], u[3]);
        s[4 * h + 3] = _mm512_unpackhi_epi64(u[1], u[3]);
    }
    const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    for (int c = 0; c < 4; c++) {
        dst[c] = _mm512_permutex2var_epi64(s[c], lo, s[4 + c]);
        dst[c + 4] = _mm512_permutex2var_epi64(s[c], hi, s[4 + c]);
    }
}

/* Row i's offset (rows past nr repeat the last: read, never stored). */
static KERNELS_INLINE int64_t il_row(int i, int nr, int64_t row_bytes) {
    return (int64_t)(i < nr ? i : nr - 1) * row_bytes;
}

/* Rows [0, nr) of w (16 at most), weights [k0, k0 + kc) into s. */
template <int DT> static void il_convert(const uint8_t *w, int64_t row_bytes, int nr, int k0, int kc, IlScratch *s) {
    __m512i vidx =
        _mm512_mullo_epi32(_mm512_min_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(nr - 1)),
                           _mm512_set1_epi32((int)row_bytes));
    const __m512i lo4 = _mm512_set1_epi8(0x0F);
    if (DT == Q4_K || DT == Q5_K) {
        const int BB = DT == Q4_K ? 144 : 176, qo = DT == Q4_K ? 16 : 48;
        for (int b = 0; b < kc / 256; b++) {
            const uint8_t *base = w + (int64_t)(k0 / 256 + b) * BB;
            __m512i Z[8], H[8];
            if (DT == Q5_K) { // H[g] lane r: qh bytes 4g .. 4g + 3 of row r (bit j: sub-block j's 5th bit)
                for (int i = 0; i < 8; i++)
                    Z[i] = _mm512_inserti64x4(
                        _mm512_castsi256_si512(
                            _mm256_loadu_si256((const __m256i *)(base + il_row(i, nr, row_bytes) + 16))),
                        _mm256_loadu_si256((const __m256i *)(base + il_row(i + 8, nr, row_bytes) + 16)), 1);
                il_transpose(Z, H);
            }
            for (int c = 0; c < 4; c++) { // qs bytes 32c ..: low nibbles sub-block 2c, high nibbles 2c + 1
                __m512i R[8];
                for (int i = 0; i < 8; i++)
                    Z[i] = _mm512_inserti64x4(
                        _mm512_castsi256_si512(
                            _mm256_loadu_si256((const __m256i *)(base + il_row(i, nr, row_bytes) + qo + 32 * c))),
                        _mm256_loadu_si256((const __m256i *)(base + il_row(i + 8, nr, row_bytes) + qo + 32 * c)), 1);
                il_transpose(Z, R);
                for (int g = 0; g < 8; g++) {
                    __m512i l = _mm512_and_si512(R[g], lo4), h = _mm512_and_si512(_mm512_srli_epi16(R[g], 4), lo4);
                    if (DT == Q5_K) { // bit j of each byte to bit 4
                        const __m512i m10 = _mm512_set1_epi8(0x10);
                        int j = 2 * c;
                        l = _mm512_or_si512(l, _mm512_and_si512(j <= 4 ? _mm512_slli_epi32(H[g], 4 - j)
                                                                       : _mm512_srli_epi32(H[g], j - 4),
                                                                m10));
                        j++;
                        h = _mm512_or_si512(h, _mm512_and_si512(j <= 4 ? _mm512_slli_epi32(H[g], 4 - j)
                                                                       : _mm512_srli_epi32(H[g], j - 4),
                                                                m10));
                    }
                    _mm512_store_si512((void *)&s->q[8 * b + 2 * c][g], l);
                    _mm512_store_si512((void *)&s->q[8 * b + 2 * c + 1][g], h);
                }
            }
            // d and dmin, and the 12 packed scale bytes, of the 16 rows (ggml_blocks.h's packing)
            __m512i h = _mm512_i32gather_epi32(vidx, (const void *)base, 1);
            __m512i a0 = _mm512_i32gather_epi32(vidx, (const void *)(base + 4), 1);
            __m512i a1 = _mm512_i32gather_epi32(vidx, (const void *)(base + 8), 1);
            __m512i a2 = _mm512_i32gather_epi32(vidx, (const void *)(base + 12), 1);
            s->f1[b] = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
            s->f2[b] = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h, 16)));
            const __m512i m63 = _mm512_set1_epi32(63), m15 = _mm512_set1_epi32(15), m3 = _mm512_set1_epi32(3);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                s->sc[8 * b + j] = _mm512_and_si512(_mm512_srli_epi32(a0, 8 * j), m63);
                __m512i m = _mm512_and_si512(_mm512_srli_epi32(a1, 8 * j), m63);
                s->mn[8 * b + j] = _mm512_or_si512(m, _mm512_slli_epi32(m, 16));
                s->sc[8 * b + 4 + j] =
                    _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(a2, 8 * j), m15),
                                    _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(a0, 8 * j + 6), m3), 4));
                m = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(a2, 8 * j + 4), m15),
                                    _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(a1, 8 * j + 6), m3), 4));
                s->mn[8 * b + 4 + j] = _mm512_or_si512(m, _mm512_slli_epi32(m, 16));
            }
        }
        return;
    }
    // Q4_0 / Q5_0: the 16 quant bytes of rows i, i + 4, i + 8, i + 12 in the 128-bit
    // lanes of Z[i], transposed per lane so T[g] lane r holds bytes 4g .. 4g + 3 of row r: low nibbles
    // weights 4g .., high nibbles 16 + 4g ..
    const int BB = DT == Q4_0 ? 18 : 22, qo = DT == Q4_0 ? 2 : 6;
    for (int j = 0; j < kc / 32; j++) {
        const uint8_t *bj = w + (int64_t)(k0 / 32 + j) * BB;
        __m512i Z[4], T4[4];
        for (int i = 0; i < 4; i++) {
            __m512i z = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(bj + il_row(i, nr, row_bytes) + qo)));
            z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(bj + il_row(i + 4, nr, row_bytes) + qo)), 1);
            z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(bj + il_row(i + 8, nr, row_bytes) + qo)), 2);
            Z[i] =
                _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(bj + il_row(i + 12, nr, row_bytes) + qo)), 3);
        }
        __m512i t0 = _mm512_unpacklo_epi32(Z[0], Z[1]), t1 = _mm512_unpackhi_epi32(Z[0], Z[1]);
        __m512i t2 = _mm512_unpacklo_epi32(Z[2], Z[3]), t3 = _mm512_unpackhi_epi32(Z[2], Z[3]);
        T4[0] = _mm512_unpacklo_epi64(t0, t2);
        T4[1] = _mm512_unpackhi_epi64(t0, t2);
        T4[2] = _mm512_unpacklo_epi64(t1, t3);
        T4[3] = _mm512_unpackhi_epi64(t1, t3);
        __m512i qh = _mm512_setzero_si512();
        if (DT == Q5_0) qh = _mm512_i32gather_epi32(vidx, (const void *)(bj + 2), 1);
        for (int g = 0; g < 4; g++) {
            __m512i l = _mm512_and_si512(T4[g], lo4), h = _mm512_and_si512(_mm512_srli_epi16(T4[g], 4), lo4);
            if (DT == Q5_0) { // bit 4g + b (16 + 4g + b) of qh to bit 4 of byte b of the group
                const __m512i m10 = _mm512_set1_epi8(0x10), // lane: byte 4k + b = 4k (dword k of a 128-bit lane)
                    lane = _mm512_broadcast_i32x4(_mm_setr_epi32(0, 0x04040404, 0x08080808, 0x0C0C0C0C));
                __m512i bits = _mm512_set1_epi32(g & 1 ? (int)0x80402010u : 0x08040201);
                __m512i vl = _mm512_shuffle_epi8(qh, _mm512_add_epi8(lane, _mm512_set1_epi8((char)(g >> 1))));
                __m512i vh = _mm512_shuffle_epi8(qh, _mm512_add_epi8(lane, _mm512_set1_epi8((char)(2 + (g >> 1)))));
                l = _mm512_or_si512(l, _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(vl, bits), m10));
                h = _mm512_or_si512(h, _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(vh, bits), m10));
            }
            _mm512_store_si512((void *)&s->q[j][g], l);
            _mm512_store_si512((void *)&s->q[j][4 + g], h);
        }
        __m512i h = _mm512_i32gather_epi32(vidx, (const void *)bj, 1); // d
        s->f1[j] = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
    }
}

/* The sum of 32 int8. */
static KERNELS_INLINE int il_sum32(const int8_t *x) {
    __m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)x), _mm256_set1_epi8((char)0x80));
    __m256i s = _mm256_sad_epu8(v, _mm256_setzero_si256());
    __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_add_epi64(h, _mm_unpackhi_epi64(h, h));
    return _mm_cvtsi128_si32(h) - 32 * 128;
}

static KERNELS_INLINE __m512i il_bcast(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* f32 products and sums rounded once each, as the scalar path's (never fused into a multiply-add). */
static KERNELS_INLINE __m512 il_mul(__m512 a, __m512 b) {
    return _mm512_mul_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static KERNELS_INLINE __m512 il_add(__m512 a, __m512 b) {
    return _mm512_add_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* NT tokens of the converted rows over weights [k0, k0 + kc). Q4_0 / Q5_0 keep four running sums
 * per (row, token) (32-block b into sum b % 4; the scalar path's order), the K-quants one. part
 * (NT x 4 vectors) carries the sums from chunk to chunk; the last chunk combines them as (s0 + s1) +
 * (s2 + s3), adds the bias and stores y (the tile's first token, the group's first row). */
template <int DT, int NT>
static KERNELS_INLINE void il_tile(const IlScratch *s, const int8_t *xq, const float *xd, const int16_t *xbs, int ldq,
                                   int k0, int kc, bool first, bool last, __m512 *part, float *y, int ldy,
                                   const float *bias, __mmask16 mask) {
    const bool is_k = DT == Q4_K || DT == Q5_K;
    const int NC = is_k ? 1 : 4;
    const int off = DT == Q4_0 ? 8 : 16;
    int ldd = ldq / (is_k ? 256 : 32), ldb = ldq / 16;
    __m512 tot[4][NT]; // [c < NC]
    for (int c = 0; c < NC; c++)
        for (int t = 0; t < NT; t++) tot[c][t] = first ? _mm512_setzero_ps() : part[4 * t + c];
    if (is_k) {
        for (int b = 0; b < kc / 256; b++) {
            int kb = k0 + 256 * b, bi = kb / 256;
            __m512i is[NT];
            for (int t = 0; t < NT; t++) is[t] = _mm512_setzero_si512();
            for (int j = 0; j < 8; j++) {
                __m512i acc[NT];
                for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
                for (int g = 0; g < 8; g++) {
                    __m512i W = _mm512_load_si512((const void *)&s->q[8 * b + j][g]);
                    for (int t = 0; t < NT; t++)
                        acc[t] = _mm512_dpbusd_epi32(acc[t], W, il_bcast(xq + (int64_t)t * ldq + kb + 32 * j + 4 * g));
                }
                for (int t = 0; t < NT; t++)
                    is[t] = _mm512_add_epi32(is[t], _mm512_mullo_epi32(acc[t], s->sc[8 * b + j]));
            }
            for (int t = 0; t < NT; t++) {
                __m512i ms = _mm512_setzero_si512(); // sum_j m_j (bsum_2j + bsum_2j+1)
                const int16_t *bs = xbs + (int64_t)t * ldb + bi * 16;
#pragma GCC unroll 8
                for (int j = 0; j < 8; j++) ms = _mm512_dpwssd_epi32(ms, s->mn[8 * b + j], il_bcast(bs + 2 * j));
                __m512 dx = _mm512_set1_ps(xd[(int64_t)t * ldd + bi]);
                __m512 v = il_add(tot[0][t], il_mul(_mm512_cvtepi32_ps(is[t]), il_mul(s->f1[b], dx)));
                __m512 nm = _mm512_castsi512_ps(
                    _mm512_xor_si512(_mm512_castps_si512(il_mul(s->f2[b], dx)), _mm512_set1_epi32((int)0x80000000u)));
                tot[0][t] = il_add(v, il_mul(_mm512_cvtepi32_ps(ms), nm));
            }
        }
    } else {
        // k0 / 32 is a multiple of 4: block j into sum j % 4. The four sums are unrolled so that each
        // stays in a register (an index j & 3 kept them on the stack).
        const int nj = kc / 32;
        for (int j0 = 0; j0 < nj; j0 += 4) {
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                const int j = j0 + c;
                if (j >= nj) break;
                int kb = k0 + 32 * j, bi = kb / 32;
                __m512i acc[NT]; // starts at -off * (the block's activation sum): the exact integer sum
                for (int t = 0; t < NT; t++) {
                    int sx = xbs ? xbs[(int64_t)t * (ldq / 32) + bi] : il_sum32(xq + (int64_t)t * ldq + kb);
                    acc[t] = _mm512_set1_epi32(-off * sx);
                }
#pragma GCC unroll 8
                for (int g = 0; g < 8; g++) {
                    __m512i W = _mm512_load_si512((const void *)&s->q[j][g]);
                    for (int t = 0; t < NT; t++)
                        acc[t] = _mm512_dpbusd_epi32(acc[t], W, il_bcast(xq + (int64_t)t * ldq + kb + 4 * g));
                }
                for (int t = 0; t < NT; t++) {
                    __m512 dx = _mm512_set1_ps(xd[(int64_t)t * ldd + bi]);
                    tot[c][t] = il_add(tot[c][t], il_mul(_mm512_cvtepi32_ps(acc[t]), il_mul(s->f1[j], dx)));
                }
            }
        }
    }
    if (!last) {
        for (int c = 0; c < NC; c++)
            for (int t = 0; t < NT; t++) part[4 * t + c] = tot[c][t];
        return;
    }
    __m512 bv = bias ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_setzero_ps();
    for (int t = 0; t < NT; t++) {
        __m512 v =
            NC == 1 ? tot[0][t] : il_add(il_add(tot[0][t], tot[1 % NC][t]), il_add(tot[2 % NC][t], tot[3 % NC][t]));
        _mm512_mask_storeu_ps(y + (int64_t)t * ldy, mask, il_add(v, bv));
    }
}

// One f32 operation on lane 0 (the running sums stay in a register: a chain of plain adds).
static KERNELS_INLINE __m128 il_adds(__m128 a, __m128 b) {
    return _mm_add_round_ss(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static KERNELS_INLINE __m128 il_muls(__m128 a, __m128 b) {
    return _mm_mul_round_ss(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static KERNELS_INLINE int il_hsum256i(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* Q4_K / Q5_K: NT tokens of row `row`. */
template <int DT, int NT>
static KERNELS_INLINE void il_gemv_k(const int8_t *xq, const float *xd, const int16_t *xbs, int ldq, const uint8_t *w,
                                     int64_t row_bytes, int64_t row, int K, float *y, int ldy, const float *bias) {
    const int BB = DT == Q4_K ? 144 : 176;
    int nb = K / 256, ldd = ldq / 256, ldb = ldq / 16;
    __m128 tot[NT];
    for (int t = 0; t < NT; t++) tot[t] = _mm_setzero_ps();
    for (int b = 0; b < nb; b++) {
        GgKRow p;
        gg_kprep<DT>(w + row * row_bytes + (int64_t)b * BB, &p);
        __m512i sc512 = _mm512_broadcast_i64x4(p.sc), acc[NT];
        for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            __m512i u, s;
            gg_kvec512<DT>(p, sc512, c, &u, &s);
            for (int t = 0; t < NT; t++) {
                __m512i x = _mm512_loadu_si512((const void *)(xq + (int64_t)t * ldq + b * 256 + 64 * c));
                acc[t] = _mm512_dpwssd_epi32(acc[t], _mm512_maddubs_epi16(u, x), s);
            }
        }
        for (int t = 0; t < NT; t++) {
            __m256i bs = _mm256_loadu_si256((const __m256i *)(xbs + (int64_t)t * ldb + b * 16));
            int is = _mm512_reduce_add_epi32(acc[t]), ms = il_hsum256i(_mm256_madd_epi16(bs, p.mins));
            __m128 dx = _mm_load_ss(xd + (int64_t)t * ldd + b);
            __m128 v = il_adds(tot[t], il_muls(_mm_cvtsi32_ss(dx, is), il_muls(_mm_set_ss(p.d), dx)));
            __m128 nm = _mm_xor_ps(il_muls(_mm_set_ss(p.dmin), dx), _mm_set_ss(-0.0f)); // -(dmin dx)
            tot[t] = il_adds(v, il_muls(_mm_cvtsi32_ss(dx, ms), nm));
        }
    }
    for (int t = 0; t < NT; t++)
        y[(int64_t)t * ldy] = _mm_cvtss_f32(il_adds(tot[t], bias ? _mm_load_ss(bias) : _mm_setzero_ps()));
}

/* Q4_0 / Q5_0: NT tokens of NR rows from `row`. Blocks go two to a vector (lanes 0-7 block b, 8-15
 * block b + 1) as in gg_tile32x2; 4 vectors (8 blocks) are reduced to the 8 block sums at once.
 * Each (row, token) adds its block terms one after another, so NR x NT chains run side by side. */
template <int DT, int NR, int NT>
static KERNELS_INLINE void il_gemv32(const int8_t *xq, const float *xd, int ldq, const uint8_t *w, int64_t row_bytes,
                                     int64_t row, int K, float *y, int ldy, const float *bias) {
    const int BB = DT == Q4_0 ? 18 : 22, sh = DT == Q4_0 ? 3 : 4; // offset 8 or 16
    int nb = K / 32, ldd = ldq / 32;
    const __m512i ones = _mm512_set1_epi8(1);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i bidx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(BB));
    __m512 tot[NR][NT]; // lanes 0-3: the four running sums (block b into sum b % 4)
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) tot[r][t] = _mm512_setzero_ps();
    for (int b0 = 0; b0 < nb; b0 += 8) {
        int n = nb - b0 < 8 ? nb - b0 : 8;
        __m512i V[NR][NT][4];
        for (int k = 0; k < 4; k++) {
            int b = b0 + 2 * k;
            __m512i x[NT], gs[NT];
            for (int t = 0; t < NT; t++) {
                const int8_t *xp = xq + (int64_t)t * ldq + b * 32;
                x[t] = b + 2 <= nb ? _mm512_loadu_si512((const void *)xp)
                       : b < nb    ? _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)xp))
                                   : _mm512_setzero_si512();
                gs[t] = _mm512_slli_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, x[t]), sh);
            }
            for (int r = 0; r < NR; r++) {
                const uint8_t *wr = w + (row + r) * row_bytes;
                __m512i u;
                if (b + 2 <= nb) {
                    __m512 dd, mm;
                    gg_unpack32x2<DT>(wr + (int64_t)b * BB, &u, &dd, &mm);
                } else if (b < nb) { // an odd last block: lanes 0-7
                    __m256i u1;
                    float dd, mm;
                    gg_unpack32<DT>(wr + (int64_t)b * BB, &u1, &dd, &mm);
                    u = _mm512_zextsi256_si512(u1);
                } else u = _mm512_setzero_si512();
                for (int t = 0; t < NT; t++)
                    V[r][t][k] = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, x[t]), gs[t]);
            }
        }
        __mmask8 m = (__mmask8)((1u << n) - 1);
        for (int r = 0; r < NR; r++) {
            const uint8_t *wr = w + (row + r) * row_bytes + (int64_t)b0 * BB;
            __m256 d = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(
                _mm256_mmask_i32gather_epi32(_mm256_setzero_si256(), m, bidx, (const void *)wr, 1)));
            for (int t = 0; t < NT; t++) {
                // 4 vectors of 16 lanes to the 8 block sums (lane i: block b0 + i), exact in int32.
                __m512i W0 = _mm512_add_epi32(_mm512_unpacklo_epi32(V[r][t][0], V[r][t][1]),
                                              _mm512_unpackhi_epi32(V[r][t][0], V[r][t][1]));
                __m512i W1 = _mm512_add_epi32(_mm512_unpacklo_epi32(V[r][t][2], V[r][t][3]),
                                              _mm512_unpackhi_epi32(V[r][t][2], V[r][t][3]));
                __m512i X = _mm512_add_epi32(_mm512_unpacklo_epi64(W0, W1), _mm512_unpackhi_epi64(W0, W1));
                __m512i S2 = _mm512_add_epi32(_mm512_shuffle_i32x4(X, X, 0x88), _mm512_shuffle_i32x4(X, X, 0xDD));
                __m256i S = _mm256_permutevar8x32_epi32(_mm512_castsi512_si256(S2), order);
                __m256 dx = _mm256_maskz_loadu_ps(m, xd + (int64_t)t * ldd + b0);
                __m512 pr = il_mul(_mm512_castps256_ps512(_mm256_cvtepi32_ps(S)),
                                   il_mul(_mm512_castps256_ps512(d), _mm512_castps256_ps512(dx)));
                // Blocks b0 .. b0 + 3 then b0 + 4 .. b0 + 7 (past nb: +0, which leaves a sum unchanged).
                tot[r][t] = il_add(il_add(tot[r][t], pr), _mm512_shuffle_f32x4(pr, pr, 0x01));
            }
        }
    }
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) {
            __m128 v = _mm512_castps512_ps128(tot[r][t]);
            __m128 a = il_adds(v, _mm_shuffle_ps(v, v, 1)),
                   c = il_adds(_mm_shuffle_ps(v, v, 2), _mm_shuffle_ps(v, v, 3));
            y[(int64_t)t * ldy + r] =
                _mm_cvtss_f32(il_adds(il_adds(a, c), bias ? _mm_load_ss(bias + r) : _mm_setzero_ps()));
        }
}

/* Rows [r0, r1) x T tokens (T < 8), one row at a time, up to 4 tokens per pass. */
template <int DT>
static void il_gemv(const int8_t *xq, const float *xd, const int16_t *xbs, int ldq, int T, const uint8_t *w, int K,
                    int r0, int r1, float *y, int ldy, const float *bias) {
    int64_t rb = ggml_row_bytes(DT, K);
    const bool is_k = DT == Q4_K || DT == Q5_K;
    int ldd = ldq / (is_k ? 256 : 32), ldb = ldq / 16;
    for (int r = r0; r < r1; r++)
        for (int t = 0; t < T;) {
            int n = T - t >= 4 ? 4 : T - t;
            const int8_t *xt = xq + (int64_t)t * ldq;
            const float *dt = xd + (int64_t)t * ldd, *br = bias ? bias + r : nullptr;
            float *yt = y + (int64_t)t * ldy + r;
            if (is_k) {
                const int16_t *bt = xbs + (int64_t)t * ldb;
                if (n == 4) il_gemv_k<DT, 4>(xt, dt, bt, ldq, w, rb, r, K, yt, ldy, br);
                else if (n == 3) il_gemv_k<DT, 3>(xt, dt, bt, ldq, w, rb, r, K, yt, ldy, br);
                else if (n == 2) il_gemv_k<DT, 2>(xt, dt, bt, ldq, w, rb, r, K, yt, ldy, br);
                else il_gemv_k<DT, 1>(xt, dt, bt, ldq, w, rb, r, K, yt, ldy, br);
            } else {
                if (n == 4) il_gemv32<DT, 1, 4>(xt, dt, ldq, w, rb, r, K, yt, ldy, br);
                else if (n == 3) il_gemv32<DT, 1, 3>(xt, dt, ldq, w, rb, r, K, yt, ldy, br);
                else if (n == 2) il_gemv32<DT, 1, 2>(xt, dt, ldq, w, rb, r, K, yt, ldy, br);
                else il_gemv32<DT, 1, 1>(xt, dt, ldq, w, rb, r, K, yt, ldy, br);
            }
            t += n;
        }
}

template <int DT>
static void il_matmul(const int8_t *xq, const float *xd, const int16_t *xbs, int ldq, int T, const uint8_t *w, int K,
                      int r0, int r1, float *y, int ldy, const float *bias) {
    const int kTok = 64; // tokens per pass over K (their running sums between chunks: 16 KiB)
    IlScratch s;
    __m512 part[kTok * 4];
    int64_t rb = ggml_row_bytes(DT, K);
    const bool is_k = DT == Q4_K || DT == Q5_K;
    int ldd = ldq / (is_k ? 256 : 32), ldb = ldq / 16;
    for (int g0 = r0; g0 < r1; g0 += 16) {
        int nr = r1 - g0 < 16 ? r1 - g0 : 16;
        __mmask16 mask = (__mmask16)((1u << nr) - 1);
        const float *bg = bias ? bias + g0 : nullptr;
        // One chunk of K: converted once for all tokens; more: once per pass of kTok tokens.
        for (int t0 = 0; t0 < T; t0 += kTok) {
            int t1 = T - t0 < kTok ? T : t0 + kTok;
            for (int k0 = 0; k0 < K; k0 += kIlChunk) {
                int kc = K - k0 < kIlChunk ? K - k0 : kIlChunk;
                if (t0 == 0 || K > kIlChunk) il_convert<DT>(w + g0 * rb, rb, nr, k0, kc, &s);
                bool first = k0 == 0, last = k0 + kc == K;
                int t = t0;
#define IL_TILE(NT)                                                                                  \
    il_tile<DT, NT>(&s, xq + (int64_t)t * ldq, xd + (int64_t)t * ldd,                                \
                    xbs ? xbs + (int64_t)t * (is_k ? ldb : ldd) : nullptr, ldq, k0, kc, first, last, \
                    part + 4 * (t - t0), y + (int64_t)t * ldy + g0, ldy, bg, mask)
                for (; t1 - t >= 4; t += 4) IL_TILE(4);
                if (t1 - t >= 2) {
                    IL_TILE(2);
                    t += 2;
                }
                if (t1 - t >= 1) IL_TILE(1);
#undef IL_TILE
            }
        }
    }
}
/* The row-lane forms' dispatch: the few-token form below 8 tokens (decode, short verification
 * passes), the GEMM from 8. */
template <int DT>
static void il_run(const int8_t *xq, const float *xd, const int16_t *xbs, int ldq, int T, const uint8_t *w, int K,
                   int r0, int r1, float *y, int ldy, const float *bias) {
    if (T < 8) il_gemv<DT>(xq, xd, xbs, ldq, T, w, K, r0, r1, y, ldy, bias);
    else il_matmul<DT>(xq, xd, xbs, ldq, T, w, K, r0, r1, y, ldy, bias);
}
#endif // GG_VNNI
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
    if (dtype == Q4_0 || dtype == Q5_0) { // four running sums (block b into sum b % 4), then (s0 + s1) + (s2 + s3)
        for (int r = 0; r < NR; r++)
            for (int t = 0; t < NT; t++) {
                float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                for (int b = 0; b < nb; b++) {
                    const uint8_t *blk = w + (row0 + r) * row_bytes + (int64_t)b * bb;
                    const uint8_t *qs = blk + (dtype == Q4_0 ? 2 : 6);
                    const uint8_t *h8 = blk + 2; // Q5_0's qh, a little-endian u32
                    uint32_t qh = dtype != Q5_0 ? 0
                                                : (uint32_t)h8[0] | (uint32_t)h8[1] << 8 | (uint32_t)h8[2] << 16 |
                                                      (uint32_t)h8[3] << 24;
                    const int8_t *x = xq + (int64_t)t * ldq + b * 32;
                    int32_t is = 0;
                    for (int i = 0; i < 16; i++) {
                        int lo = (qs[i] & 15) | ((qh >> i) & 1) << 4, hi = (qs[i] >> 4) | ((qh >> (i + 16)) & 1) << 4;
                        is += (lo - off) * x[i] + (hi - off) * x[i + 16];
                    }
                    float d = gg_f16(*(const uint16_t *)blk), dx = xd[(int64_t)t * (ldq / 32) + b];
                    c[b % 4] = c[b % 4] + (float)is * (d * dx);
                }
                out[r * ldo + t] = (c[0] + c[1]) + (c[2] + c[3]);
            }
        return;
    }
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

/* Matmul of a block-dtype matrix over activations already quantized: A32 (quantize_q8; xbs: the
 * per-32 sums, or null) for the 32-blocks, A256 (quantize_q8k) for the K-quants; ldq bytes per token. Decode
 * from DRAM: one row (one stream) at a time for up to 4 tokens; else NR rows x 4 tokens. */
static void matmul_ggml_pre(const int8_t *xq, const float *xd, const int16_t *xbs, int ldq, int T, const void *w,
                            int dtype, int K, int r0, int r1, float *y, int ldy, const float *bias, bool is_streaming) {
    bool is_k = dtype == Q4_K || dtype == Q5_K || dtype == Q6_K;
    int ldd = ldq / (is_k ? 256 : 32), ldb = ldq / 16;
    int64_t rb = ggml_row_bytes(dtype, K);
#ifdef GG_VNNI
    const uint8_t *wb = (const uint8_t *)w;
    // Q4_0, Q5_0, Q4_K, Q5_K: the row-lane forms (the scalar path's results).
    switch (dtype) {
    case Q4_0: return il_run<Q4_0>(xq, xd, xbs, ldq, T, wb, K, r0, r1, y, ldy, bias);
    case Q5_0: return il_run<Q5_0>(xq, xd, xbs, ldq, T, wb, K, r0, r1, y, ldy, bias);
    case Q4_K: return il_run<Q4_K>(xq, xd, xbs, ldq, T, wb, K, r0, r1, y, ldy, bias);
    case Q5_K: return il_run<Q5_K>(xq, xd, xbs, ldq, T, wb, K, r0, r1, y, ldy, bias);
    default: break;
    }
#endif
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
            else {
                quantize_q8(xt, K, xq + (int64_t)t * K, xd + (int64_t)t * (K / 32));
                for (int b = 0; b < K / 32; b++) { // per-32 sums in the first K / 32 of the token's K / 16
                    int s = 0;
                    for (int i = 0; i < 32; i++) s += xq[(int64_t)t * K + 32 * b + i];
                    xbs[(int64_t)t * (K / 32) + b] = (int16_t)s;
                }
            }
        }
        matmul_ggml_pre(xq, xd, xbs, K, n, w, dtype, K, r0, r1, y + (int64_t)t0 * ldy, ldy, bias, is_streaming);
    }
}

} // namespace KERNELS_NS
} // namespace maya

#endif
