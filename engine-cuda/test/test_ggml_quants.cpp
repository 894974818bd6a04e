/* test_ggml_quants.cpp: the GGUF block quantizers (ggml_quants.cpp) against llama-quantize's
 * output on the committed fixtures (test/fixtures/gguf: llama-<TYPE>.gguf were made with
 * `llama-quantize --pure` from llama-F32.gguf), and the Q4_K_M mixture rule (q4_k_m_dtype) against
 * the tensor types of llama-quantize's Q4_K_M files. A minimal GGUF walk of its own reads them
 * (test code; the engine's reader is checkpoint's). */
#include <stdio.h>
#include <string.h>

#include <map>
#include <string>
#include <vector>

#include "../include/engine.h"
#include "../src/checkpoint.h" // read_text_file
#include "../src/ggml_quants.h"
#include "../src/json.h"
#include "../src/kernels/ggml_blocks.h"
#include "../src/model.h" // q4_k_m_dtype
#include "test.h"

using namespace maya;

namespace {

struct GTensor {
    uint32_t type;
    std::vector<uint64_t> ne;
    const uint8_t *data;
};

struct GFile {
    std::vector<uint8_t> buf;
    std::map<std::string, GTensor> tensors;
    uint64_t block_count = 0;
};

bool read_gguf(const std::string &path, GFile *g) {
    FILE *f = fopen(path.c_str(), "rb");
    if (!f) return false;
    uint8_t chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) g->buf.insert(g->buf.end(), chunk, chunk + n);
    fclose(f);
    size_t pos = 0;
    bool ok = true;
    auto take = [&](void *out, size_t len) {
        if (pos + len > g->buf.size()) {
            ok = false;
            return;
        }
        if (out) memcpy(out, &g->buf[pos], len);
        pos += len;
    };
    auto u32 = [&]() {
        uint32_t v = 0;
        take(&v, 4);
        return v;
    };
    auto u64 = [&]() {
        uint64_t v = 0;
        take(&v, 8);
        return v;
    };
    auto str = [&]() {
        uint64_t len = u64();
        std::string s;
        if (ok && pos + len <= g->buf.size()) s.assign((const char *)&g->buf[pos], (size_t)len);
        take(nullptr, (size_t)len);
        return s;
    };
    const size_t scalar[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (u32() != 0x46554747u || u32() != 3) return false; // "GGUF", version 3
    uint64_t n_tensors = u64(), n_kv = u64();
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv && ok; i++) {
        std::string key = str();
        uint32_t t = u32();
        if (t == 8) str();
        else if (t == 9) {
            uint32_t et = u32();
            uint64_t cnt = u64();
            for (uint64_t j = 0; j < cnt && ok; j++) {
                if (et == 8) str();
                else if (et < 13 && scalar[et]) take(nullptr, scalar[et]);
                else return false;
            }
        } else if (t < 13 && scalar[t]) {
            uint64_t v = 0;
            take(&v, scalar[t]);
            if (key == "general.alignment") alignment = v;
            if (key.size() > 12 && key.compare(key.size() - 12, 12, ".block_count") == 0) g->block_count = v;
        } else return false;
    }
    std::vector<std::pair<std::string, std::pair<GTensor, uint64_t>>> infos;
    for (uint64_t i = 0; i < n_tensors && ok; i++) {
        std::string name = str();
        GTensor t;
        uint32_t nd = u32();
        for (uint32_t d = 0; d < nd; d++) t.ne.push_back(u64());
        t.type = u32();
        uint64_t off = u64();
        infos.push_back({name, {t, off}});
    }
    size_t start = (pos + alignment - 1) / alignment * alignment;
    for (auto &in : infos) {
        in.second.first.data = g->buf.data() + start + in.second.second;
        g->tensors[in.first] = in.second.first;
    }
    return ok;
}

/* GGUF type id -> Maya dtype (the types used here). */
int maya_dtype(uint32_t ggml_type) {
    switch (ggml_type) {
    case 0: return DT_F32;
    case 1: return DT_F16;
    case 30: return DT_BF16;
    case 8: return DT_Q8_0;
    case 2: return DT_Q4_0;
    case 3: return DT_Q4_1;
    case 6: return DT_Q5_0;
    case 7: return DT_Q5_1;
    case 12: return DT_Q4_K;
    case 13: return DT_Q5_K;
    case 14: return DT_Q6_K;
    default: return -1;
    }
}

/* The HF name Maya binds for a GGUF matrix name (enough for the mixture rule), or "". */
std::string hf_name(const std::string &g) {
    if (g == "token_embd.weight") return "model.embed_tokens.weight";
    if (g == "output.weight") return "lm_head.weight";
    int layer;
    char rest[64];
    if (sscanf(g.c_str(), "blk.%d.%63s", &layer, rest) != 2) return "";
    std::string r = rest, p = "model.layers." + std::to_string(layer) + ".";
    static const std::map<std::string, std::string> m = {{"attn_q.weight", "self_attn.q_proj.weight"},
                                                         {"attn_k.weight", "self_attn.k_proj.weight"},
                                                         {"attn_v.weight", "self_attn.v_proj.weight"},
                                                         {"attn_output.weight", "self_attn.o_proj.weight"},
                                                         {"ffn_gate.weight", "mlp.gate_proj.weight"},
                                                         {"ffn_up.weight", "mlp.up_proj.weight"},
                                                         {"ffn_down.weight", "mlp.down_proj.weight"},
                                                         {"ffn_gate_inp.weight", "mlp.gate.weight"},
                                                         {"ffn_gate_exps.weight", "mlp.experts.0.gate_proj.weight"},
                                                         {"ffn_up_exps.weight", "mlp.experts.0.up_proj.weight"},
                                                         {"ffn_down_exps.weight", "mlp.experts.0.down_proj.weight"}};
    auto it = m.find(r);
    return it == m.end() ? "" : p + it->second;
}

} // namespace

TEST(ggml_quantizers_reproduce_llama_quantize) {
    // Every matrix of llama-F32.gguf quantized row by row equals llama-quantize --pure's blocks.
    std::string dir = test_repo_root() + "/test/fixtures/gguf/";
    GFile src;
    CHECK(read_gguf(dir + "llama-F32.gguf", &src));
    struct {
        const char *file;
        int dtype;
    } cases[] = {{"llama-Q8_0.gguf", DT_Q8_0},
                 {"llama-Q4_0.gguf", DT_Q4_0},
                 {"llama-Q5_0.gguf", DT_Q5_0},
                 {"llama-Q4_K.gguf", DT_Q4_K},
                 {"llama-Q6_K.gguf", DT_Q6_K}};
    for (auto &c : cases) {
        GFile q;
        CHECK(read_gguf(dir + c.file, &q));
        int64_t blocks = 0, differ = 0, matrices = 0;
        for (auto &kv : src.tensors) {
            const GTensor &s = kv.second;
            if (s.ne.size() != 2 || s.type != 0) continue;
            auto it = q.tensors.find(kv.first);
            if (it == q.tensors.end() || maya_dtype(it->second.type) != c.dtype) continue;
            int64_t cols = (int64_t)s.ne[0], rows = (int64_t)s.ne[1], rb = ggml_row_bytes(c.dtype, cols);
            std::vector<uint8_t> out((size_t)(rows * rb));
            ggml_quantize_matrix(c.dtype, s.data, DT_F32, rows, cols, out.data(), 2);
            int bb = ggml_block_bytes(c.dtype);
            for (int64_t b = 0; b < rows * rb / bb; b++) {
                blocks++;
                differ += memcmp(&out[(size_t)(b * bb)], it->second.data + b * bb, (size_t)bb) != 0;
            }
            matrices++;
        }
        CHECK_MSG(matrices == 16, "%s: %lld matrices compared", c.file, (long long)matrices);
        CHECK_MSG(differ == 0, "%s: %lld of %lld blocks differ", c.file, (long long)differ, (long long)blocks);
    }
}

TEST(ggml_q4_k_m_mixture_matches_llama_quantize_types) {
    // Each matrix's type in llama-quantize's Q4_K_M files (defaults, not --pure) is q4_k_m_dtype's,
    // fallbacks for rows that are not whole 256-blocks included (qwen3 / glm4 ffn_down of 320).
    std::string dir = test_repo_root() + "/test/fixtures/gguf/";
    for (const char *file : {"llama-Q4_K_M.gguf", "qwen3-Q4_K_M.gguf", "glm4-Q4_K_M.gguf", "qwen3moe-Q4_K_M.gguf"}) {
        GFile g;
        CHECK(read_gguf(dir + file, &g));
        bool is_tied = !g.tensors.count("output.weight");
        int checked = 0;
        for (auto &kv : g.tensors) {
            if (kv.second.ne.size() < 2) continue;
            std::string hf = hf_name(kv.first);
            if (hf.empty()) continue;
            DType want = q4_k_m_dtype(hf, (int64_t)kv.second.ne[0], (int)g.block_count, is_tied);
            int got = maya_dtype(kv.second.type);
            if (want == DT_OTHER) want = DT_F32; // kept: the fixtures' routers are F32
            CHECK_MSG(got == want, "%s %s: file %s, rule %s", file, kv.first.c_str(), dtype_name((DType)got),
                      dtype_name(want));
            checked++;
        }
        CHECK_MSG(checked >= 14, "%s: %d matrices checked", file, checked);
    }
}

TEST(ggml_file_type_mixtures_at_load) {
    // ENG_PARAM_WEIGHT_DTYPE Q8_0 / Q4_0 / Q6_K: the types llama-quantize (defaults, not --pure) gave
    // the matrices of the bench files (llama 110M, tied; GLM-4.5 MoE shape, untied, F32
    // routers): Q8_0 everywhere; Q4_0 with the output matrix (lm_head, or the tied embedding) at
    // Q6_K and an untied embedding at Q4_0; Q6_K everywhere, Q8_0 where rows are not 256-blocks.
    const int L = 12;
    for (bool tied : {true, false}) {
        CHECK(mixture_dtype(DT_Q8_0, "model.layers.3.mlp.down_proj.weight", 2048, L, tied) == DT_Q8_0);
        CHECK(mixture_dtype(DT_Q8_0, "lm_head.weight", 768, L, tied) == DT_Q8_0);
        CHECK(mixture_dtype(DT_Q4_0, "model.layers.3.self_attn.v_proj.weight", 768, L, tied) == DT_Q4_0);
        CHECK(mixture_dtype(DT_Q4_0, "lm_head.weight", 768, L, tied) == DT_Q6_K);
        CHECK(mixture_dtype(DT_Q6_K, "model.layers.0.mlp.up_proj.weight", 768, L, tied) == DT_Q6_K);
        CHECK(mixture_dtype(DT_Q6_K, "model.layers.0.mlp.down_proj.weight", 320, L, tied) == DT_Q8_0);
        for (DType mix : {DT_Q8_0, DT_Q4_0, DT_Q6_K}) {
            CHECK(mixture_dtype(mix, "model.layers.1.mlp.gate.weight", 1024, L, tied) == DT_OTHER); // routers
            CHECK(mixture_dtype(mix, "model.layers.1.mlp.down_proj.weight", 48, L, tied) == DT_OTHER);
        }
        // Q4_K_M is q4_k_m_dtype's rule.
        CHECK(mixture_dtype(DT_Q4_K, "model.layers.0.self_attn.v_proj.weight", 768, L, tied) ==
              q4_k_m_dtype("model.layers.0.self_attn.v_proj.weight", 768, L, tied));
    }
    CHECK(mixture_dtype(DT_Q4_0, "model.embed_tokens.weight", 768, L, true) == DT_Q6_K);
    CHECK(mixture_dtype(DT_Q4_0, "model.embed_tokens.weight", 1024, L, false) == DT_Q4_0);
}

TEST(f32_to_f16_rounds_to_nearest_even) {
    CHECK(f32_to_f16(1.0f) == 0x3C00 && f32_to_f16(-2.0f) == 0xC000 && f32_to_f16(65504.0f) == 0x7BFF);
    CHECK(f32_to_f16(65520.0f) == 0x7C00 && f32_to_f16(65519.0f) == 0x7BFF);           // the tie to infinity
    CHECK(f32_to_f16(1.0f + 1.0f / 2048) == 0x3C00);                                   // tie to even (down)
    CHECK(f32_to_f16(1.0f + 3.0f / 2048) == 0x3C02);                                   // tie to even (up)
    CHECK(f32_to_f16(5.9604645e-8f) == 0x0001 && f32_to_f16(2.9802322e-8f) == 0x0000); // 2^-24; 2^-25 ties to 0
    CHECK(f32_to_f16(6.097555e-5f) == 0x03FF && f32_to_f16(0.0f) == 0 && f32_to_f16(-0.0f) == 0x8000);
}

TEST(q4_k_m_at_load_gives_the_llama_quantize_files_logits) {
    // models/maya-demo (bf16 safetensors) loaded with ENG_PARAM_WEIGHT_DTYPE Q4_K builds the blocks
    // llama-quantize wrote to maya-demo-Q4_K_M.gguf (the two tests above), so the engine's logits must
    // meet that file's reference (test/fixtures/gguf/maya-demo.json: float64 over the same blocks)
    // within its bound, and its first greedy_checked greedy tokens.
    std::string root = test_repo_root(), text, err;
    CHECK(read_text_file(root + "/test/fixtures/gguf/maya-demo.json", &text) == 0);
    JsonValue fx;
    CHECK_MSG(json_parse(text.data(), text.size(), &fx, &err), "%s", err.c_str());
    const JsonValue *file = &fx.get("files")->items[0];
    CHECK(file->get("file")->string == "maya-demo-Q4_K_M.gguf");
    double bound = file->get("tolerance")->get("max_abs_logit_diff")->number;
    int64_t params[ENG_PARAM_COUNT] = {0};
    params[ENG_PARAM_N_THREADS] = 2;
    params[ENG_PARAM_WEIGHT_DTYPE] = ENG_WEIGHT_DTYPE_Q4_K;
    eng_ctx *ctx = nullptr;
    CHECK(test_ctx_create((root + "/models/maya-demo").c_str(), params, ENG_PARAM_COUNT, &ctx) == 0 && ctx);
    if (!ctx) return;
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    CHECK(info[ENG_INFO_WEIGHT_DTYPE] == ENG_WEIGHT_DTYPE_Q4_K);
    int32_t V = (int32_t)info[ENG_INFO_N_VOCAB];
    double worst = 0, worst_llama = 0;
    const JsonValue *prompts = fx.get("prompts");
    for (size_t p = 0; p < prompts->items.size(); p++) {
        const JsonValue &ref = file->get("prompts")->items[p];
        int n_check = (int)ref.get("greedy_checked")->integer;
        std::vector<int32_t> toks;
        for (const auto &v : prompts->items[p].items) toks.push_back((int32_t)v.integer);
        int32_t sid;
        CHECK(eng_seq_add(ctx, toks.data(), (int32_t)toks.size(), nullptr, 0, n_check > 0 ? n_check : 1, 0.0f, 1.0f, 0,
                          0, ENG_SEQ_KEEP_LOGITS, &sid) == 0);
        std::vector<int32_t> ev(4 * 16), got;
        std::vector<float> logits((size_t)V);
        for (int guard = 0; guard < 1000; guard++) {
            int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
            CHECK(n >= 0);
            bool done = n < 0;
            for (int i = 0; i < n; i++) {
                if (ev[(size_t)i * 4 + 1] == ENG_EVENT_TOKEN) {
                    if (got.empty()) {
                        CHECK(eng_seq_logits(ctx, sid, logits.data(), V) == V);
                        const auto &l = ref.get("last_logits")->items;
                        const auto &lq = ref.get("last_logits_actq")->get("llama.cpp")->items;
                        for (int32_t v = 0; v < V && v < (int32_t)l.size(); v++) {
                            double d = fabs(logits[(size_t)v] - l[(size_t)v].number);
                            double dq = fabs(logits[(size_t)v] - lq[(size_t)v].number);
                            worst = d > worst ? d : worst;
                            worst_llama = dq > worst_llama ? dq : worst_llama;
                        }
                    }
                    got.push_back(ev[(size_t)i * 4 + 2]);
                } else if (ev[(size_t)i * 4 + 1] == ENG_EVENT_FINISH) done = true;
            }
            if (done) break;
        }
        const auto &greedy = ref.get("greedy")->items;
        for (int i = 0; i < n_check; i++)
            CHECK_MSG(i < (int)got.size() && got[(size_t)i] == greedy[(size_t)i].integer,
                      "prompt %zu: greedy token %d differs", p, i);
    }
    CHECK_MSG(worst <= bound, "max |logit diff| %.3g over the bound %.3g", worst, bound);
    fprintf(stderr,
            "  maya-demo q4_k_m at load: max |logit diff| %.3g vs the float64 reference (bound %.3g), %.3g vs "
            "its llama.cpp activation-quantization simulation\n",
            worst, bound, worst_llama);
    eng_ctx_free(ctx);
}
