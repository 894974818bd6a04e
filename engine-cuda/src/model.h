/* model.h: the architecture-level view of a checkpoint: hyperparameters and per-layer weights.
 *
 * Big matrices stay in their stored dtype inside the checkpoint mapping (Weight points there);
 * only vectors (norms, biases) are converted to f32 at load. Supported: Glm4ForCausalLM
 * (GLM-4-0414), LlamaForCausalLM, Qwen3ForCausalLM, with Hugging Face tensor names.
 */
#ifndef MAYA_MODEL_H
#define MAYA_MODEL_H

#include <stdint.h>
#include <string>
#include <vector>

#include "checkpoint.h" // defines: Checkpoint, Tensor, DType

namespace maya {

enum Arch : int32_t { ARCH_GLM4 = 1, ARCH_LLAMA = 2, ARCH_QWEN3 = 3 };

struct ModelConfig {
    Arch arch = ARCH_LLAMA;
    int32_t n_vocab = 0;   // V
    int32_t n_embd = 0;    // C
    int32_t n_layer = 0;
    int32_t n_head = 0;    // H
    int32_t n_head_kv = 0; // Hkv
    int32_t head_dim = 0;  // D
    int32_t n_ff = 0;      // I (intermediate size)
    int32_t max_pos = 0;   // max_position_embeddings
    float rms_eps = 1e-6f;
    float rope_theta = 10000.0f;
    int32_t rotary_dim = 0;         // leading dims of each head that are rotated (D * partial_rotary_factor)
    bool is_rope_interleaved = false; // GLM-4: pairs (x0,x1),(x2,x3)..; else neox halves
    bool is_tied = false;           // lm_head = embed_tokens
    bool has_qkv_bias = false, has_o_bias = false, has_mlp_bias = false;
    bool has_qk_norm = false;       // Qwen3
    bool has_sandwich_norms = false; // GLM-4: post_self_attn_layernorm / post_mlp_layernorm
    // llama3 rope scaling (rope_type "llama3"); factor 0 = none.
    float rope_factor = 0, rope_low_freq = 0, rope_high_freq = 0;
    int32_t rope_orig_ctx = 0;
};

/* A row-major matrix [rows][cols] in its stored dtype. */
struct Weight {
    const void *data = nullptr;
    DType dtype = DT_F32;
    int32_t rows = 0, cols = 0;
};

struct LayerWeights {
    std::vector<float> attn_norm;      // (C) input_layernorm
    std::vector<float> post_attn_norm; // (C) GLM-4 post_self_attn_layernorm
    std::vector<float> mlp_norm;       // (C) post_attention_layernorm (the pre-MLP norm)
    std::vector<float> post_mlp_norm;  // (C) GLM-4 post_mlp_layernorm
    Weight wq, wk, wv;                 // (H*D, C), (Hkv*D, C), (Hkv*D, C)
    Weight wo;                         // (C, H*D)
    std::vector<float> bq, bk, bv, bo; // biases when present
    std::vector<float> q_norm, k_norm; // (D) Qwen3
    Weight w_gate_up;                  // (2I, C) GLM-4 fused [gate; up]
    Weight w_gate, w_up;               // (I, C) Llama/Qwen3
    Weight w_down;                     // (C, I)
    std::vector<float> b_gate, b_up, b_down; // Llama mlp_bias
};

struct Model {
    ModelConfig cfg;
    Checkpoint ckpt;
    Weight embed;                 // (V, C)
    Weight lm_head;               // (V, C); = embed when tied
    std::vector<float> final_norm; // (C)
    std::vector<LayerWeights> layers;
    int64_t n_params = 0;
    int64_t weight_bytes = 0;     // bytes of the matrices read per decoded token (+ one embedding row)
};

/* Parses the hyperparameters of config.json. Returns OK, BAD_CHECKPOINT or UNSUPPORTED. */
int32_t model_config_parse(const JsonValue &config, ModelConfig *out);
/* Opens dir and binds every weight of the architecture. Returns OK, IO, BAD_CHECKPOINT, UNSUPPORTED. */
int32_t model_load(const std::string &dir, Model *out);

} // namespace maya

#endif
