/* test_parsing.cpp: JSON reader, safetensors header validation, checkpoint and config errors. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../include/engine.h"
#include "../src/backend.h"
#include "../src/checkpoint.h"
#include "../src/common.h"
#include "../src/json.h"
#include "../src/model.h"
#include "model_writer.h"
#include "test.h"

using namespace maya;

static bool parse(const char *s, JsonValue *v, std::string *err = nullptr) {
    std::string e;
    return json_parse(s, strlen(s), v, err ? err : &e);
}

TEST(json_values_and_escapes) {
    JsonValue v;
    CHECK(parse(" {\"a\": [1, -2.5e2, true, false, null], \"s\": \"x\\u00e9\\ud83d\\ude00\\n\\\"\", \"o\": {}} ", &v));
    CHECK(v.kind == JsonValue::OBJECT && v.members.size() == 3);
    const JsonValue *a = v.get("a");
    CHECK(a && a->items.size() == 5);
    CHECK(a->items[0].is_integer && a->items[0].integer == 1);
    CHECK(a->items[1].number == -250.0 && a->items[1].integer == -250); // integral, written as a float
    CHECK(a->items[2].boolean && !a->items[3].boolean && a->items[4].is_null());
    CHECK(v.get("s")->string == "x\xc3\xa9\xf0\x9f\x98\x80\n\"");
    CHECK(v.get("o")->kind == JsonValue::OBJECT && v.get("missing") == nullptr);
    CHECK(parse("9007199254740993", &v) && v.is_integer && v.integer == 9007199254740993LL); // > 2^53: exact
    CHECK(parse("1.0", &v) && v.is_integer && v.integer == 1);
    CHECK(parse("1e-5", &v) && !v.is_integer && fabs(v.number - 1e-5) < 1e-20);
}

TEST(json_rejects_malformed) {
    const char *bad[] = {"",  "{",    "[1,]",        "{\"a\":1,}",   "\"abc",   "\"a\x01\"", "tru",       "01",   "1.",
                         "-", "{} x", "\"\\ud800\"", "\"\\udc00x\"", "\"\\q\"", "NaN",       "{\"a\" 1}", "[1 2]"};
    for (const char *s : bad) {
        JsonValue v;
        std::string err;
        CHECK_MSG(!parse(s, &v, &err), "accepted %s", s);
        CHECK(!err.empty());
    }
    std::string deep(300, '['), close(300, ']');
    JsonValue v;
    CHECK(!parse((deep + close).c_str(), &v));
    std::string ok(200, '['), okc(200, ']');
    CHECK(parse((ok + okc).c_str(), &v));
}

static std::vector<uint8_t> image(const std::string &header, size_t data_bytes) {
    std::vector<uint8_t> b(8 + header.size() + data_bytes, 0);
    for (int i = 0; i < 8; i++) b[(size_t)i] = (uint8_t)((uint64_t)header.size() >> (8 * i));
    memcpy(&b[8], header.data(), header.size());
    return b;
}

static int32_t parse_image(const std::vector<uint8_t> &img, std::unordered_map<std::string, Tensor> *out) {
    return safetensors_parse(img.data(), img.size(), "t.safetensors", out);
}

TEST(safetensors_header_validation) {
    std::unordered_map<std::string, Tensor> t;
    auto ok = image(
        "{\"__metadata__\":{\"format\":\"pt\"},\"w\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
        "\"q\":{\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[12,16]}}",
        16);
    CHECK(parse_image(ok, &t) == ENG_STATUS_OK);
    CHECK(t.size() == 2 && t["w"].dtype == DT_BF16 && t["w"].numel == 6 && t["w"].nbytes == 12);
    CHECK(t["q"].dtype == DT_OTHER && t["q"].dtype_str == "I8"); // parsed; refused only when used
    CHECK((const uint8_t *)t["w"].data == ok.data() + ok.size() - 16);

    struct Case {
        const char *header;
        size_t data;
        const char *expect;
    } cases[] = {
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,12]}}", 8, "out of range"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 8, "bytes for 2 elements"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "out of range"},
        {"{\"w\":{\"dtype\":\"F7\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype F7"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "bad shape"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "malformed"},
        {"[1]", 0, "not a JSON object"},
        {"{\"w\":", 0, "header JSON"},
    };
    for (const Case &c : cases) {
        t.clear();
        CHECK(parse_image(image(c.header, c.data), &t) == ENG_STATUS_BAD_CHECKPOINT);
        CHECK_MSG(strstr(last_error(), c.expect) != nullptr, "'%s' lacks '%s'", last_error(), c.expect);
    }
    std::vector<uint8_t> lie = image("{}", 0);
    lie[0] = 0xFF; // header length beyond the file
    CHECK(parse_image(lie, &t) == ENG_STATUS_BAD_CHECKPOINT && strstr(last_error(), "exceeds the file"));
    std::vector<uint8_t> tiny(5, 0);
    CHECK(parse_image(tiny, &t) == ENG_STATUS_BAD_CHECKPOINT);
}

TEST(checkpoint_errors_name_the_problem) {
    std::string dir = test_tmpdir("ckpt");
    Checkpoint missing;
    CHECK(missing.open(dir + "/nope") == ENG_STATUS_IO && strstr(last_error(), "config.json"));
    CHECK(write_text(dir + "/config.json", "{\"architectures\":[\"LlamaForCausalLM\"]}"));
    Checkpoint none;
    CHECK(none.open(dir) == ENG_STATUS_IO && strstr(last_error(), "model.safetensors"));
    // A sharded index naming a tensor that the shard lacks.
    RawTensor a{"a", "F32", {2}, std::vector<uint8_t>(8, 0)};
    CHECK(write_safetensors(dir + "/s1.safetensors", {a}));
    CHECK(write_text(dir + "/model.safetensors.index.json",
                     "{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s1.safetensors\"}}"));
    Checkpoint sharded;
    CHECK(sharded.open(dir) == ENG_STATUS_BAD_CHECKPOINT && strstr(last_error(), "tensor b"));
    CHECK(write_text(dir + "/model.safetensors.index.json", "{\"weight_map\":{\"a\":\"../s1.safetensors\"}}"));
    Checkpoint escape;
    CHECK(escape.open(dir) == ENG_STATUS_BAD_CHECKPOINT);
    CHECK(write_text(dir + "/model.safetensors.index.json", "{\"weight_map\":{\"a\":\"s1.safetensors\"}}"));
    Checkpoint good;
    CHECK(good.open(dir) == ENG_STATUS_OK);
    const Tensor *t = nullptr;
    CHECK(good.require("a", {2}, &t) == ENG_STATUS_OK && t && t->numel == 2);
    CHECK(good.require("a", {3}, &t) == ENG_STATUS_BAD_CHECKPOINT &&
          strstr(last_error(), "tensor a has shape [2], expected [3]"));
    CHECK(good.require("zz", {2}, &t) == ENG_STATUS_BAD_CHECKPOINT && strstr(last_error(), "missing tensor zz"));
}

TEST(config_parsing) {
    JsonValue c;
    ModelConfig m;
    CHECK(parse("{\"architectures\":[\"MistralForCausalLM\"]}", &c));
    CHECK(model_config_parse(c, &m) == ENG_STATUS_UNSUPPORTED && strstr(last_error(), "MistralForCausalLM"));
    CHECK(parse("{\"architectures\":[\"LlamaForCausalLM\"],\"vocab_size\":10,\"hidden_size\":8}", &c));
    CHECK(model_config_parse(c, &m) == ENG_STATUS_BAD_CHECKPOINT && strstr(last_error(), "num_hidden_layers"));
    CHECK(parse("{\"architectures\":[\"Glm4ForCausalLM\"],\"vocab_size\":10,\"hidden_size\":64,\"num_hidden_layers\":1,"
                "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":8}",
                &c));
    CHECK(model_config_parse(c, &m) == ENG_STATUS_OK);
    // Glm4Config defaults: head_dim 128, partial_rotary_factor 0.5, interleaved, q/k/v bias, o without.
    CHECK(m.arch == ARCH_GLM4 && m.head_dim == 128 && m.rotary_dim == 64 && m.is_rope_interleaved);
    CHECK(m.has_qkv_bias && !m.has_o_bias && m.has_sandwich_norms && m.max_pos == 2048);
    CHECK(parse(
        "{\"architectures\":[\"LlamaForCausalLM\"],\"vocab_size\":10,\"hidden_size\":64,\"num_hidden_layers\":1,"
        "\"num_attention_heads\":4,\"intermediate_size\":8,\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":32.0,"
        "\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,\"original_max_position_embeddings\":8192},\"rope_theta\":"
        "500000.0}",
        &c));
    CHECK(model_config_parse(c, &m) == ENG_STATUS_OK);
    CHECK(m.head_dim == 16 && m.n_head_kv == 4 && m.rope_factor == 32.0f && m.rope_theta == 500000.0f &&
          !m.is_rope_interleaved);
    CHECK(
        parse("{\"architectures\":[\"LlamaForCausalLM\"],\"vocab_size\":10,\"hidden_size\":64,\"num_hidden_layers\":1,"
              "\"num_attention_heads\":4,\"intermediate_size\":8,\"rope_scaling\":{\"type\":\"yarn\",\"factor\":4.0}}",
              &c));
    CHECK(model_config_parse(c, &m) == ENG_STATUS_UNSUPPORTED && strstr(last_error(), "yarn"));
    CHECK(
        parse("{\"architectures\":[\"Qwen3ForCausalLM\"],\"vocab_size\":10,\"hidden_size\":64,\"num_hidden_layers\":1,"
              "\"num_attention_heads\":3,\"num_key_value_heads\":2,\"intermediate_size\":8}",
              &c));
    CHECK(model_config_parse(c, &m) == ENG_STATUS_BAD_CHECKPOINT); // 3 heads over 2 kv heads
    CHECK(parse(
        "{\"architectures\":[\"Qwen3ForCausalLM\"],\"vocab_size\":10,\"hidden_size\":64,\"num_hidden_layers\":1,"
        "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":8,\"use_sliding_window\":true}",
        &c));
    CHECK(model_config_parse(c, &m) == ENG_STATUS_UNSUPPORTED && strstr(last_error(), "use_sliding_window"));
    CHECK(parse(
        "{\"architectures\":[\"Qwen3ForCausalLM\"],\"vocab_size\":10,\"hidden_size\":64,\"num_hidden_layers\":1,"
        "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":8,\"use_sliding_window\":false,"
        "\"sliding_window\":null,\"hidden_act\":\"gelu\"}",
        &c));
    CHECK(model_config_parse(c, &m) == ENG_STATUS_UNSUPPORTED && strstr(last_error(), "gelu"));
}

TEST(moe_and_mla_config_parsing) {
    JsonValue c;
    ModelConfig m;
    // Overrides go first (the JSON reader keeps the first of duplicate keys).
    const char *glm =
        "{\"architectures\":[\"Glm4MoeForCausalLM\"]%s,\"vocab_size\":10,\"hidden_size\":64,"
        "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":32,"
        "\"intermediate_size\":8,\"n_routed_experts\":16,\"num_experts_per_tok\":4,\"moe_intermediate_size\":8,"
        "\"n_group\":4,\"topk_group\":2,\"first_k_dense_replace\":1,\"use_qk_norm\":true,"
        "\"num_nextn_predict_layers\":1,\"routed_scaling_factor\":2.5}";
    char buf[1024];
    snprintf(buf, sizeof buf, glm, "");
    CHECK(parse(buf, &c) && model_config_parse(c, &m) == ENG_STATUS_OK);
    // Glm4MoeConfig: partial_rotary_factor 0.5 with half-split pairs, no o_proj bias, eps 1e-5.
    CHECK(m.arch == ARCH_GLM4_MOE && m.rotary_dim == 16 && !m.is_rope_interleaved && m.has_qk_norm && !m.has_o_bias);
    CHECK(m.n_expert == 16 && m.n_expert_used == 4 && m.n_ff_shared == 8 && m.routed_scale == 2.5f &&
          m.rms_eps == 1e-5f);
    CHECK(!m.is_moe_layer(0) && m.is_moe_layer(1) && m.kv_floats_per_token() == 2 * 2 * 32);
    snprintf(buf, sizeof buf, glm, ",\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4}");
    CHECK(parse(buf, &c) && model_config_parse(c, &m) == ENG_STATUS_UNSUPPORTED &&
          strstr(last_error(), "quantization_config.quant_method gptq"));
    snprintf(buf, sizeof buf, glm,
             ",\"quantization_config\":{\"quant_method\":\"fp8\",\"fmt\":\"e5m2\",\"weight_block_size\":[128,128]}");
    CHECK(parse(buf, &c) && model_config_parse(c, &m) == ENG_STATUS_UNSUPPORTED &&
          strstr(last_error(), "quantization_config.fmt e5m2"));
    snprintf(buf, sizeof buf, glm,
             ",\"quantization_config\":{\"quant_method\":\"fp8\",\"fmt\":\"e4m3\",\"weight_block_size\":[64,64]}");
    CHECK(parse(buf, &c) && model_config_parse(c, &m) == ENG_STATUS_UNSUPPORTED &&
          strstr(last_error(), "quantization_config.weight_block_size"));
    snprintf(buf, sizeof buf, glm,
             ",\"quantization_config\":{\"quant_method\":\"fp8\",\"fmt\":\"e4m3\",\"weight_block_size\":[128,128],"
             "\"activation_scheme\":\"dynamic\"}");
    CHECK(parse(buf, &c) && model_config_parse(c, &m) == ENG_STATUS_OK);
    snprintf(buf, sizeof buf, glm, ",\"topk_group\":5"); // 5 of 4 groups
    CHECK(parse(buf, &c));
    CHECK(model_config_parse(c, &m) == ENG_STATUS_BAD_CHECKPOINT && strstr(last_error(), "topk_group 5"));
    snprintf(buf, sizeof buf, glm, ",\"scoring_func\":\"softmax\"");
    CHECK(parse(buf, &c) && model_config_parse(c, &m) == ENG_STATUS_UNSUPPORTED &&
          strstr(last_error(), "scoring_func softmax"));

    const char *ds =
        "{\"architectures\":[\"DeepseekV3ForCausalLM\"],\"vocab_size\":10,\"hidden_size\":64,"
        "\"num_hidden_layers\":4,\"num_attention_heads\":128,\"num_key_value_heads\":128,\"intermediate_size\":8,"
        "\"n_routed_experts\":256,\"num_experts_per_tok\":8,\"moe_intermediate_size\":8,\"n_group\":8,"
        "\"topk_group\":4,\"q_lora_rank\":null,\"kv_lora_rank\":512,\"qk_nope_head_dim\":128,"
        "\"qk_rope_head_dim\":64,\"v_head_dim\":128,\"max_position_embeddings\":163840,"
        "\"rope_scaling\":{\"type\":\"yarn\",\"factor\":40,\"original_max_position_embeddings\":4096,"
        "\"beta_fast\":32,\"beta_slow\":1,\"mscale\":1.0,\"mscale_all_dim\":1.0}%s}";
    snprintf(buf, sizeof buf, ds, "");
    CHECK(parse(buf, &c));
    CHECK_MSG(model_config_parse(c, &m) == ENG_STATUS_OK, "%s", last_error());
    // V3's own numbers: 576 cached floats per token and layer; scale 192^-0.5 * (0.1 ln 40 + 1)^2.
    CHECK(m.arch == ARCH_DEEPSEEK_V3 && m.is_mla() && m.q_lora_rank == 0 && m.kv_floats_per_token() == 576);
    CHECK(m.head_dim == 192 && m.rotary_dim == 64 && m.is_rope_interleaved && m.is_yarn && m.first_dense == 3);
    double ms = 0.1 * log(40.0) + 1.0;
    CHECK(fabs(m.attn_scale - 1.0 / sqrt(192.0) * ms * ms) < 1e-6 && m.rope_attn_factor == 1.0f &&
          m.yarn_factor == 40.0f);
    CHECK(m.routed_scale == 2.5f); // DeepseekV3Config default
    snprintf(buf, sizeof buf, ds, ",\"index_topk\":2048,\"index_n_heads\":64");
    CHECK(parse(buf, &c) && model_config_parse(c, &m) == ENG_STATUS_UNSUPPORTED && strstr(last_error(), "index_topk"));
    CHECK(parse("{\"architectures\":[\"DeepseekV32ForCausalLM\"]}", &c));
    CHECK(model_config_parse(c, &m) == ENG_STATUS_UNSUPPORTED && strstr(last_error(), "DeepseekV32ForCausalLM"));
}

TEST(abi_create_errors_and_last_error) {
    std::string dir = test_tmpdir("abi");
    RandomModelSpec s;
    CHECK(write_random_model(dir, s));
    // Remove one layer tensor by writing a checkpoint without it.
    std::string broken = test_tmpdir("abi-broken");
    CHECK(write_text(broken + "/config.json",
                     "{\"architectures\":[\"LlamaForCausalLM\"],\"vocab_size\":64,\"hidden_size\":32,"
                     "\"num_hidden_layers\":1,\"num_attention_heads\":4,\"intermediate_size\":48}"));
    RawTensor e{"model.embed_tokens.weight", "F32", {64, 32}, std::vector<uint8_t>(64 * 32 * 4, 0)};
    RawTensor n{"model.norm.weight", "F32", {32}, std::vector<uint8_t>(32 * 4, 0)};
    RawTensor h{"lm_head.weight", "F32", {64, 16}, std::vector<uint8_t>(64 * 16 * 4, 0)};
    CHECK(write_safetensors(broken + "/model.safetensors", {e, n, h}));
    eng_ctx *ctx = (eng_ctx *)1;
    CHECK(eng_ctx_create(broken.c_str(), nullptr, 0, &ctx) == ENG_STATUS_BAD_CHECKPOINT && ctx == nullptr);
    char buf[256];
    int32_t len = eng_last_error(buf, sizeof buf);
    CHECK(len > 0 && strstr(buf, "lm_head.weight has shape [64, 16], expected [64, 32]"));
    CHECK(eng_last_error(buf, 4) == -(len + 1)); // size query
    CHECK(eng_last_error(nullptr, 0) == -(len + 1));
    CHECK(eng_ctx_create(nullptr, nullptr, 0, &ctx) == ENG_STATUS_INVALID_ARG);
    int64_t cuda[1] = {2};
    if (!maya::cuda_backend_usable(nullptr))
        CHECK(eng_ctx_create(dir.c_str(), cuda, 1, &ctx) == ENG_STATUS_UNSUPPORTED);
    CHECK(test_ctx_create(dir.c_str(), nullptr, 0, &ctx) == ENG_STATUS_OK && ctx);
    int64_t info[ENG_INFO_COUNT + 4];
    CHECK(eng_ctx_info(ctx, info, ENG_INFO_COUNT + 4) == ENG_INFO_COUNT);
    CHECK(info[ENG_INFO_N_VOCAB] == 64 && info[ENG_INFO_ARCH] == ENG_ARCH_LLAMA && info[ENG_INFO_N_CTX] == 256);
    CHECK(info[ENG_INFO_BLOCK_SIZE] == 16 && info[ENG_INFO_BACKEND] == ENG_BACKEND_CPU);
    CHECK(eng_ctx_info(ctx, info, 3) == 3);
    CHECK(eng_abi_version() == ENG_ABI_VERSION &&
          strcmp(eng_status_str(ENG_STATUS_CONTEXT_OVERFLOW), "context overflow") == 0);
    eng_ctx_free(ctx);
    eng_ctx_free(nullptr);
}

TEST(parsers_survive_mutated_input) {
    // Random byte mutations of a valid safetensors image and of a config: every outcome is a
    // status (run under -fsanitize=address,undefined to check memory safety too).
    std::string header =
        "{\"a\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]},\"__metadata__\":{\"k\":\"v\\u00e9\"}}";
    std::vector<uint8_t> base = image(header, 16);
    uint64_t s = 12345;
    auto rnd = [&]() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    };
    int ok = 0, bad = 0;
    for (int iter = 0; iter < 3000; iter++) {
        std::vector<uint8_t> img = base;
        int muts = 1 + (int)(rnd() % 4);
        for (int m = 0; m < muts; m++) {
            size_t pos = rnd() % img.size();
            switch (rnd() % 3) {
            case 0: img[pos] = (uint8_t)rnd(); break;
            case 1: img[pos] = "{}[]\",:0-9e.\\u"[rnd() % 15]; break;
            default: img.resize(pos > 8 ? pos : 8); break; // truncate
            }
        }
        std::unordered_map<std::string, Tensor> t;
        int32_t st = parse_image(img, &t);
        CHECK(st == ENG_STATUS_OK || st == ENG_STATUS_BAD_CHECKPOINT);
        if (st == ENG_STATUS_OK) {
            ok++;
            for (auto &kv : t) CHECK((const uint8_t *)kv.second.data + kv.second.nbytes <= img.data() + img.size());
        } else bad++;
    }
    CHECK(ok > 0 && bad > 0);
    const char *cfg =
        "{\"architectures\":[\"Qwen3ForCausalLM\"],\"vocab_size\":10,\"hidden_size\":64,\"num_hidden_layers\":1,"
        "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":8,\"head_dim\":16}";
    for (int iter = 0; iter < 3000; iter++) {
        std::string c = cfg;
        size_t pos = rnd() % c.size();
        c[pos] = "{}[]\",:0123456789-e.\\ntf"[rnd() % 24];
        JsonValue v;
        std::string err;
        if (json_parse(c.data(), c.size(), &v, &err)) {
            ModelConfig m;
            int32_t st = model_config_parse(v, &m);
            CHECK(st == ENG_STATUS_OK || st == ENG_STATUS_BAD_CHECKPOINT || st == ENG_STATUS_UNSUPPORTED);
        } else {
            CHECK(!err.empty());
        }
    }
}

// The FP8 fixture through eng_ctx_create with its config edited: the errors name what is wrong.
TEST(fp8_checkpoint_load_errors_name_the_field) {
    std::string src = test_repo_root() + "/test/fixtures/engine/deepseek3-fp8", text;
    CHECK(read_text_file(src + "/config.json", &text) == ENG_STATUS_OK);
    auto try_load = [&](const std::string &config, int32_t want, const char *needle) {
        std::string dir = test_tmpdir("fp8-errors");
        CHECK(write_text(dir + "/config.json", config));
        unlink((dir + "/model.safetensors").c_str());
        CHECK(symlink((src + "/model.safetensors").c_str(), (dir + "/model.safetensors").c_str()) == 0);
        int64_t params[ENG_PARAM_COUNT] = {0};
        params[ENG_PARAM_N_THREADS] = 1;
        eng_ctx *ctx = nullptr;
        int32_t st = test_ctx_create(dir.c_str(), params, ENG_PARAM_COUNT, &ctx);
        char msg[512] = "";
        eng_last_error(msg, sizeof msg);
        CHECK_MSG(st == want && strstr(msg, needle), "status %d, message: %s", st, msg);
        if (ctx) eng_ctx_free(ctx);
    };
    try_load(text, ENG_STATUS_OK, "");
    size_t q = text.find("\"quant_method\": \"fp8\"");
    CHECK(q != std::string::npos);
    std::string mx = text;
    mx.replace(q, strlen("\"quant_method\": \"fp8\""), "\"quant_method\": \"mxfp4\"");
    try_load(mx, ENG_STATUS_UNSUPPORTED, "quantization_config.quant_method mxfp4");
    // Without quantization_config the F8_E4M3 tensors are refused by name.
    size_t a = text.find("  \"quantization_config\": {"), b = text.find("  },\n", a);
    CHECK(a != std::string::npos && b != std::string::npos);
    std::string none = text;
    none.erase(a, b + 5 - a);
    try_load(none, ENG_STATUS_BAD_CHECKPOINT, "is F8_E4M3 but config.json has no quantization_config");
}
