/* ggml_bench.cpp: one-thread kernel micro-benchmark of the matrix dtypes (issue 34): decode (one
 * token, the matrix streamed from DRAM, GB/s of weights read) and prefill (64 tokens over a
 * cached 512-row matrix, weight-multiply-adds per ns), through the kernel table the CPU runs best
 * (or MAYA_ENGINE_SIMD's). Built and run by engine-cuda/test/bench/ggml-bench.sh; for kernel
 * work, not a reported benchmark. Medians of 7 runs of the thread's CPU time (a shared machine
 * steals wall time; CPU time still counts the stalls on memory).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "../../src/checkpoint.h" // DType, quantize_q8_matrix
#include "../../src/kernels.h"
#include "../../src/kernels/ggml_blocks.h"

using namespace maya;

static double now() {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); // CPU time: the box is shared
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t g_s = 0x9E3779B97F4A7C15ull;
static uint32_t rnd() {
    g_s ^= g_s << 13;
    g_s ^= g_s >> 7;
    g_s ^= g_s << 17;
    return (uint32_t)(g_s >> 32);
}

/* rows x K of dtype: random quants with sane f16 scales (ggml), random bf16, or Q8 with scales. */
static void fill(int dt, int64_t rows, int K, std::vector<uint8_t> *raw, std::vector<float> *scale) {
    if (dt == DT_Q8) {
        raw->resize((size_t)(rows * K));
        scale->resize((size_t)(rows * K / 32));
        for (uint8_t &b : *raw) b = (uint8_t)(rnd() % 255);
        for (float &s : *scale) s = 0.001f;
        return;
    }
    raw->resize((size_t)(rows * ggml_row_bytes(dt, K)));
    for (size_t i = 0; i + 4 <= raw->size(); i += 4) {
        uint32_t v = rnd();
        memcpy(&(*raw)[i], &v, 4);
    }
    if (dt == DT_BF16) {
        for (size_t i = 0; i < raw->size(); i += 2) (*raw)[i + 1] = (uint8_t)(0x3C + rnd() % 2); // |w| ~ 0.01
        return;
    }
    int bs = ggml_block_size(dt), bb = ggml_block_bytes(dt);
    uint16_t h = 0x1C00; // 2^-8
    for (int64_t b = 0; b < rows * (K / bs); b++) {
        uint8_t *p = raw->data() + b * bb;
        if (dt == DT_Q6_K) memcpy(p + 208, &h, 2);
        else {
            memcpy(p, &h, 2);
            if (dt == DT_Q4_1 || dt == DT_Q5_1 || dt == DT_Q4_K || dt == DT_Q5_K) memcpy(p + 2, &h, 2);
        }
    }
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main() {
    const Kernels *k;
    const char *simd = getenv("MAYA_ENGINE_SIMD");
    int64_t code = !simd                     ? 0
                   : !strcmp(simd, "scalar") ? 1
                   : !strcmp(simd, "avx2")   ? 2
                   : !strcmp(simd, "avx512") ? 3
                                             : 0;
    if (kernels_choose(code, &k) != 0) {
        fprintf(stderr, "ggml-bench: kernel path %s not supported\n", simd);
        return 1;
    }
    const int K = 2048;
    const int64_t kDecodeBytes = (int64_t)192 << 20; // beyond the caches
    printf("kernels %s, K %d; decode: 1 token, ~192 MiB of weights from DRAM; prefill: 64 tokens x 512 rows\n", k->name,
           K);
    printf("%-6s %8s %14s %16s %14s\n", "dtype", "B/wt", "decode GB/s", "decode Gwt/s", "prefill Gmac/s");
    struct {
        int dt;
        const char *name;
    } types[] = {{DT_BF16, "BF16"}, {DT_Q8, "Q8"},     {DT_Q8_0, "Q8_0"}, {DT_Q4_0, "Q4_0"}, {DT_Q4_1, "Q4_1"},
                 {DT_Q5_0, "Q5_0"}, {DT_Q5_1, "Q5_1"}, {DT_Q4_K, "Q4_K"}, {DT_Q5_K, "Q5_K"}, {DT_Q6_K, "Q6_K"}};
    std::vector<float> scratch((size_t)kMatmulRows * K), x((size_t)64 * K), y((size_t)64 * 8192);
    for (float &v : x) v = (float)(rnd() % 2001) / 1000.0f - 1.0f;
    for (auto &ty : types) {
        double row_bytes = ty.dt == DT_Q8 ? K + K / 32 * 4 : (double)ggml_row_bytes(ty.dt, K);
        int64_t rows = (int64_t)(kDecodeBytes / row_bytes) / kMatmulRows * kMatmulRows;
        std::vector<uint8_t> raw;
        std::vector<float> sc;
        fill(ty.dt, rows, K, &raw, &sc);
        const float *ws = sc.empty() ? nullptr : sc.data();
        std::vector<float> yd((size_t)rows);
        std::vector<double> dec;
        for (int rep = 0; rep < 7; rep++) {
            double t0 = now();
            for (int64_t r0 = 0; r0 < rows; r0 += kMatmulRows)
                k->matmul(x.data(), K, 1, raw.data(), ty.dt, K, (int)r0, (int)(r0 + kMatmulRows), yd.data(), (int)rows,
                          nullptr, scratch.data(), true, ws);
            dec.push_back(now() - t0);
        }
        double td = median(dec);
        const int PR = 512, PT = 64;
        std::vector<double> pre;
        for (int rep = 0; rep < 7; rep++) {
            double t0 = now();
            for (int r0 = 0; r0 < PR; r0 += kMatmulRows)
                k->matmul(x.data(), K, PT, raw.data(), ty.dt, K, r0, r0 + kMatmulRows, y.data(), PR, nullptr,
                          scratch.data(), false, ws);
            pre.push_back(now() - t0);
        }
        double tp = median(pre);
        printf("%-6s %8.4f %14.2f %16.2f %14.2f\n", ty.name, row_bytes / K, rows * row_bytes / td * 1e-9,
               (double)rows * K / td * 1e-9, (double)PR * K * PT / tp * 1e-9);
        fflush(stdout);
    }
    return 0;
}
