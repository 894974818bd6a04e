/* model.cpp: config.json hyperparameters and weight binding per architecture.
 *
 * Config field names and tensor names are those of Hugging Face transformers'
 * configuration_/modeling_{glm4,llama,qwen3,glm4_moe,deepseek_v3}.py; defaults follow those configs
 * where a field is absent (e.g. Glm4Config partial_rotary_factor 0.5, head_dim 128, attention_bias
 * true; DeepseekV3Config routed_scaling_factor 2.5, first_k_dense_replace 3, rope_interleave true).
 * Multi-token-prediction layers (num_nextn_predict_layers, stored as model.layers.{L..}): the first
 * is bound into Model::mtp when the checkpoint holds it whole (bind_mtp); they never count toward
 * the model's parameters or the bytes a token reads.
 */
#include "model.h"

#include <sys/mman.h>
#include <unordered_map>
#include <unordered_set>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"      // defines: fail, clear_error, ENG_TRY
#include "ggml_quants.h" // defines: ggml_quantize_matrix
#include "vision.h"      // defines: vision_load

namespace maya {

static const JsonValue *field(const JsonValue &c, const char *key) {
    const JsonValue *v = c.get(key);
    return (v && !v->is_null()) ? v : nullptr;
}

static int32_t get_int(const JsonValue &c, const char *key, int64_t def, int32_t *out, bool required) {
    const JsonValue *v = field(c, key);
    if (!v) {
        if (required) return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: missing %s", key);
        *out = (int32_t)def;
        return ENG_STATUS_OK;
    }
    if (v->kind != JsonValue::NUMBER || !v->is_integer || v->integer < 0 || v->integer > INT32_MAX)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: %s is not a non-negative integer", key);
    *out = (int32_t)v->integer;
    return ENG_STATUS_OK;
}

static int32_t get_float(const JsonValue &c, const char *key, double def, double *out) {
    const JsonValue *v = field(c, key);
    if (!v) {
        *out = def;
        return ENG_STATUS_OK;
    }
    if (v->kind != JsonValue::NUMBER) return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: %s is not a number", key);
    *out = v->number;
    return ENG_STATUS_OK;
}

static bool get_bool(const JsonValue &c, const char *key, bool def) {
    const JsonValue *v = field(c, key);
    return (v && v->kind == JsonValue::BOOL) ? v->boolean : def;
}

/* yarn_get_mscale of transformers' modeling_rope_utils / modeling_deepseek_v3. */
static double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0; }

/* rope_type "yarn" as transformers' _compute_yarn_parameters reads it: when
 * original_max_position_embeddings is given, the factor becomes max_position_embeddings / it;
 * attention_factor (absent: mscale(factor, mscale) / mscale(factor, mscale_all_dim), or
 * mscale(factor)) multiplies cos and sin. DeepSeek-V3 also multiplies the softmax scale by
 * mscale(rope_scaling.factor, mscale_all_dim)^2 (DeepseekV3Attention.__init__), see set_attn_scale. */
static int32_t parse_yarn(const JsonValue &sc, ModelConfig *m) {
    double factor = 0, fast = 0, slow = 0, attn = 0, ms = 0, ms_all = 0;
    ENG_TRY(get_float(sc, "factor", 0, &factor));
    if (factor <= 0)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: rope_scaling.factor must be positive for yarn");
    ENG_TRY(get_int(sc, "original_max_position_embeddings", m->max_pos, &m->rope_orig_ctx, false));
    if (field(sc, "original_max_position_embeddings") && m->rope_orig_ctx > 0)
        factor = (double)m->max_pos / (double)m->rope_orig_ctx;
    ENG_TRY(get_float(sc, "beta_fast", 32, &fast));
    ENG_TRY(get_float(sc, "beta_slow", 1, &slow));
    ENG_TRY(get_float(sc, "attention_factor", -1, &attn));
    ENG_TRY(get_float(sc, "mscale", 0, &ms));
    ENG_TRY(get_float(sc, "mscale_all_dim", 0, &ms_all));
    if (!get_bool(sc, "truncate", true))
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: rope_scaling.truncate false is not supported");
    if (attn < 0)
        attn =
            (ms != 0 && ms_all != 0) ? yarn_mscale(factor, ms) / yarn_mscale(factor, ms_all) : yarn_mscale(factor, 1);
    m->is_yarn = true;
    m->yarn_factor = (float)factor;
    m->yarn_beta_fast = (float)(fast != 0 ? fast : 32);
    m->yarn_beta_slow = (float)(slow != 0 ? slow : 1);
    m->rope_attn_factor = (float)attn;
    return ENG_STATUS_OK;
}

/* rope_scaling (transformers <= 4.x) or rope_parameters (5.x); "default"/absent = plain RoPE. */
static int32_t parse_rope(const JsonValue &c, ModelConfig *m) {
    const JsonValue *rs = field(c, "rope_scaling");
    const JsonValue *rp = field(c, "rope_parameters");
    double theta = -1;
    ENG_TRY(get_float(c, "rope_theta", -1, &theta));
    if (theta < 0 && rp) ENG_TRY(get_float(*rp, "rope_theta", -1, &theta));
    if (theta < 0 && rs) ENG_TRY(get_float(*rs, "rope_theta", -1, &theta));
    m->rope_theta = theta > 0 ? (float)theta : 10000.0f;
    const JsonValue *sc = rs ? rs : rp;
    if (!sc || sc->kind != JsonValue::OBJECT) return ENG_STATUS_OK;
    const JsonValue *type = field(*sc, "rope_type");
    if (!type) type = field(*sc, "type");
    std::string t = (type && type->kind == JsonValue::STRING) ? type->string : "default";
    if (t == "default") return ENG_STATUS_OK;
    if (t == "yarn") return parse_yarn(*sc, m);
    if (t != "llama3")
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: rope_scaling.rope_type %s is not supported (llama3, yarn)",
                    t.c_str());
    double factor = 0, low = 0, high = 0;
    ENG_TRY(get_float(*sc, "factor", 8, &factor));
    ENG_TRY(get_float(*sc, "low_freq_factor", 1, &low));
    ENG_TRY(get_float(*sc, "high_freq_factor", 4, &high));
    ENG_TRY(get_int(*sc, "original_max_position_embeddings", 8192, &m->rope_orig_ctx, false));
    if (factor <= 0 || high <= low) return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: bad llama3 rope_scaling");
    m->rope_factor = (float)factor;
    m->rope_low_freq = (float)low;
    m->rope_high_freq = (float)high;
    return ENG_STATUS_OK;
}

/* quantization_config: absent (weights as stored) or block FP8 as DeepSeek-V3 / GLM-4.5-FP8 publish it. */
static int32_t parse_quant(const JsonValue &c) {
    const JsonValue *q = field(c, "quantization_config");
    if (!q) return ENG_STATUS_OK;
    const JsonValue *method = field(*q, "quant_method");
    std::string qm = (method && method->kind == JsonValue::STRING) ? method->string : "(missing)";
    if (qm != "fp8")
        return fail(ENG_STATUS_UNSUPPORTED,
                    "config.json: quantization_config.quant_method %s is not supported (fp8 only)", qm.c_str());
    const JsonValue *fmt = field(*q, "fmt");
    if (fmt && (fmt->kind != JsonValue::STRING || fmt->string != "e4m3"))
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: quantization_config.fmt %s is not supported (e4m3 only)",
                    fmt->kind == JsonValue::STRING ? fmt->string.c_str() : "(not a string)");
    const JsonValue *bs = field(*q, "weight_block_size");
    if (!bs || bs->kind != JsonValue::ARRAY || bs->items.size() != 2 || !bs->items[0].is_integer ||
        !bs->items[1].is_integer || bs->items[0].integer != kFp8Block || bs->items[1].integer != kFp8Block)
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: quantization_config.weight_block_size must be [128, 128]");
    const JsonValue *act = field(*q, "activation_scheme");
    if (act && (act->kind != JsonValue::STRING || act->string != "dynamic"))
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: quantization_config.activation_scheme must be dynamic");
    return ENG_STATUS_OK;
}

static int32_t parse_moe(const JsonValue &c, ModelConfig *m) {
    bool ds = m->arch == ARCH_DEEPSEEK_V3;
    int32_t n_shared = 0;
    double scale = 0;
    ENG_TRY(get_int(c, "n_routed_experts", 0, &m->n_expert, true));
    ENG_TRY(get_int(c, "num_experts_per_tok", 0, &m->n_expert_used, true));
    ENG_TRY(get_int(c, "moe_intermediate_size", 0, &m->n_ff_expert, true));
    ENG_TRY(get_int(c, "n_shared_experts", 1, &n_shared, false));
    ENG_TRY(get_int(c, "n_group", 1, &m->n_group, false));
    ENG_TRY(get_int(c, "topk_group", 1, &m->topk_group, false));
    ENG_TRY(get_int(c, "first_k_dense_replace", ds ? 3 : 1, &m->first_dense, false));
    ENG_TRY(get_float(c, "routed_scaling_factor", ds ? 2.5 : 1.0, &scale));
    m->routed_scale = (float)scale;
    m->is_norm_topk = get_bool(c, "norm_topk_prob", true);
    m->n_ff_shared = m->n_ff_expert * n_shared;
    const JsonValue *sf = field(c, "scoring_func"), *tm = field(c, "topk_method");
    if (sf && (sf->kind != JsonValue::STRING || sf->string != "sigmoid"))
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: scoring_func %s is not supported (sigmoid only)",
                    sf->kind == JsonValue::STRING ? sf->string.c_str() : "?");
    if (tm && (tm->kind != JsonValue::STRING || tm->string != "noaux_tc"))
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: topk_method %s is not supported (noaux_tc only)",
                    tm->kind == JsonValue::STRING ? tm->string.c_str() : "?");
    int32_t freq = 1;
    ENG_TRY(get_int(c, "moe_layer_freq", 1, &freq, false));
    if (freq != 1)
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: moe_layer_freq %d is not supported (1 only)", freq);
    int32_t E = m->n_expert, G = m->n_group;
    if (E <= 0 || m->n_ff_expert <= 0 || m->n_expert_used <= 0 || G <= 0 || E % G != 0 || E / G < 2 ||
        m->topk_group <= 0 || m->topk_group > G || m->n_expert_used > m->topk_group * (E / G) ||
        m->first_dense > m->n_layer)
        return fail(ENG_STATUS_BAD_CHECKPOINT,
                    "config.json: MoE sizes are inconsistent (n_routed_experts %d, num_experts_per_tok %d, n_group %d, "
                    "topk_group %d, first_k_dense_replace %d)",
                    E, m->n_expert_used, G, m->topk_group, m->first_dense);
    return ENG_STATUS_OK;
}

/* Qwen3MoeForCausalLM (transformers' configuration_qwen3_moe: num_experts, num_experts_per_tok,
 * moe_intermediate_size, norm_topk_prob default false, decoder_sparse_step 1, mlp_only_layers []):
 * every layer sparse, softmax router over all experts, no shared expert, no scaling. */
static int32_t parse_qwen3_moe(const JsonValue &c, ModelConfig *m) {
    ENG_TRY(get_int(c, "num_experts", 0, &m->n_expert, true));
    ENG_TRY(get_int(c, "num_experts_per_tok", 0, &m->n_expert_used, true));
    ENG_TRY(get_int(c, "moe_intermediate_size", 0, &m->n_ff_expert, true));
    int32_t step = 1;
    ENG_TRY(get_int(c, "decoder_sparse_step", 1, &step, false));
    const JsonValue *only = field(c, "mlp_only_layers");
    if (step != 1 || (only && (only->kind != JsonValue::ARRAY || !only->items.empty())))
        return fail(ENG_STATUS_UNSUPPORTED,
                    "config.json: dense Qwen3-MoE layers (decoder_sparse_step %d, mlp_only_layers) are not supported",
                    step);
    m->is_norm_topk = get_bool(c, "norm_topk_prob", false);
    m->is_softmax_router = true;
    m->routed_scale = 1.0f;
    m->n_group = m->topk_group = 1;
    m->first_dense = 0;
    m->n_ff_shared = 0;
    if (m->n_expert <= 0 || m->n_ff_expert <= 0 || m->n_expert_used <= 0 || m->n_expert_used > m->n_expert)
        return fail(ENG_STATUS_BAD_CHECKPOINT,
                    "config.json: MoE sizes are inconsistent (num_experts %d, num_experts_per_tok %d)", m->n_expert,
                    m->n_expert_used);
    return ENG_STATUS_OK;
}

/* DeepseekV3: q_lora_rank (null: q_proj), kv_lora_rank, head dims; the softmax scale. */
static int32_t parse_mla(const JsonValue &c, ModelConfig *m) {
    ENG_TRY(get_int(c, "q_lora_rank", 0, &m->q_lora_rank, false)); // null: no q compression
    ENG_TRY(get_int(c, "kv_lora_rank", 0, &m->kv_lora_rank, true));
    ENG_TRY(get_int(c, "qk_nope_head_dim", 0, &m->qk_nope_dim, true));
    ENG_TRY(get_int(c, "qk_rope_head_dim", 0, &m->qk_rope_dim, true));
    ENG_TRY(get_int(c, "v_head_dim", 0, &m->v_head_dim, true));
    if (m->kv_lora_rank <= 0 || m->qk_nope_dim <= 0 || m->qk_rope_dim < 2 || m->qk_rope_dim % 2 || m->v_head_dim <= 0)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: MLA dims must be positive (qk_rope_head_dim even)");
    m->head_dim = m->qk_nope_dim + m->qk_rope_dim; // the query/key width of one head
    m->rotary_dim = m->qk_rope_dim;
    m->n_head_kv = m->n_head; // unused by MLA: every head reads the one shared latent
    m->is_rope_interleaved = get_bool(c, "rope_interleave", true);
    double scale = 1.0 / sqrt((double)m->head_dim);
    const JsonValue *rs = field(c, "rope_scaling");
    if (rs && m->is_yarn) {
        double factor = 0, ms_all = 0;
        ENG_TRY(get_float(*rs, "factor", 0, &factor));
        ENG_TRY(get_float(*rs, "mscale_all_dim", 0, &ms_all));
        if (ms_all != 0) scale *= yarn_mscale(factor, ms_all) * yarn_mscale(factor, ms_all);
    }
    m->attn_scale = (float)scale;
    return ENG_STATUS_OK;
}

/* GLM-4.1V / GLM-4.5V: mrope_section of rope_scaling / rope_parameters (Glm4vTextRotaryEmbedding's default
 * [8, 12, 12]) must split the rotary_dim / 2 frequencies; image_token_id from the root config. */
static int32_t parse_glm4v(const JsonValue &root, const JsonValue &c, ModelConfig *m) {
    const JsonValue *sc = field(c, "rope_scaling");
    if (!sc) sc = field(c, "rope_parameters");
    if (!sc) sc = field(root, "rope_scaling");
    const JsonValue *ms = sc ? field(*sc, "mrope_section") : nullptr;
    int32_t sec[3] = {8, 12, 12};
    if (ms) {
        if (ms->kind != JsonValue::ARRAY || ms->items.size() != 3)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: mrope_section must hold 3 integers");
        for (int i = 0; i < 3; i++) {
            if (!ms->items[(size_t)i].is_integer || ms->items[(size_t)i].integer < 0)
                return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: mrope_section must hold 3 integers");
            sec[i] = (int32_t)ms->items[(size_t)i].integer;
        }
    }
    if (sec[0] + sec[1] + sec[2] != m->rotary_dim / 2)
        return fail(ENG_STATUS_BAD_CHECKPOINT,
                    "config.json: mrope_section [%d, %d, %d] must sum to the %d rotary frequencies", sec[0], sec[1],
                    sec[2], m->rotary_dim / 2);
    memcpy(m->mrope_section, sec, sizeof sec);
    const JsonValue *img = field(root, "image_token_id");
    if (!img) img = field(c, "image_token_id");
    if (!img || !img->is_integer || img->integer < 0 || img->integer >= m->n_vocab)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: image_token_id is missing or outside the vocabulary");
    m->image_token_id = (int32_t)img->integer;
    return ENG_STATUS_OK;
}

/* architectures[0] -> m->arch. */
static int32_t parse_arch(const JsonValue &root, ModelConfig *m) {
    const JsonValue *archs = field(root, "architectures");
    if (!archs || archs->kind != JsonValue::ARRAY || archs->items.empty() || archs->items[0].kind != JsonValue::STRING)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: missing architectures");
    const std::string &a = archs->items[0].string;
    if (a == "Glm4ForCausalLM") m->arch = ARCH_GLM4;
    else if (a == "LlamaForCausalLM") m->arch = ARCH_LLAMA;
    else if (a == "Qwen3ForCausalLM") m->arch = ARCH_QWEN3;
    else if (a == "Glm4MoeForCausalLM") m->arch = ARCH_GLM4_MOE;
    else if (a == "DeepseekV3ForCausalLM") m->arch = ARCH_DEEPSEEK_V3;
    else if (a == "Glm4vForConditionalGeneration") m->arch = ARCH_GLM4V;
    else if (a == "Glm4vMoeForConditionalGeneration") m->arch = ARCH_GLM4V_MOE;
    else if (a == "Qwen3MoeForCausalLM") m->arch = ARCH_QWEN3_MOE;
    else if (a == "DeepseekV32ForCausalLM")
        return fail(ENG_STATUS_UNSUPPORTED,
                    "unsupported architecture DeepseekV32ForCausalLM: DeepSeek sparse attention "
                    "(the lightning indexer) is not implemented");
    else
        return fail(ENG_STATUS_UNSUPPORTED,
                    "unsupported architecture %s (supported: Glm4ForCausalLM, LlamaForCausalLM, "
                    "Qwen3ForCausalLM, Qwen3MoeForCausalLM, Glm4MoeForCausalLM, DeepseekV3ForCausalLM, "
                    "Glm4vForConditionalGeneration, "
                    "Glm4vMoeForConditionalGeneration)",
                    a.c_str());
    return ENG_STATUS_OK;
}

namespace {
/* The architecture families the parsing rules below tell apart. */
struct ArchFamily {
    bool ds, vision, glm4v, glm_moe, glm4;
    explicit ArchFamily(Arch a)
        : ds(a == ARCH_DEEPSEEK_V3), vision(a == ARCH_GLM4V || a == ARCH_GLM4V_MOE), // GLM-4.1V / GLM-4.5V
          glm4v(a == ARCH_GLM4V),                                                    // its text: GLM-4-0414's layer
          glm_moe(a == ARCH_GLM4_MOE || a == ARCH_GLM4V_MOE),                        // GLM-4.5V's text: GLM-4.5's
          glm4(a == ARCH_GLM4 || a == ARCH_GLM4V) {}
};
} // namespace

/* Vocabulary, widths, layer and head counts, context, head_dim and the RMSNorm epsilon. */
static int32_t parse_sizes(const JsonValue &c, const ArchFamily &f, ModelConfig *m) {
    ENG_TRY(get_int(c, "vocab_size", 0, &m->n_vocab, true));
    ENG_TRY(get_int(c, "hidden_size", 0, &m->n_embd, true));
    ENG_TRY(get_int(c, "num_hidden_layers", 0, &m->n_layer, true));
    ENG_TRY(get_int(c, "num_attention_heads", 0, &m->n_head, true));
    ENG_TRY(get_int(c, "num_key_value_heads", m->n_head, &m->n_head_kv, false));
    ENG_TRY(get_int(c, "intermediate_size", 0, &m->n_ff, true));
    ENG_TRY(get_int(c, "max_position_embeddings", 2048, &m->max_pos, false));
    if (m->n_head <= 0 || m->n_embd <= 0 || m->n_layer <= 0 || m->n_vocab <= 0 || m->n_ff <= 0 || m->n_head_kv <= 0)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: sizes must be positive");
    int64_t def_head_dim =
        m->arch == ARCH_GLM4 || m->arch == ARCH_QWEN3 || m->arch == ARCH_QWEN3_MOE ? 128 : m->n_embd / m->n_head;
    ENG_TRY(get_int(c, "head_dim", def_head_dim, &m->head_dim, false));
    if (f.glm4v) m->head_dim = m->n_embd / m->n_head;                 // Glm4vTextAttention: hidden_size / heads
    if ((!f.ds && m->head_dim <= 0) || m->n_head % m->n_head_kv != 0) // MLA sets its own head dims
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: head_dim %d, heads %d / kv heads %d are inconsistent",
                    m->head_dim, m->n_head, m->n_head_kv);
    double eps = 0;
    ENG_TRY(get_float(c, "rms_norm_eps", m->arch == ARCH_GLM4 ? 1.5625e-07 : f.glm_moe || f.glm4v ? 1e-5 : 1e-6, &eps));
    m->rms_eps = (float)eps;
    return ENG_STATUS_OK;
}

/* partial_rotary_factor (GLM: 0.5 by default), rope_scaling and the plain softmax scale. */
static int32_t parse_rotary(const JsonValue &c, const ArchFamily &f, ModelConfig *m) {
    double partial = 0;
    const JsonValue *rp = field(c, "rope_parameters");
    double def_partial = (f.glm4 || f.glm_moe) ? 0.5 : 1.0;
    if (rp) ENG_TRY(get_float(*rp, "partial_rotary_factor", def_partial, &def_partial));
    ENG_TRY(get_float(c, "partial_rotary_factor", def_partial, &partial));
    if (partial <= 0 || partial > 1)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: partial_rotary_factor %g", partial);
    m->rotary_dim = (int32_t)(m->head_dim * partial);
    if (!f.ds && (m->rotary_dim < 2 || m->rotary_dim % 2 != 0))
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: rotary dims %d must be even and >= 2", m->rotary_dim);
    if (!f.glm4 && !f.glm_moe && !f.ds && m->rotary_dim != m->head_dim)
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: partial_rotary_factor %g is only supported for GLM-4",
                    partial);
    ENG_TRY(parse_rope(c, m));
    if (m->is_yarn && !f.ds)
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: yarn rope scaling is only supported for DeepseekV3");
    m->attn_scale = 1.0f / sqrtf((float)m->head_dim);
    return ENG_STATUS_OK;
}

/* Tied embeddings, biases, QK-norm, sandwich norms and the RoPE pairing of each family. */
static int32_t parse_layer_options(const JsonValue &root, const JsonValue &c, const ArchFamily &f, ModelConfig *m) {
    m->is_tied = get_bool(root, "tie_word_embeddings", get_bool(c, "tie_word_embeddings", false));
    // Glm4vTextAttention: always; Glm4vMoeTextConfig: attention_bias defaults to true.
    bool attn_bias = f.glm4v || get_bool(c, "attention_bias", m->arch == ARCH_GLM4 || m->arch == ARCH_GLM4V_MOE);
    m->has_qkv_bias = attn_bias;
    m->has_o_bias = !f.glm4 && !f.glm_moe && attn_bias; // GLM-4 / GLM-4.5 o_proj never has a bias
    m->has_mlp_bias = m->arch == ARCH_LLAMA && get_bool(c, "mlp_bias", false);
    // Glm4vMoeTextConfig removes use_qk_norm: GLM-4.5V has no QK-norm.
    m->has_qk_norm = m->arch == ARCH_QWEN3 || m->arch == ARCH_QWEN3_MOE ||
                     (m->arch == ARCH_GLM4_MOE && get_bool(c, "use_qk_norm", false));
    m->has_sandwich_norms = f.glm4;
    m->is_rope_interleaved =
        f.glm4; // GLM-4.5 rotates NeoX halves (modeling_glm4_moe); GLM-4.1V pairs (rotate_half_llm)
    if (f.ds && attn_bias)
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: attention_bias true is not supported for DeepseekV3");
    return ENG_STATUS_OK;
}

int32_t model_config_parse(const JsonValue &root, ModelConfig *m) {
    *m = ModelConfig();
    ENG_TRY(parse_arch(root, m));
    ArchFamily f(m->arch);
    // The vision models keep the language model's fields in text_config (older configs: at the top level).
    const JsonValue *tc = f.vision ? field(root, "text_config") : nullptr;
    const JsonValue &c = tc && tc->kind == JsonValue::OBJECT ? *tc : root;
    if (f.ds && (field(c, "index_topk") || field(c, "index_n_heads")))
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: index_topk/index_n_heads (DeepSeek-V3.2 sparse attention) "
                                            "are not supported");
    ENG_TRY(parse_sizes(c, f, m));
    ENG_TRY(parse_rotary(c, f, m));
    ENG_TRY(parse_quant(root));
    if (f.vision) ENG_TRY(parse_glm4v(root, c, m));
    ENG_TRY(parse_layer_options(root, c, f, m));
    if (f.glm_moe || f.ds) ENG_TRY(parse_moe(c, m));
    if (f.ds) ENG_TRY(parse_mla(c, m));
    if (m->arch == ARCH_QWEN3_MOE) ENG_TRY(parse_qwen3_moe(c, m));
    if (get_bool(c, "use_sliding_window", false)) // Qwen2/3 configs carry it, normally false
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: use_sliding_window is not supported");
    const JsonValue *act = field(c, "hidden_act");
    if (act && act->kind == JsonValue::STRING && act->string != "silu")
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: hidden_act %s is not supported (silu only)",
                    act->string.c_str());
    return ENG_STATUS_OK;
}

/* inv_freq of the rotary dims (rotary_dim / 2 values): plain, llama3 or yarn, in float32 as
 * transformers computes them (modeling_rope_utils). */
void model_rope_inv_freq(const ModelConfig &c, float *out) {
    int half = c.rotary_dim / 2, dim = c.rotary_dim;
    double low = 0, high = 0;
    if (c.is_yarn) { // find_correction_range with truncate
        auto corr = [&](double rot) {
            return (dim * log((double)c.rope_orig_ctx / (rot * 2 * M_PI))) / (2 * log((double)c.rope_theta));
        };
        low = floor(corr(c.yarn_beta_fast));
        high = ceil(corr(c.yarn_beta_slow));
        if (low < 0) low = 0;
        if (high > dim - 1) high = dim - 1;
        if (low == high) high += 0.001;
    }
    for (int i = 0; i < half; i++) {
        // transformers: 1 / theta^(arange(0, dim, 2) / dim), in float32.
        float pos_freq = powf(c.rope_theta, (float)(2 * i) / (float)dim);
        float f = 1.0f / pos_freq;
        if (c.rope_factor > 0) { // transformers _compute_llama3_parameters
            float low_wl = (float)c.rope_orig_ctx / c.rope_low_freq;
            float high_wl = (float)c.rope_orig_ctx / c.rope_high_freq;
            float wl = 2.0f * (float)M_PI / f;
            if (wl > low_wl) f = f / c.rope_factor;
            else if (wl >= high_wl) {
                float smooth = ((float)c.rope_orig_ctx / wl - c.rope_low_freq) / (c.rope_high_freq - c.rope_low_freq);
                f = (1 - smooth) * f / c.rope_factor + smooth * f;
            }
        }
        if (c.is_yarn) { // _compute_yarn_parameters: ramp between interpolation and extrapolation
            float ramp = (float)(((float)i - low) / (high - low));
            ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
            float extra = 1 - ramp;
            float interp = 1.0f / (c.yarn_factor * pos_freq);
            f = interp * (1 - extra) + f * extra;
        }
        // llama.cpp's RoPE with freq_factors: angle = pos * base^(-2i/d) / factor[i].
        if (!c.rope_freq_divisors.empty()) f = f / c.rope_freq_divisors[(size_t)i];
        out[i] = f;
    }
}

/* Vectors and FP8 scales: F32, F16 or BF16 widened to f32 (callers reject F8 first). */
static void to_f32(const Tensor *t, std::vector<float> *out) {
    out->resize((size_t)t->numel);
    for (int64_t i = 0; i < t->numel; i++) {
        if (t->dtype == DT_F32) {
            memcpy(&(*out)[i], (const uint8_t *)t->data + 4 * i, 4);
        } else {
            uint16_t h;
            memcpy(&h, (const uint8_t *)t->data + 2 * i, 2);
            if (t->dtype == DT_F16) (*out)[i] = half_to_f32(h);
            else {
                uint32_t bits = (uint32_t)h << 16;
                memcpy(&(*out)[i], &bits, 4);
            }
        }
    }
}

/* llama.cpp's "more bits" layers of a mixture (llama-quant.cpp use_more_bits): the first and last
 * eighth of the layers and every third one between. */
static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

DType q4_k_m_dtype(const std::string &name, int64_t cols, int n_layer, bool is_tied) {
    auto ends = [&](const char *s) {
        size_t n = strlen(s);
        return name.size() >= n && name.compare(name.size() - n, n, s) == 0;
    };
    if (ends("mlp.gate.weight") || cols % 32 != 0) return DT_OTHER; // MoE routers keep their precision
    int layer = -1;
    size_t at = name.find("layers.");
    if (at != std::string::npos) layer = atoi(name.c_str() + at + 7);
    DType dt = DT_Q4_K;
    if (ends("lm_head.weight") || (is_tied && ends("embed_tokens.weight"))) dt = DT_Q6_K; // the output matrix
    else if ((ends("self_attn.v_proj.weight") || ends("down_proj.weight")) && layer >= 0 &&
             use_more_bits(layer, n_layer))
        dt = DT_Q6_K;
    if (cols % 256 != 0) dt = dt == DT_Q6_K ? DT_Q8_0 : DT_Q5_0; // rows not whole K-quant blocks
    return dt;
}

DType mixture_dtype(DType mix, const std::string &name, int64_t cols, int n_layer, bool is_tied) {
    if (mix == DT_Q4_K) return q4_k_m_dtype(name, cols, n_layer, is_tied);
    auto ends = [&](const char *s) {
        size_t n = strlen(s);
        return name.size() >= n && name.compare(name.size() - n, n, s) == 0;
    };
    if (ends("mlp.gate.weight") || cols % 32 != 0) return DT_OTHER;
    if (mix == DT_Q8_0) return DT_Q8_0;
    DType dt = mix;
    if (ends("lm_head.weight") || (is_tied && ends("embed_tokens.weight"))) dt = DT_Q6_K;
    if (dt == DT_Q6_K && cols % 256 != 0) dt = DT_Q8_0;
    return dt;
}

namespace {

/* Binds tensors by name and counts parameters and the bytes a decoded token reads. */
struct Binder {
    Model *m;
    bool is_counted = true; // false while binding routed experts (counted once per model_load)
    int32_t matrix(const std::string &name, int64_t rows, int64_t cols, Weight *w) {
        const Tensor *t;
        ENG_TRY(m->ckpt.require(name, {rows, cols}, &t));
        w->data = t->data;
        w->dtype = t->dtype;
        w->rows = (int32_t)rows;
        w->cols = (int32_t)cols;
        w->scale = nullptr;
        int64_t bytes = (int64_t)t->nbytes;
        if (t->dtype == DT_F8_E4M3) ENG_TRY(fp8_scale(name, rows, cols, w, &bytes));
        else if (m->is_q8 && dtype_size(t->dtype) > 0) to_q8(name, t, w, &bytes); // block dtypes stay as stored
        else if (m->mixture != DT_OTHER) to_mixture(name, t, w, &bytes);
        m->n_params += t->numel;
        if (is_counted) {
            m->n_params_active += t->numel;
            m->weight_bytes += bytes;
        }
        return ENG_STATUS_OK;
    }
    /* ENG_PARAM_WEIGHT_DTYPE q8: every matrix whose columns are a multiple of 32, except MoE routers
     * (expert choice is discrete: it keeps its precision), becomes DT_Q8. */
    void to_q8(const std::string &name, const Tensor *t, Weight *w, int64_t *bytes) {
        bool is_router = name.size() >= 15 && name.compare(name.size() - 15, 15, "mlp.gate.weight") == 0;
        if (w->cols % 32 != 0 || is_router) return;
        int64_t n = (int64_t)w->rows * w->cols;
        m->q8.emplace_back((size_t)n);
        m->scales.emplace_back((size_t)(n / 32));
        quantize_q8_matrix(t->data, t->dtype, w->rows, w->cols, m->q8.back().data(), m->scales.back().data());
        w->data = m->q8.back().data();
        m->is_q8_built = true;
        w->dtype = DT_Q8;
        w->scale = m->scales.back().data();
        *bytes = n + n / 32 * 4;
    }
    /* ENG_PARAM_WEIGHT_DTYPE Q4_K / Q8_0 / Q4_0 / Q6_K: the matrix quantized at load to its type in
     * llama.cpp's mixture (mixture_dtype), kept as stored when that is none. */
    void to_mixture(const std::string &name, const Tensor *t, Weight *w, int64_t *bytes) {
        DType dt = mixture_dtype(m->mixture, name, w->cols, m->cfg.n_layer, m->cfg.is_tied);
        if (dt == DT_OTHER || (t->dtype != DT_F32 && t->dtype != DT_F16 && t->dtype != DT_BF16)) return;
        int64_t rb = dtype_row_bytes(dt, w->cols);
        m->q8.emplace_back((size_t)(rb * w->rows));
        ggml_quantize_matrix(dt, t->data, t->dtype, w->rows, w->cols, m->q8.back().data(), m->quant_threads);
        w->data = m->q8.back().data();
        w->dtype = dt;
        w->scale = nullptr;
        *bytes = rb * w->rows;
    }
    /* `<name>_scale_inv` (DeepSeek's name; it multiplies): (ceil(rows/128), ceil(cols/128)), F32 or BF16. */
    int32_t fp8_scale(const std::string &name, int64_t rows, int64_t cols, Weight *w, int64_t *bytes) {
        if (!m->ckpt.config().get("quantization_config"))
            return fail(ENG_STATUS_BAD_CHECKPOINT, "tensor %s is F8_E4M3 but config.json has no quantization_config",
                        name.c_str());
        const Tensor *s;
        int64_t br = (rows + kFp8Block - 1) / kFp8Block, bc = (cols + kFp8Block - 1) / kFp8Block;
        ENG_TRY(m->ckpt.require(name + "_scale_inv", {br, bc}, &s));
        if (s->dtype == DT_F8_E4M3)
            return fail(ENG_STATUS_UNSUPPORTED, "tensor %s_scale_inv: F8 scales are not supported", name.c_str());
        m->scales.emplace_back();
        to_f32(s, &m->scales.back());
        w->scale = m->scales.back().data();
        *bytes += (int64_t)s->nbytes;
        return ENG_STATUS_OK;
    }
    int32_t vec(const std::string &name, int64_t n, std::vector<float> *v) {
        const Tensor *t;
        ENG_TRY(m->ckpt.require(name, {n}, &t));
        if (t->dtype != DT_F32 && t->dtype != DT_F16 && t->dtype != DT_BF16)
            return fail(ENG_STATUS_UNSUPPORTED, "tensor %s: %s vectors are not supported (F32, F16, BF16 are)",
                        name.c_str(), dtype_name(t->dtype));
        to_f32(t, v);
        m->n_params += t->numel;
        m->n_params_active += t->numel;
        m->weight_bytes += (int64_t)t->nbytes;
        return ENG_STATUS_OK;
    }
    int32_t mlp(const std::string &p, int64_t C, int64_t I, Mlp *w) {
        ENG_TRY(matrix(p + "gate_proj.weight", I, C, &w->gate));
        ENG_TRY(matrix(p + "up_proj.weight", I, C, &w->up));
        return matrix(p + "down_proj.weight", C, I, &w->down);
    }
};

} // namespace

/* DeepseekV3Attention's tensors (q_lora_rank null: q_proj; else q_a_proj + q_a_layernorm + q_b_proj). */
static int32_t bind_mla(Binder &b, const ModelConfig &c, const std::string &p, LayerWeights *L) {
    int64_t C = c.n_embd, H = c.n_head, R = c.kv_lora_rank, Dr = c.qk_rope_dim, Dn = c.qk_nope_dim, Dv = c.v_head_dim;
    int64_t qd = H * (Dn + Dr);
    if (c.q_lora_rank > 0) {
        ENG_TRY(b.matrix(p + "self_attn.q_a_proj.weight", c.q_lora_rank, C, &L->wq_a));
        ENG_TRY(b.vec(p + "self_attn.q_a_layernorm.weight", c.q_lora_rank, &L->q_a_norm));
        ENG_TRY(b.matrix(p + "self_attn.q_b_proj.weight", qd, c.q_lora_rank, &L->wq_b));
    } else {
        ENG_TRY(b.matrix(p + "self_attn.q_proj.weight", qd, C, &L->wq));
    }
    ENG_TRY(b.matrix(p + "self_attn.kv_a_proj_with_mqa.weight", R + Dr, C, &L->wkv_a));
    ENG_TRY(b.vec(p + "self_attn.kv_a_layernorm.weight", R, &L->kv_a_norm));
    ENG_TRY(b.matrix(p + "self_attn.kv_b_proj.weight", H * (Dn + Dv), R, &L->wkv_b));
    return b.matrix(p + "self_attn.o_proj.weight", C, H * Dv, &L->wo);
}

static int32_t bind_attention(Binder &b, const ModelConfig &c, const std::string &p, LayerWeights *L) {
    int64_t C = c.n_embd, qd = (int64_t)c.n_head * c.head_dim, kvd = (int64_t)c.n_head_kv * c.head_dim;
    ENG_TRY(b.matrix(p + "self_attn.q_proj.weight", qd, C, &L->wq));
    ENG_TRY(b.matrix(p + "self_attn.k_proj.weight", kvd, C, &L->wk));
    ENG_TRY(b.matrix(p + "self_attn.v_proj.weight", kvd, C, &L->wv));
    ENG_TRY(b.matrix(p + "self_attn.o_proj.weight", C, qd, &L->wo));
    if (c.has_qkv_bias) {
        ENG_TRY(b.vec(p + "self_attn.q_proj.bias", qd, &L->bq));
        ENG_TRY(b.vec(p + "self_attn.k_proj.bias", kvd, &L->bk));
        ENG_TRY(b.vec(p + "self_attn.v_proj.bias", kvd, &L->bv));
    }
    if (c.has_o_bias) ENG_TRY(b.vec(p + "self_attn.o_proj.bias", C, &L->bo));
    if (c.has_qk_norm) {
        ENG_TRY(b.vec(p + "self_attn.q_norm.weight", c.head_dim, &L->q_norm));
        ENG_TRY(b.vec(p + "self_attn.k_norm.weight", c.head_dim, &L->k_norm));
    }
    return ENG_STATUS_OK;
}

/* A MoE layer's mlp: router (gate.weight, gate.e_score_correction_bias), experts, shared experts.
 * Routed experts count toward n_params only; model_load adds K/E of them to the active counts. */
static int32_t bind_moe(Binder &b, const ModelConfig &c, const std::string &p, LayerWeights *L) {
    int64_t C = c.n_embd;
    ENG_TRY(b.matrix(p + "mlp.gate.weight", c.n_expert, C, &L->router));
    if (c.is_softmax_router) L->router_bias.assign((size_t)c.n_expert, 0.0f); // Qwen3-MoE: no selection bias
    else ENG_TRY(b.vec(p + "mlp.gate.e_score_correction_bias", c.n_expert, &L->router_bias));
    L->experts.resize((size_t)c.n_expert);
    b.is_counted = false;
    for (int e = 0; e < c.n_expert; e++) {
        int32_t st = b.mlp(p + "mlp.experts." + std::to_string(e) + ".", C, c.n_ff_expert, &L->experts[(size_t)e]);
        if (st < 0) {
            b.is_counted = true;
            return st;
        }
    }
    b.is_counted = true;
    if (c.n_ff_shared > 0) ENG_TRY(b.mlp(p + "mlp.shared_experts.", C, c.n_ff_shared, &L->shared));
    return ENG_STATUS_OK;
}

static int32_t bind_layer(Binder &b, const ModelConfig &c, const std::string &lm, int i, LayerWeights *L) {
    std::string p = lm + "layers." + std::to_string(i) + ".";
    int64_t C = c.n_embd, I = c.n_ff;
    ENG_TRY(b.vec(p + "input_layernorm.weight", C, &L->attn_norm));
    ENG_TRY(b.vec(p + "post_attention_layernorm.weight", C, &L->mlp_norm));
    if (c.is_mla()) ENG_TRY(bind_mla(b, c, p, L));
    else ENG_TRY(bind_attention(b, c, p, L));
    if (c.has_sandwich_norms) {
        ENG_TRY(b.vec(p + "post_self_attn_layernorm.weight", C, &L->post_attn_norm));
        ENG_TRY(b.vec(p + "post_mlp_layernorm.weight", C, &L->post_mlp_norm));
    }
    if (c.is_moe_layer(i)) return bind_moe(b, c, p, L);
    if (c.arch == ARCH_GLM4 || c.arch == ARCH_GLM4V) {
        ENG_TRY(b.matrix(p + "mlp.gate_up_proj.weight", 2 * I, C, &L->w_gate_up));
    } else {
        ENG_TRY(b.matrix(p + "mlp.gate_proj.weight", I, C, &L->w_gate));
        ENG_TRY(b.matrix(p + "mlp.up_proj.weight", I, C, &L->w_up));
    }
    ENG_TRY(b.matrix(p + "mlp.down_proj.weight", C, I, &L->w_down));
    if (c.has_mlp_bias) {
        ENG_TRY(b.vec(p + "mlp.gate_proj.bias", I, &L->b_gate));
        ENG_TRY(b.vec(p + "mlp.up_proj.bias", I, &L->b_up));
        ENG_TRY(b.vec(p + "mlp.down_proj.bias", C, &L->b_down));
    }
    return ENG_STATUS_OK;
}

/* The first MTP layer, model.layers.{n_layer}.*, as DeepSeek-V3 and GLM-4.5 publish it (Hugging Face
 * transformers skips these layers; the layout is that of vLLM's deepseek_mtp.py / glm4_moe_mtp.py and
 * SGLang's deepseek_nextn.py): enorm, hnorm, eh_proj (C, 2C), the decoder layer's usual tensors,
 * shared_head.norm, and optionally shared_head.head and embed_tokens (absent: the model's lm_head and
 * embedding). A checkpoint without num_nextn_predict_layers or without eh_proj has none (the MoE
 * golden fixtures hold a few stray MTP norms); one with eh_proj but missing a tensor is BAD_CHECKPOINT.
 * A dense GLM-4-0414 checkpoint may carry one too, its decoder layer a GLM-4 layer with its four norms:
 * the demo model's, trained on the frozen model by scripts/demo-model/mtp.py (no published GLM-4 has one). */
static int32_t bind_mtp(Binder &b, Model *m, const std::string &lm) {
    const ModelConfig &c = m->cfg;
    const JsonValue *n = field(m->ckpt.config(), "num_nextn_predict_layers");
    std::string p = lm + "layers." + std::to_string(c.n_layer) + ".";
    if (!n || !n->is_integer || n->integer < 1 || !m->ckpt.find(p + "eh_proj.weight")) return ENG_STATUS_OK;
    if (c.arch != ARCH_GLM4_MOE && c.arch != ARCH_DEEPSEEK_V3 && c.arch != ARCH_GLM4) return ENG_STATUS_OK;
    int64_t params = m->n_params, active = m->n_params_active, bytes = m->weight_bytes;
    MtpLayer t;
    int64_t C = c.n_embd;
    ENG_TRY(b.vec(p + "enorm.weight", C, &t.enorm));
    ENG_TRY(b.vec(p + "hnorm.weight", C, &t.hnorm));
    ENG_TRY(b.matrix(p + "eh_proj.weight", C, 2 * C, &t.eh_proj));
    ENG_TRY(bind_layer(b, c, lm, c.n_layer, &t.layer));
    ENG_TRY(b.vec(p + "shared_head.norm.weight", C, &t.head_norm));
    if (m->ckpt.find(p + "shared_head.head.weight"))
        ENG_TRY(b.matrix(p + "shared_head.head.weight", c.n_vocab, C, &t.head));
    else t.head = m->lm_head;
    if (m->ckpt.find(p + "embed_tokens.weight")) ENG_TRY(b.matrix(p + "embed_tokens.weight", c.n_vocab, C, &t.embed));
    else t.embed = m->embed;
    m->mtp.push_back(std::move(t));
    m->n_params = params;
    m->n_params_active = active;
    m->weight_bytes = bytes;
    return ENG_STATUS_OK;
}

/* Bytes and parameters of one routed expert (scales included in the bytes). */
static void expert_size(const Mlp &e, int64_t *params, int64_t *bytes) {
    *params = 0;
    *bytes = 0;
    for (const Weight *w : {&e.gate, &e.up, &e.down}) {
        int64_t n = (int64_t)w->rows * w->cols;
        *params += n;
        *bytes += w->rows * dtype_row_bytes(w->dtype, w->cols);
        if (w->dtype == DT_Q8) *bytes += n / 32 * 4;
        else if (w->scale)
            *bytes += (int64_t)((w->rows + kFp8Block - 1) / kFp8Block) * ((w->cols + kFp8Block - 1) / kFp8Block) * 4;
    }
}

int32_t model_load(const std::string &dir, Model *m) {
    ENG_TRY(m->ckpt.open(dir));
    ENG_TRY(model_config_parse(m->ckpt.config(), &m->cfg));
    // GGUF llama: llama.cpp's converter stores q/k rows in adjacent-pair order (gguf.cpp); rotating
    // adjacent pairs undoes it.
    if (m->ckpt.is_qk_permuted()) m->cfg.is_rope_interleaved = true;
    // GGUF llama: Llama-3 RoPE scaling as per-pair divisors (gguf.cpp checked arch, type and shape).
    if (m->ckpt.is_gguf() && m->ckpt.find("rope_freqs.weight")) {
        const Tensor *t = nullptr;
        ENG_TRY(m->ckpt.require("rope_freqs.weight", {m->cfg.rotary_dim / 2}, &t));
        if (t->dtype != DT_F32) return fail(ENG_STATUS_UNSUPPORTED, "rope_freqs.weight is not F32");
        m->cfg.rope_freq_divisors.assign((const float *)t->data, (const float *)t->data + m->cfg.rotary_dim / 2);
    }
    const ModelConfig &c = m->cfg;
    Binder b{m};
    // GLM-4.1V: model.language_model.* (transformers >= 4.52), or model.* as older saves name it.
    bool vision = c.arch == ARCH_GLM4V || c.arch == ARCH_GLM4V_MOE;
    std::string lm =
        vision && m->ckpt.find("model.language_model.embed_tokens.weight") ? "model.language_model." : "model.";
    ENG_TRY(b.matrix(lm + "embed_tokens.weight", c.n_vocab, c.n_embd, &m->embed));
    // Only one embedding row is read per token; count the rest as parameters, not bytes read.
    int64_t embed_row = dtype_row_bytes(m->embed.dtype, c.n_embd) + (m->embed.dtype == DT_Q8 ? c.n_embd / 32 * 4 : 0);
    m->weight_bytes -= (int64_t)c.n_vocab * embed_row;
    m->weight_bytes += embed_row;
    ENG_TRY(b.vec(lm + "norm.weight", c.n_embd, &m->final_norm));
    if (c.is_tied) {
        m->lm_head = m->embed;
        m->weight_bytes += (int64_t)c.n_vocab * embed_row;
    } else {
        ENG_TRY(b.matrix("lm_head.weight", c.n_vocab, c.n_embd, &m->lm_head));
    }
    m->layers.resize((size_t)c.n_layer);
    for (int i = 0; i < c.n_layer; i++) {
        LayerWeights &L = m->layers[(size_t)i];
        ENG_TRY(bind_layer(b, c, lm, i, &L));
        if (!L.experts.empty()) { // a token reads K routed experts (all the same size)
            int64_t params, bytes;
            expert_size(L.experts[0], &params, &bytes);
            m->n_params_active += params * c.n_expert_used;
            m->weight_bytes += bytes * c.n_expert_used;
        }
    }
    ENG_TRY(bind_mtp(b, m, lm));
    if (vision) ENG_TRY(vision_load(m)); // adds its parameters to n_params only
    return ENG_STATUS_OK;
}

WeightArena::~WeightArena() {
    if (map_) munmap(map_, map_len_);
}

int32_t WeightArena::reserve(size_t bytes) {
    const size_t huge = (size_t)2 << 20;
    size_t len = (bytes + huge - 1) / huge * huge;
    void *p = mmap(nullptr, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return fail(ENG_STATUS_OUT_OF_MEMORY, "cannot map %zu bytes for the weights", len);
    map_ = p;
    map_len_ = len + huge;
    base_ = (char *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
    len_ = len;
    used_ = 0;
    madvise(base_, len_, MADV_HUGEPAGE); // advice: without THP support the copy still works
    return ENG_STATUS_OK;
}

void *WeightArena::take(size_t bytes) {
    void *p = base_ + used_;
    used_ += (bytes + 63) & ~(size_t)63;
    return p;
}

namespace {

/* Every matrix of the text model, in a stable order (aliases appear twice). */
std::vector<Weight *> model_matrices(Model *m) {
    std::vector<Weight *> ws = {&m->embed, &m->lm_head};
    std::vector<LayerWeights *> layers;
    for (LayerWeights &L : m->layers) layers.push_back(&L);
    for (MtpLayer &t : m->mtp) {
        for (Weight *w : {&t.eh_proj, &t.embed, &t.head}) ws.push_back(w);
        layers.push_back(&t.layer);
    }
    for (LayerWeights *lp : layers) {
        LayerWeights &L = *lp;
        for (Weight *w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate_up, &L.w_gate, &L.w_up, &L.w_down, &L.wq_a, &L.wq_b,
                          &L.wkv_a, &L.wkv_b, &L.router, &L.shared.gate, &L.shared.up, &L.shared.down})
            ws.push_back(w);
        for (Mlp &e : L.experts)
            for (Weight *w : {&e.gate, &e.up, &e.down}) ws.push_back(w);
    }
    return ws;
}

size_t matrix_bytes(const Weight &w) { return (size_t)w.rows * (size_t)dtype_row_bytes(w.dtype, w.cols); }
// Q8 scales are as large a stream as an eighth of the weights: they move with them. FP8 block
// scales (one float per 16K weights) stay where they are.
size_t q8_scale_bytes(const Weight &w) { return w.dtype == DT_Q8 ? (size_t)w.rows * (size_t)(w.cols / 32) * 4 : 0; }

} // namespace

int32_t model_place_weights(Model *m, int64_t max_bytes, bool *placed) {
    *placed = m->arena.is_used();
    if (*placed) return ENG_STATUS_OK;
    std::vector<Weight *> ws = model_matrices(m);
    std::unordered_map<const void *, std::pair<const void *, const float *>> moved; // old data -> new data, scale
    size_t total = 0;
    for (Weight *w : ws) {
        if (!w->data || moved.count(w->data)) continue;
        moved[w->data] = {nullptr, nullptr};
        total += ((matrix_bytes(*w) + 63) & ~(size_t)63) + ((q8_scale_bytes(*w) + 63) & ~(size_t)63);
    }
    if (total == 0 || (int64_t)total > max_bytes) return ENG_STATUS_OK;
    if (m->arena.reserve(total) != ENG_STATUS_OK) { // the copy only speeds reading: go on without it
        clear_error();
        return ENG_STATUS_OK;
    }
    for (Weight *w : ws) {
        if (!w->data) continue;
        auto &dst = moved[w->data];
        if (!dst.first) {
            void *d = m->arena.take(matrix_bytes(*w));
            memcpy(d, w->data, matrix_bytes(*w));
            dst.first = d;
            if (w->dtype == DT_Q8) {
                float *sc = (float *)m->arena.take(q8_scale_bytes(*w));
                memcpy(sc, w->scale, q8_scale_bytes(*w));
                dst.second = sc;
            } else dst.second = w->scale;
        }
        w->data = dst.first;
        w->scale = dst.second;
    }
    // The Q8 buffers are copied: release them (their scales too; FP8 scales stay referenced).
    std::vector<std::vector<int8_t>>().swap(m->q8);
    if (m->is_q8_built) {
        std::unordered_set<const float *> used;
        for (Weight *w : ws) used.insert(w->scale);
        std::vector<std::vector<float>> keep;
        for (auto &sc : m->scales)
            if (used.count(sc.data())) keep.push_back(std::move(sc)); // moving a vector keeps its buffer
        m->scales.swap(keep);
    }
    // The file mapping's pages read by the copy would stay resident beside it: drop them (a later
    // touch reads the file again), so the process holds the weights once.
    m->ckpt.release_pages();
    *placed = true;
    return ENG_STATUS_OK;
}

void model_check_f8(Model *m) {
    for (Weight *w : model_matrices(m)) {
        if (w->dtype != DT_F8_E4M3 || w->is_f8_finite || !w->data) continue;
        const uint8_t *p = (const uint8_t *)w->data;
        size_t n = (size_t)w->rows * (size_t)w->cols;
        uint8_t nan = 0;
        for (size_t i = 0; i < n; i++) nan |= (uint8_t)((p[i] & 0x7F) == 0x7F);
        w->is_f8_finite = nan == 0;
    }
}

} // namespace maya
