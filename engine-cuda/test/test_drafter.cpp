/* test_drafter.cpp: MTP drafting with prompt lookup (scheduler.cpp propose_mtp, issue 35), on the demo
 * model (models/maya-demo: a trained MTP layer). Where the lookup is the better bet its draft goes in
 * instead of the MTP layer's (checked pass by pass against an independent lookup over the sequence's
 * tokens), the lookup's record is kept while the MTP layer drafts, and greedy tokens are identical to
 * decoding without drafts (MAYA_SPECULATIVE=mtp and auto run this drafter), alone and batched. */
#include <string.h>

#include <map>
#include <memory>
#include <vector>

#include "../include/engine.h"
#include "../src/backend.h"
#include "../src/kernels.h"
#include "../src/model.h"
#include "../src/scheduler.h"
#include "mtp_bed.h"
#include "test.h"

namespace {

std::string demo_dir() { return test_repo_root() + "/models/maya-demo"; }

/* Prompts that repeat a cycle of ids, ones that end inside a repeat of their first ids (lookup
 * matches) and ones that never repeat. The demo model rarely copies such ids, so most passes after
 * the first few have no lookup match. */
std::vector<std::vector<int32_t>> prompts() {
    std::vector<std::vector<int32_t>> out;
    for (int p = 0; p < 6; p++) {
        std::vector<int32_t> ids;
        for (int i = 0; i < 40; i++)
            ids.push_back(p % 3 == 0 ? 30 + p * 50 + (i % (6 + p)) * 11 : 20 + (i * 7 + p * 13) % 700);
        if (p % 3 == 1)
            for (int i = 0; i < 12; i++) ids.push_back(ids[(size_t)i]);
        out.push_back(ids);
    }
    return out;
}

/* The lookup the combined drafter uses: the tokens after the most recent earlier occurrence of the
 * last m tokens (m = 4 down to m_min: 3, or 2 where the MTP layer is turned down), at most k of them;
 * empty when none or fewer than min_take follow. */
std::vector<int32_t> lookup_of(const std::vector<int32_t> &t, int32_t k, int32_t m_min = 3, int32_t min_take = 2) {
    int32_t n = (int32_t)t.size();
    for (int32_t m = std::min(4, n - 1); m >= m_min; m--)
        for (int32_t j = n - m - 1; j >= 0; j--) {
            if (memcmp(&t[(size_t)j], &t[(size_t)(n - m)], (size_t)m * sizeof(int32_t)) != 0) continue;
            int32_t from = j + m, take = std::min(k, n - from);
            if (take < min_take) return {};
            return std::vector<int32_t>(t.begin() + from, t.begin() + from + take);
        }
    return {};
}

struct Pins {
    float lookup_accepted, lookup_rejected, mtp_accepted, mtp_rejected;
    // The MTP layer's first drafts' record (< 0: the same as its chained drafts', mtp_*).
    float mtp_first_accepted = -1, mtp_first_rejected = -1;
};

/* What a run_scheduler run ends with: the scheduler's counters and each sequence's tokens (its prompt
 * and all it generated). */
struct SchedulerEnd {
    maya::SchedulerStats stats;
    std::vector<std::vector<int32_t>> tokens;
};

/* Runs the prompts through a Scheduler on the demo model with MTP (mtp_lookup as given), each
 * sequence's records pinned before every step; checks every pass's draft with `check`. */
template <typename Check>
void run_scheduler(bool mtp_lookup, const Pins *pins, Check check, double mtp_cost = 0, SchedulerEnd *end = nullptr) {
    MtpBed bed;
    MtpBedConfig cfg;
    cfg.max_draft = 6;
    cfg.prefill_chunk = 64;
    cfg.n_ctx = 256;
    cfg.mtp_lookup = mtp_lookup;
    cfg.mtp_cost = mtp_cost;
    if (!bed.open(demo_dir(), cfg)) return;
    const int32_t max_draft = cfg.max_draft;
    maya::Scheduler &sched = bed.sched;
    const SpyBackend &spy = *bed.spy;
    std::vector<int32_t> ids;
    std::map<int32_t, std::vector<int32_t>> tokens; // by sequence id
    for (const auto &p : prompts()) {
        std::unique_ptr<maya::Sequence> s(new maya::Sequence());
        s->tokens = p;
        s->max_tokens = 40;
        int32_t id = -1;
        CHECK(sched.add(std::move(s), &id) == 0);
        ids.push_back(id);
        tokens[id] = p;
    }
    std::vector<int32_t> events;
    for (int step = 0; step < 2000 && (sched.n_running() > 0 || sched.n_waiting() > 0); step++) {
        events.clear();
        std::map<int32_t, std::vector<int32_t>> before; // each decoding sequence's tokens, by first block
        std::map<int32_t, const maya::Sequence *> seq_of;
        std::map<int32_t, int32_t> mtp_next; // the MTP layer's first draft for the pass, by first block
        for (int32_t id : ids) {
            maya::Sequence *s = const_cast<maya::Sequence *>(sched.find(id));
            if (!s) continue;
            if (pins) {
                s->lookup_accepted = pins->lookup_accepted;
                s->lookup_rejected = pins->lookup_rejected;
                s->spec_accepted = pins->mtp_accepted;
                s->spec_rejected = pins->mtp_rejected;
                bool is_first_pinned = pins->mtp_first_accepted >= 0;
                s->mtp_first_accepted = is_first_pinned ? pins->mtp_first_accepted : pins->mtp_accepted;
                s->mtp_first_rejected = is_first_pinned ? pins->mtp_first_rejected : pins->mtp_rejected;
            }
            if (!s->block_table.empty() && s->n_computed + 1 == (int32_t)s->tokens.size()) {
                before[s->block_table[0]] = s->tokens;
                seq_of[s->block_table[0]] = s;
                mtp_next[s->block_table[0]] = s->mtp_next;
            }
        }
        CHECK(sched.step(&events) == 0);
        for (size_t e = 0; e + 3 < events.size(); e += 4)
            if (events[e + 1] == ENG_EVENT_TOKEN) tokens[events[e]].push_back(events[e + 2]);
        for (const auto &b : before) {
            const maya::Sequence *s = sched.find(seq_of[b.first]->id);
            check(b.second, spy.drafts_of(b.first), s, max_draft, mtp_next[b.first]);
        }
    }
    CHECK(sched.n_running() == 0 && sched.n_waiting() == 0);
    if (!end) return;
    end->stats = sched.stats();
    for (int32_t id : ids) end->tokens.push_back(tokens[id]);
}

} // namespace

TEST(drafter_lookup_where_it_is_the_better_bet) {
    // The lookup's record at acceptance 1, the MTP layer's at 0: every pass with a lookup match of 3+
    // tokens carries exactly that lookup (cut to max_draft and the room left), the others the MTP
    // layer's draft.
    Pins pins = {1e6f, 0.0f, 0.0f, 1e6f};
    int looked_up = 0, mtp_drafted = 0;
    run_scheduler(true, &pins,
                  [&](const std::vector<int32_t> &tokens, const std::vector<int32_t> &draft, const maya::Sequence *,
                      int32_t max_draft, int32_t mtp_next) {
                      std::vector<int32_t> want = lookup_of(tokens, max_draft);
                      // (a 1-token room takes the MTP layer's token: the lookup drafts 2 or more)
                      if (!want.empty() && draft.size() >= 2) {
                          // the draft may be cut to the room max_tokens leaves, never otherwise changed
                          CHECK(draft.size() <= want.size());
                          CHECK(std::equal(draft.begin(), draft.end(), want.begin()));
                          looked_up++;
                      } else if (!draft.empty()) {
                          CHECK(draft[0] == mtp_next);
                          mtp_drafted++;
                      }
                  });
    fprintf(stderr, "  %d passes drafted from the lookup, %d from the MTP layer\n", looked_up, mtp_drafted);
    CHECK(looked_up >= 3);
    CHECK(mtp_drafted >= 10);
}

TEST(drafter_mtp_where_it_is_the_better_bet) {
    // The MTP layer's record at acceptance 1, the lookup's at 0: every draft is the MTP layer's (it
    // starts with the layer's prediction), also where a lookup matched.
    Pins pins = {0.0f, 1e6f, 1e6f, 0.0f};
    int drafted = 0, lookups_declined = 0;
    run_scheduler(true, &pins,
                  [&](const std::vector<int32_t> &tokens, const std::vector<int32_t> &draft, const maya::Sequence *,
                      int32_t max_draft, int32_t mtp_next) {
                      if (draft.empty()) return;
                      drafted++;
                      CHECK(draft[0] == mtp_next);
                      CHECK((int32_t)draft.size() <= max_draft);
                      if (!lookup_of(tokens, max_draft).empty()) lookups_declined++;
                  });
    fprintf(stderr, "  %d MTP-drafted passes (%d of them where a lookup matched)\n", drafted, lookups_declined);
    CHECK(drafted >= 20);
    CHECK(lookups_declined >= 3);
}

TEST(drafter_mtp_pass_cost_in_the_turn_down) {
    // The MTP layer's record pinned at acceptance 0.9. Free MTP passes: the MTP layer drafts on nearly
    // every decode pass, up to max_draft tokens. An MTP pass costing 0.95 generated tokens (more than
    // any drafted token is worth at 0.9): the layer drafts only the turn-down's probes, one token
    // every 16th pass; the lookup, which costs no MTP pass, still drafts where it matches, and then as
    // it does alone: from 2-token matches too, and single tokens (the lookup's record is pinned at 1);
    // a due probe comes before the lookup's draft.
    Pins pins = {1e6f, 0.0f, 9.0f, 1.0f};
    for (double cost : {0.0, 0.95}) {
        int passes = 0, mtp_passes = 0, longest_mtp = 0, short_lookups = 0;
        run_scheduler(
            true, &pins,
            [&](const std::vector<int32_t> &tokens, const std::vector<int32_t> &draft, const maya::Sequence *,
                int32_t max_draft, int32_t) {
                passes++;
                // Where the layer drafts nothing the lookup takes 2-token matches and 1-token drafts.
                std::vector<int32_t> lookup =
                    cost > 0 ? lookup_of(tokens, max_draft, 2, 1) : lookup_of(tokens, max_draft);
                bool is_lookup = !draft.empty() && draft.size() <= lookup.size() &&
                                 std::equal(draft.begin(), draft.end(), lookup.begin());
                if (is_lookup && lookup_of(tokens, max_draft).empty()) short_lookups++;
                if (draft.empty() || is_lookup) return;
                mtp_passes++;
                longest_mtp = std::max(longest_mtp, (int32_t)draft.size());
            },
            cost);
        fprintf(stderr,
                "  MTP pass cost %.2f: the MTP layer drafted on %d of %d decode passes, at most %d tokens; the lookup "
                "drafted from a 2-token match or 1 token on %d\n",
                cost, mtp_passes, passes, longest_mtp, short_lookups);
        CHECK(passes >= 100);
        if (cost == 0) CHECK(mtp_passes * 4 >= passes * 3 && longest_mtp >= 4 && short_lookups == 0);
        // ... and its probes keep coming while the lookup drafts (one pass in 16).
        if (cost > 0) CHECK(mtp_passes * 16 <= passes + 16 * 6 && longest_mtp <= 1 && short_lookups >= 5);
        if (cost > 0) CHECK(mtp_passes * 16 >= passes - 64);
    }
}

TEST(drafter_mtp_first_and_chained_drafts_apart) {
    // First drafts right 90% of the time, chained ones after them 20% (the demo model's layer on
    // held-out chat: 88.9% and 23.8% in PyTorch), an MTP pass costing 0.5 generated tokens: the first
    // draft pays (0.9 >= 0.5), a second does not (0.9 x 0.2 < 0.5), so the layer drafts one token a
    // pass; with chained drafts right 95% of the time it drafts more. (The chained drafts' record
    // alone, 0.2, would have it draft none but the probes.)
    for (float chained : {0.2f, 0.95f}) {
        Pins pins = {0.0f, 1e6f, chained * 10, (1 - chained) * 10, 9.0f, 1.0f};
        int passes = 0, drafted_1 = 0, drafted_more = 0;
        run_scheduler(
            true, &pins,
            [&](const std::vector<int32_t> &, const std::vector<int32_t> &draft, const maya::Sequence *, int32_t,
                int32_t) {
                passes++;
                if (draft.size() == 1) drafted_1++;
                if (draft.size() > 1) drafted_more++;
            },
            0.5);
        fprintf(stderr, "  chained drafts right %.0f%%: %d passes, %d drafted 1 token, %d more\n", chained * 100,
                passes, drafted_1, drafted_more);
        CHECK(passes >= 100);
        if (chained < 0.5f) CHECK(drafted_1 * 4 >= passes * 3 && drafted_more == 0);
        else CHECK(drafted_more * 4 >= passes * 3);
    }
}

TEST(drafter_mtp_layer_skipped_on_masked_passes) {
    // A constrained sequence drafts from the host (eng_seq_draft), never from the MTP layer while its
    // mask is set, so its decode passes do not run the layer; without a mask they do. The mask here
    // allows every token (the same tokens either way); the prompt still runs the layer.
    for (bool masked : {false, true}) {
        MtpBed bed;
        MtpBedConfig cfg;
        cfg.prefill_chunk = 64;
        cfg.n_ctx = 256;
        if (!bed.open(demo_dir(), cfg)) return;
        std::unique_ptr<maya::Sequence> seq(new maya::Sequence());
        seq->tokens = prompts()[1];
        const size_t n_prompt = seq->tokens.size();
        seq->max_tokens = 24;
        int32_t id = -1;
        CHECK(bed.sched.add(std::move(seq), &id) == 0);
        std::vector<uint32_t> all((size_t)(bed.model.cfg.n_vocab + 31) / 32, ~0u);
        if (bed.model.cfg.n_vocab % 32) all.back() = (1u << (bed.model.cfg.n_vocab % 32)) - 1;
        std::vector<int32_t> events;
        int64_t prompt_rows = -1;
        for (int step = 0; step < 200 && bed.sched.n_running() + bed.sched.n_waiting() > 0; step++) {
            maya::Sequence *s = const_cast<maya::Sequence *>(bed.sched.find(id));
            if (s && masked) s->mask = all;
            events.clear();
            CHECK(bed.sched.step(&events) == 0);
            if (prompt_rows < 0 && s && s->n_computed >= (int32_t)n_prompt) prompt_rows = bed.spy->mtp_rows;
        }
        int64_t decode_rows = bed.spy->mtp_rows - prompt_rows;
        fprintf(stderr, "  %s: the MTP layer ran over %lld prompt and %lld decode positions\n",
                masked ? "masked" : "unmasked", (long long)prompt_rows, (long long)decode_rows);
        CHECK(prompt_rows >= (int64_t)n_prompt - 1);
        if (masked) CHECK(decode_rows == 0);
        if (!masked) CHECK(decode_rows >= 10);
    }
}

TEST(drafter_lookup_record_kept_while_mtp_drafts) {
    // Without pins: the lookup's record moves from its prior (1 accepted, 1 rejected) on passes where
    // the MTP layer drafted and a lookup matched (checked against the tokens the pass produced).
    int moved = 0;
    run_scheduler(
        true, nullptr,
        [&](const std::vector<int32_t> &, const std::vector<int32_t> &, const maya::Sequence *s, int32_t, int) {
            if (s && (s->lookup_accepted != 1.0f || s->lookup_rejected != 1.0f)) moved++;
        });
    CHECK(moved > 0);
    // MTP-only (mtp_lookup off): the lookup's record is never touched.
    int touched = 0;
    run_scheduler(
        false, nullptr,
        [&](const std::vector<int32_t> &, const std::vector<int32_t> &, const maya::Sequence *s, int32_t, int) {
            if (s && (s->lookup_accepted != 1.0f || s->lookup_rejected != 1.0f)) touched++;
        });
    CHECK(touched == 0);
}

TEST(drafter_mtp_counters) {
    // The engine's counters of the MTP layer's drafts (ENG_STAT_MTP_*), against the drafts each pass
    // verified (the spy) and the tokens the run then produced: a draft's accepted tokens are the
    // longest prefix of it that the sequence went on to generate.
    for (bool mtp_lookup : {false, true}) {
        struct Drafted {
            std::vector<int32_t> before, drafts;
            bool is_mtp, is_lookup; // can be the MTP layer's (it starts with its prediction); the lookup's
        };
        std::vector<Drafted> seen;
        SchedulerEnd end;
        run_scheduler(
            mtp_lookup, nullptr,
            [&](const std::vector<int32_t> &before, const std::vector<int32_t> &drafts, const maya::Sequence *, int32_t,
                int mtp_next) {
                if (drafts.empty()) return;
                bool is_lookup = mtp_lookup && lookup_of(before, (int32_t)drafts.size(), 2, 1) == drafts;
                seen.push_back({before, drafts, drafts[0] == mtp_next, is_lookup});
            },
            0, &end);
        struct Counts {
            int64_t n = 0, first = 0, tokens = 0, accepted = 0;
        } all, mtp, surely_mtp; // every draft; those that can be the MTP layer's; those only it can be
        for (const Drafted &d : seen) {
            const std::vector<int32_t> *out = nullptr;
            for (const auto &t : end.tokens)
                if (t.size() >= d.before.size() && std::equal(d.before.begin(), d.before.end(), t.begin())) out = &t;
            CHECK(out != nullptr);
            if (!out) continue;
            size_t a = 0;
            while (a < d.drafts.size() && d.before.size() + a < out->size() &&
                   (*out)[d.before.size() + a] == d.drafts[a])
                a++;
            for (Counts *c : {&all, d.is_mtp ? &mtp : nullptr, d.is_mtp && !d.is_lookup ? &surely_mtp : nullptr}) {
                if (!c) continue;
                c->n++;
                c->first += a > 0;
                c->tokens += (int64_t)d.drafts.size();
                c->accepted += (int64_t)a;
            }
        }
        const maya::SchedulerStats &st = end.stats;
        CHECK(st.draft_tokens == all.tokens && st.draft_accepted == all.accepted);
        if (!mtp_lookup) {
            // MTP alone: every draft is the layer's, and starts with its prediction.
            CHECK(mtp.n == all.n);
            CHECK_MSG(
                st.mtp_drafts == all.n && st.mtp_drafts_accepted == all.first && st.mtp_draft_tokens == all.tokens &&
                    st.mtp_draft_accepted == all.accepted,
                "counted %lld drafts, %lld first accepted, %lld / %lld tokens; the engine %lld, %lld, %lld / %lld",
                (long long)all.n, (long long)all.first, (long long)all.accepted, (long long)all.tokens,
                (long long)st.mtp_drafts, (long long)st.mtp_drafts_accepted, (long long)st.mtp_draft_accepted,
                (long long)st.mtp_draft_tokens);
        } else {
            // With the lookup beside it: between the drafts only the layer can have made and those it can.
            CHECK(surely_mtp.n <= st.mtp_drafts && st.mtp_drafts <= mtp.n);
            CHECK(surely_mtp.first <= st.mtp_drafts_accepted && st.mtp_drafts_accepted <= mtp.first);
            CHECK(surely_mtp.tokens <= st.mtp_draft_tokens && st.mtp_draft_tokens <= mtp.tokens);
            CHECK(surely_mtp.accepted <= st.mtp_draft_accepted && st.mtp_draft_accepted <= mtp.accepted);
            CHECK(st.mtp_draft_tokens < all.tokens); // the lookup's drafts are not counted
        }
        CHECK(st.mtp_drafts > 0 && st.mtp_drafts_accepted > 0 && st.mtp_drafts_accepted < st.mtp_drafts);
        fprintf(stderr,
                "  %s: %lld MTP drafts, first token accepted in %lld; %lld / %lld tokens accepted (all drafts: "
                "%lld / %lld)\n",
                mtp_lookup ? "with lookup" : "alone", (long long)st.mtp_drafts, (long long)st.mtp_drafts_accepted,
                (long long)st.mtp_draft_accepted, (long long)st.mtp_draft_tokens, (long long)all.accepted,
                (long long)all.tokens);
    }
}

namespace {

struct Run : SpecCounts {
    std::vector<std::vector<int32_t>> tokens;
    int64_t spec = -1;
};

Run run_engine(int64_t spec, bool alone) {
    Run r;
    std::vector<std::vector<int32_t>> ps = prompts();
    r.tokens.resize(ps.size());
    int64_t p[ENG_PARAM_COUNT] = {0};
    p[ENG_PARAM_N_THREADS] = 2;
    p[ENG_PARAM_SPECULATIVE] = spec;
    p[ENG_PARAM_SPEC_MAX_DRAFT] = 6;
    p[ENG_PARAM_PREFILL_CHUNK] = 32;
    eng_ctx *ctx = nullptr;
    char msg[512] = "";
    int32_t st = test_ctx_create(demo_dir().c_str(), p, ENG_PARAM_COUNT, &ctx);
    eng_last_error(msg, sizeof msg);
    CHECK_MSG(st == 0 && ctx, "%s", msg);
    if (!ctx) return r;
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    r.spec = info[ENG_INFO_SPECULATIVE];
    auto go = [&](size_t from, size_t to) {
        std::map<int32_t, size_t> of;
        for (size_t i = from; i < to; i++) {
            int32_t id = -1;
            CHECK(eng_seq_add(ctx, ps[i].data(), (int32_t)ps[i].size(), nullptr, 0, 48, 0.0f, 1.0f, 0, 1, 0, &id) == 0);
            of[id] = i;
        }
        CHECK(step_until_finished(ctx, to - from,
                                  [&](int32_t sid, int32_t tok) { r.tokens[of[sid]].push_back(tok); }) == to - from);
    };
    if (alone)
        for (size_t i = 0; i < ps.size(); i++) go(i, i + 1);
    else go(0, ps.size());
    static_cast<SpecCounts &>(r) = close_counting(ctx);
    return r;
}

} // namespace

TEST(drafter_greedy_invariance_demo_model) {
    for (bool alone : {true, false}) {
        Run off = run_engine(ENG_SPEC_OFF, alone);
        for (int64_t spec : {(int64_t)ENG_SPEC_MTP, (int64_t)ENG_SPEC_AUTO}) {
            Run on = run_engine(spec, alone);
            CHECK(on.spec == ENG_SPEC_MTP);
            CHECK(on.tokens == off.tokens);
            CHECK(on.drafted > 0 && on.accepted > 0);
            CHECK(on.decode_tokens == off.decode_tokens);
            fprintf(stderr, "  %s, %s: %lld / %lld drafted tokens accepted, %.2f tokens per pass\n",
                    alone ? "alone" : "batched", spec == ENG_SPEC_MTP ? "mtp" : "auto", (long long)on.accepted,
                    (long long)on.drafted, (double)on.decode_tokens / (double)(on.passes > 0 ? on.passes : 1));
        }
    }
}
