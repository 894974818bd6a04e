/* cuda_backend.cu: the forward pass of GLM-4 / Llama / Qwen3 on one NVIDIA GPU, behind Backend.
 *
 * Same layer recipe and KV layout as cpu_backend.cpp (f32 residual stream and f32 paged KV cache;
 * weights stay in their stored dtype on the device). A step uploads the batch's metadata (tokens,
 * positions, block tables) in one copy, runs every kernel on one stream, takes the argmax of every
 * logits row on the device (greedy sampling: only those ids come back when every row is greedy) and
 * otherwise copies the logits back for the scheduler's host sampler (temperature / top-p / kept logits).
 * Decode-only steps are captured once per batch size as a CUDA graph and replayed (kernel
 * arguments depend only on T; everything data-dependent is read from device memory).
 * The class is in cuda_backend.cuh; weights are placed by cuda_weights.cu; the library's entry
 * points are in cuda_entry.cu.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "cuda_backend.cuh"      // defines: CudaBackend
#include "kernels/argmax.cuh"    // defines: argmax_rows
#include "kernels/attention.cuh" // defines: attention, AttnArgs
#include "kernels/embed.cuh"     // defines: embed_rows
#include "kernels/gemm.cuh"      // defines: gemm_simt, gemm_bf16_tc
#include "kernels/gemv.cuh"      // defines: gemv, gemv_multi, LinearArgs
#include "kernels/rmsnorm.cuh"   // defines: rmsnorm_rows, add_rmsnorm_rows
#include "kernels/rope.cuh"      // defines: rope_write_kv
#include "kernels/swiglu.cuh"    // defines: swiglu

namespace maya {

CudaBackend::~CudaBackend() {
    // Errors are ignored here: a destructor has no one to report to, and a failed device is
    // released with the process.
    for (cudaGraphExec_t g : graphs_)
        if (g) cudaGraphExecDestroy(g);
    for (void *p : allocs_) cudaFree(p);
    if (weights_.base) cudaFree(weights_.base);
    if (meta_h_) cudaFreeHost(meta_h_);
    if (argmax_h_) cudaFreeHost(argmax_h_);
    if (stream_) cudaStreamDestroy(stream_);
}

int32_t CudaBackend::alloc_activations() {
    size_t T = (size_t)cfg_.max_tokens, C = (size_t)c_.n_embd, qd = (size_t)c_.n_head * c_.head_dim,
           kvd = (size_t)c_.n_head_kv * c_.head_dim, I = (size_t)c_.n_ff, L = (size_t)cfg_.max_logits;
    size_t kmax = C > I ? C : I;
    if (qd > kmax) kmax = qd;
    CUDA_TRY(dalloc(&x_, T * C * 4));
    CUDA_TRY(dalloc(&h_, T * C * 4));
    CUDA_TRY(dalloc(&q_, T * qd * 4));
    CUDA_TRY(dalloc(&k_, T * kvd * 4));
    CUDA_TRY(dalloc(&v_, T * kvd * 4));
    CUDA_TRY(dalloc(&att_, T * qd * 4));
    CUDA_TRY(dalloc(&ff_, T * 2 * I * 4));
    CUDA_TRY(dalloc(&ff2_, T * I * 4));
    CUDA_TRY(dalloc(&xb_, 2 * T * kmax * 2)); // hi and lo bf16 terms of x
    CUDA_TRY(dalloc(&out_x_, L * C * 4));
    CUDA_TRY(dalloc(&logits_, L * (size_t)c_.n_vocab * 4));
    // Split attention is used for decode-only steps (T <= max_logits).
    CUDA_TRY(dalloc(&o_part_, (size_t)max_split_ * L * qd * 4));
    CUDA_TRY(dalloc(&ml_part_, (size_t)max_split_ * L * c_.n_head * 2 * 4));
    // Block tables: every sequence of a batch may span the whole context (+1 block of slack).
    bt_cap_ = (int64_t)cfg_.max_logits * ((cfg_.n_ctx + cfg_.block_size - 1) / cfg_.block_size + 1);
    meta_cap_ = off_bt() + bt_cap_;
    CUDA_TRY(dalloc(&meta_d_, (size_t)meta_cap_ * 4));
    CUDA_CHECK(cudaMallocHost((void **)&meta_h_, (size_t)meta_cap_ * 4));
    CUDA_TRY(dalloc(&argmax_d_, L * 4));
    CUDA_CHECK(cudaMallocHost((void **)&argmax_h_, L * 4));
    int half = c_.rotary_dim / 2;
    std::vector<float> inv((size_t)half);
    for (int i = 0; i < half; i++) { // the CPU backend's formula, including llama3 scaling
        float f = 1.0f / powf(c_.rope_theta, (float)(2 * i) / (float)c_.rotary_dim);
        if (c_.rope_factor > 0) {
            float low_wl = (float)c_.rope_orig_ctx / c_.rope_low_freq;
            float high_wl = (float)c_.rope_orig_ctx / c_.rope_high_freq;
            float wl = 2.0f * (float)M_PI / f;
            if (wl > low_wl) f = f / c_.rope_factor;
            else if (wl >= high_wl) {
                float smooth =
                    ((float)c_.rope_orig_ctx / wl - c_.rope_low_freq) / (c_.rope_high_freq - c_.rope_low_freq);
                f = (1 - smooth) * f / c_.rope_factor + smooth * f;
            }
        }
        if (!c_.rope_freq_divisors.empty()) f = f / c_.rope_freq_divisors[(size_t)i]; // GGUF rope_freqs.weight
        inv[(size_t)i] = f;
    }
    CUDA_TRY(dalloc(&inv_freq_, (size_t)(half > 0 ? half : 1) * 4));
    if (half > 0) CUDA_CHECK(cudaMemcpy(inv_freq_, inv.data(), (size_t)half * 4, cudaMemcpyHostToDevice));
    return ENG_STATUS_OK;
}

/* The KV cache takes what is left of device memory after weights and activations (less a
 * reserve for the CUDA context, graphs and fragmentation), capped by kv_cap_bytes and by the
 * engine's wanted block count. */
int32_t CudaBackend::alloc_kv(BackendConfig *cfg, const CudaOptions &opt) {
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    size_t reserve = (size_t)(512ull << 20) > total_b / 50 ? (size_t)(512ull << 20) : total_b / 50;
    size_t avail = free_b > reserve ? free_b - reserve : 0;
    if (opt.kv_cap_bytes > 0 && (size_t)opt.kv_cap_bytes < avail) avail = (size_t)opt.kv_cap_bytes;
    size_t block_bytes = 2ull * c_.n_layer * c_.n_head_kv * cfg->block_size * c_.head_dim * sizeof(float);
    int64_t fit = (int64_t)(avail / block_bytes);
    if (fit < 1)
        return cuda_fail(
            ENG_STATUS_OUT_OF_MEMORY,
            "no room for the KV cache: %.2f GiB free after the weights (%.2f GiB), one block needs %zu bytes",
            free_b / kGiB, weights_.cap / kGiB, block_bytes);
    if (cfg->n_blocks > fit) cfg->n_blocks = (int32_t)fit;
    cfg_.n_blocks = cfg->n_blocks;
    CUDA_TRY(dalloc(&kv_, (size_t)cfg->n_blocks * block_bytes));
    return ENG_STATUS_OK;
}

int CudaBackend::n_split_for(int T, bool is_decode) const {
    if (!is_decode) return 1;
    // Enough blocks for two waves over the SMs; the kernel merges pieces shorter than a tile.
    int blocks = T * c_.n_head_kv, want = (2 * sm_count_ + blocks - 1) / blocks;
    return want < 1 ? 1 : (want > max_split_ ? max_split_ : want);
}

int32_t CudaBackend::init(BackendConfig *cfg, const CudaOptions &opt) {
    cfg_ = *cfg;
    if (cfg->max_tokens <= 0 || cfg->max_logits <= 0 || cfg->n_blocks <= 0 || cfg->block_size <= 0 || cfg->n_ctx <= 0)
        return cuda_fail(ENG_STATUS_INVALID_ARG, "cuda backend: bad limits");
    if (c_.n_head % c_.n_head_kv != 0) return cuda_fail(ENG_STATUS_UNSUPPORTED, "n_head %% n_head_kv != 0");
    if (cfg->kv_dtype != ENG_KV_DTYPE_F32)
        return cuda_fail(ENG_STATUS_UNSUPPORTED,
                         "cuda backend: the KV cache is f32 only (KV dtype code %d asked; MAYA_KV_DTYPE=f32, or the "
                         "cpu backend)",
                         cfg->kv_dtype);
    device_ = opt.device;
    CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    sm_count_ = prop.multiProcessorCount;
    max_split_ = 64; // batch 1 with 2 kv heads: 128 blocks, about one per SM of an H100/H200
    tc_min_tokens_ = opt.tc_min_tokens;
    use_graphs_ = opt.use_graphs != 0;
    CUDA_TRY(check_supported());
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_TRY(attention_prepare(c_.n_head, c_.n_head_kv, c_.head_dim, prop.sharedMemPerBlockOptin));
    CUDA_TRY(upload_weights());
    CUDA_TRY(alloc_activations());
    CUDA_TRY(alloc_kv(cfg, opt));
    graphs_.assign((size_t)cfg_.max_logits + 1, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    return ENG_STATUS_OK;
}

int32_t CudaBackend::linear(int T, const DWeight &w, const float *x, int ldx, float *y, int ldy, const float *bias) {
    LinearArgs a{w.data, w.dtype, w.rows, w.cols, x, ldx, y, ldy, bias, T};
    if (T <= kGemvMaxTokens) return gemv(a, stream_);
    if (T >= tc_min_tokens_ && gemm_bf16_tc_fits(a)) return gemm_bf16_tc(a, xb_, stream_);
    return gemm_simt(a, stream_);
}

/* Several matrices over the same x: one gemv launch when decoding, else one matmul each. */
int32_t CudaBackend::linear_shared_x(int T, const float *x, int ldx, const Out *outs, int n) {
    if (T <= kGemvMaxTokens && n <= kGemvMaxJobs) {
        LinearArgs jobs[kGemvMaxJobs];
        bool same = true;
        for (int j = 0; j < n; j++) {
            const DWeight &w = *outs[j].w;
            jobs[j] = LinearArgs{w.data, w.dtype, w.rows, w.cols, x, ldx, outs[j].y, outs[j].ldy, outs[j].bias, T};
            same = same && w.dtype == outs[0].w->dtype && w.cols == outs[0].w->cols;
        }
        if (same) return gemv_multi(jobs, n, stream_);
    }
    for (int j = 0; j < n; j++) CUDA_TRY(linear(T, *outs[j].w, x, ldx, outs[j].y, outs[j].ldy, outs[j].bias));
    return ENG_STATUS_OK;
}

int32_t CudaBackend::layer(int l, int T, int n_split) {
    const DLayer &L = layers_[(size_t)l];
    int C = c_.n_embd, H = c_.n_head, Hkv = c_.n_head_kv, D = c_.head_dim, I = c_.n_ff;
    int qd = H * D, kvd = Hkv * D;
    float eps = c_.rms_eps;
    const int32_t *meta = meta_d_;
    // Attention block; h = input_layernorm(x) was left by the previous layer (or run()).
    const Out qkv[3] = {{&L.wq, q_, qd, L.bq}, {&L.wk, k_, kvd, L.bk}, {&L.wv, v_, kvd, L.bv}};
    CUDA_TRY(linear_shared_x(T, h_, C, qkv, 3));
    if (c_.has_qk_norm) {
        CUDA_TRY(rmsnorm_rows(q_, D, q_, D, nullptr, L.q_norm, T * H, D, eps, stream_));
        CUDA_TRY(rmsnorm_rows(k_, D, k_, D, nullptr, L.k_norm, T * Hkv, D, eps, stream_));
    }
    RopeArgs ra{q_,        k_, v_, kcache(l), vcache(l), meta + off_pos(), meta + off_bt_off(), meta + off_bt(),
                inv_freq_, T,  H,  Hkv,       D,         c_.rotary_dim,    cfg_.block_size,     c_.is_rope_interleaved};
    CUDA_TRY(rope_write_kv(ra, stream_));
    AttnArgs aa{q_,
                att_,
                kcache(l),
                vcache(l),
                meta + off_pos(),
                meta + off_bt_off(),
                meta + off_bt(),
                o_part_,
                ml_part_,
                T,
                H,
                Hkv,
                D,
                cfg_.block_size,
                n_split,
                1.0f / sqrtf((float)D)};
    CUDA_TRY(attention(aa, stream_));
    CUDA_TRY(linear(T, L.wo, att_, qd, h_, C, L.bo));
    // x += [post_self_attn_layernorm](h); h = post_attention_layernorm(x): the MLP's input.
    const float *post = c_.has_sandwich_norms ? L.post_attn_norm : nullptr;
    CUDA_TRY(add_rmsnorm_rows(x_, h_, post, L.mlp_norm, T, C, eps, stream_));
    // MLP block.
    if (L.w_gate_up.data) {
        CUDA_TRY(linear(T, L.w_gate_up, h_, C, ff_, 2 * I, nullptr));
    } else {
        const Out gu[2] = {{&L.w_gate, ff_, 2 * I, L.b_gate}, {&L.w_up, ff_ + I, 2 * I, L.b_up}};
        CUDA_TRY(linear_shared_x(T, h_, C, gu, 2));
    }
    CUDA_TRY(swiglu(ff2_, ff_, T, I, stream_));
    CUDA_TRY(linear(T, L.w_down, ff2_, I, h_, C, L.b_down));
    // x += [post_mlp_layernorm](h); h = the next layer's input_layernorm(x) (the last layer leaves h).
    post = c_.has_sandwich_norms ? L.post_mlp_norm : nullptr;
    const float *next = l + 1 < c_.n_layer ? layers_[(size_t)l + 1].attn_norm : nullptr;
    CUDA_TRY(add_rmsnorm_rows(x_, h_, post, next, T, C, eps, stream_));
    return ENG_STATUS_OK;
}

/* Enqueues the whole forward pass for T tokens whose metadata is already on the device. */
int32_t CudaBackend::run(int T, int n_logits, int n_split) {
    int C = c_.n_embd;
    CUDA_TRY(embed_rows(x_, embed_.data, embed_.dtype, meta_d_ + off_tokens(), T, C, stream_));
    CUDA_TRY(rmsnorm_rows(h_, C, x_, C, nullptr, layers_[0].attn_norm, T, C, c_.rms_eps, stream_));
    for (int l = 0; l < c_.n_layer; l++) CUDA_TRY(layer(l, T, n_split));
    if (n_logits == 0) return ENG_STATUS_OK;
    CUDA_TRY(rmsnorm_rows(out_x_, C, x_, C, meta_d_ + off_rows(), final_norm_, n_logits, C, c_.rms_eps, stream_));
    return linear(n_logits, lm_head_, out_x_, C, logits_, c_.n_vocab, nullptr);
}

/* Decode step of T sequences: replays (capturing on first use) the graph of batch size T. */
int32_t CudaBackend::run_decode_graph(int T) {
    cudaGraphExec_t &exec = graphs_[(size_t)T];
    if (!exec) {
        cudaGraph_t graph = nullptr;
        CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
        int32_t st = run(T, T, n_split_for(T, true));
        cudaError_t e = cudaStreamEndCapture(stream_, &graph);
        if (st < 0) {
            if (graph) cudaGraphDestroy(graph);
            return st;
        }
        CUDA_CHECK(e);
        e = cudaGraphInstantiate(&exec, graph, 0);
        cudaGraphDestroy(graph);
        if (e != cudaSuccess) {
            exec = nullptr;
            CUDA_CHECK(e);
        }
    }
    CUDA_CHECK(cudaGraphLaunch(exec, stream_));
    return ENG_STATUS_OK;
}

int32_t CudaBackend::forward(const Batch &b, float *logits) {
    int T = (int)b.tokens.size();
    if (T == 0) return ENG_STATUS_OK;
    if (T > cfg_.max_tokens || b.n_logits > cfg_.max_logits)
        return cuda_fail(ENG_STATUS_INVALID_ARG, "batch of %d tokens / %d logits exceeds %d / %d", T, b.n_logits,
                         cfg_.max_tokens, cfg_.max_logits);
    for (const BatchSeq &q : b.seqs)
        if (q.all_logits_row >= 0)
            return cuda_fail(ENG_STATUS_UNSUPPORTED,
                             "cuda backend: prompt logits (ENG_SEQ_PROMPT_LOGITS) run on the cpu");
    CUDA_CHECK(cudaSetDevice(device_)); // eng_step may run on another thread than eng_ctx_create
    int32_t *mh = meta_h_;
    int64_t bt_used = 0;
    bool is_decode = b.n_logits == T;
    for (size_t s = 0; s < b.seqs.size(); s++) {
        const BatchSeq &q = b.seqs[s];
        if (q.pos0 + q.n_tokens > q.n_blocks * cfg_.block_size || q.pos0 + q.n_tokens > cfg_.n_ctx)
            return cuda_fail(ENG_STATUS_INVALID_ARG, "sequence %zu of the batch lacks KV blocks", s);
        if (bt_used + q.n_blocks > bt_cap_)
            return cuda_fail(ENG_STATUS_INVALID_ARG, "block tables exceed %lld entries", (long long)bt_cap_);
        is_decode = is_decode && q.n_tokens == 1;
        memcpy(mh + off_bt() + bt_used, q.block_table, (size_t)q.n_blocks * sizeof(int32_t));
        for (int i = 0; i < q.n_tokens; i++) {
            int t = q.tok0 + i;
            mh[off_tokens() + t] = b.tokens[(size_t)t];
            mh[off_pos() + t] = q.pos0 + i;
            mh[off_bt_off() + t] = (int32_t)bt_used;
        }
        if (q.logits_row >= 0 && (q.n_logits < 1 || q.n_logits > q.n_tokens || q.logits_row + q.n_logits > b.n_logits))
            return cuda_fail(ENG_STATUS_INVALID_ARG, "sequence %zu of the batch asks for bad logits rows", s);
        for (int i = 0; q.logits_row >= 0 && i < q.n_logits; i++)
            mh[off_rows() + q.logits_row + i] = q.tok0 + q.n_tokens - q.n_logits + i;
        bt_used += q.n_blocks;
    }
    CUDA_CHECK(
        cudaMemcpyAsync(meta_d_, mh, (size_t)(off_bt() + bt_used) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
    if (is_decode && use_graphs_) CUDA_TRY(run_decode_graph(T));
    else CUDA_TRY(run(T, b.n_logits, n_split_for(T, is_decode)));
    if (b.n_logits > 0) {
        // Greedy rows are sampled here; the logits come back only when some row needs them.
        CUDA_TRY(maya::argmax_rows(argmax_d_, logits_, b.n_logits, c_.n_vocab, stream_));
        CUDA_CHECK(cudaMemcpyAsync(argmax_h_, argmax_d_, (size_t)b.n_logits * sizeof(int32_t), cudaMemcpyDeviceToHost,
                                   stream_));
        bool is_all_greedy = (int)b.row_is_greedy.size() >= b.n_logits;
        for (int r = 0; is_all_greedy && r < b.n_logits; r++) is_all_greedy = b.row_is_greedy[(size_t)r] != 0;
        if (!is_all_greedy)
            CUDA_CHECK(cudaMemcpyAsync(logits, logits_, (size_t)b.n_logits * c_.n_vocab * sizeof(float),
                                       cudaMemcpyDeviceToHost, stream_));
    }
    // The pinned metadata is rewritten by the next step, so the step ends here (and faults surface).
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    return ENG_STATUS_OK;
}

} // namespace maya
