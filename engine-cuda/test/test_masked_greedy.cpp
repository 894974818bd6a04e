/* test_masked_greedy.cpp: a constrained (masked) greedy sequence on a backend with on-device
 * argmax (the CUDA backend's contract: rows flagged greedy may come back without logits). The
 * scheduler must not flag a masked row greedy, so its logits come back and the host sampler
 * applies the mask; a masked row never takes the device's argmax. */
#include <string.h>

#include <memory>
#include <vector>

#include "../include/engine.h"
#include "../src/backend.h"
#include "../src/block_manager.h"
#include "../src/scheduler.h"
#include "test.h"

using namespace maya;

namespace {

constexpr int V = 64;

/* Row r's logits: token (step % V) scores 10, token 9 scores 5. Logits are copied back only when
 * some row is not flagged greedy, as the CUDA backend does; argmax_rows() is the device's answer. */
struct ArgmaxBackend : Backend {
    int32_t am[16] = {0};
    int step = 0;
    int32_t forward(const Batch &b, float *logits) override {
        bool all_greedy = (int)b.row_is_greedy.size() >= b.n_logits;
        for (int r = 0; all_greedy && r < b.n_logits; r++) all_greedy = b.row_is_greedy[(size_t)r] != 0;
        for (int r = 0; r < b.n_logits; r++) {
            std::vector<float> row(V, 0.0f);
            row[(size_t)(step % V)] = 10.0f;
            row[9] = 5.0f;
            am[r] = step % V;
            if (!all_greedy) memcpy(logits + (size_t)r * V, row.data(), sizeof(float) * V);
        }
        step++;
        return 0;
    }
    const int32_t *argmax_rows() const override { return am; }
    int32_t kind() const override { return ENG_BACKEND_CUDA; }
    int32_t simd() const override { return ENG_SIMD_SCALAR; }
};

} // namespace

TEST(masked_greedy_row_samples_on_the_host_with_its_mask) {
    ArgmaxBackend backend;
    BlockManager bm;
    bm.init(64, 16);
    Scheduler sched;
    SchedulerConfig cfg;
    cfg.max_batch = 4;
    cfg.prefill_chunk = 64;
    cfg.n_ctx = 256;
    cfg.n_vocab = V;
    CHECK(sched.init(cfg, &bm, &backend) == ENG_STATUS_OK);
    auto seq = std::make_unique<Sequence>();
    seq->tokens = {1, 2, 3};
    seq->max_tokens = 4;
    seq->sampling.temperature = 0;
    seq->mask.assign((V + 31) / 32, 0);
    seq->mask[0] = (1u << 7) | (1u << 9); // only 7 and 9 allowed; 9 scores higher
    int32_t id = -1;
    CHECK(sched.add(std::move(seq), &id) == ENG_STATUS_OK);
    std::vector<int32_t> events;
    for (int i = 0; i < 6; i++) sched.step(&events);
    int tokens = 0;
    for (size_t i = 0; i + 3 < events.size(); i += 4) {
        if (events[i + 1] != ENG_EVENT_TOKEN) continue;
        tokens++;
        CHECK_MSG(events[i + 2] == 9, "masked greedy step %d sampled %d, want 9", tokens, events[i + 2]);
    }
    CHECK(tokens == 4);
}
