/* test_moe_invariance.cpp: the MoE / MLA fixtures (test/fixtures/engine/{glm45-moe,deepseek3}-*)
 * give bit-identical logits and tokens whatever the batch: each prompt alone vs all together,
 * prefill in 7-token chunks, decode under KV pressure (preemption and recompute), and a repeated
 * prompt served from the prefix cache. Experts run over per-expert token groups and MLA attends over
 * the shared latent, so these are the paths where a batch neighbour could leak into a result. */
#include <string.h>

#include <vector>

#include "../include/engine.h"
#include "../src/checkpoint.h" // read_text_file
#include "../src/json.h"
#include "test.h"

namespace {

const char *kDirs[] = {"glm45-moe-bf16", "glm45-moe-fp8", "deepseek3-bf16", "deepseek3-fp8"};

struct Run {
    std::vector<std::vector<int32_t>> tokens;
    std::vector<std::vector<float>> first_logits; // the prompt's last-position logits
    std::vector<int32_t> cached;                  // ENG_EVENT_PREFILLED values
    int64_t preemptions = 0;
};

std::vector<std::vector<int32_t>> fixture_prompts(const std::string &dir) {
    std::string text;
    std::vector<std::vector<int32_t>> out;
    CHECK(maya::read_text_file(dir + "/fixtures.json", &text) == 0);
    maya::JsonValue fx;
    std::string err;
    CHECK(maya::json_parse(text.data(), text.size(), &fx, &err));
    for (const auto &p : fx.get("prompts")->items) {
        out.emplace_back();
        for (const auto &v : p.get("ids")->items) out.back().push_back((int32_t)v.integer);
    }
    return out;
}

/* Adds `prompts` (all at once when together, else one after another) and decodes n tokens each. */
Run run(const std::string &dir, const std::vector<std::vector<int32_t>> &prompts, bool together, int64_t chunk,
        int64_t n_blocks, int n) {
    int64_t params[ENG_PARAM_COUNT] = {0};
    params[ENG_PARAM_N_THREADS] = 2;
    params[ENG_PARAM_PREFILL_CHUNK] = chunk;
    params[ENG_PARAM_N_BLOCKS] = n_blocks;
    eng_ctx *ctx = nullptr;
    Run r;
    CHECK(test_ctx_create(dir.c_str(), params, ENG_PARAM_COUNT, &ctx) == 0 && ctx);
    if (!ctx) return r;
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    int32_t V = (int32_t)info[ENG_INFO_N_VOCAB];
    r.tokens.resize(prompts.size());
    r.first_logits.resize(prompts.size());
    r.cached.resize(prompts.size(), -1);
    std::vector<int32_t> ids(prompts.size(), -1), ev(4 * 64);
    size_t next = 0;
    int finished = 0;
    for (int guard = 0; guard < 20000 && finished < (int)prompts.size(); guard++) {
        while (next < prompts.size() && (together || finished == (int)next)) {
            CHECK(eng_seq_add(ctx, prompts[next].data(), (int32_t)prompts[next].size(), nullptr, 0, n, 0.0f, 1.0f, 0, 0,
                              ENG_SEQ_KEEP_LOGITS, &ids[next]) == 0);
            next++;
        }
        int32_t k = eng_step(ctx, ev.data(), (int32_t)ev.size());
        CHECK(k >= 0);
        if (k < 0) break;
        for (int i = 0; i < k; i++) {
            int32_t sid = ev[(size_t)i * 4], kind = ev[(size_t)i * 4 + 1];
            size_t p = 0;
            while (p < ids.size() && ids[p] != sid) p++;
            if (kind == ENG_EVENT_PREFILLED) r.cached[p] = ev[(size_t)i * 4 + 3];
            if (kind == ENG_EVENT_TOKEN) {
                if (r.tokens[p].empty()) {
                    r.first_logits[p].resize((size_t)V);
                    CHECK(eng_seq_logits(ctx, sid, r.first_logits[p].data(), V) == V);
                }
                r.tokens[p].push_back(ev[(size_t)i * 4 + 2]);
            }
            if (kind == ENG_EVENT_FINISH) finished++;
        }
    }
    CHECK(finished == (int)prompts.size());
    int64_t st[ENG_STAT_COUNT];
    eng_ctx_stats(ctx, st, ENG_STAT_COUNT);
    r.preemptions = st[ENG_STAT_PREEMPTIONS];
    eng_ctx_free(ctx);
    return r;
}

bool same_bits(const Run &a, const Run &b) {
    if (a.tokens != b.tokens) return false;
    for (size_t p = 0; p < a.first_logits.size(); p++)
        if (a.first_logits[p].size() != b.first_logits[p].size() ||
            memcmp(a.first_logits[p].data(), b.first_logits[p].data(), a.first_logits[p].size() * sizeof(float)) != 0)
            return false;
    return true;
}

} // namespace

TEST(moe_mla_results_do_not_depend_on_the_batch) {
    for (const char *name : kDirs) {
        std::string dir = test_repo_root() + "/test/fixtures/engine/" + name;
        std::vector<std::vector<int32_t>> prompts = fixture_prompts(dir);
        Run alone = run(dir, prompts, false, 256, 0, 12);
        Run batched = run(dir, prompts, true, 256, 0, 12);
        Run chunked = run(dir, prompts, true, 7, 0, 12);
        CHECK_MSG(same_bits(alone, batched), "%s: batched differs from alone", name);
        CHECK_MSG(same_bits(alone, chunked), "%s: 7-token chunks differ from whole prefill", name);
        // 4 prompts (5..130 tokens) fill 15 blocks of 16; their 12 tokens each need 17: decode must preempt.
        Run tight = run(dir, prompts, true, 256, 15, 12);
        CHECK_MSG(tight.preemptions > 0, "%s: no preemption under KV pressure", name);
        CHECK_MSG(tight.tokens == alone.tokens, "%s: preemption changed the tokens", name);
        // The same 130-token prompt twice, one after the other: the second reuses 128 cached tokens.
        std::vector<std::vector<int32_t>> twice = {prompts.back(), prompts.back()};
        Run cached = run(dir, twice, false, 256, 0, 12);
        CHECK(cached.cached[0] == 0 && cached.cached[1] == 128);
        CHECK_MSG(cached.tokens[1] == alone.tokens.back() && cached.tokens[0] == alone.tokens.back() &&
                      memcmp(cached.first_logits[1].data(), alone.first_logits.back().data(),
                             alone.first_logits.back().size() * sizeof(float)) == 0,
                  "%s: prefix-cache reuse changed the result", name);
    }
}
