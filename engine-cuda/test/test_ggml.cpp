/* test_ggml.cpp: the GGUF block dtypes (kernels/ggml.h): dequantization against llama.cpp's values
 * (test/fixtures/gguf/dequant-rows.bin, from scripts/gguf/make_dequant_rows.py), the row sizes the
 * reader uses, and every kernel table's matmul over each block dtype against a double-precision
 * reference. */
#include <string.h>

#include <string>
#include <vector>

#include "../src/checkpoint.h"          // DType, dtype_row_bytes
#include "../src/kernels.h"             // Kernels, kernels_supported
#include "../src/kernels/ggml_blocks.h" // ggml_row_bytes
#include "test.h"

using namespace maya;

namespace {

const int kBlockDtypes[] = {DT_Q8_0, DT_Q4_0, DT_Q4_1, DT_Q5_0, DT_Q5_1, DT_Q4_K, DT_Q5_K, DT_Q6_K};

std::vector<const Kernels *> tables() {
    const Kernels *t[3];
    int n = kernels_supported(t);
    return std::vector<const Kernels *>(t, t + n);
}

struct DequantRows {
    int dtype, rows, cols;
    std::vector<uint8_t> raw;
    std::vector<float> vals;
};

bool read_dequant_rows(std::vector<DequantRows> *out) {
    std::string path = test_repo_root() + "/test/fixtures/gguf/dequant-rows.bin";
    FILE *f = fopen(path.c_str(), "rb");
    if (!f) return false;
    std::vector<uint8_t> buf;
    uint8_t chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf.insert(buf.end(), chunk, chunk + n);
    fclose(f);
    size_t pos = 0;
    auto u32 = [&](uint32_t *v) {
        if (pos + 4 > buf.size()) return false;
        memcpy(v, &buf[pos], 4);
        pos += 4;
        return true;
    };
    uint32_t magic, count;
    if (!u32(&magic) || memcmp(&magic, "MDQ1", 4) != 0 || !u32(&count)) return false;
    for (uint32_t e = 0; e < count; e++) {
        uint32_t dt, rows, cols;
        if (!u32(&dt) || !u32(&rows) || !u32(&cols)) return false;
        DequantRows d{(int)dt, (int)rows, (int)cols, {}, {}};
        size_t rb = (size_t)ggml_row_bytes((int)dt, cols) * rows, vb = (size_t)rows * cols * 4;
        if (rb == 0 || pos + rb + vb > buf.size()) return false;
        d.raw.assign(buf.begin() + (long)pos, buf.begin() + (long)(pos + rb));
        d.vals.resize((size_t)rows * cols);
        memcpy(d.vals.data(), &buf[pos + rb], vb);
        pos += rb + vb;
        out->push_back(std::move(d));
    }
    return pos == buf.size();
}

struct Rand {
    uint64_t s = 0x9E3779B97F4A7C15ull;
    uint32_t u32() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return (uint32_t)(s >> 32);
    }
    float uniform() { return (float)(u32() >> 8) * (1.0f / 8388608.0f) - 1.0f; } // [-1, 1)
};

/* An f16 of magnitude in [2^lo, 2^hi) with a random mantissa (and sign when is_signed). */
uint16_t rand_f16(Rand &r, int lo, int hi, bool is_signed) {
    uint32_t u = r.u32();
    uint16_t ex = (uint16_t)(15 + lo + (int)(u % (uint32_t)(hi - lo)));
    uint16_t sign = is_signed && (u & 0x10000) ? 0x8000 : 0;
    return (uint16_t)(sign | ex << 10 | ((u >> 20) & 0x3FF));
}

} // namespace

/* Random blocks of a block dtype: random quant bytes, sane f16 scales (d in [2^-9, 2^-5), mins of
 * either sign for Q4_1 / Q5_1). */
void ggml_random_rows(int dtype, int rows, int K, uint32_t seed, std::vector<uint8_t> *raw) {
    Rand r;
    r.s ^= (uint64_t)seed * 0x2545F4914F6CDD1Dull;
    int bs = ggml_block_size(dtype), bb = ggml_block_bytes(dtype);
    int64_t nblk = (int64_t)rows * (K / bs);
    raw->resize((size_t)(nblk * bb));
    for (uint8_t &b : *raw) b = (uint8_t)r.u32();
    for (int64_t b = 0; b < nblk; b++) {
        uint8_t *p = raw->data() + b * bb;
        uint16_t h[2] = {rand_f16(r, -9, -5, false), rand_f16(r, -9, -5, false)};
        if (dtype == DT_Q4_1 || dtype == DT_Q5_1) h[1] = rand_f16(r, -8, -3, true);
        if (dtype == DT_Q6_K) memcpy(p + 208, h, 2);
        else if (dtype == DT_Q4_1 || dtype == DT_Q5_1 || dtype == DT_Q4_K || dtype == DT_Q5_K) memcpy(p, h, 4);
        else memcpy(p, h, 2);
    }
}

TEST(ggml_row_bytes_and_block_sizes) {
    CHECK(ggml_row_bytes(DT_Q8_0, 256) == 8 * 34 && ggml_row_bytes(DT_Q4_0, 64) == 36);
    CHECK(ggml_row_bytes(DT_Q4_1, 32) == 20 && ggml_row_bytes(DT_Q5_0, 96) == 66 && ggml_row_bytes(DT_Q5_1, 32) == 24);
    CHECK(ggml_row_bytes(DT_Q4_K, 512) == 288 && ggml_row_bytes(DT_Q5_K, 256) == 176 &&
          ggml_row_bytes(DT_Q6_K, 768) == 630);
    CHECK(ggml_row_bytes(DT_Q4_K, 320) == 0 && ggml_row_bytes(DT_Q8_0, 33) == 0); // not whole blocks
    CHECK(ggml_row_bytes(DT_F32, 7) == 28 && ggml_row_bytes(DT_BF16, 7) == 14 && ggml_row_bytes(3, 7) == 0);
    CHECK(dtype_row_bytes(DT_Q6_K, 256) == 210 && dtype_row_bytes(DT_F16, 10) == 20 &&
          dtype_row_bytes(DT_OTHER, 10) == 0);
    for (int dt : kBlockDtypes) CHECK(strcmp(dtype_name((DType)dt), "other") != 0);
    CHECK(ggml_block_size(DT_Q4_K) == 256 && ggml_block_size(DT_Q5_1) == 32 && ggml_block_size(DT_BF16) == 1);
}

TEST(ggml_dequantize_matches_llama_cpp_bit_for_bit) {
    // Rows of the llama-<TYPE>.gguf fixtures (llama-quantize's blocks) and the f32 values ggml's
    // to_float gives them: row_to_f32 of every table must give the same bits.
    std::vector<DequantRows> entries;
    CHECK(read_dequant_rows(&entries));
    int seen[16] = {0};
    for (const Kernels *k : tables())
        for (const DequantRows &e : entries) {
            seen[e.dtype]++;
            std::vector<float> row((size_t)e.cols);
            int bad = 0;
            for (int r = 0; r < e.rows; r++) {
                k->row_to_f32(row.data(), e.raw.data(), e.dtype, r, e.cols, nullptr);
                for (int i = 0; i < e.cols; i++)
                    if (memcmp(&row[(size_t)i], &e.vals[(size_t)r * e.cols + i], 4) != 0) bad++;
            }
            CHECK_MSG(bad == 0, "%s %s: %d of %d values differ", k->name, dtype_name((DType)e.dtype), bad,
                      e.rows * e.cols);
        }
    for (int dt : kBlockDtypes) CHECK_MSG(seen[dt] > 0, "no fixture rows of %s", dtype_name((DType)dt));
}

/* The test's own decoding of a block (independent of kernels/ggml.h): each weight as a + b in
 * double, a the scaled quant and b the offset or min part (exact: every product fits a double). */
static void ref_block(int dt, const uint8_t *p, double *a, double *b) {
    auto f16 = [](const uint8_t *q) {
        uint16_t h = (uint16_t)(q[0] | q[1] << 8);
        int e = (h >> 10) & 31, m = h & 1023;
        double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
        return h & 0x8000 ? -v : v;
    };
    auto nib = [](const uint8_t *qs, int i) { return i < 16 ? qs[i] & 15 : qs[i - 16] >> 4; };
    auto bit = [](const uint8_t *qh, int i) { return (qh[i / 8] >> (i % 8)) & 1; };
    switch (dt) {
    case DT_Q8_0:
        for (int i = 0; i < 32; i++) a[i] = f16(p) * (int8_t)p[2 + i], b[i] = 0;
        return;
    case DT_Q4_0:
        for (int i = 0; i < 32; i++) a[i] = f16(p) * nib(p + 2, i), b[i] = -8 * f16(p);
        return;
    case DT_Q5_0:
        for (int i = 0; i < 32; i++) a[i] = f16(p) * (nib(p + 6, i) + 16 * bit(p + 2, i)), b[i] = -16 * f16(p);
        return;
    case DT_Q4_1:
        for (int i = 0; i < 32; i++) a[i] = f16(p) * nib(p + 4, i), b[i] = f16(p + 2);
        return;
    case DT_Q5_1:
        for (int i = 0; i < 32; i++) a[i] = f16(p) * (nib(p + 8, i) + 16 * bit(p + 4, i)), b[i] = f16(p + 2);
        return;
    case DT_Q4_K:
    case DT_Q5_K: {
        const uint8_t *s = p + 4, *qh = p + 16, *qs = dt == DT_Q4_K ? p + 16 : p + 48;
        for (int j = 0; j < 8; j++) {
            int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
            int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | (s[j] >> 6) << 4;
            for (int l = 0; l < 32; l++) {
                int q = j % 2 == 0 ? qs[32 * (j / 2) + l] & 15 : qs[32 * (j / 2) + l] >> 4;
                if (dt == DT_Q5_K) q += 16 * ((qh[l] >> j) & 1);
                a[32 * j + l] = f16(p) * sc * q;
                b[32 * j + l] = -f16(p + 2) * m;
            }
        }
        return;
    }
    default: { // Q6_K
        const uint8_t *ql = p, *qh = p + 128;
        const int8_t *sc = (const int8_t *)(p + 192);
        double d = f16(p + 208);
        for (int i = 0; i < 256; i++) {
            int h = i / 128, l = i % 32, k = (i % 128) / 32;
            int lo = k % 2 == 0 ? ql[64 * h + l] & 15 : ql[64 * h + l + 32] & 15;
            if (k >= 2) lo = k == 2 ? ql[64 * h + l] >> 4 : ql[64 * h + l + 32] >> 4;
            int q = lo | ((qh[32 * h + l] >> (2 * k)) & 3) << 4;
            a[i] = d * sc[i / 16] * q;
            b[i] = -32 * d * sc[i / 16];
        }
        return;
    }
    }
}

/* The activations as the kernels quantize them (per 32, or per 256 for the K-quants: d = max|x| /
 * 127, q = round-to-even(x * 127 / max|x|)). */
static void ref_quantize(const float *x, int K, int bs, std::vector<int> *q, std::vector<float> *d) {
    q->resize((size_t)K);
    d->resize((size_t)(K / bs));
    for (int b = 0; b < K / bs; b++) {
        float amax = 0;
        for (int i = 0; i < bs; i++) amax = fabsf(x[b * bs + i]) > amax ? fabsf(x[b * bs + i]) : amax;
        float id = amax > 0 ? 127.0f / amax : 0.0f;
        for (int i = 0; i < bs; i++) (*q)[(size_t)(b * bs + i)] = (int)lrintf(x[b * bs + i] * id);
        (*d)[(size_t)b] = amax / 127.0f;
    }
}

TEST(ggml_matmul_equals_dequantize_then_dot_on_every_path) {
    // Every table's matmul over each block dtype against the dequantized weights (decoded here in
    // double) dotted with the same quantized activations in double. The integer block sums are
    // exact on every path; what remains is f32 rounding: each block adds at most two f32 products
    // into a lane (int32 lane -> f32, times the f32 d * dx, fused add) and the lanes are summed at
    // the end, so |y - ref| <= (2 nb + 8) 2^-24 sum_i (|a_i| + |b_i|) |x_i| (nb blocks; a, b the
    // scaled-quant and offset/min parts of each weight). The paths differ only within that bound
    // (the tiles split the sums over lanes differently), except the row-lane forms (avx512 with VNNI,
    // Q4_0 / Q5_0 / Q4_K / Q5_K), which keeps the scalar path's order and equals it bit for bit. Within a path,
    // a token's result is bit-identical alone or in any batch, streaming or cached, and the split
    // form (quantize once, then matmul_ggml) equals matmul.
    Rand r;
    for (int dt : kBlockDtypes)
        // 2304: more than one 2048-weight chunk of the row-lane GEMM; 2144 (32-weight blocks only): a
        // last chunk of 3 blocks, so its four running sums stop part-way.
        for (int K : {256, 768, 2304, 2144}) {
            const int N = 21, TT = 70; // 70: more than one 64-token pass of it
            int bs = ggml_block_size(dt), bb = ggml_block_bytes(dt), nb = K / bs;
            if (K % bs) continue;
            std::vector<uint8_t> raw;
            ggml_random_rows(dt, N, K, (uint32_t)(dt * 7 + K), &raw);
            std::vector<double> wa((size_t)N * K), wb((size_t)N * K);
            for (int64_t b = 0; b < (int64_t)N * nb; b++)
                ref_block(dt, &raw[(size_t)(b * bb)], &wa[(size_t)(b * bs)], &wb[(size_t)(b * bs)]);
            std::vector<float> x((size_t)TT * K), bias(N);
            for (float &v : x) v = r.uniform() * (1.0f + 3.0f * (float)(r.u32() % 4)); // uneven block maxima
            for (float &v : bias) v = r.uniform();
            // Reference: quantized activations dotted with the exact weights.
            std::vector<double> ref((size_t)TT * N), tol((size_t)TT * N);
            for (int t = 0; t < TT; t++) {
                std::vector<int> q;
                std::vector<float> d;
                ref_quantize(&x[(size_t)t * K], K, bs == 256 ? 256 : 32, &q, &d);
                for (int n = 0; n < N; n++) {
                    double s = bias[(size_t)n], mag = fabs(s);
                    for (int i = 0; i < K; i++) {
                        double xv = (double)q[(size_t)i] * d[(size_t)(i / (bs == 256 ? 256 : 32))];
                        size_t wi = (size_t)n * K + i;
                        s += (wa[wi] + wb[wi]) * xv;
                        mag += (fabs(wa[wi]) + fabs(wb[wi])) * fabs(xv);
                    }
                    ref[(size_t)t * N + n] = s;
                    tol[(size_t)t * N + n] = (2 * nb + 8) * ldexp(mag, -24) + 1e-30;
                }
            }
            std::vector<float> scalar_alone;
            for (const Kernels *k : tables()) {
                std::vector<float> alone((size_t)TT * N), scratch((size_t)kMatmulRows * K);
                for (int t = 0; t < TT; t++)
                    for (int r0 = 0; r0 < N; r0 += kMatmulRows)
                        k->matmul(&x[(size_t)t * K], K, 1, raw.data(), dt, K, r0,
                                  r0 + kMatmulRows < N ? r0 + kMatmulRows : N, &alone[(size_t)t * N], N, bias.data(),
                                  scratch.data(), false, nullptr);
                if (!strcmp(k->name, "scalar")) scalar_alone = alone;
                // The avx512 path with VNNI runs the row-lane GEMM for these types: the scalar path's
                // operations lane by lane, so its results are the scalar path's, bit for bit.
                if (!strcmp(k->name, "avx512") && __builtin_cpu_supports("avx512vnni") &&
                    (dt == DT_Q4_0 || dt == DT_Q5_0 || dt == DT_Q4_K || dt == DT_Q5_K)) {
                    CHECK(scalar_alone.size() == alone.size());
                    CHECK_MSG(scalar_alone.size() == alone.size() &&
                                  memcmp(scalar_alone.data(), alone.data(), alone.size() * sizeof(float)) == 0,
                              "avx512 %s K %d: not the scalar path's bits", dtype_name((DType)dt), K);
                }
                double worst = 0;
                for (size_t i = 0; i < alone.size(); i++) {
                    double e = fabs(alone[i] - ref[i]) / tol[i];
                    worst = e > worst ? e : worst;
                }
                CHECK_MSG(worst <= 1.0, "%s %s K %d: error %.3g x bound", k->name, dtype_name((DType)dt), K, worst);
                for (bool is_streaming : {false, true})
                    for (int T : {1, 2, 3, 4, 5, 7, 8, 9, 16, 37, 70}) {
                        int ldy = N + 3;
                        std::vector<float> y((size_t)T * ldy, -7.0f);
                        k->matmul(x.data(), K, T, raw.data(), dt, K, 0, 16, y.data(), ldy, bias.data(), scratch.data(),
                                  is_streaming, nullptr);
                        k->matmul(x.data(), K, T, raw.data(), dt, K, 16, N, y.data(), ldy, bias.data(), scratch.data(),
                                  is_streaming, nullptr);
                        for (int t = 0; t < T; t++) {
                            CHECK_MSG(memcmp(&alone[(size_t)t * N], &y[(size_t)t * ldy], N * sizeof(float)) == 0,
                                      "%s %s K %d T %d streaming %d: not batch invariant", k->name,
                                      dtype_name((DType)dt), K, T, (int)is_streaming);
                            for (int n = N; n < ldy; n++) CHECK(y[(size_t)t * ldy + n] == -7.0f);
                        }
                        // The split form.
                        std::vector<int8_t> xq((size_t)T * K);
                        std::vector<float> xd((size_t)T * K / 32), split((size_t)T * N);
                        std::vector<int16_t> xbs((size_t)T * K / 16);
                        for (int t = 0; t < T; t++) {
                            if (bs == 256)
                                k->quantize_q8k(&x[(size_t)t * K], K, &xq[(size_t)t * K], &xd[(size_t)t * K / 256],
                                                &xbs[(size_t)t * K / 16]);
                            else {
                                k->quantize_q8(&x[(size_t)t * K], K, &xq[(size_t)t * K], &xd[(size_t)t * K / 32]);
                                for (int b = 0; b < K / 32; b++) { // the per-32 sums (cpu_backend's q8bs)
                                    int s = 0;
                                    for (int i = 0; i < 32; i++) s += xq[(size_t)t * K + 32 * b + i];
                                    xbs[(size_t)t * (K / 32) + b] = (int16_t)s;
                                }
                            }
                        }
                        k->matmul_ggml(xq.data(), xd.data(), xbs.data(), K, T, raw.data(), dt, K, 0, N, split.data(), N,
                                       bias.data(), is_streaming);
                        CHECK_MSG(memcmp(split.data(), alone.data(), (size_t)T * N * sizeof(float)) == 0,
                                  "%s %s split T %d", k->name, dtype_name((DType)dt), T);
                        if (bs == 256) continue;
                        // A32 without the sums (null): the kernel sums the blocks itself.
                        k->matmul_ggml(xq.data(), xd.data(), nullptr, K, T, raw.data(), dt, K, 0, N, split.data(), N,
                                       bias.data(), is_streaming);
                        CHECK_MSG(memcmp(split.data(), alone.data(), (size_t)T * N * sizeof(float)) == 0,
                                  "%s %s split T %d", k->name, dtype_name((DType)dt), T);
                    }
            }
        }
}

TEST(ggml_quantize_q8k_matches_reference) {
    // q, d as ref_quantize per 256, and bsums the sums of each 16 q, on every table.
    Rand r;
    const int K = 512;
    std::vector<float> x(K);
    for (float &v : x) v = r.uniform() * 3.0f;
    x[7] = 0.5f * 127.0f / 127.0f; // arbitrary; ties are measure-zero
    std::vector<int> q;
    std::vector<float> d;
    ref_quantize(x.data(), K, 256, &q, &d);
    for (const Kernels *k : tables()) {
        std::vector<int8_t> kq(K);
        std::vector<float> kd(K / 256);
        std::vector<int16_t> kb(K / 16);
        k->quantize_q8k(x.data(), K, kq.data(), kd.data(), kb.data());
        int bad = 0;
        for (int i = 0; i < K; i++) bad += kq[(size_t)i] != q[(size_t)i];
        for (int b = 0; b < K / 256; b++) bad += kd[(size_t)b] != d[(size_t)b];
        for (int j = 0; j < K / 16; j++) {
            int s = 0;
            for (int i = 0; i < 16; i++) s += q[(size_t)(16 * j + i)];
            bad += kb[(size_t)j] != s;
        }
        CHECK_MSG(bad == 0, "%s: %d differences", k->name, bad);
    }
}

TEST(ggml_row_dot_is_row_to_f32_then_dot) {
    // MLA's row_dot over a block-dtype matrix: the dequantized row (as ggml's) then dot, bit for bit.
    Rand r;
    for (int dt : kBlockDtypes) {
        const int K = 512;
        std::vector<uint8_t> raw;
        ggml_random_rows(dt, 6, K, 99, &raw);
        std::vector<float> x(K), row(K), scratch((size_t)kMatmulRows * K);
        for (float &v : x) v = r.uniform();
        for (const Kernels *k : tables()) {
            k->row_to_f32(row.data(), raw.data(), dt, 4, K, nullptr);
            CHECK(k->row_dot(raw.data(), dt, 4, K, nullptr, x.data(), scratch.data()) ==
                  k->dot(row.data(), x.data(), K));
        }
    }
}
