/* cuda_weights.cu: the model's weights on the device (one arena, stored dtypes kept; a tied
 * lm_head shares the embedding) and the check that the model is one this backend runs. */
#include <vector>

#include "cuda_backend.cuh" // defines: CudaBackend, Arena, DWeight, elem_size, kGiB

namespace maya {

/* Device bytes of every weight upload_weights() makes (each rounded as the arena rounds it). */
size_t CudaBackend::weight_bytes() const {
    size_t n = 0;
    auto w = [&](const Weight &x) { n += x.data ? Arena::round((size_t)x.rows * x.cols * elem_size(x.dtype)) : 0; };
    auto v = [&](const std::vector<float> &x) { n += x.empty() ? 0 : Arena::round(x.size() * sizeof(float)); };
    w(m_.embed);
    if (m_.lm_head.data != m_.embed.data) w(m_.lm_head);
    v(m_.final_norm);
    for (const LayerWeights &L : m_.layers) {
        for (const Weight *x : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate_up, &L.w_gate, &L.w_up, &L.w_down}) w(*x);
        for (const std::vector<float> *x : {&L.attn_norm, &L.post_attn_norm, &L.mlp_norm, &L.post_mlp_norm, &L.bq,
                                            &L.bk, &L.bv, &L.bo, &L.q_norm, &L.k_norm, &L.b_gate, &L.b_up, &L.b_down})
            v(*x);
    }
    return n;
}

const void *CudaBackend::upload(const void *host, size_t n) {
    void *d = weights_.take(n);
    if (d && cudaMemcpy(d, host, n, cudaMemcpyHostToDevice) != cudaSuccess) return nullptr;
    return d;
}

const float *CudaBackend::upload_vec(const std::vector<float> &v) {
    return v.empty() ? nullptr : (const float *)upload(v.data(), v.size() * sizeof(float));
}

DWeight CudaBackend::upload_w(const Weight &w) {
    DWeight d;
    if (!w.data) return d;
    d.dtype = w.dtype;
    d.rows = w.rows;
    d.cols = w.cols;
    d.data = upload(w.data, (size_t)w.rows * w.cols * elem_size(w.dtype));
    return d;
}

int32_t CudaBackend::upload_weights() {
    size_t need = weight_bytes(), free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (need > free_b)
        return cuda_fail(ENG_STATUS_OUT_OF_MEMORY,
                         "the model's weights need %.2f GiB on the GPU but device %d has %.2f GiB free (of %.2f GiB)",
                         need / kGiB, device_, free_b / kGiB, total_b / kGiB);
    cudaError_t e = cudaMalloc((void **)&weights_.base, need);
    if (e == cudaErrorMemoryAllocation)
        return cuda_fail(ENG_STATUS_OUT_OF_MEMORY, "cannot allocate %.2f GiB for the model's weights (%.2f GiB free)",
                         need / kGiB, free_b / kGiB);
    CUDA_CHECK(e);
    weights_.cap = need;
    embed_ = upload_w(m_.embed);
    lm_head_ = m_.lm_head.data == m_.embed.data ? embed_ : upload_w(m_.lm_head);
    final_norm_ = upload_vec(m_.final_norm);
    bool ok = embed_.data && lm_head_.data && final_norm_;
    layers_.resize(m_.layers.size());
    for (size_t l = 0; l < m_.layers.size(); l++) {
        const LayerWeights &L = m_.layers[l];
        DLayer &d = layers_[l];
        d.attn_norm = upload_vec(L.attn_norm);
        d.post_attn_norm = upload_vec(L.post_attn_norm);
        d.mlp_norm = upload_vec(L.mlp_norm);
        d.post_mlp_norm = upload_vec(L.post_mlp_norm);
        d.wq = upload_w(L.wq);
        d.wk = upload_w(L.wk);
        d.wv = upload_w(L.wv);
        d.wo = upload_w(L.wo);
        d.w_gate_up = upload_w(L.w_gate_up);
        d.w_gate = upload_w(L.w_gate);
        d.w_up = upload_w(L.w_up);
        d.w_down = upload_w(L.w_down);
        d.bq = upload_vec(L.bq);
        d.bk = upload_vec(L.bk);
        d.bv = upload_vec(L.bv);
        d.bo = upload_vec(L.bo);
        d.b_gate = upload_vec(L.b_gate);
        d.b_up = upload_vec(L.b_up);
        d.b_down = upload_vec(L.b_down);
        d.q_norm = upload_vec(L.q_norm);
        d.k_norm = upload_vec(L.k_norm);
        ok = ok && d.attn_norm && d.mlp_norm && d.wq.data && d.wk.data && d.wv.data && d.wo.data && d.w_down.data &&
             (d.w_gate_up.data || (d.w_gate.data && d.w_up.data));
    }
    if (!ok) {
        CUDA_CHECK(cudaGetLastError());
        return cuda_fail(ENG_STATUS_BACKEND, "uploading the weights failed (%zu of %zu bytes placed)", weights_.used,
                         need);
    }
    return ENG_STATUS_OK;
}

/* The dense layer recipe with f32/f16/bf16 matrices is all this backend runs; anything else (MoE
 * or MLA layers, other dtypes) is UNSUPPORTED, which the engine's auto mode answers with the CPU. */
int32_t CudaBackend::check_supported() const {
    auto ok = [](const Weight &w) { return w.data && (w.dtype == DT_F32 || w.dtype == DT_F16 || w.dtype == DT_BF16); };
    if (!ok(m_.embed) || !ok(m_.lm_head))
        return cuda_fail(ENG_STATUS_UNSUPPORTED, "cuda backend: embedding dtype not supported");
    for (size_t l = 0; l < m_.layers.size(); l++) {
        const LayerWeights &L = m_.layers[l];
        bool dense = ok(L.wq) && ok(L.wk) && ok(L.wv) && ok(L.wo) && ok(L.w_down) &&
                     (ok(L.w_gate_up) || (ok(L.w_gate) && ok(L.w_up))) && !L.attn_norm.empty() && !L.mlp_norm.empty();
        if (!dense)
            return cuda_fail(ENG_STATUS_UNSUPPORTED,
                             "cuda backend: layer %zu is not a dense attention + MLP layer in f32/f16/bf16 (only those "
                             "run on the GPU so far)",
                             l);
    }
    return ENG_STATUS_OK;
}

} // namespace maya
