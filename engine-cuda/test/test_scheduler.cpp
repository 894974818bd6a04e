/* test_scheduler.cpp: the scheduler through the public ABI on a small random model: chunked
 * prefill bound, FIFO admission, continuous batching, prefix reuse, preemption, cancellation,
 * stop ids, seeded sampling, argument checks and the event buffer protocol. */
#include <stdio.h>
#include <string.h>

#include <map>
#include <vector>

#include "../include/engine.h"
#include "model_writer.h"
#include "test.h"

namespace {

std::string model_dir() {
    static std::string dir;
    if (dir.empty()) {
        dir = test_tmpdir("sched");
        if (!write_random_model(dir, scheduler_model_spec("BF16", 11))) dir.clear();
    }
    return dir;
}

eng_ctx *make_ctx(int64_t chunk = 0, int64_t max_batch = 0, int64_t n_blocks = 0, int64_t threads = 2) {
    int64_t p[ENG_PARAM_COUNT] = {0};
    p[ENG_PARAM_N_THREADS] = threads;
    p[ENG_PARAM_PREFILL_CHUNK] = chunk;
    p[ENG_PARAM_MAX_BATCH] = max_batch;
    p[ENG_PARAM_N_BLOCKS] = n_blocks;
    eng_ctx *ctx = nullptr;
    int32_t st = test_ctx_create(model_dir().c_str(), p, ENG_PARAM_COUNT, &ctx);
    CHECK(st == 0 && ctx);
    return ctx;
}

std::vector<int32_t> prompt(int n, int salt) {
    std::vector<int32_t> p;
    for (int i = 0; i < n; i++) p.push_back((i * 7 + salt * 13 + 1) % 97);
    return p;
}

int32_t add(eng_ctx *ctx, const std::vector<int32_t> &p, int max_tokens, float temp = 0, uint64_t seed = 0,
            const std::vector<int32_t> &stops = {}) {
    int32_t id = -1;
    int32_t st = eng_seq_add(ctx, p.data(), (int32_t)p.size(), stops.data(), (int32_t)stops.size(), max_tokens, temp,
                             1.0f, 0, seed, 0, &id);
    CHECK(st == 0);
    return id;
}

struct Trace {
    std::map<int32_t, std::vector<int32_t>> tokens;
    std::map<int32_t, int32_t> finish, cached, prefilled_step, first_token_step;
    std::vector<int32_t> order; // seq id of every TOKEN event, in order
    int steps = 0;
};

int64_t stat(eng_ctx *ctx, int idx) {
    int64_t s[ENG_STAT_COUNT];
    eng_ctx_stats(ctx, s, ENG_STAT_COUNT);
    return s[idx];
}

/* Steps until n_seqs sequences finished; per_step is called after each step. */
template <typename F> Trace drain(eng_ctx *ctx, int n_seqs, F per_step, int cap_events = 64) {
    Trace tr;
    std::vector<int32_t> ev((size_t)cap_events * 4);
    int done = 0;
    for (int guard = 0; guard < 100000 && done < n_seqs; guard++) {
        int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
        CHECK(n >= 0);
        if (n < 0) break;
        tr.steps++;
        for (int i = 0; i < n; i++) {
            int32_t id = ev[(size_t)i * 4], kind = ev[(size_t)i * 4 + 1], tok = ev[(size_t)i * 4 + 2],
                    val = ev[(size_t)i * 4 + 3];
            if (kind == ENG_EVENT_PREFILLED) {
                tr.cached[id] = val;
                tr.prefilled_step[id] = tr.steps;
            }
            if (kind == ENG_EVENT_TOKEN) {
                if (tr.tokens[id].empty()) tr.first_token_step[id] = tr.steps;
                tr.tokens[id].push_back(tok);
                tr.order.push_back(id);
                CHECK(val == (int32_t)tr.tokens[id].size()); // value = tokens generated so far
            }
            if (kind == ENG_EVENT_FINISH) {
                tr.finish[id] = val;
                done++;
            }
        }
        per_step(tr);
    }
    CHECK(done == n_seqs);
    return tr;
}
Trace drain(eng_ctx *ctx, int n_seqs, int cap_events = 64) {
    return drain(
        ctx, n_seqs, [](Trace &) {}, cap_events);
}

} // namespace

TEST(scheduler_chunked_prefill_is_bounded) {
    eng_ctx *ctx = make_ctx(16);
    int32_t id = add(ctx, prompt(100, 1), 3);
    int64_t last = 0;
    Trace tr = drain(ctx, 1, [&](Trace &) {
        int64_t now = stat(ctx, ENG_STAT_PREFILL_TOKENS);
        CHECK(now - last <= 16); // one step never prefills more than the chunk
        last = now;
    });
    CHECK(tr.prefilled_step[id] == 7); // ceil(100 / 16) steps
    CHECK(tr.first_token_step[id] == 7 && tr.tokens[id].size() == 3 && tr.finish[id] == ENG_FINISH_LENGTH);
    CHECK(stat(ctx, ENG_STAT_PREFILL_TOKENS) == 100 && stat(ctx, ENG_STAT_DECODE_TOKENS) == 2);
    eng_ctx_free(ctx);
}

TEST(scheduler_fifo_and_continuous_batching) {
    // max_batch 1: strictly one after another, in submission order.
    eng_ctx *ctx = make_ctx(0, 1);
    int32_t a = add(ctx, prompt(10, 1), 4), b = add(ctx, prompt(10, 2), 4), c = add(ctx, prompt(10, 3), 4);
    Trace tr = drain(ctx, 3);
    std::vector<int32_t> want = {a, a, a, a, b, b, b, b, c, c, c, c};
    CHECK(tr.order == want);
    eng_ctx_free(ctx);
    // max_batch 4: after the prompts, every step decodes all four sequences together.
    ctx = make_ctx(0, 4);
    std::vector<int32_t> ids;
    for (int i = 0; i < 4; i++) ids.push_back(add(ctx, prompt(12, i), 6));
    tr = drain(ctx, 4);
    CHECK(tr.steps == 6); // 1 step prefills all four and samples, then 5 batched decode steps
    CHECK(stat(ctx, ENG_STAT_STEPS) == 6);
    for (int32_t id : ids) CHECK(tr.first_token_step[id] == 1 && tr.tokens[id].size() == 6);
    // Batched greedy outputs equal the sequential ones.
    eng_ctx *solo = make_ctx(0, 1);
    for (int i = 0; i < 4; i++) {
        int32_t s = add(solo, prompt(12, i), 6);
        Trace one = drain(solo, 1);
        CHECK(one.tokens[s] == tr.tokens[ids[(size_t)i]]);
    }
    eng_ctx_free(solo);
    eng_ctx_free(ctx);
}

TEST(scheduler_prefix_reuse_reports_cached_tokens) {
    eng_ctx *ctx = make_ctx();
    std::vector<int32_t> p = prompt(40, 5);
    int32_t a = add(ctx, p, 5);
    Trace t1 = drain(ctx, 1);
    CHECK(t1.cached[a] == 0);
    int64_t prefill_before = stat(ctx, ENG_STAT_PREFILL_TOKENS);
    CHECK(stat(ctx, ENG_STAT_BLOCKS_CACHED) >= 2);
    int32_t b = add(ctx, p, 5);
    Trace t2 = drain(ctx, 1);
    CHECK(t2.cached[b] == 32);                                       // floor((40 - 1) / 16) * 16
    CHECK(stat(ctx, ENG_STAT_PREFILL_TOKENS) - prefill_before == 8); // only the rest is prefilled
    CHECK(stat(ctx, ENG_STAT_CACHED_TOKENS) == 32);
    CHECK(t1.tokens[a] == t2.tokens[b]); // cached KV gives the same continuation
    // A prompt sharing only the first block.
    std::vector<int32_t> q = p;
    q[20] = (q[20] + 1) % 97;
    int32_t c = add(ctx, q, 2);
    Trace t3 = drain(ctx, 1);
    CHECK(t3.cached[c] == 16);
    eng_ctx_free(ctx);
}

/* ENG_SEQ_REPORT_PROGRESS: one PREFILL_PROGRESS event per prompt chunk, before PREFILLED, with the
 * cached count and the cumulative prefilled position (cached tokens included); none for decode steps
 * or for sequences without the flag. */
TEST(scheduler_reports_prefill_progress_per_chunk) {
    eng_ctx *ctx = make_ctx(16);
    std::vector<int32_t> p = prompt(40, 9);
    std::vector<int32_t> ev(64 * 4);
    auto run = [&](uint32_t flags, std::vector<std::pair<int32_t, int32_t>> *progress, int32_t *prefilled_at) {
        int32_t id = -1;
        CHECK(eng_seq_add(ctx, p.data(), (int32_t)p.size(), nullptr, 0, 3, 0, 1, 0, 0, flags, &id) == 0);
        for (bool done = false; !done;) {
            int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
            CHECK(n >= 0);
            for (int i = 0; i < n; i++) {
                int32_t kind = ev[(size_t)i * 4 + 1];
                CHECK(ev[(size_t)i * 4] == id);
                if (kind == ENG_EVENT_PREFILL_PROGRESS)
                    progress->push_back({ev[(size_t)i * 4 + 2], ev[(size_t)i * 4 + 3]});
                if (kind == ENG_EVENT_PREFILLED) *prefilled_at = (int32_t)progress->size();
                if (kind == ENG_EVENT_FINISH) done = true;
            }
        }
    };
    std::vector<std::pair<int32_t, int32_t>> none, first, second;
    int32_t at = -1;
    run(0, &none, &at);
    CHECK(none.empty());
    run(ENG_SEQ_REPORT_PROGRESS, &first, &at);
    // Cached from the first run: 32 tokens (two blocks); the remaining 8 are one chunk.
    CHECK(first.size() == 1 && first[0].first == 32 && first[0].second == 40 && at == 1);
    std::vector<int32_t> q = prompt(40, 10); // nothing cached: chunks end at 16, 32, 40
    p = q;
    run(ENG_SEQ_REPORT_PROGRESS, &second, &at);
    CHECK(second.size() == 3 && at == 3);
    CHECK(second[0] == std::make_pair(0, 16) && second[1] == std::make_pair(0, 32) &&
          second[2] == std::make_pair(0, 40));
    int32_t id = -1;
    CHECK(eng_seq_add(ctx, p.data(), 4, nullptr, 0, 1, 0, 1, 0, 0, 8, &id) == ENG_STATUS_INVALID_ARG); // unknown flag
    eng_ctx_free(ctx);
}

TEST(scheduler_cancel_frees_blocks) {
    eng_ctx *ctx = make_ctx();
    int64_t total = stat(ctx, ENG_STAT_BLOCKS_TOTAL);
    int32_t a = add(ctx, prompt(50, 1), 200), w = add(ctx, prompt(5, 2), 10);
    std::vector<int32_t> ev(64 * 4);
    for (int i = 0; i < 3; i++) CHECK(eng_step(ctx, ev.data(), (int32_t)ev.size()) > 0);
    CHECK(stat(ctx, ENG_STAT_BLOCKS_FREE) < total && stat(ctx, ENG_STAT_SEQS_RUNNING) == 2);
    CHECK(eng_seq_cancel(ctx, a) == 0 && eng_seq_cancel(ctx, w) == 0);
    CHECK(stat(ctx, ENG_STAT_BLOCKS_FREE) < total); // not before the next step
    int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
    CHECK(n == 2);
    int cancelled = 0;
    for (int i = 0; i < n; i++)
        cancelled += ev[(size_t)i * 4 + 1] == ENG_EVENT_FINISH && ev[(size_t)i * 4 + 3] == ENG_FINISH_CANCELLED;
    CHECK(cancelled == 2);
    CHECK(stat(ctx, ENG_STAT_BLOCKS_FREE) == total && stat(ctx, ENG_STAT_SEQS_RUNNING) == 0);
    CHECK(eng_step(ctx, ev.data(), (int32_t)ev.size()) == 0); // idle
    CHECK(eng_seq_cancel(ctx, a) == ENG_STATUS_UNKNOWN_SEQ);
    // A queued (never admitted) sequence can be cancelled too.
    eng_ctx *one = make_ctx(0, 1);
    int32_t x = add(one, prompt(5, 1), 50), y = add(one, prompt(5, 2), 50);
    CHECK(eng_step(one, ev.data(), (int32_t)ev.size()) > 0);
    CHECK(stat(one, ENG_STAT_SEQS_WAITING) == 1);
    CHECK(eng_seq_cancel(one, y) == 0);
    n = eng_step(one, ev.data(), (int32_t)ev.size());
    bool saw = false;
    for (int i = 0; i < n; i++) saw |= ev[(size_t)i * 4] == y && ev[(size_t)i * 4 + 3] == ENG_FINISH_CANCELLED;
    CHECK(saw && stat(one, ENG_STAT_SEQS_WAITING) == 0);
    (void)x;
    eng_ctx_free(one);
    eng_ctx_free(ctx);
}

TEST(scheduler_preempts_under_kv_pressure) {
    // 6 blocks of 16 = 96 token slots for 4 sequences that grow to 40 tokens each: decode must
    // preempt (and recompute), and every output must equal the unconstrained one.
    eng_ctx *tight = make_ctx(0, 4, 6);
    eng_ctx *roomy = make_ctx(0, 4);
    std::vector<int32_t> a, b;
    for (int i = 0; i < 4; i++) {
        a.push_back(add(tight, prompt(20, i), 20));
        b.push_back(add(roomy, prompt(20, i), 20));
    }
    Trace tt = drain(tight, 4), tr = drain(roomy, 4);
    CHECK(stat(tight, ENG_STAT_PREEMPTIONS) > 0);
    CHECK(stat(roomy, ENG_STAT_PREEMPTIONS) == 0);
    for (int i = 0; i < 4; i++) {
        CHECK(tt.tokens[a[(size_t)i]] == tr.tokens[b[(size_t)i]]);
        CHECK(tt.finish[a[(size_t)i]] == ENG_FINISH_LENGTH);
    }
    CHECK(stat(tight, ENG_STAT_BLOCKS_FREE) == 6);
    eng_ctx_free(tight);
    eng_ctx_free(roomy);
}

TEST(scheduler_stop_ids_and_lengths) {
    eng_ctx *ctx = make_ctx();
    int32_t a = add(ctx, prompt(8, 3), 12);
    Trace t1 = drain(ctx, 1);
    const std::vector<int32_t> &g = t1.tokens[a];
    CHECK(g.size() == 12 && t1.finish[a] == ENG_FINISH_LENGTH);
    size_t k = 0;
    while (k < g.size() && g[k] != g[3]) k++; // first occurrence of the 4th token
    int32_t b = add(ctx, prompt(8, 3), 12, 0, 0, {g[3], 96});
    Trace t2 = drain(ctx, 1);
    CHECK(t2.tokens[b].size() == k + 1 && t2.tokens[b].back() == g[3]); // the stop token is reported
    CHECK(t2.finish[b] == ENG_FINISH_STOP);
    eng_ctx_free(ctx);
}

TEST(scheduler_seeded_sampling_is_reproducible) {
    eng_ctx *ctx = make_ctx();
    int32_t a = add(ctx, prompt(9, 4), 30, 1.5f, 42), b = add(ctx, prompt(9, 4), 30, 1.5f, 42),
            c = add(ctx, prompt(9, 4), 30, 1.5f, 43);
    Trace tr = drain(ctx, 3);
    CHECK(tr.tokens[a] == tr.tokens[b]);
    CHECK(tr.tokens[a] != tr.tokens[c]);
    eng_ctx_free(ctx);
}

TEST(scheduler_top_k_is_per_sequence) {
    eng_ctx *ctx = make_ctx();
    std::vector<int32_t> p = prompt(9, 4);
    auto add_k = [&](int32_t top_k) {
        int32_t id = -1;
        CHECK(eng_seq_add(ctx, p.data(), (int32_t)p.size(), nullptr, 0, 30, 1.5f, 1.0f, top_k, 42, 0, &id) == 0);
        return id;
    };
    // Side by side in one batch: greedy, top_k 1 at temperature 1.5, plain sampling, top_k above V.
    int32_t g = add(ctx, p, 30), k1 = add_k(1), free_run = add_k(0), k_big = add_k(1000);
    Trace tr = drain(ctx, 4);
    CHECK(tr.tokens[k1] == tr.tokens[g]);           // top_k 1 is greedy whatever the temperature
    CHECK(tr.tokens[free_run] != tr.tokens[g]);     // while the same seed without top_k is not
    CHECK(tr.tokens[k_big] == tr.tokens[free_run]); // top_k >= V is off: the same draws
    eng_ctx_free(ctx);
}

TEST(scheduler_argument_checks) {
    eng_ctx *ctx = make_ctx();
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    int32_t n_ctx = (int32_t)info[ENG_INFO_N_CTX], id = 0;
    std::vector<int32_t> p = prompt(10, 1);
    CHECK(eng_seq_add(ctx, p.data(), 10, nullptr, 0, n_ctx - 10, 0, 1, 0, 0, 0, &id) == 0);
    CHECK(eng_seq_add(ctx, p.data(), 10, nullptr, 0, n_ctx - 9, 0, 1, 0, 0, 0, &id) == ENG_STATUS_CONTEXT_OVERFLOW);
    char msg[256];
    CHECK(eng_last_error(msg, sizeof msg) > 0 && strstr(msg, "context limit"));
    CHECK(eng_seq_add(ctx, p.data(), 0, nullptr, 0, 5, 0, 1, 0, 0, 0, &id) == ENG_STATUS_INVALID_ARG);
    CHECK(eng_seq_add(ctx, p.data(), 10, nullptr, 0, 0, 0, 1, 0, 0, 0, &id) == ENG_STATUS_INVALID_ARG);
    CHECK(eng_seq_add(ctx, p.data(), 10, nullptr, 0, 5, 0, 0.0f, 0, 0, 0, &id) == ENG_STATUS_INVALID_ARG);
    CHECK(eng_seq_add(ctx, p.data(), 10, nullptr, 0, 5, 0, 1.5f, 0, 0, 0, &id) == ENG_STATUS_INVALID_ARG);
    CHECK(eng_seq_add(ctx, p.data(), 10, nullptr, 0, 5, NAN, 1, 0, 0, 0, &id) == ENG_STATUS_INVALID_ARG);
    CHECK(eng_seq_add(ctx, p.data(), 10, nullptr, 2, 5, 0, 1, 0, 0, 0, &id) == ENG_STATUS_INVALID_ARG);
    CHECK(eng_seq_add(ctx, p.data(), 10, nullptr, 0, 5, 0, 1, 0, 0, 8, &id) == ENG_STATUS_INVALID_ARG);
    CHECK(eng_seq_add(ctx, p.data(), 10, nullptr, 0, 5, 1, 1, -1, 0, 0, &id) == ENG_STATUS_INVALID_ARG);
    CHECK(eng_last_error(msg, sizeof msg) > 0 && strstr(msg, "top_k"));
    p[3] = 97; // outside the vocabulary
    CHECK(eng_seq_add(ctx, p.data(), 10, nullptr, 0, 5, 0, 1, 0, 0, 0, &id) == ENG_STATUS_INVALID_ARG);
    CHECK(eng_last_error(msg, sizeof msg) > 0 && strstr(msg, "index 3"));
    int32_t ev[4];
    CHECK(eng_step(ctx, ev, 3) == ENG_STATUS_INVALID_ARG);
    float lg[97];
    CHECK(eng_seq_logits(ctx, 12345, lg, 97) == ENG_STATUS_UNKNOWN_SEQ);
    eng_ctx_free(ctx);
}

TEST(scheduler_small_event_buffer_and_kept_logits) {
    eng_ctx *ctx = make_ctx();
    std::vector<int32_t> p = prompt(6, 2);
    int32_t a = -1, b = add(ctx, p, 3);
    CHECK(eng_seq_add(ctx, p.data(), 6, nullptr, 0, 3, 0, 1, 0, 0, ENG_SEQ_KEEP_LOGITS, &a) == 0);
    // One event per call: PREFILLED, TOKEN, ..., FINISH all still arrive, in order.
    Trace tr = drain(ctx, 2, 1);
    CHECK(tr.tokens[a] == tr.tokens[b] && tr.tokens[a].size() == 3);
    eng_ctx_free(ctx);
    ctx = make_ctx();
    a = -1;
    CHECK(eng_seq_add(ctx, p.data(), 6, nullptr, 0, 1, 0, 1, 0, 0, ENG_SEQ_KEEP_LOGITS, &a) == 0);
    b = add(ctx, p, 1);
    std::vector<int32_t> ev(64);
    int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
    CHECK(n == 6); // PREFILLED, TOKEN, FINISH for both (max_tokens 1)
    std::vector<float> lg(97);
    CHECK(eng_seq_logits(ctx, a, lg.data(), 97) == 97); // valid after FINISH until the next step
    int best = 0;
    for (int i = 1; i < 97; i++)
        if (lg[(size_t)i] > lg[(size_t)best]) best = i;
    int32_t tok = -1;
    for (int i = 0; i < n; i++)
        if (ev[(size_t)i * 4] == a && ev[(size_t)i * 4 + 1] == ENG_EVENT_TOKEN) tok = ev[(size_t)i * 4 + 2];
    CHECK(tok >= 0 && best == tok);                                         // greedy token = argmax of the kept logits
    CHECK(eng_seq_logits(ctx, b, lg.data(), 97) == ENG_STATUS_INVALID_ARG); // not kept
    CHECK(eng_seq_logits(ctx, a, lg.data(), 10) == ENG_STATUS_INVALID_ARG); // too small
    CHECK(eng_step(ctx, ev.data(), (int32_t)ev.size()) == 0);
    CHECK(eng_seq_logits(ctx, a, lg.data(), 97) == ENG_STATUS_UNKNOWN_SEQ);
    eng_ctx_free(ctx);
}

TEST(scheduler_random_workload_keeps_invariants) {
    // Random adds, cancels and steps under KV pressure (8 blocks, 4 running, chunk 8): every
    // sequence finishes exactly once, uncancelled ones with exactly max_tokens tokens equal to
    // their solo greedy run, and every block comes back.
    eng_ctx *ctx = make_ctx(8, 4, 8);
    eng_ctx *solo = make_ctx();
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    int32_t n_ctx = (int32_t)info[ENG_INFO_N_CTX];
    CHECK(n_ctx == 128); // 8 blocks of 16
    uint64_t s = 99;
    auto rnd = [&](int n) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return (int)(s % (uint64_t)n);
    };
    struct Want {
        std::vector<int32_t> prompt;
        int max_tokens;
        bool is_cancelled;
    };
    std::map<int32_t, Want> seqs;
    std::map<int32_t, std::vector<int32_t>> got;
    std::map<int32_t, int> finishes, reasons;
    std::vector<int32_t> ev(64 * 4);
    int added = 0;
    for (int iter = 0; iter < 3000 && (added < 120 || finishes.size() < seqs.size()); iter++) {
        int op = rnd(10);
        if (op < 3 && added < 120) {
            Want w{prompt(1 + rnd(60), rnd(1000)), 1 + rnd(30), false};
            if ((int)w.prompt.size() + w.max_tokens > n_ctx) continue;
            if (rnd(4) == 0) w.prompt = prompt(40, 7); // shared prefixes exercise the cache
            int32_t id = add(ctx, w.prompt, w.max_tokens);
            seqs[id] = w;
            added++;
        } else if (op == 3 && !seqs.empty()) {
            auto it = seqs.begin();
            std::advance(it, rnd((int)seqs.size()));
            if (!finishes.count(it->first) && eng_seq_cancel(ctx, it->first) == 0) it->second.is_cancelled = true;
        } else {
            int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
            CHECK(n >= 0);
            for (int i = 0; i < n; i++) {
                int32_t id = ev[(size_t)i * 4], kind = ev[(size_t)i * 4 + 1];
                if (kind == ENG_EVENT_TOKEN) got[id].push_back(ev[(size_t)i * 4 + 2]);
                if (kind == ENG_EVENT_FINISH) {
                    finishes[id]++;
                    reasons[id] = ev[(size_t)i * 4 + 3];
                }
            }
        }
    }
    CHECK(finishes.size() == seqs.size());
    CHECK(stat(ctx, ENG_STAT_PREEMPTIONS) > 0);
    int checked = 0;
    for (auto &kv : seqs) {
        CHECK(finishes[kv.first] == 1);
        const Want &w = kv.second;
        if (reasons[kv.first] == ENG_FINISH_CANCELLED) {
            CHECK(w.is_cancelled);
            continue;
        }
        CHECK(reasons[kv.first] == ENG_FINISH_LENGTH && (int)got[kv.first].size() == w.max_tokens);
        if (checked++ < 25) { // a sample against solo runs (each is a full generation)
            int32_t id = add(solo, w.prompt, w.max_tokens);
            Trace one = drain(solo, 1);
            CHECK(one.tokens[id] == got[kv.first]);
        }
    }
    int n_cancelled = 0;
    for (auto &kv : reasons) n_cancelled += kv.second == ENG_FINISH_CANCELLED;
    fprintf(stderr, "  %zu sequences, %d cancelled, %lld preemptions, %lld cached tokens\n", seqs.size(), n_cancelled,
            (long long)stat(ctx, ENG_STAT_PREEMPTIONS), (long long)stat(ctx, ENG_STAT_CACHED_TOKENS));
    CHECK(n_cancelled > 0);
    CHECK(stat(ctx, ENG_STAT_BLOCKS_FREE) == 8 && stat(ctx, ENG_STAT_SEQS_RUNNING) == 0 &&
          stat(ctx, ENG_STAT_SEQS_WAITING) == 0);
    eng_ctx_free(solo);
    eng_ctx_free(ctx);
}
