/* gguf.cpp: see gguf.h. Header checks follow llama.cpp's gguf_init_from_file_impl (ggml/src/gguf.cpp)
 * and its model loader (src/llama-model-loader.cpp); names and metadata keys follow llama.cpp's
 * llama-arch.cpp and convert_hf_to_gguf.py (test/fixtures/gguf/README.md lists them). */
#include "gguf.h"

#include <math.h>
#include <string.h>

#include <set>

#include "common.h"  // defines: fail, ENG_TRY
#include "kernels.h" // defines: kernels_scalar (row_to_f32 of the block dtypes)

namespace maya {

const GgufValue *GgufFile::get(const std::string &key) const {
    auto it = kv_index.find(key);
    return it == kv_index.end() ? nullptr : &kvs[it->second].second;
}

namespace {

struct TypeInfo {
    const char *name;
    int64_t block = 0, bytes = 0;
};

/* ggml_type ids 0..39 (ggml.h at llama.cpp 34af94cd); removed ids have no name. */
const TypeInfo kTypes[] = {
    {"F32", 1, 4},      {"F16", 1, 2},        {"Q4_0", 32, 18},    {"Q4_1", 32, 20},     {nullptr, 0, 0},
    {nullptr, 0, 0},    {"Q5_0", 32, 22},     {"Q5_1", 32, 24},    {"Q8_0", 32, 34},     {"Q8_1", 32, 36},
    {"Q2_K", 256, 84},  {"Q3_K", 256, 110},   {"Q4_K", 256, 144},  {"Q5_K", 256, 176},   {"Q6_K", 256, 210},
    {"Q8_K", 256, 292}, {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74}, {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50},
    {"IQ4_NL", 32, 18}, {"IQ3_S", 256, 110},  {"IQ2_S", 256, 82},  {"IQ4_XS", 256, 136}, {"I8", 1, 1},
    {"I16", 1, 2},      {"I32", 1, 4},        {"I64", 1, 8},       {"F64", 1, 8},        {"IQ1_M", 256, 56},
    {"BF16", 1, 2},     {nullptr, 0, 0},      {nullptr, 0, 0},     {nullptr, 0, 0},      {"TQ1_0", 256, 54},
    {"TQ2_0", 256, 66}, {nullptr, 0, 0},      {nullptr, 0, 0},     {nullptr, 0, 0},      {"MXFP4", 32, 17},
};
const uint32_t kTypeCount = sizeof kTypes / sizeof kTypes[0];

enum : uint32_t {
    GGML_F32 = 0,
    GGML_F16 = 1,
    GGML_Q4_0 = 2,
    GGML_Q4_1 = 3,
    GGML_Q5_0 = 6,
    GGML_Q5_1 = 7,
    GGML_Q8_0 = 8,
    GGML_Q4_K = 12,
    GGML_Q5_K = 13,
    GGML_Q6_K = 14,
    GGML_BF16 = 30
};

const char *value_type_name(uint32_t t) {
    static const char *names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                  "bool", "string", "array", "u64", "i64", "f64"};
    return t < GGUF_TYPE_COUNT ? names[t] : "unknown";
}

size_t scalar_size(uint32_t t) {
    switch (t) {
    case GGUF_U8:
    case GGUF_I8:
    case GGUF_BOOL: return 1;
    case GGUF_U16:
    case GGUF_I16: return 2;
    case GGUF_U32:
    case GGUF_I32:
    case GGUF_F32: return 4;
    case GGUF_U64:
    case GGUF_I64:
    case GGUF_F64: return 8;
    default: return 0;
    }
}

/* Bounds-checked little-endian reads over one mapped file. */
struct Reader {
    const uint8_t *base;
    size_t len, pos;
    const std::string &file;
    int32_t truncated(const char *what) const {
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: truncated GGUF file: it ends at byte %zu while reading %s",
                    file.c_str(), len, what);
    }
    size_t left() const { return len - pos; }
    int32_t bytes(void *out, size_t n, const char *what) {
        if (n > left()) return truncated(what);
        memcpy(out, base + pos, n);
        pos += n;
        return ENG_STATUS_OK;
    }
    int32_t u32(uint32_t *v, const char *what) { return bytes(v, 4, what); }
    int32_t u64(uint64_t *v, const char *what) { return bytes(v, 8, what); }
    int32_t str(std::string *s, const char *what) {
        uint64_t n = 0;
        ENG_TRY(u64(&n, what));
        if (n > left()) return truncated(what);
        if (n > ((uint64_t)1 << 30))
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: %s is a string of %llu bytes (more than 1 GiB)", file.c_str(),
                        what, (unsigned long long)n);
        s->assign((const char *)base + pos, (size_t)n);
        pos += (size_t)n;
        return ENG_STATUS_OK;
    }
};

/* One scalar of type t at r into v (integers in v->i, floats in v->number). */
int32_t read_scalar(Reader &r, uint32_t t, const char *what, GgufValue *v) {
    uint8_t b[8] = {0};
    ENG_TRY(r.bytes(b, scalar_size(t), what));
    switch (t) {
    case GGUF_U8: v->i = b[0]; break;
    case GGUF_I8: v->i = (int8_t)b[0]; break;
    case GGUF_BOOL:
        if (b[0] > 1)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: %s: a bool holds %u", r.file.c_str(), what, (unsigned)b[0]);
        v->i = b[0];
        break;
    case GGUF_U16: {
        uint16_t x;
        memcpy(&x, b, 2);
        v->i = x;
        break;
    }
    case GGUF_I16: {
        int16_t x;
        memcpy(&x, b, 2);
        v->i = x;
        break;
    }
    case GGUF_U32: {
        uint32_t x;
        memcpy(&x, b, 4);
        v->i = x;
        break;
    }
    case GGUF_I32: {
        int32_t x;
        memcpy(&x, b, 4);
        v->i = x;
        break;
    }
    case GGUF_U64: {
        uint64_t x;
        memcpy(&x, b, 8);
        v->is_big = x > (uint64_t)INT64_MAX;
        v->i = v->is_big ? INT64_MAX : (int64_t)x;
        break;
    }
    case GGUF_I64: memcpy(&v->i, b, 8); break;
    case GGUF_F32: {
        float x;
        memcpy(&x, b, 4);
        v->number = x;
        break;
    }
    case GGUF_F64: memcpy(&v->number, b, 8); break;
    default: break;
    }
    if (t != GGUF_F32 && t != GGUF_F64) v->number = (double)v->i;
    return ENG_STATUS_OK;
}

int32_t read_value(Reader &r, const std::string &key, GgufValue *v) {
    ENG_TRY(r.u32(&v->type, "a key's value type"));
    const char *k = key.c_str();
    if (v->type >= GGUF_TYPE_COUNT)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: key %s has unknown value type %u", r.file.c_str(), k, v->type);
    if (v->type == GGUF_STRING) return r.str(&v->str, k);
    if (v->type != GGUF_ARRAY) return read_scalar(r, v->type, k, v);
    ENG_TRY(r.u32(&v->arr_type, k));
    ENG_TRY(r.u64(&v->n, k));
    if (v->arr_type >= GGUF_TYPE_COUNT || v->arr_type == GGUF_ARRAY)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: key %s is an array of %s elements", r.file.c_str(), k,
                    v->arr_type == GGUF_ARRAY ? "array" : "unknown-type");
    if (v->n > ((uint64_t)1 << 30))
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: key %s is an array of %llu elements (more than 2^30)",
                    r.file.c_str(), k, (unsigned long long)v->n);
    if (v->arr_type == GGUF_STRING) {
        for (uint64_t i = 0; i < v->n; i++) {
            uint64_t n = 0;
            ENG_TRY(r.u64(&n, k));
            if (n > r.left()) return r.truncated(k);
            r.pos += (size_t)n;
        }
        return ENG_STATUS_OK;
    }
    size_t es = scalar_size(v->arr_type);
    if (v->n * es > r.left()) return r.truncated(k);
    if (v->n > kGgufKeepItems) {
        if (v->arr_type == GGUF_BOOL) // checked element by element, as a scalar bool is
            for (uint64_t i = 0; i < v->n; i++)
                if (r.base[r.pos + i] > 1)
                    return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: key %s: a bool holds %u", r.file.c_str(), k,
                                (unsigned)r.base[r.pos + i]);
        r.pos += (size_t)(v->n * es);
        return ENG_STATUS_OK;
    }
    v->nums.reserve((size_t)v->n);
    for (uint64_t i = 0; i < v->n; i++) {
        GgufValue e;
        ENG_TRY(read_scalar(r, v->arr_type, k, &e));
        v->nums.push_back(e.number);
    }
    return ENG_STATUS_OK;
}

} // namespace

const char *ggml_type_name(uint32_t type) { return type < kTypeCount ? kTypes[type].name : nullptr; }

void ggml_type_block(uint32_t type, int64_t *block, int64_t *bytes) {
    bool known = ggml_type_name(type) != nullptr;
    *block = known ? kTypes[type].block : 0;
    *bytes = known ? kTypes[type].bytes : 0;
}

int32_t gguf_parse(const uint8_t *base, size_t len, const std::string &file, int file_no, GgufFile *out) {
    Reader r{base, len, 0, file};
    const char *fn = file.c_str();
    char magic[4];
    if (len < 4) return r.truncated("the magic");
    ENG_TRY(r.bytes(magic, 4, "the magic"));
    if (memcmp(magic, "GGUF", 4) != 0)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: not a GGUF file (magic %02x %02x %02x %02x, expected \"GGUF\")", fn,
                    (unsigned)(uint8_t)magic[0], (unsigned)(uint8_t)magic[1], (unsigned)(uint8_t)magic[2],
                    (unsigned)(uint8_t)magic[3]);
    uint32_t version = 0;
    ENG_TRY(r.u32(&version, "the version"));
    if ((version & 0xFFFF) == 0)
        return fail(ENG_STATUS_UNSUPPORTED, "%s: GGUF version %08x: a big-endian file (only little-endian is read)", fn,
                    version);
    if (version < 2 || version > 3)
        return fail(ENG_STATUS_UNSUPPORTED, "%s: GGUF version %u is not supported (2 and 3 are)", fn, version);
    out->version = version;
    uint64_t n_tensors = 0, n_kv = 0;
    ENG_TRY(r.u64(&n_tensors, "the tensor count"));
    ENG_TRY(r.u64(&n_kv, "the key-value count"));
    // A key-value takes at least 13 bytes (key length, one byte of key, type, a u8), a tensor info 28.
    if (n_kv > r.left() / 13 || n_tensors > r.left() / 28)
        return fail(ENG_STATUS_BAD_CHECKPOINT,
                    "%s: truncated or corrupt GGUF header: it claims %llu tensors and %llu key-values, more than fit "
                    "in %zu bytes",
                    fn, (unsigned long long)n_tensors, (unsigned long long)n_kv, len);
    for (uint64_t i = 0; i < n_kv; i++) {
        std::string key;
        ENG_TRY(r.str(&key, "a metadata key"));
        if (key.empty())
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: metadata key %llu is empty", fn, (unsigned long long)i);
        if (out->kv_index.count(key))
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: metadata key %s appears twice", fn, key.c_str());
        GgufValue v;
        ENG_TRY(read_value(r, key, &v));
        out->kv_index[key] = out->kvs.size();
        out->kvs.emplace_back(std::move(key), std::move(v));
    }
    uint64_t alignment = 32;
    if (const GgufValue *a = out->get("general.alignment")) {
        if (a->type != GGUF_U32)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: general.alignment is %s, not u32", fn,
                        value_type_name(a->type));
        if (a->i == 0 || (a->i & (a->i - 1)) != 0)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: general.alignment %lld is not a power of two", fn,
                        (long long)a->i);
        alignment = (uint64_t)a->i;
    }
    out->alignment = alignment;
    std::set<std::string> names;
    for (const GgufTensor &t : out->tensors) names.insert(t.name);
    size_t first = out->tensors.size();
    for (uint64_t i = 0; i < n_tensors; i++) {
        GgufTensor t;
        ENG_TRY(r.str(&t.name, "a tensor name"));
        const char *tn = t.name.c_str();
        if (t.name.empty() || t.name.size() >= 64)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %llu has a name of %zu bytes (1 to 63 allowed)", fn,
                        (unsigned long long)i, t.name.size());
        if (!names.insert(t.name).second) return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s appears twice", fn, tn);
        uint32_t n_dims = 0;
        ENG_TRY(r.u32(&n_dims, tn));
        if (n_dims < 1 || n_dims > 4)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s has %u dimensions (1 to 4 allowed)", fn, tn, n_dims);
        t.n_dims = (int)n_dims;
        int64_t numel = 1;
        for (uint32_t d = 0; d < n_dims; d++) {
            uint64_t e = 0;
            ENG_TRY(r.u64(&e, tn));
            if (e > ((uint64_t)1 << 40) || (e > 0 && (uint64_t)numel > ((uint64_t)1 << 42) / e))
                return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s: extent %llu of dimension %u is out of range", fn,
                            tn, (unsigned long long)e, d);
            t.ne[d] = (int64_t)e;
            numel *= (int64_t)e;
        }
        ENG_TRY(r.u32(&t.type, tn));
        ENG_TRY(r.u64(&t.offset, tn));
        int64_t block = 0, bytes = 0;
        ggml_type_block(t.type, &block, &bytes);
        if (!block) return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s has unknown ggml type %u", fn, tn, t.type);
        if (t.ne[0] % block != 0)
            return fail(ENG_STATUS_BAD_CHECKPOINT,
                        "%s: tensor %s: row length %lld is not a multiple of %s's block of %lld", fn, tn,
                        (long long)t.ne[0], ggml_type_name(t.type), (long long)block);
        t.nbytes = (size_t)(numel / block * bytes);
        t.file = file_no;
        out->tensors.push_back(std::move(t));
    }
    // The data section: at the next multiple of the alignment after the infos.
    uint64_t data = (r.pos + alignment - 1) / alignment * alignment;
    if (data > len)
        return fail(ENG_STATUS_BAD_CHECKPOINT,
                    "%s: truncated GGUF file: the data section would start at byte %llu of %zu", fn,
                    (unsigned long long)data, len);
    uint64_t expect = 0, data_len = len - data;
    for (size_t i = first; i < out->tensors.size(); i++) {
        GgufTensor &t = out->tensors[i];
        if (t.offset % alignment != 0)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s: offset %llu is not a multiple of the alignment %llu",
                        fn, t.name.c_str(), (unsigned long long)t.offset, (unsigned long long)alignment);
        if (t.offset != expect)
            return fail(ENG_STATUS_BAD_CHECKPOINT,
                        "%s: tensor %s: offset %llu, expected %llu (tensor data must follow each other in order)", fn,
                        t.name.c_str(), (unsigned long long)t.offset, (unsigned long long)expect);
        if (t.offset > data_len || t.nbytes > data_len - t.offset)
            return fail(
                ENG_STATUS_BAD_CHECKPOINT,
                "%s: tensor %s: its data (bytes %llu to %llu of the data section) runs past the end of the file "
                "(the data section holds %llu bytes): the file is truncated or corrupt",
                fn, t.name.c_str(), (unsigned long long)t.offset, (unsigned long long)(t.offset + t.nbytes),
                (unsigned long long)data_len);
        t.data = base + data + t.offset;
        expect = t.offset + (t.nbytes + alignment - 1) / alignment * alignment;
    }
    return ENG_STATUS_OK;
}

// ---------------------------------------------------------------------------------------------
// Binding: llama.cpp names and metadata -> Hugging Face names and config.json.

namespace {

JsonValue jint(int64_t v) {
    JsonValue j;
    j.kind = JsonValue::NUMBER;
    j.is_integer = true;
    j.integer = v;
    j.number = (double)v;
    return j;
}
JsonValue jnum(double v) {
    JsonValue j;
    j.kind = JsonValue::NUMBER;
    j.number = v;
    return j;
}
JsonValue jbool(bool v) {
    JsonValue j;
    j.kind = JsonValue::BOOL;
    j.boolean = v;
    return j;
}
JsonValue jstr(const std::string &s) {
    JsonValue j;
    j.kind = JsonValue::STRING;
    j.string = s;
    return j;
}

bool is_int_type(uint32_t t) {
    return t != GGUF_F32 && t != GGUF_F64 && t != GGUF_STRING && t != GGUF_ARRAY && t != GGUF_BOOL;
}

struct Meta {
    const GgufFile &f;
    const std::string &file;
    std::string arch;
    std::string key(const char *k) const { return arch + "." + k; }
    /* An integer key (any integer type; an array whose elements are all equal, as some files give
     * per-layer head counts). has: whether present. */
    int32_t integer(const char *k, bool required, int64_t def, int64_t *out, bool *has = nullptr) const {
        std::string name = key(k);
        const GgufValue *v = f.get(name);
        if (has) *has = v != nullptr;
        if (!v) {
            if (required)
                return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: missing metadata key %s", file.c_str(), name.c_str());
            *out = def;
            return ENG_STATUS_OK;
        }
        if (v->type == GGUF_ARRAY && is_int_type(v->arr_type) && v->n > 0 && v->nums.size() == v->n) {
            for (double x : v->nums)
                if (x != v->nums[0])
                    return fail(ENG_STATUS_UNSUPPORTED, "%s: %s differs between layers, which is not supported",
                                file.c_str(), name.c_str());
            *out = (int64_t)v->nums[0];
        } else if (is_int_type(v->type) && !v->is_big) {
            *out = v->i;
        } else {
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: metadata key %s is %s, not an integer", file.c_str(),
                        name.c_str(), value_type_name(v->type));
        }
        if (*out < 0 || *out > INT32_MAX)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: metadata key %s = %lld is out of range", file.c_str(),
                        name.c_str(), (long long)*out);
        return ENG_STATUS_OK;
    }
    int32_t number(const char *k, double def, double *out, bool *has = nullptr) const {
        std::string name = key(k);
        const GgufValue *v = f.get(name);
        if (has) *has = v != nullptr;
        if (!v) {
            *out = def;
            return ENG_STATUS_OK;
        }
        if (v->type == GGUF_F32 || v->type == GGUF_F64 || (is_int_type(v->type) && !v->is_big)) {
            *out = v->number;
            return ENG_STATUS_OK;
        }
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: metadata key %s is %s, not a number", file.c_str(), name.c_str(),
                    value_type_name(v->type));
    }
    bool boolean(const char *k, bool def) const {
        const GgufValue *v = f.get(key(k));
        return v && v->type == GGUF_BOOL ? v->i != 0 : def;
    }
};

/* The HF name of a llama.cpp tensor name, for the layer part after "blk.N." (empty: not used). */
std::string layer_name(const std::string &arch, const std::string &part) {
    bool glm4 = arch == "glm4", glm4moe = arch == "glm4moe";
    static const std::pair<const char *, const char *> common[] = {
        {"attn_norm", "input_layernorm"},
        {"attn_q", "self_attn.q_proj"},
        {"attn_k", "self_attn.k_proj"},
        {"attn_v", "self_attn.v_proj"},
        {"attn_output", "self_attn.o_proj"},
        {"attn_q_norm", "self_attn.q_norm"},
        {"attn_k_norm", "self_attn.k_norm"},
        {"ffn_gate", "mlp.gate_proj"},
        {"ffn_down", "mlp.down_proj"},
        {"ffn_gate_inp", "mlp.gate"},
        {"exp_probs_b", "mlp.gate"}, // exp_probs_b.bias -> mlp.gate.e_score_correction_bias (below)
        {"ffn_gate_shexp", "mlp.shared_experts.gate_proj"},
        {"ffn_up_shexp", "mlp.shared_experts.up_proj"},
        {"ffn_down_shexp", "mlp.shared_experts.down_proj"},
        {"attn_q_a", "self_attn.q_a_proj"},
        {"attn_q_a_norm", "self_attn.q_a_layernorm"},
        {"attn_q_b", "self_attn.q_b_proj"},
        {"attn_kv_a_mqa", "self_attn.kv_a_proj_with_mqa"},
        {"attn_kv_a_norm", "self_attn.kv_a_layernorm"},
        {"attn_kv_b", "self_attn.kv_b_proj"},
    };
    // GLM-4: ffn_up holds [gate; up]; post_attention_norm / post_ffw_norm are its sandwich norms.
    // GLM-4.5: post_attention_norm is the pre-MLP norm. Everyone else: ffn_norm is.
    if (part == "ffn_up") return glm4 ? "mlp.gate_up_proj" : "mlp.up_proj";
    if (part == "ffn_norm") return "post_attention_layernorm";
    if (part == "post_attention_norm")
        return glm4 ? "post_self_attn_layernorm" : glm4moe ? "post_attention_layernorm" : "";
    if (part == "post_ffw_norm") return glm4 ? "post_mlp_layernorm" : "";
    // The MTP layer's own tensors (llama.cpp's NEXTN_*: blk.N.nextn.*), N = the main layer count.
    static const std::pair<const char *, const char *> nextn[] = {
        {"nextn.eh_proj", "eh_proj"},
        {"nextn.enorm", "enorm"},
        {"nextn.hnorm", "hnorm"},
        {"nextn.shared_head_norm", "shared_head.norm"},
        {"nextn.shared_head_head", "shared_head.head"},
        {"nextn.embed_tokens", "embed_tokens"},
    };
    for (const auto &p : nextn)
        if (part == p.first) return p.second;
    for (const auto &p : common)
        if (part == p.first) return p.second;
    return "";
}

/* The Tensor view of a GGUF tensor (shape outermost first); refuses types Maya cannot run. */
int32_t to_tensor(const GgufTensor &g, const std::string &file, Tensor *t) {
    const char *tn = ggml_type_name(g.type);
    switch (g.type) {
    case GGML_F32: t->dtype = DT_F32; break;
    case GGML_F16: t->dtype = DT_F16; break;
    case GGML_BF16: t->dtype = DT_BF16; break;
    case GGML_Q8_0: t->dtype = DT_Q8_0; break;
    case GGML_Q4_0: t->dtype = DT_Q4_0; break;
    case GGML_Q4_1: t->dtype = DT_Q4_1; break;
    case GGML_Q5_0: t->dtype = DT_Q5_0; break;
    case GGML_Q5_1: t->dtype = DT_Q5_1; break;
    case GGML_Q4_K: t->dtype = DT_Q4_K; break;
    case GGML_Q5_K: t->dtype = DT_Q5_K; break;
    case GGML_Q6_K: t->dtype = DT_Q6_K; break;
    default:
        return fail(ENG_STATUS_UNSUPPORTED,
                    "%s: tensor %s has type %s, which Maya does not run (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
                    "Q4_K, Q5_K, Q6_K are read)",
                    file.c_str(), g.name.c_str(), tn ? tn : "?");
    }
    t->dtype_str = tn;
    t->shape.clear();
    t->numel = 1;
    for (int d = g.n_dims - 1; d >= 0; d--) {
        t->shape.push_back(g.ne[d]);
        t->numel *= g.ne[d];
    }
    t->data = g.data;
    t->nbytes = g.nbytes;
    return ENG_STATUS_OK;
}

float widen(const void *p, DType dt, int64_t i) {
    if (dt == DT_F32) {
        float f;
        memcpy(&f, (const uint8_t *)p + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, (const uint8_t *)p + 2 * i, 2);
    uint32_t bits;
    if (dt == DT_BF16) bits = (uint32_t)h << 16;
    else {
        uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1F, m = h & 0x3FF;
        if (e == 0) {
            if (m == 0) bits = sign;
            else {
                e = 127 - 15 + 1;
                while (!(m & 0x400)) {
                    m <<= 1;
                    e--;
                }
                bits = sign | (e << 23) | ((m & 0x3FF) << 13);
            }
        } else if (e == 31) bits = sign | 0x7F800000u | (m << 13);
        else bits = sign | ((e - 15 + 127) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

bool is_float(DType dt) { return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16; }

/* The whole tensor t (rows of cols) in f32: float types widened, block dtypes dequantized exactly
 * as ggml's to_float does (kernels_scalar.row_to_f32). */
std::vector<float> tensor_f32(const Tensor &t, int64_t cols) {
    std::vector<float> out((size_t)t.numel);
    if (is_float(t.dtype))
        for (int64_t i = 0; i < t.numel; i++) out[(size_t)i] = widen(t.data, t.dtype, i);
    else
        for (int64_t r = 0; r < t.numel / cols; r++)
            kernels_scalar.row_to_f32(out.data() + r * cols, t.data, t.dtype, r, (int)cols, nullptr);
    return out;
}

/* DeepSeek MLA in llama.cpp's layout: attn_k_b (H, R, Dn) = each head's W_UK transposed, attn_v_b
 * (H, Dv, R) = W_UV. Rebuilds HF's kv_b_proj (H * (Dn + Dv), R): per head Dn rows of W_UK, then Dv
 * rows of W_UV. Same dtype when both are the same float type (an exact copy), else f32 (block
 * dtypes dequantized: the values the file encodes; the pair is under 1 % of a DeepSeek-V3's weights). */
int32_t build_kv_b(const Tensor &kb, const Tensor &vb, const std::string &kname, const std::string &vname,
                   GgufBound *out, Tensor *t) {
    if (kb.shape.size() != 3 || vb.shape.size() != 3 || kb.shape[0] != vb.shape[0] || kb.shape[1] != vb.shape[2])
        return fail(ENG_STATUS_BAD_CHECKPOINT, "tensors %s and %s have inconsistent shapes", kname.c_str(),
                    vname.c_str());
    int64_t H = kb.shape[0], R = kb.shape[1], Dn = kb.shape[2], Dv = vb.shape[1];
    DType dt = kb.dtype == vb.dtype && is_float(kb.dtype) ? kb.dtype : DT_F32;
    size_t es = dtype_size(dt);
    std::vector<float> kf, vf; // f32 copies when converting
    if (dt != kb.dtype) kf = tensor_f32(kb, Dn);
    if (dt != vb.dtype) vf = tensor_f32(vb, R);
    out->owned.emplace_back((size_t)(H * (Dn + Dv) * R) * es);
    uint8_t *dst = out->owned.back().data();
    for (int64_t h = 0; h < H; h++) {
        uint8_t *head = dst + (size_t)(h * (Dn + Dv) * R) * es;
        for (int64_t i = 0; i < Dn; i++)
            for (int64_t r = 0; r < R; r++) {
                int64_t src = (h * R + r) * Dn + i;
                uint8_t *d = head + (size_t)(i * R + r) * es;
                if (dt == kb.dtype) memcpy(d, (const uint8_t *)kb.data + (size_t)src * es, es);
                else memcpy(d, &kf[(size_t)src], 4);
            }
        for (int64_t j = 0; j < Dv; j++)
            for (int64_t r = 0; r < R; r++) {
                int64_t src = (h * Dv + j) * R + r;
                uint8_t *d = head + (size_t)((Dn + j) * R + r) * es;
                if (dt == vb.dtype) memcpy(d, (const uint8_t *)vb.data + (size_t)src * es, es);
                else memcpy(d, &vf[(size_t)src], 4);
            }
    }
    t->dtype = dt;
    t->dtype_str = dtype_name(dt);
    t->shape = {H * (Dn + Dv), R};
    t->numel = H * (Dn + Dv) * R;
    t->data = dst;
    t->nbytes = out->owned.back().size();
    return ENG_STATUS_OK;
}

} // namespace

int32_t gguf_bind(const GgufFile &f, const std::string &file, GgufBound *out) {
    const char *fn = file.c_str();
    const GgufValue *av = f.get("general.architecture");
    if (!av || av->type != GGUF_STRING)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: general.architecture is missing or not a string", fn);
    Meta m{f, file, av->str};
    const std::string &arch = m.arch;
    const char *hf_arch = arch == "llama"       ? "LlamaForCausalLM"
                          : arch == "qwen3"     ? "Qwen3ForCausalLM"
                          : arch == "qwen3moe"  ? "Qwen3MoeForCausalLM"
                          : arch == "glm4"      ? "Glm4ForCausalLM"
                          : arch == "glm4moe"   ? "Glm4MoeForCausalLM"
                          : arch == "deepseek2" ? "DeepseekV3ForCausalLM"
                                                : nullptr;
    if (!hf_arch)
        return fail(ENG_STATUS_UNSUPPORTED,
                    "%s: GGUF architecture %s is not supported (llama, qwen3, qwen3moe, glm4, glm4moe, deepseek2 are)",
                    fn, arch.c_str());

    // Tensors under their llama.cpp names first.
    std::unordered_map<std::string, const GgufTensor *> by_name;
    for (const GgufTensor &g : f.tensors) by_name[g.name] = &g;
    auto gtensor = [&](const std::string &n) -> const GgufTensor * {
        auto it = by_name.find(n);
        return it == by_name.end() ? nullptr : it->second;
    };
    const GgufTensor *embd = gtensor("token_embd.weight");
    if (!embd || embd->n_dims != 2)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: token_embd.weight is missing or not a matrix", fn);

    // Sizes.
    int64_t n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, n_ff = 0, ctx = 0, key_len = 0, val_len = 0,
            rope_dims = 0, nextn = 0;
    bool has_key_len = false, has_val_len = false, has_rope_dims = false, has_heads_kv = false;
    ENG_TRY(m.integer("block_count", true, 0, &n_layer));
    ENG_TRY(m.integer("embedding_length", true, 0, &n_embd));
    ENG_TRY(m.integer("attention.head_count", true, 0, &n_head));
    ENG_TRY(m.integer("attention.head_count_kv", false, n_head, &n_head_kv, &has_heads_kv));
    ENG_TRY(m.integer("feed_forward_length", arch != "qwen3moe", 0, &n_ff));
    ENG_TRY(m.integer("context_length", false, 2048, &ctx));
    ENG_TRY(m.integer("attention.key_length", false, 0, &key_len, &has_key_len));
    ENG_TRY(m.integer("attention.value_length", false, 0, &val_len, &has_val_len));
    ENG_TRY(m.integer("rope.dimension_count", false, 0, &rope_dims, &has_rope_dims));
    if (arch == "glm4moe" || arch == "deepseek2") ENG_TRY(m.integer("nextn_predict_layers", false, 0, &nextn));
    if (n_layer <= nextn || n_embd <= 0 || n_head <= 0)
        return fail(ENG_STATUS_BAD_CHECKPOINT,
                    "%s: block_count %lld, embedding_length %lld, head_count %lld are not valid", fn,
                    (long long)n_layer, (long long)n_embd, (long long)n_head);
    double eps, theta;
    ENG_TRY(m.number("attention.layer_norm_rms_epsilon", 1e-6, &eps));
    ENG_TRY(m.number("rope.freq_base", 10000.0, &theta));

    // The vocabulary: the tokenizer's token list and the embedding must agree.
    int64_t n_vocab = embd->ne[1];
    if (embd->ne[0] != n_embd)
        return fail(ENG_STATUS_BAD_CHECKPOINT,
                    "%s: token_embd.weight has rows of %lld, but %s.embedding_length is %lld", fn,
                    (long long)embd->ne[0], arch.c_str(), (long long)n_embd);
    const GgufValue *toks = f.get("tokenizer.ggml.tokens");
    if (toks && (toks->type != GGUF_ARRAY || toks->arr_type != GGUF_STRING))
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tokenizer.ggml.tokens is not an array of strings", fn);
    if (toks && (int64_t)toks->n != n_vocab)
        return fail(ENG_STATUS_BAD_CHECKPOINT,
                    "%s: the vocabulary (tokenizer.ggml.tokens) has %llu tokens but token_embd.weight has %lld rows",
                    fn, (unsigned long long)toks->n, (long long)n_vocab);
    int64_t meta_vocab;
    bool has_meta_vocab;
    ENG_TRY(m.integer("vocab_size", false, 0, &meta_vocab, &has_meta_vocab));
    if (has_meta_vocab && meta_vocab != n_vocab)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: %s.vocab_size is %lld but token_embd.weight has %lld rows", fn,
                    arch.c_str(), (long long)meta_vocab, (long long)n_vocab);

    JsonValue &c = out->config;
    c.kind = JsonValue::OBJECT;
    auto put = [&](const char *k, JsonValue v) { c.members.emplace_back(k, std::move(v)); };
    JsonValue archs;
    archs.kind = JsonValue::ARRAY;
    archs.items.push_back(jstr(hf_arch));
    put("architectures", archs);
    put("vocab_size", jint(n_vocab));
    put("hidden_size", jint(n_embd));
    put("num_hidden_layers", jint(n_layer - nextn));
    if (nextn > 0) put("num_nextn_predict_layers", jint(nextn)); // model.cpp bind_mtp
    put("num_attention_heads", jint(n_head));
    put("num_key_value_heads", jint(arch == "deepseek2" ? n_head : n_head_kv));
    put("max_position_embeddings", jint(ctx));
    put("rms_norm_eps", jnum(eps));
    put("rope_theta", jnum(theta));
    put("tie_word_embeddings", jbool(gtensor("output.weight") == nullptr));
    put("attention_bias", jbool(gtensor("blk.0.attn_q.bias") != nullptr));

    bool moe = arch == "qwen3moe" || arch == "glm4moe" || arch == "deepseek2";
    if (arch != "deepseek2") {
        int64_t head_dim = has_key_len ? key_len : n_embd / n_head;
        if (has_val_len && val_len != head_dim)
            return fail(ENG_STATUS_UNSUPPORTED, "%s: key_length %lld != value_length %lld is not supported", fn,
                        (long long)head_dim, (long long)val_len);
        put("head_dim", jint(head_dim));
        if (has_rope_dims && rope_dims != head_dim) {
            if (arch != "glm4" && arch != "glm4moe")
                return fail(ENG_STATUS_UNSUPPORTED,
                            "%s: rope.dimension_count %lld of head_dim %lld is only supported for GLM", fn,
                            (long long)rope_dims, (long long)head_dim);
            put("partial_rotary_factor", jnum((double)rope_dims / (double)head_dim));
        } else if (arch == "glm4" || arch == "glm4moe") {
            put("partial_rotary_factor", jnum(has_rope_dims ? (double)rope_dims / (double)head_dim : 0.5));
        }
    }
    if (n_ff > 0) put("intermediate_size", jint(n_ff));
    if (arch == "glm4moe") put("use_qk_norm", jbool(gtensor("blk.0.attn_q_norm.weight") != nullptr));

    if (moe) {
        int64_t E, K, ff_exp, shared = 0, dense = 0, groups = 1, groups_used = 1, gating = 0;
        double scale = 1;
        bool has_gating;
        ENG_TRY(m.integer("expert_count", true, 0, &E));
        ENG_TRY(m.integer("expert_used_count", true, 0, &K));
        ENG_TRY(m.integer("expert_feed_forward_length", true, 0, &ff_exp));
        ENG_TRY(m.integer("expert_gating_func", false, arch == "qwen3moe" ? 1 : 2, &gating, &has_gating));
        put("num_experts_per_tok", jint(K));
        put("moe_intermediate_size", jint(ff_exp));
        if (arch == "qwen3moe") {
            if (gating != 1)
                return fail(ENG_STATUS_UNSUPPORTED, "%s: qwen3moe.expert_gating_func %lld (softmax, 1, only)", fn,
                            (long long)gating);
            if (n_ff == 0) put("intermediate_size", jint(ff_exp));
            put("num_experts", jint(E));
            // llama.cpp's qwen3moe graph always renormalises the chosen experts' weights.
            put("norm_topk_prob", jbool(m.boolean("expert_weights_norm", true)));
        } else {
            if (gating != 2)
                return fail(ENG_STATUS_UNSUPPORTED,
                            "%s: %s.expert_gating_func %lld is not supported (2, sigmoid, only: DeepSeek-V3 / GLM-4.5)",
                            fn, arch.c_str(), (long long)gating);
            ENG_TRY(m.integer("expert_shared_count", false, 0, &shared));
            ENG_TRY(m.integer("leading_dense_block_count", false, 0, &dense));
            ENG_TRY(m.integer("expert_group_count", false, 1, &groups));
            ENG_TRY(m.integer("expert_group_used_count", false, 1, &groups_used));
            ENG_TRY(m.number("expert_weights_scale", 1.0, &scale));
            put("n_routed_experts", jint(E));
            put("n_shared_experts", jint(shared));
            put("first_k_dense_replace", jint(dense));
            put("n_group", jint(groups));
            put("topk_group", jint(groups_used));
            put("routed_scaling_factor", jnum(scale));
            put("norm_topk_prob", jbool(m.boolean("expert_weights_norm", false)));
        }
    }
    if (arch == "deepseek2") {
        int64_t q_lora, kv_lora, k_mla, v_mla;
        bool has_q_lora, has_k_mla, has_v_mla;
        ENG_TRY(m.integer("attention.q_lora_rank", false, 0, &q_lora, &has_q_lora));
        ENG_TRY(m.integer("attention.kv_lora_rank", true, 0, &kv_lora));
        ENG_TRY(m.integer("attention.key_length_mla", false, 0, &k_mla, &has_k_mla));
        ENG_TRY(m.integer("attention.value_length_mla", false, 0, &v_mla, &has_v_mla));
        if (!has_rope_dims)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: missing metadata key deepseek2.rope.dimension_count", fn);
        // Newer files: key_length_mla = nope + rope, value_length_mla = v; older: key_length, value_length.
        int64_t qk = has_k_mla ? k_mla : key_len, v = has_v_mla ? v_mla : val_len;
        if (qk <= rope_dims || v <= 0)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: deepseek2 key/value lengths %lld / %lld are not valid", fn,
                        (long long)qk, (long long)v);
        if (has_q_lora && q_lora > 0) put("q_lora_rank", jint(q_lora));
        put("kv_lora_rank", jint(kv_lora));
        put("qk_rope_head_dim", jint(rope_dims));
        put("qk_nope_head_dim", jint(qk - rope_dims));
        put("v_head_dim", jint(v));
        const GgufValue *st = f.get("deepseek2.rope.scaling.type");
        if (st && st->type == GGUF_STRING && st->str == "yarn") {
            double factor, fast, slow, logm;
            int64_t orig;
            ENG_TRY(m.number("rope.scaling.factor", 1, &factor));
            ENG_TRY(m.integer("rope.scaling.original_context_length", true, 0, &orig));
            ENG_TRY(m.number("rope.scaling.yarn_beta_fast", 32, &fast));
            ENG_TRY(m.number("rope.scaling.yarn_beta_slow", 1, &slow));
            ENG_TRY(m.number("rope.scaling.yarn_log_multiplier", 0, &logm));
            JsonValue rs;
            rs.kind = JsonValue::OBJECT;
            // llama.cpp stores 0.1 * mscale_all_dim and takes mscale = mscale_all_dim.
            double ms = (double)(float)(logm / 0.1);
            rs.members.emplace_back("type", jstr("yarn"));
            rs.members.emplace_back("factor", jnum(factor));
            rs.members.emplace_back("original_max_position_embeddings", jint(orig));
            rs.members.emplace_back("beta_fast", jnum(fast));
            rs.members.emplace_back("beta_slow", jnum(slow));
            rs.members.emplace_back("mscale", jnum(ms));
            rs.members.emplace_back("mscale_all_dim", jnum(ms));
            put("rope_scaling", rs);
        } else if (st && st->type == GGUF_STRING && st->str != "none") {
            return fail(ENG_STATUS_UNSUPPORTED, "%s: rope scaling %s is not supported for deepseek2", fn,
                        st->str.c_str());
        }
    } else if (const GgufValue *st = f.get(arch + ".rope.scaling.type")) {
        if (st->type != GGUF_STRING || (st->str != "none" && st->str != "linear"))
            return fail(ENG_STATUS_UNSUPPORTED, "%s: %s.rope.scaling.type %s is not supported", fn, arch.c_str(),
                        st->type == GGUF_STRING ? st->str.c_str() : "?");
        if (st->str == "linear") return fail(ENG_STATUS_UNSUPPORTED, "%s: linear rope scaling is not supported", fn);
    }
    // Llama-3.1/3.2/3.3 RoPE scaling: llama.cpp's converter (LlamaModel.generate_extra_tensors) writes no
    // metadata for it but a 1-D F32 tensor rope_freqs.weight of n_rot / 2 divisors, and llama.cpp's
    // RoPE divides pair i's angle by divisor i (ggml_rope_ext's freq_factors); model.cpp applies them.
    // Read for llama only (llama.cpp's qwen3, glm4, glm4moe, deepseek2 graphs have no such tensor).
    if (const GgufTensor *rf = gtensor("rope_freqs.weight")) {
        int64_t n_rot = has_rope_dims ? rope_dims : has_key_len ? key_len : n_embd / n_head;
        if (arch != "llama")
            return fail(ENG_STATUS_UNSUPPORTED,
                        "%s: rope_freqs.weight (per-pair RoPE frequency divisors) is only supported for llama, not %s",
                        fn, arch.c_str());
        if (rf->n_dims != 1 || rf->ne[0] != n_rot / 2)
            return fail(
                ENG_STATUS_BAD_CHECKPOINT,
                "%s: rope_freqs.weight has shape [%lld, %lld, %lld, %lld] (%d dims), but %s.rope.dimension_count "
                "%lld needs [%lld]",
                fn, (long long)rf->ne[0], (long long)rf->ne[1], (long long)rf->ne[2], (long long)rf->ne[3], rf->n_dims,
                arch.c_str(), (long long)n_rot, (long long)(n_rot / 2));
        if (rf->type != GGML_F32)
            return fail(ENG_STATUS_UNSUPPORTED, "%s: rope_freqs.weight has type %s (only F32 is supported)", fn,
                        ggml_type_name(rf->type));
        for (int64_t i = 0; i < rf->ne[0]; i++) {
            float v;
            memcpy(&v, rf->data + 4 * i, 4);
            if (!(v > 0) || !isfinite(v))
                return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: rope_freqs.weight[%lld] is %g (a divisor must be > 0)", fn,
                            (long long)i, (double)v);
        }
    }
    // llama: llama.cpp's converter permutes q/k rows per head from HF's half-split rotary layout to
    // adjacent pairs (row 2i <- i, 2i+1 <- D/2 + i). Rotating adjacent pairs of the permuted rows
    // with frequency i gives the same q.k as HF's half-split rotation of the original rows (both
    // q and k are permuted alike), so the permutation is undone in the rotation, not by copying rows.
    out->is_qk_permuted = arch == "llama";

    // Tensors under Hugging Face names.
    auto add = [&](const std::string &hf, const GgufTensor &g) -> int32_t {
        Tensor t;
        ENG_TRY(to_tensor(g, file, &t));
        out->tensors[hf] = std::move(t);
        out->source[hf] = g.name;
        return ENG_STATUS_OK;
    };
    for (const GgufTensor &g : f.tensors) {
        const std::string &n = g.name;
        if (n == "token_embd.weight") ENG_TRY(add("model.embed_tokens.weight", g));
        else if (n == "output_norm.weight") ENG_TRY(add("model.norm.weight", g));
        else if (n == "output.weight") ENG_TRY(add("lm_head.weight", g));
        else if (n.compare(0, 4, "blk.") == 0) {
            size_t dot = n.find('.', 4), last = n.rfind('.');
            if (dot == std::string::npos || last <= dot) continue;
            std::string layer = n.substr(4, dot - 4), part = n.substr(dot + 1, last - dot - 1),
                        kind = n.substr(last + 1);
            std::string p = "model.layers." + layer + ".";
            if (part == "ffn_gate_exps" || part == "ffn_up_exps" || part == "ffn_down_exps") {
                Tensor whole;
                ENG_TRY(to_tensor(g, file, &whole));
                if (g.n_dims != 3)
                    return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s is not 3-dimensional", fn, n.c_str());
                const char *proj = part == "ffn_gate_exps" ? "gate_proj"
                                   : part == "ffn_up_exps" ? "up_proj"
                                                           : "down_proj";
                int64_t E = g.ne[2];
                for (int64_t e = 0; e < E; e++) {
                    Tensor t = whole;
                    t.shape = {g.ne[1], g.ne[0]};
                    t.numel = g.ne[0] * g.ne[1];
                    t.nbytes = whole.nbytes / (size_t)E;
                    t.data = (const uint8_t *)whole.data + (size_t)e * t.nbytes;
                    std::string hf = p + "mlp.experts." + std::to_string(e) + "." + proj + ".weight";
                    out->tensors[hf] = std::move(t);
                    out->source[hf] = n + " (expert " + std::to_string(e) + ")";
                }
                continue;
            }
            if (part == "exp_probs_b") {
                ENG_TRY(add(p + "mlp.gate.e_score_correction_bias", g));
                continue;
            }
            std::string hf = layer_name(arch, part);
            if (!hf.empty()) ENG_TRY(add(p + hf + "." + kind, g));
            else if (part != "attn_k_b" && part != "attn_v_b") ENG_TRY(add(n, g)); // unused (MTP...)
        } else {
            ENG_TRY(add(n, g)); // nextn.* (unused), rope_freqs.weight (model.cpp): kept under its own name
        }
    }
    // MLA: kv_b_proj from attn_k_b / attn_v_b (files without them carry attn_kv_b itself).
    if (arch == "deepseek2") {
        for (int64_t l = 0; l < n_layer; l++) {
            std::string b = "blk." + std::to_string(l) + ".";
            const GgufTensor *kb = gtensor(b + "attn_k_b.weight"), *vb = gtensor(b + "attn_v_b.weight");
            std::string hf = "model.layers." + std::to_string(l) + ".self_attn.kv_b_proj.weight";
            if (!kb || !vb || out->tensors.count(hf)) continue;
            Tensor tk, tv, kv;
            ENG_TRY(to_tensor(*kb, file, &tk));
            ENG_TRY(to_tensor(*vb, file, &tv));
            ENG_TRY(build_kv_b(tk, tv, kb->name, vb->name, out, &kv));
            out->tensors[hf] = std::move(kv);
            out->source[hf] = kb->name + " + " + vb->name;
        }
    }
    return ENG_STATUS_OK;
}

} // namespace maya
