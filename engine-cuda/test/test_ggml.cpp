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

TEST(ggml_matmul_matches_double_reference_of_the_dequantized_rows) {
    // Any matrix of a block dtype computes, on every table, within the f32 bound of the dot of its
    // dequantized rows (row_to_f32, checked above) with x, and MLA's row_dot / rows_accum take it.
    Rand r;
    for (int dt : kBlockDtypes)
        for (int K : {256, 512}) {
            const int N = 21;
            std::vector<uint8_t> raw;
            ggml_random_rows(dt, N, K, (uint32_t)(dt * 7 + K), &raw);
            std::vector<float> wf((size_t)N * K), bias(N);
            for (float &b : bias) b = r.uniform();
            for (int n = 0; n < N; n++) tables()[0]->row_to_f32(&wf[(size_t)n * K], raw.data(), dt, n, K, nullptr);
            for (const Kernels *k : tables())
                for (int T : {1, 3, 8, 33}) {
                    int ldy = N + 2;
                    std::vector<float> x((size_t)T * K), y((size_t)T * ldy, -7.0f), scratch((size_t)kMatmulRows * K);
                    for (float &v : x) v = r.uniform();
                    for (int r0 = 0; r0 < N; r0 += kMatmulRows)
                        k->matmul(x.data(), K, T, raw.data(), dt, K, r0, r0 + kMatmulRows < N ? r0 + kMatmulRows : N,
                                  y.data(), ldy, bias.data(), scratch.data(), T % 2 == 1, nullptr);
                    double worst = 0;
                    for (int t = 0; t < T; t++)
                        for (int n = 0; n < N; n++) {
                            double ref = bias[(size_t)n], mag = fabs(ref);
                            for (int i = 0; i < K; i++) {
                                double p = (double)wf[(size_t)n * K + i] * x[(size_t)t * K + i];
                                ref += p;
                                mag += fabs(p);
                            }
                            double err = fabs(y[(size_t)t * ldy + n] - ref) / (mag * 1e-6 + 1e-9);
                            if (err > worst) worst = err;
                        }
                    CHECK_MSG(worst <= 1.0, "%s %s K %d T %d: error %.3g x tolerance", k->name, dtype_name((DType)dt),
                              K, T, worst);
                    for (int t = 0; t < T; t++)
                        for (int n = N; n < ldy; n++) CHECK(y[(size_t)t * ldy + n] == -7.0f);
                    // MLA's row_dot: row_to_f32 then dot, bit for bit.
                    float rd = k->row_dot(raw.data(), dt, 4, K, nullptr, x.data(), scratch.data());
                    CHECK(rd == k->dot(&wf[(size_t)4 * K], x.data(), K));
                }
        }
}
