/* kernels/attention.h: softmax and attention over cached positions (scores of query rows x
 * positions, probability-weighted sums of value rows), and MLA's absorbed products straight from a
 * weight matrix (rows_accum, row_dot), each bit-identical to its widened-copy form.
 */
#ifndef MAYA_KERNELS_ATTENTION_H
#define MAYA_KERNELS_ATTENTION_H

#include "base.h"        // defines: vecw, vw_exp, vw_sum_many, f8_table
#include "elementwise.h" // defines: dot, axpy
#include "fp8.h"         // defines: f8xvw, f8x8
#include "matmul.h"      // defines: row_to_f32

namespace maya {
namespace KERNELS_NS {

/* row[0..n) = softmax(row[0..n)) (n >= 1). */
static void softmax(float *row, int n) {
    float mx = row[0], sum = 0;
    for (int j = 1; j < n; j++) mx = row[j] > mx ? row[j] : mx;
    int j = 0;
#ifdef KERNELS_VECTOR
    vecw m = vw_set1(mx), acc = vw_zero();
    for (; j + VW <= n; j += VW) {
        vecw e = vw_exp(vw_sub(vw_loadx(row + j), m));
        vw_store(row + j, e);
        acc = vw_add(acc, e);
    }
    sum = vw_sum(acc);
#endif
    for (; j < n; j++) {
        row[j] = expf(row[j] - mx);
        sum += row[j];
    }
    float inv = 1.0f / sum;
    for (j = 0; j < n; j++) row[j] *= inv;
}

#ifdef KERNELS_AVX512
/* Query rows x keys, 16 dimensions per step: each (row, key) sums its 16 lanes over d in order,
 * then vw_sum's tree, whatever the tile (vw_sum_many is bit-identical to it). */
template <int NR, int NK>
static inline void scores_tile(float *scores, int ld, const float *const *qr, const float *k, int D, float scale) {
    __m512 acc[NR * NK];
    for (int i = 0; i < NR * NK; i++) acc[i] = _mm512_setzero_ps();
    for (int d = 0; d < D; d += 16) {
        __m512 kv[NK];
        for (int j = 0; j < NK; j++) kv[j] = _mm512_loadu_ps(k + (int64_t)j * D + d);
        for (int r = 0; r < NR; r++) {
            __m512 qv = _mm512_loadu_ps(qr[r] + d);
            for (int j = 0; j < NK; j++) acc[r * NK + j] = _mm512_fmadd_ps(qv, kv[j], acc[r * NK + j]);
        }
    }
    float out[NR * NK];
    if (NR * NK >= 6) vw_sum_many(acc, NR * NK, out);
    else
        for (int i = 0; i < NR * NK; i++) out[i] = vw_sum(acc[i]);
    for (int r = 0; r < NR; r++)
        for (int j = 0; j < NK; j++) scores[(int64_t)r * ld + j] = out[r * NK + j] * scale;
}
#endif

/* Query row i of attn_scores / attn_accum: token i / group, head i % group. */
static inline const float *query_row(const float *q, int ldq, int group, int D, int i) {
    return q + (int64_t)(i / group) * ldq + (int64_t)(i % group) * D;
}

static void attn_scores(float *scores, int ld, int j0, const float *q, int ldq, int nq, int group, const float *k,
                        int n, int D, float scale) {
    int R = nq * group;
#ifdef KERNELS_AVX512
    if (D % 16 == 0) { // 4 rows x 4 keys share their loads; a row left over goes key by key (one stream)
        int i = 0;
        for (; i + 4 <= R; i += 4) {
            const float *qr[4] = {query_row(q, ldq, group, D, i), query_row(q, ldq, group, D, i + 1),
                                  query_row(q, ldq, group, D, i + 2), query_row(q, ldq, group, D, i + 3)};
            float *row = scores + (int64_t)i * ld + j0;
            int j = 0;
            for (; j + 4 <= n; j += 4) scores_tile<4, 4>(row + j, ld, qr, k + (int64_t)j * D, D, scale);
            for (; j < n; j++) scores_tile<4, 1>(row + j, ld, qr, k + (int64_t)j * D, D, scale);
        }
        for (; i < R; i++) {
            const float *qr[1] = {query_row(q, ldq, group, D, i)};
            float *row = scores + (int64_t)i * ld + j0;
            for (int j = 0; j < n; j++) scores_tile<1, 1>(row + j, ld, qr, k + (int64_t)j * D, D, scale);
        }
        return;
    }
#endif
#ifdef KERNELS_VECTOR
    if (D % 8 == 0) { // q held in registers 64 dims at a time, one k row per iteration
        for (int h = 0; h < R; h++) {
            float *row = scores + (int64_t)h * ld + j0;
            const float *qh = query_row(q, ldq, group, D, h);
            for (int j = 0; j < n; j++) row[j] = 0;
            for (int d0 = 0; d0 < D; d0 += 64) {
                int nv = (D - d0) / 8 < 8 ? (D - d0) / 8 : 8;
                __m256 qv[8];
                for (int i = 0; i < nv; i++) qv[i] = _mm256_loadu_ps(qh + d0 + 8 * i);
                for (int j = 0; j < n; j++) {
                    const float *kr = k + (int64_t)j * D + d0;
                    __m256 acc = _mm256_mul_ps(qv[0], _mm256_loadu_ps(kr));
                    for (int i = 1; i < nv; i++) acc = _mm256_fmadd_ps(qv[i], _mm256_loadu_ps(kr + 8 * i), acc);
                    row[j] += hsum(acc);
                }
            }
            for (int j = 0; j < n; j++) row[j] *= scale;
        }
        return;
    }
#endif
    for (int j = 0; j < n; j++)
        for (int h = 0; h < R; h++)
            scores[(int64_t)h * ld + j0 + j] = dot(query_row(q, ldq, group, D, h), k + (int64_t)j * D, D) * scale;
}

#ifdef KERNELS_AVX512
/* o[r][d0 .. d0 + 16 NV) += sum_j p[r][j] v[j][...], in increasing j: per element the same chain
 * of fused multiply-adds as one axpy per position. */
template <int NR, int NV>
static inline void accum_tile(float *const *o, const float *const *p, const float *v, int n, int d0, int ldv) {
    __m512 acc[NR][NV];
    for (int r = 0; r < NR; r++)
        for (int c = 0; c < NV; c++) acc[r][c] = _mm512_loadu_ps(o[r] + d0 + 16 * c);
    for (int j = 0; j < n; j++) {
        const float *vr = v + (int64_t)j * ldv + d0;
        __m512 vv[NV];
        for (int c = 0; c < NV; c++) vv[c] = _mm512_loadu_ps(vr + 16 * c);
        for (int r = 0; r < NR; r++) {
            __m512 pj = _mm512_set1_ps(p[r][j]);
            for (int c = 0; c < NV; c++) acc[r][c] = _mm512_fmadd_ps(pj, vv[c], acc[r][c]);
        }
    }
    for (int r = 0; r < NR; r++)
        for (int c = 0; c < NV; c++) _mm512_storeu_ps(o[r] + d0 + 16 * c, acc[r][c]);
}
#endif

static void attn_accum(float *out, int ldo, const float *probs, int ld, int j0, int nq, int group, const float *v,
                       int n, int D, int ldv) {
    int R = nq * group;
#ifdef KERNELS_AVX512
    if (D % 16 == 0) { // up to 4 rows x 64 dims in registers; each v row loaded once for them all
        for (int i = 0; i < R; i += 4) {
            int nr = R - i < 4 ? R - i : 4;
            const float *p[4];
            float *o[4];
            for (int r = 0; r < nr; r++) {
                p[r] = probs + (int64_t)(i + r) * ld + j0;
                o[r] = (float *)query_row(out, ldo, group, D, i + r);
            }
            for (int d0 = 0; d0 < D; d0 += 64) {
                int nv = (D - d0) / 16 < 4 ? (D - d0) / 16 : 4;
#define ACCUM(NR)                                       \
    (nv == 4   ? accum_tile<NR, 4>(o, p, v, n, d0, ldv) \
     : nv == 3 ? accum_tile<NR, 3>(o, p, v, n, d0, ldv) \
     : nv == 2 ? accum_tile<NR, 2>(o, p, v, n, d0, ldv) \
               : accum_tile<NR, 1>(o, p, v, n, d0, ldv))
                if (nr == 4) ACCUM(4);
                else if (nr == 3) ACCUM(3);
                else if (nr == 2) ACCUM(2);
                else ACCUM(1);
#undef ACCUM
            }
        }
        return;
    }
#endif
#ifdef KERNELS_VECTOR
    if (D % 8 == 0) { // out accumulated in registers 64 dims at a time
        for (int h = 0; h < R; h++) {
            const float *p = probs + (int64_t)h * ld + j0;
            float *oh = (float *)query_row(out, ldo, group, D, h);
            for (int d0 = 0; d0 < D; d0 += 64) {
                int nv = (D - d0) / 8 < 8 ? (D - d0) / 8 : 8;
                __m256 acc[8];
                for (int i = 0; i < nv; i++) acc[i] = _mm256_loadu_ps(oh + d0 + 8 * i);
                for (int j = 0; j < n; j++) {
                    __m256 pj = _mm256_set1_ps(p[j]);
                    const float *vr = v + (int64_t)j * ldv + d0;
                    for (int i = 0; i < nv; i++) acc[i] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vr + 8 * i), acc[i]);
                }
                for (int i = 0; i < nv; i++) _mm256_storeu_ps(oh + d0 + 8 * i, acc[i]);
            }
        }
        return;
    }
#endif
    for (int j = 0; j < n; j++)
        for (int h = 0; h < R; h++)
            axpy((float *)query_row(out, ldo, group, D, h), probs[(int64_t)h * ld + j0 + j], v + (int64_t)j * ldv, D);
}

/* MLA's absorbed query for one token and head: out[0..K) = sum over i < n, in increasing i, of
 * a[i] * W[row0 + i, 0..K), each weight the value row_to_f32 gives, one fused multiply-add per
 * column and row: row_to_f32 of every row then attn_accum over them, bit for bit. FP8 on the vector
 * tables (K a multiple of the vector width) widens in registers; anything else goes through that
 * widened copy in scratch (n * K floats). out may hold anything on entry. */
static void rows_accum(float *out, const float *a, int n, const void *w, int dtype, int64_t row0, int K,
                       const float *wscale, float *scratch) {
    if (dtype == F8_FINITE) dtype = F8; // the same values; row_to_f32 takes the stored dtype
#ifdef KERNELS_VECTOR
    if (dtype == F8 && K % VW == 0) {
        const uint8_t *w8 = (const uint8_t *)w;
        int nbk = (K + F8_BLOCK - 1) / F8_BLOCK;
        for (int c0 = 0; c0 < K; c0 += 4 * VW) { // up to 4 vectors of columns, all in one 128-column block
            int nv = (K - c0) / VW < 4 ? (K - c0) / VW : 4;
            vecw acc[4] = {vw_zero(), vw_zero(), vw_zero(), vw_zero()};
            for (int i = 0; i < n; i++) {
                int64_t r = row0 + i;
                vecw sv = vw_set1(wscale[(r / F8_BLOCK) * nbk + c0 / F8_BLOCK] * 256.0f), av = vw_set1(a[i]);
                const uint8_t *p = w8 + r * K + c0;
                for (int v = 0; v < nv; v++) acc[v] = vw_fma(av, vw_mul(f8xvw(p + v * VW), sv), acc[v]);
            }
            for (int v = 0; v < nv; v++) vw_store(out + c0 + v * VW, acc[v]);
        }
        return;
    }
#endif
    for (int i = 0; i < n; i++) row_to_f32(scratch + (int64_t)i * K, w, dtype, row0 + i, K, wscale);
    memset(out, 0, sizeof(float) * (size_t)K);
    attn_accum(out, 0, a, n, 0, 1, 1, scratch, n, K, K);
}

/* dot(W[row, 0..K), x) with W's row as row_to_f32 gives it: row_to_f32 then dot, bit for bit (FP8
 * on the vector tables widens in registers; else through scratch, K floats). */
static float row_dot(const void *w, int dtype, int64_t row, int K, const float *wscale, const float *x,
                     float *scratch) {
    if (dtype == F8_FINITE) dtype = F8;
#ifdef KERNELS_VECTOR
    if (dtype == F8) {
        const uint8_t *p = (const uint8_t *)w + row * K;
        const float *sc = wscale + (row / F8_BLOCK) * (int64_t)((K + F8_BLOCK - 1) / F8_BLOCK);
        // dot's own steps: two 8-float accumulators over 16 columns, then 8, then one at a time.
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        int i = 0;
        for (; i + 16 <= K; i += 16) {
            __m256 sv = _mm256_set1_ps(sc[i / F8_BLOCK] * 256.0f); // 16 | 128: one block
            acc0 = _mm256_fmadd_ps(_mm256_mul_ps(f8x8(p + i), sv), _mm256_loadu_ps(x + i), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_mul_ps(f8x8(p + i + 8), sv), _mm256_loadu_ps(x + i + 8), acc1);
        }
        for (; i + 8 <= K; i += 8) {
            if ((i + 7) / F8_BLOCK != i / F8_BLOCK) break; // 8 columns across a block edge: the copy
            acc0 = _mm256_fmadd_ps(_mm256_mul_ps(f8x8(p + i), _mm256_set1_ps(sc[i / F8_BLOCK] * 256.0f)),
                                   _mm256_loadu_ps(x + i), acc0);
        }
        if (i + 8 > K) {
            float s = hsum(_mm256_add_ps(acc0, acc1));
            for (; i < K; i++) s += f8_table.v[p[i]] * sc[i / F8_BLOCK] * x[i];
            return s;
        }
    }
#endif
    row_to_f32(scratch, w, dtype, row, K, wscale);
    return dot(scratch, x, K);
}

} // namespace KERNELS_NS
} // namespace maya

#endif
