/* cpu_backend.cpp: the forward pass of GLM-4 / Llama / Qwen3 / GLM-4.5 (MoE) / DeepSeek-V3 (MLA +
 * MoE) on the CPU over a paged KV cache of f32, bf16, f16 or q8_0 rows (BackendConfig::kv_dtype).
 *
 * Per layer (Hugging Face transformers' modeling_{llama,qwen3,glm4,glm4_moe,deepseek_v3}.py):
 *   h = rmsnorm(x) -> q,k,v (+bias) -> [Qwen3/GLM-4.5: per-head rmsnorm of q,k] -> RoPE -> write k,v
 *   -> causal attention over the sequence's blocks -> o_proj -> [GLM-4: post_self_attn rmsnorm] -> x += .
 *   h = rmsnorm(x) -> gate, up -> silu(gate)*up -> down -> [GLM-4: post_mlp rmsnorm] -> x += .
 * MLA (DeepSeek-V3) caches per token only the normed latent c (R) and the roped key k_pe (Dr), and
 * attends in the absorbed form for prefill and decode alike: per head, q_lat = W_UK^T q_nope, score
 * = (q_lat . c + q_pe . k_pe) * scale, o = W_UV (sum p c); the per-head keys/values never exist.
 * MoE layers route each token to K of E experts (sigmoid router, selection bias, group-limited
 * top-k), run each expert once over the tokens that chose it, and add the shared experts.
 * K/V rows are stored in the cache's dtype as they are written; attention widens each block of
 * rows to f32 in a per-worker buffer before the f32 kernels use it (f32 rows are used in place).
 * Each row is stored (q8_0: quantized) on its own, so a rejected draft's rows need no undoing in
 * any format: the scheduler rolls back positions, and the next pass overwrites those rows.
 * Matmuls and attention are split across the thread pool; everything else is cheap and runs on the
 * calling thread. All buffers are allocated at creation; forward() does not allocate.
 */
#include <math.h>
#include <string.h>
#include <sys/mman.h>

#include <algorithm>
#include <new>
#include <utility>

#include "backend.h"             // defines: Backend, Batch, BackendConfig
#include "common.h"              // defines: fail
#include "kernels.h"             // defines: Kernels, kMatmulRows
#include "kernels/ggml_blocks.h" // defines: ggml_is_k_dtype, ggml_is_block_dtype
#include "moe_router.h"          // defines: moe_route
#include "thread_pool.h"         // defines: ThreadPool

namespace maya {

// The kernels' copy of the dtype codes and the FP8 block (kernels.h) is DType's and kFp8Block.
static_assert(kDtF32 == DT_F32 && kDtF16 == DT_F16 && kDtBF16 == DT_BF16,
              "kernels.h: float dtype codes differ from DType");
static_assert(kDtF8 == DT_F8_E4M3 && kDtQ8 == DT_Q8, "kernels.h: 8-bit dtype codes differ from DType");
static_assert(kDtQ8_0 == DT_Q8_0 && kDtQ4_0 == DT_Q4_0 && kDtQ4_1 == DT_Q4_1 && kDtQ5_0 == DT_Q5_0 &&
                  kDtQ5_1 == DT_Q5_1 && kDtQ4_K == DT_Q4_K && kDtQ5_K == DT_Q5_K && kDtQ6_K == DT_Q6_K,
              "kernels.h: GGUF dtype codes differ from DType");
static_assert(kDtF8Finite != DT_F32 && kDtF8Finite != DT_F16 && kDtF8Finite != DT_BF16 && kDtF8Finite != DT_OTHER &&
                  kDtF8Finite != DT_F8_E4M3 && kDtF8Finite != DT_Q8,
              "kernels.h: kDtF8Finite must be no DType");
static_assert(kF8Block == kFp8Block, "kernels.h: the FP8 block differs from model.h's");

namespace {

struct MatJob {
    const Weight *w;
    const float *x; // (T, ldx)
    int ldx;
    float *y; // (T, ldy)
    int ldy;
    const float *bias; // (w->rows) or null
    int T = 0;         // rows of x; 0: the T of the linear() call
};

struct MatmulTask {
    const Kernels *k;
    int T;
    bool is_streaming;
    int n_jobs;
    const MatJob *jobs;
    const int *unit_end; // (n_jobs) cumulative work units per job
    float *const *scratch;
    const int64_t *q8_off; // (n_jobs) Q8 and 32-block GGUF weights: offset of the job's quantized x in q8x/q8d, or -1
    const int8_t *q8x;
    const float *q8d;
    const int16_t *q8bs;   // per-32 sums (32-block GGUF dtypes)
    const int64_t *kq_off; // (n_jobs) K-quant weights: offset of the job's quantized x in kqx/kqd/kqbs, or -1
    const int8_t *kqx;
    const float *kqd;      // per 256
    const int16_t *kqbs;   // per 16
    const int64_t *f8_off; // (n_jobs) finite FP8 weights, few tokens: offset of the job's scaled x in f8x, or -1
    const float *f8x;      // x times Kernels::f8_x_scale
};

static void matmul_task(void *arg, int task, int worker) {
    const MatmulTask &m = *(const MatmulTask *)arg;
    int j = 0, first = 0;
    while (task >= m.unit_end[j]) first = m.unit_end[j++];
    const MatJob &job = m.jobs[j];
    int r0 = (task - first) * kMatmulRows;
    int r1 = r0 + kMatmulRows < job.w->rows ? r0 + kMatmulRows : job.w->rows;
    int64_t qo = m.q8_off[j];
    int64_t ko = m.kq_off[j];
    if (ko >= 0) { // as Q8 below, per 256
        int K = job.w->cols;
        m.k->matmul_ggml(m.kqx + ko, m.kqd + ko / 256, m.kqbs + ko / 16, K, job.T > 0 ? job.T : m.T, job.w->data,
                         job.w->dtype, K, r0, r1, job.y, job.ldy, job.bias, m.is_streaming);
        return;
    }
    if (qo >= 0 && job.w->dtype != DT_Q8) { // a 32-block GGUF dtype over the Q8 activations
        int K = job.w->cols;
        m.k->matmul_ggml(m.q8x + qo, m.q8d + qo / kQ8Block, m.q8bs + qo / kQ8Block, K, job.T > 0 ? job.T : m.T,
                         job.w->data, job.w->dtype, K, r0, r1, job.y, job.ldy, job.bias, m.is_streaming);
        return;
    }
    if (qo >= 0) { // x quantized once for all row blocks (bit-identical to matmul's own quantization)
        int K = job.w->cols;
        m.k->matmul_q8(m.q8x + qo, m.q8d + qo / kQ8Block, K, job.T > 0 ? job.T : m.T, (const int8_t *)job.w->data,
                       job.w->scale, K, r0, r1, job.y, job.ldy, job.bias, m.is_streaming);
        return;
    }
    int64_t fo = m.f8_off[j];
    if (fo >= 0) {
        int K = job.w->cols;
        m.k->matmul_f8x(m.f8x + fo, K, job.T > 0 ? job.T : m.T, (const uint8_t *)job.w->data, job.w->scale, K, r0, r1,
                        job.y, job.ldy, job.bias, m.is_streaming);
        return;
    }
    int dtype = job.w->dtype == DT_F8_E4M3 && job.w->is_f8_finite ? kDtF8Finite : job.w->dtype;
    m.k->matmul(job.x, job.ldx, job.T > 0 ? job.T : m.T, job.w->data, dtype, job.w->cols, r0, r1, job.y, job.ldy,
                job.bias, m.scratch[worker], m.is_streaming, job.w->scale);
}

/* Query rows one attention task covers: a tile of consecutive tokens of one sequence, times the
 * query heads of a kv head, so each cached row is loaded once for up to 4 query rows (more when a
 * kv head has more query heads). A cache of non-f32 rows is widened once per task, so its tiles
 * are 4 times longer (a prefill chunk widens each block a quarter as often); decode is unchanged. */
static int attn_tile_tokens(int group, int kv_dtype) {
    return (group >= 4 ? 1 : 4 / group) * (kv_dtype == kKvF32 ? 1 : 4);
}

/* n stored KV rows of n_val values at src as f32: src itself for f32 rows, else widened into buf. */
static const float *kv_rows(const Kernels &k, const uint8_t *src, int n, int n_val, int kv_dtype, float *buf) {
    if (kv_dtype == kKvF32) return (const float *)src;
    k.kv_to_f32(buf, src, n, n_val, kv_dtype);
    return buf;
}

struct AttnTask {
    const Kernels *k;
    const Batch *batch;
    const int32_t *tok_seq;         // (T) index into batch->seqs
    const int32_t *tiles;           // (n_tiles, 2): first token, tokens (consecutive, one sequence)
    const float *q;                 // (T, H*D)
    float *out;                     // (T, H*D)
    const uint8_t *kcache, *vcache; // this layer's rows of block 0: (Hkv, bs) rows of D values each
    int64_t block_stride;           // bytes from one block to the next (all layers)
    int64_t row_bytes;              // bytes of one stored row of D values
    int kv_dtype;                   // ENG_KV_DTYPE_*
    int H, Hkv, D, bs;
    float scale;
    float *const *scores; // per worker: (attn_tile_tokens * H/Hkv, n_ctx)
    float *const *kvbuf;  // per worker: (bs, D) widened rows (non-f32 caches)
};

/* One (token tile, kv head) pair: token i of the tile, at position p0 + i, has its group's query
 * heads attend positions [0, p0 + i], one KV block (bs consecutive positions, contiguous per kv
 * head) at a time. Scores past a token's own position are computed with the others' and left
 * unused; every (query row, position) gets the same bits as when its token runs alone. */
static void attn_task(void *arg, int task, int worker) {
    const AttnTask &a = *(const AttnTask *)arg;
    int tile = task / a.Hkv, g = task % a.Hkv, group = a.H / a.Hkv, D = a.D, bs = a.bs;
    int t0 = a.tiles[2 * tile], nt = a.tiles[2 * tile + 1];
    const BatchSeq &s = a.batch->seqs[(size_t)a.tok_seq[t0]];
    int p0 = s.pos0 + (t0 - s.tok0), n = p0 + nt; // positions the tile's last token attends
    float *sc = a.scores[worker];                 // (nt * group, n)
    int ldq = a.H * D;
    const float *q = a.q + (int64_t)t0 * ldq + (int64_t)g * group * D;
    int64_t head_stride = (int64_t)bs * a.row_bytes, block_stride = a.block_stride;
    float *buf = a.kvbuf[worker];
    for (int j0 = 0; j0 < n; j0 += bs) {
        int nb = n - j0 < bs ? n - j0 : bs;
        const float *kr =
            kv_rows(*a.k, a.kcache + s.block_table[j0 / bs] * block_stride + g * head_stride, nb, D, a.kv_dtype, buf);
        a.k->attn_scores(sc, n, j0, q, ldq, nt, group, kr, nb, D, a.scale);
    }
    float *o = a.out + (int64_t)t0 * ldq + (int64_t)g * group * D;
    for (int i = 0; i < nt; i++)
        for (int h = 0; h < group; h++) {
            a.k->softmax(sc + (int64_t)(i * group + h) * n, p0 + i + 1);
            memset(o + (int64_t)i * ldq + (int64_t)h * D, 0, (size_t)D * sizeof(float));
        }
    for (int j0 = 0; j0 < n; j0 += bs) {
        int nb = n - j0 < bs ? n - j0 : bs;
        const float *vr =
            kv_rows(*a.k, a.vcache + s.block_table[j0 / bs] * block_stride + g * head_stride, nb, D, a.kv_dtype, buf);
        // Tokens from i_full on attend the whole block, together; earlier ones end inside it.
        int i_full = j0 + nb - 1 - p0 > 0 ? j0 + nb - 1 - p0 : 0;
        for (int i = 0; i < i_full && i < nt; i++)
            if (p0 + i + 1 > j0)
                a.k->attn_accum(o + (int64_t)i * ldq, ldq, sc + (int64_t)i * group * n, n, j0, 1, group, vr,
                                p0 + i + 1 - j0, D, D);
        if (i_full < nt)
            a.k->attn_accum(o + (int64_t)i_full * ldq, ldq, sc + (int64_t)i_full * group * n, n, j0, nt - i_full, group,
                            vr, nb, D, D);
    }
}

/* Query heads one MLA attention task covers (scores scratch: kMlaHeads x n_ctx per worker). */
const int kMlaHeads = 8;
/* Up to this many tokens a step, MLA's W_UK / W_UV products read the weights per token (rows_accum,
 * row_dot); more widen each row once and reuse it (the same bits either way). */
const int kMlaFusedMaxTokens = 4;

struct MlaTask {
    const Kernels *k;
    const Batch *batch;
    const int32_t *tok_seq; // (T)
    int T;
    const float *q;       // (T, H, Dn + Dr): q_nope then roped q_pe
    float *q_abs;         // (T, H, R + Dr): absorbed queries
    float *lat;           // (T, H, R): attention-weighted latent
    float *out;           // (T, H * Dv)
    const uint8_t *cache; // this layer: (n_blocks, bs) stored rows of R + Dr values
    const Weight *kv_b;   // (H * (Dn + Dv), R): per head Dn rows W_UK, then Dv rows W_UV
    int H, R, Dn, Dr, Dv, bs;
    float scale;
    float *const *scores;  // per worker: (kMlaHeads, n_ctx)
    float *const *scratch; // per worker: >= max(R, Dn * R) floats
    int64_t block_stride;  // cache bytes from one block to the next (all layers)
    int64_t row_bytes;     // bytes of one stored row of R + Dr values
    int kv_dtype;          // ENG_KV_DTYPE_*
    float *const *kvbuf;   // per worker: (bs, R + Dr) widened rows (non-f32 caches)
};

/* Head h, every token: q_abs[t, h] = [W_UK_h^T q_nope[t, h]; q_pe[t, h]]. Each W_UK row is widened
 * once per step; a token's sum runs over the rows in order whatever T is. */
static void mla_absorb_task(void *arg, int h, int worker) {
    const MlaTask &a = *(const MlaTask *)arg;
    int R = a.R, Dk = a.R + a.Dr, Dq = a.Dn + a.Dr;
    float *wrow = a.scratch[worker];
    for (int t = 0; t < a.T; t++) {
        float *qa = a.q_abs + ((int64_t)t * a.H + h) * Dk;
        memset(qa, 0, (size_t)R * sizeof(float));
        memcpy(qa + R, a.q + ((int64_t)t * a.H + h) * Dq + a.Dn, (size_t)a.Dr * sizeof(float));
    }
    int64_t row0 = (int64_t)h * (a.Dn + a.Dv);
    if (a.T <= kMlaFusedMaxTokens) { // decode: each token's sum straight from the weights, the same bits
        for (int t = 0; t < a.T; t++)
            a.k->rows_accum(a.q_abs + ((int64_t)t * a.H + h) * Dk, a.q + ((int64_t)t * a.H + h) * Dq, a.Dn,
                            a.kv_b->data, a.kv_b->dtype, row0, R, a.kv_b->scale, wrow);
        return;
    }
    // All Dn rows widened once, then each token's sum over them in registers (attn_accum: the
    // same sequence of fused multiply-adds over i as one axpy per row).
    for (int i = 0; i < a.Dn; i++)
        a.k->row_to_f32(wrow + (int64_t)i * R, a.kv_b->data, a.kv_b->dtype, (int64_t)h * (a.Dn + a.Dv) + i, R,
                        a.kv_b->scale);
    for (int t = 0; t < a.T; t++)
        a.k->attn_accum(a.q_abs + ((int64_t)t * a.H + h) * Dk, 0, a.q + ((int64_t)t * a.H + h) * Dq, a.Dn, 0, 1, 1,
                        wrow, a.Dn, R, R);
}

/* One (token, group of kMlaHeads heads): scores of the absorbed queries against the cached rows
 * [c; k_pe], softmax, and the weighted latent sum_j p_j c_j. */
static void mla_attend_task(void *arg, int task, int worker) {
    const MlaTask &a = *(const MlaTask *)arg;
    int n_groups = (a.H + kMlaHeads - 1) / kMlaHeads, t = task / n_groups, h0 = (task % n_groups) * kMlaHeads;
    int group = a.H - h0 < kMlaHeads ? a.H - h0 : kMlaHeads, R = a.R, Dk = a.R + a.Dr, bs = a.bs;
    const BatchSeq &s = a.batch->seqs[(size_t)a.tok_seq[t]];
    int n = s.pos0 + (t - s.tok0) + 1;
    float *sc = a.scores[worker];
    int64_t block_stride = a.block_stride;
    const float *qa = a.q_abs + ((int64_t)t * a.H + h0) * Dk;
    float *buf = a.kvbuf[worker];
    for (int j0 = 0; j0 < n; j0 += bs) {
        int nb = n - j0 < bs ? n - j0 : bs;
        const float *rows = kv_rows(*a.k, a.cache + s.block_table[j0 / bs] * block_stride, nb, Dk, a.kv_dtype, buf);
        a.k->attn_scores(sc, n, j0, qa, 0, 1, group, rows, nb, Dk, a.scale);
    }
    float *lat = a.lat + ((int64_t)t * a.H + h0) * R;
    for (int h = 0; h < group; h++) {
        a.k->softmax(sc + (int64_t)h * n, n);
        memset(lat + (int64_t)h * R, 0, (size_t)R * sizeof(float));
    }
    // lat_h = sum_j p_hj c_j, in increasing j, one cache block at a time (the latent is the first
    // R floats of each Dk-float row).
    for (int j0 = 0; j0 < n; j0 += bs) {
        int nb = n - j0 < bs ? n - j0 : bs;
        const float *rows = kv_rows(*a.k, a.cache + s.block_table[j0 / bs] * block_stride, nb, Dk, a.kv_dtype, buf);
        a.k->attn_accum(lat, 0, sc, n, j0, 1, group, rows, nb, R, Dk);
    }
}

/* Head h, every token: out[t, h] = W_UV_h lat[t, h], each W_UV row widened once per step. */
static void mla_expand_task(void *arg, int h, int worker) {
    const MlaTask &a = *(const MlaTask *)arg;
    float *wrow = a.scratch[worker];
    if (a.T <= kMlaFusedMaxTokens) { // decode: row_to_f32 + dot's bits without the widened copy
        for (int i = 0; i < a.Dv; i++)
            for (int t = 0; t < a.T; t++)
                a.out[(int64_t)t * a.H * a.Dv + (int64_t)h * a.Dv + i] =
                    a.k->row_dot(a.kv_b->data, a.kv_b->dtype, (int64_t)h * (a.Dn + a.Dv) + a.Dn + i, a.R, a.kv_b->scale,
                                 a.lat + ((int64_t)t * a.H + h) * a.R, wrow);
        return;
    }
    for (int i = 0; i < a.Dv; i++) {
        a.k->row_to_f32(wrow, a.kv_b->data, a.kv_b->dtype, (int64_t)h * (a.Dn + a.Dv) + a.Dn + i, a.R, a.kv_b->scale);
        for (int t = 0; t < a.T; t++)
            a.out[(int64_t)t * a.H * a.Dv + (int64_t)h * a.Dv + i] =
                a.k->dot(wrow, a.lat + ((int64_t)t * a.H + h) * a.R, a.R);
    }
}

/* Activation buffers start on a cache line, so the matmul's 64-byte vector loads never straddle two
 * lines (bf16 prefill with K = 2048 on one core of the Zen 4 box: 62-66 GFLOP/s from buffers 16 bytes
 * off a line, 76-85 from aligned ones). */
template <class T> struct LineAlloc {
    using value_type = T;
    LineAlloc() = default;
    template <class U> LineAlloc(const LineAlloc<U> &) {}
    /* Zeroed memory. From kLazyBytes on, fresh anonymous pages: the kernel zero-fills a page when it
     * is first touched, so a buffer sized for the largest batch (a prefill chunk plus every
     * sequence's drafts) costs resident memory only for the rows a batch has used. */
    static const size_t kLazyBytes = 256 << 10;
    T *allocate(size_t n) {
        size_t bytes = n * sizeof(T);
        if (bytes >= kLazyBytes) {
            void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) throw std::bad_alloc();
            return (T *)p;
        }
        void *p = ::operator new(bytes, std::align_val_t(64));
        memset(p, 0, bytes);
        return (T *)p;
    }
    void deallocate(T *p, size_t n) {
        if (n * sizeof(T) >= kLazyBytes) munmap(p, n * sizeof(T));
        else ::operator delete(p, std::align_val_t(64));
    }
    /* Value-initialization (resize) writes nothing: the memory is zero already, and writing the
     * zeros would make every page resident. Every LineAlloc vector grows only from empty (resized
     * once, never shrunk and regrown), so its new elements always lie in fresh memory. */
    template <class U> void construct(U *) {}
    template <class U, class... A> void construct(U *p, A &&...a) { ::new ((void *)p) U(std::forward<A>(a)...); }
    template <class U> bool operator==(const LineAlloc<U> &) const { return true; }
    template <class U> bool operator!=(const LineAlloc<U> &) const { return false; }
};
using Buf = std::vector<float, LineAlloc<float>>;

class CpuBackend final : public Backend {
  public:
    CpuBackend(const Model &m, const Kernels &k) : m_(m), c_(m.cfg), k_(k) {}
    ~CpuBackend() override {
        if (kv_) munmap(kv_, kv_bytes_);
    }
    int32_t init(const BackendConfig &cfg);
    int32_t forward(const Batch &batch, float *logits) override;
    const float *hidden() const override { return cfg_.use_mtp ? x_.data() : nullptr; }
    int32_t mtp_forward(const Batch &batch, const float *h, float *h_out, float *logits) override;
    int32_t kind() const override { return ENG_BACKEND_CPU; }
    int32_t simd() const override { return k_.simd; }

  private:
    // init()'s steps.
    int32_t map_kv_cache();
    void alloc_activations();
    void alloc_scratch();
    int32_t prepare(const Batch &b, int T);
    void layer(int l, const Batch &b, int T);
    void head(const Batch &b, const std::vector<float> &norm, const Weight &w, float *logits);
    /* Layer l's weights: the main model's, or (l == n_layer) the MTP layer's decoder layer. */
    const LayerWeights &layer_w(int l) const { return l < c_.n_layer ? m_.layers[(size_t)l] : m_.mtp[0].layer; }
    void linear(int T, const MatJob *jobs, int n_jobs);
    void rope(float *v, int n_heads, int stride, int t);
    void qkv(int l, const Batch &b, int T);
    void attention_block(int l, const Batch &b, int T);
    void mla_block(int l, const Batch &b, int T);
    void mlp_block(int l, int T);
    void moe_block(int l, int T);
    void add_residual(const std::vector<float> &post_norm, int T);
    /* f(t) for t in [0, n): across the pool when n >= kParallelRows (a prefill chunk's norms,
     * RoPE, SiLU and residuals would otherwise run on one core while the others wait), inline for
     * a decode step's few rows. Each row is computed the same way on any thread. */
    template <class F> void for_rows(int n, F f);
    /* The cache is block-major: a block holds bs positions of every layer, so the pages a prompt
     * touches are the ones it uses (with 2 MiB pages a layer-major cache would fault in a page
     * per layer for the first token). Rows are kv_row_bytes(kv_dtype, D) bytes (MLA: R + Dr values). */
    int64_t kv_row() const {
        return kv_row_bytes(cfg_.kv_dtype, c_.is_mla() ? c_.kv_lora_rank + c_.qk_rope_dim : c_.head_dim);
    }
    int64_t kv_layer_block_bytes() const {
        return (int64_t)cfg_.block_size * kv_row() * (c_.is_mla() ? 1 : 2 * c_.n_head_kv);
    }
    int64_t kv_block_bytes() const { return (int64_t)n_kv_layer_ * kv_layer_block_bytes(); }
    uint8_t *kcache(int l) {
        return kv_ + (int64_t)l * kv_layer_block_bytes();
    } // + block * kv_block_bytes(): (Hkv, bs) rows; MLA (bs) rows
    uint8_t *vcache(int l) { return kcache(l) + kv_layer_block_bytes() / 2; }

    const Model &m_;
    const ModelConfig &c_;
    const Kernels &k_;
    BackendConfig cfg_;
    ThreadPool pool_;
    bool is_streaming_ = false; // weights larger than the last-level cache: read from DRAM every step
    int n_kv_layer_ = 0;        // n_layer, + 1 for the MTP layer (BackendConfig::use_mtp)
    Buf eh_in_;                 // MTP: (T, 2C) [enorm(embedding); hnorm(h)]
    uint8_t *kv_ = nullptr;     // (n_blocks, L, 2, Hkv, bs) rows of D values; MLA (n_blocks, L, bs) rows of R + Dr
    size_t kv_bytes_ = 0;
    Buf x_, h_, q_, kk_, vv_, att_, ff_, ff2_;           // activations, T rows each
    std::vector<float> rope_cos_, rope_sin_, inv_freq_;  // (T, rotary_dim/2), (rotary_dim/2)
    std::vector<int32_t> tok_seq_;                       // (T)
    std::vector<int32_t> attn_tiles_;                    // (T, 2) see attn_task
    Buf qa_, kva_, qabs_, lat_;                          // MLA: (T, Rq), (T, R+Dr), (T, H, R+Dr), (T, H, R)
    std::vector<float> router_, sel_w_;                  // MoE: (T, E), (T, K)
    Buf moe_in_, moe_out_, moe_acc_;                     //   (T, C) x3
    std::vector<int32_t> sel_, expert_tok_, expert_cnt_; // (T, K), (T*K), (E+1)
    std::vector<float> route_scores_;                    // (E) + (E) + (n_group)
    std::vector<MatJob> moe_jobs_;                       // (2 (E + 1)) one MoE phase's matmuls
    std::vector<int> unit_end_;                          // (max(3, 2 (E + 1))) see linear()
    std::vector<int64_t> q8_off_;                        // (as unit_end_) see linear()
    std::vector<int8_t, LineAlloc<int8_t>> q8x_;         // Q8 weights: quantized activations
    std::vector<float> q8d_;                             //   and their per-32 scales (32-block GGUF dtypes too)
    std::vector<int16_t> q8bs_;                          //   and per-32 sums (32-block GGUF dtypes)
    std::vector<int64_t> kq_off_;                        // (as unit_end_) see linear()
    std::vector<int8_t, LineAlloc<int8_t>> kqx_;         // K-quant weights: quantized activations,
    std::vector<float> kqd_;                             //   their per-256 scales
    std::vector<int16_t> kqbs_;                          //   and per-16 sums
    size_t act_cap_ = 0;                                 // quantized activation bytes one linear() may need
    std::vector<int64_t> f8_off_;                        // (as unit_end_) see linear()
    Buf f8x_;                                            // finite FP8 weights: x times f8_x_scale
    Buf out_x_;                                          // (max_logits, C)
    std::vector<Buf> scratch_, scores_, kvbuf_;          // per worker
    std::vector<float *> scratch_ptr_, scores_ptr_, kvbuf_ptr_;
};

int32_t CpuBackend::init(const BackendConfig &cfg) {
    cfg_ = cfg;
    if (cfg.max_tokens <= 0 || cfg.max_logits <= 0 || cfg.n_blocks <= 0 || cfg.block_size <= 0 || cfg.n_ctx <= 0)
        return fail(ENG_STATUS_INVALID_ARG, "cpu backend: bad limits");
    if (cfg.use_mtp && m_.mtp.empty()) return fail(ENG_STATUS_INVALID_ARG, "cpu backend: the model has no MTP layer");
    n_kv_layer_ = c_.n_layer + (cfg.use_mtp ? 1 : 0);
    ENG_TRY(pool_.start(cfg.n_threads));
    // 16 MiB: half the 32 MiB L3 of the CPU box; above it the matrices of a step cannot stay cached.
    is_streaming_ = m_.weight_bytes > (16 << 20);
    ENG_TRY(map_kv_cache());
    alloc_activations();
    alloc_scratch();
    return ENG_STATUS_OK;
}

/* Reserves the KV cache (cfg_.n_blocks blocks), untouched until used. */
int32_t CpuBackend::map_kv_cache() {
    if (cfg_.kv_dtype != kKvF32 && cfg_.kv_dtype != kKvBF16 && cfg_.kv_dtype != kKvF16 && cfg_.kv_dtype != kKvQ8_0)
        return fail(ENG_STATUS_INVALID_ARG, "cpu backend: unknown KV dtype %d", cfg_.kv_dtype);
    size_t want = (size_t)((int64_t)cfg_.n_blocks * kv_block_bytes());
    void *p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return fail(ENG_STATUS_OUT_OF_MEMORY, "cannot reserve %zu bytes of KV cache", want);
    // 2 MiB pages where the kernel allows them (best effort): a head's rows come bs positions at a
    // time from blocks far apart, and with 4 KiB pages each block is a TLB miss and a cold start of
    // the prefetcher (bf16 110M decode x1.04-1.06 on the Zen 4 box). Pages are still faulted in as
    // the cache fills; the block-major layout keeps that to the blocks in use.
    madvise(p, want, MADV_HUGEPAGE);
    kv_ = (uint8_t *)p;
    kv_bytes_ = want;
    return ENG_STATUS_OK;
}

/* The activation buffers of a batch of cfg_.max_tokens tokens (and MLA's and MoE's own). */
void CpuBackend::alloc_activations() {
    size_t T = (size_t)cfg_.max_tokens, C = (size_t)c_.n_embd, qd = (size_t)c_.n_head * c_.head_dim,
           kvd = (size_t)c_.n_head_kv * c_.head_dim, I = (size_t)c_.n_ff, H = (size_t)c_.n_head;
    // MoE: T*K expert rows plus T shared rows go through ff_/ff2_ at once.
    size_t moe_ff = T * (size_t)c_.n_expert_used * (size_t)c_.n_ff_expert + T * (size_t)c_.n_ff_shared;
    size_t att = c_.is_mla() ? H * (size_t)c_.v_head_dim : qd;
    x_.resize(T * C);
    h_.resize(T * C);
    q_.resize(T * qd);
    if (!c_.is_mla()) {
        kk_.resize(T * kvd);
        vv_.resize(T * kvd);
    }
    att_.resize(T * att);
    ff_.resize(2 * (T * I > moe_ff ? T * I : moe_ff));
    ff2_.resize(T * I > moe_ff ? T * I : moe_ff);
    unit_end_.resize(3 + 2 * (size_t)(c_.n_expert + 1));
    q8_off_.resize(unit_end_.size());
    kq_off_.resize(unit_end_.size());
    f8_off_.resize(unit_end_.size());
    if (c_.is_mla()) {
        size_t R = (size_t)c_.kv_lora_rank, Dr = (size_t)c_.qk_rope_dim;
        qa_.resize(T * (size_t)c_.q_lora_rank);
        kva_.resize(T * (R + Dr));
        qabs_.resize(T * H * (R + Dr));
        lat_.resize(T * H * R);
    }
    if (c_.n_expert > 0) {
        size_t E = (size_t)c_.n_expert, K = (size_t)c_.n_expert_used;
        router_.resize(T * E);
        sel_.resize(T * K);
        sel_w_.resize(T * K);
        expert_tok_.resize(T * K);
        expert_cnt_.resize(E + 1);
        moe_in_.resize(T * K * C);
        moe_out_.resize(T * (K + 1) * C);
        moe_acc_.resize(T * C);
        moe_jobs_.resize(2 * (E + 1));
        route_scores_.resize(2 * E + (size_t)c_.n_group);
    }
    int half = c_.rotary_dim / 2;
    rope_cos_.resize(T * (size_t)half);
    rope_sin_.resize(T * (size_t)half);
    tok_seq_.resize(T);
    attn_tiles_.resize(2 * T);
    out_x_.resize((size_t)cfg_.max_logits * C);
    if (cfg_.use_mtp) eh_in_.resize(T * 2 * C);
    inv_freq_.resize((size_t)half);
    model_rope_inv_freq(c_, inv_freq_.data());
}

/* The quantized / scaled activations of one linear() call and each worker's matmul scratch and
 * attention scores, sized by the widest matmul input. */
void CpuBackend::alloc_scratch() {
    size_t T = (size_t)cfg_.max_tokens;
    int64_t qd = (int64_t)c_.n_head * c_.head_dim, att = c_.is_mla() ? (int64_t)c_.n_head * c_.v_head_dim : qd;
    int64_t kmax = cfg_.use_mtp ? 2LL * c_.n_embd : c_.n_embd; // MTP: eh_proj reads 2C
    for (int64_t k : {(int64_t)c_.n_ff, (int64_t)c_.n_ff_expert, (int64_t)c_.n_ff_shared, qd, att,
                      (int64_t)c_.kv_lora_rank, (int64_t)c_.q_lora_rank})
        if (k > kmax) kmax = k;
    // The quantized activations of one linear() call: T rows per distinct input, at most K + 2
    // inputs of kmax. Allocated here for Q8, on first use for GGUF block dtypes.
    act_cap_ = T * (size_t)(c_.n_expert_used + 2) * (size_t)kmax;
    if (m_.has_q8()) {
        q8x_.resize(act_cap_);
        q8d_.resize(q8x_.size() / kQ8Block);
    }
    if (k_.f8_x_scale != 1.0f) // decode's scaled activations: as q8x_, for up to kF8ScaledMaxTokens tokens
        f8x_.resize((size_t)kF8ScaledMaxTokens * (size_t)(c_.n_expert_used + 2) * (size_t)kmax);
    int nw = pool_.n_threads();
    size_t group =
        c_.is_mla() ? (size_t)(c_.n_head < kMlaHeads ? c_.n_head : kMlaHeads) : (size_t)(c_.n_head / c_.n_head_kv);
    scratch_.resize((size_t)nw);
    scores_.resize((size_t)nw);
    kvbuf_.resize((size_t)nw);
    for (int w = 0; w < nw; w++) {
        // MLA's absorb widens a head's Dn rows of W_UK (R columns each) at once.
        scratch_[(size_t)w].resize(
            (size_t)std::max<int64_t>(kMatmulRows * kmax, (int64_t)c_.qk_nope_dim * c_.kv_lora_rank));
        size_t rows = group * (size_t)(c_.is_mla() ? 1 : attn_tile_tokens((int)group, cfg_.kv_dtype));
        if (!c_.is_mla() && (size_t)cfg_.verify_rows > rows) rows = (size_t)cfg_.verify_rows;
        scores_[(size_t)w].resize(rows * (size_t)cfg_.n_ctx);
        scratch_ptr_.push_back(scratch_[(size_t)w].data());
        scores_ptr_.push_back(scores_[(size_t)w].data());
        if (cfg_.kv_dtype != kKvF32) // one block of widened rows (kv_rows)
            kvbuf_[(size_t)w].resize((size_t)cfg_.block_size *
                                     (size_t)(c_.is_mla() ? c_.kv_lora_rank + c_.qk_rope_dim : c_.head_dim));
        kvbuf_ptr_.push_back(kvbuf_[(size_t)w].data());
    }
}

/* Rows below which for_rows runs inline (a pool loop costs a few microseconds). */
const int kParallelRows = 16;

template <class F> void CpuBackend::for_rows(int n, F f) {
    if (n < kParallelRows || pool_.n_threads() == 1) {
        for (int i = 0; i < n; i++) f(i);
        return;
    }
    struct Ctx {
        F *f;
        int n, n_tasks;
    } c{&f, n, n < 4 * pool_.n_threads() ? n : 4 * pool_.n_threads()};
    pool_.run(
        c.n_tasks,
        [](void *arg, int task, int) {
            const Ctx &c = *(const Ctx *)arg;
            int i0 = (int)((int64_t)c.n * task / c.n_tasks), i1 = (int)((int64_t)c.n * (task + 1) / c.n_tasks);
            for (int i = i0; i < i1; i++) (*c.f)(i);
        },
        &c, true);
}

/* Runs n_jobs matmuls (at most unit_end_.size()) as one parallel loop over their row blocks. */
void CpuBackend::linear(int T, const MatJob *jobs, int n_jobs) {
    MatmulTask m;
    m.k = &k_;
    m.T = T;
    m.is_streaming = is_streaming_;
    m.n_jobs = n_jobs;
    m.jobs = jobs;
    m.unit_end = unit_end_.data();
    m.scratch = scratch_ptr_.data();
    m.q8_off = q8_off_.data();
    m.kq_off = kq_off_.data();
    m.f8_off = f8_off_.data();
    m.f8x = f8x_.data();
    int total = 0;
    int64_t q8_used = 0, f8_used = 0, kq_used = 0;
    // The offset an earlier job's prepared copy of this job's input has in offs (the same x, rows
    // and columns), or -1.
    auto shared = [&](const int64_t *offs, int j) {
        const MatJob &jb = jobs[j];
        for (int i = 0; i < j; i++)
            if (offs[i] >= 0 && jobs[i].x == jb.x && jobs[i].ldx == jb.ldx && jobs[i].w->cols == jb.w->cols &&
                (jobs[i].T > 0 ? jobs[i].T : T) == (jb.T > 0 ? jb.T : T))
                return offs[i];
        return (int64_t)-1;
    };
    for (int j = 0; j < n_jobs; j++) {
        total += (jobs[j].w->rows + kMatmulRows - 1) / kMatmulRows;
        unit_end_[(size_t)j] = total;
        // Q8: quantize each distinct input (x, rows, columns) once; jobs sharing it (q/k/v,
        // gate/up) reuse it. Without room, the kernel quantizes per row block instead (same result).
        const MatJob &jb = jobs[j];
        int jt = jb.T > 0 ? jb.T : T, K = jb.w->cols;
        q8_off_[(size_t)j] = -1;
        kq_off_[(size_t)j] = -1;
        f8_off_[(size_t)j] = -1;
        if (jb.w->dtype == DT_F8_E4M3 && jb.w->is_f8_finite && jt <= kF8ScaledMaxTokens && !f8x_.empty()) {
            // Scaled once for every row block (and for jobs sharing the input, as gate/up do).
            f8_off_[(size_t)j] = shared(f8_off_.data(), j);
            if (f8_off_[(size_t)j] >= 0 || f8_used + (int64_t)jt * K > (int64_t)f8x_.size()) continue;
            for (int t = 0; t < jt; t++) {
                float *o = &f8x_[(size_t)(f8_used + (int64_t)t * K)];
                memcpy(o, jb.x + (int64_t)t * jb.ldx, sizeof(float) * (size_t)K);
                k_.scale(o, k_.f8_x_scale, K); // a power of two: exact
            }
            f8_off_[(size_t)j] = f8_used;
            f8_used += (int64_t)jt * K;
            continue;
        }
        if (ggml_is_k_dtype(jb.w->dtype)) { // K-quants: per 256, with bsums
            if (kqx_.empty()) {
                kqx_.resize(act_cap_);
                kqd_.resize(act_cap_ / 256);
                kqbs_.resize(act_cap_ / 16);
            }
            kq_off_[(size_t)j] = shared(kq_off_.data(), j);
            if (kq_off_[(size_t)j] >= 0 || kq_used + (int64_t)jt * K > (int64_t)kqx_.size()) continue;
            for (int t = 0; t < jt; t++) {
                int64_t o = kq_used + (int64_t)t * K;
                k_.quantize_q8k(jb.x + (int64_t)t * jb.ldx, K, &kqx_[(size_t)o], &kqd_[(size_t)(o / 256)],
                                &kqbs_[(size_t)(o / 16)]);
            }
            kq_off_[(size_t)j] = kq_used;
            kq_used += (int64_t)jt * K;
            continue;
        }
        if (jb.w->dtype != DT_Q8 && !ggml_is_block_dtype(jb.w->dtype)) continue;
        if (q8x_.empty()) {
            q8x_.resize(act_cap_);
            q8d_.resize(act_cap_ / kQ8Block);
        }
        q8_off_[(size_t)j] = shared(q8_off_.data(), j);
        if (q8_off_[(size_t)j] >= 0 || q8_used + (int64_t)jt * K > (int64_t)q8x_.size()) continue;
        for (int t = 0; t < jt; t++)
            k_.quantize_q8(jb.x + (int64_t)t * jb.ldx, K, &q8x_[(size_t)(q8_used + (int64_t)t * K)],
                           &q8d_[(size_t)((q8_used + (int64_t)t * K) / kQ8Block)]);
        // The per-block sums the offset of Q4_0 / Q5_0 needs, once for all row blocks (for every dtype:
        // a job of another dtype may share these activations).
        if (q8bs_.empty()) q8bs_.resize(act_cap_ / kQ8Block);
        for (int64_t b = q8_used / kQ8Block; b < (q8_used + (int64_t)jt * K) / kQ8Block; b++) {
            const int8_t *q = &q8x_[(size_t)(b * kQ8Block)];
            int s = 0;
            for (int i = 0; i < kQ8Block; i++) s += q[i];
            q8bs_[(size_t)b] = (int16_t)s;
        }
        q8_off_[(size_t)j] = q8_used;
        q8_used += (int64_t)jt * K;
    }
    m.q8x = q8x_.data(); // (buffers made on first use above)
    m.q8d = q8d_.data();
    m.q8bs = q8bs_.data();
    m.kqx = kqx_.data();
    m.kqd = kqd_.data();
    m.kqbs = kqbs_.data();
    pool_.run(total, matmul_task, &m, is_streaming_);
}

/* Rotates the leading rotary_dim dims of each of n_heads heads (stride floats apart) of token t's
 * vector v. */
void CpuBackend::rope(float *v, int n_heads, int stride, int t) {
    int half = c_.rotary_dim / 2;
    const float *cs = &rope_cos_[(size_t)t * half], *sn = &rope_sin_[(size_t)t * half];
    for (int h = 0; h < n_heads; h++) {
        float *x = v + (int64_t)h * stride;
        if (c_.is_rope_interleaved) { // GLM-4: pairs (x[2i], x[2i+1]) use frequency i
            for (int i = 0; i < half; i++) {
                float a = x[2 * i], b = x[2 * i + 1];
                x[2 * i] = a * cs[i] - b * sn[i];
                x[2 * i + 1] = b * cs[i] + a * sn[i];
            }
        } else { // neox: x[i] pairs with x[i + half]
            for (int i = 0; i < half; i++) {
                float a = x[i], b = x[i + half];
                x[i] = a * cs[i] - b * sn[i];
                x[i + half] = b * cs[i] + a * sn[i];
            }
        }
    }
}

static const float *bias_of(const std::vector<float> &v) { return v.empty() ? nullptr : v.data(); }

/* q, k, v of every token (+ Qwen3 per-head norms, RoPE), K/V written to their cache slots. */
void CpuBackend::qkv(int l, const Batch &b, int T) {
    const LayerWeights &L = layer_w(l);
    int C = c_.n_embd, H = c_.n_head, Hkv = c_.n_head_kv, D = c_.head_dim, bs = cfg_.block_size;
    int qd = H * D, kvd = Hkv * D;
    MatJob jobs[3] = {{&L.wq, h_.data(), C, q_.data(), qd, bias_of(L.bq)},
                      {&L.wk, h_.data(), C, kk_.data(), kvd, bias_of(L.bk)},
                      {&L.wv, h_.data(), C, vv_.data(), kvd, bias_of(L.bv)}};
    linear(T, jobs, 3);
    uint8_t *kc = kcache(l), *vc = vcache(l);
    int64_t row = kv_row();
    for_rows(T, [&](int t) {
        float *q = &q_[(size_t)t * qd], *k = &kk_[(size_t)t * kvd], *v = &vv_[(size_t)t * kvd];
        if (c_.has_qk_norm) {
            for (int h = 0; h < H; h++) k_.rmsnorm(q + h * D, q + h * D, L.q_norm.data(), D, c_.rms_eps);
            for (int h = 0; h < Hkv; h++) k_.rmsnorm(k + h * D, k + h * D, L.k_norm.data(), D, c_.rms_eps);
        }
        rope(q, H, D, t);
        rope(k, Hkv, D, t);
        const BatchSeq &s = b.seqs[(size_t)tok_seq_[(size_t)t]];
        int pos = s.pos0 + (t - s.tok0);
        int64_t blk = s.block_table[pos / bs], off = pos % bs;
        for (int g = 0; g < Hkv; g++) {
            k_.kv_store(kc + blk * kv_block_bytes() + ((int64_t)g * bs + off) * row, k + g * D, D, cfg_.kv_dtype);
            k_.kv_store(vc + blk * kv_block_bytes() + ((int64_t)g * bs + off) * row, v + g * D, D, cfg_.kv_dtype);
        }
    });
}

/* x += [post_attn_norm](o_proj(attention(input_layernorm(x)))). */
void CpuBackend::attention_block(int l, const Batch &b, int T) {
    const LayerWeights &L = layer_w(l);
    int C = c_.n_embd, H = c_.n_head, Hkv = c_.n_head_kv, D = c_.head_dim;
    for_rows(T, [&](int t) { k_.rmsnorm(&h_[(size_t)t * C], &x_[(size_t)t * C], L.attn_norm.data(), C, c_.rms_eps); });
    qkv(l, b, T);
    int group = H / Hkv, n_tiles = 0;
    for (const BatchSeq &s : b.seqs) {
        int qt = attn_tile_tokens(group, cfg_.kv_dtype);
        // A verification pass (its pending token and drafts): tiles of up to verify_rows query rows, in
        // as few tiles as that allows, so the drafts read each cached row together (long contexts).
        int per = cfg_.verify_rows / group;
        if (s.n_logits > 1 && per > qt) {
            int n_t = (s.n_tokens + per - 1) / per;
            qt = (s.n_tokens + n_t - 1) / n_t;
        }
        for (int t = s.tok0; t < s.tok0 + s.n_tokens; t += qt, n_tiles++) {
            attn_tiles_[(size_t)(2 * n_tiles)] = t;
            attn_tiles_[(size_t)(2 * n_tiles + 1)] = s.tok0 + s.n_tokens - t < qt ? s.tok0 + s.n_tokens - t : qt;
        }
    }
    AttnTask at;
    at.k = &k_;
    at.batch = &b;
    at.tok_seq = tok_seq_.data();
    at.tiles = attn_tiles_.data();
    at.q = q_.data();
    at.out = att_.data();
    at.kcache = kcache(l);
    at.vcache = vcache(l);
    at.block_stride = kv_block_bytes();
    at.row_bytes = kv_row();
    at.kv_dtype = cfg_.kv_dtype;
    at.H = H;
    at.Hkv = Hkv;
    at.D = D;
    at.bs = cfg_.block_size;
    at.scale = c_.attn_scale;
    at.scores = scores_ptr_.data();
    at.kvbuf = kvbuf_ptr_.data();
    pool_.run(n_tiles * Hkv, attn_task, &at);
    MatJob o = {&L.wo, att_.data(), H * D, h_.data(), C, bias_of(L.bo)};
    linear(T, &o, 1);
    add_residual(L.post_attn_norm, T);
}

/* x += [post_mlp_norm](down(silu(gate(h)) * up(h))), h = post_attention_layernorm(x). */
void CpuBackend::mlp_block(int l, int T) {
    const LayerWeights &L = layer_w(l);
    int C = c_.n_embd, I = c_.n_ff;
    for_rows(T, [&](int t) { k_.rmsnorm(&h_[(size_t)t * C], &x_[(size_t)t * C], L.mlp_norm.data(), C, c_.rms_eps); });
    if (L.w_gate_up.data) { // GLM-4: one fused matrix, rows [gate; up]
        MatJob gu = {&L.w_gate_up, h_.data(), C, ff_.data(), 2 * I, nullptr};
        linear(T, &gu, 1);
    } else {
        MatJob gu[2] = {{&L.w_gate, h_.data(), C, ff_.data(), 2 * I, bias_of(L.b_gate)},
                        {&L.w_up, h_.data(), C, ff_.data() + I, 2 * I, bias_of(L.b_up)}};
        linear(T, gu, 2);
    }
    for_rows(
        T, [&](int t) { k_.silu_mul(&ff2_[(size_t)t * I], &ff_[(size_t)t * 2 * I], &ff_[(size_t)t * 2 * I + I], I); });
    MatJob down = {&L.w_down, ff2_.data(), I, h_.data(), C, bias_of(L.b_down)};
    linear(T, &down, 1);
    add_residual(L.post_mlp_norm, T);
}

/* x += [post_norm](h) for T rows. */
void CpuBackend::add_residual(const std::vector<float> &post_norm, int T) {
    int C = c_.n_embd;
    for_rows(T, [&](int t) {
        float *hr = &h_[(size_t)t * C], *xr = &x_[(size_t)t * C];
        if (c_.has_sandwich_norms) k_.rmsnorm(hr, hr, post_norm.data(), C, c_.rms_eps);
        for (int i = 0; i < C; i++) xr[i] += hr[i];
    });
}

/* x += shared(h) + sum_k w_k expert_k(h), h = post_attention_layernorm(x). Each expert runs once
 * over the tokens routed to it (only chosen experts' weights are read); a token's expert outputs
 * are summed in increasing expert id, so batching never changes its result. */
void CpuBackend::moe_block(int l, int T) {
    const LayerWeights &L = layer_w(l);
    int C = c_.n_embd, E = c_.n_expert, K = c_.n_expert_used;
    for_rows(T, [&](int t) { k_.rmsnorm(&h_[(size_t)t * C], &x_[(size_t)t * C], L.mlp_norm.data(), C, c_.rms_eps); });
    MatJob gate = {&L.router, h_.data(), C, router_.data(), E, nullptr};
    linear(T, &gate, 1);
    int32_t *cnt = expert_cnt_.data();
    memset(cnt, 0, sizeof(int32_t) * (size_t)(E + 1));
    for (int t = 0; t < T; t++) {
        moe_route(c_, L.router_bias.data(), &router_[(size_t)t * E], route_scores_.data(), &sel_[(size_t)t * K],
                  &sel_w_[(size_t)t * K]);
        for (int j = 0; j < K; j++) cnt[sel_[(size_t)t * K + j] + 1]++;
    }
    for (int e = 0; e < E; e++) cnt[e + 1] += cnt[e]; // cnt[e]: first slot of expert e
    for (int t = 0; t < T; t++)                       // slots of each expert in increasing token order
        for (int j = 0; j < K; j++) expert_tok_[(size_t)cnt[sel_[(size_t)t * K + j]]++] = t * K + j;
    for (int e = E; e > 0; e--) cnt[e] = cnt[e - 1];
    cnt[0] = 0;
    // Slot s (expert-major, tokens in order) holds its token's normed input; the shared experts
    // take rows [T*K, T*K + T). All chosen experts' gate/up run as one parallel loop, then all downs.
    int Ie = c_.n_ff_expert, Is = c_.n_ff_shared, S = T * K, n_jobs = 0;
    for (int i = 0; i < S; i++)
        memcpy(&moe_in_[(size_t)i * C], &h_[(size_t)(expert_tok_[(size_t)i] / K) * C], sizeof(float) * (size_t)C);
    float *gu_s = &ff_[(size_t)S * 2 * Ie], *act_s = &ff2_[(size_t)S * Ie], *out_s = &moe_out_[(size_t)S * C];
    for (int e = 0; e < E; e++) {
        int n = cnt[e + 1] - cnt[e];
        if (n == 0) continue;
        const Mlp &x = L.experts[(size_t)e];
        float *gu = &ff_[(size_t)cnt[e] * 2 * Ie];
        moe_jobs_[(size_t)n_jobs++] = {&x.gate, &moe_in_[(size_t)cnt[e] * C], C, gu, 2 * Ie, nullptr, n};
        moe_jobs_[(size_t)n_jobs++] = {&x.up, &moe_in_[(size_t)cnt[e] * C], C, gu + Ie, 2 * Ie, nullptr, n};
    }
    if (Is > 0) {
        moe_jobs_[(size_t)n_jobs++] = {&L.shared.gate, h_.data(), C, gu_s, 2 * Is, nullptr, T};
        moe_jobs_[(size_t)n_jobs++] = {&L.shared.up, h_.data(), C, gu_s + Is, 2 * Is, nullptr, T};
    }
    linear(T, moe_jobs_.data(), n_jobs);
    for_rows(S, [&](int i) {
        k_.silu_mul(&ff2_[(size_t)i * Ie], &ff_[(size_t)i * 2 * Ie], &ff_[(size_t)i * 2 * Ie + Ie], Ie);
    });
    if (Is > 0)
        for_rows(T, [&](int t) {
            k_.silu_mul(act_s + (size_t)t * Is, gu_s + (size_t)t * 2 * Is, gu_s + (size_t)t * 2 * Is + Is, Is);
        });
    n_jobs = 0;
    for (int e = 0; e < E; e++) {
        int n = cnt[e + 1] - cnt[e];
        if (n > 0)
            moe_jobs_[(size_t)n_jobs++] = {&L.experts[(size_t)e].down,
                                           &ff2_[(size_t)cnt[e] * Ie],
                                           Ie,
                                           &moe_out_[(size_t)cnt[e] * C],
                                           C,
                                           nullptr,
                                           n};
    }
    if (Is > 0) moe_jobs_[(size_t)n_jobs++] = {&L.shared.down, act_s, Is, out_s, C, nullptr, T};
    linear(T, moe_jobs_.data(), n_jobs);
    // Each token adds its experts in increasing id (slots are expert-major), then the shared ones.
    memset(moe_acc_.data(), 0, sizeof(float) * (size_t)T * C);
    for (int i = 0; i < S; i++) {
        int slot = expert_tok_[(size_t)i];
        k_.axpy(&moe_acc_[(size_t)(slot / K) * C], sel_w_[(size_t)slot], &moe_out_[(size_t)i * C], C);
    }
    for (size_t i = 0; i < (size_t)T * C && Is > 0; i++) moe_acc_[i] += out_s[i];
    memcpy(h_.data(), moe_acc_.data(), sizeof(float) * (size_t)T * C);
    add_residual(L.post_mlp_norm, T);
}

/* x += o_proj(MLA(input_layernorm(x))): see the file comment for the absorbed form. */
void CpuBackend::mla_block(int l, const Batch &b, int T) {
    const LayerWeights &L = layer_w(l);
    int C = c_.n_embd, H = c_.n_head, R = c_.kv_lora_rank, Dr = c_.qk_rope_dim, Dn = c_.qk_nope_dim;
    int Dq = Dn + Dr, Rq = c_.q_lora_rank, bs = cfg_.block_size, Dk = R + Dr;
    for_rows(T, [&](int t) { k_.rmsnorm(&h_[(size_t)t * C], &x_[(size_t)t * C], L.attn_norm.data(), C, c_.rms_eps); });
    if (Rq > 0) {
        MatJob a[2] = {{&L.wq_a, h_.data(), C, qa_.data(), Rq, nullptr},
                       {&L.wkv_a, h_.data(), C, kva_.data(), Dk, nullptr}};
        linear(T, a, 2);
        for_rows(T, [&](int t) {
            k_.rmsnorm(&qa_[(size_t)t * Rq], &qa_[(size_t)t * Rq], L.q_a_norm.data(), Rq, c_.rms_eps);
        });
        MatJob qb = {&L.wq_b, qa_.data(), Rq, q_.data(), H * Dq, nullptr};
        linear(T, &qb, 1);
    } else {
        MatJob a[2] = {{&L.wq, h_.data(), C, q_.data(), H * Dq, nullptr},
                       {&L.wkv_a, h_.data(), C, kva_.data(), Dk, nullptr}};
        linear(T, a, 2);
    }
    uint8_t *cache = kcache(l);
    int64_t row = kv_row();
    for_rows(T, [&](int t) {
        float *kv = &kva_[(size_t)t * Dk];
        k_.rmsnorm(kv, kv, L.kv_a_norm.data(), R, c_.rms_eps);
        rope(kv + R, 1, Dr, t);
        rope(&q_[(size_t)t * H * Dq] + Dn, H, Dq, t);
        const BatchSeq &s = b.seqs[(size_t)tok_seq_[(size_t)t]];
        int pos = s.pos0 + (t - s.tok0);
        k_.kv_store(cache + (int64_t)s.block_table[pos / bs] * kv_block_bytes() + (int64_t)(pos % bs) * row, kv, Dk,
                    cfg_.kv_dtype);
    });
    MlaTask at{&k_,
               &b,
               tok_seq_.data(),
               T,
               q_.data(),
               qabs_.data(),
               lat_.data(),
               att_.data(),
               cache,
               &L.wkv_b,
               H,
               R,
               Dn,
               Dr,
               c_.v_head_dim,
               bs,
               c_.attn_scale,
               scores_ptr_.data(),
               scratch_ptr_.data(),
               kv_block_bytes(),
               row,
               cfg_.kv_dtype,
               kvbuf_ptr_.data()};
    pool_.run(H, mla_absorb_task, &at);
    pool_.run(T * ((H + kMlaHeads - 1) / kMlaHeads), mla_attend_task, &at);
    pool_.run(H, mla_expand_task, &at);
    MatJob o = {&L.wo, att_.data(), H * c_.v_head_dim, h_.data(), C, nullptr};
    linear(T, &o, 1);
    add_residual(L.post_attn_norm, T);
}

/* Checks the batch against the limits; each token's sequence and RoPE tables. */
int32_t CpuBackend::prepare(const Batch &b, int T) {
    int half = c_.rotary_dim / 2;
    if (T > cfg_.max_tokens || b.n_logits > cfg_.max_logits)
        return fail(ENG_STATUS_INVALID_ARG, "batch of %d tokens / %d logits exceeds %d / %d", T, b.n_logits,
                    cfg_.max_tokens, cfg_.max_logits);
    for (size_t s = 0; s < b.seqs.size(); s++) {
        const BatchSeq &q = b.seqs[s];
        if (q.pos0 + q.n_tokens > q.n_blocks * cfg_.block_size || q.pos0 + q.n_tokens > cfg_.n_ctx)
            return fail(ENG_STATUS_INVALID_ARG, "sequence %zu of the batch lacks KV blocks", s);
        if (q.logits_row >= 0 && (q.n_logits < 1 || q.n_logits > q.n_tokens || q.logits_row + q.n_logits > b.n_logits))
            return fail(ENG_STATUS_INVALID_ARG, "sequence %zu of the batch asks for bad logits rows", s);
        if (q.all_logits_row >= 0 &&
            (q.all_logits_row + q.n_tokens > b.n_logits ||
             (q.logits_row >= 0 && q.logits_row + q.n_logits != q.all_logits_row + q.n_tokens)))
            return fail(ENG_STATUS_INVALID_ARG, "sequence %zu of the batch asks for bad prompt logits rows", s);
        for (int i = 0; i < q.n_tokens; i++) {
            int t = q.tok0 + i;
            tok_seq_[(size_t)t] = (int32_t)s;
            float p = (float)(q.pos0 + i);
            const int32_t *mp = b.mpos.empty() ? nullptr : &b.mpos[(size_t)t * 3]; // M-RoPE (GLM-4.1V)
            for (int j = 0; j < half; j++) {
                if (mp)
                    p = (float)mp[j < c_.mrope_section[0] ? 0 : j < c_.mrope_section[0] + c_.mrope_section[1] ? 1 : 2];
                float ang = p * inv_freq_[(size_t)j]; // f32 product, as transformers computes freqs
                // YaRN's attention factor scales cos and sin (1 otherwise).
                rope_cos_[(size_t)t * half + j] = (float)cos((double)ang) * c_.rope_attn_factor;
                rope_sin_[(size_t)t * half + j] = (float)sin((double)ang) * c_.rope_attn_factor;
            }
        }
    }
    return ENG_STATUS_OK;
}

/* Layer l (attention, then MLP or MoE) over the T rows of x_. */
void CpuBackend::layer(int l, const Batch &b, int T) {
    if (c_.is_mla()) mla_block(l, b, T);
    else attention_block(l, b, T);
    if (c_.is_moe_layer(l)) moe_block(l, T);
    else mlp_block(l, T);
}

/* logits rows of every sequence that asks for them: w(rmsnorm(x_, norm)). */
void CpuBackend::head(const Batch &b, const std::vector<float> &norm, const Weight &w, float *logits) {
    int C = c_.n_embd;
    for (const BatchSeq &s : b.seqs) {
        if (s.all_logits_row >= 0) { // every token of the chunk (ENG_SEQ_PROMPT_LOGITS)
            for (int i = 0; i < s.n_tokens; i++)
                k_.rmsnorm(&out_x_[(size_t)(s.all_logits_row + i) * C], &x_[(size_t)(s.tok0 + i) * C], norm.data(), C,
                           c_.rms_eps);
            continue;
        }
        if (s.logits_row < 0) continue;
        for (int i = 0; i < s.n_logits; i++)
            k_.rmsnorm(&out_x_[(size_t)(s.logits_row + i) * C], &x_[(size_t)(s.tok0 + s.n_tokens - s.n_logits + i) * C],
                       norm.data(), C, c_.rms_eps);
    }
    MatJob job = {&w, out_x_.data(), C, logits, c_.n_vocab, nullptr};
    linear(b.n_logits, &job, 1);
}

int32_t CpuBackend::forward(const Batch &b, float *logits) {
    int T = (int)b.tokens.size(), C = c_.n_embd;
    if (T == 0) return ENG_STATUS_OK;
    ENG_TRY(prepare(b, T));
    for (int t = 0; t < T; t++) {
        if (!b.embd_rows.empty() && b.embd_rows[(size_t)t]) // an image token: its vision embedding
            memcpy(&x_[(size_t)t * C], b.embd_rows[(size_t)t], sizeof(float) * (size_t)C);
        else k_.row_to_f32(&x_[(size_t)t * C], m_.embed.data, m_.embed.dtype, b.tokens[(size_t)t], C, m_.embed.scale);
    }
    for (int l = 0; l < c_.n_layer; l++) layer(l, b, T);
    if (b.n_logits > 0) head(b, m_.final_norm, m_.lm_head, logits);
    return ENG_STATUS_OK;
}

/* The MTP layer (model.h MtpLayer): x = eh_proj([enorm(embed(token)); hnorm(h)]), the order of vLLM's
 * deepseek_mtp.py / glm4_moe_mtp.py (DeepSeekMultiTokenPredictorLayer.forward: torch.cat([inputs_embeds,
 * previous_hidden_states])), then its decoder layer as KV layer n_layer, then shared_head. */
int32_t CpuBackend::mtp_forward(const Batch &b, const float *h, float *h_out, float *logits) {
    int T = (int)b.tokens.size(), C = c_.n_embd;
    if (!cfg_.use_mtp) return fail(ENG_STATUS_UNSUPPORTED, "cpu backend: MTP drafting is off");
    if (T == 0) return ENG_STATUS_OK;
    ENG_TRY(prepare(b, T));
    const MtpLayer &mt = m_.mtp[0];
    for_rows(T, [&](int t) {
        float *e = &eh_in_[(size_t)t * 2 * C];
        k_.row_to_f32(e, mt.embed.data, mt.embed.dtype, b.tokens[(size_t)t], C, mt.embed.scale);
        k_.rmsnorm(e, e, mt.enorm.data(), C, c_.rms_eps);
        k_.rmsnorm(e + C, h + (size_t)t * C, mt.hnorm.data(), C, c_.rms_eps);
    });
    MatJob eh = {&mt.eh_proj, eh_in_.data(), 2 * C, x_.data(), C, nullptr};
    linear(T, &eh, 1);
    layer(c_.n_layer, b, T);
    if (h_out) memcpy(h_out, x_.data(), sizeof(float) * (size_t)T * C);
    if (b.n_logits > 0) head(b, mt.head_norm, mt.head, logits);
    return ENG_STATUS_OK;
}

} // namespace

int32_t cpu_backend_create(const Model &model, const BackendConfig &cfg, const Kernels &k,
                           std::unique_ptr<Backend> *out) {
    std::unique_ptr<CpuBackend> b(new CpuBackend(model, k));
    ENG_TRY(b->init(cfg));
    *out = std::move(b);
    return ENG_STATUS_OK;
}

} // namespace maya
