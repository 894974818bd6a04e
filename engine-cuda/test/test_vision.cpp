/* test_vision.cpp: GLM-4.1V and GLM-4.5V (test/fixtures/engine/glm4v-tiny, glm45v-tiny) against the
 * PyTorch golden files:
 * the vision tower's embeddings within 1e-3, last-prompt logits within 1e-3 and identical greedy
 * tokens through eng_seq_add_mm (whole and chunked prefill, a chunk boundary inside an image),
 * the prefix cache keyed by image hashes, M-RoPE positions, and the argument checks. */
#include <string.h>

#include <vector>

#include "../include/engine.h"
#include "../src/checkpoint.h" // read_text_file
#include "../src/common.h"     // last_error
#include "../src/json.h"
#include "../src/model.h"
#include "../src/vision.h"
#include "test.h"

namespace {

struct Golden {
    maya::JsonValue fx;
    std::vector<std::vector<float>> pixels; // per image
    std::vector<std::vector<int32_t>> grids;
};

std::string vision_dir(const char *name = "glm4v-tiny") { return test_repo_root() + "/test/fixtures/engine/" + name; }

const char *const kVisionFixtures[] = {"glm4v-tiny", "glm45v-tiny"};

bool load_golden(Golden *g, const char *name = "glm4v-tiny") {
    std::string text, err;
    if (maya::read_text_file(vision_dir(name) + "/fixtures.json", &text) != 0) return false;
    if (!maya::json_parse(text.data(), text.size(), &g->fx, &err)) return false;
    for (const auto &img : g->fx.get("images")->items) {
        std::string raw;
        if (maya::read_text_file(vision_dir(name) + "/" + img.get("pixel_values")->string, &raw) != 0) return false;
        g->pixels.emplace_back(raw.size() / 4);
        memcpy(g->pixels.back().data(), raw.data(), raw.size());
        std::vector<int32_t> grid;
        for (const auto &v : img.get("grid_thw")->items) grid.push_back((int32_t)v.integer);
        g->grids.push_back(grid);
    }
    return true;
}

eng_ctx *open_ctx(const std::string &dir, int64_t chunk, int64_t n_threads = 2) {
    int64_t params[ENG_PARAM_COUNT] = {0};
    params[ENG_PARAM_N_THREADS] = n_threads;
    params[ENG_PARAM_PREFILL_CHUNK] = chunk;
    eng_ctx *ctx = nullptr;
    int32_t st = test_ctx_create(dir.c_str(), params, ENG_PARAM_COUNT, &ctx);
    char msg[512] = "";
    eng_last_error(msg, sizeof msg);
    CHECK_MSG(st == 0 && ctx, "%s", msg);
    return ctx;
}

/* Adds prompt p of the golden with its images (hashes given), returns the sequence id or -1. */
int32_t add_prompt(eng_ctx *ctx, const Golden &g, size_t p, const std::vector<uint64_t> &hashes, int max_tokens,
                   const std::vector<float> *override_pixels = nullptr) {
    const maya::JsonValue &pr = g.fx.get("prompts")->items[p];
    std::vector<int32_t> toks, grids;
    std::vector<float> pixels;
    for (const auto &v : pr.get("ids")->items) toks.push_back((int32_t)v.integer);
    for (const auto &v : pr.get("images")->items) {
        const std::vector<float> &px = override_pixels ? *override_pixels : g.pixels[(size_t)v.integer];
        pixels.insert(pixels.end(), px.begin(), px.end());
        grids.insert(grids.end(), g.grids[(size_t)v.integer].begin(), g.grids[(size_t)v.integer].end());
    }
    int32_t id = -1;
    int32_t st = eng_seq_add_mm(ctx, toks.data(), (int32_t)toks.size(), nullptr, 0, max_tokens, 0.0f, 1.0f, 0, 0,
                                ENG_SEQ_KEEP_LOGITS, pixels.data(), (int64_t)pixels.size(), grids.data(), hashes.data(),
                                (int32_t)(grids.size() / 3), &id);
    char msg[512] = "";
    eng_last_error(msg, sizeof msg);
    CHECK_MSG(st == 0, "%s", msg);
    return st == 0 ? id : -1;
}

struct Run {
    std::vector<int32_t> tokens;
    int32_t cached = -1;
    double worst_logit = 0;
};

/* Steps until every sequence finishes; compares first-token logits with `golden_logits` when given. */
std::vector<Run> run_all(eng_ctx *ctx, const std::vector<int32_t> &ids,
                         const std::vector<const maya::JsonValue *> &golden_logits) {
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    int32_t V = (int32_t)info[ENG_INFO_N_VOCAB];
    std::vector<Run> runs(ids.size());
    std::vector<float> logits((size_t)V);
    std::vector<int32_t> ev(4 * 64);
    int finished = 0;
    for (int guard = 0; guard < 10000 && finished < (int)ids.size(); guard++) {
        int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
        CHECK(n >= 0);
        if (n < 0) break;
        for (int i = 0; i < n; i++) {
            int32_t sid = ev[(size_t)i * 4], kind = ev[(size_t)i * 4 + 1], tok = ev[(size_t)i * 4 + 2],
                    val = ev[(size_t)i * 4 + 3];
            size_t p = 0;
            while (p < ids.size() && ids[p] != sid) p++;
            if (p == ids.size()) continue;
            if (kind == ENG_EVENT_PREFILLED) runs[p].cached = val;
            if (kind == ENG_EVENT_TOKEN) {
                if (runs[p].tokens.empty() && p < golden_logits.size() && golden_logits[p]) {
                    CHECK(eng_seq_logits(ctx, sid, logits.data(), V) == V);
                    const auto &ref = golden_logits[p]->items;
                    for (int32_t v = 0; v < V; v++)
                        runs[p].worst_logit =
                            fmax(runs[p].worst_logit, fabs((double)logits[(size_t)v] - ref[(size_t)v].number));
                }
                runs[p].tokens.push_back(tok);
            }
            if (kind == ENG_EVENT_FINISH) finished++;
        }
    }
    CHECK(finished == (int)ids.size());
    return runs;
}

std::vector<int32_t> ints(const maya::JsonValue &a) {
    std::vector<int32_t> out;
    for (const auto &v : a.items) out.push_back((int32_t)v.integer);
    return out;
}

} // namespace

TEST(vision_embeddings_match_golden) {
    for (const char *name : kVisionFixtures) {
        Golden g;
        CHECK(load_golden(&g, name));
        maya::Model m;
        int32_t st = maya::model_load(vision_dir(name), &m);
        CHECK_MSG(st == 0, "%s", maya::last_error());
        if (st != 0 || !m.vision) return;
        bool moe = strcmp(name, "glm45v-tiny") == 0;
        CHECK(m.cfg.arch == (moe ? maya::ARCH_GLM4V_MOE : maya::ARCH_GLM4V));
        CHECK(m.cfg.mrope_section[0] == 2 && m.cfg.mrope_section[2] == 3 && m.cfg.is_rope_interleaved == !moe);
        CHECK(m.cfg.image_token_id == 1012 && m.cfg.head_dim == 32 && m.cfg.rotary_dim == 16);
        CHECK(m.cfg.has_sandwich_norms == !moe && m.cfg.n_expert == (moe ? 8 : 0) && m.cfg.has_qkv_bias);
        for (int threads : {1, 2}) {
            maya::VisionEncoder enc;
            const maya::Kernels *k = nullptr;
            CHECK(maya::kernels_choose(test_simd(), &k) == 0 && k);
            if (!k) return;
            CHECK(enc.init(*m.vision, threads, *k) == 0);
            for (size_t i = 0; i < g.pixels.size(); i++) {
                const maya::JsonValue &img = g.fx.get("images")->items[i];
                const auto &ref = img.get("embeddings")->items;
                std::vector<float> out(ref.size());
                const std::vector<int32_t> &gr = g.grids[i];
                CHECK((int64_t)out.size() == (int64_t)gr[0] * gr[1] * gr[2] / 4 * m.cfg.n_embd);
                enc.encode(g.pixels[i].data(), gr[0], gr[1], gr[2], out.data());
                double worst = 0;
                for (size_t j = 0; j < out.size(); j++) worst = fmax(worst, fabs((double)out[j] - ref[j].number));
                fprintf(stderr, "  %s image %zu (%d x %d patches), %d threads: max |dembed| %.3g\n", name, i, gr[1],
                        gr[2], threads, worst);
                CHECK(worst <= 1e-3);
            }
        }
    }
}

TEST(vision_greedy_matches_golden_whole_and_chunked) {
    for (const char *name : kVisionFixtures) {
        Golden g;
        CHECK(load_golden(&g, name));
        const maya::JsonValue *prompts = g.fx.get("prompts");
        int n_greedy = (int)g.fx.get("greedy_tokens")->integer;
        // 256: one chunk per prompt; 7: chunk boundaries inside every image's tokens (prompt 0's image
        // covers positions 5..24, prompt 1's images 10..29 and 35..46).
        for (int64_t chunk : {256, 7}) {
            eng_ctx *ctx = open_ctx(vision_dir(name), chunk);
            if (!ctx) return;
            int64_t info[ENG_INFO_COUNT];
            CHECK(eng_ctx_info(ctx, info, ENG_INFO_COUNT) == ENG_INFO_COUNT);
            CHECK(info[ENG_INFO_VISION] == 1 &&
                  info[ENG_INFO_ARCH] == (strcmp(name, "glm4v-tiny") == 0 ? ENG_ARCH_GLM4V : ENG_ARCH_GLM4V_MOE));
            CHECK(info[ENG_INFO_BACKEND] == ENG_BACKEND_CPU);
            std::vector<int32_t> ids;
            std::vector<const maya::JsonValue *> logits;
            for (size_t p = 0; p < prompts->items.size(); p++) {
                std::vector<uint64_t> hashes;
                for (const auto &v : prompts->items[p].get("images")->items)
                    hashes.push_back(0x1000 + (uint64_t)v.integer);
                ids.push_back(add_prompt(ctx, g, p, hashes, n_greedy));
                logits.push_back(prompts->items[p].get("last_logits"));
            }
            std::vector<Run> runs = run_all(ctx, ids, logits);
            for (size_t p = 0; p < runs.size(); p++) {
                fprintf(stderr, "  %s chunk %lld prompt %zu: max |dlogit| %.3g\n", name, (long long)chunk, p,
                        runs[p].worst_logit);
                CHECK(runs[p].worst_logit <= 1e-3);
                CHECK(runs[p].tokens == ints(*prompts->items[p].get("greedy")));
            }
            eng_ctx_free(ctx);
        }
    }
}

TEST(vision_prefix_cache_keys_on_image_hash) {
    Golden g;
    CHECK(load_golden(&g));
    const maya::JsonValue &p0 = g.fx.get("prompts")->items[0];
    std::vector<int32_t> greedy = ints(*p0.get("greedy"));
    int32_t n_prompt = (int32_t)p0.get("ids")->items.size(); // 40: 2 full blocks of 16 reusable
    eng_ctx *ctx = open_ctx(vision_dir(), 256);
    if (!ctx) return;
    std::vector<Run> first = run_all(ctx, {add_prompt(ctx, g, 0, {0xAAAA}, (int)greedy.size())}, {});
    CHECK(first[0].cached == 0 && first[0].tokens == greedy);
    // The same pixels (same hash) again: the blocks holding the image are reused, tokens unchanged.
    std::vector<Run> again = run_all(ctx, {add_prompt(ctx, g, 0, {0xAAAA}, (int)greedy.size())}, {});
    CHECK_MSG(again[0].cached == (n_prompt - 1) / 16 * 16, "cached %d", again[0].cached);
    CHECK(again[0].tokens == greedy);
    int64_t stats[ENG_STAT_COUNT];
    CHECK(eng_ctx_stats(ctx, stats, ENG_STAT_COUNT) == ENG_STAT_COUNT);
    CHECK(stats[ENG_STAT_IMAGES_ENCODED] == 1); // the cached image was not encoded again
    CHECK(stats[ENG_STAT_ENCODE_US] > 0);
    // Other pixels under another hash: same placeholder tokens, but block 0 already holds image
    // tokens (positions 5..24), so nothing is shared, and the answer follows the new pixels.
    std::vector<float> other = g.pixels[0];
    for (float &x : other) x = -x;
    std::vector<Run> diff = run_all(ctx, {add_prompt(ctx, g, 0, {0xBBBB}, (int)greedy.size(), &other)}, {});
    CHECK_MSG(diff[0].cached == 0, "cached %d", diff[0].cached);
    CHECK(eng_ctx_stats(ctx, stats, ENG_STAT_COUNT) == ENG_STAT_COUNT && stats[ENG_STAT_IMAGES_ENCODED] == 2);
    CHECK(diff[0].tokens != greedy);
    // The same pixels and hash in another grid (10 x 8 instead of 8 x 10 patches, 20 tokens too):
    // other M-RoPE positions, so no block is shared either.
    {
        std::vector<int32_t> toks = ints(*p0.get("ids"));
        int32_t grid[3] = {1, 10, 8}, id = -1;
        uint64_t hash = 0xAAAA;
        CHECK(eng_seq_add_mm(ctx, toks.data(), (int32_t)toks.size(), nullptr, 0, 2, 0.0f, 1.0f, 0, 0, 0,
                             g.pixels[0].data(), (int64_t)g.pixels[0].size(), grid, &hash, 1, &id) == 0);
        std::vector<Run> r = run_all(ctx, {id}, {});
        CHECK_MSG(r[0].cached == 0, "cached %d", r[0].cached);
    }
    // Chunked prefill served from the cache: prompt 1 (49 tokens, images at 10..29 and 35..46) with
    // chunks of 7, then again: 48 tokens cached, the rest computed, same greedy tokens.
    eng_ctx_free(ctx);
    ctx = open_ctx(vision_dir(), 7);
    if (!ctx) return;
    run_all(ctx, {add_prompt(ctx, g, 1, {0x1, 0x2}, 4)}, {});
    const maya::JsonValue &p1 = g.fx.get("prompts")->items[1];
    std::vector<Run> r = run_all(ctx, {add_prompt(ctx, g, 1, {0x1, 0x2}, (int)p1.get("greedy")->items.size())}, {});
    CHECK(r[0].cached == ((int32_t)p1.get("ids")->items.size() - 1) / 16 * 16);
    CHECK(r[0].tokens == ints(*p1.get("greedy")));
    // Another hash for the second image keeps the blocks before it: blocks 0 and 1 (0..31) hold
    // only text and the first image; block 2 holds the second image's tokens.
    std::vector<Run> r2 = run_all(ctx, {add_prompt(ctx, g, 1, {0x1, 0x3}, 2)}, {});
    CHECK_MSG(r2[0].cached == 32, "cached %d", r2[0].cached);
    eng_ctx_free(ctx);
}

TEST(vision_preempted_sequences_keep_their_images) {
    // 8 KV blocks of 16 for two copies of prompt 1 (49 tokens: 4 blocks each at admission, a 5th
    // once 16 tokens are generated): one is preempted and recomputed; the first 16 greedy tokens stay
    // the golden ones and no image is encoded twice (the embeddings stay with the sequence).
    Golden g;
    CHECK(load_golden(&g));
    const maya::JsonValue &p1 = g.fx.get("prompts")->items[1];
    int64_t params[ENG_PARAM_COUNT] = {0};
    params[ENG_PARAM_N_THREADS] = 2;
    params[ENG_PARAM_N_BLOCKS] = 8;
    params[ENG_PARAM_PREFILL_CHUNK] = 64;
    eng_ctx *ctx = nullptr;
    CHECK(test_ctx_create(vision_dir().c_str(), params, ENG_PARAM_COUNT, &ctx) == 0);
    if (!ctx) return;
    int n = (int)p1.get("greedy")->items.size();
    std::vector<int32_t> ids = {add_prompt(ctx, g, 1, {0x51, 0x52}, n + 8), add_prompt(ctx, g, 1, {0x61, 0x62}, n + 8)};
    std::vector<Run> runs = run_all(ctx, ids, {});
    int64_t stats[ENG_STAT_COUNT];
    eng_ctx_stats(ctx, stats, ENG_STAT_COUNT);
    CHECK_MSG(stats[ENG_STAT_PREEMPTIONS] > 0, "preemptions %lld", (long long)stats[ENG_STAT_PREEMPTIONS]);
    CHECK(stats[ENG_STAT_IMAGES_ENCODED] == 4);
    for (const Run &r : runs)
        CHECK(std::vector<int32_t>(r.tokens.begin(), r.tokens.begin() + n) == ints(*p1.get("greedy")));
    eng_ctx_free(ctx);
}

TEST(vision_mrope_positions) {
    // [text x2][image 1x4x6 patches -> 2x3 tokens][text][image 1x6x2 -> 3x1 tokens][text]
    int32_t grids[6] = {1, 4, 6, 1, 6, 2};
    int32_t tok0[2] = {2, 9};
    int32_t n = 13, pos[39], delta = 0;
    maya::mrope_positions(n, tok0, grids, 2, 2, pos, &delta);
    int32_t want[39] = {0, 0, 0, 1, 1, 1,                                     // text
                        2, 2, 2, 2, 2, 3, 2, 2, 4, 2, 3, 2, 2, 3, 3, 2, 3, 4, // image 1: rows 0-1, cols 0-2
                        5, 5, 5,                                              // text resumes at 2 + max(2, 3)
                        6, 6, 6, 6, 7, 6, 6, 8, 6,                            // image 2: rows 0-2, col 0
                        9, 9, 9};                                             // text at 6 + 3
    CHECK(memcmp(pos, want, sizeof want) == 0);
    CHECK(delta == 10 - 13); // the next token (index 13) is at position 10
}

TEST(vision_argument_checks) {
    Golden g;
    CHECK(load_golden(&g));
    eng_ctx *ctx = open_ctx(vision_dir(), 256, 1);
    if (!ctx) return;
    const maya::JsonValue &p0 = g.fx.get("prompts")->items[0];
    std::vector<int32_t> toks = ints(*p0.get("ids"));
    std::vector<float> &px = g.pixels[0];
    int32_t grid[3] = {1, 8, 10}, id = -1;
    uint64_t hash = 7;
    char msg[512];
    auto add = [&](const std::vector<int32_t> &t, int64_t n_px, const int32_t *gr, int32_t n_img) {
        return eng_seq_add_mm(ctx, t.data(), (int32_t)t.size(), nullptr, 0, 4, 0.0f, 1.0f, 0, 0, 0, px.data(), n_px, gr,
                              &hash, n_img, &id);
    };
    CHECK(add(toks, (int64_t)px.size() - 1, grid, 1) == ENG_STATUS_INVALID_ARG); // pixel count
    eng_last_error(msg, sizeof msg);
    CHECK(strstr(msg, "pixel") != nullptr);
    int32_t bad_grid[3] = {1, 8, 9}; // odd width
    CHECK(add(toks, (int64_t)px.size(), bad_grid, 1) == ENG_STATUS_INVALID_ARG);
    std::vector<int32_t> fewer = toks;
    fewer.erase(fewer.begin() + 6); // 19 placeholders for a 20-token image
    CHECK(add(fewer, (int64_t)px.size(), grid, 1) == ENG_STATUS_INVALID_ARG);
    std::vector<int32_t> split = toks;
    split[10] = 32; // a text token inside the image's run
    CHECK(add(split, (int64_t)px.size(), grid, 1) == ENG_STATUS_INVALID_ARG);
    CHECK(eng_seq_add(ctx, toks.data(), (int32_t)toks.size(), nullptr, 0, 4, 0.0f, 1.0f, 0, 0, 0, &id) ==
          ENG_STATUS_INVALID_ARG);
    eng_last_error(msg, sizeof msg);
    CHECK(strstr(msg, "image tokens") != nullptr);
    std::vector<int32_t> text = {1002, 1004, 1007, 10, 532, 1008};
    CHECK(eng_seq_add(ctx, text.data(), (int32_t)text.size(), nullptr, 0, 4, 0.0f, 1.0f, 0, 0, 0, &id) ==
          0); // text on a vision model
    CHECK(add(toks, (int64_t)px.size(), grid, 1) == 0);
    eng_ctx_free(ctx);

    // A text-only checkpoint refuses images with a clear error, and reports no vision.
    ctx = open_ctx(test_repo_root() + "/test/fixtures/engine/glm4-bf16", 256, 1);
    if (!ctx) return;
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    CHECK(info[ENG_INFO_VISION] == 0);
    std::vector<int32_t> t2 = {5, 6, 7};
    CHECK(add(t2, (int64_t)px.size(), grid, 1) == ENG_STATUS_UNSUPPORTED);
    eng_last_error(msg, sizeof msg);
    CHECK(strstr(msg, "no vision encoder") != nullptr);
    CHECK(eng_seq_add_mm(ctx, t2.data(), 3, nullptr, 0, 4, 0.0f, 1.0f, 0, 0, 0, nullptr, 0, nullptr, nullptr, 0, &id) ==
          0);
    eng_ctx_free(ctx);
}

TEST(vision_unknown_vision_architecture_is_refused_by_name) {
    std::string err;
    maya::JsonValue c;
    const char *json = "{\"architectures\":[\"Qwen2VLForConditionalGeneration\"],\"text_config\":{}}";
    CHECK(maya::json_parse(json, strlen(json), &c, &err));
    maya::ModelConfig m;
    CHECK(maya::model_config_parse(c, &m) == ENG_STATUS_UNSUPPORTED);
    CHECK(strstr(maya::last_error(), "Qwen2VLForConditionalGeneration") != nullptr);
    CHECK(strstr(maya::last_error(), "Glm4vMoeForConditionalGeneration") != nullptr); // in the supported list
}
