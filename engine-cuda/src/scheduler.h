/* scheduler.h: FIFO admission, continuous batching with chunked prefill, preemption, cancellation.
 *
 * step() = schedule -> run (one Backend::forward) -> postprocess (sample, emit events, finish).
 * Each step decodes every running sequence that is decoding (one token each) and spends at most
 * prefill_chunk tokens on prompts (continuing a chunked prefill first, then admitting waiting
 * sequences in FIFO order while max_batch and KV blocks allow). When a decoding sequence needs a
 * block and none is free, the most recently admitted running sequence is preempted (its blocks
 * freed, it goes back to the head of the queue and is recomputed later, mostly from the prefix
 * cache). Cancellation takes effect at the start of the next step.
 * Speculative decoding (max_draft > 0): a decoding sequence may carry drafted tokens (prompt lookup,
 * or the host's eng_seq_draft) into the step; they are scored in the same pass as its pending token,
 * the longest accepted prefix plus one token of its own are kept, and the rejected positions are
 * dropped (n_computed and the prefix-cache hashes cover accepted tokens only; blocks past them are
 * trimmed). Drafts never preempt anyone: a sequence drafts only when free blocks remain for them.
 * Multimodal sequences (images): before the first chunk that reaches an image's tokens, the image
 * is encoded (all of it, on the calling thread's vision pool) and its rows replace those tokens'
 * embeddings; every token carries its M-RoPE positions (Batch::mpos).
 * A sequence flagged ENG_SEQ_PROMPT_LOGITS is allocated without the prefix cache and keeps the
 * logits of every prompt position: its chunks take one logits row per token, so each is at most
 * the rows the step has left (max_logits less one per other scheduled sequence). It never drafts
 * (its rows go to the prompt's logits); other sequences' drafts are cut to the rows left after one
 * for each later running sequence, so a step never asks for more than max_logits rows.
 */
#ifndef MAYA_SCHEDULER_H
#define MAYA_SCHEDULER_H

#include <stdint.h>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "backend.h"       // defines: Backend, Batch
#include "block_manager.h" // defines: BlockManager
#include "sampler.h"       // defines: Sampler
#include "sequence.h"      // defines: Sequence
#include "vision.h"        // defines: VisionEncoder

namespace maya {

struct SchedulerConfig {
    int32_t max_batch = 16;      // most running sequences
    int32_t prefill_chunk = 256; // most prompt tokens computed per step
    int32_t n_ctx = 0;           // context limit (prompt + output)
    int32_t n_vocab = 0;
    int32_t max_draft = 0;   // speculative decoding: most drafted tokens per sequence and step (0: off)
    int32_t ngram_max = 4;   // prompt lookup: the longest suffix matched ...
    int32_t ngram_min = 2;   // ... and the shortest
    int32_t max_logits = 0;  // rows of logits a step computes (>= max_batch; 0: max_batch x (1 + max_draft))
    double token_cost = -1;  // the turn-down's cost of one more token in a pass (propose); < 0: measured
    double mtp_cost = -1;    // with use_mtp: an MTP pass's cost, added per MTP-drafted token; < 0: measured
                             // (0 where token_cost is fixed)
    bool use_mtp = false;    // drafts from the model's MTP layer (Backend::mtp_forward) instead of prompt lookup
    bool mtp_lookup = false; // with use_mtp: prompt lookup drafts instead where it is the better bet (propose)
    int32_t n_embd = 0;      // with use_mtp: the hidden width
};

struct SchedulerStats {
    int64_t steps = 0, prefill_tokens = 0, cached_tokens = 0, decode_tokens = 0, preemptions = 0;
    int64_t images_encoded = 0, encode_us = 0, encode_cpu_us = 0;
    int64_t draft_tokens = 0, draft_accepted = 0, decode_passes = 0;
    // Of the drafts, the MTP layer's: drafts (passes that verified one) and those whose first token
    // was accepted, and their drafted and accepted tokens.
    int64_t mtp_drafts = 0, mtp_drafts_accepted = 0, mtp_draft_tokens = 0, mtp_draft_accepted = 0;
};

/* The turn-down's cost model (scheduler.cpp): a forward pass over T tokens takes about a + b T, fitted
 * by decayed least squares over the latest steps, the mean time per generated token, and the mean
 * time of a decode pass of the MTP layer. */
struct StepCost {
    double n = 0, st = 0, stt = 0, sy = 0, sty = 0; // decayed sums over steps of 1, T, T^2, time, T time
    double time = 0, tokens = 0;                    // decayed sums of step time and tokens generated
    double mtp_time = 0, mtp_n = 0;                 // decayed sums of MTP decode passes' time and count
    void add(double T, double seconds, double generated);
    /* One decode pass of the MTP layer (a chain round, or a catch-up with no prompt in it). */
    void add_mtp(double seconds);
    /* b x (time per generated token)^-1: what one more token in a pass costs, in generated tokens;
     * 0 until the steps vary in size (drafting is then free to start). */
    double relative_token_cost() const;
    /* One MTP pass in generated tokens' worth of main-pass time; 0 until both are measured. */
    double relative_mtp_cost() const;
};

class Scheduler {
  public:
    /* bm and backend must outlive the scheduler. Returns OK or INVALID_ARG. */
    int32_t init(const SchedulerConfig &cfg, BlockManager *bm, Backend *backend);
    /* A vision model's encoder (outlives the scheduler); n_embd: rows of its embeddings. */
    void set_vision(VisionEncoder *enc, int32_t n_embd) {
        vision_ = enc;
        n_embd_ = n_embd;
    }
    /* Queues seq (validated by the caller except for the context limit). Returns OK or
     * CONTEXT_OVERFLOW; writes the new id. */
    int32_t add(std::unique_ptr<Sequence> seq, int32_t *out_id);
    /* Returns OK or UNKNOWN_SEQ. */
    int32_t cancel(int32_t id);
    /* One step; appends events ({seq, kind, token, value} ints) to *events. Returns OK or a
     * backend failure (the affected sequences are finished with ENG_FINISH_ERROR). */
    int32_t step(std::vector<int32_t> *events);
    /* A live sequence or one finished during the latest step; nullptr otherwise. */
    const Sequence *find(int32_t id) const;

    int32_t n_waiting() const { return (int32_t)waiting_.size(); }
    int32_t n_running() const { return (int32_t)running_.size(); }
    const SchedulerStats &stats() const { return stats_; }
    /* The turn-down's cost of one more token in a pass, in generated tokens' worth of time. */
    double token_cost() const { return token_cost_; }

  private:
    struct Entry {
        Sequence *seq;
        int32_t n_tokens;
        bool is_prefill;
        int32_t n_kept = 0; // postprocess: positions from pos0 on whose K/V the sequence keeps
    };
    void schedule();
    void schedule_one(Sequence *s, int32_t n, bool is_prefill);
    void propose(Sequence *s);
    int32_t turn_down(const Sequence *s) const;
    int32_t lookup(const Sequence *s, int32_t k, int32_t m_min, int32_t *from) const;
    /* MTP with prompt lookup: the shortest match the lookup drafts from for s. 2-token matches are
     * mostly chance in free text, where the MTP layer drafts better; where the turn-down has the layer
     * draft nothing for s, the lookup takes them as prompt lookup alone does (ngram_min). */
    int32_t mtp_lookup_min(const Sequence *s) const {
        return turn_down(s) > 0 ? std::max(cfg_.ngram_min, 3) : cfg_.ngram_min;
    }
    int32_t lookup_pick(const Sequence *s, int32_t room, int32_t n_lookup) const;
    /* MTP: the turn-down has the layer draft nothing for s, and its 1-token probe is due this pass
     * (every 16th; it keeps the layer's record current, and comes before a lookup draft). */
    bool mtp_probe_due(const Sequence *s) const { return turn_down(s) == 0 && s->spec_idle + 1 >= 16; }
    void propose_mtp(Sequence *s, int32_t room);
    int32_t mtp_catch_up();
    void mtp_chain();
    void verify(size_t e, std::vector<int32_t> *events);
    /* Prompt tokens s may prefill this step within budget (PROMPT_LOGITS: within free logits rows). */
    int32_t prefill_take(const Sequence *s, int32_t budget, size_t i_running) const;
    void preempt(Sequence *s);
    void finish(Sequence *s, int32_t reason, std::vector<int32_t> *events);
    void postprocess(std::vector<int32_t> *events);
    void reap_cancelled(std::vector<int32_t> *events);
    void prepare_mm();

    SchedulerConfig cfg_;
    BlockManager *bm_ = nullptr;
    Backend *backend_ = nullptr;
    Sampler sampler_;
    Batch batch_;
    std::vector<Entry> entries_;
    std::vector<float> logits_;     // (max_logits, V)
    std::vector<int32_t> verified_; // verify(): the tokens a decode pass with drafts produced
    Batch mtp_batch_;               // MTP: the catch-up / chain pass
    std::vector<float> mtp_h_in_, mtp_h_out_, mtp_logits_;
    std::vector<size_t> mtp_chains_;  // schedule(): the entries whose drafts the MTP layer chains
    std::vector<float> mtp_chain_h_;  // (max_batch, n_embd): each chain's latest MTP hidden state
    std::vector<int32_t> mtp_blocks_; // the entries' block tables before postprocess (finish frees them)
    std::vector<size_t> mtp_block0_;  // (entries) first of each in mtp_blocks_
    std::vector<int32_t> mtp_entry_;  // mtp_catch_up(): each entry's sequence in mtp_batch_ (-1: none)
    std::deque<Sequence *> waiting_;
    std::vector<Sequence *> running_; // admission order
    std::unordered_map<int32_t, std::unique_ptr<Sequence>> live_;
    std::vector<std::unique_ptr<Sequence>> retired_; // finished in the latest step
    int32_t next_id_ = 1;
    SchedulerStats stats_;
    StepCost cost_;
    double token_cost_ = 0; // cost_.relative_token_cost() as of the latest step
    // MTP drafting: what one pass of the MTP layer costs in generated tokens, as of the latest step
    // (cost_.relative_mtp_cost(); each MTP-drafted token takes one pass, and turn_down adds it).
    double mtp_cost_ = 0;
    VisionEncoder *vision_ = nullptr;
    int32_t n_embd_ = 0;
};

} // namespace maya

#endif
