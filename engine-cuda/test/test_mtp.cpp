/* test_mtp.cpp: the multi-token-prediction layers of GLM-4.5 and DeepSeek-V3 (issue 35, MTP drafts).
 * The MTP layer's logits against the PyTorch reference (scripts/oracle/reference_moe.py mtp_forward)
 * on the *-mtp-* golden fixtures, within the main model's tolerance: a catch-up over the prompt in
 * two chunks (its KV layer read across them), then one chained prediction from its own hidden
 * state. Through the scheduler: every MTP draft (first and chained) of a greedy run is the
 * reference's, with host drafts accepted whole every third step, so the MTP KV the catch-up writes
 * after multi-token passes, rejections and chunked prefill is checked too. Through the ABI: MAYA_SPECULATIVE=mtp is accepted where the checkpoint has the layer and
 * refused where it does not, auto picks it, and greedy and sampled tokens equal those of decoding
 * without drafts, alone and batched, chunked, with masks and under preemption. */
#include <math.h>
#include <string.h>

#include <map>
#include <memory>
#include <vector>

#include "../include/engine.h"
#include "../src/backend.h"
#include "../src/checkpoint.h" // read_text_file
#include "../src/json.h"
#include "../src/kernels.h"
#include "../src/model.h"
#include "../src/scheduler.h"
#include "mtp_bed.h"
#include "test.h"

namespace {

const char *kMtpDirs[] = {"glm45-moe-mtp-bf16", "deepseek3-mtp-bf16"};

std::vector<float> floats(const maya::JsonValue &a) {
    std::vector<float> v;
    for (const auto &x : a.items) v.push_back((float)x.number);
    return v;
}

double max_diff(const float *a, const std::vector<float> &b) {
    double worst = 0;
    for (size_t i = 0; i < b.size(); i++) worst = fmax(worst, fabs((double)a[i] - (double)b[i]));
    return worst;
}

/* One sequence's rows of a batch: n tokens from position pos0 over the block table, logits for its last. */
maya::Batch one_seq(const std::vector<int32_t> &tokens, int32_t pos0, const std::vector<int32_t> &blocks,
                    bool want_logits) {
    maya::Batch b;
    b.tokens = tokens;
    maya::BatchSeq s;
    s.tok0 = 0;
    s.n_tokens = (int32_t)tokens.size();
    s.pos0 = pos0;
    s.block_table = blocks.data();
    s.n_blocks = (int32_t)blocks.size();
    s.logits_row = want_logits ? 0 : -1;
    b.seqs.push_back(s);
    b.n_logits = want_logits ? 1 : 0;
    return b;
}

/* model: the checkpoint to load (default: the fixture directory itself). */
void check_mtp_oracle(const char *name, const std::string &model = "") {
    std::string dir = test_repo_root() + "/test/fixtures/engine/" + name;
    std::string text, err;
    maya::JsonValue fx;
    CHECK(maya::read_text_file(dir + "/fixtures.json", &text) == 0);
    CHECK_MSG(maya::json_parse(text.data(), text.size(), &fx, &err), "%s", err.c_str());
    maya::Model m;
    CHECK(maya::model_load(model.empty() ? dir : model, &m) == 0);
    CHECK_MSG(m.mtp.size() == 1, "%s: MTP layer not bound", name);
    if (m.mtp.size() != 1) return;
    const maya::Kernels *k = nullptr;
    CHECK(maya::kernels_choose(test_simd(), &k) == 0);
    maya::BackendConfig bc;
    bc.n_threads = 2;
    bc.block_size = 16;
    bc.n_blocks = 16;
    bc.max_tokens = 256;
    bc.max_logits = 4;
    bc.n_ctx = 256;
    bc.use_mtp = true;
    std::unique_ptr<maya::Backend> be;
    CHECK(maya::cpu_backend_create(m, bc, *k, &be) == 0);
    if (!be) return;
    int32_t V = m.cfg.n_vocab, C = m.cfg.n_embd;
    double tol = fx.get("tolerance")->get("max_abs_logit_diff")->number, worst = 0, worst_chain = 0;
    std::vector<int32_t> blocks;
    for (int32_t i = 0; i < bc.n_blocks; i++) blocks.push_back(i);
    std::vector<float> logits((size_t)V), h, h_out;
    for (const auto &pr : fx.get("prompts")->items) {
        std::vector<int32_t> ids;
        for (const auto &v : pr.get("ids")->items) ids.push_back((int32_t)v.integer);
        int32_t n = (int32_t)ids.size();
        maya::Batch main = one_seq(ids, 0, blocks, true);
        CHECK(be->forward(main, logits.data()) == 0);
        CHECK(max_diff(logits.data(), floats(*pr.get("last_logits"))) <= tol); // the main model, for reference
        h.assign(be->hidden(), be->hidden() + (size_t)(n - 1) * C);
        h_out.assign((size_t)(n - 1) * C, 0.0f);
        // The catch-up over positions 0..n-2 (the next prompt token each) in two chunks.
        int32_t half = (n - 1) / 2;
        std::vector<int32_t> a(ids.begin() + 1, ids.begin() + 1 + half), b(ids.begin() + 1 + half, ids.end());
        if (!a.empty()) {
            maya::Batch first = one_seq(a, 0, blocks, false);
            CHECK(be->mtp_forward(first, h.data(), h_out.data(), nullptr) == 0);
        }
        maya::Batch second = one_seq(b, half, blocks, true);
        CHECK(be->mtp_forward(second, h.data() + (size_t)half * C, h_out.data() + (size_t)half * C, logits.data()) ==
              0);
        const maya::JsonValue &ref = *pr.get("mtp");
        double d = max_diff(logits.data(), floats(*ref.get("logits")));
        worst = fmax(worst, d);
        CHECK_MSG(d <= tol, "%s prompt of %d: MTP logits differ by %g", name, n, d);
        // One chained prediction at position n-1 from its own output at n-2.
        std::vector<int32_t> chain = {(int32_t)ref.get("chain_token")->integer};
        std::vector<float> hc(h_out.end() - C, h_out.end()), hc_out((size_t)C);
        maya::Batch next = one_seq(chain, n - 1, blocks, true);
        CHECK(be->mtp_forward(next, hc.data(), hc_out.data(), logits.data()) == 0);
        d = max_diff(logits.data(), floats(*ref.get("chain_logits")));
        worst_chain = fmax(worst_chain, d);
        CHECK_MSG(d <= tol, "%s prompt of %d: chained MTP logits differ by %g", name, n, d);
    }
    fprintf(stderr, "  %s: MTP max |dlogit| %.2e, chained %.2e (tolerance %.0e)\n", name, worst, worst_chain, tol);
}

struct Opts {
    int64_t spec = ENG_SPEC_OFF, max_draft = 6, chunk = 256, max_batch = 0, n_blocks = 0;
    int64_t kv_dtype = 0; // ENG_PARAM_KV_DTYPE (0: default, f32 for these bf16 fixtures)
    bool is_alone = false, is_masked = false;
    float temperature = 0.0f;
    int max_tokens = 24, copies = 1; // copies: each prompt this many times (seeds 1..)
};

struct Out : SpecCounts {
    std::vector<std::vector<int32_t>> tokens;
    int64_t spec = -1;
};

std::vector<uint32_t> mask_for(int g, int32_t V) {
    std::vector<uint32_t> mk((size_t)(V + 31) / 32, 0);
    for (int32_t i = 0; i < V; i++)
        if ((3 * i + g) % 4 != 0) mk[(size_t)i / 32] |= 1u << (i % 32);
    return mk;
}

Out run(const std::string &dir, const std::vector<std::vector<int32_t>> &prompts, const Opts &o) {
    Out r;
    size_t N = prompts.size() * (size_t)o.copies;
    r.tokens.resize(N);
    int64_t p[ENG_PARAM_COUNT] = {0};
    p[ENG_PARAM_N_THREADS] = 2;
    p[ENG_PARAM_PREFILL_CHUNK] = o.chunk;
    p[ENG_PARAM_MAX_BATCH] = o.max_batch;
    p[ENG_PARAM_N_BLOCKS] = o.n_blocks;
    p[ENG_PARAM_SPECULATIVE] = o.spec;
    p[ENG_PARAM_SPEC_MAX_DRAFT] = o.max_draft;
    p[ENG_PARAM_KV_DTYPE] = o.kv_dtype;
    eng_ctx *ctx = nullptr;
    char msg[512] = "";
    int32_t st = test_ctx_create(dir.c_str(), p, ENG_PARAM_COUNT, &ctx);
    eng_last_error(msg, sizeof msg);
    CHECK_MSG(st == 0 && ctx, "%s: %s", dir.c_str(), msg);
    if (!ctx) return r;
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    r.spec = info[ENG_INFO_SPECULATIVE];
    int32_t V = (int32_t)info[ENG_INFO_N_VOCAB];
    auto go = [&](size_t from, size_t to) {
        std::map<int32_t, size_t> of;
        for (size_t i = from; i < to; i++) {
            const std::vector<int32_t> &ids = prompts[i % prompts.size()];
            int32_t id = -1;
            CHECK(eng_seq_add(ctx, ids.data(), (int32_t)ids.size(), nullptr, 0, o.max_tokens, o.temperature, 1.0f, 0,
                              (uint64_t)i + 1, 0, &id) == 0);
            of[id] = i;
            if (o.is_masked && i % 2 == 0) CHECK(eng_seq_mask(ctx, id, mask_for(0, V).data(), (V + 31) / 32) == 0);
        }
        size_t done = step_until_finished(ctx, to - from, [&](int32_t sid, int32_t tok) {
            size_t i = of[sid];
            r.tokens[i].push_back(tok);
            if (o.is_masked && i % 2 == 0)
                CHECK(eng_seq_mask(ctx, sid, mask_for((int)r.tokens[i].size(), V).data(), (V + 31) / 32) == 0);
        });
        CHECK(done == to - from);
    };
    if (o.is_alone)
        for (size_t i = 0; i < N; i++) go(i, i + 1);
    else go(0, N);
    static_cast<SpecCounts &>(r) = close_counting(ctx);
    return r;
}

std::vector<std::vector<int32_t>> prompts_of(const std::string &dir) {
    std::string text, err;
    maya::JsonValue fx;
    std::vector<std::vector<int32_t>> out;
    CHECK(maya::read_text_file(dir + "/fixtures.json", &text) == 0);
    CHECK(maya::json_parse(text.data(), text.size(), &fx, &err));
    for (const auto &pr : fx.get("prompts")->items) {
        out.emplace_back();
        for (const auto &v : pr.get("ids")->items) out.back().push_back((int32_t)v.integer);
    }
    return out;
}

void report(const char *name, const char *what, const Out &r) {
    fprintf(stderr, "  %s (%s): MTP drafts %lld/%lld accepted (%.1f%%), %.3f tokens per pass\n", name, what,
            (long long)r.accepted, (long long)r.drafted,
            r.drafted ? 100.0 * (double)r.accepted / (double)r.drafted : 0.0,
            r.passes ? (double)r.decode_tokens / (double)r.passes : 0.0);
}

/* Greedy tokens with MTP drafts equal those without, in every batching; the drafts are made and
 * verified (drafted > 0; each pass: its accepted drafts + one token of its own). */
void check_mtp_invariance(const char *name, const std::string &model = "") {
    std::string fixture = test_repo_root() + "/test/fixtures/engine/" + name;
    std::vector<std::vector<int32_t>> prompts = prompts_of(fixture);
    std::string dir = model.empty() ? fixture : model; // the model: the fixture, or its GGUF conversion
    Opts off;
    Out ref = run(dir, prompts, off);
    CHECK(ref.spec == ENG_SPEC_OFF);
    struct Case {
        const char *what;
        Opts o;
    };
    Opts on = off;
    on.spec = ENG_SPEC_MTP;
    std::vector<Case> cases;
    Opts batched = on;
    batched.chunk = 7; // prefill chunks (and their catch-ups) share steps with verification passes
    cases.push_back({"batched, chunk 7", batched});
    Opts alone = on;
    alone.is_alone = true;
    alone.max_draft = 3;
    cases.push_back({"alone", alone});
    for (const Case &c : cases) {
        Out r = run(dir, prompts, c.o);
        CHECK_MSG(r.spec == ENG_SPEC_MTP, "%s (%s): ENG_INFO_SPECULATIVE %lld", name, c.what, (long long)r.spec);
        for (size_t p = 0; p < prompts.size(); p++)
            CHECK_MSG(r.tokens[p] == ref.tokens[p], "%s (%s) prompt %zu: tokens differ from decoding without drafts",
                      name, c.what, p);
        CHECK(r.drafted > 0);
        CHECK(r.decode_tokens == ref.decode_tokens);
        CHECK(r.decode_tokens == r.passes + r.accepted);
        report(name, c.what, r);
    }
    // Preemption: 10 blocks of 16 for the three shorter prompts growing by 60 tokens each (17 blocks).
    std::vector<std::vector<int32_t>> short3(prompts.begin(), prompts.begin() + 3);
    Opts poff = off;
    poff.n_blocks = 10;
    poff.max_tokens = 60;
    Out pref = run(dir, short3, poff);
    Opts pon = poff;
    pon.spec = ENG_SPEC_MTP;
    Out pr = run(dir, short3, pon);
    CHECK(pr.preemptions > 0 && pr.drafted > 0);
    for (size_t p = 0; p < short3.size(); p++)
        CHECK_MSG(pr.tokens[p] == pref.tokens[p], "%s (preempted) prompt %zu: tokens differ", name, p);
    report(name, "preempted", pr);
    // f16 and q8_0 KV rows (MAYA_KV_DTYPE): the MTP layer's KV layer takes them too; against decoding
    // without drafts on the same cache.
    for (int64_t kv : {(int64_t)(1 + ENG_KV_DTYPE_F16), (int64_t)(1 + ENG_KV_DTYPE_Q8_0)}) {
        Opts koff = off;
        koff.kv_dtype = kv;
        koff.chunk = 7;
        Out kref = run(dir, prompts, koff);
        Opts kon = koff;
        kon.spec = ENG_SPEC_MTP;
        Out kr = run(dir, prompts, kon);
        for (size_t p = 0; p < prompts.size(); p++)
            CHECK_MSG(kr.tokens[p] == kref.tokens[p], "%s (KV dtype %lld) prompt %zu: tokens differ", name,
                      (long long)kv - 1, p);
        CHECK(kr.drafted > 0 && kr.decode_tokens == kr.passes + kr.accepted);
        report(name, kv == 1 + ENG_KV_DTYPE_F16 ? "f16 KV" : "q8_0 KV", kr);
    }
    // Constrained: every other prompt under a mask (those never draft; the rest do).
    Opts moff = off;
    moff.is_masked = true;
    Out mref = run(dir, prompts, moff);
    Opts mon = on;
    mon.is_masked = true;
    Out mr = run(dir, prompts, mon);
    for (size_t p = 0; p < prompts.size(); p++)
        CHECK_MSG(mr.tokens[p] == mref.tokens[p], "%s (masked) prompt %zu: tokens differ", name, p);
    CHECK(mr.drafted > 0);
}

} // namespace

void check_mtp_drafts(const char *name, const std::string &model = "") {
    std::string dir = test_repo_root() + "/test/fixtures/engine/" + name;
    std::string text, err;
    maya::JsonValue fx;
    CHECK(maya::read_text_file(dir + "/fixtures.json", &text) == 0);
    CHECK_MSG(maya::json_parse(text.data(), text.size(), &fx, &err), "%s", err.c_str());
    MtpBed bed;
    MtpBedConfig cfg; // prefill chunks of 9: multi-position catch-ups across chunk boundaries
    cfg.max_draft = 4;
    cfg.prefill_chunk = 9;
    cfg.n_ctx = 512;
    if (!bed.open(model.empty() ? dir : model, cfg)) return;
    maya::Scheduler &sched = bed.sched; // acceptance pinned to 1 below: every MTP pass drafts max_draft tokens
    const SpyBackend &spy = *bed.spy;
    struct Ref {
        std::vector<int32_t> greedy;
        const maya::JsonValue *drafts;
        int32_t n_prompt, id;
    };
    std::vector<Ref> refs;
    for (const auto &pr : fx.get("prompts")->items) {
        std::unique_ptr<maya::Sequence> s(new maya::Sequence());
        for (const auto &v : pr.get("ids")->items) s->tokens.push_back((int32_t)v.integer);
        Ref r;
        for (const auto &v : pr.get("greedy")->items) r.greedy.push_back((int32_t)v.integer);
        r.drafts = pr.get("mtp")->get("drafts");
        r.n_prompt = (int32_t)s->tokens.size();
        s->max_tokens = (int32_t)r.greedy.size();
        CHECK(sched.add(std::move(s), &r.id) == 0);
        refs.push_back(r);
    }
    std::vector<int32_t> events;
    int checked = 0, chained = 0, host = 0;
    for (int step = 0; step < 1000 && (sched.n_running() > 0 || sched.n_waiting() > 0); step++) {
        events.clear();
        // Every third step, sequences that decode next carry the reference's next 3 tokens (all accepted).
        std::vector<bool> with_host(refs.size(), false);
        std::vector<int32_t> block0(refs.size(), -1);
        for (size_t i = 0; i < refs.size(); i++) {
            maya::Sequence *s = const_cast<maya::Sequence *>(sched.find(refs[i].id));
            if (s && !s->block_table.empty()) block0[i] = s->block_table[0];
            if (s) { // acceptance 1 so far: the turn-down always drafts (not on step times: token_cost 0)
                s->spec_accepted = 1e6f;
                s->spec_rejected = 0.0f;
                s->mtp_first_accepted = 1e6f;
                s->mtp_first_rejected = 0.0f;
            }
            if (!s || step % 3 != 1 || s->n_computed + 1 != (int32_t)s->tokens.size()) continue;
            size_t g = s->tokens.size() - (size_t)refs[i].n_prompt;
            s->host_draft.assign(refs[i].greedy.begin() + (long)g,
                                 refs[i].greedy.begin() + (long)std::min(refs[i].greedy.size(), g + 3));
            with_host[i] = true;
        }
        CHECK(sched.step(&events) == 0);
        for (const SpyBackend::Pass &p : spy.passes) {
            for (size_t i = 0; i < refs.size(); i++) {
                if (block0[i] != p.block0 || with_host[i]) continue;
                size_t at = (size_t)(p.pos0 - refs[i].n_prompt); // index of the pending token in greedy
                CHECK(p.pos0 >= refs[i].n_prompt && at < refs[i].drafts->items.size());
                if (p.pos0 < refs[i].n_prompt || at >= refs[i].drafts->items.size()) continue;
                const maya::JsonValue &d = refs[i].drafts->items[at];
                if (d.items[1].number >= 1e-3) {
                    CHECK_MSG(p.drafts[0] == (int32_t)d.items[0].integer,
                              "%s prompt %zu pass at %d: draft %d, reference %lld", name, i, p.pos0, p.drafts[0],
                              (long long)d.items[0].integer);
                    checked++;
                }
                if (p.drafts.size() > 1 && p.drafts[0] == (int32_t)d.items[0].integer && d.items[3].number >= 1e-3) {
                    CHECK_MSG(p.drafts[1] == (int32_t)d.items[2].integer,
                              "%s prompt %zu pass at %d: chained draft %d, reference %lld", name, i, p.pos0,
                              p.drafts[1], (long long)d.items[2].integer);
                    chained++;
                }
            }
        }
        for (size_t i = 0; i < refs.size(); i++) host += with_host[i];
    }
    CHECK(checked >= 20 && chained >= 16 && host > 5);
    fprintf(stderr, "  %s: %d first and %d chained MTP drafts equal the reference's (%d host-drafted passes)\n", name,
            checked, chained, host);
}

TEST(mtp_drafts_match_the_reference) {
    for (const char *d : kMtpDirs) check_mtp_drafts(d);
}

TEST(mtp_logits_match_the_reference) {
    for (const char *d : kMtpDirs) check_mtp_oracle(d);
}

/* GGUF (llama.cpp's layout: the MTP layer as blk.2 with its nextn.* tensors, nextn_predict_layers 1;
 * scripts/gguf/convert_hf.py of glm45-moe-mtp-bf16): the same reference, and MTP drafts through the ABI. */
TEST(mtp_gguf_glm4moe) {
    std::string file = test_repo_root() + "/test/fixtures/gguf/glm4moe-mtp-BF16.gguf";
    check_mtp_oracle("glm45-moe-mtp-bf16", file);
    int64_t p[ENG_PARAM_COUNT] = {0};
    p[ENG_PARAM_SPECULATIVE] = ENG_SPEC_MTP;
    eng_ctx *ctx = nullptr;
    CHECK(test_ctx_create(file.c_str(), p, ENG_PARAM_COUNT, &ctx) == 0 && ctx);
    if (!ctx) return;
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    CHECK(info[ENG_INFO_SPECULATIVE] == ENG_SPEC_MTP && info[ENG_INFO_N_LAYER] == 2);
    eng_ctx_free(ctx);
}

/* The GGUF conversion's MTP drafts keep the greedy tokens too (issue 35: speculation invariance on
 * GGUF models): every case of check_mtp_invariance, with the fixture's prompts. This random MTP
 * layer's drafts are almost never right, so that checks rejection; acceptance is checked through
 * check_mtp_drafts' host drafts (accepted whole) and its MTP drafts against the reference's. */
TEST(mtp_gguf_greedy_invariance) {
    std::string file = test_repo_root() + "/test/fixtures/gguf/glm4moe-mtp-BF16.gguf";
    check_mtp_invariance("glm45-moe-mtp-bf16", file);
    check_mtp_drafts("glm45-moe-mtp-bf16", file);
}

TEST(mtp_greedy_invariance) {
    for (const char *d : kMtpDirs) check_mtp_invariance(d);
}

/* Sampling (temperature 0.9): each position draws the sequence's RNG as decoding without drafts
 * does, so 64 seeds give the same tokens with MTP drafts as without: the output distribution is
 * the model's, seed for seed. */
TEST(mtp_sampling_keeps_the_tokens) {
    std::string dir = test_repo_root() + "/test/fixtures/engine/glm45-moe-mtp-bf16";
    std::vector<std::vector<int32_t>> prompts = prompts_of(dir);
    prompts.resize(2);
    Opts off;
    off.temperature = 0.9f;
    off.copies = 32;
    off.max_tokens = 12;
    off.max_batch = 16;
    Out ref = run(dir, prompts, off);
    Opts on = off;
    on.spec = ENG_SPEC_MTP;
    Out r = run(dir, prompts, on);
    int same = 0;
    for (size_t i = 0; i < ref.tokens.size(); i++) same += r.tokens[i] == ref.tokens[i];
    CHECK_MSG(same == (int)ref.tokens.size(), "%d of %zu seeds gave the same tokens", same, ref.tokens.size());
    CHECK(r.drafted > 0 && r.decode_tokens == r.passes + r.accepted);
    report("glm45-moe-mtp-bf16", "sampling", r);
}

/* Where the checkpoint has no MTP layer: ENG_SPEC_MTP is refused by name, auto is prompt lookup
 * (the MoE fixtures' stray MTP norms are not a layer). With the layer: auto is MTP. */
TEST(mtp_mode_selection) {
    for (const char *d : {"glm45-moe-bf16", "deepseek3-bf16", "llama-f32"}) {
        std::string dir = test_repo_root() + "/test/fixtures/engine/" + d;
        int64_t p[ENG_PARAM_COUNT] = {0};
        p[ENG_PARAM_SPECULATIVE] = ENG_SPEC_MTP;
        eng_ctx *ctx = nullptr;
        CHECK(test_ctx_create(dir.c_str(), p, ENG_PARAM_COUNT, &ctx) == ENG_STATUS_UNSUPPORTED && !ctx);
        char msg[512] = "";
        eng_last_error(msg, sizeof msg);
        CHECK_MSG(strstr(msg, "MTP layer") != nullptr, "%s: %s", d, msg);
        p[ENG_PARAM_SPECULATIVE] = ENG_SPEC_AUTO;
        CHECK(test_ctx_create(dir.c_str(), p, ENG_PARAM_COUNT, &ctx) == 0 && ctx);
        if (!ctx) continue;
        int64_t info[ENG_INFO_COUNT];
        eng_ctx_info(ctx, info, ENG_INFO_COUNT);
        CHECK(info[ENG_INFO_SPECULATIVE] == ENG_SPEC_NGRAM);
        eng_ctx_free(ctx);
    }
    for (const char *d : kMtpDirs) {
        std::string dir = test_repo_root() + "/test/fixtures/engine/" + d;
        int64_t p[ENG_PARAM_COUNT] = {0};
        eng_ctx *ctx = nullptr;
        CHECK(test_ctx_create(dir.c_str(), p, ENG_PARAM_COUNT, &ctx) == 0 && ctx);
        if (!ctx) continue;
        int64_t info[ENG_INFO_COUNT];
        eng_ctx_info(ctx, info, ENG_INFO_COUNT);
        CHECK(info[ENG_INFO_SPECULATIVE] == ENG_SPEC_MTP && info[ENG_INFO_SPEC_MAX_DRAFT] == 8);
        eng_ctx_free(ctx);
        // The MTP layer is one more KV layer: (n_layer + 1) / n_layer of the bytes a token takes without it.
        p[ENG_PARAM_SPECULATIVE] = ENG_SPEC_OFF;
        int64_t off_info[ENG_INFO_COUNT];
        CHECK(test_ctx_create(dir.c_str(), p, ENG_PARAM_COUNT, &ctx) == 0 && ctx);
        if (!ctx) continue;
        eng_ctx_info(ctx, off_info, ENG_INFO_COUNT);
        eng_ctx_free(ctx);
        int64_t L = info[ENG_INFO_N_LAYER];
        CHECK(info[ENG_INFO_KV_BYTES_PER_TOKEN] * L == off_info[ENG_INFO_KV_BYTES_PER_TOKEN] * (L + 1));
    }
}
