/* model.h: the architecture-level view of a checkpoint: hyperparameters and per-layer weights.
 *
 * Big matrices stay in their stored dtype inside the checkpoint mapping (Weight points there);
 * only vectors (norms, biases) and FP8 block scales are converted to f32 at load. Supported:
 * Glm4ForCausalLM (GLM-4-0414), LlamaForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM (Qwen3-30B-A3B:
 * MoE with a softmax router), Glm4MoeForCausalLM
 * (GLM-4.5/4.6/4.7: MoE), DeepseekV3ForCausalLM (DeepSeek-V3/V3.1: MLA + MoE) and
 * Glm4vForConditionalGeneration (GLM-4.1V: GLM-4 text with M-RoPE + the vision tower of vision.h) and
 * Glm4vMoeForConditionalGeneration (GLM-4.5V: GLM-4.5 MoE text with M-RoPE + the same tower), with Hugging
 * Face tensor names; weights BF16/F16/F32 or FP8 e4m3 with 128x128 block scales.
 */
#ifndef MAYA_MODEL_H
#define MAYA_MODEL_H

#include <stdint.h>
#include <memory>
#include <string>
#include <vector>

#include "../include/engine.h" // defines: ENG_ARCH_*
#include "checkpoint.h"        // defines: Checkpoint, Tensor, DType

namespace maya {

/* The ENG_ARCH_* codes of engine.h (ENG_INFO_ARCH). */
enum Arch : int32_t {
    ARCH_GLM4 = ENG_ARCH_GLM4,
    ARCH_LLAMA = ENG_ARCH_LLAMA,
    ARCH_QWEN3 = ENG_ARCH_QWEN3,
    ARCH_GLM4_MOE = ENG_ARCH_GLM4_MOE,
    ARCH_DEEPSEEK_V3 = ENG_ARCH_DEEPSEEK_V3,
    ARCH_GLM4V = ENG_ARCH_GLM4V,
    ARCH_GLM4V_MOE = ENG_ARCH_GLM4V_MOE,
    ARCH_QWEN3_MOE = ENG_ARCH_QWEN3_MOE
};

struct VisionModel; // vision.h: GLM-4.1V's vision tower

/* FP8 weights: one f32 scale per kFp8Block x kFp8Block block of the matrix (edge blocks partial). */
const int kFp8Block = 128;

struct ModelConfig {
    Arch arch = ARCH_LLAMA;
    int32_t n_vocab = 0; // V
    int32_t n_embd = 0;  // C
    int32_t n_layer = 0;
    int32_t n_head = 0;    // H
    int32_t n_head_kv = 0; // Hkv
    int32_t head_dim = 0;  // D
    int32_t n_ff = 0;      // I (intermediate size)
    int32_t max_pos = 0;   // max_position_embeddings
    float rms_eps = 1e-6f;
    float rope_theta = 10000.0f;
    int32_t rotary_dim = 0;           // leading dims of each head that are rotated (D * partial_rotary_factor)
    bool is_rope_interleaved = false; // GLM-4: pairs (x0,x1),(x2,x3)..; else neox halves
    bool is_tied = false;             // lm_head = embed_tokens
    bool has_qkv_bias = false, has_o_bias = false, has_mlp_bias = false;
    bool has_qk_norm = false;        // Qwen3
    bool has_sandwich_norms = false; // GLM-4: post_self_attn_layernorm / post_mlp_layernorm
    // llama3 rope scaling (rope_type "llama3"); factor 0 = none.
    float rope_factor = 0, rope_low_freq = 0, rope_high_freq = 0;
    int32_t rope_orig_ctx = 0;
    // GGUF rope_freqs.weight (llama.cpp's converter writes Llama-3's scaling this way): rotary pair i's
    // frequency is divided by rope_freq_divisors[i] (rotary_dim / 2 values); empty = none.
    std::vector<float> rope_freq_divisors;
    // YaRN (rope_type "yarn", DeepSeek-V3): inv_freq blend and the cos/sin factor.
    bool is_yarn = false;
    float yarn_factor = 1, yarn_beta_fast = 32, yarn_beta_slow = 1, rope_attn_factor = 1;
    float attn_scale = 0; // softmax scale; D^-0.5, or DeepSeek's qk_head_dim^-0.5 * mscale^2
    // GLM-4.1V (Glm4vForConditionalGeneration): 3-section M-RoPE; frequency j of the rotary dims
    // takes the temporal position for j < s[0], the row for j < s[0]+s[1], else the column.
    int32_t mrope_section[3] = {0, 0, 0}; // all 0: one position per token
    int32_t image_token_id = -1;          // the placeholder id image embeddings replace (-1: none)
    // Mixture of experts (Glm4Moe, DeepseekV3, Qwen3Moe); n_expert 0 = dense model.
    int32_t n_expert = 0;      // E: n_routed_experts
    int32_t n_expert_used = 0; // K: num_experts_per_tok
    int32_t n_ff_expert = 0;   // moe_intermediate_size
    int32_t n_ff_shared = 0;   // moe_intermediate_size * n_shared_experts (0: none)
    int32_t n_group = 1, topk_group = 1;
    int32_t first_dense = 0;        // first_k_dense_replace: layers [0, first_dense) are dense
    bool is_norm_topk = true;       // norm_topk_prob
    bool is_softmax_router = false; // Qwen3Moe: softmax over all experts, no selection bias (else sigmoid)
    float routed_scale = 1.0f;      // routed_scaling_factor
    // Multi-head latent attention (DeepseekV3); kv_lora_rank 0 = ordinary attention.
    int32_t q_lora_rank = 0;  // 0: q_proj directly (q_lora_rank null)
    int32_t kv_lora_rank = 0; // R: the cached latent
    int32_t qk_nope_dim = 0, qk_rope_dim = 0, v_head_dim = 0;
    bool is_mla() const { return kv_lora_rank > 0; }
    bool is_moe_layer(int l) const { return n_expert > 0 && l >= first_dense; }
    /* Floats of KV cache one token takes in one layer: MLA the latent + rope key, else K and V. */
    int64_t kv_floats_per_token() const {
        return is_mla() ? (int64_t)kv_lora_rank + qk_rope_dim : 2LL * n_head_kv * head_dim;
    }
};

/* A row-major matrix [rows][cols] in its stored dtype. */
struct Weight {
    const void *data = nullptr;
    DType dtype = DT_F32;
    int32_t rows = 0, cols = 0;
    const float *scale = nullptr; // FP8: (ceil(rows/128), ceil(cols/128)) multipliers, else null
    bool is_f8_finite = false;    // FP8 with no NaN byte (model_check_f8)
};

/* A SwiGLU MLP: down(silu(gate x) * up x). */
struct Mlp {
    Weight gate, up; // (I, C)
    Weight down;     // (C, I)
};

struct LayerWeights {
    std::vector<float> attn_norm;            // (C) input_layernorm
    std::vector<float> post_attn_norm;       // (C) GLM-4 post_self_attn_layernorm
    std::vector<float> mlp_norm;             // (C) post_attention_layernorm (the pre-MLP norm)
    std::vector<float> post_mlp_norm;        // (C) GLM-4 post_mlp_layernorm
    Weight wq, wk, wv;                       // (H*D, C), (Hkv*D, C), (Hkv*D, C)
    Weight wo;                               // (C, H*D)
    std::vector<float> bq, bk, bv, bo;       // biases when present
    std::vector<float> q_norm, k_norm;       // (D) Qwen3
    Weight w_gate_up;                        // (2I, C) GLM-4 fused [gate; up]
    Weight w_gate, w_up;                     // (I, C) Llama/Qwen3
    Weight w_down;                           // (C, I)
    std::vector<float> b_gate, b_up, b_down; // Llama mlp_bias
    // MLA (DeepseekV3): q_a (Rq, C) + q_a_norm (Rq) + q_b (H*(Dn+Dr), Rq), or wq (H*(Dn+Dr), C);
    // kv_a (R+Dr, C), kv_a_norm (R), kv_b (H*(Dn+Dv), R), wo (C, H*Dv).
    Weight wq_a, wq_b, wkv_a, wkv_b;
    std::vector<float> q_a_norm, kv_a_norm, bq_a, bkv_a;
    // MoE layers: router (E, C), its selection bias (E), E experts, the shared experts.
    Weight router;
    std::vector<float> router_bias;
    std::vector<Mlp> experts;
    Mlp shared;
};

/* A multi-token-prediction (MTP) layer of DeepSeek-V3 / GLM-4.5 (num_nextn_predict_layers, stored as
 * model.layers.{num_hidden_layers + i}.*): at position t it reads the main model's last hidden state
 * h_t (before the final norm) and the embedding of token t+1, and predicts token t+2:
 *   x = eh_proj([enorm(embed(tok_{t+1})); hnorm(h_t)]) -> one decoder layer (its own KV layer)
 *   -> logits = head(head_norm(x)); x is also the h of the next chained prediction. */
struct MtpLayer {
    std::vector<float> enorm, hnorm; // (C)
    Weight eh_proj;                  // (C, 2C)
    LayerWeights layer;              // the decoder layer (MLA + MoE for DeepSeek-V3, GQA + MoE for GLM-4.5)
    Weight embed;                    // (V, C) its own embed_tokens, else the model's
    std::vector<float> head_norm;    // (C) shared_head.norm
    Weight head;                     // (V, C) shared_head.head, else lm_head
};

/* Anonymous memory that holds a copy of the matrices (model_place_weights), unmapped on destruction. */
class WeightArena {
  public:
    WeightArena() = default;
    WeightArena(const WeightArena &) = delete;
    WeightArena &operator=(const WeightArena &) = delete;
    ~WeightArena();
    /* Maps `bytes` (rounded up to 2 MiB, 2 MiB aligned) with MADV_HUGEPAGE. Returns OK or OUT_OF_MEMORY. */
    int32_t reserve(size_t bytes);
    /* The next `bytes` of the arena, 64-byte aligned (the caller sized it with reserve). */
    void *take(size_t bytes);
    bool is_used() const { return base_ != nullptr; }
    size_t size() const { return len_; }

  private:
    void *map_ = nullptr;
    size_t map_len_ = 0;
    char *base_ = nullptr;
    size_t len_ = 0, used_ = 0;
};

struct Model {
    ModelConfig cfg;
    Checkpoint ckpt;
    Weight embed;                  // (V, C)
    Weight lm_head;                // (V, C); = embed when tied
    std::vector<float> final_norm; // (C)
    std::vector<LayerWeights> layers;
    std::vector<MtpLayer> mtp; // the first MTP layer when the checkpoint has one whole (model_load), else empty
    int64_t n_params = 0;
    int64_t n_params_active = 0;            // parameters one token uses (MoE: K of the E routed experts)
    int64_t weight_bytes = 0;               // bytes of the matrices read per decoded token (+ one embedding row;
                                            // MoE: the active experts only)
    std::vector<std::vector<float>> scales; // FP8 / Q8 block scales (Weight::scale points here)
    bool is_q8 = false;                     // set before model_load: quantize matrices to DT_Q8
    std::vector<std::vector<int8_t>> q8;    // the Q8 weights (Weight::data points here until placed)
    bool is_q8_built = false;               // some matrix became DT_Q8
    bool has_q8() const { return is_q8_built; }
    // Set before model_load: quantize the matrices at load to a llama.cpp mixture (mixture_dtype):
    // DT_Q4_K (Q4_K_M), DT_Q8_0, DT_Q4_0 or DT_Q6_K; DT_OTHER: none.
    DType mixture = DT_OTHER;
    int quant_threads = 1;               // threads for quantizing at load
    WeightArena arena;                   // model_place_weights(): the matrices' huge-page copy
    std::shared_ptr<VisionModel> vision; // GLM-4.1V's vision tower (vision.cpp), else null
};

/* Parses the hyperparameters of config.json. Returns OK, BAD_CHECKPOINT or UNSUPPORTED. */
int32_t model_config_parse(const JsonValue &config, ModelConfig *out);
/* inv_freq of the rotary dims (rotary_dim / 2 floats): plain, llama3 or yarn as transformers computes them. */
void model_rope_inv_freq(const ModelConfig &c, float *out);
/* The dtype llama.cpp's Q4_K_M mixture gives the matrix `name` (HF name) of `cols` columns in a model
 * of n_layer layers (llama-quant.cpp's llama_tensor_get_type for LLAMA_FTYPE_MOSTLY_Q4_K_M): Q4_K;
 * Q6_K for the output matrix (lm_head, or the embedding when tied) and for v_proj and down_proj
 * (experts' and shared experts' included) of the use_more_bits layers; columns not a multiple of
 * 256 fall back (Q4_K -> Q5_0, Q6_K -> Q8_0); DT_OTHER (keep as stored) for MoE routers and
 * columns not a multiple of 32. Rules of llama.cpp for 8-expert models and fused QKV are not applied. */
DType q4_k_m_dtype(const std::string &name, int64_t cols, int n_layer, bool is_tied);
/* The dtype of the matrix `name` in llama.cpp's mixture `mix` (llama_tensor_get_type without
 * --pure): DT_Q4_K is q4_k_m_dtype; DT_Q8_0 every matrix Q8_0; DT_Q4_0 / DT_Q6_K every matrix of
 * that type except the output matrix (lm_head, or the embedding when tied) at Q6_K, and Q6_K's
 * columns not a multiple of 256 at Q8_0; DT_OTHER (keep as stored) for MoE routers and columns
 * not a multiple of 32. */
DType mixture_dtype(DType mix, const std::string &name, int64_t cols, int n_layer, bool is_tied);
/* Opens dir and binds every weight of the architecture. Returns OK, IO, BAD_CHECKPOINT, UNSUPPORTED. */
int32_t model_load(const std::string &dir, Model *out);
/* The CPU backend's weight placement: copies every matrix (and the Q8 scales) out of the checkpoint
 * mapping / Q8 buffers into one arena of transparent huge pages, when their bytes are at most
 * max_bytes; Weight pointers move there, aliases (tied embeddings) stay aliases, the Q8 buffers are
 * freed. A decode step streams every matrix from DRAM: with 4 KiB pages of a file mapping each page
 * of a row stream costs a TLB walk, and a 2-thread f32 decode of a 110M model measured 17% faster
 * from huge pages (measurements in bench/results/engine-log.md). Idempotent. *placed: whether the copy
 * was made (not when over budget, nor when the arena cannot be mapped). Returns OK. */
int32_t model_place_weights(Model *m, int64_t max_bytes, bool *placed);
/* Marks each FP8 matrix free of NaN bytes (0x7F / 0xFF) is_f8_finite, so the CPU kernels can skip
 * the per-byte NaN fix-up (one pass over the FP8 bytes; published checkpoints have none). */
void model_check_f8(Model *m);

} // namespace maya

#endif
