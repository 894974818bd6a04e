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
    bm_ = bm;
    backend_ = backend;
    if (cfg_.max_logits < cfg.max_batch) cfg_.max_logits = cfg.max_batch;
    sampler_.init(cfg.n_vocab);
    logits_.resize((size_t)cfg_.max_logits * (size_t)cfg.n_vocab);
    batch_.tokens.reserve((size_t)(cfg.prefill_chunk + cfg.max_batch));
    batch_.seqs.reserve((size_t)cfg.max_batch);
    entries_.reserve((size_t)cfg.max_batch);
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
    running_.erase(std::find(running_.begin(), running_.end(), s));
    waiting_.push_front(s);
    stats_.preemptions++;
}

void Scheduler::schedule_one(Sequence *s, int32_t n, bool is_prefill) {
    BatchSeq b;
    b.tok0 = (int32_t)batch_.tokens.size();
    b.n_tokens = n;
    b.pos0 = s->n_computed;
    b.block_table = s->block_table.data();
    b.n_blocks = (int32_t)s->block_table.size();
    bool is_last = s->n_computed + n == (int32_t)s->tokens.size();
    if (is_prefill && (s->flags & ENG_SEQ_PROMPT_LOGITS)) { // one row per token; the last one samples
        b.all_logits_row = batch_.n_logits;
        batch_.n_logits += n;
        b.logits_row = is_last ? batch_.n_logits - 1 : -1;
    } else {
        b.logits_row = is_last ? batch_.n_logits++ : -1;
    }
    batch_.tokens.insert(batch_.tokens.end(), s->tokens.begin() + s->n_computed, s->tokens.begin() + s->n_computed + n);
    batch_.seqs.push_back(b);
    entries_.push_back({s, n, is_prefill});
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
}

void Scheduler::postprocess(std::vector<int32_t> *events) {
    for (size_t e = 0; e < entries_.size(); e++) {
        Sequence *s = entries_[e].seq;
        s->n_computed += entries_[e].n_tokens;
        bm_->commit(*s);
        if (entries_[e].is_prefill) stats_.prefill_tokens += entries_[e].n_tokens;
        else stats_.decode_tokens++;
        const BatchSeq &bq = batch_.seqs[e];
        if (bq.all_logits_row >= 0 && bq.pos0 < s->n_prompt) // PROMPT_LOGITS: the chunk's prompt positions
            memcpy(&s->prompt_logits[(size_t)bq.pos0 * (size_t)cfg_.n_vocab],
                   &logits_[(size_t)bq.all_logits_row * (size_t)cfg_.n_vocab],
                   sizeof(float) * (size_t)std::min(bq.n_tokens, s->n_prompt - bq.pos0) * (size_t)cfg_.n_vocab);
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
        if (row >= 0)
            batch_.row_is_greedy[(size_t)row] =
                s->sampling.temperature <= 0 && !(s->flags & ENG_SEQ_KEEP_LOGITS) && s->mask.empty();
    }
    prepare_mm();
    int32_t st = backend_->forward(batch_, logits_.data());
    if (st < 0) {
        for (const Entry &e : entries_) finish(e.seq, ENG_FINISH_ERROR, events);
        return st;
    }
    postprocess(events);
    return ENG_STATUS_OK;
}

} // namespace maya
