/* test_kernels.cpp: every kernel table against naive double-precision references, with explicit
 * tolerances (llm.c validate_result style), plus the batch-invariance property the scheduler
 * relies on (a token's matmul result does not depend on the other tokens in the batch). */
#include <string.h>

#include <algorithm>
#include <vector>

#include "../src/checkpoint.h" // quantize_q8_matrix
#include "../src/kernels.h"
#include "test.h"

using namespace maya;

namespace {

struct Rand {
    uint64_t s = 88172645463325252ull;
    float next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return (float)((s >> 40) * (1.0 / 8388608.0)) - 1.0f;
    }
};

float bf16_to_f32(uint16_t h) {
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

// Random weights of `dtype` plus their exact f32 values.
void make_weights(int dtype, int n, Rand &r, std::vector<uint8_t> *raw, std::vector<float> *vals) {
    raw->assign((size_t)n * (dtype == 0 ? 4 : 2), 0);
    vals->resize((size_t)n);
    for (int i = 0; i < n; i++) {
        float v = r.next();
        if (dtype == 0) {
            memcpy(&(*raw)[(size_t)i * 4], &v, 4);
            (*vals)[(size_t)i] = v;
        } else if (dtype == 2) {
            uint32_t b;
            memcpy(&b, &v, 4);
            uint16_t h = (uint16_t)(b >> 16);
            memcpy(&(*raw)[(size_t)i * 2], &h, 2);
            (*vals)[(size_t)i] = bf16_to_f32(h);
        } else { // f16: a random sign, exponent 10..15 (|v| in [2^-5, 2)) and mantissa
            uint32_t bits = (uint32_t)((v + 1.0f) * 8388608.0f);
            uint16_t sign = (bits & 1) ? 0x8000 : 0, ex = (uint16_t)(10 + (bits >> 1) % 6),
                     m = (uint16_t)((bits >> 4) & 0x3FF);
            uint16_t h = (uint16_t)(sign | (ex << 10) | m);
            memcpy(&(*raw)[(size_t)i * 2], &h, 2);
            (*vals)[(size_t)i] = (sign ? -1.0f : 1.0f) * ldexpf(1.0f + (float)m / 1024.0f, (int)ex - 15);
        }
    }
}

// Every table this CPU runs (scalar, avx2, avx512).
std::vector<const Kernels *> tables() {
    const Kernels *t[3];
    int n = kernels_supported(t);
    return std::vector<const Kernels *>(t, t + n);
}

} // namespace

TEST(matmul_matches_reference_all_dtypes_and_shapes) {
    Rand r;
    for (const Kernels *k : tables()) {
        for (int dtype : {0, 1, 2}) {
            for (int K : {8, 13, 64, 100}) {
                const int N = 21; // not a multiple of 4 rows
                std::vector<uint8_t> raw;
                std::vector<float> w;
                make_weights(dtype, N * K, r, &raw, &w);
                std::vector<float> bias(N);
                for (float &b : bias) b = r.next();
                for (int T : {1, 2, 3, 4, 5, 7, 8, 16, 17, 33}) {
                    int ldx = K + 3, ldy = N + 5;
                    std::vector<float> x((size_t)T * ldx), y((size_t)T * ldy, -7.0f), scratch((size_t)kMatmulRows * K);
                    for (float &v : x) v = r.next();
                    // Row blocks as the backend issues them, starting at r0 > 0 for the second.
                    for (int r0 = 0; r0 < N; r0 += kMatmulRows) {
                        int r1 = r0 + kMatmulRows < N ? r0 + kMatmulRows : N;
                        k->matmul(x.data(), ldx, T, raw.data(), dtype, K, r0, r1, y.data(), ldy, bias.data(),
                                  scratch.data(), T % 2 == 0, nullptr);
                    }
                    double worst = 0;
                    for (int t = 0; t < T; t++)
                        for (int n = 0; n < N; n++) {
                            double ref = bias[(size_t)n], mag = fabs(ref);
                            for (int i = 0; i < K; i++) {
                                ref += (double)w[(size_t)n * K + i] * x[(size_t)t * ldx + i];
                                mag += fabs((double)w[(size_t)n * K + i] * x[(size_t)t * ldx + i]);
                            }
                            double err = fabs(y[(size_t)t * ldy + n] - ref) / (mag * 1e-6 + 1e-7);
                            if (err > worst) worst = err;
                        }
                    CHECK_MSG(worst <= 1.0, "%s dtype %d K %d T %d: error %.3g x tolerance", k->name, dtype, K, T,
                              worst);
                    for (int t = 0; t < T; t++) // padding columns untouched
                        for (int n = N; n < ldy; n++) CHECK(y[(size_t)t * ldy + n] == -7.0f);
                }
            }
        }
    }
}

TEST(matmul_is_batch_invariant) {
    // The same token row gives bit-identical outputs alone (T = 1, decode path) and inside
    // batches of every size (3/2-token tiles, the widened-copy path from 48 tokens up), with the
    // one-row streaming order or the 4-row cached order.
    Rand r;
    const int K = 72, N = 16;
    for (const Kernels *k : tables()) {
        for (int dtype : {0, 1, 2}) {
            std::vector<uint8_t> raw;
            std::vector<float> w;
            make_weights(dtype, N * K, r, &raw, &w);
            std::vector<float> x((size_t)40 * K), scratch((size_t)kMatmulRows * K);
            for (float &v : x) v = r.next();
            std::vector<float> alone((size_t)40 * N);
            for (int t = 0; t < 40; t++)
                k->matmul(&x[(size_t)t * K], K, 1, raw.data(), dtype, K, 0, N, &alone[(size_t)t * N], N, nullptr,
                          scratch.data(), false, nullptr);
            for (bool is_streaming : {false, true})
                for (int T : {1, 2, 4, 5, 9, 16, 40, 47, 48, 60}) {
                    std::vector<float> xs((size_t)T * K), batched((size_t)T * N);
                    for (int t = 0; t < T; t++) memcpy(&xs[(size_t)t * K], &x[(size_t)(t % 40) * K], K * sizeof(float));
                    k->matmul(xs.data(), K, T, raw.data(), dtype, K, 0, N, batched.data(), N, nullptr, scratch.data(),
                              is_streaming, nullptr);
                    for (int t = 0; t < T; t++)
                        CHECK_MSG(memcmp(&alone[(size_t)(t % 40) * N], &batched[(size_t)t * N], N * sizeof(float)) == 0,
                                  "%s dtype %d T %d streaming %d", k->name, dtype, T, (int)is_streaming);
                }
        }
    }
}

TEST(vector_kernels_match_reference) {
    Rand r;
    for (const Kernels *k : tables()) {
        for (int n : {1, 7, 8, 16, 33, 100}) {
            std::vector<float> a((size_t)n), b((size_t)n), w((size_t)n), out((size_t)n), y((size_t)n);
            for (int i = 0; i < n; i++) {
                a[(size_t)i] = r.next();
                b[(size_t)i] = r.next();
                w[(size_t)i] = 1 + r.next() * 0.1f;
            }
            double d = 0, ss = 0;
            for (int i = 0; i < n; i++) {
                d += (double)a[(size_t)i] * b[(size_t)i];
                ss += (double)a[(size_t)i] * a[(size_t)i];
            }
            CHECK_NEAR(k->dot(a.data(), b.data(), n), d, 1e-5);
            k->rmsnorm(out.data(), a.data(), w.data(), n, 1e-5f);
            double inv = 1.0 / sqrt(ss / n + 1e-5);
            for (int i = 0; i < n; i++) CHECK_NEAR(out[(size_t)i], a[(size_t)i] * inv * w[(size_t)i], 1e-5);
            k->silu_mul(out.data(), a.data(), b.data(), n);
            for (int i = 0; i < n; i++) {
                double g = a[(size_t)i];
                CHECK_NEAR(out[(size_t)i], g / (1 + exp(-g)) * b[(size_t)i], 1e-6);
            }
            y = b;
            k->axpy(y.data(), 0.5f, a.data(), n);
            for (int i = 0; i < n; i++) CHECK_NEAR(y[(size_t)i], b[(size_t)i] + 0.5 * a[(size_t)i], 1e-6);
        }
        // Row widening: bf16 exact, f16 including a subnormal and negative zero.
        uint16_t bf[9] = {0x3F80, 0xBF80, 0x4000, 0x0000, 0x8000, 0x3E80, 0x7F80, 0x0001, 0x4049};
        float out9[9];
        k->row_to_f32(out9, bf, 2, 0, 9, nullptr);
        for (int i = 0; i < 9; i++) {
            float want = bf16_to_f32(bf[i]);
            CHECK(memcmp(&out9[i], &want, 4) == 0);
        }
        uint16_t h[9] = {0x3C00, 0xBC00, 0x0001, 0x8000, 0x7BFF, 0x3555, 0x0400, 0x03FF, 0x4248};
        double hw[9] = {1, -1, ldexp(1, -24), -0.0, 65504, 0.333251953125, ldexp(1, -14), ldexp(1023, -24), 3.140625};
        k->row_to_f32(out9, h, 1, 0, 9, nullptr);
        for (int i = 0; i < 9; i++) CHECK_MSG(out9[i] == (float)hw[i], "%s f16 %04x -> %g", k->name, h[i], out9[i]);
        CHECK(signbit(out9[3]));
    }
}

TEST(softmax_and_silu_match_reference_over_the_float_range) {
    // The vector exp (a polynomial times 2^n) against libm in double: softmax rows with a wide
    // spread of scores, and SiLU from deep negative (exp overflow side) to large positive gates.
    Rand r;
    for (const Kernels *k : tables()) {
        for (int n : {1, 5, 16, 37, 300}) {
            std::vector<float> row((size_t)n);
            for (int j = 0; j < n; j++) row[(size_t)j] = r.next() * 40.0f - (j % 7 == 3 ? 80.0f : 0.0f);
            std::vector<double> ref((size_t)n), dist((size_t)n);
            double mx = row[0], sum = 0;
            for (float v : row) mx = v > mx ? v : mx;
            for (int j = 0; j < n; j++) sum += ref[(size_t)j] = exp(-(dist[(size_t)j] = mx - row[(size_t)j]));
            k->softmax(row.data(), n);
            // exp(-d) carries the float rounding of d (d ulps of relative error), and below the normal
            // range (d > 87) any value under 1e-37 will do
            for (int j = 0; j < n; j++)
                CHECK_MSG(fabs(row[(size_t)j] - ref[(size_t)j] / sum) <=
                              4e-7 * (1 + dist[(size_t)j]) * ref[(size_t)j] / sum + 1e-37,
                          "%s softmax n %d j %d: %g vs %g", k->name, n, j, row[(size_t)j], ref[(size_t)j] / sum);
        }
        const float gs[] = {-150.0f, -90.0f, -87.0f, -30.0f, -5.5f,  -1e-3f, 0.0f,   2.5f,
                            17.0f,   60.0f,  88.0f,  100.0f, -0.75f, 3.25f,  -12.0f, 1.0f};
        std::vector<float> g(gs, gs + 16), up(16, 1.5f), out(16);
        k->silu_mul(out.data(), g.data(), up.data(), 16);
        for (int i = 0; i < 16; i++) {
            double want = (double)g[(size_t)i] / (1 + exp(-(double)g[(size_t)i])) * 1.5;
            // gates under -87 (e^-g past the float range, clamped by the vector exp): any value under
            // 1e-35, a zero for every use downstream
            CHECK_MSG(fabs(out[(size_t)i] - want) <= 3e-7 * fabs(want) + 1e-35, "%s silu(%g) = %g, want %g", k->name,
                      g[(size_t)i], out[(size_t)i], want);
        }
        g[3] = NAN;
        k->silu_mul(out.data(), g.data(), up.data(), 16);
        CHECK_MSG(isnan(out[3]), "%s silu(NaN) is not NaN", k->name);
    }
}

TEST(attention_kernels_match_reference) {
    // Scores and the probability-weighted sum over a block of positions, for head sizes that are
    // a multiple of 8 (vector path, incl. a 64 + 8 split) and that are not (generic path).
    Rand r;
    for (const Kernels *k : tables()) {
        for (int D : {12, 16, 64, 72, 128, 288})
            for (int n : {11, 37}) { // a part group of 16 keys; two whole groups and a part (AVX-512)
                const int group = 3, j0 = 5, ld = j0 + n + 4;
                std::vector<float> q((size_t)group * D), kk((size_t)n * D), v((size_t)n * D);
                for (float &x : q) x = r.next();
                for (float &x : kk) x = r.next();
                for (float &x : v) x = r.next();
                std::vector<float> sc((size_t)group * ld, -9.0f);
                k->attn_scores(sc.data(), ld, j0, q.data(), 0, 1, group, kk.data(), n, D, 0.25f);
                for (int h = 0; h < group; h++) {
                    for (int j = 0; j < ld; j++) {
                        if (j < j0 || j >= j0 + n) {
                            CHECK(sc[(size_t)h * ld + j] == -9.0f);
                            continue;
                        }
                        double ref = 0;
                        for (int d = 0; d < D; d++) ref += (double)q[(size_t)h * D + d] * kk[(size_t)(j - j0) * D + d];
                        CHECK_NEAR(sc[(size_t)h * ld + j], ref * 0.25, 1e-5);
                    }
                }
                std::vector<float> out((size_t)group * D), base((size_t)group * D);
                for (float &x : base) x = r.next();
                out = base;
                k->attn_accum(out.data(), 0, sc.data(), ld, j0, 1, group, v.data(), n, D, D);
                for (int h = 0; h < group; h++)
                    for (int d = 0; d < D; d++) {
                        double ref = base[(size_t)h * D + d];
                        for (int j = 0; j < n; j++) ref += (double)sc[(size_t)h * ld + j0 + j] * v[(size_t)j * D + d];
                        CHECK_NEAR(out[(size_t)h * D + d], ref, 1e-5);
                    }
                // Rows of v ldv = D + 9 floats apart (MLA's latent inside its cache rows): the same sums.
                const int ldv = D + 9;
                std::vector<float> vp((size_t)n * ldv, 1e30f), outp = base;
                for (int j = 0; j < n; j++)
                    for (int d = 0; d < D; d++) vp[(size_t)j * ldv + d] = v[(size_t)j * D + d];
                k->attn_accum(outp.data(), 0, sc.data(), ld, j0, 1, group, vp.data(), n, D, ldv);
                CHECK_MSG(memcmp(outp.data(), out.data(), out.size() * sizeof(float)) == 0, "%s attn_accum ldv D %d",
                          k->name, D);
            }
    }
}

TEST(attention_kernels_give_each_row_the_same_bits_in_any_tile) {
    // nq tokens x group heads with the tokens ldq floats apart (a prefill tile) against the same
    // cached rows: every (row, position) score and every output equal, bit for bit, those of the
    // row's token computed alone, and of its head alone.
    Rand r;
    for (const Kernels *k : tables()) {
        for (int D : {16, 64, 72, 128})
            for (int group : {1, 2, 5})
                for (int nq : {1, 3, 4, 6}) {
                    const int n = 19, j0 = 2, ld = j0 + n, H = group + 1, ldq = H * D, R = nq * group;
                    std::vector<float> q((size_t)nq * ldq), kk((size_t)n * D), v((size_t)n * D);
                    for (float &x : q) x = r.next();
                    for (float &x : kk) x = r.next();
                    for (float &x : v) x = r.next();
                    std::vector<float> sc((size_t)R * ld), one((size_t)ld);
                    k->attn_scores(sc.data(), ld, j0, q.data(), ldq, nq, group, kk.data(), n, D, 0.125f);
                    for (int i = 0; i < R; i++) {
                        const float *qi = q.data() + (size_t)(i / group) * ldq + (size_t)(i % group) * D;
                        k->attn_scores(one.data(), ld, j0, qi, 0, 1, 1, kk.data(), n, D, 0.125f);
                        CHECK_MSG(memcmp(&sc[(size_t)i * ld + j0], &one[(size_t)j0], (size_t)n * 4) == 0,
                                  "%s scores D %d group %d nq %d row %d", k->name, D, group, nq, i);
                    }
                    for (int i = 0; i < R; i++) k->softmax(&sc[(size_t)i * ld + j0], n);
                    std::vector<float> out((size_t)nq * ldq, 0.5f), alone((size_t)D);
                    k->attn_accum(out.data(), ldq, sc.data(), ld, j0, nq, group, v.data(), n, D, D);
                    for (int i = 0; i < R; i++) {
                        std::fill(alone.begin(), alone.end(), 0.5f);
                        k->attn_accum(alone.data(), 0, &sc[(size_t)i * ld], ld, j0, 1, 1, v.data(), n, D, D);
                        CHECK_MSG(memcmp(&out[(size_t)(i / group) * ldq + (size_t)(i % group) * D], alone.data(),
                                         (size_t)D * 4) == 0,
                                  "%s accum D %d group %d nq %d row %d", k->name, D, group, nq, i);
                    }
                    // the head past the group's (H = group + 1) is never written
                    for (int t = 0; t < nq; t++)
                        for (int d = 0; d < D; d++) CHECK(out[(size_t)t * ldq + (size_t)group * D + d] == 0.5f);
                }
    }
}

// e4m3fn decoded by hand (OCP FP8 spec): a few exact values, subnormals, the sign, NaN.
static double f8_value(uint8_t b) {
    int exp = (b >> 3) & 0xF, mant = b & 7;
    double v = exp == 0 ? mant * ldexp(1.0, -9) : (1.0 + mant / 8.0) * ldexp(1.0, exp - 7);
    return (b & 0x80) ? -v : v;
}

TEST(fp8_block_scaled_matmul_and_rows) {
    Rand r;
    for (const Kernels *k : tables()) {
        // Known bytes: 0x38 = 1.0, 0x7E = 448 (the largest), 0x01 = 2^-9, 0xC0 = -2.0, 0x7F = NaN.
        uint8_t known[8] = {0x38, 0x7E, 0x01, 0xC0, 0x00, 0x3C, 0x30, 0x7F};
        float scale1[1] = {1.0f}, out[8];
        k->row_to_f32(out, known, 4, 0, 8, scale1);
        CHECK(out[0] == 1.0f && out[1] == 448.0f && out[2] == ldexpf(1.0f, -9) && out[3] == -2.0f && out[4] == 0.0f);
        CHECK(out[5] == 1.5f && out[6] == 0.5f && out[7] != out[7]);
        // 150 x 200 weights: 2 x 2 blocks of 128, both edges partial, each block its own scale.
        const int N = 150, K = 200, BR = 2, BC = 2;
        std::vector<uint8_t> raw((size_t)N * K);
        std::vector<float> scales(BR * BC), w((size_t)N * K);
        for (float &s : scales) s = 0.01f + 0.02f * (r.next() + 1.0f);
        for (int n = 0; n < N; n++)
            for (int i = 0; i < K; i++) {
                uint8_t b = (uint8_t)(((uint32_t)((r.next() + 1.0f) * 1000.0f)) & 0xFF);
                if ((b & 0x7F) == 0x7F) b ^= 1; // no NaN
                raw[(size_t)n * K + i] = b;
                w[(size_t)n * K + i] = (float)(f8_value(b) * scales[(size_t)(n / 128) * BC + i / 128]);
            }
        std::vector<float> row((size_t)K);
        k->row_to_f32(row.data(), raw.data(), 4, 140, K, scales.data());
        bool same = true;
        for (int i = 0; i < K; i++) same = same && row[(size_t)i] == w[(size_t)140 * K + i];
        CHECK_MSG(same, "%s: fp8 row 140 widened wrongly", k->name);
        for (int T : {1, 3, 7, 8, 50, 51}) { // 7 streaming and 50, 51 cached: rows widened into scratch first
            std::vector<float> x((size_t)T * K), y((size_t)T * N), alone((size_t)N), scratch((size_t)kMatmulRows * K);
            for (float &v : x) v = r.next();
            for (int r0 = 0; r0 < N; r0 += kMatmulRows)
                k->matmul(x.data(), K, T, raw.data(), 4, K, r0, r0 + kMatmulRows < N ? r0 + kMatmulRows : N, y.data(),
                          N, nullptr, scratch.data(), T == 3 || T == 7, scales.data());
            double worst = 0;
            for (int t = 0; t < T; t++)
                for (int n = 0; n < N; n++) {
                    double ref = 0, mag = 1e-7;
                    for (int i = 0; i < K; i++) {
                        ref += (double)w[(size_t)n * K + i] * x[(size_t)t * K + i];
                        mag += fabs((double)w[(size_t)n * K + i] * x[(size_t)t * K + i]);
                    }
                    double err = fabs(y[(size_t)t * N + n] - ref) / (mag * 1e-6);
                    if (err > worst) worst = err;
                }
            CHECK_MSG(worst <= 1.0, "%s fp8 T %d: error %.3g x tolerance", k->name, T, worst);
            // No NaN byte here: the kDtF8Finite kernels give the same bits.
            std::vector<float> yf((size_t)T * N);
            for (int r0 = 0; r0 < N; r0 += kMatmulRows)
                k->matmul(x.data(), K, T, raw.data(), kDtF8Finite, K, r0, r0 + kMatmulRows < N ? r0 + kMatmulRows : N,
                          yf.data(), N, nullptr, scratch.data(), T == 3 || T == 7, scales.data());
            CHECK_MSG(memcmp(yf.data(), y.data(), yf.size() * sizeof(float)) == 0, "%s fp8 finite T %d differs",
                      k->name, T);
            // Batch invariance: the first and last tokens alone give the same bits.
            for (int t : {0, T - 1}) {
                for (int r0 = 0; r0 < N; r0 += kMatmulRows)
                    k->matmul(&x[(size_t)t * K], K, 1, raw.data(), 4, K, r0,
                              r0 + kMatmulRows < N ? r0 + kMatmulRows : N, alone.data(), N, nullptr, scratch.data(),
                              false, scales.data());
                CHECK_MSG(memcmp(alone.data(), &y[(size_t)t * N], N * sizeof(float)) == 0, "%s fp8 T %d token %d alone",
                          k->name, T, t);
            }
        }
    }
}

// Every e4m3 byte through the matmul's widening (the vector paths widen 16 or 32 bytes at a time):
// row n holds byte n at column n % K (zeros elsewhere), x is all ones, so y[n] is byte n's value
// exactly, NaN (0x7F, 0xFF) included, at every vector position, cached and streaming, T 1, 3, 6 and 48
// (the last two through the row block widened into scratch).
TEST(fp8_matmul_widens_every_byte_exactly) {
    for (const Kernels *k : tables()) {
        for (int K : {32, 48, 200}) {
            const int N = 256, nbc = (K + 127) / 128;
            std::vector<uint8_t> raw((size_t)N * K, 0);
            for (int n = 0; n < N; n++) raw[(size_t)n * K + (size_t)(n % K)] = (uint8_t)n;
            std::vector<float> scales((size_t)2 * nbc, 1.0f), scratch((size_t)kMatmulRows * K);
            for (int dtype : {4, kDtF8Finite}) // kDtF8Finite: only the 254 non-NaN bytes are checked
                for (int T : {1, 3, 6, 48})    // 6 streaming, 48 cached: through the widened scratch copy
                    for (bool streaming : {false, true}) {
                        std::vector<float> x((size_t)T * K, 1.0f), y((size_t)T * N);
                        for (int r0 = 0; r0 < N; r0 += kMatmulRows)
                            k->matmul(x.data(), K, T, raw.data(), dtype, K, r0, r0 + kMatmulRows, y.data(), N, nullptr,
                                      scratch.data(), streaming, scales.data());
                        int bad = 0;
                        for (int t = 0; t < T; t++)
                            for (int n = 0; n < N; n++) {
                                float v = y[(size_t)t * N + n], want = (float)f8_value((uint8_t)n);
                                bool nan = (n & 0x7F) == 0x7F;
                                if (nan && dtype != 4) continue;
                                if (nan ? v == v : v != want) bad++;
                            }
                        CHECK_MSG(bad == 0, "%s fp8 dtype %d K %d T %d streaming %d: %d wrong values", k->name, dtype,
                                  K, T, (int)streaming, bad);
                    }
        }
    }
}

// matmul_f8x (decode: x scaled once by f8_x_scale, the AVX-512 table widening e4m3 straight to f32
// bits) gives matmul's bits for every token count it serves, streaming or cached, with a bias, partial
// blocks (K = 200) and whole ones, small activations included (no product may underflow), and every
// non-NaN byte value in the weights.
TEST(fp8_scaled_activation_matmul_matches_matmul_bits) {
    Rand r;
    for (const Kernels *k : tables()) {
        for (int K : {200, 256, 1040}) {
            const int N = 150, nbc = (K + 127) / 128;
            std::vector<uint8_t> raw((size_t)N * K);
            for (size_t i = 0; i < raw.size(); i++) {
                uint8_t b = (uint8_t)(i * 37 + i / 97);
                if ((b & 0x7F) == 0x7F) b ^= 1;
                raw[i] = b;
            }
            std::vector<float> scales((size_t)2 * nbc), bias(N), scratch((size_t)kMatmulRows * K);
            for (float &v : scales) v = 0.01f + 0.02f * (r.next() + 1.0f);
            for (float &v : bias) v = r.next();
            for (int T = 1; T <= kF8ScaledMaxTokens; T++)
                for (bool streaming : {false, true}) {
                    std::vector<float> x((size_t)T * K), xs((size_t)T * K), y((size_t)T * N), ys((size_t)T * N);
                    for (size_t i = 0; i < x.size(); i++) x[i] = r.next() * (i % 3 == 0 ? 1e-7f : 1.0f);
                    for (size_t i = 0; i < x.size(); i++) xs[i] = x[i] * k->f8_x_scale;
                    for (int r0 = 0; r0 < N; r0 += kMatmulRows) {
                        int r1 = r0 + kMatmulRows < N ? r0 + kMatmulRows : N;
                        k->matmul(x.data(), K, T, raw.data(), kDtF8Finite, K, r0, r1, y.data(), N, bias.data(),
                                  scratch.data(), streaming, scales.data());
                        k->matmul_f8x(xs.data(), K, T, raw.data(), scales.data(), K, r0, r1, ys.data(), N, bias.data(),
                                      streaming);
                    }
                    CHECK_MSG(memcmp(y.data(), ys.data(), y.size() * sizeof(float)) == 0,
                              "%s matmul_f8x K %d T %d streaming %d differs from matmul", k->name, K, T,
                              (int)streaming);
                }
        }
    }
}

// MLA decode's fused W_UK / W_UV products give the bits of the widened-copy path they replace
// (row_to_f32 of each row, then attn_accum / dot), FP8 with and without NaN bytes, bf16 and f32
// weights, whole and partial 128-column blocks, odd widths that take the copy.
TEST(mla_fused_rows_accum_and_row_dot_match_the_widened_rows) {
    Rand r;
    for (const Kernels *k : tables()) {
        for (int K : {64, 200, 256, 100, 36}) {
            const int N = 150, nbc = (K + 127) / 128;
            std::vector<uint8_t> raw((size_t)N * K);
            for (size_t i = 0; i < raw.size(); i++) raw[i] = (uint8_t)(i * 37 + i / 97);
            std::vector<float> scales((size_t)2 * nbc), wf((size_t)N * K), x((size_t)N), xk((size_t)K);
            std::vector<uint16_t> wb((size_t)N * K);
            for (float &v : scales) v = 0.01f + 0.02f * (r.next() + 1.0f);
            scales[(size_t)nbc - 1] = 300.0f; // a large scale: the finite path's scale * 2^120 would overflow
            for (float &v : wf) v = r.next();
            for (size_t i = 0; i < wb.size(); i++)
                wb[i] = (uint16_t)(0x3C00 + (i * 7919) % 0x0800) ^ (uint16_t)(i & 1 ? 0x8000 : 0);
            for (float &v : x) v = r.next();
            for (float &v : xk) v = r.next();
            struct {
                const void *w;
                int dtype;
            } mats[] = {{raw.data(), 4}, {raw.data(), kDtF8Finite}, {wb.data(), 2}, {wf.data(), 0}};
            for (auto &m : mats) {
                if (m.dtype == kDtF8Finite) // no NaN byte for the finite kernels
                    for (uint8_t &b : raw)
                        if ((b & 0x7F) == 0x7F) b ^= 1;
                int wdt = m.dtype == kDtF8Finite ? 4 : m.dtype; // row_to_f32 takes the stored dtype
                for (int n : {1, 3, 64}) {
                    int64_t row0 = 70;
                    std::vector<float> wide((size_t)n * K), want((size_t)K, 0.0f), got((size_t)K, 5.0f),
                        scratch((size_t)n * K);
                    for (int i = 0; i < n; i++)
                        k->row_to_f32(&wide[(size_t)i * K], m.w, wdt, row0 + i, K, scales.data());
                    k->attn_accum(want.data(), 0, x.data(), n, 0, 1, 1, wide.data(), n, K, K);
                    k->rows_accum(got.data(), x.data(), n, m.w, m.dtype, row0, K, scales.data(), scratch.data());
                    bool same = true;
                    for (int c = 0; c < K; c++)
                        same = same && (memcmp(&want[(size_t)c], &got[(size_t)c], 4) == 0 ||
                                        (want[(size_t)c] != want[(size_t)c] && got[(size_t)c] != got[(size_t)c]));
                    CHECK_MSG(same, "%s rows_accum dtype %d K %d n %d differs from row_to_f32 + attn_accum", k->name,
                              m.dtype, K, n);
                }
                for (int64_t row : {0, 77, 149}) {
                    std::vector<float> wide((size_t)K), scratch((size_t)K);
                    k->row_to_f32(wide.data(), m.w, wdt, row, K, scales.data());
                    float want = k->dot(wide.data(), xk.data(), K),
                          got = k->row_dot(m.w, m.dtype, row, K, scales.data(), xk.data(), scratch.data());
                    CHECK_MSG(memcmp(&want, &got, 4) == 0 || (want != want && got != got),
                              "%s row_dot dtype %d K %d row %d: %.9g vs %.9g", k->name, m.dtype, K, (int)row, want,
                              got);
                }
            }
        }
    }
}

// Q8 activations as the kernels quantize them (per block of 32: d = max|x| / 127, round to even).
static void ref_quantize_q8(const float *x, int K, std::vector<int> *q, std::vector<double> *d) {
    q->resize((size_t)K);
    d->resize((size_t)K / 32);
    for (int b = 0; b < K / 32; b++) {
        float amax = 0;
        for (int i = 0; i < 32; i++) amax = fabsf(x[b * 32 + i]) > amax ? fabsf(x[b * 32 + i]) : amax;
        float id = amax > 0 ? 127.0f / amax : 0.0f;
        for (int i = 0; i < 32; i++) (*q)[(size_t)(b * 32 + i)] = (int)lrintf(x[b * 32 + i] * id);
        (*d)[(size_t)b] = amax / 127.0f;
    }
}

TEST(matmul_q8_matches_reference_and_is_batch_invariant) {
    // Every table against an exact integer reference of the same quantization (only the f32 sum
    // over blocks may differ), the split quantize + matmul_q8 equal to matmul, and a token's
    // result bit-identical alone and in batches of every size, streaming or cached.
    Rand r;
    for (const Kernels *k : tables()) {
        for (int K : {32, 96, 256}) {
            const int N = 21;
            std::vector<float> wf((size_t)N * K);
            for (float &v : wf) v = r.next();
            std::vector<int8_t> wq((size_t)N * K);
            std::vector<float> ws((size_t)N * K / 32), bias(N);
            quantize_q8_matrix(wf.data(), DT_F32, N, K, wq.data(), ws.data());
            for (float &b : bias) b = r.next();
            // row_to_f32 dequantizes exactly.
            std::vector<float> row((size_t)K);
            k->row_to_f32(row.data(), wq.data(), DT_Q8, 5, K, ws.data());
            for (int i = 0; i < K; i++)
                CHECK(row[(size_t)i] == (float)wq[(size_t)(5 * K + i)] * ws[(size_t)(5 * K + i) / 32]);
            for (int i = 0; i < K; i++)
                CHECK(fabsf(row[(size_t)i] - wf[(size_t)(5 * K + i)]) <= ws[(size_t)(5 * K + i) / 32] * 0.5f + 1e-7f);
            std::vector<float> x((size_t)40 * K), scratch((size_t)kMatmulRows * K);
            for (float &v : x) v = r.next();
            std::vector<float> alone((size_t)40 * N);
            for (int t = 0; t < 40; t++)
                for (int r0 = 0; r0 < N; r0 += kMatmulRows)
                    k->matmul(&x[(size_t)t * K], K, 1, wq.data(), DT_Q8, K, r0,
                              r0 + kMatmulRows < N ? r0 + kMatmulRows : N, &alone[(size_t)t * N], N, bias.data(),
                              scratch.data(), false, ws.data());
            double worst = 0;
            for (int t = 0; t < 40; t++) {
                std::vector<int> xq;
                std::vector<double> xd;
                ref_quantize_q8(&x[(size_t)t * K], K, &xq, &xd);
                for (int n = 0; n < N; n++) {
                    double ref = bias[(size_t)n], mag = fabs(ref);
                    for (int b = 0; b < K / 32; b++) {
                        long is = 0;
                        for (int i = 0; i < 32; i++)
                            is += (long)wq[(size_t)n * K + b * 32 + i] * xq[(size_t)(b * 32 + i)];
                        double term = (double)ws[(size_t)n * K / 32 + b] * xd[(size_t)b] * (double)is;
                        ref += term;
                        mag += fabs(term);
                    }
                    double err = fabs(alone[(size_t)t * N + n] - ref) / (mag * 1e-6 + 1e-7);
                    if (err > worst) worst = err;
                }
            }
            CHECK_MSG(worst <= 1.0, "%s q8 K %d: error %.3g x tolerance", k->name, K, worst);
            for (bool is_streaming : {false, true})
                for (int T : {1, 2, 3, 4, 5, 9, 16, 33, 40}) {
                    std::vector<float> batched((size_t)T * N);
                    k->matmul(x.data(), K, T, wq.data(), DT_Q8, K, 0, 16, batched.data(), N, bias.data(),
                              scratch.data(), is_streaming, ws.data());
                    k->matmul(x.data(), K, T, wq.data(), DT_Q8, K, 16, N, batched.data(), N, bias.data(),
                              scratch.data(), is_streaming, ws.data());
                    for (int t = 0; t < T; t++)
                        CHECK_MSG(memcmp(&alone[(size_t)t * N], &batched[(size_t)t * N], N * sizeof(float)) == 0,
                                  "%s q8 K %d T %d streaming %d", k->name, K, T, (int)is_streaming);
                    // The split form: quantize once, then matmul_q8.
                    std::vector<int8_t> xq((size_t)T * K);
                    std::vector<float> xd((size_t)T * K / 32), split((size_t)T * N);
                    for (int t = 0; t < T; t++)
                        k->quantize_q8(&x[(size_t)t * K], K, &xq[(size_t)t * K], &xd[(size_t)t * K / 32]);
                    k->matmul_q8(xq.data(), xd.data(), K, T, wq.data(), ws.data(), K, 0, N, split.data(), N,
                                 bias.data(), is_streaming);
                    CHECK_MSG(memcmp(split.data(), batched.data(), (size_t)T * N * sizeof(float)) == 0,
                              "%s q8 split T %d", k->name, T);
                }
        }
    }
}
