/* model.cpp: config.json hyperparameters and weight binding per architecture.
 *
 * Config field names and tensor names are those of Hugging Face transformers'
 * configuration_/modeling_{glm4,llama,qwen3}.py; defaults follow those configs where a field is
 * absent (e.g. Glm4Config partial_rotary_factor 0.5, head_dim 128, attention_bias true).
 */
#include "model.h"

#include <math.h>
#include <string.h>

#include "common.h" // defines: fail, ENG_TRY

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
    if (!v) { *out = def; return ENG_STATUS_OK; }
    if (v->kind != JsonValue::NUMBER) return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: %s is not a number", key);
    *out = v->number;
    return ENG_STATUS_OK;
}

static bool get_bool(const JsonValue &c, const char *key, bool def) {
    const JsonValue *v = field(c, key);
    return (v && v->kind == JsonValue::BOOL) ? v->boolean : def;
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
    if (t != "llama3") return fail(ENG_STATUS_UNSUPPORTED, "config.json: rope scaling type %s is not supported", t.c_str());
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

int32_t model_config_parse(const JsonValue &c, ModelConfig *m) {
    const JsonValue *archs = field(c, "architectures");
    if (!archs || archs->kind != JsonValue::ARRAY || archs->items.empty() ||
        archs->items[0].kind != JsonValue::STRING)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: missing architectures");
    const std::string &a = archs->items[0].string;
    if (a == "Glm4ForCausalLM") m->arch = ARCH_GLM4;
    else if (a == "LlamaForCausalLM") m->arch = ARCH_LLAMA;
    else if (a == "Qwen3ForCausalLM") m->arch = ARCH_QWEN3;
    else return fail(ENG_STATUS_UNSUPPORTED, "unsupported architecture %s (supported: Glm4ForCausalLM, LlamaForCausalLM, Qwen3ForCausalLM)", a.c_str());

    ENG_TRY(get_int(c, "vocab_size", 0, &m->n_vocab, true));
    ENG_TRY(get_int(c, "hidden_size", 0, &m->n_embd, true));
    ENG_TRY(get_int(c, "num_hidden_layers", 0, &m->n_layer, true));
    ENG_TRY(get_int(c, "num_attention_heads", 0, &m->n_head, true));
    ENG_TRY(get_int(c, "num_key_value_heads", m->n_head, &m->n_head_kv, false));
    ENG_TRY(get_int(c, "intermediate_size", 0, &m->n_ff, true));
    ENG_TRY(get_int(c, "max_position_embeddings", 2048, &m->max_pos, false));
    if (m->n_head <= 0 || m->n_embd <= 0 || m->n_layer <= 0 || m->n_vocab <= 0 || m->n_ff <= 0 || m->n_head_kv <= 0)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: sizes must be positive");
    int64_t def_head_dim = m->arch == ARCH_LLAMA ? m->n_embd / m->n_head : 128;
    ENG_TRY(get_int(c, "head_dim", def_head_dim, &m->head_dim, false));
    if (m->head_dim <= 0 || m->n_head % m->n_head_kv != 0)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: head_dim %d, heads %d / kv heads %d are inconsistent",
                    m->head_dim, m->n_head, m->n_head_kv);
    double eps = 0, partial = 0;
    ENG_TRY(get_float(c, "rms_norm_eps", m->arch == ARCH_GLM4 ? 1.5625e-07 : 1e-6, &eps));
    m->rms_eps = (float)eps;
    const JsonValue *rp = field(c, "rope_parameters");
    double def_partial = m->arch == ARCH_GLM4 ? 0.5 : 1.0;
    if (rp) ENG_TRY(get_float(*rp, "partial_rotary_factor", def_partial, &def_partial));
    ENG_TRY(get_float(c, "partial_rotary_factor", def_partial, &partial));
    if (partial <= 0 || partial > 1) return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: partial_rotary_factor %g", partial);
    m->rotary_dim = (int32_t)(m->head_dim * partial);
    if (m->rotary_dim < 2 || m->rotary_dim % 2 != 0)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: rotary dims %d must be even and >= 2", m->rotary_dim);
    if (m->arch != ARCH_GLM4 && m->rotary_dim != m->head_dim)
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: partial_rotary_factor %g is only supported for GLM-4", partial);
    ENG_TRY(parse_rope(c, m));

    m->is_tied = get_bool(c, "tie_word_embeddings", false);
    bool attn_bias = get_bool(c, "attention_bias", m->arch == ARCH_GLM4);
    m->has_qkv_bias = attn_bias;
    m->has_o_bias = m->arch != ARCH_GLM4 && attn_bias; // GLM-4's o_proj never has a bias
    m->has_mlp_bias = m->arch == ARCH_LLAMA && get_bool(c, "mlp_bias", false);
    m->has_qk_norm = m->arch == ARCH_QWEN3;
    m->has_sandwich_norms = m->arch == ARCH_GLM4;
    m->is_rope_interleaved = m->arch == ARCH_GLM4;
    if (get_bool(c, "use_sliding_window", false)) // Qwen2/3 configs carry it, normally false
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: use_sliding_window is not supported");
    const JsonValue *act = field(c, "hidden_act");
    if (act && act->kind == JsonValue::STRING && act->string != "silu")
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: hidden_act %s is not supported (silu only)", act->string.c_str());
    return ENG_STATUS_OK;
}

static float half_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
    if (exp == 0) {
        if (mant == 0) bits = sign;
        else { // subnormal: renormalise
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) { mant <<= 1; exp--; }
            bits = sign | (exp << 23) | ((mant & 0x3FF) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else {
        bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

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

namespace {

struct Binder {
    Model *m;
    int32_t matrix(const std::string &name, int64_t rows, int64_t cols, Weight *w) {
        const Tensor *t;
        ENG_TRY(m->ckpt.require(name, {rows, cols}, &t));
        w->data = t->data;
        w->dtype = t->dtype;
        w->rows = (int32_t)rows;
        w->cols = (int32_t)cols;
        m->n_params += t->numel;
        m->weight_bytes += (int64_t)t->nbytes;
        return ENG_STATUS_OK;
    }
    int32_t vec(const std::string &name, int64_t n, std::vector<float> *v) {
        const Tensor *t;
        ENG_TRY(m->ckpt.require(name, {n}, &t));
        to_f32(t, v);
        m->n_params += t->numel;
        m->weight_bytes += (int64_t)t->nbytes;
        return ENG_STATUS_OK;
    }
};

} // namespace

static int32_t bind_layer(Binder &b, const ModelConfig &c, int i, LayerWeights *L) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    int64_t C = c.n_embd, qd = (int64_t)c.n_head * c.head_dim, kvd = (int64_t)c.n_head_kv * c.head_dim, I = c.n_ff;
    ENG_TRY(b.vec(p + "input_layernorm.weight", C, &L->attn_norm));
    ENG_TRY(b.vec(p + "post_attention_layernorm.weight", C, &L->mlp_norm));
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
    if (c.has_sandwich_norms) {
        ENG_TRY(b.vec(p + "post_self_attn_layernorm.weight", C, &L->post_attn_norm));
        ENG_TRY(b.vec(p + "post_mlp_layernorm.weight", C, &L->post_mlp_norm));
    }
    if (c.arch == ARCH_GLM4) {
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

int32_t model_load(const std::string &dir, Model *m) {
    ENG_TRY(m->ckpt.open(dir));
    ENG_TRY(model_config_parse(m->ckpt.config(), &m->cfg));
    const ModelConfig &c = m->cfg;
    Binder b{m};
    ENG_TRY(b.matrix("model.embed_tokens.weight", c.n_vocab, c.n_embd, &m->embed));
    // Only one embedding row is read per token; count the rest as parameters, not bytes read.
    m->weight_bytes -= (int64_t)c.n_vocab * c.n_embd * (int64_t)dtype_size(m->embed.dtype);
    m->weight_bytes += (int64_t)c.n_embd * (int64_t)dtype_size(m->embed.dtype);
    ENG_TRY(b.vec("model.norm.weight", c.n_embd, &m->final_norm));
    if (c.is_tied) {
        m->lm_head = m->embed;
        m->weight_bytes += (int64_t)c.n_vocab * c.n_embd * (int64_t)dtype_size(m->embed.dtype);
    } else {
        ENG_TRY(b.matrix("lm_head.weight", c.n_vocab, c.n_embd, &m->lm_head));
    }
    m->layers.resize((size_t)c.n_layer);
    for (int i = 0; i < c.n_layer; i++) ENG_TRY(bind_layer(b, c, i, &m->layers[(size_t)i]));
    return ENG_STATUS_OK;
}

} // namespace maya
