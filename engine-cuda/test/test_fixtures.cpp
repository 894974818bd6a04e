/* test_fixtures.cpp: the engine against the PyTorch golden fixtures (test/fixtures/engine):
 * last-position logits within 1e-3 and identical greedy continuations, through the public ABI. */
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "../include/engine.h"
#include "../src/checkpoint.h" // read_text_file
#include "../src/json.h"
#include "../src/kernels.h"
#include "test.h"

/* Q8 runs (ENG_PARAM_WEIGHT_DTYPE q8) measure instead of requiring the f32 tolerance: the largest
 * |logit diff| at the prompts' last positions and the greedy tokens equal to the reference before
 * the first difference (fewest over the prompts). */
struct Q8Result {
    double worst = 0;
    int agree = 0, n_greedy = 0;
};

// Bounds of fixture_q8_weights_accuracy: measured on every path (avx512 shown: max |logit diff|
// 0.179 / 0.149 / 0.129 / 0.132 / 0.201, greedy agreement 2 / 3 / 0 / 1 / 1 tokens), loosened by
// about 1.5x and one token. The random fixtures' top-2 logit gaps are as small as 0.05, so their
// greedy paths part early; the logit difference is the meaningful bound.
#define Q8_LLAMA_DIFF 0.3
#define Q8_LLAMA_AGREE 1
#define Q8_GLM4_DIFF 0.3
#define Q8_GLM4_AGREE 2
#define Q8_QWEN3_DIFF 0.3
#define Q8_QWEN3_AGREE 0
#define Q8_MOE_DIFF 0.3
#define Q8_MOE_AGREE 0
#define Q8_DS_DIFF 0.3
#define Q8_DS_AGREE 0

/* Runs every prompt of the fixture at once and checks the prompt's last logits and the greedy
 * continuation against the reference. q8: 8-bit weights, measured into *q8 (not checked). kv: the
 * ENG_PARAM_KV_DTYPE value (default f32: the fixtures' exactness; 0 = the engine's default);
 * measure: as q8 but with the stored weights (the KV dtypes' tests). */
static void run_fixture(const char *name, int64_t n_threads, int64_t chunk, int64_t want_simd = -1,
                        Q8Result *q8 = nullptr, int64_t kv = 1 + ENG_KV_DTYPE_F32, Q8Result *measure = nullptr) {
    std::string dir = test_repo_root() + "/test/fixtures/engine/" + name;
    std::string text;
    CHECK(maya::read_text_file(dir + "/fixtures.json", &text) == 0);
    maya::JsonValue fx;
    std::string err;
    CHECK_MSG(maya::json_parse(text.data(), text.size(), &fx, &err), "%s", err.c_str());
    int64_t params[ENG_PARAM_COUNT] = {0};
    params[ENG_PARAM_N_THREADS] = n_threads;
    params[ENG_PARAM_PREFILL_CHUNK] = chunk;
    if (q8) params[ENG_PARAM_WEIGHT_DTYPE] = ENG_WEIGHT_DTYPE_Q8;
    params[ENG_PARAM_KV_DTYPE] = q8 ? 0 : kv;
    if (want_simd >= 0) params[ENG_PARAM_SIMD] = 1 + want_simd; // 1 + ENG_SIMD_*
    eng_ctx *ctx = nullptr;
    int32_t st = test_ctx_create(dir.c_str(), params, ENG_PARAM_COUNT, &ctx);
    char msg[512] = "";
    eng_last_error(msg, sizeof msg);
    CHECK_MSG(st == 0 && ctx, "%s: %s", name, msg);
    if (!ctx) return;
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    int32_t V = (int32_t)info[ENG_INFO_N_VOCAB];
    if (want_simd >= 0) CHECK(info[ENG_INFO_SIMD] == want_simd);
    CHECK(info[ENG_INFO_N_THREADS] == n_threads);
    // The fixture's name ends with its stored dtype; q8 replaces it.
    std::string nm = name;
    auto ends = [&](const char *tail) {
        return nm.size() >= strlen(tail) && nm.compare(nm.size() - strlen(tail), std::string::npos, tail) == 0;
    };
    int64_t want_dtype = q8              ? ENG_WEIGHT_DTYPE_Q8
                         : ends("-fp8")  ? ENG_WEIGHT_DTYPE_FP8
                         : ends("-bf16") ? ENG_WEIGHT_DTYPE_BF16
                         : ends("-f16")  ? ENG_WEIGHT_DTYPE_F16
                                         : ENG_WEIGHT_DTYPE_F32;
    CHECK_MSG(info[ENG_INFO_WEIGHT_DTYPE] == want_dtype, "%s: weight dtype %lld, expected %lld", name,
              (long long)info[ENG_INFO_WEIGHT_DTYPE], (long long)want_dtype);
    int n_greedy = (int)fx.get("greedy_tokens")->integer;
    const maya::JsonValue *prompts = fx.get("prompts");
    // All prompts at once: exercises batching (mixed prefill chunks and decodes) at the same time.
    std::vector<int32_t> ids(prompts->items.size());
    for (size_t p = 0; p < prompts->items.size(); p++) {
        std::vector<int32_t> toks;
        for (const auto &v : prompts->items[p].get("ids")->items) toks.push_back((int32_t)v.integer);
        st = eng_seq_add(ctx, toks.data(), (int32_t)toks.size(), nullptr, 0, n_greedy, 0.0f, 1.0f, 0, 0,
                         ENG_SEQ_KEEP_LOGITS, &ids[p]);
        CHECK(st == 0);
    }
    std::vector<std::vector<int32_t>> got(ids.size());
    std::vector<float> logits((size_t)V);
    std::vector<int32_t> ev(4 * 64);
    double worst = 0;
    int finished = 0;
    for (int guard = 0; guard < 10000 && finished < (int)ids.size(); guard++) {
        int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
        CHECK(n >= 0);
        if (n < 0) break;
        for (int i = 0; i < n; i++) {
            int32_t sid = ev[(size_t)i * 4], kind = ev[(size_t)i * 4 + 1], tok = ev[(size_t)i * 4 + 2];
            size_t p = 0;
            while (p < ids.size() && ids[p] != sid) p++;
            if (kind == ENG_EVENT_TOKEN) {
                if (got[p].empty()) { // the first token: compare the prompt's last logits
                    CHECK(eng_seq_logits(ctx, sid, logits.data(), V) == V);
                    const auto &ref = prompts->items[p].get("last_logits")->items;
                    CHECK((int32_t)ref.size() == V);
                    for (int32_t v = 0; v < V && v < (int32_t)ref.size(); v++) {
                        double d = fabs((double)logits[(size_t)v] - ref[(size_t)v].number);
                        if (d > worst) worst = d;
                    }
                }
                got[p].push_back(tok);
            } else if (kind == ENG_EVENT_FINISH) {
                finished++;
                CHECK(ev[(size_t)i * 4 + 3] == ENG_FINISH_LENGTH);
            }
        }
    }
    CHECK(finished == (int)ids.size());
    if (measure) q8 = measure;
    if (q8) {
        q8->worst = worst;
        q8->n_greedy = n_greedy;
        q8->agree = n_greedy;
        for (size_t p = 0; p < ids.size(); p++) {
            const auto &ref = prompts->items[p].get("greedy")->items;
            int same = 0;
            while (same < (int)ref.size() && same < (int)got[p].size() &&
                   ref[(size_t)same].integer == got[p][(size_t)same])
                same++;
            if (same < q8->agree) q8->agree = same;
        }
        eng_ctx_free(ctx);
        return;
    }
    for (size_t p = 0; p < ids.size(); p++) {
        const auto &ref = prompts->items[p].get("greedy")->items;
        bool same = ref.size() == got[p].size();
        for (size_t i = 0; same && i < ref.size(); i++) same = ref[i].integer == got[p][i];
        CHECK_MSG(same, "%s prompt %zu: greedy continuation differs", name, p);
    }
    fprintf(stderr, "  %s (threads %lld, chunk %lld): max |logit diff| %.3g\n", name, (long long)n_threads,
            (long long)chunk, worst);
    // The CUDA backend (test-gpu.sh sets MAYA_ENGINE_BACKEND=cuda) is held to issue 18's bf16
    // tolerance while its prefill uses the tensor cores (activations as two bf16 terms; about 4e-5
    // expected), and to the CPU's with MAYA_CUDA_TC_MIN_TOKENS=0 (f32 SIMT matmuls throughout).
    // It runs the dense fixtures (f32/f16/bf16 attention + MLP, f32 KV rows) and refuses the others
    // at load, which then run on the CPU (test_ctx_create): a change to either is a change to this list.
    const char *be = getenv("MAYA_ENGINE_BACKEND"), *tc = getenv("MAYA_CUDA_TC_MIN_TOKENS");
    bool is_dense = nm == "glm4-bf16" || nm == "llama-f32" || nm == "qwen3-f16";
    bool is_cuda = be && strcmp(be, "cuda") == 0 && is_dense && kv == 1 + ENG_KV_DTYPE_F32;
    bool is_tc = is_cuda && !(tc && strcmp(tc, "0") == 0);
    CHECK_MSG(info[ENG_INFO_BACKEND] == (is_cuda ? ENG_BACKEND_CUDA : ENG_BACKEND_CPU), "%s ran on backend %lld", name,
              (long long)info[ENG_INFO_BACKEND]);
    CHECK(!is_cuda || !test_ctx_refused_by_cuda());
    CHECK(worst <= (is_tc ? 2e-2 : 1e-3));
    eng_ctx_free(ctx);
}

TEST(fixture_glm4_bf16) {
    run_fixture("glm4-bf16", 2, 256);
    run_fixture("glm4-bf16", 1, 7); // tiny chunks: prefill spread over many steps
}
TEST(fixture_llama_f32_sharded) {
    run_fixture("llama-f32", 2, 256);
    run_fixture("llama-f32", 1, 7);
}
TEST(fixture_qwen3_f16_tied) {
    run_fixture("qwen3-f16", 2, 256);
    run_fixture("qwen3-f16", 1, 7);
}

// MoE families (scripts/oracle/make_moe_fixtures.py): GLM-4.5 (grouped sigmoid routing, shared
// experts, QK-norm, half-split partial RoPE) and DeepSeek-V3 (MLA absorbed over the latent cache,
// YaRN), each in BF16 and block-FP8 with dims off the 128 grid.
TEST(fixture_glm45_moe_bf16) {
    run_fixture("glm45-moe-bf16", 2, 256);
    run_fixture("glm45-moe-bf16", 1, 7);
}
TEST(fixture_glm45_moe_fp8) {
    run_fixture("glm45-moe-fp8", 2, 256);
    run_fixture("glm45-moe-fp8", 1, 7);
}
TEST(fixture_deepseek3_bf16) {
    run_fixture("deepseek3-bf16", 2, 256);
    run_fixture("deepseek3-bf16", 1, 7);
}
TEST(fixture_deepseek3_fp8_q_lora_null) {
    run_fixture("deepseek3-fp8", 2, 256);
    run_fixture("deepseek3-fp8", 1, 7);
}

TEST(fixture_portable_kernels) {
    // The scalar fallback end to end (ENG_PARAM_SIMD 1 + ENG_SIMD_SCALAR forces it for that context).
    run_fixture("glm4-bf16", 2, 32, ENG_SIMD_SCALAR);
    run_fixture("qwen3-f16", 2, 32, ENG_SIMD_SCALAR);
    run_fixture("glm45-moe-fp8", 2, 32, ENG_SIMD_SCALAR);
    run_fixture("deepseek3-bf16", 2, 32, ENG_SIMD_SCALAR);
}

/* Greedy tokens of prompt 0 on a context, one step at a time (the caller interleaves contexts). */
struct GreedyRun {
    eng_ctx *ctx = nullptr;
    std::vector<int32_t> got;
    bool done = false;
    void step() {
        int32_t ev[4 * 8];
        int32_t n = eng_step(ctx, ev, (int32_t)(sizeof ev / sizeof ev[0]));
        CHECK(n >= 0);
        for (int32_t i = 0; i < n; i++) {
            if (ev[i * 4 + 1] == ENG_EVENT_TOKEN) got.push_back(ev[i * 4 + 2]);
            if (ev[i * 4 + 1] == ENG_EVENT_FINISH) done = true;
        }
        if (n < 0) done = true;
    }
};

TEST(fixture_two_contexts_keep_their_own_kernel_paths) {
    // ENG_PARAM_SIMD is per context: a scalar one and a fastest-path one live in one process at
    // once, each reports its own table and both give the fixture's greedy continuation (steps
    // interleaved).
    std::string dir = test_repo_root() + "/test/fixtures/engine/glm4-bf16";
    std::string text;
    CHECK(maya::read_text_file(dir + "/fixtures.json", &text) == 0);
    maya::JsonValue fx;
    std::string err;
    CHECK_MSG(maya::json_parse(text.data(), text.size(), &fx, &err), "%s", err.c_str());
    const maya::Kernels *t[3];
    int64_t fastest = maya::kernels_supported(t) - 1;
    const maya::JsonValue &prompt = fx.get("prompts")->items[0];
    std::vector<int32_t> toks;
    for (const auto &v : prompt.get("ids")->items) toks.push_back((int32_t)v.integer);
    int32_t n_greedy = (int32_t)fx.get("greedy_tokens")->integer;
    GreedyRun runs[2];
    for (int i = 0; i < 2; i++) {
        int64_t params[ENG_PARAM_COUNT] = {0};
        params[ENG_PARAM_BACKEND] = ENG_BACKEND_CPU; // kernel tables are the CPU backend's
        params[ENG_PARAM_N_THREADS] = 1;
        params[ENG_PARAM_SIMD] = 1 + (i == 0 ? (int64_t)ENG_SIMD_SCALAR : fastest); // scalar, then the fastest
        CHECK(test_ctx_create(dir.c_str(), params, ENG_PARAM_COUNT, &runs[i].ctx) == 0 && runs[i].ctx);
        if (!runs[i].ctx) return;
    }
    for (int i = 0; i < 2; i++) {
        int64_t info[ENG_INFO_COUNT];
        eng_ctx_info(runs[i].ctx, info, ENG_INFO_COUNT);
        CHECK(info[ENG_INFO_SIMD] == (i == 0 ? (int64_t)ENG_SIMD_SCALAR : fastest));
        int32_t id;
        CHECK(eng_seq_add(runs[i].ctx, toks.data(), (int32_t)toks.size(), nullptr, 0, n_greedy, 0.0f, 1.0f, 0, 0, 0,
                          &id) == 0);
    }
    for (int guard = 0; guard < 1000 && !(runs[0].done && runs[1].done); guard++)
        for (GreedyRun &r : runs)
            if (!r.done) r.step();
    const auto &ref = prompt.get("greedy")->items;
    for (GreedyRun &r : runs) {
        bool same = ref.size() == r.got.size();
        for (size_t i = 0; same && i < ref.size(); i++) same = ref[i].integer == r.got[i];
        CHECK(same);
        eng_ctx_free(r.ctx);
    }
}

TEST(fixture_q8_weights_accuracy) {
    // 8-bit weights (ENG_PARAM_WEIGHT_DTYPE q8) against the f32 PyTorch reference of each fixture:
    // printed, and held to bounds measured with margin (engine-cuda/README.md has the table).
    struct Bound {
        const char *name;
        double max_diff;
        int min_agree;
    };
    const Bound bounds[] = {
        {"llama-f32", Q8_LLAMA_DIFF, Q8_LLAMA_AGREE}, {"glm4-bf16", Q8_GLM4_DIFF, Q8_GLM4_AGREE},
        {"qwen3-f16", Q8_QWEN3_DIFF, Q8_QWEN3_AGREE}, {"glm45-moe-bf16", Q8_MOE_DIFF, Q8_MOE_AGREE},
        {"deepseek3-bf16", Q8_DS_DIFF, Q8_DS_AGREE},
    };
    for (const Bound &b : bounds) {
        Q8Result r;
        run_fixture(b.name, 2, 256, -1, &r);
        fprintf(stderr, "  %s q8: max |logit diff| %.3g, greedy equal for the first %d of %d tokens (every prompt)\n",
                b.name, r.worst, r.agree, r.n_greedy);
        CHECK_MSG(r.worst <= b.max_diff, "%s q8: max |logit diff| %.3g > %.3g", b.name, r.worst, b.max_diff);
        CHECK_MSG(r.agree >= b.min_agree, "%s q8: greedy agreement %d < %d", b.name, r.agree, b.min_agree);
        // Batch invariance holds for q8 too: one thread and 7-token prefill chunks (activations
        // quantized per step in other groupings) give exactly the same logits and tokens.
        Q8Result small;
        run_fixture(b.name, 1, 7, -1, &small);
        CHECK_MSG(small.worst == r.worst && small.agree == r.agree,
                  "%s q8: chunk 7 gives %.9g / %d, chunk 256 %.9g / %d", b.name, small.worst, small.agree, r.worst,
                  r.agree);
    }
}

// Bounds of fixture_kv_dtypes_accuracy (max |logit diff| against the f32 PyTorch reference at each
// prompt's last position, prompts up to 130 tokens; the f32 cache is held to 1e-3 above). Measured
// on every path (the same on each: the cache's bits and their widening do not depend on the path):
// see engine-cuda/README.md. The bounds are about 2x the worst measured value.
struct KvBound {
    int64_t kv;        // ENG_PARAM_KV_DTYPE
    double max_diff;   // max |logit diff|
    bool is_greedy_eq; // greedy continuation identical to the reference on every prompt
};
static const KvBound kKvBounds[] = {
    {1 + ENG_KV_DTYPE_F16, 1e-2, true},
    {1 + ENG_KV_DTYPE_BF16, 5e-2, true},
    {1 + ENG_KV_DTYPE_Q8_0, 0.2, false},
};

TEST(fixture_kv_dtypes_accuracy) {
    // Every KV row format on a dense (GQA), a tied-embedding, an MoE and an MLA fixture: logits
    // within the bound of the reference, greedy equal where the bound says so (the random fixtures'
    // top-two logits are as close as 0.05, so a coarser cache may part their paths), and batch
    // invariance (one thread and 7-token chunks give the same bits as 256-token chunks).
    const char *names[] = {"llama-f32", "qwen3-f16", "glm45-moe-bf16", "deepseek3-bf16", "deepseek3-fp8"};
    const char *kv_names[] = {"f32", "f16", "bf16", "", "", "", "", "", "q8_0"};
    for (const char *name : names)
        for (const KvBound &b : kKvBounds) {
            Q8Result r, small;
            run_fixture(name, 2, 256, -1, nullptr, b.kv, &r);
            run_fixture(name, 1, 7, -1, nullptr, b.kv, &small);
            fprintf(stderr, "  %s kv %s: max |logit diff| %.3g, greedy equal for the first %d of %d tokens\n", name,
                    kv_names[b.kv - 1], r.worst, r.agree, r.n_greedy);
            CHECK_MSG(r.worst <= b.max_diff, "%s kv %s: max |logit diff| %.3g > %.3g", name, kv_names[b.kv - 1],
                      r.worst, b.max_diff);
            if (b.is_greedy_eq) CHECK_MSG(r.agree == r.n_greedy, "%s kv %s: greedy differs", name, kv_names[b.kv - 1]);
            CHECK_MSG(small.worst == r.worst && small.agree == r.agree, "%s kv %s: chunk 7 gives %.9g, chunk 256 %.9g",
                      name, kv_names[b.kv - 1], small.worst, r.worst);
        }
}

TEST(fixture_kv_dtype_default_and_sizes) {
    // Default: f32 rows for weights run at 16 bits or more, ENG_KV_DTYPE_DEFAULT_SMALL for 8-bit
    // weights (stored FP8, or q8 made at load). ENG_INFO_KV_BYTES_PER_TOKEN follows the row format
    // (q8_0: 34 bytes per 32 values, a shorter last block) and the capacity is n_blocks * block_size.
    struct Case {
        const char *name;
        bool is_q8;
        int64_t kv;
        int64_t want_dtype, want_bytes;
    };
    // llama-f32: 2 layers x 2 kv heads x (K + V) rows of D = 16; deepseek3-bf16: 2 layers x one row of
    // R + Dr = 40 values.
    const Case cases[] = {
        {"llama-f32", false, 0, ENG_KV_DTYPE_F32, 2 * 2 * 2 * 16 * 4},
        {"llama-f32", true, 0, ENG_KV_DTYPE_DEFAULT_SMALL, 2 * 2 * 2 * 16 * 2},
        {"glm45-moe-fp8", false, 0, ENG_KV_DTYPE_DEFAULT_SMALL, 2 * 2 * 2 * 40 * 2},
        {"llama-f32", false, 1 + ENG_KV_DTYPE_BF16, ENG_KV_DTYPE_BF16, 2 * 2 * 2 * 16 * 2},
        {"llama-f32", false, 1 + ENG_KV_DTYPE_Q8_0, ENG_KV_DTYPE_Q8_0, 2 * 2 * 2 * (16 + 2)},
        {"deepseek3-bf16", false, 1 + ENG_KV_DTYPE_Q8_0, ENG_KV_DTYPE_Q8_0, 2 * (40 + 2 * 2)},
        {"deepseek3-bf16", false, 0, ENG_KV_DTYPE_F32, 2 * 40 * 4},
    };
    for (const Case &c : cases) {
        std::string dir = test_repo_root() + "/test/fixtures/engine/" + c.name;
        int64_t params[ENG_PARAM_COUNT] = {0};
        params[ENG_PARAM_N_THREADS] = 1;
        params[ENG_PARAM_KV_DTYPE] = c.kv;
        params[ENG_PARAM_KV_BYTES] = 1 << 20;
        if (c.is_q8) params[ENG_PARAM_WEIGHT_DTYPE] = ENG_WEIGHT_DTYPE_Q8;
        eng_ctx *ctx = nullptr;
        CHECK(test_ctx_create(dir.c_str(), params, ENG_PARAM_COUNT, &ctx) == 0 && ctx);
        if (!ctx) continue;
        int64_t info[ENG_INFO_COUNT];
        CHECK(eng_ctx_info(ctx, info, ENG_INFO_COUNT) == ENG_INFO_COUNT);
        CHECK_MSG(info[ENG_INFO_KV_DTYPE] == c.want_dtype, "%s: kv dtype %lld, expected %lld", c.name,
                  (long long)info[ENG_INFO_KV_DTYPE], (long long)c.want_dtype);
        CHECK_MSG(info[ENG_INFO_KV_BYTES_PER_TOKEN] == c.want_bytes, "%s: %lld bytes/token, expected %lld", c.name,
                  (long long)info[ENG_INFO_KV_BYTES_PER_TOKEN], (long long)c.want_bytes);
        CHECK(info[ENG_INFO_KV_CAPACITY] == info[ENG_INFO_N_BLOCKS] * info[ENG_INFO_BLOCK_SIZE]);
        // The 1 MiB budget holds as many blocks as the row format allows (or all 16 default contexts).
        int64_t block = c.want_bytes * info[ENG_INFO_BLOCK_SIZE], nb = info[ENG_INFO_N_BLOCKS];
        CHECK(nb * block <= (1 << 20));
        CHECK((nb + 1) * block > (1 << 20) || nb * info[ENG_INFO_BLOCK_SIZE] >= 16 * info[ENG_INFO_N_CTX]);
        eng_ctx_free(ctx);
    }
    // An unknown row format is refused.
    std::string dir = test_repo_root() + "/test/fixtures/engine/llama-f32";
    int64_t params[ENG_PARAM_COUNT] = {0};
    params[ENG_PARAM_KV_DTYPE] = 1 + 5;
    eng_ctx *ctx = nullptr;
    CHECK(test_ctx_create(dir.c_str(), params, ENG_PARAM_COUNT, &ctx) == ENG_STATUS_INVALID_ARG && !ctx);
}

TEST(kv_dtype_default_follows_gguf_and_q4_k_m_weights) {
    // GGUF block types (Q8_0 .. Q6_K as stored) and the Q4_K_M mixture made at load run at 8 bits or
    // fewer: the f16 cache by default; a GGUF file of f16 weights keeps f32 rows.
    struct Case {
        std::string path;
        int64_t weight_param; // ENG_PARAM_WEIGHT_DTYPE (0: as stored)
        int64_t want_weight, want_kv;
    };
    std::string gguf = test_repo_root() + "/test/fixtures/gguf/";
    const Case cases[] = {
        {gguf + "llama-Q4_K_M.gguf", 0, ENG_WEIGHT_DTYPE_Q4_K, ENG_KV_DTYPE_DEFAULT_SMALL},
        {gguf + "llama-Q8_0.gguf", 0, ENG_WEIGHT_DTYPE_Q8_0, ENG_KV_DTYPE_DEFAULT_SMALL},
        {gguf + "llama-Q6_K.gguf", 0, ENG_WEIGHT_DTYPE_Q6_K, ENG_KV_DTYPE_DEFAULT_SMALL},
        {gguf + "llama-F16.gguf", 0, ENG_WEIGHT_DTYPE_F16, ENG_KV_DTYPE_F32},
        {test_repo_root() + "/test/fixtures/engine/llama-f32", ENG_WEIGHT_DTYPE_Q4_K, ENG_WEIGHT_DTYPE_Q4_K,
         ENG_KV_DTYPE_DEFAULT_SMALL},
    };
    for (const Case &c : cases) {
        int64_t params[ENG_PARAM_COUNT] = {0};
        params[ENG_PARAM_N_THREADS] = 1;
        params[ENG_PARAM_KV_BYTES] = 1 << 20;
        params[ENG_PARAM_BACKEND] = ENG_BACKEND_CPU;
        params[ENG_PARAM_WEIGHT_DTYPE] = c.weight_param;
        eng_ctx *ctx = nullptr;
        CHECK_MSG(test_ctx_create(c.path.c_str(), params, ENG_PARAM_COUNT, &ctx) == 0 && ctx, "%s", c.path.c_str());
        if (!ctx) continue;
        int64_t info[ENG_INFO_COUNT];
        CHECK(eng_ctx_info(ctx, info, ENG_INFO_COUNT) == ENG_INFO_COUNT);
        CHECK_MSG(info[ENG_INFO_WEIGHT_DTYPE] == c.want_weight && info[ENG_INFO_KV_DTYPE] == c.want_kv,
                  "%s: weights %lld, kv %lld (expected %lld, %lld)", c.path.c_str(),
                  (long long)info[ENG_INFO_WEIGHT_DTYPE], (long long)info[ENG_INFO_KV_DTYPE], (long long)c.want_weight,
                  (long long)c.want_kv);
        eng_ctx_free(ctx);
    }
}
