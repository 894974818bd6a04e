/* cuda_backend.cuh: the CUDA Backend's class, shared by the files that implement it:
 * cuda_backend.cu (buffers, the layer loop, forward, graphs), cuda_weights.cu (upload and the
 * supported-model check) and cuda_entry.cu (the library's exported entry points).
 */
#ifndef MAYA_CUDA_BACKEND_CUH
#define MAYA_CUDA_BACKEND_CUH

#include <stdint.h>

#include <vector>

#include "cuda_api.h"      // defines: CudaOptions, Backend, BackendConfig, Model
#include "cuda_common.cuh" // defines: CUDA_CHECK, cuda_fail

namespace maya {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

inline size_t elem_size(DType dt) { return dt == DT_F32 ? 4 : 2; }

/* A weight matrix on the device, in its stored dtype. */
struct DWeight {
    const void *data = nullptr;
    DType dtype = DT_F32;
    int32_t rows = 0, cols = 0;
};

struct DLayer {
    const float *attn_norm = nullptr, *post_attn_norm = nullptr, *mlp_norm = nullptr, *post_mlp_norm = nullptr; // (C)
    DWeight wq, wk, wv, wo, w_gate_up, w_gate, w_up, w_down;
    const float *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr; // biases or null
    const float *b_gate = nullptr, *b_up = nullptr, *b_down = nullptr;
    const float *q_norm = nullptr, *k_norm = nullptr; // (D) Qwen3
};

/* Bump allocation out of one cudaMalloc, 256-byte aligned. */
struct Arena {
    char *base = nullptr;
    size_t used = 0, cap = 0;
    void *take(size_t n) {
        size_t at = (used + 255) & ~(size_t)255;
        if (at + n > cap) return nullptr;
        used = at + n;
        return base + at;
    }
    static size_t round(size_t n) { return (n + 255) & ~(size_t)255; }
};

class CudaBackend final : public Backend {
  public:
    CudaBackend(const Model &m) : m_(m), c_(m.cfg) {}
    ~CudaBackend() override;
    int32_t init(BackendConfig *cfg, const CudaOptions &opt);
    int32_t forward(const Batch &batch, float *logits) override;
    const int32_t *argmax_rows() const override { return argmax_h_; }
    int32_t kind() const override { return ENG_BACKEND_CUDA; }
    int32_t simd() const override { return ENG_SIMD_SCALAR; }

  private:
    size_t weight_bytes() const;
    int32_t upload_weights();
    int32_t alloc_activations();
    int32_t alloc_kv(BackendConfig *cfg, const CudaOptions &opt);
    const void *upload(const void *host, size_t n);
    const float *upload_vec(const std::vector<float> &v);
    DWeight upload_w(const Weight &w);
    int32_t linear(int T, const DWeight &w, const float *x, int ldx, float *y, int ldy, const float *bias);
    struct Out {
        const DWeight *w;
        float *y;
        int ldy;
        const float *bias;
    };
    int32_t linear_shared_x(int T, const float *x, int ldx, const Out *outs, int n);
    int32_t layer(int l, int T, int n_split);
    int32_t run(int T, int n_logits, int n_split);
    int32_t run_decode_graph(int T);
    int n_split_for(int T, bool is_decode) const;
    int32_t check_supported() const;

    const Model &m_;
    const ModelConfig &c_;
    BackendConfig cfg_;
    int device_ = 0;
    cudaStream_t stream_ = nullptr;
    Arena weights_;
    DWeight embed_, lm_head_;
    const float *final_norm_ = nullptr;
    std::vector<DLayer> layers_;
    float *inv_freq_ = nullptr; // (rotary_dim / 2)
    float *x_ = nullptr, *h_ = nullptr, *q_ = nullptr, *k_ = nullptr, *v_ = nullptr, *att_ = nullptr;
    float *ff_ = nullptr, *ff2_ = nullptr, *out_x_ = nullptr, *logits_ = nullptr;
    float *o_part_ = nullptr, *ml_part_ = nullptr;      // split-attention partials
    void *xb_ = nullptr;                                // (2, max_tokens, Kmax) bf16 for the tensor-core gemm
    float *kv_ = nullptr;                               // (L, 2, n_blocks, Hkv, bs, D)
    int32_t *meta_d_ = nullptr, *meta_h_ = nullptr;     // device / pinned host step metadata
    int32_t *argmax_d_ = nullptr, *argmax_h_ = nullptr; // (max_logits) argmax of each logits row
    int64_t meta_cap_ = 0, bt_cap_ = 0;
    int max_split_ = 1, sm_count_ = 1, tc_min_tokens_ = 16;
    bool use_graphs_ = true;
    std::vector<cudaGraphExec_t> graphs_; // [T] decode graph, or null
    std::vector<void *> allocs_;          // every cudaMalloc, freed in the destructor

    // Offsets (ints) of the metadata sections; fixed so captured graphs stay valid.
    int64_t off_tokens() const { return 0; }
    int64_t off_pos() const { return cfg_.max_tokens; }
    int64_t off_bt_off() const { return 2LL * cfg_.max_tokens; }
    int64_t off_rows() const { return 3LL * cfg_.max_tokens; }
    int64_t off_bt() const { return 3LL * cfg_.max_tokens + cfg_.max_logits; }
    int64_t kv_layer_floats() const { return (int64_t)cfg_.n_blocks * c_.n_head_kv * cfg_.block_size * c_.head_dim; }
    float *kcache(int l) const { return kv_ + (int64_t)l * 2 * kv_layer_floats(); }
    float *vcache(int l) const { return kcache(l) + kv_layer_floats(); }
    template <typename T> int32_t dalloc(T **p, size_t n) {
        void *q = nullptr;
        CUDA_CHECK(cudaMalloc(&q, n ? n : 1));
        allocs_.push_back(q);
        *p = (T *)q;
        return ENG_STATUS_OK;
    }
};

} // namespace maya

#endif
