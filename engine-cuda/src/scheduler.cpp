/* scheduler.cpp: the step loop (see scheduler.h). */
#include "scheduler.h"

#include <string.h>
#include <time.h>

#include <algorithm>
#include <chrono>

#include "common.h" // defines: fail, ENG_FINISH_*, ENG_EVENT_*

namespace maya {

static void emit(std::vector<int32_t> *ev, int32_t seq, int32_t kind, int32_t token, int32_t value) {
    ev->push_back(seq);
    ev->push_back(kind);
    ev->push_back(token);
    ev->push_back(value);
}

int32_t Scheduler::init(const SchedulerConfig &cfg, BlockManager *bm, Backend *backend) {
    if (cfg.max_batch <= 0 || cfg.prefill_chunk <= 0 || cfg.n_ctx <= 0 || cfg.n_vocab <= 0)
        return fail(ENG_STATUS_INVALID_ARG, "scheduler: bad limits");
    cfg_ = cfg;
    if (cfg.token_cost >= 0) token_cost_ = cfg.token_cost;
    if (cfg.mtp_cost >= 0) mtp_cost_ = cfg.mtp_cost;
    bm_ = bm;
    backend_ = backend;
    sampler_.init(cfg.n_vocab);
    if (cfg.max_draft < 0 || cfg.ngram_min < 1 || cfg.ngram_max < cfg.ngram_min)
        return fail(ENG_STATUS_INVALID_ARG, "scheduler: bad speculative limits");
    if (cfg_.max_logits <= 0) cfg_.max_logits = cfg.max_batch * (1 + cfg.max_draft);
    if (cfg_.max_logits < cfg.max_batch) cfg_.max_logits = cfg.max_batch;
    logits_.resize((size_t)cfg_.max_logits * (size_t)cfg.n_vocab);
    batch_.tokens.reserve((size_t)(cfg.prefill_chunk + cfg.max_batch * (1 + cfg.max_draft)));
    batch_.seqs.reserve((size_t)cfg.max_batch);
    entries_.reserve((size_t)cfg.max_batch);
    verified_.reserve((size_t)cfg.max_draft + 1);
    if (cfg.use_mtp) {
        if (cfg.n_embd <= 0 || cfg.max_draft <= 0) return fail(ENG_STATUS_INVALID_ARG, "scheduler: bad MTP limits");
        size_t T = (size_t)(cfg.prefill_chunk + cfg.max_batch * (1 + cfg.max_draft));
        mtp_h_in_.resize(T * (size_t)cfg.n_embd);
        mtp_h_out_.resize(T * (size_t)cfg.n_embd);
        mtp_logits_.resize((size_t)cfg.max_batch * (size_t)cfg.n_vocab);
        mtp_chain_h_.resize((size_t)cfg.max_batch * (size_t)cfg.n_embd);
        mtp_chains_.reserve((size_t)cfg.max_batch);
        mtp_batch_.tokens.reserve(T);
        mtp_batch_.seqs.reserve((size_t)cfg.max_batch);
    }
    running_.reserve((size_t)cfg.max_batch);
    return ENG_STATUS_OK;
}

int32_t Scheduler::add(std::unique_ptr<Sequence> seq, int32_t *out_id) {
    int64_t need = (int64_t)seq->tokens.size() + seq->max_tokens;
    if (need > cfg_.n_ctx)
        return fail(ENG_STATUS_CONTEXT_OVERFLOW,
                    "prompt (%zu tokens) + max_tokens (%d) exceeds the context limit of %d", seq->tokens.size(),
                    seq->max_tokens, cfg_.n_ctx);
    seq->id = next_id_++;
    if (next_id_ == INT32_MAX) next_id_ = 1;
    seq->n_prompt = (int32_t)seq->tokens.size();
    seq->tokens.reserve((size_t)need);
    if (seq->flags & ENG_SEQ_PROMPT_LOGITS) seq->prompt_logits.resize((size_t)seq->n_prompt * (size_t)cfg_.n_vocab);
    *out_id = seq->id;
    waiting_.push_back(seq.get());
    live_[seq->id] = std::move(seq);
    return ENG_STATUS_OK;
}

int32_t Scheduler::cancel(int32_t id) {
    auto it = live_.find(id);
    if (it == live_.end()) return fail(ENG_STATUS_UNKNOWN_SEQ, "no live sequence %d", id);
    it->second->is_cancelled = true;
    return ENG_STATUS_OK;
}

const Sequence *Scheduler::find(int32_t id) const {
    auto it = live_.find(id);
    if (it != live_.end()) return it->second.get();
    for (const auto &s : retired_)
        if (s->id == id) return s.get();
    return nullptr;
}

void Scheduler::finish(Sequence *s, int32_t reason, std::vector<int32_t> *events) {
    bm_->deallocate(*s);
    auto r = std::find(running_.begin(), running_.end(), s);
    if (r != running_.end()) running_.erase(r);
    auto w = std::find(waiting_.begin(), waiting_.end(), s);
    if (w != waiting_.end()) waiting_.erase(w);
    emit(events, s->id, ENG_EVENT_FINISH, -1, reason);
    auto it = live_.find(s->id);
    retired_.push_back(std::move(it->second));
    live_.erase(it);
}

void Scheduler::reap_cancelled(std::vector<int32_t> *events) {
    for (size_t i = running_.size(); i-- > 0;)
        if (running_[i]->is_cancelled) finish(running_[i], ENG_FINISH_CANCELLED, events);
    for (size_t i = waiting_.size(); i-- > 0;)
        if (waiting_[i]->is_cancelled) finish(waiting_[i], ENG_FINISH_CANCELLED, events);
}

void Scheduler::preempt(Sequence *s) {
    bm_->deallocate(*s);
    s->draft.clear();
    s->mtp_next = -1;
    s->lookup_shadow.clear();
    s->draft_from = Sequence::DraftFrom::none;
    running_.erase(std::find(running_.begin(), running_.end(), s));
    waiting_.push_front(s);
    stats_.preemptions++;
}

/* Adds n of s's uncomputed tokens to the batch; a decode pass (is_prefill false) also carries s->draft
 * after its pending token and asks for the logits of all of them. */
void Scheduler::schedule_one(Sequence *s, int32_t n, bool is_prefill) {
    int32_t k = is_prefill ? 0 : (int32_t)s->draft.size();
    BatchSeq b;
    b.tok0 = (int32_t)batch_.tokens.size();
    b.n_tokens = n + k;
    b.pos0 = s->n_computed;
    b.block_table = s->block_table.data();
    b.n_blocks = (int32_t)s->block_table.size();
    b.n_logits = 1 + k;
    bool is_last = s->n_computed + n == (int32_t)s->tokens.size();
    if (is_prefill && (s->flags & ENG_SEQ_PROMPT_LOGITS)) { // one row per token; the last one samples
        b.all_logits_row = batch_.n_logits;
        batch_.n_logits += n;
        b.logits_row = is_last ? batch_.n_logits - 1 : -1;
    } else {
        b.logits_row = is_last ? batch_.n_logits : -1;
        if (is_last) batch_.n_logits += b.n_logits;
    }
    batch_.tokens.insert(batch_.tokens.end(), s->tokens.begin() + s->n_computed, s->tokens.begin() + s->n_computed + n);
    batch_.tokens.insert(batch_.tokens.end(), s->draft.begin(), s->draft.begin() + k);
    batch_.seqs.push_back(b);
    entries_.push_back({s, n + k, is_prefill});
}

static const double COST_DECAY = 0.95; // the cost model's sums weigh about the latest 20 steps

void StepCost::add(double T, double seconds, double generated) {
    const double d = COST_DECAY;
    n = d * n + 1;
    st = d * st + T;
    stt = d * stt + T * T;
    sy = d * sy + seconds;
    sty = d * sty + T * seconds;
    time = d * time + seconds;
    tokens = d * tokens + generated;
}

void StepCost::add_mtp(double seconds) {
    mtp_time = COST_DECAY * mtp_time + seconds;
    mtp_n = COST_DECAY * mtp_n + 1;
}

double StepCost::relative_mtp_cost() const {
    if (mtp_n <= 0 || time <= 0 || tokens <= 0) return 0;
    return (mtp_time / mtp_n) / (time / tokens);
}

double StepCost::relative_token_cost() const {
    double var = n * stt - st * st;
    if (n < 4 || var <= 1e-9 * n * n || tokens <= 0) return 0;
    double b = (n * sty - st * sy) / var;
    return b > 0 ? b / (time / tokens) : 0;
}

/* A decayed record's per-token acceptance: accepted / (accepted + rejected). */
static double rate(float accepted, float rejected) { return accepted / (accepted + rejected); }

/* The turn-down's draft length: the first drafted token is accepted with probability about a1, each
 * next one after it a2, so the draft keeps the j with a1 a2^(j-1) >= cost, at most max_draft (one
 * record for every position: a1 = a2). */
static int32_t turn_down_of(double a1, double a2, double cost, int32_t max_draft) {
    int32_t k = 0;
    for (double p = a1; k < max_draft && p >= cost; p *= a2) k++;
    return k;
}

/* The turn-down's draft length (propose) on the sequence's own record. An MTP-drafted token also
 * costs one pass of the MTP layer (the catch-up's for the first, a chain round for each next one),
 * which on a small model is a good part of a main pass. MTP drafts keep two records: the first
 * drafts' (alpha1) and the chained drafts' after an accepted first (alpha2). (On the demo model's
 * held-out chat, in PyTorch, first drafts are right 88.9% of the time and second drafts 23.8%: one
 * record for both would average them to a rate at which even the first does not pay.) */
int32_t Scheduler::turn_down(const Sequence *s) const {
    double a = rate(s->spec_accepted, s->spec_rejected);
    if (!cfg_.use_mtp) return turn_down_of(a, a, token_cost_, cfg_.max_draft);
    return turn_down_of(rate(s->mtp_first_accepted, s->mtp_first_rejected), a, token_cost_ + mtp_cost_, cfg_.max_draft);
}

/* Prompt lookup (n-gram): the most recent earlier occurrence of s's last m tokens (m from ngram_max
 * down to ngram_min) in its prompt and output; writes where the tokens that followed it start and
 * returns how many of them to draft (at most k; 0: no match). */
int32_t Scheduler::lookup(const Sequence *s, int32_t k, int32_t m_min, int32_t *from) const {
    int32_t n = (int32_t)s->tokens.size();
    const int32_t *t = s->tokens.data();
    for (int32_t m = std::min(cfg_.ngram_max, n - 1); k > 0 && m >= m_min; m--) {
        const int32_t *suffix = t + (n - m);
        for (int32_t j = n - m - 1; j >= 0; j--) {
            if (t[j] != suffix[0] || memcmp(t + j, suffix, (size_t)m * sizeof(int32_t)) != 0) continue;
            *from = j + m;
            return std::min(k, n - (j + m));
        }
    }
    return 0;
}

/* Expected accepted tokens of a k-token draft whose first token is accepted with probability a1 and
 * each next one after it a2: a1 (1 + a2 + ... + a2^(k-1)). */
static double expected_accepted(double a1, double a2, int32_t k) {
    double sum = 0, p = a1;
    for (int32_t j = 0; j < k; j++, p *= a2) sum += p;
    return sum;
}

/* MTP with prompt lookup: the length of the lookup draft to use instead of the MTP layer's (0: the
 * MTP layer drafts). The lookup drafts when its match (n_lookup tokens, cut by the turn-down on the
 * lookup's own record) gives at least 2 tokens (1 where the turn-down has the layer draft nothing:
 * then the lookup drafts as it does alone) and at least as many accepted tokens are expected from it
 * as from the MTP layer's draft (turn-down on the MTP record). Long matches that the model copies
 * (tool arguments quoting the prompt, a JSON field) then draft from the prompt, the rest from the
 * MTP layer; the lookup costs nothing to draft, the MTP layer one pass of its own per chained token.
 * Depends only on state that stays put from the catch-up to the next propose() (the catch-up skips
 * the MTP head where this picks the lookup). */
int32_t Scheduler::lookup_pick(const Sequence *s, int32_t room, int32_t n_lookup) const {
    double a_lookup = rate(s->lookup_accepted, s->lookup_rejected);
    int32_t k = std::min({turn_down_of(a_lookup, a_lookup, token_cost_, cfg_.max_draft), room, n_lookup});
    int32_t k_mtp = std::min(turn_down(s), room);
    if (k < (k_mtp > 0 ? 2 : 1)) return 0;
    double a1 = rate(s->mtp_first_accepted, s->mtp_first_rejected), a2 = rate(s->spec_accepted, s->spec_rejected);
    return expected_accepted(a_lookup, a_lookup, k) >= expected_accepted(a1, a2, k_mtp) ? k : 0;
}

/* Updates the lookup's record (MTP with prompt lookup) from the tokens a step produced for s. */
static void record_lookup(Sequence *s, const int32_t *tokens, int32_t m) {
    if (s->lookup_shadow.empty()) return;
    int32_t n = std::min(m, (int32_t)s->lookup_shadow.size()), a = 0;
    while (a < n && s->lookup_shadow[(size_t)a] == tokens[a]) a++;
    // A shadow that matched every token the step produced is not known to fail after them.
    s->lookup_accepted = 0.8f * s->lookup_accepted + (float)a;
    s->lookup_rejected = 0.8f * s->lookup_rejected + (a < n ? 1.0f : 0.0f);
    s->lookup_shadow.clear();
}

/* MTP drafting (propose): the MTP layer's next token, then k - 1 places mtp_chain fills once blocks
 * are taken; with mtp_lookup, the prompt-lookup draft instead where lookup_pick says so, and the
 * lookup's match kept to check against the step's tokens (its record). */
void Scheduler::propose_mtp(Sequence *s, int32_t room) {
    if (cfg_.mtp_lookup && room > 0) {
        int32_t from = 0, n = lookup(s, std::min(cfg_.max_draft, room), mtp_lookup_min(s), &from);
        s->lookup_shadow.assign(s->tokens.begin() + from, s->tokens.begin() + from + n);
        int32_t k = mtp_probe_due(s) ? 0 : lookup_pick(s, room, n);
        if (k > 0) {
            s->draft.assign(s->lookup_shadow.begin(), s->lookup_shadow.begin() + k);
            s->draft_from = Sequence::DraftFrom::lookup;
            if (turn_down(s) == 0) s->spec_idle++; // the layer's probe comes due while the lookup drafts
            return;
        }
    }
    int32_t k = turn_down(s);
    if (k == 0 && ++s->spec_idle >= 16) k = 1; // a probe
    k = std::min(k, room);
    if (k <= 0 || s->mtp_next < 0) return;
    s->draft.assign((size_t)k, -1);
    s->draft[0] = s->mtp_next;
    s->draft_from = Sequence::DraftFrom::mtp;
    s->spec_idle = 0;
}

/* The draft of a decoding sequence for this step: the host's (eng_seq_draft), else prompt lookup
 * (n-gram, lookup()): the tokens that followed the most recent earlier occurrence of its last few
 * tokens. None while a mask is set (the host's matcher must see each token before the next is
 * chosen), and cut to what max_tokens and the context leave.
 * The turn-down cuts a prompt-lookup draft to the tokens worth their cost: draft token j is accepted
 * with probability about alpha^j (alpha: the sequence's per-token acceptance so far) and costs
 * token_cost_ generated tokens' worth of time (the step cost model), so the draft keeps the j with
 * alpha^j >= token_cost_. When that is none, the sequence drafts one token every 16th pass to keep
 * its acceptance current. Outputs never depend on any of this (see verify()). MTP drafting (use_mtp)
 * drafts the MTP layer's chain instead of prompt lookup, under the same turn-down with each token's
 * cost raised by one MTP pass (measured: mtp_cost_), and with mtp_lookup the lookup where it is the
 * better bet (propose_mtp).
 * A PROMPT_LOGITS sequence never drafts: it is a scoring request (its logits rows go to its prompt). */
void Scheduler::propose(Sequence *s) {
    s->draft.clear();
    s->draft_masks.clear();
    s->lookup_shadow.clear();
    s->draft_from = Sequence::DraftFrom::none;
    if (cfg_.max_draft <= 0 || (s->flags & ENG_SEQ_PROMPT_LOGITS)) {
        s->host_draft.clear();
        s->host_draft_masks.clear();
        return;
    }
    int32_t n = (int32_t)s->tokens.size();
    int32_t room = std::min(s->max_tokens - s->n_generated() - 1, cfg_.n_ctx - n - 1);
    if (!s->host_draft.empty()) {
        // A constrained sequence takes a draft only with the masks after its tokens, cut before the
        // first token its mask forbids.
        size_t words = (size_t)(cfg_.n_vocab + 31) / 32;
        bool has_masks = !s->host_draft_masks.empty();
        int32_t k = std::min(room, (int32_t)s->host_draft.size());
        if (!s->mask.empty() && !has_masks) k = 0;
        for (int32_t j = 0; j < k; j++) {
            const uint32_t *m = j == 0      ? (s->mask.empty() ? nullptr : s->mask.data())
                                : has_masks ? &s->host_draft_masks[(size_t)(j - 1) * words]
                                            : nullptr;
            int32_t d = s->host_draft[(size_t)j];
            if (m && !((m[d >> 5] >> (d & 31)) & 1u)) k = j;
        }
        if (k > 0) {
            s->draft.assign(s->host_draft.begin(), s->host_draft.begin() + k);
            s->draft_from = Sequence::DraftFrom::host;
        }
        if (k > 0 && has_masks)
            s->draft_masks.assign(s->host_draft_masks.begin(), s->host_draft_masks.begin() + (size_t)k * words);
        s->host_draft.clear();
        s->host_draft_masks.clear();
        return;
    }
    if (!s->mask.empty()) return; // the engine cannot know the masks after its own drafts
    if (cfg_.use_mtp) {
        propose_mtp(s, room);
        return;
    }
    int32_t k = turn_down(s);
    if (k == 0 && ++s->spec_idle >= 16) k = 1; // a probe
    k = std::min(k, room);
    if (k <= 0) return;
    int32_t from = 0;
    k = lookup(s, k, cfg_.ngram_min, &from);
    if (k <= 0) return;
    s->draft.assign(s->tokens.begin() + from, s->tokens.begin() + from + k);
    s->draft_from = Sequence::DraftFrom::lookup;
    s->spec_idle = 0;
}

/* After a pass: the MTP layer over every position the pass kept, t from pos0 on, pairing the main
 * model's hidden state at t with the token at t + 1 (known now: the prompt, or the tokens this pass
 * sampled). Sequences that finished in this pass included: their blocks, freed into the prefix
 * cache, are not reused before the next schedule, and a later prompt that shares them reads their
 * MTP KV too. A sequence that decodes next gets its first draft (the last position's prediction) and
 * the hidden state it chains from (only where propose() will draft: the lm head is skipped
 * otherwise). Outputs never depend on this. One known approximation: a prompt
 * served from the prefix cache finds, at the last cached position, the MTP entry of the token that
 * followed in the sequence that computed the block (it may differ): draft quality only. */
int32_t Scheduler::mtp_catch_up() {
    const float *hid = backend_->hidden();
    if (!hid) return fail(ENG_STATUS_INTERNAL, "scheduler: the backend offers no hidden states for MTP");
    int32_t C = cfg_.n_embd, V = cfg_.n_vocab;
    mtp_batch_.clear();
    mtp_entry_.assign(entries_.size(), -1);
    bool any_prefill = false;
    for (size_t e = 0; e < entries_.size(); e++) {
        const Entry &en = entries_[e];
        any_prefill = any_prefill || en.is_prefill;
        const BatchSeq &b = batch_.seqs[e];
        Sequence *s = en.seq;
        s->mtp_next = -1;
        // An entry pairs position t with the token after it: a sequence that ended in this pass (its
        // last token not kept, e.g. at a stop id or max_tokens) has none after its last position.
        int32_t n_kept = std::min(en.n_kept, (int32_t)s->tokens.size() - b.pos0 - 1);
        if (n_kept <= 0) continue;
        BatchSeq m;
        m.tok0 = (int32_t)mtp_batch_.tokens.size();
        m.n_tokens = n_kept;
        m.pos0 = b.pos0;
        m.block_table = mtp_blocks_.data() + mtp_block0_[e];
        m.n_blocks = (int32_t)((e + 1 < entries_.size() ? mtp_block0_[e + 1] : mtp_blocks_.size()) - mtp_block0_[e]);
        bool is_live = live_.count(s->id) > 0;
        // The prediction (and its lm head) only for a sequence the next propose() drafts for: decoding,
        // unmasked, with room, and drafting by the turn-down or due a probe.
        int32_t room = std::min(s->max_tokens - s->n_generated() - 1, cfg_.n_ctx - (int32_t)s->tokens.size() - 1);
        bool is_next = is_live && s->n_computed + 1 == (int32_t)s->tokens.size() && s->mask.empty() && room > 0;
        // MTP with prompt lookup: a decode pass whose sequence drafts from the lookup next (propose_mtp)
        // skips the layer: its MTP KV at these positions stays stale (draft quality only: later MTP
        // drafts attend to it). A prompt's chunks always run it.
        int32_t from = 0;
        if (is_next && cfg_.mtp_lookup && !en.is_prefill && !mtp_probe_due(s) &&
            lookup_pick(s, room, lookup(s, std::min(cfg_.max_draft, room), mtp_lookup_min(s), &from)) > 0)
            continue;
        bool is_decoding = is_next && (turn_down(s) > 0 || mtp_probe_due(s));
        // A decode pass after which the turn-down drafts nothing (MTP does not pay for this sequence)
        // skips the layer as well: its MTP KV there stays stale, as above (draft quality only).
        if (is_next && !is_decoding && !en.is_prefill) continue;
        // So does a constrained (masked) decode pass: its drafts are the host's (propose), never the
        // layer's, while the mask is set.
        if (!s->mask.empty() && !en.is_prefill) continue;
        m.logits_row = is_decoding ? mtp_batch_.n_logits : -1;
        m.n_logits = 1;
        if (is_decoding) mtp_batch_.n_logits++;
        for (int32_t i = 0; i < n_kept; i++) {
            mtp_batch_.tokens.push_back(s->tokens[(size_t)(b.pos0 + i + 1)]);
            memcpy(&mtp_h_in_[(size_t)(m.tok0 + i) * (size_t)C], hid + (size_t)(b.tok0 + i) * (size_t)C,
                   sizeof(float) * (size_t)C);
        }
        mtp_batch_.seqs.push_back(m);
        mtp_entry_[e] = (int32_t)mtp_batch_.seqs.size() - 1;
    }
    if (mtp_batch_.tokens.empty()) return ENG_STATUS_OK;
    auto t0 = std::chrono::steady_clock::now();
    ENG_TRY(backend_->mtp_forward(mtp_batch_, mtp_h_in_.data(), mtp_h_out_.data(), mtp_logits_.data()));
    if (!any_prefill) cost_.add_mtp(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    for (size_t e = 0; e < entries_.size(); e++) {
        Sequence *s = entries_[e].seq;
        if (mtp_entry_[e] < 0) continue;
        const BatchSeq &m = mtp_batch_.seqs[(size_t)mtp_entry_[e]];
        if (m.logits_row < 0) continue;
        s->mtp_next = argmax(&mtp_logits_[(size_t)m.logits_row * (size_t)V], V);
        const float *h = &mtp_h_out_[(size_t)(m.tok0 + m.n_tokens - 1) * (size_t)C];
        s->mtp_h.assign(h, h + C);
    }
    return ENG_STATUS_OK;
}

/* Fills s->draft[1..] of the entries in mtp_chains_ (placed by propose, blocks taken, scheduled with
 * placeholder tokens): draft j is the MTP layer's prediction at position n_computed + j - 1 from draft
 * j - 1 and the hidden state of the previous prediction. Round j runs every sequence that still needs
 * draft j as one batch (all of a step's chains together). These KV entries are speculative: the next
 * catch-up rewrites them. The drafts are then written into the step's batch. On a backend failure the
 * missing drafts repeat the last one made (drafts never change outputs: verification rejects them). */
void Scheduler::mtp_chain() {
    if (mtp_chains_.empty()) return;
    int32_t C = cfg_.n_embd, V = cfg_.n_vocab;
    for (size_t c = 0; c < mtp_chains_.size(); c++) {
        const Sequence *s = entries_[mtp_chains_[c]].seq;
        memcpy(&mtp_chain_h_[c * (size_t)C], s->mtp_h.data(), sizeof(float) * (size_t)C);
    }
    bool is_failed = false;
    for (size_t j = 1; !is_failed; j++) {
        mtp_batch_.clear();
        for (size_t c = 0; c < mtp_chains_.size(); c++) {
            Sequence *s = entries_[mtp_chains_[c]].seq;
            if (s->draft.size() <= j) continue;
            BatchSeq m;
            m.tok0 = (int32_t)mtp_batch_.tokens.size();
            m.n_tokens = 1;
            m.pos0 = s->n_computed + (int32_t)j - 1;
            m.block_table = s->block_table.data();
            m.n_blocks = (int32_t)s->block_table.size();
            m.logits_row = mtp_batch_.n_logits++;
            m.n_logits = 1;
            memcpy(&mtp_h_in_[(size_t)m.tok0 * (size_t)C], &mtp_chain_h_[c * (size_t)C], sizeof(float) * (size_t)C);
            mtp_batch_.tokens.push_back(s->draft[j - 1]);
            mtp_batch_.seqs.push_back(m);
        }
        if (mtp_batch_.seqs.empty()) break;
        auto t0 = std::chrono::steady_clock::now();
        if (backend_->mtp_forward(mtp_batch_, mtp_h_in_.data(), mtp_h_out_.data(), mtp_logits_.data()) < 0) {
            clear_error();
            is_failed = true;
        } else {
            cost_.add_mtp(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        int32_t row = 0;
        for (size_t c = 0; c < mtp_chains_.size(); c++) {
            Sequence *s = entries_[mtp_chains_[c]].seq;
            if (s->draft.size() <= j) continue;
            if (is_failed) {
                for (size_t i = j; i < s->draft.size(); i++) s->draft[i] = s->draft[j - 1];
                continue;
            }
            s->draft[j] = argmax(&mtp_logits_[(size_t)row * (size_t)V], V);
            memcpy(&mtp_chain_h_[c * (size_t)C], &mtp_h_out_[(size_t)row * (size_t)C], sizeof(float) * (size_t)C);
            row++;
        }
    }
    for (size_t e : mtp_chains_) {
        const Sequence *s = entries_[e].seq;
        const BatchSeq &b = batch_.seqs[e];
        size_t first = (size_t)(b.tok0 + b.n_tokens) - s->draft.size();
        for (size_t i = 1; i < s->draft.size(); i++) batch_.tokens[first + i] = s->draft[i];
    }
}

int32_t Scheduler::prefill_take(const Sequence *s, int32_t budget, size_t i_running) const {
    int32_t n = std::min((int32_t)s->tokens.size() - s->n_computed, budget);
    if (!(s->flags & ENG_SEQ_PROMPT_LOGITS)) return n;
    // Rows left: the ones taken so far, and one kept for each running sequence after this one.
    size_t later = running_.size() > i_running + 1 ? running_.size() - i_running - 1 : 0;
    int32_t rows = cfg_.max_logits - batch_.n_logits - (int32_t)later;
    return std::max(0, std::min(n, rows));
}

void Scheduler::schedule() {
    batch_.clear();
    entries_.clear();
    mtp_chains_.clear();
    int32_t budget = cfg_.prefill_chunk;
    bool did_preempt = false;
    for (size_t i = 0; i < running_.size();) {
        Sequence *s = running_[i];
        int32_t todo = (int32_t)s->tokens.size() - s->n_computed;
        if (todo == 1 && s->is_prefill_reported) {
            bool is_victim = false;
            while (!bm_->can_append(*s)) {
                Sequence *victim = running_.back();
                preempt(victim);
                did_preempt = true;
                if (victim == s) {
                    is_victim = true;
                    break;
                }
            }
            if (is_victim) break;
            bm_->append(*s);
            propose(s);
            if (!s->draft.empty()) {
                // Drafts take free blocks only while one stays for each later running sequence, and
                // logits rows only while one stays for each of them (a PROMPT_LOGITS prefill may have
                // taken many).
                int32_t bs = bm_->block_size(), n = (int32_t)s->tokens.size();
                int32_t later = (int32_t)(running_.size() - i - 1);
                int32_t spare = std::max(0, bm_->n_free() - later);
                int32_t fit = ((int32_t)s->block_table.size() + spare) * bs - n;
                fit = std::min(fit, cfg_.max_logits - batch_.n_logits - 1 - later);
                if ((int32_t)s->draft.size() > fit) s->draft.resize((size_t)std::max(0, fit));
                bm_->append(*s, (int32_t)s->draft.size());
                if (cfg_.use_mtp && s->draft.size() > 1 && s->draft[1] < 0) mtp_chains_.push_back(entries_.size());
            }
            schedule_one(s, 1, false);
        } else if (budget > 0) {
            int32_t n = prefill_take(s, std::min(todo, budget), i);
            if (n > 0) {
                schedule_one(s, n, true);
                budget -= n;
            }
        }
        i++;
    }
    while (!did_preempt && !waiting_.empty() && (int32_t)running_.size() < cfg_.max_batch && budget > 0 &&
           batch_.n_logits < cfg_.max_logits) {
        Sequence *s = waiting_.front();
        if (!bm_->can_allocate(*s)) break; // FIFO: later sequences wait behind the head
        int32_t cached = bm_->allocate(*s);
        if (s->n_cached < 0) s->n_cached = cached;
        stats_.cached_tokens += cached;
        waiting_.pop_front();
        running_.push_back(s);
        int32_t n = prefill_take(s, budget, running_.size() - 1);
        if (n > 0) {
            schedule_one(s, n, true);
            budget -= n;
        }
    }
    mtp_chain();
}

/* A decode pass that carried drafts: the longest accepted prefix of the draft plus one token of the
 * sequence's own (the correction at the first rejection, or the token after the whole draft), cut
 * after a stop id; K/V, prefix-cache hashes and blocks are kept for accepted positions only. */
void Scheduler::verify(size_t e, std::vector<int32_t> *events) {
    Sequence *s = entries_[e].seq;
    const BatchSeq &b = batch_.seqs[e];
    int32_t k = (int32_t)s->draft.size(), V = cfg_.n_vocab;
    const int32_t *am = backend_->argmax_rows();
    bool use_am = am && batch_.row_is_greedy[(size_t)b.logits_row];
    verified_.clear();
    for (int32_t i = 0; i <= k; i++) {
        int32_t row = b.logits_row + i;
        const float *lg = &logits_[(size_t)row * (size_t)V];
        // Each position samples as decoding without drafts would (greedy: the argmax; otherwise one
        // uniform of the sequence's RNG), and a draft is accepted when it is the token drawn. For a
        // draft that is a point mass this is the speculative-sampling rule (Leviathan et al. 2023,
        // Chen et al. 2023): accepted with probability p(draft), else a token from p without the
        // draft, renormalised. And it draws the same uniforms in the same order as decoding without
        // drafts, so the tokens are identical for a given seed, sampling included.
        const uint32_t *mask = i == 0                   ? (s->mask.empty() ? nullptr : s->mask.data())
                               : s->draft_masks.empty() ? nullptr
                                                        : &s->draft_masks[(size_t)(i - 1) * (size_t)((V + 31) / 32)];
        int32_t tok = use_am ? am[row] : sampler_.sample(lg, s->sampling, &s->rng, mask);
        verified_.push_back(tok);
        if (std::find(s->stop_ids.begin(), s->stop_ids.end(), tok) != s->stop_ids.end()) break;
        if (i < k && tok != s->draft[(size_t)i]) break;
    }
    int32_t a = 0, m = (int32_t)verified_.size();
    while (a < k && a < m && verified_[(size_t)a] == s->draft[(size_t)a]) a++;
    // Positions n_computed (the pending token) and the a accepted drafts after it hold valid K/V.
    s->n_computed += 1 + a;
    entries_[e].n_kept = 1 + a;
    int32_t gen0 = s->n_generated();
    s->tokens.insert(s->tokens.end(), verified_.begin(), verified_.end());
    bm_->commit(*s);
    bm_->trim(*s);
    stats_.decode_passes++;
    stats_.decode_tokens += m;
    stats_.draft_tokens += k;
    stats_.draft_accepted += a;
    // The turn-down's record (decayed): a accepted drafted tokens, then a rejection unless all were.
    // MTP drafts (counted apart too): the first draft's record, and the chained drafts' after an
    // accepted first; with prompt lookup beside them the lookup keeps its own (record_lookup). The
    // host's drafts (a constrained sequence's) keep no record here beside the MTP layer's: the host
    // turns them down.
    if (s->draft_from == Sequence::DraftFrom::mtp && k > 0) {
        stats_.mtp_drafts++;
        stats_.mtp_drafts_accepted += a > 0;
        stats_.mtp_draft_tokens += k;
        stats_.mtp_draft_accepted += a;
        s->mtp_first_accepted = 0.8f * s->mtp_first_accepted + (a > 0 ? 1.0f : 0.0f);
        s->mtp_first_rejected = 0.8f * s->mtp_first_rejected + (a > 0 ? 0.0f : 1.0f);
        if (a > 0 && k > 1) {
            s->spec_accepted = 0.8f * s->spec_accepted + (float)(a - 1);
            s->spec_rejected = 0.8f * s->spec_rejected + (a < k ? 1.0f : 0.0f);
        }
    } else if (!cfg_.use_mtp) {
        s->spec_accepted = 0.8f * s->spec_accepted + (float)a;
        s->spec_rejected = 0.8f * s->spec_rejected + (a < k ? 1.0f : 0.0f);
    }
    record_lookup(s, verified_.data(), m);
    s->draft_from = Sequence::DraftFrom::none;
    s->draft.clear();
    s->draft_masks.clear();
    if (s->flags & ENG_SEQ_KEEP_LOGITS) {
        const float *lg = &logits_[(size_t)(b.logits_row + m - 1) * (size_t)V];
        s->logits.assign(lg, lg + V);
    }
    for (int32_t j = 0; j < m; j++) emit(events, s->id, ENG_EVENT_TOKEN, verified_[(size_t)j], gen0 + j + 1);
    int32_t tok = verified_.back();
    bool is_stop = std::find(s->stop_ids.begin(), s->stop_ids.end(), tok) != s->stop_ids.end();
    if (is_stop) finish(s, ENG_FINISH_STOP, events);
    else if (s->n_generated() >= s->max_tokens || (int32_t)s->tokens.size() >= cfg_.n_ctx)
        finish(s, ENG_FINISH_LENGTH, events);
}

void Scheduler::postprocess(std::vector<int32_t> *events) {
    for (size_t e = 0; e < entries_.size(); e++) {
        Sequence *s = entries_[e].seq;
        if (!entries_[e].is_prefill && !s->draft.empty()) {
            verify(e, events);
            continue;
        }
        s->n_computed += entries_[e].n_tokens;
        entries_[e].n_kept = entries_[e].n_tokens;
        bm_->commit(*s);
        if (entries_[e].is_prefill) stats_.prefill_tokens += entries_[e].n_tokens;
        else {
            stats_.decode_tokens++;
            stats_.decode_passes++;
        }
        const BatchSeq &bq = batch_.seqs[e];
        if (bq.all_logits_row >= 0 && bq.pos0 < s->n_prompt) // PROMPT_LOGITS: the chunk's prompt positions
            memcpy(&s->prompt_logits[(size_t)bq.pos0 * (size_t)cfg_.n_vocab],
                   &logits_[(size_t)bq.all_logits_row * (size_t)cfg_.n_vocab],
                   sizeof(float) * (size_t)std::min(bq.n_tokens, s->n_prompt - bq.pos0) * (size_t)cfg_.n_vocab);
        if (entries_[e].is_prefill && !s->is_prefill_reported && (s->flags & ENG_SEQ_REPORT_PROGRESS))
            emit(events, s->id, ENG_EVENT_PREFILL_PROGRESS, s->n_cached, s->n_computed);
        int32_t row = bq.logits_row;
        if (row < 0) continue; // mid-prefill chunk
        const float *lg = &logits_[(size_t)row * (size_t)cfg_.n_vocab];
        if (!s->is_prefill_reported) {
            emit(events, s->id, ENG_EVENT_PREFILLED, -1, s->n_cached);
            s->is_prefill_reported = true;
        }
        const int32_t *am = backend_->argmax_rows();
        // A constrained sequence samples on the host, where its token mask applies.
        const uint32_t *mask = s->mask.empty() ? nullptr : s->mask.data();
        int32_t tok = am && !mask && batch_.row_is_greedy[(size_t)row]
                          ? am[row]
                          : sampler_.sample(lg, s->sampling, &s->rng, mask);
        if (s->flags & ENG_SEQ_KEEP_LOGITS) s->logits.assign(lg, lg + cfg_.n_vocab);
        s->tokens.push_back(tok);
        record_lookup(s, &tok, 1);
        emit(events, s->id, ENG_EVENT_TOKEN, tok, s->n_generated());
        bool is_stop = std::find(s->stop_ids.begin(), s->stop_ids.end(), tok) != s->stop_ids.end();
        if (is_stop) finish(s, ENG_FINISH_STOP, events);
        else if (s->n_generated() >= s->max_tokens || (int32_t)s->tokens.size() >= cfg_.n_ctx)
            finish(s, ENG_FINISH_LENGTH, events);
    }
}

/* Multimodal batches: encodes the images the scheduled chunks reach for the first time, then sets
 * every token's M-RoPE positions and, for image tokens, its embedding row. */
void Scheduler::prepare_mm() {
    bool any = false;
    for (const Entry &e : entries_) any = any || !e.seq->images.empty();
    if (!any) return;
    size_t T = batch_.tokens.size();
    batch_.mpos.resize(T * 3);
    batch_.embd_rows.assign(T, nullptr);
    for (size_t e = 0; e < entries_.size(); e++) {
        Sequence *s = entries_[e].seq;
        const BatchSeq &b = batch_.seqs[e];
        int32_t a = b.pos0, z = b.pos0 + b.n_tokens;
        for (SeqImage &img : s->images) {
            if (img.tok0 >= z || img.tok0 + img.n_tok <= a) continue;
            if (img.embd.empty()) {
                img.embd.resize((size_t)img.n_tok * (size_t)n_embd_);
                auto t0 = std::chrono::steady_clock::now();
                timespec c0, c1;
                clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
                vision_->encode(img.pixels.data(), img.grid[0], img.grid[1], img.grid[2], img.embd.data());
                clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
                stats_.encode_us +=
                    std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
                        .count();
                stats_.encode_cpu_us += (int64_t)(c1.tv_sec - c0.tv_sec) * 1000000 + (c1.tv_nsec - c0.tv_nsec) / 1000;
                std::vector<float>().swap(img.pixels);
                stats_.images_encoded++;
            }
            for (int32_t i = std::max(a, img.tok0); i < std::min(z, img.tok0 + img.n_tok); i++)
                batch_.embd_rows[(size_t)(b.tok0 + i - a)] = img.embd.data() + (size_t)(i - img.tok0) * (size_t)n_embd_;
        }
        for (int32_t i = a; i < z; i++) {
            int32_t *p = &batch_.mpos[(size_t)(b.tok0 + i - a) * 3];
            if (i < (int32_t)s->mpos.size() / 3) memcpy(p, &s->mpos[(size_t)i * 3], 3 * sizeof(int32_t));
            else p[0] = p[1] = p[2] = i + s->mrope_delta;
        }
    }
}

int32_t Scheduler::step(std::vector<int32_t> *events) {
    retired_.clear();
    reap_cancelled(events);
    schedule();
    if (entries_.empty()) return ENG_STATUS_OK;
    stats_.steps++;
    batch_.row_is_greedy.assign((size_t)batch_.n_logits, 0);
    for (size_t e = 0; e < entries_.size(); e++) {
        const Sequence *s = entries_[e].seq;
        int32_t row = batch_.seqs[e].logits_row;
        // A masked (constrained) row samples on the host, so the backend must return its logits.
        for (int32_t i = 0; row >= 0 && i < batch_.seqs[e].n_logits; i++)
            batch_.row_is_greedy[(size_t)(row + i)] = s->sampling.temperature <= 0 &&
                                                      !(s->flags & ENG_SEQ_KEEP_LOGITS) && s->mask.empty() &&
                                                      s->draft_masks.empty();
    }
    prepare_mm();
    auto t0 = std::chrono::steady_clock::now();
    int32_t st = backend_->forward(batch_, logits_.data());
    if (st < 0) {
        for (const Entry &e : entries_) finish(e.seq, ENG_FINISH_ERROR, events);
        return st;
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    size_t n_events = events->size();
    if (cfg_.use_mtp) { // the catch-up writes the MTP KV of sequences that finish in postprocess too
        mtp_blocks_.clear();
        mtp_block0_.clear();
        for (const Entry &e : entries_) {
            mtp_block0_.push_back(mtp_blocks_.size());
            mtp_blocks_.insert(mtp_blocks_.end(), e.seq->block_table.begin(), e.seq->block_table.end());
        }
    }
    postprocess(events);
    if (cfg_.max_draft > 0) { // the cost model of the turn-down (propose)
        double generated = 0;
        for (size_t i = n_events; i + 3 < events->size(); i += 4) generated += (*events)[i + 1] == ENG_EVENT_TOKEN;
        cost_.add((double)batch_.tokens.size(), seconds, generated);
        token_cost_ = cfg_.token_cost >= 0 ? cfg_.token_cost : cost_.relative_token_cost();
        // (mtp_cost: 0 where token_cost is fixed, unless it is fixed too)
        if (cfg_.mtp_cost < 0) mtp_cost_ = cfg_.token_cost >= 0 ? 0 : cost_.relative_mtp_cost();
    }
    if (cfg_.use_mtp) ENG_TRY(mtp_catch_up()); // after the cost model: it asks whether propose will draft
    return ENG_STATUS_OK;
}

} // namespace maya
