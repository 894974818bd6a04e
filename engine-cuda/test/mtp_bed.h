/* mtp_bed.h: a Scheduler with MTP drafting over a CPU backend whose passes are recorded, as the MTP
 * and drafter tests drive it (test_mtp.cpp, test_drafter.cpp): 2 threads, blocks of 16 (64 of them),
 * at most 4 sequences, the verify rows and drafts uncut by step times (token_cost 0). */
#ifndef MAYA_TEST_MTP_BED_H
#define MAYA_TEST_MTP_BED_H

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../include/engine.h"
#include "../src/backend.h"
#include "../src/block_manager.h"
#include "../src/model.h"
#include "../src/scheduler.h"

/* Forwards to the CPU backend and records each decode pass's drafted tokens (a sequence's tokens
 * after its first, when it asks for more than one row of logits). */
class SpyBackend final : public maya::Backend {
  public:
    explicit SpyBackend(std::unique_ptr<maya::Backend> b) : b_(std::move(b)) {}
    int32_t forward(const maya::Batch &batch, float *logits) override;
    const int32_t *argmax_rows() const override { return b_->argmax_rows(); }
    const float *hidden() const override { return b_->hidden(); }
    int32_t mtp_forward(const maya::Batch &b, const float *h, float *h_out, float *logits) override {
        mtp_rows += (int64_t)b.tokens.size();
        return b_->mtp_forward(b, h, h_out, logits);
    }
    int32_t kind() const override { return b_->kind(); }
    int32_t simd() const override { return b_->simd(); }
    struct Pass {
        int32_t block0; // the sequence's first block
        int32_t pos0;
        std::vector<int32_t> drafts;
    };
    std::vector<Pass> passes; // the latest forward()'s
    int64_t mtp_rows = 0;     // positions the MTP layer has run over, in all
    /* The latest forward()'s drafts of the sequence whose first block is block0 (none: empty). */
    std::vector<int32_t> drafts_of(int32_t block0) const;

  private:
    std::unique_ptr<maya::Backend> b_;
};

struct MtpBedConfig {
    int32_t max_draft = 4, prefill_chunk = 9, n_ctx = 512;
    bool mtp_lookup = false; // MTP with prompt lookup (scheduler.cpp propose_mtp)
    double mtp_cost = 0;     // SchedulerConfig::mtp_cost: an MTP pass's cost, fixed
};

/* The model, the recorded backend, the blocks and the scheduler, in place (the scheduler points at
 * the others). open() returns false (after a failed CHECK) when any part fails to start. */
struct MtpBed {
    maya::Model model;
    std::unique_ptr<SpyBackend> spy;
    maya::BlockManager blocks;
    maya::Scheduler sched;
    bool open(const std::string &path, const MtpBedConfig &cfg);
};

/* Steps ctx until n sequences have finished (or a step fails, or 100,000 steps), calling on_token for
 * each token event with its sequence id; returns how many finished. */
size_t step_until_finished(eng_ctx *ctx, size_t n, const std::function<void(int32_t sid, int32_t token)> &on_token);

/* A speculative run's counters, read from the context's stats as it is closed. */
struct SpecCounts {
    int64_t drafted = 0, accepted = 0, passes = 0, decode_tokens = 0, preemptions = 0;
};

/* Reads ctx's draft and decode counters, checks (CHECK) that every KV block is free again, and frees
 * ctx. */
SpecCounts close_counting(eng_ctx *ctx);

#endif
