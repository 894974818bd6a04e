/* mtp_bed.cpp: see mtp_bed.h. */
#include "mtp_bed.h"

#include "../src/kernels.h"
#include "test.h"

int32_t SpyBackend::forward(const maya::Batch &batch, float *logits) {
    passes.clear();
    for (const maya::BatchSeq &s : batch.seqs)
        if (s.logits_row >= 0 && s.n_logits > 1)
            passes.push_back(
                {s.block_table[0], s.pos0,
                 std::vector<int32_t>(batch.tokens.begin() + s.tok0 + 1, batch.tokens.begin() + s.tok0 + s.n_tokens)});
    return b_->forward(batch, logits);
}

std::vector<int32_t> SpyBackend::drafts_of(int32_t block0) const {
    for (const Pass &p : passes)
        if (p.block0 == block0) return p.drafts;
    return {};
}

bool MtpBed::open(const std::string &path, const MtpBedConfig &cfg) {
    CHECK(maya::model_load(path, &model) == 0);
    const maya::Kernels *k = nullptr;
    CHECK(maya::kernels_choose(test_simd(), &k) == 0);
    if (!k) return false;
    const int32_t max_batch = 4;
    maya::BackendConfig bc;
    bc.n_threads = 2;
    bc.block_size = 16;
    bc.n_blocks = 64;
    bc.max_tokens = cfg.prefill_chunk + max_batch * (1 + cfg.max_draft);
    bc.max_logits = max_batch * (1 + cfg.max_draft);
    bc.n_ctx = cfg.n_ctx;
    bc.verify_rows = 16;
    bc.use_mtp = true;
    std::unique_ptr<maya::Backend> cpu;
    CHECK(maya::cpu_backend_create(model, bc, *k, &cpu) == 0);
    if (!cpu) return false;
    spy.reset(new SpyBackend(std::move(cpu)));
    blocks.init(bc.n_blocks, bc.block_size);
    maya::SchedulerConfig sc;
    sc.max_batch = max_batch;
    sc.prefill_chunk = cfg.prefill_chunk;
    sc.n_ctx = bc.n_ctx;
    sc.n_vocab = model.cfg.n_vocab;
    sc.max_draft = cfg.max_draft;
    sc.use_mtp = true;
    sc.mtp_lookup = cfg.mtp_lookup;
    sc.n_embd = model.cfg.n_embd;
    sc.token_cost = 0; // drafts not cut by step times
    sc.mtp_cost = cfg.mtp_cost;
    int32_t st = sched.init(sc, &blocks, spy.get());
    CHECK(st == 0);
    return st == 0;
}

size_t step_until_finished(eng_ctx *ctx, size_t n, const std::function<void(int32_t sid, int32_t token)> &on_token) {
    std::vector<int32_t> ev(4 * 256);
    size_t done = 0;
    for (int guard = 0; guard < 100000 && done < n; guard++) {
        int32_t k = eng_step(ctx, ev.data(), (int32_t)ev.size() / 4);
        CHECK(k >= 0);
        if (k < 0) break;
        for (int j = 0; j < k; j++) {
            int32_t kind = ev[(size_t)j * 4 + 1];
            if (kind == ENG_EVENT_TOKEN) on_token(ev[(size_t)j * 4], ev[(size_t)j * 4 + 2]);
            if (kind == ENG_EVENT_FINISH) done++;
        }
    }
    return done;
}

SpecCounts close_counting(eng_ctx *ctx) {
    SpecCounts c;
    int64_t s[ENG_STAT_COUNT];
    eng_ctx_stats(ctx, s, ENG_STAT_COUNT);
    c.drafted = s[ENG_STAT_DRAFT_TOKENS];
    c.accepted = s[ENG_STAT_DRAFT_ACCEPTED];
    c.passes = s[ENG_STAT_DECODE_PASSES];
    c.decode_tokens = s[ENG_STAT_DECODE_TOKENS];
    c.preemptions = s[ENG_STAT_PREEMPTIONS];
    CHECK(s[ENG_STAT_BLOCKS_FREE] == s[ENG_STAT_BLOCKS_TOTAL]);
    eng_ctx_free(ctx);
    return c;
}
