/* test_speculative.cpp: speculative decoding (issue 35). Greedy tokens with drafts are identical to
 * decoding without them, on the golden fixtures (dense, MoE, MLA, FP8, vision), alone and batched,
 * whole and chunked, with and without a mask; drafts that are partly wrong (eng_seq_draft) exercise
 * acceptance and rejection at every position. Rejected positions leave no trace in the KV cache, the
 * blocks or the prefix cache; stop ids inside a draft, preemption and cancellation behave as without
 * drafts; prompt lookup drafts on its own; and the speculative-sampling rule keeps the output
 * distribution (a chi-square test against the model's own probabilities). All of it holds on every
 * KV cache row format (f16, bf16, q8_0 rows of drafts are written, then dropped or kept, like f32
 * ones), and with fewer logits rows a step than the drafts want (drafts cut to the rows left). */
#include <math.h>
#include <string.h>

#include <algorithm>
#include <map>
#include <vector>

#include "../include/engine.h"
#include "../src/checkpoint.h" // read_text_file
#include "../src/json.h"
#include "model_writer.h"
#include "test.h"

namespace {

struct Prompt {
    std::vector<int32_t> ids;
    std::vector<float> pixels; // vision prompts
    std::vector<int32_t> grids;
    std::vector<uint64_t> hashes;
};

struct Options {
    int64_t spec = ENG_SPEC_OFF, max_draft = 0, chunk = 256, max_batch = 0, n_blocks = 0;
    int64_t kv = 0;             // ENG_PARAM_KV_DTYPE (0: the engine's default)
    int64_t max_logits = 0;     // ENG_PARAM_MAX_LOGITS (0: the engine's default)
    bool is_alone = false;      // one prompt at a time, each in its own run of steps
    int corrupt = 0;            // > 0: oracle drafts from the reference, every corrupt-th drafted token wrong
    bool is_masked = false;     // every other prompt is constrained by a mask that depends on its output
    std::vector<int32_t> stops; // stop ids
    int max_tokens = 24;
};

struct Result {
    std::vector<std::vector<int32_t>> tokens;
    std::vector<int32_t> finish;
    int64_t drafted = 0, accepted = 0, passes = 0, decode_tokens = 0;
};

eng_ctx *open(const std::string &dir, const Options &o) {
    int64_t p[ENG_PARAM_COUNT] = {0};
    p[ENG_PARAM_N_THREADS] = 2;
    p[ENG_PARAM_PREFILL_CHUNK] = o.chunk;
    p[ENG_PARAM_MAX_BATCH] = o.max_batch;
    p[ENG_PARAM_N_BLOCKS] = o.n_blocks;
    p[ENG_PARAM_SPECULATIVE] = o.spec;
    p[ENG_PARAM_SPEC_MAX_DRAFT] = o.max_draft;
    p[ENG_PARAM_KV_DTYPE] = o.kv;
    p[ENG_PARAM_MAX_LOGITS] = o.max_logits;
    eng_ctx *ctx = nullptr;
    int32_t st = test_ctx_create(dir.c_str(), p, ENG_PARAM_COUNT, &ctx);
    char msg[512] = "";
    eng_last_error(msg, sizeof msg);
    CHECK_MSG(st == 0 && ctx, "%s: %s", dir.c_str(), msg);
    return ctx;
}

/* The mask of a constrained prompt after g generated tokens: the ids i with (3i + g) mod 4 != 0. */
std::vector<uint32_t> mask_for(int g, int32_t V) {
    std::vector<uint32_t> m((size_t)(V + 31) / 32, 0);
    for (int32_t i = 0; i < V; i++)
        if ((3 * i + g) % 4 != 0) m[(size_t)i / 32] |= 1u << (i % 32);
    return m;
}

/* Runs prompts[sel] to the end; ref (the run without drafts) feeds the oracle drafts. */
void run_some(eng_ctx *ctx, const std::vector<Prompt> &prompts, const std::vector<size_t> &sel, const Options &o,
              const Result *ref, Result *out) {
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    int32_t V = (int32_t)info[ENG_INFO_N_VOCAB];
    std::map<int32_t, size_t> of; // seq id -> prompt
    for (size_t p : sel) {
        const Prompt &pr = prompts[p];
        int32_t id = -1;
        int32_t st = eng_seq_add_mm(ctx, pr.ids.data(), (int32_t)pr.ids.size(), o.stops.data(), (int32_t)o.stops.size(),
                                    o.max_tokens, 0.0f, 1.0f, 0, 0, 0, pr.pixels.empty() ? nullptr : pr.pixels.data(),
                                    (int64_t)pr.pixels.size(), pr.grids.data(), pr.hashes.data(),
                                    (int32_t)(pr.grids.size() / 3), &id);
        CHECK(st == 0);
        of[id] = p;
        if (o.is_masked && p % 2 == 0) CHECK(eng_seq_mask(ctx, id, mask_for(0, V).data(), (V + 31) / 32) == 0);
    }
    std::vector<int32_t> ev(4 * 16); // small: events spill over to the next call
    size_t done = 0;
    for (int step = 0; step < 20000 && done < sel.size(); step++) {
        int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
        CHECK(n >= 0);
        if (n < 0) break;
        for (int i = 0; i < n; i++) {
            int32_t sid = ev[(size_t)i * 4], kind = ev[(size_t)i * 4 + 1], tok = ev[(size_t)i * 4 + 2];
            size_t p = of[sid];
            if (kind == ENG_EVENT_TOKEN) {
                out->tokens[p].push_back(tok);
                CHECK(ev[(size_t)i * 4 + 3] == (int32_t)out->tokens[p].size());
                if (o.is_masked && p % 2 == 0)
                    CHECK(eng_seq_mask(ctx, sid, mask_for((int)out->tokens[p].size(), V).data(), (V + 31) / 32) == 0);
            }
            if (kind == ENG_EVENT_FINISH) {
                out->finish[p] = ev[(size_t)i * 4 + 3];
                of.erase(sid);
                done++;
            }
        }
        if (n == (int32_t)ev.size() / 4) continue; // events may be pending: no new drafts before they are read
        for (const auto &kv : of) {                // oracle drafts for the next step: the reference, partly corrupted
            size_t p = kv.second, g = out->tokens[p].size();
            if (o.corrupt <= 0 || !ref || g == 0) continue;
            std::vector<int32_t> d;
            for (size_t j = 0; j < (size_t)o.max_draft && g + j < ref->tokens[p].size(); j++) {
                int32_t t = ref->tokens[p][g + j];
                if ((g + j + (size_t)step) % (size_t)o.corrupt == 0) t = (t + 1) % V;
                d.push_back(t);
            }
            // A constrained prompt's draft carries the mask after each of its tokens (its matcher's
            // view), and is cut by the engine before the first token a mask forbids.
            std::vector<uint32_t> masks;
            int32_t words = 0;
            if (o.is_masked && p % 2 == 0) {
                words = (V + 31) / 32;
                for (size_t j = 0; j < d.size(); j++) {
                    std::vector<uint32_t> m = mask_for((int)(g + j + 1), V);
                    masks.insert(masks.end(), m.begin(), m.end());
                }
            }
            CHECK(eng_seq_draft(ctx, kv.first, d.data(), (int32_t)d.size(), masks.data(), words) == 0);
        }
    }
    CHECK(done == sel.size());
    int64_t s[ENG_STAT_COUNT];
    eng_ctx_stats(ctx, s, ENG_STAT_COUNT);
    out->drafted = s[ENG_STAT_DRAFT_TOKENS];
    out->accepted = s[ENG_STAT_DRAFT_ACCEPTED];
    out->passes = s[ENG_STAT_DECODE_PASSES];
    out->decode_tokens = s[ENG_STAT_DECODE_TOKENS];
    CHECK(s[ENG_STAT_BLOCKS_FREE] == s[ENG_STAT_BLOCKS_TOTAL]); // every block back, none leaked by trims
}

Result run(const std::string &dir, const std::vector<Prompt> &prompts, const Options &o, const Result *ref) {
    Result r;
    r.tokens.resize(prompts.size());
    r.finish.assign(prompts.size(), 0);
    eng_ctx *ctx = open(dir, o);
    if (!ctx) return r;
    if (o.is_alone) {
        for (size_t p = 0; p < prompts.size(); p++) run_some(ctx, prompts, {p}, o, ref, &r);
    } else {
        std::vector<size_t> all;
        for (size_t p = 0; p < prompts.size(); p++) all.push_back(p);
        run_some(ctx, prompts, all, o, ref, &r);
    }
    eng_ctx_free(ctx);
    return r;
}

std::vector<Prompt> fixture_prompts(const std::string &dir) {
    std::string text, err;
    maya::JsonValue fx;
    std::vector<Prompt> out;
    CHECK(maya::read_text_file(dir + "/fixtures.json", &text) == 0);
    CHECK(maya::json_parse(text.data(), text.size(), &fx, &err));
    std::vector<std::vector<float>> pixels;
    std::vector<std::vector<int32_t>> grids;
    if (const maya::JsonValue *images = fx.get("images")) {
        for (const auto &img : images->items) {
            std::string raw;
            CHECK(maya::read_text_file(dir + "/" + img.get("pixel_values")->string, &raw) == 0);
            pixels.emplace_back(raw.size() / 4);
            memcpy(pixels.back().data(), raw.data(), raw.size());
            grids.emplace_back();
            for (const auto &v : img.get("grid_thw")->items) grids.back().push_back((int32_t)v.integer);
        }
    }
    for (const auto &pr : fx.get("prompts")->items) {
        Prompt p;
        for (const auto &v : pr.get("ids")->items) p.ids.push_back((int32_t)v.integer);
        if (const maya::JsonValue *imgs = pr.get("images")) {
            for (const auto &v : imgs->items) {
                size_t i = (size_t)v.integer;
                p.pixels.insert(p.pixels.end(), pixels[i].begin(), pixels[i].end());
                p.grids.insert(p.grids.end(), grids[i].begin(), grids[i].end());
                p.hashes.push_back(0x1000 + i);
            }
        }
        out.push_back(p);
    }
    return out;
}

/* Greedy invariance on one fixture: the run without drafts against runs with oracle drafts (every
 * 3rd or 5th drafted token wrong), batched and chunked, alone, with 7 logits rows a step for 4
 * sequences (drafts cut to the rows left), and with masks. kv: ENG_PARAM_KV_DTYPE (0: default). */
void check_invariance_at(const std::string &dir, const std::vector<Prompt> &prompts, const char *name, int64_t kv) {
    Options off;
    off.kv = kv;
    Result ref = run(dir, prompts, off, nullptr);
    Options on = off;
    on.spec = ENG_SPEC_NGRAM;
    on.max_draft = 6;
    struct Case {
        const char *what;
        Options o;
    };
    std::vector<Case> cases;
    Options batched = on;
    batched.corrupt = 3;
    batched.chunk = 7; // prefill chunks share steps with verification passes
    cases.push_back({"batched, chunk 7", batched});
    Options alone = on;
    alone.corrupt = 5;
    alone.is_alone = true;
    cases.push_back({"alone", alone});
    Options rows = on;
    rows.corrupt = 4;
    rows.max_batch = 4;
    rows.max_logits = 7; // 4 sequences: the first drafts at most 7 - 4 = 3 tokens while all decode
    cases.push_back({"7 logits rows", rows});
    for (const Case &c : cases) {
        Result r = run(dir, prompts, c.o, &ref);
        for (size_t p = 0; p < prompts.size(); p++)
            CHECK_MSG(r.tokens[p] == ref.tokens[p], "%s (%s) prompt %zu: tokens differ from decoding without drafts",
                      name, c.what, p);
        CHECK_MSG(r.accepted > 0 && r.accepted < r.drafted, "%s kv %lld (%s): %lld of %lld drafts accepted", name,
                  (long long)kv, c.what, (long long)r.accepted, (long long)r.drafted);
        CHECK(r.decode_tokens == ref.decode_tokens);     // the same tokens generated ...
        CHECK(r.passes < ref.passes);                    // ... in fewer passes
        CHECK(r.decode_tokens == r.passes + r.accepted); // each pass: its accepted drafts + one of its own
        fprintf(stderr, "  %s kv %lld (%s): %lld/%lld drafts accepted, %.2f tokens per pass\n", name, (long long)kv,
                c.what, (long long)r.accepted, (long long)r.drafted, (double)r.decode_tokens / (double)r.passes);
    }
    // Constrained: every other prompt under a mask; the masked ones never draft, the rest do.
    Options moff = off;
    moff.is_masked = true;
    Result mref = run(dir, prompts, moff, nullptr);
    Options mon = on;
    mon.is_masked = true;
    mon.corrupt = 4;
    Result m = run(dir, prompts, mon, &mref);
    for (size_t p = 0; p < prompts.size(); p++)
        CHECK_MSG(m.tokens[p] == mref.tokens[p], "%s (masked) prompt %zu: tokens differ", name, p);
    bool is_bitten = false; // the masks changed some output
    for (size_t p = 0; p < prompts.size(); p += 2) is_bitten = is_bitten || mref.tokens[p] != ref.tokens[p];
    CHECK(is_bitten);
    CHECK(m.accepted > 0 && m.passes < mref.passes);
}
void check_invariance(const char *name, int64_t kv = 0) {
    std::string dir = test_repo_root() + "/test/fixtures/engine/" + name;
    check_invariance_at(dir, fixture_prompts(dir), name, kv);
}

} // namespace

TEST(speculative_greedy_invariance_dense) {
    check_invariance("llama-f32");
    check_invariance("glm4-bf16");
    check_invariance("qwen3-f16");
}

TEST(speculative_greedy_invariance_moe_mla_fp8) {
    check_invariance("glm45-moe-bf16");
    check_invariance("glm45-moe-fp8");
    check_invariance("deepseek3-bf16");
    check_invariance("deepseek3-fp8");
}

TEST(speculative_greedy_invariance_kv_dtypes) {
    // Drafts' K/V rows in f16, bf16 and q8_0: written in the verification pass, then kept or dropped.
    for (int64_t kv : {1 + ENG_KV_DTYPE_F16, 1 + ENG_KV_DTYPE_BF16, 1 + ENG_KV_DTYPE_Q8_0})
        check_invariance("llama-f32", kv);
    for (int64_t kv : {1 + ENG_KV_DTYPE_F16, 1 + ENG_KV_DTYPE_Q8_0}) {
        check_invariance("glm45-moe-bf16", kv);
        check_invariance("deepseek3-bf16", kv); // MLA: the latent cache's rows
    }
}

TEST(speculative_greedy_invariance_vision) {
    check_invariance("glm4v-tiny");
    check_invariance("glm45v-tiny");
}

/* GGUF files (test/fixtures/gguf, weights in their block formats: the quantized kernels' verification
 * passes must pick the tokens single-token decoding picks): each file opened as the model, the
 * prompts of its <model>.json, the same cases as above. Dense llama at Q4_K_M (K-quants against Q8_K
 * activations, Q6_K output) and Q4_0 (Q8_0 activations), MoE (qwen3moe softmax router, glm4moe
 * sigmoid + groups) and MLA (deepseek2) at Q4_K_M with their Q5_0 / Q8_0 fallback rows. */
TEST(speculative_greedy_invariance_gguf) {
    for (const char *file : {"llama-Q4_K_M", "llama-Q4_0", "qwen3moe-Q4_K_M", "glm4moe-Q4_K_M", "deepseek2-Q4_K_M"}) {
        std::string f = file, model = f.substr(0, f.rfind('-')), dir = test_repo_root() + "/test/fixtures/gguf/";
        std::string text, err;
        maya::JsonValue fx;
        CHECK(maya::read_text_file(dir + model + ".json", &text) == 0);
        CHECK(maya::json_parse(text.data(), text.size(), &fx, &err));
        std::vector<Prompt> prompts;
        for (const auto &pr : fx.get("prompts")->items) {
            prompts.emplace_back();
            for (const auto &v : pr.items) prompts.back().ids.push_back((int32_t)v.integer);
        }
        CHECK(prompts.size() == 4);
        check_invariance_at(dir + f + ".gguf", prompts, file, 0);
    }
}

namespace {

std::string small_model() {
    static std::string dir;
    if (dir.empty()) {
        dir = test_tmpdir("spec");
        if (!write_random_model(dir, scheduler_model_spec("F32", 5))) dir.clear();
    }
    return dir;
}

/* A prompt that repeats itself, so prompt lookup finds matches. */
Prompt periodic(int n, int period, int salt) {
    Prompt p;
    for (int i = 0; i < n; i++) p.ids.push_back((i % period) * 11 % 97 + salt % 7);
    return p;
}

} // namespace

/* Stop ids inside an accepted draft end the sequence at the stop id; preemption (a KV pool of a few
 * blocks) and max_tokens behave as without drafts. */
TEST(speculative_stops_preemption_and_lengths) {
    std::string dir = small_model();
    std::vector<Prompt> prompts;
    for (int i = 0; i < 10; i++) prompts.push_back(periodic(20 + 9 * i, 5 + i % 4, i));
    Options off;
    off.max_tokens = 40;
    Result ref = run(dir, prompts, off, nullptr);
    // A stop id: the reference's 6th token of prompt 3 (every sequence stops at its first occurrence).
    Options soff = off;
    soff.stops = {ref.tokens[3][5]};
    Result sref = run(dir, prompts, soff, nullptr);
    CHECK(sref.finish[3] == ENG_FINISH_STOP && sref.tokens[3].size() <= 6);
    Options son = soff;
    son.spec = ENG_SPEC_NGRAM;
    son.max_draft = 8;
    son.corrupt = 7;
    Result s = run(dir, prompts, son, &sref);
    CHECK(s.tokens == sref.tokens);
    CHECK(s.finish == sref.finish);
    CHECK(s.accepted > 0);
    // Preemption: 24 blocks of 16 for 10 sequences of up to 140 tokens, drafts of 8.
    Options poff = off;
    poff.n_blocks = 24;
    poff.max_batch = 8;
    Result pref = run(dir, prompts, poff, nullptr);
    CHECK(pref.tokens == ref.tokens);
    Options pon = poff;
    pon.spec = ENG_SPEC_NGRAM;
    pon.max_draft = 8;
    pon.corrupt = 6;
    eng_ctx *ctx = open(dir, pon);
    if (!ctx) return;
    Result p;
    p.tokens.resize(prompts.size());
    p.finish.assign(prompts.size(), 0);
    std::vector<size_t> all;
    for (size_t i = 0; i < prompts.size(); i++) all.push_back(i);
    run_some(ctx, prompts, all, pon, &ref, &p);
    int64_t st[ENG_STAT_COUNT];
    eng_ctx_stats(ctx, st, ENG_STAT_COUNT);
    CHECK(st[9] > 0); // ENG_STAT_PREEMPTIONS: the pool was too small for all
    eng_ctx_free(ctx);
    CHECK(p.tokens == ref.tokens);
    for (size_t i = 0; i < prompts.size(); i++) CHECK(p.finish[i] == ENG_FINISH_LENGTH && p.tokens[i].size() == 40);
    // Prompt lookup alone (no host drafts): the periodic prompts give it matches to draft from.
    Options auto_on = off;
    auto_on.spec = ENG_SPEC_AUTO;
    Result a = run(dir, prompts, auto_on, nullptr);
    CHECK(a.tokens == ref.tokens);
    CHECK(a.drafted > 0);
    fprintf(stderr, "  prompt lookup: %lld/%lld drafts accepted, %.2f tokens per pass\n", (long long)a.accepted,
            (long long)a.drafted, (double)a.decode_tokens / (double)a.passes);
}

namespace {

/* Rejected drafts leave nothing behind: after a run whose drafts were all wrong, a prompt made of a
 * finished sequence's prompt and output is served from the prefix cache and continues exactly as
 * without drafts (K/V of a rejected token in a reused block would change its logits). Cancelling a
 * sequence that carries drafts frees all its blocks. */
void rejections_leave_no_trace(int64_t kv) {
    std::string dir = small_model();
    std::vector<Prompt> prompts = {periodic(37, 6, 1), periodic(50, 7, 2)};
    Options off;
    off.max_tokens = 45;
    off.kv = kv;
    Result ref = run(dir, prompts, off, nullptr);
    Options on = off;
    on.spec = ENG_SPEC_NGRAM;
    on.max_draft = 8;
    on.corrupt = 1; // every drafted token wrong
    eng_ctx *ctx = open(dir, on);
    if (!ctx) return;
    Result r;
    r.tokens.resize(2);
    r.finish.assign(2, 0);
    run_some(ctx, prompts, {0, 1}, on, &ref, &r);
    CHECK(r.tokens == ref.tokens);
    CHECK(r.drafted > 0 && r.accepted == 0);
    // Follow-up prompt: prompt 0 + its output; its continuation must equal a fresh context's.
    Prompt follow;
    follow.ids = prompts[0].ids;
    follow.ids.insert(follow.ids.end(), ref.tokens[0].begin(), ref.tokens[0].end());
    std::vector<Prompt> fp = {follow};
    Options f = off;
    f.max_tokens = 10;
    Result fresh = run(dir, fp, f, nullptr);
    int32_t id = -1;
    CHECK(eng_seq_add(ctx, follow.ids.data(), (int32_t)follow.ids.size(), nullptr, 0, 10, 0.0f, 1.0f, 0, 0, 0, &id) ==
          0);
    std::vector<int32_t> got, ev(64 * 4);
    int32_t cached = -1;
    for (int guard = 0; guard < 1000; guard++) {
        int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
        if (n <= 0) break;
        for (int i = 0; i < n; i++) {
            if (ev[(size_t)i * 4 + 1] == ENG_EVENT_PREFILLED) cached = ev[(size_t)i * 4 + 3];
            if (ev[(size_t)i * 4 + 1] == ENG_EVENT_TOKEN) got.push_back(ev[(size_t)i * 4 + 2]);
        }
    }
    int32_t n_follow = (int32_t)follow.ids.size();
    CHECK(cached == (n_follow - 1) / 16 * 16); // every full block of prompt + output was cached
    CHECK(got == fresh.tokens[0]);
    // Cancellation with drafts in flight.
    CHECK(eng_seq_add(ctx, prompts[1].ids.data(), (int32_t)prompts[1].ids.size(), nullptr, 0, 40, 0.0f, 1.0f, 0, 0, 0,
                      &id) == 0);
    int tokens = 0;
    for (int guard = 0; guard < 100 && tokens < 5; guard++) {
        int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
        for (int i = 0; i < n; i++) tokens += ev[(size_t)i * 4 + 1] == ENG_EVENT_TOKEN;
        int32_t d[4] = {1, 2, 3, 4};
        CHECK(eng_seq_draft(ctx, id, d, 4, nullptr, 0) == 0);
    }
    int32_t bad[9] = {1, 97, 0, 0, 0, 0, 0, 0, 0};
    CHECK(eng_seq_draft(ctx, id, bad, 2, nullptr, 0) == ENG_STATUS_INVALID_ARG); // 97 is outside the vocabulary
    CHECK(eng_seq_draft(ctx, id, bad + 2, 9, nullptr, 0) ==
          ENG_STATUS_INVALID_ARG); // above ENG_PARAM_SPEC_MAX_DRAFT (8)
    CHECK(eng_seq_draft(ctx, 9999, bad, 0, nullptr, 0) == ENG_STATUS_UNKNOWN_SEQ);
    uint32_t words[3] = {0, 0, 0};
    CHECK(eng_seq_draft(ctx, id, bad + 2, 1, words, 3) == ENG_STATUS_INVALID_ARG); // 97 ids take 4 words
    CHECK(eng_seq_cancel(ctx, id) == 0);
    int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
    CHECK(n == 1 && ev[1] == ENG_EVENT_FINISH && ev[3] == ENG_FINISH_CANCELLED);
    int64_t st[ENG_STAT_COUNT];
    eng_ctx_stats(ctx, st, ENG_STAT_COUNT);
    CHECK(st[ENG_STAT_BLOCKS_FREE] == st[ENG_STAT_BLOCKS_TOTAL]);
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    CHECK(info[ENG_INFO_SPECULATIVE] == ENG_SPEC_NGRAM && info[ENG_INFO_SPEC_MAX_DRAFT] == 8);
    CHECK(info[ENG_INFO_KV_DTYPE] == (kv == 0 ? (int64_t)ENG_KV_DTYPE_F32 : kv - 1));
    eng_ctx_free(ctx);
    if (kv != 0) return; // the rest does not depend on the rows
    // Off: no drafts taken; MTP: refused by name at creation.
    ctx = open(dir, off);
    if (!ctx) return;
    CHECK(eng_seq_add(ctx, prompts[1].ids.data(), (int32_t)prompts[1].ids.size(), nullptr, 0, 4, 0.0f, 1.0f, 0, 0, 0,
                      &id) == 0);
    CHECK(eng_seq_draft(ctx, id, bad, 1, nullptr, 0) == ENG_STATUS_INVALID_ARG);
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    CHECK(info[ENG_INFO_SPECULATIVE] == ENG_SPEC_OFF && info[ENG_INFO_SPEC_MAX_DRAFT] == 0);
    eng_ctx_free(ctx);
    int64_t p[ENG_PARAM_COUNT] = {0};
    p[ENG_PARAM_SPECULATIVE] = ENG_SPEC_MTP;
    eng_ctx *mtp = nullptr;
    CHECK(test_ctx_create(dir.c_str(), p, ENG_PARAM_COUNT, &mtp) == ENG_STATUS_UNSUPPORTED && !mtp);
}

} // namespace

/* Rejected drafts leave nothing behind, on an f32 cache and on f16 and q8_0 rows. */
TEST(speculative_rejections_leave_no_trace) {
    for (int kv : {0, 1 + ENG_KV_DTYPE_F16, 1 + ENG_KV_DTYPE_Q8_0}) rejections_leave_no_trace(kv);
}

namespace {

/* Probabilities of sampling from logits at temperature t with nucleus top_p, as the sampler does. */
std::vector<double> target_probs(const std::vector<float> &lg, double t, double top_p) {
    size_t V = lg.size();
    double mx = -1e30, sum = 0;
    for (float v : lg) mx = v > mx ? v : mx;
    std::vector<double> p(V);
    for (size_t i = 0; i < V; i++) sum += p[i] = exp(((double)lg[i] - mx) / t);
    for (double &v : p) v /= sum;
    std::vector<size_t> idx(V);
    for (size_t i = 0; i < V; i++) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    double cum = 0;
    std::vector<double> q(V, 0.0);
    for (size_t i = 0; i < V; i++) {
        q[idx[i]] = p[idx[i]];
        cum += p[idx[i]];
        if (cum >= top_p) break;
    }
    for (double &v : q) v /= cum;
    return q;
}

/* Logits at the last position of each prompt (greedy, KEEP_LOGITS, one token). */
std::vector<std::vector<float>> last_logits(const std::string &dir, const std::vector<std::vector<int32_t>> &prompts) {
    Options o;
    eng_ctx *ctx = open(dir, o);
    std::vector<std::vector<float>> out(prompts.size(), std::vector<float>(97));
    if (!ctx) return out;
    std::vector<int32_t> ids;
    for (const auto &pr : prompts) {
        int32_t id = -1;
        CHECK(eng_seq_add(ctx, pr.data(), (int32_t)pr.size(), nullptr, 0, 1, 0.0f, 1.0f, 0, 0, ENG_SEQ_KEEP_LOGITS,
                          &id) == 0);
        ids.push_back(id);
    }
    std::vector<int32_t> ev(64 * 4);
    for (int guard = 0; guard < 10000; guard++) {
        int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
        if (n <= 0) break;
        for (int i = 0; i < n; i++)
            if (ev[(size_t)i * 4 + 1] == ENG_EVENT_TOKEN) {
                size_t p = (size_t)(std::find(ids.begin(), ids.end(), ev[(size_t)i * 4]) - ids.begin());
                CHECK(eng_seq_logits(ctx, ev[(size_t)i * 4], out[p].data(), 97) == 97);
            }
    }
    eng_ctx_free(ctx);
    return out;
}

/* Pearson's chi-square of observed counts against probabilities (cells expected below 5 pooled);
 * adds the statistic and its degrees of freedom. */
void chi_square(const std::vector<int> &count, const std::vector<double> &prob, double *chi2, int *df) {
    int n = 0;
    for (int c : count) n += c;
    if (n < 30) return;
    double rest_e = 0, rest_o = 0;
    int cells = 0;
    for (size_t i = 0; i < count.size(); i++) {
        double e = prob[i] * n;
        if (e < 5) {
            rest_e += e;
            rest_o += count[i];
            CHECK_MSG(prob[i] > 0 || count[i] == 0, "token %zu sampled with probability 0", i);
            continue;
        }
        *chi2 += (count[i] - e) * (count[i] - e) / e;
        cells++;
    }
    if (rest_e > 0) {
        *chi2 += (rest_o - rest_e) * (rest_o - rest_e) / rest_e;
        cells++;
    }
    *df += cells - 1;
}

} // namespace

/* The speculative-sampling rule keeps the output distribution, and more: each position draws the
 * sequence's RNG as decoding without drafts does, so the tokens equal those of the run without
 * drafts seed for seed. N sequences (seeds 1..N, temperature
 * 0.3, top-p 0.9) each get a one-token draft d(t1) after their first token t1, chosen with target
 * probability near 0.4, so both acceptance and the residual draw happen often. The second token's
 * distribution given t1, and the third's given t1 and an accepted draft, are checked against the
 * model's own probabilities with a pooled chi-square test at p = 0.001 (Wilson-Hilferty bound). */
TEST(speculative_sampling_keeps_the_distribution) {
    std::string dir = small_model();
    const double T = 0.3, TOP_P = 0.9;
    const int N = 3000;
    std::vector<int32_t> prompt = periodic(12, 5, 3).ids;
    std::vector<std::vector<int32_t>> next(97);
    for (int t = 0; t < 97; t++) {
        next[(size_t)t] = prompt;
        next[(size_t)t].push_back(t);
    }
    std::vector<std::vector<float>> lg1 = last_logits(dir, next);
    std::vector<int32_t> draft(97);
    std::vector<std::vector<double>> p2(97);
    for (int t = 0; t < 97; t++) {
        p2[(size_t)t] = target_probs(lg1[(size_t)t], T, TOP_P);
        int best = 0;
        for (int v = 1; v < 97; v++)
            if (fabs(p2[(size_t)t][(size_t)v] - 0.4) < fabs(p2[(size_t)t][(size_t)best] - 0.4)) best = v;
        draft[(size_t)t] = best;
    }
    std::vector<std::vector<int32_t>> after(97);
    for (int t = 0; t < 97; t++) {
        after[(size_t)t] = next[(size_t)t];
        after[(size_t)t].push_back(draft[(size_t)t]);
    }
    std::vector<std::vector<float>> lg2 = last_logits(dir, after);
    Options o;
    o.spec = ENG_SPEC_NGRAM;
    o.max_draft = 1;
    o.max_batch = 16;
    eng_ctx *ctx = open(dir, o);
    if (!ctx) return;
    std::vector<std::vector<int>> c2(97, std::vector<int>(97, 0)), c3(97, std::vector<int>(97, 0));
    std::map<int32_t, std::vector<int32_t>> toks;
    for (int i = 0; i < N; i++) {
        int32_t id = -1;
        CHECK(eng_seq_add(ctx, prompt.data(), (int32_t)prompt.size(), nullptr, 0, 3, (float)T, (float)TOP_P, 0,
                          (uint64_t)i + 1, 0, &id) == 0);
        toks[id];
    }
    std::vector<int32_t> ev(256 * 4);
    int done = 0, accepted = 0, with_draft = 0;
    for (int guard = 0; guard < 100000 && done < N; guard++) {
        int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
        CHECK(n >= 0);
        if (n < 0) break;
        for (int i = 0; i < n; i++) {
            int32_t sid = ev[(size_t)i * 4], kind = ev[(size_t)i * 4 + 1], tok = ev[(size_t)i * 4 + 2];
            if (kind == ENG_EVENT_TOKEN) {
                std::vector<int32_t> &t = toks[sid];
                t.push_back(tok);
                if (t.size() == 1) { // the first token, from prefill: draft for the next pass
                    CHECK(eng_seq_draft(ctx, sid, &draft[(size_t)tok], 1, nullptr, 0) == 0);
                    with_draft++;
                }
            }
            if (kind == ENG_EVENT_FINISH) {
                const std::vector<int32_t> &t = toks[sid];
                CHECK(t.size() == 3);
                if (t.size() == 3) {
                    c2[(size_t)t[0]][(size_t)t[1]]++;
                    if (t[1] == draft[(size_t)t[0]]) {
                        c3[(size_t)t[0]][(size_t)t[2]]++;
                        accepted++;
                    }
                }
                done++;
            }
        }
    }
    CHECK(done == N);
    int64_t st[ENG_STAT_COUNT];
    eng_ctx_stats(ctx, st, ENG_STAT_COUNT);
    eng_ctx_free(ctx);
    // The same seeds without speculation: the same tokens.
    Options o_off;
    o_off.max_batch = 16;
    eng_ctx *ref = open(dir, o_off);
    if (!ref) return;
    std::map<int32_t, std::vector<int32_t>> ref_toks;
    std::vector<int32_t> order;
    for (int i = 0; i < N; i++) {
        int32_t id = -1;
        CHECK(eng_seq_add(ref, prompt.data(), (int32_t)prompt.size(), nullptr, 0, 3, (float)T, (float)TOP_P, 0,
                          (uint64_t)i + 1, 0, &id) == 0);
        order.push_back(id);
    }
    for (int guard = 0, left = N; guard < 100000 && left > 0; guard++) {
        int32_t n = eng_step(ref, ev.data(), (int32_t)ev.size());
        if (n <= 0) break;
        for (int i = 0; i < n; i++) {
            if (ev[(size_t)i * 4 + 1] == ENG_EVENT_TOKEN) ref_toks[ev[(size_t)i * 4]].push_back(ev[(size_t)i * 4 + 2]);
            if (ev[(size_t)i * 4 + 1] == ENG_EVENT_FINISH) left--;
        }
    }
    eng_ctx_free(ref);
    int same = 0;
    auto it = toks.begin();
    for (int i = 0; i < N && it != toks.end(); i++, it++) same += it->second == ref_toks[order[(size_t)i]];
    CHECK_MSG(same == N, "%d of %d seeds gave the same tokens with and without drafts", same, N);
    CHECK(st[ENG_STAT_DRAFT_TOKENS] == with_draft);
    CHECK(st[ENG_STAT_DRAFT_ACCEPTED] == accepted); // accepted drafts are exactly the t2 == d(t1) outcomes
    double chi2 = 0, chi3 = 0;
    int df2 = 0, df3 = 0;
    for (int t = 0; t < 97; t++) {
        chi_square(c2[(size_t)t], p2[(size_t)t], &chi2, &df2);
        chi_square(c3[(size_t)t], target_probs(lg2[(size_t)t], T, TOP_P), &chi3, &df3);
    }
    auto bound = [](int df) { // chi-square quantile at 1 - 0.001 (z = 3.09), Wilson-Hilferty
        double k = 2.0 / (9.0 * df);
        return df * pow(1 - k + 3.09 * sqrt(k), 3);
    };
    fprintf(
        stderr,
        "  %d samples, %d drafts accepted; chi2 %.1f (df %d, bound %.1f), given accepted %.1f (df %d, bound %.1f)\n", N,
        accepted, chi2, df2, df2 > 0 ? bound(df2) : 0.0, chi3, df3, df3 > 0 ? bound(df3) : 0.0);
    CHECK(df2 >= 5 && df3 >= 3);
    CHECK(accepted > N / 10 && accepted < N * 9 / 10);
    if (df2 > 0) CHECK(chi2 < bound(df2));
    if (df3 > 0) CHECK(chi3 < bound(df3));
}
