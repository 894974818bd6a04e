/* test_gguf.cpp: GGUF files (issue 34). The engine's logits on test/fixtures/gguf against their
 * float64 reference (<model>.json: the bound, the checked greedy tokens and decode steps; see its
 * README, "Tolerance contract"), and bad files: every defect refused with a message naming it,
 * and a fuzz over mutated headers that must never crash. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <string>
#include <vector>

#include "../include/engine.h"
#include "../src/checkpoint.h" // read_text_file, Checkpoint
#include "../src/json.h"
#include "model_writer.h" // write_safetensors, write_text
#include "test.h"

namespace {

std::string gguf_dir() { return test_repo_root() + "/test/fixtures/gguf/"; }

std::string last_err() {
    char msg[1024] = "";
    eng_last_error(msg, sizeof msg);
    return msg;
}

/* Runs every prompt of one fixture file with its next tokens forced to the reference greedy ones
 * (eng_seq_mask), so each kept position's logits follow the reference's history: the prompt's
 * last position and the decode steps. Returns false when the engine refused the file (status and
 * message in *st, *msg). */
bool run_gguf(const std::string &model, const std::string &file, int64_t n_threads, int64_t chunk, int32_t *st,
              std::string *msg, double *worst_out = nullptr, const std::string &load_path = "") {
    std::string text, err;
    CHECK(maya::read_text_file(gguf_dir() + model + ".json", &text) == 0);
    maya::JsonValue fx;
    CHECK_MSG(maya::json_parse(text.data(), text.size(), &fx, &err), "%s", err.c_str());
    const maya::JsonValue *entry = nullptr;
    for (const auto &f : fx.get("files")->items)
        if (f.get("file")->string == file) entry = &f;
    CHECK_MSG(entry, "%s not in %s.json", file.c_str(), model.c_str());
    if (!entry) return false;
    double bound = entry->get("tolerance")->get("max_abs_logit_diff")->number;
    int64_t params[ENG_PARAM_COUNT] = {0};
    params[ENG_PARAM_N_THREADS] = n_threads;
    params[ENG_PARAM_PREFILL_CHUNK] = chunk;
    params[ENG_PARAM_N_CTX] = 512;
    eng_ctx *ctx = nullptr;
    std::string path = load_path.empty() ? gguf_dir() + file : load_path;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    *st = test_ctx_create(path.c_str(), params, ENG_PARAM_COUNT, &ctx);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (*st != 0) {
        *msg = last_err();
        return false;
    }
    double load_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    int32_t V = (int32_t)info[ENG_INFO_N_VOCAB];
    int n_greedy = (int)fx.get("greedy_tokens")->integer;
    const auto &model_prompts = fx.get("prompts")->items;
    const auto &refs = entry->get("prompts")->items;
    CHECK(model_prompts.size() == refs.size());
    std::vector<int32_t> ids(refs.size());
    int32_t n_words = (V + 31) / 32;
    std::vector<uint32_t> mask((size_t)n_words);
    auto force = [&](size_t p, int k) { // the next token of prompt p: reference greedy[k]
        std::fill(mask.begin(), mask.end(), 0u);
        int32_t tok = (int32_t)refs[p].get("greedy")->items[(size_t)k].integer;
        mask[(size_t)tok / 32] |= 1u << (tok % 32);
        CHECK(eng_seq_mask(ctx, ids[p], mask.data(), n_words) == 0);
    };
    for (size_t p = 0; p < refs.size(); p++) {
        std::vector<int32_t> toks;
        for (const auto &v : model_prompts[p].items) toks.push_back((int32_t)v.integer);
        CHECK(eng_seq_add(ctx, toks.data(), (int32_t)toks.size(), nullptr, 0, n_greedy, 0.0f, 1.0f, 0, 0,
                          ENG_SEQ_KEEP_LOGITS, &ids[p]) == 0);
        force(p, 0);
    }
    std::vector<int> got(ids.size(), 0);
    std::vector<float> logits((size_t)V);
    std::vector<int32_t> ev(4 * 64);
    double worst_last = 0, worst_decode = 0;
    int finished = 0, n_decode_checked = 0, n_greedy_checked = 0;
    for (int guard = 0; guard < 10000 && finished < (int)ids.size(); guard++) {
        int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
        CHECK(n >= 0);
        if (n < 0) break;
        for (int i = 0; i < n; i++) {
            int32_t sid = ev[(size_t)i * 4], kind = ev[(size_t)i * 4 + 1];
            size_t p = 0;
            while (p < ids.size() && ids[p] != sid) p++;
            if (kind == ENG_EVENT_FINISH) finished++;
            if (kind != ENG_EVENT_TOKEN) continue;
            const maya::JsonValue &ref = refs[p];
            int k = got[p]++;
            CHECK(eng_seq_logits(ctx, sid, logits.data(), V) == V);
            // The engine's own choice at step k, from the reference history (ties to the lowest id).
            int32_t best = 0;
            for (int32_t v = 1; v < V; v++)
                if (logits[(size_t)v] > logits[(size_t)best]) best = v;
            if (k < (int)ref.get("greedy_checked")->integer) {
                n_greedy_checked++;
                CHECK_MSG(best == (int32_t)ref.get("greedy")->items[(size_t)k].integer,
                          "%s prompt %zu: greedy token %d is %d, reference %lld", file.c_str(), p, k, best,
                          (long long)ref.get("greedy")->items[(size_t)k].integer);
            }
            if (k == 0) {
                const auto &last = ref.get("last_logits")->items;
                CHECK((int32_t)last.size() == V);
                for (int32_t v = 0; v < V && v < (int32_t)last.size(); v++) {
                    double d = fabs((double)logits[(size_t)v] - last[(size_t)v].number);
                    if (d > worst_last) worst_last = d;
                }
            } else {
                bool checked = false;
                for (const auto &s : ref.get("decode_checked_steps")->items) checked |= s.integer == k;
                if (checked) {
                    n_decode_checked++;
                    const maya::JsonValue &top = ref.get("decode_topk")->items[(size_t)k - 1];
                    for (size_t j = 0; j < top.get("ids")->items.size(); j++) {
                        double d = fabs((double)logits[(size_t)top.get("ids")->items[j].integer] -
                                        top.get("logits")->items[j].number);
                        if (d > worst_decode) worst_decode = d;
                    }
                }
            }
            if (k + 1 < n_greedy) force(p, k + 1);
        }
    }
    CHECK(finished == (int)ids.size());
    fprintf(stderr,
            "  %-32s load %6.1f ms  last-position max |diff| %.3g, decode %.3g (%d steps), greedy %d checked, bound "
            "%.3g\n",
            file.c_str(), load_ms, worst_last, worst_decode, n_decode_checked, n_greedy_checked, bound);
    CHECK_MSG(worst_last <= bound, "%s: last-position logits off by %.3g (bound %.3g)", file.c_str(), worst_last,
              bound);
    CHECK_MSG(worst_decode <= bound, "%s: decode logits off by %.3g (bound %.3g)", file.c_str(), worst_decode, bound);
    if (worst_out) *worst_out = worst_last > worst_decode ? worst_last : worst_decode;
    eng_ctx_free(ctx);
    return true;
}

void run_float(const char *model, const char *file) {
    int32_t st = 0;
    std::string msg;
    bool ran = run_gguf(model, file, 2, 256, &st, &msg);
    CHECK_MSG(ran, "%s: status %d: %s", file, st, msg.c_str());
    ran = run_gguf(model, file, 1, 7, &st, &msg); // small chunks: prefill spread over steps
    CHECK_MSG(ran, "%s: status %d: %s", file, st, msg.c_str());
}

} // namespace

TEST(gguf_llama_float) {
    run_float("llama", "llama-F32.gguf");
    run_float("llama", "llama-F16.gguf");
    run_float("llama", "llama-BF16.gguf");
}
TEST(gguf_qwen3_bf16) { run_float("qwen3", "qwen3-BF16.gguf"); }
TEST(gguf_glm4_f16_split) { run_float("glm4", "glm4-F16-00001-of-00003.gguf"); }
TEST(gguf_qwen3moe_bf16) { run_float("qwen3moe", "qwen3moe-BF16.gguf"); }

namespace {

std::string json_text(const maya::JsonValue &v) {
    switch (v.kind) {
    case maya::JsonValue::NUL: return "null";
    case maya::JsonValue::BOOL: return v.boolean ? "true" : "false";
    case maya::JsonValue::NUMBER: {
        if (v.is_integer) return std::to_string(v.integer);
        char b[64];
        snprintf(b, sizeof b, "%.17g", v.number);
        return b;
    }
    case maya::JsonValue::STRING: return "\"" + v.string + "\"";
    case maya::JsonValue::ARRAY: {
        std::string s = "[";
        for (size_t i = 0; i < v.items.size(); i++) s += (i ? "," : "") + json_text(v.items[i]);
        return s + "]";
    }
    default: {
        std::string s = "{";
        for (size_t i = 0; i < v.members.size(); i++)
            s += (i ? ",\"" : "\"") + v.members[i].first + "\":" + json_text(v.members[i].second);
        return s + "}";
    }
    }
}

} // namespace

/* Qwen3MoeForCausalLM from safetensors: the qwen3moe fixture's weights under their Hugging Face
 * names (as the GGUF reader binds them, BF16) beside the checkpoint's own config.json (the
 * fixture's source config), held to the same float64 reference. */
TEST(qwen3moe_safetensors_matches_reference) {
    maya::Checkpoint ck;
    CHECK(ck.open(gguf_dir() + "qwen3moe-BF16.gguf") == 0);
    std::vector<RawTensor> ts;
    for (const auto &kv : ck.tensors()) {
        const maya::Tensor &t = kv.second;
        const uint8_t *p = (const uint8_t *)t.data;
        ts.push_back({kv.first, t.dtype_str, t.shape, std::vector<uint8_t>(p, p + t.nbytes)});
    }
    CHECK(ts.size() > 12 * 3 * 2);
    std::string text, err;
    CHECK(maya::read_text_file(gguf_dir() + "qwen3moe.json", &text) == 0);
    maya::JsonValue fx;
    CHECK(maya::json_parse(text.data(), text.size(), &fx, &err));
    const maya::JsonValue *config = fx.get("source")->get("config");
    CHECK(config && config->get("architectures")->items[0].string == "Qwen3MoeForCausalLM");
    std::string dir = test_tmpdir("qwen3moe-st");
    CHECK(write_text(dir + "/config.json", json_text(*config)));
    CHECK(write_safetensors(dir + "/model.safetensors", ts));
    int32_t st = 0;
    std::string msg;
    bool ran = run_gguf("qwen3moe", "qwen3moe-BF16.gguf", 2, 256, &st, &msg, nullptr, dir);
    CHECK_MSG(ran, "safetensors qwen3moe: status %d: %s", st, msg.c_str());
    ran = run_gguf("qwen3moe", "qwen3moe-BF16.gguf", 1, 7, &st, &msg, nullptr, dir);
    CHECK_MSG(ran, "safetensors qwen3moe: status %d: %s", st, msg.c_str());
}
/* Llama-3.1/3.2/3.3 RoPE scaling: llama.cpp's converter stores it as rope_freqs.weight (per-pair
 * divisors of the rotation angle), not as metadata. The llama3rope fixture's original context is
 * 64 tokens, so its prompts (up to 145 positions) reach the scaled pairs: its float64 reference
 * (transformers' llama3 inv_freq from the source config.json) moves by 3.67 without the scaling. */
TEST(gguf_llama3_rope_freqs) { run_float("llama3rope", "llama3rope-F16.gguf"); }

/* The same weights as a safetensors directory with the source's llama3 rope_scaling in config.json
 * (the q/k rows put back in Hugging Face's order): the safetensors path meets the same reference,
 * so the GGUF file and its source give the same logits. */
TEST(llama3_rope_safetensors_matches_gguf_reference) {
    maya::Checkpoint ck;
    CHECK(ck.open(gguf_dir() + "llama3rope-F16.gguf") == 0);
    std::string text, err;
    CHECK(maya::read_text_file(gguf_dir() + "llama3rope.json", &text) == 0);
    maya::JsonValue fx;
    CHECK(maya::json_parse(text.data(), text.size(), &fx, &err));
    const maya::JsonValue *config = fx.get("source")->get("config");
    CHECK(config && config->get("rope_scaling")->get("rope_type")->string == "llama3");
    int64_t D = config->get("head_dim")->integer;
    std::vector<RawTensor> ts;
    for (const auto &kv : ck.tensors()) {
        const maya::Tensor &t = kv.second;
        if (kv.first == "rope_freqs.weight") continue;
        const uint8_t *p = (const uint8_t *)t.data;
        RawTensor r{kv.first, t.dtype_str, t.shape, std::vector<uint8_t>(p, p + t.nbytes)};
        bool q = kv.first.find("q_proj.weight") != std::string::npos,
             k = kv.first.find("k_proj.weight") != std::string::npos;
        if (q || k) { // GGUF row 2i of a head is HF row i, row 2i+1 is HF row D/2 + i
            size_t row = t.nbytes / (size_t)t.shape[0];
            for (int64_t h = 0; h < t.shape[0] / D; h++)
                for (int64_t i = 0; i < D; i++) {
                    int64_t from = h * D + (i < D / 2 ? 2 * i : 2 * (i - D / 2) + 1);
                    memcpy(&r.bytes[(size_t)(h * D + i) * row], p + (size_t)from * row, row);
                }
        }
        ts.push_back(std::move(r));
    }
    CHECK(ts.size() == 3 + 2 * 9);
    std::string dir = test_tmpdir("llama3rope-st");
    CHECK(write_text(dir + "/config.json", json_text(*config)));
    CHECK(write_safetensors(dir + "/model.safetensors", ts));
    int32_t st = 0;
    std::string msg;
    bool ran = run_gguf("llama3rope", "llama3rope-F16.gguf", 2, 256, &st, &msg, nullptr, dir);
    CHECK_MSG(ran, "safetensors llama3rope: status %d: %s", st, msg.c_str());
}
TEST(gguf_glm4moe_bf16) { run_float("glm4moe", "glm4moe-BF16.gguf"); }
TEST(gguf_deepseek2_f16) { run_float("deepseek2", "deepseek2-F16.gguf"); }

namespace {

/* The quantized fixtures (every type on llama; Q4_K_M of every architecture, with llama-quantize's
 * Q5_0 / Q8_0 fallbacks; the demo model): within each file's bound from activation quantization. */
void run_quant(const char *model, const char *file) {
    int32_t st = 0;
    std::string msg;
    bool ran = run_gguf(model, file, 2, 256, &st, &msg);
    CHECK_MSG(ran, "%s: status %d: %s", file, st, msg.c_str());
}

} // namespace

TEST(gguf_llama_quantized) {
    for (const char *f :
         {"llama-Q8_0.gguf", "llama-Q4_0.gguf", "llama-Q4_1.gguf", "llama-Q5_0.gguf", "llama-Q5_1.gguf",
          "llama-Q4_K.gguf", "llama-Q5_K.gguf", "llama-Q6_K.gguf", "llama-Q4_K_M.gguf", "llama-Q5_K_M.gguf"})
        run_quant("llama", f);
}
TEST(gguf_q4_k_m_every_arch) {
    run_quant("qwen3", "qwen3-Q4_K_M.gguf");
    run_quant("glm4", "glm4-Q4_K_M.gguf");
    run_quant("qwen3moe", "qwen3moe-Q4_K_M.gguf");
    run_quant("glm4moe", "glm4moe-Q4_K_M.gguf");
    run_quant("deepseek2", "deepseek2-Q4_K_M.gguf");
    run_quant("maya-demo", "maya-demo-Q4_K_M.gguf");
}

// ---------------------------------------------------------------------------------------------
// Bad files: a small GGUF writer, a valid tiny llama, then one defect at a time.

namespace {

struct W {
    std::vector<uint8_t> b;
    void u8(uint8_t v) { b.push_back(v); }
    void u32(uint32_t v) { b.insert(b.end(), (uint8_t *)&v, (uint8_t *)&v + 4); }
    void u64(uint64_t v) { b.insert(b.end(), (uint8_t *)&v, (uint8_t *)&v + 8); }
    void f32(float v) { b.insert(b.end(), (uint8_t *)&v, (uint8_t *)&v + 4); }
    void str(const std::string &s) {
        u64(s.size());
        b.insert(b.end(), s.begin(), s.end());
    }
};

struct Kv {
    std::string key;
    uint32_t type;
    std::vector<uint8_t> value; // the encoded value (after the type)
};
struct Tn {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
};

/* The defects a build can carry. */
struct Spec {
    int vocab_tokens = 32;      // entries of tokenizer.ggml.tokens
    uint32_t ff_meta = 32;      // llama.feed_forward_length
    std::string arch = "llama"; //
    int bad_type_tensor = -1;   // this tensor gets type bad_type
    uint32_t bad_type = 0;      //
    int misalign_tensor = -1;   // this tensor's offset + 1
    uint32_t alignment = 32;    // general.alignment (0: absent)
    bool dup_key = false;       // general.name twice
    bool dup_tensor = false;    // the last tensor's name repeated
    uint32_t version = 3;       //
    size_t header_end = 0;      // out: where the data section starts

    std::vector<uint64_t> rope_freqs_ne; // a rope_freqs.weight of this shape first (empty: none)
    uint32_t rope_freqs_type = 0;        //   its type
    float rope_freq0 = 1.0f;             //   its first value (the others 1)
};

std::vector<uint8_t> build(Spec &s) {
    const int V = 32, C = 32, H = 2, Hkv = 1, D = 16, I = 32;
    std::vector<Kv> kvs;
    auto kv_u32 = [&](const std::string &k, uint32_t v) {
        W w;
        w.u32(v);
        kvs.push_back({k, 4, w.b});
    };
    auto kv_f32 = [&](const std::string &k, float v) {
        W w;
        w.f32(v);
        kvs.push_back({k, 6, w.b});
    };
    auto kv_str = [&](const std::string &k, const std::string &v) {
        W w;
        w.str(v);
        kvs.push_back({k, 8, w.b});
    };
    kv_str("general.architecture", s.arch);
    kv_str("general.name", "tiny");
    if (s.dup_key) kv_str("general.name", "again");
    if (s.alignment) kv_u32("general.alignment", s.alignment);
    std::string a = s.arch;
    kv_u32(a + ".block_count", 1);
    kv_u32(a + ".context_length", 64);
    kv_u32(a + ".embedding_length", C);
    kv_u32(a + ".feed_forward_length", s.ff_meta);
    kv_u32(a + ".attention.head_count", H);
    kv_u32(a + ".attention.head_count_kv", Hkv);
    kv_f32(a + ".rope.freq_base", 10000.0f);
    kv_f32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);
    {
        W w; // array of strings
        w.u32(8);
        w.u64((uint64_t)s.vocab_tokens);
        for (int i = 0; i < s.vocab_tokens; i++) w.str("t" + std::to_string(i));
        kvs.push_back({"tokenizer.ggml.tokens", 9, w.b});
        W t; // array of i32
        t.u32(5);
        t.u64((uint64_t)s.vocab_tokens);
        for (int i = 0; i < s.vocab_tokens; i++) t.u32(1);
        kvs.push_back({"tokenizer.ggml.token_type", 9, t.b});
        kv_str("tokenizer.ggml.model", "gpt2");
    }
    std::vector<Tn> ts = {
        {"token_embd.weight", {C, V}, 0},
        {"output_norm.weight", {C}, 0},
        {"output.weight", {C, V}, 0},
        {"blk.0.attn_norm.weight", {C}, 0},
        {"blk.0.attn_q.weight", {C, H * D}, 0},
        {"blk.0.attn_k.weight", {C, Hkv * D}, 0},
        {"blk.0.attn_v.weight", {C, Hkv * D}, 0},
        {"blk.0.attn_output.weight", {H * D, C}, 0},
        {"blk.0.ffn_norm.weight", {C}, 0},
        {"blk.0.ffn_gate.weight", {C, I}, 1},
        {"blk.0.ffn_up.weight", {C, I}, 1},
        {"blk.0.ffn_down.weight", {I, C}, 1},
    };
    if (!s.rope_freqs_ne.empty()) ts.insert(ts.begin(), Tn{"rope_freqs.weight", s.rope_freqs_ne, s.rope_freqs_type});
    if (s.dup_tensor) ts.push_back(ts.back());
    if (s.bad_type_tensor >= 0) ts[(size_t)s.bad_type_tensor].type = s.bad_type;
    uint64_t align = s.alignment ? s.alignment : 32;
    W w;
    w.b.insert(w.b.end(), {'G', 'G', 'U', 'F'});
    w.u32(s.version);
    w.u64(ts.size());
    w.u64(kvs.size());
    for (const Kv &k : kvs) {
        w.str(k.key);
        w.u32(k.type);
        w.b.insert(w.b.end(), k.value.begin(), k.value.end());
    }
    std::vector<uint64_t> sizes;
    uint64_t off = 0;
    for (size_t i = 0; i < ts.size(); i++) {
        const Tn &t = ts[i];
        w.str(t.name);
        w.u32((uint32_t)t.ne.size());
        uint64_t n = 1;
        for (uint64_t e : t.ne) {
            w.u64(e);
            n *= e;
        }
        w.u32(t.type);
        w.u64(off + ((int)i == s.misalign_tensor ? 1 : 0));
        uint64_t bytes = t.type == 0 ? n * 4 : n * 2; // F32 or F16 (a bad type keeps the F32/F16 size)
        sizes.push_back(bytes);
        off += (bytes + align - 1) / align * align;
    }
    while (w.b.size() % align) w.u8(0);
    s.header_end = w.b.size();
    // Small deterministic weights (F32 0.01 * pattern; F16 zeros) and norms of one.
    for (size_t i = 0; i < ts.size(); i++) {
        size_t start = w.b.size();
        if (ts[i].type == 0) {
            uint64_t n = sizes[i] / 4;
            bool norm = ts[i].ne.size() == 1;
            for (uint64_t j = 0; j < n; j++)
                w.f32(ts[i].name == "rope_freqs.weight" && j == 0 ? s.rope_freq0
                      : norm                                      ? 1.0f
                                                                  : 0.01f * (float)((j * 7 + i) % 13) - 0.06f);
        } else {
            w.b.resize(start + sizes[i], 0);
        }
        while (w.b.size() % align) w.u8(0);
    }
    return w.b;
}

int g_file_no = 0;

/* Writes bytes to a fresh .gguf file and creates a context from it: status and message. */
int32_t load_bytes(const std::vector<uint8_t> &bytes, std::string *msg, const std::string &name = "m.gguf") {
    static std::string dir = test_tmpdir("gguf");
    std::string path = dir + "/" + std::to_string(g_file_no++) + "-" + name;
    FILE *f = fopen(path.c_str(), "wb");
    CHECK(f != nullptr);
    if (!f) return -100;
    if (!bytes.empty()) fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
    int64_t params[ENG_PARAM_COUNT] = {0};
    params[ENG_PARAM_N_THREADS] = 1;
    params[ENG_PARAM_N_BLOCKS] = 4;
    params[ENG_PARAM_MAX_BATCH] = 1;
    eng_ctx *ctx = nullptr;
    int32_t st = test_ctx_create(path.c_str(), params, ENG_PARAM_COUNT, &ctx);
    *msg = st == 0 ? "" : last_err();
    if (ctx) eng_ctx_free(ctx);
    remove(path.c_str());
    return st;
}

void expect_refused(const std::vector<uint8_t> &bytes, int32_t want, const char *needle, const char *what) {
    std::string msg;
    int32_t st = load_bytes(bytes, &msg);
    CHECK_MSG(st == want && msg.find(needle) != std::string::npos, "%s: status %d, message \"%s\" (want %d, \"%s\")",
              what, st, msg.c_str(), want, needle);
}

} // namespace

/* rope_freqs.weight (Llama-3 RoPE scaling): head_dim / 2 F32 divisors > 0 on a llama file, or a refusal
 * naming what is wrong; never ignored. */
TEST(gguf_rope_freqs_checked) {
    Spec s;
    s.rope_freqs_ne = {8}; // head_dim 16
    std::string msg;
    CHECK_MSG(load_bytes(build(s), &msg) == 0, "rope_freqs.weight [8]: %s", msg.c_str());
    s.rope_freqs_ne = {16};
    expect_refused(build(s), ENG_STATUS_BAD_CHECKPOINT, "rope_freqs.weight has shape [16, 1, 1, 1] (1 dims)",
                   "rope_freqs of head_dim values");
    s.rope_freqs_ne = {8, 2};
    expect_refused(build(s), ENG_STATUS_BAD_CHECKPOINT, "rope.dimension_count 16 needs [8]", "rope_freqs 2-D");
    s.rope_freqs_ne = {8};
    s.rope_freqs_type = 1;
    expect_refused(build(s), ENG_STATUS_UNSUPPORTED, "rope_freqs.weight has type F16 (only F32", "rope_freqs F16");
    s.rope_freqs_type = 0;
    s.rope_freq0 = 0.0f;
    expect_refused(build(s), ENG_STATUS_BAD_CHECKPOINT, "rope_freqs.weight[0] is 0", "rope_freqs divisor 0");
    s.rope_freq0 = 1.0f;
    s.arch = "qwen3";
    expect_refused(build(s), ENG_STATUS_UNSUPPORTED, "rope_freqs.weight (per-pair RoPE frequency divisors) is only",
                   "rope_freqs on qwen3");
}

TEST(gguf_bad_files_named) {
    Spec ok;
    std::vector<uint8_t> good = build(ok);
    std::string msg;
    CHECK_MSG(load_bytes(good, &msg) == 0, "the valid tiny file: %s", msg.c_str());

    std::vector<uint8_t> b = good;
    b[0] = 'X';
    expect_refused(b, ENG_STATUS_BAD_CHECKPOINT, "not a GGUF file", "wrong magic");
    expect_refused({'G', 'G'}, ENG_STATUS_BAD_CHECKPOINT, "truncated", "two bytes");
    expect_refused(std::vector<uint8_t>(good.begin(), good.begin() + 100), ENG_STATUS_BAD_CHECKPOINT, "truncated",
                   "cut in the metadata");
    expect_refused(std::vector<uint8_t>(good.begin(), good.begin() + (long)ok.header_end - 40),
                   ENG_STATUS_BAD_CHECKPOINT, "truncated", "cut in the tensor infos");
    expect_refused(std::vector<uint8_t>(good.begin(), good.end() - 64), ENG_STATUS_BAD_CHECKPOINT,
                   "runs past the end of the file", "cut in the data");
    Spec s;
    s.misalign_tensor = 3;
    expect_refused(build(s), ENG_STATUS_BAD_CHECKPOINT, "is not a multiple of the alignment", "misaligned offset");
    s = Spec();
    s.alignment = 24;
    expect_refused(build(s), ENG_STATUS_BAD_CHECKPOINT, "general.alignment 24 is not a power of two", "alignment");
    s = Spec();
    s.bad_type_tensor = 11;
    s.bad_type = 77;
    expect_refused(build(s), ENG_STATUS_BAD_CHECKPOINT, "blk.0.ffn_down.weight has unknown ggml type 77",
                   "unknown type");
    s.bad_type = 20; // IQ4_NL: a real ggml type Maya does not run
    expect_refused(build(s), ENG_STATUS_UNSUPPORTED, "blk.0.ffn_down.weight has type IQ4_NL", "IQ4_NL");
    s.bad_type = 39; // MXFP4
    expect_refused(build(s), ENG_STATUS_UNSUPPORTED, "has type MXFP4", "MXFP4");
    s.bad_type = 12; // Q4_K over rows of 32
    expect_refused(build(s), ENG_STATUS_BAD_CHECKPOINT, "row length 32 is not a multiple of Q4_K's block of 256",
                   "Q4_K rows");
    s = Spec();
    s.ff_meta = 64;
    expect_refused(build(s), ENG_STATUS_BAD_CHECKPOINT,
                   "blk.0.ffn_gate.weight (model.layers.0.mlp.gate_proj.weight) "
                   "has shape [32, 32], but the metadata gives [32, 64]",
                   "shape against the metadata");
    s = Spec();
    s.vocab_tokens = 31;
    expect_refused(build(s), ENG_STATUS_BAD_CHECKPOINT,
                   "the vocabulary (tokenizer.ggml.tokens) has 31 tokens but token_embd.weight has 32 rows",
                   "vocabulary");
    s = Spec();
    s.arch = "gpt2";
    expect_refused(build(s), ENG_STATUS_UNSUPPORTED, "GGUF architecture gpt2 is not supported", "architecture");
    s = Spec();
    s.version = 1;
    expect_refused(build(s), ENG_STATUS_UNSUPPORTED, "GGUF version 1 is not supported", "version 1");
    s.version = 0x03000000; // byte-swapped 3
    expect_refused(build(s), ENG_STATUS_UNSUPPORTED, "big-endian", "big-endian");
    s = Spec();
    s.dup_key = true;
    expect_refused(build(s), ENG_STATUS_BAD_CHECKPOINT, "metadata key general.name appears twice", "duplicate key");
    s = Spec();
    s.dup_tensor = true;
    expect_refused(build(s), ENG_STATUS_BAD_CHECKPOINT, "tensor blk.0.ffn_down.weight appears twice",
                   "duplicate tensor");
    // A split part opened directly, and a split set with a missing part.
    expect_refused({}, ENG_STATUS_BAD_CHECKPOINT, "is empty", "empty file");
    std::string part = gguf_dir() + "glm4-F16-00002-of-00003.gguf";
    eng_ctx *ctx = nullptr;
    int64_t params[ENG_PARAM_COUNT] = {0};
    CHECK(test_ctx_create(part.c_str(), params, ENG_PARAM_COUNT, &ctx) == ENG_STATUS_BAD_CHECKPOINT);
    CHECK_MSG(last_err().find("open its first file") != std::string::npos, "%s", last_err().c_str());
    std::string first;
    CHECK(maya::read_text_file(gguf_dir() + "glm4-F16-00001-of-00003.gguf", &first) == 0);
    std::string lone = test_tmpdir("gguf-split") + "/x-00001-of-00003.gguf";
    FILE *f = fopen(lone.c_str(), "wb");
    fwrite(first.data(), 1, first.size(), f);
    fclose(f);
    CHECK(test_ctx_create(lone.c_str(), params, ENG_PARAM_COUNT, &ctx) == ENG_STATUS_IO);
    CHECK_MSG(last_err().find("x-00002-of-00003.gguf") != std::string::npos, "%s", last_err().c_str());
}

/* Mutated headers (byte flips, random u64s, truncations) of the tiny file and of a real fixture: a
 * status and a message every time, never a crash (ASan-clean under MAYA_ENGINE_CXXFLAGS). */
TEST(gguf_fuzz_mutated_headers) {
    Spec ok;
    std::vector<uint8_t> tiny = build(ok);
    std::string real;
    CHECK(maya::read_text_file(gguf_dir() + "qwen3moe-BF16.gguf", &real) == 0);
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    auto next = [&]() {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
    };
    int n_ok = 0, n_refused = 0;
    const int N = 600;
    for (int it = 0; it < N; it++) {
        bool use_real = it % 6 == 5;
        std::vector<uint8_t> b = use_real ? std::vector<uint8_t>(real.begin(), real.end()) : tiny;
        // The header region: the tiny file's whole header; the real one's first 64 KiB.
        size_t hdr = use_real ? 65536 : ok.header_end;
        int kind = (int)(next() % 4), n_mut = 1 + (int)(next() % 4);
        for (int j = 0; j < n_mut; j++) {
            size_t at = (size_t)(next() % hdr);
            if (kind == 0) b[at] ^= (uint8_t)(1u << (next() % 8));
            else if (kind == 1) b[at] = (uint8_t)next();
            else if (kind == 2 && at + 8 <= b.size()) { // a plausible length/count field gets a wild value
                uint64_t v = next() >> (next() % 64);
                memcpy(&b[at], &v, 8);
            }
        }
        if (kind == 3) b.resize((size_t)(next() % b.size()));
        std::string msg;
        int32_t st = load_bytes(b, &msg);
        CHECK_MSG(st == 0 || st == ENG_STATUS_BAD_CHECKPOINT || st == ENG_STATUS_UNSUPPORTED ||
                      st == ENG_STATUS_OUT_OF_MEMORY,
                  "mutation %d: status %d (%s)", it, st, msg.c_str());
        CHECK_MSG(st == 0 || !msg.empty(), "mutation %d: status %d without a message", it, st);
        (st == 0 ? n_ok : n_refused)++;
    }
    fprintf(stderr, "  %d mutated files: %d refused with a message, %d still valid\n", N, n_refused, n_ok);
    CHECK(n_refused > N / 2);
}

// ---------------------------------------------------------------------------------------------
// Memory: a GGUF model costs its file once (issue 34: RSS after loading a Q4_K_M file is at most
// its size plus the KV cache plus 10 %). /proc/self/smaps gives the file mapping's resident bytes
// apart from the rest, so the check does not depend on the process's other memory.

namespace {

/* Resident KiB of the mappings of `path` (smaps "Rss:" of each mapping whose line names it). */
long mapping_rss_kib(const std::string &path) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[4096];
    bool in = false;
    long kib = 0;
    while (fgets(line, sizeof line, f)) {
        if (strchr(line, '-') && isxdigit((unsigned char)line[0]) && !isupper((unsigned char)line[0])) {
            size_t n = strlen(line);
            if (n && line[n - 1] == '\n') line[n - 1] = '\0';
            in = n > path.size() && strcmp(line + strlen(line) - path.size(), path.c_str()) == 0;
        } else if (in && !strncmp(line, "Rss:", 4)) {
            kib += atol(line + 4);
        }
    }
    fclose(f);
    return kib;
}

long status_kib(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, strlen(field))) v = atol(line + strlen(field) + 1);
    fclose(f);
    return v;
}

/* Loads the file with ENG_PARAM_WEIGHT_COPY `copy`, generates 64 tokens after a 64-token prompt;
 * returns the mapping's resident KiB and the growth of anonymous memory. */
void load_and_generate(const std::string &path, int64_t copy, long *file_kib, long *anon_kib, int64_t *kv_bytes) {
    int64_t params[ENG_PARAM_COUNT] = {0};
    params[ENG_PARAM_N_THREADS] = 2;
    params[ENG_PARAM_WEIGHT_COPY] = copy;
    params[ENG_PARAM_BACKEND] = ENG_BACKEND_CPU;
    params[ENG_PARAM_MAX_BATCH] = 1;
    params[ENG_PARAM_N_CTX] = 256;
    long anon0 = status_kib("RssAnon:");
    eng_ctx *ctx = nullptr;
    CHECK(test_ctx_create(path.c_str(), params, ENG_PARAM_COUNT, &ctx) == 0);
    if (!ctx) return;
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    std::vector<int32_t> prompt(64);
    for (int i = 0; i < 64; i++) prompt[(size_t)i] = 10 + 7 * i;
    int32_t id;
    CHECK(eng_seq_add(ctx, prompt.data(), 64, nullptr, 0, 64, 0.0f, 1.0f, 0, 0, 0, &id) == 0);
    int32_t ev[4 * 16];
    for (int guard = 0, done = 0; !done && guard < 1000; guard++) {
        int32_t n = eng_step(ctx, ev, 4 * 16);
        CHECK(n >= 0);
        for (int32_t i = 0; i < n; i++) done |= ev[i * 4 + 1] == ENG_EVENT_FINISH;
        if (n < 0) break;
    }
    *file_kib = mapping_rss_kib(path);
    *anon_kib = status_kib("RssAnon:") - anon0;
    // 128 positions in the cache's own row format (f16 by default for a quantized file).
    *kv_bytes = 128 * info[ENG_INFO_KV_BYTES_PER_TOKEN];
    eng_ctx_free(ctx);
}

} // namespace

TEST(gguf_memory_file_size_once) {
    std::string path = gguf_dir() + "maya-demo-Q4_K_M.gguf";
    struct stat st;
    CHECK(stat(path.c_str(), &st) == 0);
    long file = (long)(st.st_size / 1024);
    long map_kib = 0, anon_kib = 0;
    int64_t kv = 0;
    // The bound, file + KV + 10 %, with the KV cache counted in the 2 MiB pages it is
    // faulted in by (it asks for transparent huge pages) and 2 MiB for what any process running
    // threads holds (heap, stacks) and for the last huge page of the weight copy. The activation
    // buffers are sized for a full prefill chunk but resident only in the rows a batch used
    // (LineAlloc), and weights are held once: in place the mapping is the file and anonymous
    // memory holds no copy of it; copied, the mapping's pages are released.
    load_and_generate(path, 2, &map_kib, &anon_kib, &kv);
    long kv_pages = (long)(kv / 1024 + 2047) / 2048 * 2048;
    long bound = file + file / 10 + kv_pages + 2048;
    fprintf(stderr,
            "  in place: file %ld KiB, mapping resident %ld KiB, anonymous growth %ld KiB (KV %lld KiB), bound %ld\n",
            file, map_kib, anon_kib, (long long)(kv / 1024), bound);
    CHECK(map_kib <= file + 4 && map_kib >= file / 2);
    CHECK(map_kib + anon_kib <= bound);
    load_and_generate(path, 1, &map_kib, &anon_kib, &kv);
    fprintf(stderr, "  copied:   file %ld KiB, mapping resident %ld KiB, anonymous growth %ld KiB, bound %ld\n", file,
            map_kib, anon_kib, bound);
    CHECK(map_kib <= file / 10);
    CHECK(map_kib + anon_kib <= bound);
}
