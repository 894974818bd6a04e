/* test_cuda_kernels.cu: each CUDA kernel against a host reference in double (llm.c's
 * validate_result), with explicit tolerances. Needs a GPU: built and run by scripts/test-gpu.sh,
 * compiled (not run) by `npm run engine:cuda:check`. Exit status 0 = every check passed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <random>
#include <vector>

#include "../../src/cuda/cuda_common.cuh"
#include "../../src/cuda/kernels/argmax.cuh"
#include "../../src/cuda/kernels/attention.cuh"
#include "../../src/cuda/kernels/gemm.cuh"
#include "../../src/cuda/kernels/gemv.cuh"
#include "../../src/cuda/kernels/rmsnorm.cuh"
#include "../../src/cuda/kernels/rope.cuh"
#include "../../src/cuda/kernels/swiglu.cuh"
#include "../../src/cuda/paging.h"

using namespace maya;

static int g_failures = 0, g_checks = 0;

#define EXPECT(cond, ...)                                          \
    do {                                                           \
        g_checks++;                                                \
        if (!(cond)) {                                             \
            g_failures++;                                          \
            fprintf(stderr, "  FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                          \
            fprintf(stderr, "\n");                                 \
        }                                                          \
    } while (0)
#define OK(expr) EXPECT((expr) == ENG_STATUS_OK, "%s failed", #expr)

static std::mt19937 g_rng(20261201);
static float urand(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(g_rng); }

template <typename T> static T *to_device(const std::vector<T> &h) {
    T *d = nullptr;
    cudaMalloc(&d, h.size() * sizeof(T) + 16);
    cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
    return d;
}
template <typename T> static std::vector<T> to_host(const T *d, size_t n) {
    std::vector<T> h(n);
    cudaDeviceSynchronize();
    cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
}

/* A weight matrix stored in dtype dt, and its exact f32 values. */
struct HostWeight {
    std::vector<uint8_t> raw;
    std::vector<float> f;
};
static HostWeight make_weight(DType dt, int rows, int K) {
    HostWeight w;
    size_t n = (size_t)rows * K, es = dt == DT_F32 ? 4 : 2;
    w.raw.resize(n * es);
    w.f.resize(n);
    for (size_t i = 0; i < n; i++) {
        float v = urand(-1, 1);
        if (dt == DT_F32) memcpy(&w.raw[i * 4], &v, 4), w.f[i] = v;
        if (dt == DT_F16) {
            __half h = __float2half(v);
            memcpy(&w.raw[i * 2], &h, 2);
            w.f[i] = __half2float(h);
        }
        if (dt == DT_BF16) {
            __nv_bfloat16 h = __float2bfloat16(v);
            memcpy(&w.raw[i * 2], &h, 2);
            w.f[i] = __bfloat162float(h);
        }
    }
    return w;
}

enum Path { GEMV, SIMT, TC };

static void check_linear(Path path, DType dt, int rows, int K, int T, int ldx_pad, bool bias) {
    HostWeight w = make_weight(dt, rows, K);
    int ldx = K + ldx_pad, ldy = rows + 3;
    std::vector<float> x((size_t)T * ldx), b((size_t)rows), y((size_t)T * ldy, -7.0f);
    for (float &v : x) v = urand(-1, 1);
    for (float &v : b) v = urand(-1, 1);
    uint8_t *dw = to_device(w.raw);
    float *dx = to_device(x), *dy = to_device(y), *db = to_device(b);
    void *xb = nullptr;
    cudaMalloc(&xb, (size_t)2 * T * K * 2);
    LinearArgs a{dw, dt, rows, K, dx, ldx, dy, ldy, bias ? db : nullptr, T};
    OK(path == GEMV ? gemv(a, 0) : path == SIMT ? gemm_simt(a, 0) : gemm_bf16_tc(a, xb, 0));
    std::vector<float> got = to_host(dy, y.size());
    double worst = 0;
    for (int t = 0; t < T; t++)
        for (int r = 0; r < rows; r++) {
            double ref = bias ? b[(size_t)r] : 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double xv = x[(size_t)t * ldx + k]; // the tensor-core path splits x into hi + lo bf16 terms
                ref += (double)w.f[(size_t)r * K + k] * xv;
                mag += fabs((double)w.f[(size_t)r * K + k] * xv);
            }
            double d = fabs(got[(size_t)t * ldy + r] - ref) / (mag + 1e-6);
            if (d > worst) worst = d;
        }
    bool untouched = true; // columns past `rows` of each y row keep their fill
    for (int t = 0; t < T; t++) untouched = untouched && got[(size_t)t * ldy + rows] == -7.0f;
    EXPECT(worst < 2e-6 * sqrt((double)K) + 1e-6 && untouched,
           "linear path %d dtype %d rows %d K %d T %d: rel err %.3g%s", (int)path, (int)dt, rows, K, T, worst,
           untouched ? "" : ", wrote past rows");
    cudaFree(dw), cudaFree(dx), cudaFree(dy), cudaFree(db), cudaFree(xb);
}

static void test_linear() {
    fprintf(stderr, "linear (gemv, simt gemm, wmma bf16 gemm)\n");
    for (DType dt : {DT_F32, DT_F16, DT_BF16})
        for (int T = 1; T <= kGemvMaxTokens; T++) {
            check_linear(GEMV, dt, 67, 256, T, 0, T % 2); // 16-byte path
            check_linear(GEMV, dt, 33, 100, T, 1, true);  // unaligned K / ldx: scalar path
        }
    for (DType dt : {DT_F32, DT_F16, DT_BF16})
        for (int T : {9, 64, 100}) check_linear(SIMT, dt, 130, 200, T, 2, true);
    for (int T : {16, 64, 77, 300}) check_linear(TC, DT_BF16, 200, 264, T, 0, T % 2);
    check_linear(GEMV, DT_BF16, 4096, 4096, 1, 0, false); // GLM-4-9B-sized rows
}

static void test_rmsnorm_swiglu_residual() {
    fprintf(stderr, "rmsnorm, swiglu, residual\n");
    for (int n : {16, 128, 4096}) {
        int rows = 5;
        std::vector<float> x((size_t)rows * n), w((size_t)n);
        std::vector<int32_t> idx = {4, 0, 2};
        for (float &v : x) v = urand(-3, 3);
        for (float &v : w) v = urand(0.5f, 1.5f);
        float *dx = to_device(x), *dw = to_device(w), *dout = to_device(x);
        int32_t *di = to_device(idx);
        OK(rmsnorm_rows(dout, n, dx, n, di, dw, 3, n, 1e-5f, 0));
        std::vector<float> got = to_host(dout, x.size());
        double worst = 0;
        for (int r = 0; r < 3; r++) {
            const float *xr = &x[(size_t)idx[(size_t)r] * n];
            double ss = 0;
            for (int i = 0; i < n; i++) ss += (double)xr[i] * xr[i];
            double inv = 1.0 / sqrt(ss / n + 1e-5);
            for (int i = 0; i < n; i++) worst = fmax(worst, fabs(got[(size_t)r * n + i] - xr[i] * inv * w[(size_t)i]));
        }
        EXPECT(worst < 1e-5, "rmsnorm n %d: max err %.3g", n, worst);
        cudaFree(dx), cudaFree(dw), cudaFree(dout), cudaFree(di);
    }
    int T = 3, I = 50;
    std::vector<float> gu((size_t)T * 2 * I), h((size_t)T * I);
    for (float &v : gu) v = urand(-6, 6);
    float *dgu = to_device(gu), *dout = to_device(h);
    OK(swiglu(dout, dgu, T, I, 0));
    std::vector<float> got = to_host(dout, h.size());
    double worst = 0;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < I; i++) {
            double g = gu[(size_t)t * 2 * I + i], u = gu[(size_t)t * 2 * I + I + i];
            worst = fmax(worst, fabs(got[(size_t)t * I + i] - g / (1 + exp(-g)) * u));
        }
    EXPECT(worst < 1e-5, "swiglu err %.3g", worst);
    cudaFree(dgu), cudaFree(dout);
    // The fused residual step: x += [rmsnorm(h) * post]; h = [rmsnorm(x) * next].
    for (int mode = 0; mode < 4; mode++) {
        bool has_post = mode & 1, has_next = mode & 2;
        int n = 4096;
        std::vector<float> x((size_t)T * n), hh((size_t)T * n), pw((size_t)n), nw((size_t)n);
        for (float &v : x) v = urand(-2, 2);
        for (float &v : hh) v = urand(-2, 2);
        for (float &v : pw) v = urand(0.5f, 1.5f);
        for (float &v : nw) v = urand(0.5f, 1.5f);
        float *dx = to_device(x), *dh = to_device(hh), *dp = to_device(pw), *dn = to_device(nw);
        OK(add_rmsnorm_rows(dx, dh, has_post ? dp : nullptr, has_next ? dn : nullptr, T, n, 1e-5f, 0));
        std::vector<float> gx = to_host(dx, x.size()), gh = to_host(dh, hh.size());
        double wx = 0, wh = 0;
        for (int t = 0; t < T; t++) {
            const float *xr = &x[(size_t)t * n], *hr = &hh[(size_t)t * n];
            double ss = 0, ss2 = 0;
            for (int i = 0; i < n; i++) ss += (double)hr[i] * hr[i];
            double inv = has_post ? 1.0 / sqrt(ss / n + 1e-5) : 1.0;
            std::vector<double> nx((size_t)n);
            for (int i = 0; i < n; i++) {
                nx[(size_t)i] = xr[i] + (has_post ? hr[i] * inv * pw[(size_t)i] : (double)hr[i]);
                ss2 += nx[(size_t)i] * nx[(size_t)i];
                wx = fmax(wx, fabs(gx[(size_t)t * n + i] - nx[(size_t)i]));
            }
            double inv2 = 1.0 / sqrt(ss2 / n + 1e-5);
            for (int i = 0; i < n; i++) {
                double want = has_next ? nx[(size_t)i] * inv2 * nw[(size_t)i] : (double)hr[i]; // untouched without next
                wh = fmax(wh, fabs(gh[(size_t)t * n + i] - want));
            }
        }
        EXPECT(wx < 1e-5 && wh < 1e-5, "add_rmsnorm post %d next %d: x err %.3g, h err %.3g", (int)has_post,
               (int)has_next, wx, wh);
        cudaFree(dx), cudaFree(dh), cudaFree(dp), cudaFree(dn);
    }
}

/* q/k/v-like jobs in one launch: each output equals the single-job gemv bit for bit. */
static void test_gemv_multi() {
    fprintf(stderr, "gemv over several matrices\n");
    for (DType dt : {DT_BF16, DT_F32}) {
        int K = 512, T = 3, rows[3] = {512, 64, 64};
        std::vector<float> x((size_t)T * K);
        for (float &v : x) v = urand(-1, 1);
        float *dx = to_device(x);
        LinearArgs jobs[3];
        std::vector<float *> multi, single;
        for (int j = 0; j < 3; j++) {
            HostWeight w = make_weight(dt, rows[j], K);
            std::vector<float> b((size_t)rows[j]);
            for (float &v : b) v = urand(-1, 1);
            float *dy = nullptr, *dy1 = nullptr;
            cudaMalloc(&dy, (size_t)T * rows[j] * 4);
            cudaMalloc(&dy1, (size_t)T * rows[j] * 4);
            jobs[j] = LinearArgs{to_device(w.raw), dt, rows[j], K, dx, K, dy, rows[j], to_device(b), T};
            LinearArgs one = jobs[j];
            one.y = dy1;
            OK(gemv(one, 0));
            multi.push_back(dy), single.push_back(dy1);
        }
        OK(gemv_multi(jobs, 3, 0));
        for (int j = 0; j < 3; j++) {
            std::vector<float> a = to_host(multi[(size_t)j], (size_t)T * rows[j]),
                               b = to_host(single[(size_t)j], (size_t)T * rows[j]);
            EXPECT(a == b, "gemv_multi job %d (dtype %d) differs from a single gemv", j, (int)dt);
        }
    }
}

/* A paged cache of n_blocks blocks and T tokens of two sequences with shuffled block tables. */
struct PagedCase {
    int H, Hkv, D, bs, n_blocks;
    std::vector<int32_t> bt, tok_pos, tok_bt;
    std::vector<float> kc, vc, q;
};
static PagedCase make_case(int H, int Hkv, int D, int bs, const std::vector<int> &lens, bool is_decode) {
    PagedCase c{H, Hkv, D, bs, 0, {}, {}, {}, {}, {}, {}};
    int total_blocks = 0;
    for (int n : lens) total_blocks += (n + bs - 1) / bs;
    c.n_blocks = total_blocks + 3;
    std::vector<int32_t> perm((size_t)c.n_blocks);
    for (int i = 0; i < c.n_blocks; i++) perm[(size_t)i] = i;
    std::shuffle(perm.begin(), perm.end(), g_rng);
    int used = 0;
    for (int n : lens) {
        int nb = (n + bs - 1) / bs, off = (int)c.bt.size();
        for (int i = 0; i < nb; i++) c.bt.push_back(perm[(size_t)used++]);
        for (int p = is_decode ? n - 1 : 0; p < n; p++) c.tok_pos.push_back(p), c.tok_bt.push_back(off);
    }
    c.kc.resize((size_t)c.n_blocks * Hkv * bs * D);
    c.vc.resize(c.kc.size());
    for (float &v : c.kc) v = urand(-2, 2);
    for (float &v : c.vc) v = urand(-1, 1);
    c.q.resize(c.tok_pos.size() * (size_t)H * D);
    for (float &v : c.q) v = urand(-2, 2);
    return c;
}

static void check_attention(const PagedCase &c, int n_split) {
    int T = (int)c.tok_pos.size(), H = c.H, D = c.D, G = H / c.Hkv;
    float scale = 1.0f / sqrtf((float)D);
    float *dq = to_device(c.q), *dk = to_device(c.kc), *dv = to_device(c.vc);
    int32_t *dpos = to_device(c.tok_pos), *dtb = to_device(c.tok_bt), *dbt = to_device(c.bt);
    float *dout = nullptr, *dop = nullptr, *dml = nullptr;
    cudaMalloc(&dout, (size_t)T * H * D * 4);
    cudaMalloc(&dop, (size_t)n_split * T * H * D * 4);
    cudaMalloc(&dml, (size_t)n_split * T * H * 2 * 4);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    OK(attention_prepare(H, c.Hkv, D, prop.sharedMemPerBlockOptin));
    AttnArgs a{dq, dout, dk, dv, dpos, dtb, dbt, dop, dml, T, H, c.Hkv, D, c.bs, n_split, scale};
    OK(attention(a, 0));
    std::vector<float> got = to_host(dout, (size_t)T * H * D);
    double worst = 0;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            int n = c.tok_pos[(size_t)t] + 1, g = h / G;
            const int32_t *bt = &c.bt[(size_t)c.tok_bt[(size_t)t]];
            std::vector<double> s((size_t)n);
            double mx = -1e300, sum = 0;
            for (int j = 0; j < n; j++) {
                const float *k = &c.kc[(size_t)kv_offset(bt, j, c.bs, c.Hkv, g, D)];
                double d = 0;
                for (int e = 0; e < D; e++) d += (double)c.q[((size_t)t * H + h) * D + e] * k[e];
                s[(size_t)j] = d * scale;
                mx = fmax(mx, s[(size_t)j]);
            }
            for (int j = 0; j < n; j++) sum += (s[(size_t)j] = exp(s[(size_t)j] - mx));
            for (int e = 0; e < D; e++) {
                double o = 0;
                for (int j = 0; j < n; j++) o += s[(size_t)j] * c.vc[(size_t)kv_offset(bt, j, c.bs, c.Hkv, g, D) + e];
                worst = fmax(worst, fabs(got[((size_t)t * H + h) * D + e] - o / sum));
            }
        }
    EXPECT(worst < 2e-5, "attention H %d Hkv %d D %d bs %d T %d split %d: max err %.3g", H, c.Hkv, D, c.bs, T, n_split,
           worst);
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dpos), cudaFree(dtb), cudaFree(dbt);
    cudaFree(dout), cudaFree(dop), cudaFree(dml);
}

static void test_attention() {
    fprintf(stderr, "paged attention (prefill, decode, split decode)\n");
    check_attention(make_case(6, 2, 16, 16, {37, 5}, false), 1);     // prefill, causal, 2 sequences
    check_attention(make_case(32, 2, 128, 16, {300, 20}, false), 1); // GLM-4-9B heads
    for (int n_split : {1, 4, 32}) {
        check_attention(make_case(32, 2, 128, 16, {1, 33, 1000, 4097}, true), n_split);
        check_attention(make_case(8, 8, 64, 4, {70, 9}, true), n_split); // no GQA
    }
}

static void test_rope_kv() {
    fprintf(stderr, "rope + KV write\n");
    for (bool inter : {false, true}) {
        int H = 4, Hkv = 2, D = 16, rot = inter ? 8 : 16, bs = 4;
        PagedCase c = make_case(H, Hkv, D, bs, {11, 6}, false);
        int T = (int)c.tok_pos.size(), half = rot / 2;
        std::vector<float> k((size_t)T * Hkv * D), v(k.size()), inv((size_t)half);
        for (float &x : k) x = urand(-1, 1);
        for (float &x : v) x = urand(-1, 1);
        for (int i = 0; i < half; i++) inv[(size_t)i] = 1.0f / powf(10000.0f, (float)(2 * i) / (float)rot);
        float *dq = to_device(c.q), *dk = to_device(k), *dv = to_device(v), *dinv = to_device(inv);
        float *dkc = to_device(c.kc), *dvc = to_device(c.vc);
        int32_t *dpos = to_device(c.tok_pos), *dtb = to_device(c.tok_bt), *dbt = to_device(c.bt);
        RopeArgs a{dq, dk, dv, dkc, dvc, dpos, dtb, dbt, dinv, T, H, Hkv, D, rot, bs, inter};
        OK(rope_write_kv(a, 0));
        std::vector<float> q = to_host(dq, c.q.size()), kc = to_host(dkc, c.kc.size()), vc = to_host(dvc, c.vc.size());
        double worst = 0;
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H + Hkv; h++) {
                const float *src = h < H ? &c.q[((size_t)t * H + h) * D] : &k[((size_t)t * Hkv + h - H) * D];
                std::vector<float> ref(src, src + D);
                for (int i = 0; i < half; i++) {
                    float ang = (float)c.tok_pos[(size_t)t] * inv[(size_t)i];
                    float cs = (float)cos((double)ang), sn = (float)sin((double)ang);
                    int i0 = inter ? 2 * i : i, i1 = inter ? 2 * i + 1 : i + half;
                    ref[(size_t)i0] = src[i0] * cs - src[i1] * sn;
                    ref[(size_t)i1] = src[i1] * cs + src[i0] * sn;
                }
                const int32_t *bt = &c.bt[(size_t)c.tok_bt[(size_t)t]];
                for (int d = 0; d < D; d++) {
                    float g = h < H ? q[((size_t)t * H + h) * D + d]
                                    : kc[(size_t)kv_offset(bt, c.tok_pos[(size_t)t], bs, Hkv, h - H, D) + d];
                    worst = fmax(worst, fabs(g - ref[(size_t)d]));
                    if (h >= H) {
                        float vv = vc[(size_t)kv_offset(bt, c.tok_pos[(size_t)t], bs, Hkv, h - H, D) + d];
                        worst = fmax(worst, fabs(vv - v[((size_t)t * Hkv + h - H) * D + d]));
                    }
                }
            }
        EXPECT(worst < 1e-6, "rope interleaved=%d: max err %.3g", (int)inter, worst);
        cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dinv), cudaFree(dkc), cudaFree(dvc);
        cudaFree(dpos), cudaFree(dtb), cudaFree(dbt);
    }
}

static void test_argmax() {
    fprintf(stderr, "argmax (greedy sampling)\n");
    int V = 151552, R = 5;
    std::vector<float> x((size_t)R * V);
    for (float &v : x) v = urand(-10, 10);
    x[(size_t)0 * V + 77] = 50, x[(size_t)0 * V + 150000] = 50;   // tie: lowest id wins
    x[(size_t)1 * V + V - 1] = 60;                                // the last id
    for (int i = 0; i < V; i++) x[(size_t)2 * V + i] = -INFINITY; // all -inf: id 0, as the host's
    x[(size_t)3 * V + 5] = NAN, x[(size_t)3 * V + 9] = 70;        // NaN never wins
    float *dx = to_device(x);
    int32_t *dout = nullptr;
    cudaMalloc(&dout, (size_t)R * 4);
    OK(argmax_rows(dout, dx, R, V, 0));
    std::vector<int32_t> got = to_host(dout, (size_t)R);
    int want4 = 0;
    for (int i = 1; i < V; i++)
        if (x[(size_t)4 * V + i] > x[(size_t)4 * V + want4]) want4 = i;
    EXPECT(got[0] == 77 && got[1] == V - 1 && got[2] == 0 && got[3] == 9 && got[4] == want4,
           "argmax %d %d %d %d %d (want 77 %d 0 9 %d)", got[0], got[1], got[2], got[3], got[4], V - 1, want4);
    cudaFree(dx), cudaFree(dout);
}

int main() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        fprintf(stderr, "test_cuda_kernels: no CUDA device\n");
        return 1;
    }
    test_linear();
    test_gemv_multi();
    test_rmsnorm_swiglu_residual();
    test_rope_kv();
    test_attention();
    test_argmax();
    cudaError_t e = cudaDeviceSynchronize();
    EXPECT(e == cudaSuccess, "device error: %s", cudaGetErrorString(e));
    fprintf(stderr, "cuda kernels: %d checks, %d failed\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
