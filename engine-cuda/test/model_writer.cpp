/* model_writer.cpp: random checkpoints in the safetensors layout (8-byte LE header length, JSON
 * header with dtype/shape/data_offsets, raw little-endian data). */
#include "model_writer.h"

#include <algorithm>

#include <math.h>
#include <stdio.h>
#include <string.h>

namespace {

struct Gen {
    uint64_t s;
    float next() { // uniform in [-1, 1)
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return (float)((s >> 40) * (1.0 / 8388608.0)) - 1.0f;
    }
};

uint16_t to_bf16(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return (uint16_t)((b + 0x7FFF + ((b >> 16) & 1)) >> 16);
}

uint16_t to_f16(float f) { // normal range only (test values are small)
    uint32_t b;
    memcpy(&b, &f, 4);
    uint32_t sign = (b >> 16) & 0x8000;
    int32_t exp = (int32_t)((b >> 23) & 0xFF) - 127 + 15;
    uint32_t mant = b & 0x7FFFFF;
    if (exp <= 0) return (uint16_t)sign;
    if (exp >= 31) return (uint16_t)(sign | 0x7C00);
    uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
    if ((mant >> 12) & 1) h++; // round half up
    return (uint16_t)h;
}

RawTensor make(const std::string &name, std::vector<int64_t> shape, const std::string &dtype, Gen &g, float scale,
               float offset) {
    RawTensor t{name, dtype, shape, {}};
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    size_t es = dtype == "F32" ? 4 : 2;
    t.bytes.resize((size_t)n * es);
    for (int64_t i = 0; i < n; i++) {
        float v = offset + scale * g.next();
        if (dtype == "F32") memcpy(&t.bytes[(size_t)i * 4], &v, 4);
        else {
            uint16_t h = dtype == "BF16" ? to_bf16(v) : to_f16(v);
            memcpy(&t.bytes[(size_t)i * 2], &h, 2);
        }
    }
    return t;
}

} // namespace

bool write_text(const std::string &path, const std::string &text) {
    FILE *f = fopen(path.c_str(), "wb");
    if (!f) return false;
    bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
    return fclose(f) == 0 && ok;
}

namespace {

struct TensorHead {
    const std::string *name, *dtype;
    const std::vector<int64_t> *shape;
    uint64_t n_bytes;
};

/* Opens path and writes the safetensors header of tensors stored in this order; null on an I/O error. */
FILE *open_safetensors(const std::string &path, const std::vector<TensorHead> &tensors) {
    std::string h = "{";
    uint64_t off = 0;
    for (size_t i = 0; i < tensors.size(); i++) {
        const TensorHead &t = tensors[i];
        h += (i ? "," : "") + std::string("\"") + *t.name + "\":{\"dtype\":\"" + *t.dtype + "\",\"shape\":[";
        for (size_t d = 0; d < t.shape->size(); d++) h += (d ? "," : "") + std::to_string((*t.shape)[d]);
        h += "],\"data_offsets\":[" + std::to_string(off) + "," + std::to_string(off + t.n_bytes) + "]}";
        off += t.n_bytes;
    }
    h += "}";
    while (h.size() % 8) h += ' ';
    FILE *f = fopen(path.c_str(), "wb");
    if (!f) return nullptr;
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)h.size() >> (8 * i));
    if (fwrite(len, 1, 8, f) != 8 || fwrite(h.data(), 1, h.size(), f) != h.size()) {
        fclose(f);
        return nullptr;
    }
    return f;
}

} // namespace

bool write_safetensors(const std::string &path, const std::vector<RawTensor> &tensors) {
    std::vector<TensorHead> heads;
    for (const RawTensor &t : tensors) heads.push_back({&t.name, &t.dtype, &t.shape, (uint64_t)t.bytes.size()});
    FILE *f = open_safetensors(path, heads);
    if (!f) return false;
    bool ok = true;
    for (const RawTensor &t : tensors) ok = ok && fwrite(t.bytes.data(), 1, t.bytes.size(), f) == t.bytes.size();
    return fclose(f) == 0 && ok;
}

RandomModelSpec scheduler_model_spec(const std::string &dtype, uint64_t seed) {
    RandomModelSpec s;
    s.vocab = 97;
    s.hidden = 48;
    s.layers = 2;
    s.heads = 4;
    s.kv_heads = 2;
    s.head_dim = 12;
    s.ffn = 64;
    s.max_pos = 512;
    s.dtype = dtype;
    s.seed = seed;
    return s;
}

std::vector<TensorSpec> random_model_tensors(const RandomModelSpec &s) {
    bool glm = s.arch == "Glm4ForCausalLM", qwen = s.arch == "Qwen3ForCausalLM";
    std::vector<TensorSpec> ts;
    int64_t C = s.hidden, qd = (int64_t)s.heads * s.head_dim, kvd = (int64_t)s.kv_heads * s.head_dim, I = s.ffn;
    float ws = 1.0f / sqrtf((float)C), ds = 1.0f / sqrtf((float)I);
    ts.push_back({"model.embed_tokens.weight", {s.vocab, C}, 1.0f, 0});
    for (int l = 0; l < s.layers; l++) {
        std::string p = "model.layers." + std::to_string(l) + ".";
        ts.push_back({p + "input_layernorm.weight", {C}, 0.1f, 1.0f});
        ts.push_back({p + "post_attention_layernorm.weight", {C}, 0.1f, 1.0f});
        ts.push_back({p + "self_attn.q_proj.weight", {qd, C}, ws, 0});
        ts.push_back({p + "self_attn.k_proj.weight", {kvd, C}, ws, 0});
        ts.push_back({p + "self_attn.v_proj.weight", {kvd, C}, ws, 0});
        ts.push_back({p + "self_attn.o_proj.weight", {C, qd}, 1.0f / sqrtf((float)qd), 0});
        if (glm) {
            ts.push_back({p + "self_attn.q_proj.bias", {qd}, 0.1f, 0});
            ts.push_back({p + "self_attn.k_proj.bias", {kvd}, 0.1f, 0});
            ts.push_back({p + "self_attn.v_proj.bias", {kvd}, 0.1f, 0});
            ts.push_back({p + "post_self_attn_layernorm.weight", {C}, 0.1f, 1.0f});
            ts.push_back({p + "post_mlp_layernorm.weight", {C}, 0.1f, 1.0f});
            ts.push_back({p + "mlp.gate_up_proj.weight", {2 * I, C}, ws, 0});
        } else {
            ts.push_back({p + "mlp.gate_proj.weight", {I, C}, ws, 0});
            ts.push_back({p + "mlp.up_proj.weight", {I, C}, ws, 0});
        }
        if (qwen) {
            ts.push_back({p + "self_attn.q_norm.weight", {s.head_dim}, 0.1f, 1.0f});
            ts.push_back({p + "self_attn.k_norm.weight", {s.head_dim}, 0.1f, 1.0f});
        }
        ts.push_back({p + "mlp.down_proj.weight", {C, I}, ds, 0});
    }
    ts.push_back({"model.norm.weight", {C}, 0.1f, 1.0f});
    if (!s.tied) ts.push_back({"lm_head.weight", {s.vocab, C}, ws, 0});
    return ts;
}

static bool write_config(const std::string &dir, const RandomModelSpec &s) {
    bool glm = s.arch == "Glm4ForCausalLM";
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "{\"architectures\": [\"%s\"], \"vocab_size\": %d, \"hidden_size\": %d, \"num_hidden_layers\": %d,\n"
             " \"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"head_dim\": %d, \"intermediate_size\": %d,\n"
             " \"max_position_embeddings\": %d, \"rms_norm_eps\": 1e-5, \"rope_theta\": 10000.0,\n"
             " \"tie_word_embeddings\": %s, \"attention_bias\": %s, \"partial_rotary_factor\": %s, \"hidden_act\": "
             "\"silu\"}\n",
             s.arch.c_str(), s.vocab, s.hidden, s.layers, s.heads, s.kv_heads, s.head_dim, s.ffn, s.max_pos,
             s.tied ? "true" : "false", glm ? "true" : "false", glm ? "0.5" : "1.0");
    return write_text(dir + "/config.json", cfg);
}

bool write_random_model(const std::string &dir, const RandomModelSpec &s) {
    if (!write_config(dir, s)) return false;
    Gen g{s.seed * 0x9E3779B97F4A7C15ull + 1};
    std::vector<RawTensor> ts;
    for (const TensorSpec &t : random_model_tensors(s))
        ts.push_back(make(t.name, t.shape, s.dtype, g, t.scale, t.offset));
    return write_safetensors(dir + "/model.safetensors", ts);
}

bool write_random_model_streamed(const std::string &dir, const RandomModelSpec &s) {
    if (!write_config(dir, s)) return false;
    std::vector<TensorSpec> specs = random_model_tensors(s);
    size_t es = s.dtype == "F32" ? 4 : 2;
    std::vector<TensorHead> heads;
    for (const TensorSpec &t : specs) {
        uint64_t n = es;
        for (int64_t d : t.shape) n *= (uint64_t)d;
        heads.push_back({&t.name, &s.dtype, &t.shape, n});
    }
    FILE *f = open_safetensors(dir + "/model.safetensors", heads);
    if (!f) return false;
    // One pool of values per (scale, offset), repeated through each tensor of that range.
    const int64_t pool_n = (int64_t)1 << 22;
    std::vector<std::pair<std::pair<float, float>, RawTensor>> pools;
    Gen g{s.seed * 0x9E3779B97F4A7C15ull + 1};
    bool ok = true;
    for (size_t i = 0; ok && i < specs.size(); i++) {
        const TensorSpec &t = specs[i];
        const RawTensor *pool = nullptr;
        for (const auto &p : pools)
            if (p.first == std::make_pair(t.scale, t.offset)) pool = &p.second;
        if (!pool) {
            pools.push_back({{t.scale, t.offset}, make("pool", {pool_n}, s.dtype, g, t.scale, t.offset)});
            pool = &pools.back().second;
        }
        for (uint64_t left = heads[i].n_bytes; ok && left > 0;) {
            size_t take = (size_t)std::min<uint64_t>(left, pool->bytes.size());
            ok = fwrite(pool->bytes.data(), 1, take, f) == take;
            left -= take;
        }
    }
    return fclose(f) == 0 && ok;
}
