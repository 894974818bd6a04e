/* sequence.h: one generation request as the scheduler and block manager see it (nano-vllm's Sequence).
 *
 * tokens holds prompt + generated ids; n_computed of them have K/V in the cache. A sequence with
 * tokens.size() - n_computed > 1 is prefilling, == 1 is decoding. Preemption resets n_computed to
 * 0 and drops the block table; re-admission recomputes (mostly from the prefix cache).
 */
#ifndef MAYA_SEQUENCE_H
#define MAYA_SEQUENCE_H

#include <stddef.h>
#include <stdint.h>
#include <vector>

#include "sampler.h" // defines: Rng, SamplerParams

namespace maya {

/* One image of a multimodal prompt (eng_seq_add_mm): its run of image tokens, its pixels until
 * encoded, then its embeddings (kept across preemption; never encoded when the prefix cache
 * serves all its tokens). */
struct SeqImage {
    int32_t tok0 = 0, n_tok = 0; // prompt indices [tok0, tok0 + n_tok) hold its placeholders
    int32_t grid[3] = {0, 0, 0}; // t, h, w in patches
    uint64_t hash = 0;           // the caller's hash of its pixels, mixed into its blocks' hashes
    std::vector<float> pixels;   // (t*h*w, P) until encoded
    std::vector<float> embd;     // (n_tok, C) once encoded
};

struct Sequence {
    int32_t id = 0;
    std::vector<int32_t> tokens; // prompt + generated
    int32_t n_prompt = 0;
    int32_t n_computed = 0;             // tokens whose K/V are in the cache
    int32_t n_cached = -1;              // prompt tokens served by the prefix cache at first admission (-1: not yet)
    std::vector<int32_t> block_table;   // block ids covering tokens
    std::vector<uint64_t> block_hashes; // chained hashes of the leading full, computed blocks
    std::vector<int32_t> stop_ids;
    int32_t max_tokens = 0;
    SamplerParams sampling;
    Rng rng;
    uint32_t flags = 0;
    bool is_cancelled = false;
    bool is_prefill_reported = false;
    std::vector<float> logits;        // (V) latest sampled position, when ENG_SEQ_KEEP_LOGITS
    std::vector<float> prompt_logits; // (n_prompt, V) every prompt position, when ENG_SEQ_PROMPT_LOGITS
    std::vector<uint32_t> mask;       // (ceil(V/32)) ids the next sample may take; empty = all (eng_seq_mask)
    std::vector<SeqImage> images;     // in prompt order (eng_seq_add_mm); empty for text prompts
    std::vector<int32_t> mpos;        // (n_prompt, 3) M-RoPE positions when images; else empty
    int32_t mrope_delta = 0;          // token i >= n_prompt is at position i + mrope_delta
    // Speculative decoding (scheduler.cpp): the drafted tokens verified by this step (never in tokens
    // until accepted), the host's draft for the next pass (eng_seq_draft), and the turn-down's record
    // of its prompt-lookup drafts: decayed counts of accepted drafted tokens and of rejections (the
    // per-token acceptance is accepted / (accepted + rejected)), and passes since it last drafted.
    std::vector<int32_t> draft;
    std::vector<int32_t> host_draft;
    std::vector<uint32_t> host_draft_masks, draft_masks; // (n, ceil(V/32)): the mask after each drafted token
    float spec_accepted = 1.0f, spec_rejected = 1.0f;    // prior: acceptance 0.5
    int32_t spec_idle = 0;
    // MTP drafting (scheduler.cpp): the MTP layer's prediction of the token after the pending one (-1:
    // none yet) and its output hidden state there (n_embd floats: the h of the next chained prediction).
    int32_t mtp_next = -1;
    std::vector<float> mtp_h;
    // Its first drafts' record (decayed counts of accepted and rejected first drafts): a first draft is
    // right far more often than a chained one (the layer sees the main model's hidden state only for
    // the first), so MTP drafting keeps the two apart: spec_accepted / spec_rejected then count the
    // chained drafts after an accepted first.
    float mtp_first_accepted = 1.0f, mtp_first_rejected = 1.0f;
    // MTP with prompt lookup (SchedulerConfig::mtp_lookup): the lookup's own decayed record, kept on
    // every step it had a match (its draft is checked against the tokens the step produced, whether
    // it was drafted or not), the lookup draft of this step (the record's check) and whether the
    // step's draft is that lookup draft.
    float lookup_accepted = 1.0f, lookup_rejected = 1.0f;
    std::vector<int32_t> lookup_shadow;
    // What the step's draft came from: prompt lookup, the MTP layer's chain, or the host
    // (eng_seq_draft); it decides which record and which engine counters the step's result goes to.
    enum class DraftFrom : uint8_t { none, lookup, mtp, host };
    DraftFrom draft_from = DraftFrom::none;

    int32_t n_generated() const { return (int32_t)tokens.size() - n_prompt; }
};

} // namespace maya

#endif
