/* test_kv_cache.cpp: the KV cache's row formats (kernels/kv.h) on every kernel table, the prefix
 * cache over non-f32 rows, prompt logits (ENG_SEQ_PROMPT_LOGITS) against one sequence per prefix,
 * and prompt logits beside speculative decoding. */
#include <string.h>

#include <vector>

#include "../include/engine.h"
#include "../src/checkpoint.h" // read_text_file
#include "../src/json.h"
#include "../src/kernels.h"
#include "test.h"

using namespace maya;

namespace {

float f16_value(uint16_t h) { // a reference widening, independent of the kernels' own
    int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double v = e == 0 ? m * ldexp(1.0, -24) : e == 31 ? (m ? NAN : INFINITY) : (1024 + m) * ldexp(1.0, e - 25);
    return (float)((h & 0x8000) ? -v : v);
}

float bf16_value(uint16_t h) {
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

float from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* Whether h is the nearest value of its format to x (ties: the even one). */
bool is_nearest(float x, uint16_t h, float (*value)(uint16_t)) {
    double got = fabs((double)x - value(h));
    for (int d = -1; d <= 1; d += 2) {
        uint16_t o = (uint16_t)(h + d);
        if (((o ^ h) & 0x8000) || (o & 0x7FFF) > 0x7C00) continue; // across the sign or into NaNs (f16)
        double other = fabs((double)x - value(o));
        if (other < got || (other == got && (h & 1))) return false;
    }
    return true;
}

struct Rand {
    uint64_t s = 0x9E3779B97F4A7C15ull;
    uint32_t bits() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return (uint32_t)(s >> 32);
    }
};

} // namespace

TEST(kv_rows_round_to_nearest_on_every_path) {
    // f16 / bf16 rows: every value is its nearest in the format (ties to even), on random floats
    // over the whole range (subnormals, overflow) and on every exact midpoint; each table stores the
    // same bits and widens them to the same floats.
    const Kernels *t[3];
    int nt = kernels_supported(t);
    Rand r;
    std::vector<float> x;
    for (int i = 0; i < 20000; i++) {
        uint32_t b = r.bits();
        x.push_back(from_bits((b & 0x80000000u) | ((100 + b % 60) << 23) | (r.bits() & 0x7FFFFFu))); // 2^-27 .. 2^32
    }
    for (uint32_t h = 0; h < 0x7BFF; h++) { // f16 midpoints between h and h + 1 (exact in f32)
        x.push_back((f16_value((uint16_t)h) + f16_value((uint16_t)(h + 1))) * 0.5f);
        x.push_back(f16_value((uint16_t)h));
    }
    x.push_back(65504.0f);
    x.push_back(65520.0f); // the midpoint to infinity: rounds up
    x.push_back(-0.0f);
    int n = (int)x.size();
    for (int dtype : {kKvF16, kKvBF16}) {
        float (*value)(uint16_t) = dtype == kKvF16 ? f16_value : bf16_value;
        std::vector<uint16_t> ref((size_t)n), got((size_t)n);
        t[0]->kv_store(ref.data(), x.data(), n, dtype);
        int bad = 0;
        for (int i = 0; i < n; i++) {
            bool ok = fabsf(x[(size_t)i]) >= (dtype == kKvF16 ? 65520.0f : 3.4e38f)
                          ? (ref[(size_t)i] & 0x7FFF) == 0x7C00
                          : is_nearest(x[(size_t)i], ref[(size_t)i], value);
            bad += !ok;
            if (!ok && bad < 5)
                fprintf(stderr, "  %s: %.9g stored as 0x%04x\n", dtype == kKvF16 ? "f16" : "bf16", x[(size_t)i],
                        ref[(size_t)i]);
        }
        CHECK(bad == 0);
        for (int k = 0; k < nt; k++) {
            t[k]->kv_store(got.data(), x.data(), n, dtype);
            CHECK_MSG(got == ref, "%s stores other bits", t[k]->name);
            std::vector<float> w((size_t)n);
            t[k]->kv_to_f32(w.data(), ref.data(), 1, n, dtype);
            int diff = 0;
            for (int i = 0; i < n; i++) {
                float v = value(ref[(size_t)i]);
                diff += memcmp(&w[(size_t)i], &v, 4) != 0;
            }
            CHECK_MSG(diff == 0, "%s widens %d values wrongly", t[k]->name, diff);
        }
    }
}

TEST(kv_rows_q8_0_blocks_on_every_path) {
    // q8_0 rows are ggml's block_q8_0 (f16 d = amax / 127, int8 round(x / d)); a row of 40 values
    // ends in a block of 8. Every value comes back within d / 2 of itself, and every table stores
    // and widens the same bits.
    const Kernels *t[3];
    int nt = kernels_supported(t);
    Rand r;
    for (int n : {16, 32, 40, 64, 576}) {
        std::vector<float> x((size_t)n * 3);
        for (float &v : x) v = (float)((int32_t)r.bits()) * 1e-9f * (float)(1 + r.bits() % 7);
        int64_t row = kv_row_bytes(kKvQ8_0, n);
        CHECK(row == n + 2 * ((n + 31) / 32));
        std::vector<uint8_t> ref((size_t)row * 3), got(ref.size());
        for (int i = 0; i < 3; i++) t[0]->kv_store(&ref[(size_t)(i * row)], &x[(size_t)i * n], n, kKvQ8_0);
        for (int i = 0; i < 3; i++) { // the layout, block by block
            const uint8_t *p = &ref[(size_t)(i * row)];
            for (int b0 = 0; b0 < n; b0 += 32) {
                int nb = n - b0 < 32 ? n - b0 : 32;
                float amax = 0;
                for (int j = 0; j < nb; j++) amax = fmaxf(amax, fabsf(x[(size_t)(i * n + b0 + j)]));
                uint16_t dh;
                memcpy(&dh, p, 2);
                CHECK(is_nearest(amax / 127.0f, dh, f16_value));
                // q = round(x / d32) with d32 = amax / 127 in f32, read back times the f16 d: within
                // d32 / 2 plus 127 times d's rounding.
                float d = f16_value(dh), d32 = amax / 127.0f;
                for (int j = 0; j < nb; j++) {
                    float back = (float)(int8_t)p[2 + j] * d;
                    CHECK(fabsf(back - x[(size_t)(i * n + b0 + j)]) <=
                          0.5f * d32 + 127.0f * fabsf(d - d32) + 1e-6f * d32 + 1e-30f);
                }
                p += 2 + nb;
            }
        }
        std::vector<float> w0((size_t)n * 3), w((size_t)n * 3);
        t[0]->kv_to_f32(w0.data(), ref.data(), 3, n, kKvQ8_0);
        for (int k = 0; k < nt; k++) {
            for (int i = 0; i < 3; i++) t[k]->kv_store(&got[(size_t)(i * row)], &x[(size_t)i * n], n, kKvQ8_0);
            CHECK_MSG(got == ref, "%s stores other q8_0 bits (n %d)", t[k]->name, n);
            t[k]->kv_to_f32(w.data(), ref.data(), 3, n, kKvQ8_0);
            CHECK_MSG(memcmp(w.data(), w0.data(), w.size() * 4) == 0, "%s widens q8_0 differently (n %d)", t[k]->name,
                      n);
        }
    }
}

namespace {

struct Fixture {
    std::string dir;
    std::vector<std::vector<int32_t>> prompts;
};

Fixture load_fixture(const char *name) {
    Fixture f;
    f.dir = test_repo_root() + "/test/fixtures/engine/" + name;
    std::string text, err;
    CHECK(read_text_file(f.dir + "/fixtures.json", &text) == 0);
    JsonValue fx;
    CHECK(json_parse(text.data(), text.size(), &fx, &err));
    for (const auto &p : fx.get("prompts")->items) {
        std::vector<int32_t> ids;
        for (const auto &v : p.get("ids")->items) ids.push_back((int32_t)v.integer);
        f.prompts.push_back(ids);
    }
    return f;
}

/* A CPU context on the fixture with the KV dtype, logits rows, prefill chunk and speculation given
 * (spec 0: the engine's default; a mode given drafts at most 8 tokens). */
eng_ctx *open_ctx(const Fixture &f, int64_t kv, int64_t max_logits, int64_t chunk, int64_t spec = 0) {
    int64_t params[ENG_PARAM_COUNT] = {0};
    params[ENG_PARAM_N_THREADS] = 2;
    params[ENG_PARAM_KV_DTYPE] = kv;
    params[ENG_PARAM_MAX_LOGITS] = max_logits;
    params[ENG_PARAM_PREFILL_CHUNK] = chunk;
    params[ENG_PARAM_BACKEND] = ENG_BACKEND_CPU;
    params[ENG_PARAM_SPECULATIVE] = spec;
    params[ENG_PARAM_SPEC_MAX_DRAFT] = spec ? 8 : 0;
    eng_ctx *ctx = nullptr;
    CHECK(test_ctx_create(f.dir.c_str(), params, ENG_PARAM_COUNT, &ctx) == 0 && ctx);
    return ctx;
}

/* Runs one sequence to its end; its PREFILLED value (cached tokens) into *cached, the logits of its
 * first token (KEEP_LOGITS) into *last and, with PROMPT_LOGITS, every prompt row into *rows. */
void run_one(eng_ctx *ctx, const std::vector<int32_t> &toks, uint32_t flags, int32_t *cached, std::vector<float> *last,
             std::vector<float> *rows, int V) {
    int32_t id = -1;
    CHECK(eng_seq_add(ctx, toks.data(), (int32_t)toks.size(), nullptr, 0, 1, 0.0f, 1.0f, 0, 0,
                      flags | ENG_SEQ_KEEP_LOGITS, &id) == 0);
    int32_t ev[4 * 16];
    bool done = false;
    for (int guard = 0; guard < 10000 && !done; guard++) {
        int32_t n = eng_step(ctx, ev, 4 * 16);
        CHECK(n >= 0);
        if (n < 0) return;
        for (int i = 0; i < n; i++) {
            if (ev[i * 4] != id) continue;
            if (ev[i * 4 + 1] == ENG_EVENT_PREFILLED && cached) *cached = ev[i * 4 + 3];
            if (ev[i * 4 + 1] == ENG_EVENT_TOKEN && last) {
                last->resize((size_t)V);
                CHECK(eng_seq_logits(ctx, id, last->data(), V) == V);
            }
            if (ev[i * 4 + 1] == ENG_EVENT_FINISH) done = true;
        }
    }
    CHECK(done);
    if (rows) {
        rows->resize(toks.size() * (size_t)V);
        CHECK(eng_seq_prompt_logits(ctx, id, rows->data(), (int64_t)rows->size() - 1) == ENG_STATUS_INVALID_ARG);
        CHECK(eng_seq_prompt_logits(ctx, id, rows->data(), (int64_t)rows->size()) == (int32_t)toks.size());
    }
}

} // namespace

TEST(kv_prefix_cache_serves_non_f32_rows) {
    // A prompt run twice on a bf16 and a q8_0 cache: the second run takes its full blocks from the
    // prefix cache (paged rows of that format, written by the first) and gives the same logits bits.
    Fixture f = load_fixture("glm45-moe-bf16");
    const std::vector<int32_t> &p = f.prompts.back(); // 130 tokens: 8 full blocks of 16
    for (int64_t kv : {1 + ENG_KV_DTYPE_BF16, 1 + ENG_KV_DTYPE_Q8_0}) {
        eng_ctx *ctx = open_ctx(f, kv, 0, 32);
        if (!ctx) return;
        int64_t info[ENG_INFO_COUNT];
        eng_ctx_info(ctx, info, ENG_INFO_COUNT);
        int V = (int)info[ENG_INFO_N_VOCAB];
        int32_t c1 = -1, c2 = -1;
        std::vector<float> a, b;
        run_one(ctx, p, 0, &c1, &a, nullptr, V);
        run_one(ctx, p, 0, &c2, &b, nullptr, V);
        CHECK(c1 == 0);
        CHECK_MSG(c2 == 128, "cached %d", c2);
        CHECK(a.size() == (size_t)V && a == b);
        eng_ctx_free(ctx);
    }
}

TEST(prompt_logits_equal_one_sequence_per_prefix) {
    // ENG_SEQ_PROMPT_LOGITS: row i of a 40-token prompt equals the last-position logits of a sequence
    // holding only tokens [0, i] (same bits: a token's logits do not depend on its batch), on a dense,
    // an MoE and an MLA fixture, with 5 logits rows a step (so the prompt prefills 5 tokens at a
    // time, beside other sequences) and without the prefix cache (the prefixes were cached before).
    for (const char *name : {"llama-f32", "glm45-moe-bf16", "deepseek3-bf16"}) {
        Fixture f = load_fixture(name);
        const std::vector<int32_t> &p = f.prompts[2];
        CHECK(p.size() == 40);
        eng_ctx *ctx = open_ctx(f, 1 + ENG_KV_DTYPE_F32, 5, 256);
        if (!ctx) return;
        int64_t info[ENG_INFO_COUNT];
        eng_ctx_info(ctx, info, ENG_INFO_COUNT);
        int V = (int)info[ENG_INFO_N_VOCAB];
        std::vector<std::vector<float>> want(p.size());
        for (size_t i = 0; i < p.size(); i++) {
            std::vector<int32_t> prefix(p.begin(), p.begin() + (long)i + 1);
            run_one(ctx, prefix, 0, nullptr, &want[i], nullptr, V);
        }
        // Another sequence decodes meanwhile, so steps mix prompt rows with a sampled row.
        int32_t other = -1;
        CHECK(eng_seq_add(ctx, f.prompts[0].data(), (int32_t)f.prompts[0].size(), nullptr, 0, 20, 0.0f, 1.0f, 0, 0, 0,
                          &other) == 0);
        int32_t cached = -1;
        std::vector<float> last, rows;
        run_one(ctx, p, ENG_SEQ_PROMPT_LOGITS, &cached, &last, &rows, V);
        CHECK(cached == 0);
        int bad = 0;
        for (size_t i = 0; i < p.size(); i++) bad += memcmp(&rows[i * (size_t)V], want[i].data(), (size_t)V * 4) != 0;
        CHECK_MSG(bad == 0, "%s: %d of %zu prompt rows differ", name, bad, p.size());
        CHECK(memcmp(&rows[(p.size() - 1) * (size_t)V], last.data(), (size_t)V * 4) == 0);
        // Without the flag there are no prompt logits.
        int32_t id = -1;
        CHECK(eng_seq_add(ctx, p.data(), 3, nullptr, 0, 1, 0.0f, 1.0f, 0, 0, 0, &id) == 0);
        CHECK(eng_seq_prompt_logits(ctx, id, rows.data(), (int64_t)rows.size()) == ENG_STATUS_INVALID_ARG);
        eng_ctx_free(ctx);
    }
}

namespace {

/* Greedy tokens of one sequence run alone. */
std::vector<int32_t> greedy_alone(eng_ctx *ctx, const std::vector<int32_t> &toks, int max_tokens) {
    int32_t id = -1;
    std::vector<int32_t> out;
    CHECK(eng_seq_add(ctx, toks.data(), (int32_t)toks.size(), nullptr, 0, max_tokens, 0.0f, 1.0f, 0, 0, 0, &id) == 0);
    int32_t ev[4 * 16];
    bool done = false;
    for (int guard = 0; guard < 10000 && !done; guard++) {
        int32_t n = eng_step(ctx, ev, 4 * 16);
        CHECK(n >= 0);
        if (n < 0) break;
        for (int i = 0; i < n; i++) {
            if (ev[i * 4 + 1] == ENG_EVENT_TOKEN) out.push_back(ev[i * 4 + 2]);
            done = done || ev[i * 4 + 1] == ENG_EVENT_FINISH;
        }
    }
    CHECK(done);
    return out;
}

int64_t drafted(eng_ctx *ctx) {
    int64_t s[ENG_STAT_COUNT];
    eng_ctx_stats(ctx, s, ENG_STAT_COUNT);
    return s[ENG_STAT_DRAFT_TOKENS];
}

} // namespace

TEST(prompt_logits_beside_drafts) {
    // Speculative decoding and prompt logits together, on f16 and q8_0 caches, with the fewest logits
    // rows a step (16, the max batch): a sequence verifying 8 correct drafts a pass (9 rows) shares
    // steps with a PROMPT_LOGITS prefill of 130 tokens, which takes the rows left. The prompt's rows
    // equal a run alone without speculation, the drafting sequence's tokens equal decoding without
    // drafts, and the PROMPT_LOGITS sequence never drafts (drafts offered to it are dropped).
    for (const char *name : {"llama-f32", "deepseek3-bf16"})
        for (int64_t kv : {1 + ENG_KV_DTYPE_F16, 1 + ENG_KV_DTYPE_Q8_0}) {
            Fixture f = load_fixture(name);
            const std::vector<int32_t> &p = f.prompts[3], &d = f.prompts[1];
            CHECK(p.size() == 130);
            eng_ctx *ref = open_ctx(f, kv, 0, 0, ENG_SPEC_OFF);
            if (!ref) return;
            int64_t info[ENG_INFO_COUNT];
            eng_ctx_info(ref, info, ENG_INFO_COUNT);
            int V = (int)info[ENG_INFO_N_VOCAB];
            std::vector<float> want_last, want_rows;
            run_one(ref, p, ENG_SEQ_PROMPT_LOGITS, nullptr, &want_last, &want_rows, V);
            std::vector<int32_t> want_d = greedy_alone(ref, d, 40), want_p = greedy_alone(ref, p, 8);
            eng_ctx_free(ref);

            eng_ctx *ctx = open_ctx(f, kv, 16, 0, ENG_SPEC_NGRAM);
            if (!ctx) return;
            eng_ctx_info(ctx, info, ENG_INFO_COUNT);
            CHECK(info[ENG_INFO_KV_DTYPE] == kv - 1 && info[ENG_INFO_SPEC_MAX_DRAFT] == 8);
            int32_t did = -1, pid = -1;
            CHECK(eng_seq_add(ctx, d.data(), (int32_t)d.size(), nullptr, 0, 40, 0.0f, 1.0f, 0, 0, 0, &did) == 0);
            std::vector<int32_t> got_d, got_p;
            int32_t ev[4 * 64];
            int finished = 0, shared = 0;
            for (int step = 0; step < 10000 && finished < 2; step++) {
                // The prompt arrives once the drafting sequence decodes.
                if (pid < 0 && got_d.size() >= 2)
                    CHECK(eng_seq_add(ctx, p.data(), (int32_t)p.size(), nullptr, 0, 8, 0.0f, 1.0f, 0, 0,
                                      ENG_SEQ_PROMPT_LOGITS, &pid) == 0);
                int64_t before = drafted(ctx);
                int32_t n = eng_step(ctx, ev, 4 * 64);
                CHECK(n >= 0);
                if (n < 0) break;
                bool d_token = false, p_prefilling = pid >= 0 && got_p.empty();
                for (int i = 0; i < n; i++) {
                    int32_t sid = ev[i * 4], kind = ev[i * 4 + 1], tok = ev[i * 4 + 2];
                    if (kind == ENG_EVENT_TOKEN) (sid == did ? got_d : got_p).push_back(tok);
                    d_token = d_token || (kind == ENG_EVENT_TOKEN && sid == did);
                    finished += kind == ENG_EVENT_FINISH;
                }
                shared += d_token && p_prefilling && drafted(ctx) > before;
                // Next pass's drafts: the drafting sequence's own continuation (all correct), and
                // some for the PROMPT_LOGITS sequence, which must not take them.
                if (got_d.size() < want_d.size()) {
                    std::vector<int32_t> next(want_d.begin() + (long)got_d.size(),
                                              want_d.begin() + (long)std::min(got_d.size() + 8, want_d.size()));
                    CHECK(eng_seq_draft(ctx, did, next.data(), (int32_t)next.size(), nullptr, 0) == 0);
                }
                if (pid >= 0 && got_p.size() < want_p.size()) {
                    std::vector<int32_t> next(want_p.begin() + (long)got_p.size(), want_p.end());
                    if (next.size() > 8) next.resize(8);
                    CHECK(eng_seq_draft(ctx, pid, next.data(), (int32_t)next.size(), nullptr, 0) == 0);
                }
                if (got_d.size() >= want_d.size() && !got_p.empty() && got_p.size() < want_p.size())
                    CHECK_MSG(drafted(ctx) == before, "%s: the PROMPT_LOGITS sequence drafted", name);
            }
            CHECK(finished == 2);
            CHECK_MSG(got_d == want_d, "%s kv %lld: the drafting sequence's tokens differ", name, (long long)kv);
            CHECK(got_p == want_p);
            CHECK_MSG(shared > 0, "%s kv %lld: no step verified drafts beside the prompt's prefill", name,
                      (long long)kv);
            std::vector<float> rows(p.size() * (size_t)V);
            CHECK(eng_seq_prompt_logits(ctx, pid, rows.data(), (int64_t)rows.size()) == (int32_t)p.size());
            int bad = 0;
            for (size_t i = 0; i < p.size(); i++)
                bad += memcmp(&rows[i * (size_t)V], &want_rows[i * (size_t)V], (size_t)V * 4) != 0;
            CHECK_MSG(bad == 0, "%s kv %lld: %d of %zu prompt rows differ", name, (long long)kv, bad, p.size());
            int64_t s[ENG_STAT_COUNT];
            eng_ctx_stats(ctx, s, ENG_STAT_COUNT);
            CHECK(s[ENG_STAT_DRAFT_ACCEPTED] > 0 && s[ENG_STAT_BLOCKS_FREE] == s[ENG_STAT_BLOCKS_TOTAL]);
            eng_ctx_free(ctx);
        }
}
