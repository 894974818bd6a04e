/* cpu_backend.cpp: the forward pass of GLM-4 / Llama / Qwen3 on the CPU over a paged f32 KV cache.
 *
 * Per layer (Hugging Face transformers' modeling_{llama,qwen3,glm4}.py):
 *   h = rmsnorm(x) -> q,k,v (+bias) -> [Qwen3: per-head rmsnorm of q,k] -> RoPE -> write k,v to slots
 *   -> causal attention over the sequence's blocks -> o_proj -> [GLM-4: post_self_attn rmsnorm] -> x += .
 *   h = rmsnorm(x) -> gate, up -> silu(gate)*up -> down -> [GLM-4: post_mlp rmsnorm] -> x += .
 * Matmuls and attention are split across the thread pool; everything else is cheap and runs on the
 * calling thread. All buffers are allocated at creation; forward() does not allocate.
 */
#include <math.h>
#include <string.h>
#include <sys/mman.h>

#include "backend.h"     // defines: Backend, Batch, BackendConfig
#include "common.h"      // defines: fail
#include "kernels.h"     // defines: Kernels, kMatmulRows
#include "thread_pool.h" // defines: ThreadPool

namespace maya {

namespace {

struct MatJob {
    const Weight *w;
    const float *x; // (T, ldx)
    int ldx;
    float *y;       // (T, ldy)
    int ldy;
    const float *bias; // (w->rows) or null
};

struct MatmulTask {
    const Kernels *k;
    int T;
    bool is_streaming;
    int n_jobs;
    MatJob jobs[3];
    int unit_end[3]; // cumulative work units per job
    float *const *scratch;
};

static void matmul_task(void *arg, int task, int worker) {
    const MatmulTask &m = *(const MatmulTask *)arg;
    int j = 0, first = 0;
    while (task >= m.unit_end[j]) first = m.unit_end[j++];
    const MatJob &job = m.jobs[j];
    int r0 = (task - first) * kMatmulRows;
    int r1 = r0 + kMatmulRows < job.w->rows ? r0 + kMatmulRows : job.w->rows;
    m.k->matmul(job.x, job.ldx, m.T, job.w->data, job.w->dtype, job.w->cols, r0, r1, job.y, job.ldy, job.bias,
                m.scratch[worker], m.is_streaming);
}

struct AttnTask {
    const Kernels *k;
    const Batch *batch;
    const int32_t *tok_seq; // (T) index into batch->seqs
    const float *q;         // (T, H*D)
    float *out;             // (T, H*D)
    const float *kcache, *vcache; // this layer: (n_blocks, Hkv, bs, D)
    int H, Hkv, D, bs;
    float scale;
    float *const *scores; // per worker: (H/Hkv, n_ctx)
};

/* One (token, kv head) pair: the query heads of its group attend positions [0, pos], one KV
 * block (bs consecutive positions, contiguous per kv head) at a time. */
static void attn_task(void *arg, int task, int worker) {
    const AttnTask &a = *(const AttnTask *)arg;
    int t = task / a.Hkv, g = task % a.Hkv, group = a.H / a.Hkv, D = a.D, bs = a.bs;
    const BatchSeq &s = a.batch->seqs[(size_t)a.tok_seq[t]];
    int n = s.pos0 + (t - s.tok0) + 1; // positions attended
    float *sc = a.scores[worker];
    const float *q = a.q + (int64_t)t * a.H * D + (int64_t)g * group * D;
    int64_t head_stride = (int64_t)bs * D, block_stride = (int64_t)a.Hkv * bs * D;
    for (int j0 = 0; j0 < n; j0 += bs) {
        const float *kr = a.kcache + s.block_table[j0 / bs] * block_stride + g * head_stride;
        a.k->attn_scores(sc, n, j0, q, group, kr, n - j0 < bs ? n - j0 : bs, D, a.scale);
    }
    float *o = a.out + (int64_t)t * a.H * D + (int64_t)g * group * D;
    for (int h = 0; h < group; h++) {
        float *row = sc + (int64_t)h * n, mx = row[0], sum = 0;
        for (int j = 1; j < n; j++) mx = row[j] > mx ? row[j] : mx;
        for (int j = 0; j < n; j++) { row[j] = expf(row[j] - mx); sum += row[j]; }
        a.k->scale(row, 1.0f / sum, n);
        memset(o + (int64_t)h * D, 0, (size_t)D * sizeof(float));
    }
    for (int j0 = 0; j0 < n; j0 += bs) {
        const float *vr = a.vcache + s.block_table[j0 / bs] * block_stride + g * head_stride;
        a.k->attn_accum(o, sc, n, j0, group, vr, n - j0 < bs ? n - j0 : bs, D);
    }
}

class CpuBackend final : public Backend {
  public:
    CpuBackend(const Model &m, const Kernels &k) : m_(m), c_(m.cfg), k_(k) {}
    ~CpuBackend() override {
        if (kv_) munmap(kv_, kv_bytes_);
    }
    int32_t init(const BackendConfig &cfg);
    int32_t forward(const Batch &batch, float *logits) override;
    int32_t kind() const override { return 1; }
    int32_t simd() const override { return k_.simd; }

  private:
    void linear(int T, const MatJob *jobs, int n_jobs);
    void rope(float *v, int n_heads, int t);
    void qkv(int l, const Batch &b, int T);
    void attention_block(int l, const Batch &b, int T);
    void mlp_block(int l, int T);
    int64_t kv_layer_floats() const { return (int64_t)cfg_.n_blocks * c_.n_head_kv * cfg_.block_size * c_.head_dim; }
    float *kcache(int l) { return kv_ + (int64_t)l * 2 * kv_layer_floats(); } // (n_blocks, Hkv, bs, D)
    float *vcache(int l) { return kcache(l) + kv_layer_floats(); }

    const Model &m_;
    const ModelConfig &c_;
    const Kernels &k_;
    BackendConfig cfg_;
    ThreadPool pool_;
    bool is_streaming_ = false; // weights larger than the last-level cache: read from DRAM every step
    float *kv_ = nullptr; // (L, 2, n_blocks, Hkv, bs, D)
    size_t kv_bytes_ = 0;
    std::vector<float> x_, h_, q_, kk_, vv_, att_, ff_, ff2_; // activations, T rows each
    std::vector<float> rope_cos_, rope_sin_, inv_freq_;       // (T, rotary_dim/2), (rotary_dim/2)
    std::vector<int32_t> tok_seq_;                            // (T)
    std::vector<float> out_x_;                                // (max_logits, C)
    std::vector<std::vector<float>> scratch_, scores_;        // per worker
    std::vector<float *> scratch_ptr_, scores_ptr_;
};

int32_t CpuBackend::init(const BackendConfig &cfg) {
    cfg_ = cfg;
    if (cfg.max_tokens <= 0 || cfg.max_logits <= 0 || cfg.n_blocks <= 0 || cfg.block_size <= 0 || cfg.n_ctx <= 0)
        return fail(ENG_STATUS_INVALID_ARG, "cpu backend: bad limits");
    ENG_TRY(pool_.start(cfg.n_threads));
    // 16 MiB: half the 32 MiB L3 of the CPU box; above it the matrices of a step cannot stay cached.
    is_streaming_ = m_.weight_bytes > (16 << 20);
    int64_t per = (int64_t)cfg.n_blocks * c_.n_head_kv * cfg.block_size * c_.head_dim;
    kv_bytes_ = (size_t)(2 * (int64_t)c_.n_layer * per) * sizeof(float);
    void *p = mmap(nullptr, kv_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        kv_bytes_ = 0;
        return fail(ENG_STATUS_OUT_OF_MEMORY, "cannot reserve %zu bytes of KV cache", (size_t)(2 * (int64_t)c_.n_layer * per) * sizeof(float));
    }
    kv_ = (float *)p;
    size_t T = (size_t)cfg.max_tokens, C = (size_t)c_.n_embd, qd = (size_t)c_.n_head * c_.head_dim,
           kvd = (size_t)c_.n_head_kv * c_.head_dim, I = (size_t)c_.n_ff;
    x_.resize(T * C);
    h_.resize(T * C);
    q_.resize(T * qd);
    kk_.resize(T * kvd);
    vv_.resize(T * kvd);
    att_.resize(T * qd);
    ff_.resize(T * 2 * I);
    ff2_.resize(T * I);
    int half = c_.rotary_dim / 2;
    rope_cos_.resize(T * (size_t)half);
    rope_sin_.resize(T * (size_t)half);
    tok_seq_.resize(T);
    out_x_.resize((size_t)cfg.max_logits * C);
    inv_freq_.resize((size_t)half);
    for (int i = 0; i < half; i++) {
        // transformers: 1 / theta^(arange(0, dim, 2) / dim), in float32.
        float f = 1.0f / powf(c_.rope_theta, (float)(2 * i) / (float)c_.rotary_dim);
        if (c_.rope_factor > 0) { // transformers _compute_llama3_parameters
            float low_wl = (float)c_.rope_orig_ctx / c_.rope_low_freq;
            float high_wl = (float)c_.rope_orig_ctx / c_.rope_high_freq;
            float wl = 2.0f * (float)M_PI / f;
            if (wl > low_wl) f = f / c_.rope_factor;
            else if (wl >= high_wl) {
                float smooth = ((float)c_.rope_orig_ctx / wl - c_.rope_low_freq) / (c_.rope_high_freq - c_.rope_low_freq);
                f = (1 - smooth) * f / c_.rope_factor + smooth * f;
            }
        }
        inv_freq_[(size_t)i] = f;
    }
    int64_t kmax = c_.n_embd;
    if (c_.n_ff > kmax) kmax = c_.n_ff;
    if ((int64_t)qd > kmax) kmax = (int64_t)qd;
    int nw = pool_.n_threads();
    scratch_.resize((size_t)nw);
    scores_.resize((size_t)nw);
    for (int w = 0; w < nw; w++) {
        scratch_[(size_t)w].resize((size_t)(kMatmulRows * kmax));
        scores_[(size_t)w].resize((size_t)(c_.n_head / c_.n_head_kv) * (size_t)cfg.n_ctx);
        scratch_ptr_.push_back(scratch_[(size_t)w].data());
        scores_ptr_.push_back(scores_[(size_t)w].data());
    }
    return ENG_STATUS_OK;
}

void CpuBackend::linear(int T, const MatJob *jobs, int n_jobs) {
    MatmulTask m;
    m.k = &k_;
    m.T = T;
    m.is_streaming = is_streaming_;
    m.n_jobs = n_jobs;
    m.scratch = scratch_ptr_.data();
    int total = 0;
    for (int j = 0; j < n_jobs; j++) {
        m.jobs[j] = jobs[j];
        total += (jobs[j].w->rows + kMatmulRows - 1) / kMatmulRows;
        m.unit_end[j] = total;
    }
    pool_.run(total, matmul_task, &m);
}

/* Rotates the leading rotary_dim dims of each of n_heads heads of token t's vector v. */
void CpuBackend::rope(float *v, int n_heads, int t) {
    int half = c_.rotary_dim / 2, D = c_.head_dim;
    const float *cs = &rope_cos_[(size_t)t * half], *sn = &rope_sin_[(size_t)t * half];
    for (int h = 0; h < n_heads; h++) {
        float *x = v + (int64_t)h * D;
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
    const LayerWeights &L = m_.layers[(size_t)l];
    int C = c_.n_embd, H = c_.n_head, Hkv = c_.n_head_kv, D = c_.head_dim, bs = cfg_.block_size;
    int qd = H * D, kvd = Hkv * D;
    MatJob jobs[3] = {{&L.wq, h_.data(), C, q_.data(), qd, bias_of(L.bq)},
                      {&L.wk, h_.data(), C, kk_.data(), kvd, bias_of(L.bk)},
                      {&L.wv, h_.data(), C, vv_.data(), kvd, bias_of(L.bv)}};
    linear(T, jobs, 3);
    float *kc = kcache(l), *vc = vcache(l);
    for (int t = 0; t < T; t++) {
        float *q = &q_[(size_t)t * qd], *k = &kk_[(size_t)t * kvd], *v = &vv_[(size_t)t * kvd];
        if (c_.has_qk_norm) {
            for (int h = 0; h < H; h++) k_.rmsnorm(q + h * D, q + h * D, L.q_norm.data(), D, c_.rms_eps);
            for (int h = 0; h < Hkv; h++) k_.rmsnorm(k + h * D, k + h * D, L.k_norm.data(), D, c_.rms_eps);
        }
        rope(q, H, t);
        rope(k, Hkv, t);
        const BatchSeq &s = b.seqs[(size_t)tok_seq_[(size_t)t]];
        int pos = s.pos0 + (t - s.tok0);
        int64_t blk = s.block_table[pos / bs], off = pos % bs;
        for (int g = 0; g < Hkv; g++) {
            memcpy(kc + ((blk * Hkv + g) * bs + off) * D, k + g * D, (size_t)D * sizeof(float));
            memcpy(vc + ((blk * Hkv + g) * bs + off) * D, v + g * D, (size_t)D * sizeof(float));
        }
    }
}

/* x += [post_attn_norm](o_proj(attention(input_layernorm(x)))). */
void CpuBackend::attention_block(int l, const Batch &b, int T) {
    const LayerWeights &L = m_.layers[(size_t)l];
    int C = c_.n_embd, H = c_.n_head, Hkv = c_.n_head_kv, D = c_.head_dim;
    for (int t = 0; t < T; t++) k_.rmsnorm(&h_[(size_t)t * C], &x_[(size_t)t * C], L.attn_norm.data(), C, c_.rms_eps);
    qkv(l, b, T);
    AttnTask at{&k_, &b, tok_seq_.data(), q_.data(), att_.data(), kcache(l), vcache(l), H, Hkv, D,
                cfg_.block_size, 1.0f / sqrtf((float)D), scores_ptr_.data()};
    pool_.run(T * Hkv, attn_task, &at);
    MatJob o = {&L.wo, att_.data(), H * D, h_.data(), C, bias_of(L.bo)};
    linear(T, &o, 1);
    for (int t = 0; t < T; t++) {
        float *hr = &h_[(size_t)t * C], *xr = &x_[(size_t)t * C];
        if (c_.has_sandwich_norms) k_.rmsnorm(hr, hr, L.post_attn_norm.data(), C, c_.rms_eps);
        for (int i = 0; i < C; i++) xr[i] += hr[i];
    }
}

/* x += [post_mlp_norm](down(silu(gate(h)) * up(h))), h = post_attention_layernorm(x). */
void CpuBackend::mlp_block(int l, int T) {
    const LayerWeights &L = m_.layers[(size_t)l];
    int C = c_.n_embd, I = c_.n_ff;
    for (int t = 0; t < T; t++) k_.rmsnorm(&h_[(size_t)t * C], &x_[(size_t)t * C], L.mlp_norm.data(), C, c_.rms_eps);
    if (L.w_gate_up.data) { // GLM-4: one fused matrix, rows [gate; up]
        MatJob gu = {&L.w_gate_up, h_.data(), C, ff_.data(), 2 * I, nullptr};
        linear(T, &gu, 1);
    } else {
        MatJob gu[2] = {{&L.w_gate, h_.data(), C, ff_.data(), 2 * I, bias_of(L.b_gate)},
                        {&L.w_up, h_.data(), C, ff_.data() + I, 2 * I, bias_of(L.b_up)}};
        linear(T, gu, 2);
    }
    for (int t = 0; t < T; t++)
        k_.silu_mul(&ff2_[(size_t)t * I], &ff_[(size_t)t * 2 * I], &ff_[(size_t)t * 2 * I + I], I);
    MatJob down = {&L.w_down, ff2_.data(), I, h_.data(), C, bias_of(L.b_down)};
    linear(T, &down, 1);
    for (int t = 0; t < T; t++) {
        float *hr = &h_[(size_t)t * C], *xr = &x_[(size_t)t * C];
        if (c_.has_sandwich_norms) k_.rmsnorm(hr, hr, L.post_mlp_norm.data(), C, c_.rms_eps);
        for (int i = 0; i < C; i++) xr[i] += hr[i];
    }
}

int32_t CpuBackend::forward(const Batch &b, float *logits) {
    int T = (int)b.tokens.size(), C = c_.n_embd, half = c_.rotary_dim / 2;
    if (T == 0) return ENG_STATUS_OK;
    if (T > cfg_.max_tokens || b.n_logits > cfg_.max_logits)
        return fail(ENG_STATUS_INVALID_ARG, "batch of %d tokens / %d logits exceeds %d / %d", T, b.n_logits,
                    cfg_.max_tokens, cfg_.max_logits);
    for (size_t s = 0; s < b.seqs.size(); s++) {
        const BatchSeq &q = b.seqs[s];
        if (q.pos0 + q.n_tokens > q.n_blocks * cfg_.block_size || q.pos0 + q.n_tokens > cfg_.n_ctx)
            return fail(ENG_STATUS_INVALID_ARG, "sequence %zu of the batch lacks KV blocks", s);
        for (int i = 0; i < q.n_tokens; i++) {
            int t = q.tok0 + i;
            tok_seq_[(size_t)t] = (int32_t)s;
            float p = (float)(q.pos0 + i);
            for (int j = 0; j < half; j++) {
                float ang = p * inv_freq_[(size_t)j]; // f32 product, as transformers computes freqs
                rope_cos_[(size_t)t * half + j] = (float)cos((double)ang);
                rope_sin_[(size_t)t * half + j] = (float)sin((double)ang);
            }
        }
    }
    for (int t = 0; t < T; t++) k_.row_to_f32(&x_[(size_t)t * C], m_.embed.data, m_.embed.dtype, b.tokens[(size_t)t], C);
    for (int l = 0; l < c_.n_layer; l++) {
        attention_block(l, b, T);
        mlp_block(l, T);
    }
    if (b.n_logits == 0) return ENG_STATUS_OK;
    for (const BatchSeq &s : b.seqs) {
        if (s.logits_row < 0) continue;
        k_.rmsnorm(&out_x_[(size_t)s.logits_row * C], &x_[(size_t)(s.tok0 + s.n_tokens - 1) * C],
                   m_.final_norm.data(), C, c_.rms_eps);
    }
    MatJob head = {&m_.lm_head, out_x_.data(), C, logits, c_.n_vocab, nullptr};
    linear(b.n_logits, &head, 1);
    return ENG_STATUS_OK;
}

} // namespace

int32_t cpu_backend_create(const Model &model, const BackendConfig &cfg, std::unique_ptr<Backend> *out) {
    std::unique_ptr<CpuBackend> b(new CpuBackend(model, kernels_select()));
    ENG_TRY(b->init(cfg));
    *out = std::move(b);
    return ENG_STATUS_OK;
}

} // namespace maya
