/* test_weight_placement.cpp: model_place_weights copies the matrices into the huge-page arena
 * exactly (same bytes, aliases kept, Q8 scales with them) or leaves them when over budget; and the
 * engine gives the same logits either way. */
#include <stdlib.h>
#include <string.h>

#include <string>

#include "../include/engine.h"
#include "../src/model.h"
#include "model_writer.h"
#include "test.h"

using namespace maya;

static std::string tied_model_dir(const char *tag) {
    RandomModelSpec spec;
    spec.arch = "Qwen3ForCausalLM";
    spec.tied = true;
    spec.seed = 7;
    std::string dir = test_tmpdir(tag);
    CHECK(write_random_model(dir, spec));
    return dir;
}

static bool inside(const WeightArena &a, const Model &m, const void *p) {
    (void)m;
    const char *base = (const char *)m.embed.data; // placed: the first matrix opens the arena
    return a.is_used() && (const char *)p >= base && (const char *)p < base + a.size();
}

TEST(weight_placement_copies_exactly_and_keeps_aliases) {
    std::string dir = tied_model_dir("place");
    Model ref, m;
    CHECK(model_load(dir, &ref) == 0);
    CHECK(model_load(dir, &m) == 0);
    bool placed = true;
    // Over budget: nothing moves.
    CHECK(model_place_weights(&m, 16, &placed) == 0);
    CHECK(!placed && !m.arena.is_used());
    CHECK(model_place_weights(&m, 1LL << 40, &placed) == 0);
    CHECK(placed && m.arena.is_used());
    CHECK(m.lm_head.data == m.embed.data); // tied embeddings stay one matrix
    const Weight *pairs[][2] = {{&ref.embed, &m.embed},
                                {&ref.layers[1].wk, &m.layers[1].wk},
                                {&ref.layers[1].w_down, &m.layers[1].w_down},
                                {&ref.layers[0].wo, &m.layers[0].wo}};
    for (auto &p : pairs) {
        CHECK(inside(m.arena, m, p[1]->data));
        CHECK(p[0]->dtype == p[1]->dtype && p[0]->rows == p[1]->rows && p[0]->cols == p[1]->cols);
        size_t n = (size_t)p[0]->rows * (size_t)p[0]->cols * dtype_size(p[0]->dtype);
        CHECK(memcmp(p[0]->data, p[1]->data, n) == 0);
    }
    const void *before = m.layers[0].wq.data;
    CHECK(model_place_weights(&m, 1LL << 40, &placed) == 0); // idempotent
    CHECK(placed && m.layers[0].wq.data == before);
}

TEST(weight_placement_moves_q8_weights_and_scales) {
    std::string dir = tied_model_dir("place-q8");
    Model ref, m;
    ref.is_q8 = m.is_q8 = true;
    CHECK(model_load(dir, &ref) == 0);
    CHECK(model_load(dir, &m) == 0);
    CHECK(m.has_q8() && m.layers[0].wq.dtype == DT_Q8);
    bool placed = false;
    CHECK(model_place_weights(&m, 1LL << 40, &placed) == 0);
    CHECK(placed && m.has_q8() && m.q8.empty()); // the Q8 buffers were released
    const Weight &a = ref.layers[1].w_up, &b = m.layers[1].w_up;
    CHECK(inside(m.arena, m, b.data) && inside(m.arena, m, b.scale));
    CHECK(memcmp(a.data, b.data, (size_t)a.rows * a.cols) == 0);
    CHECK(memcmp(a.scale, b.scale, (size_t)a.rows * (a.cols / 32) * sizeof(float)) == 0);
}

/* Greedy decode of 8 tokens; the logits at every sampled position, appended. */
static void run_once(const std::string &dir, int64_t weight_copy, std::vector<float> *logits,
                     std::vector<int32_t> *toks) {
    int64_t params[ENG_PARAM_COUNT] = {0};
    params[ENG_PARAM_N_THREADS] = 2;
    params[ENG_PARAM_BACKEND] = ENG_BACKEND_CPU;
    params[ENG_PARAM_WEIGHT_COPY] = weight_copy;
    eng_ctx *ctx = nullptr;
    CHECK(test_ctx_create(dir.c_str(), params, ENG_PARAM_COUNT, &ctx) == 0);
    if (!ctx) return;
    int32_t prompt[5] = {3, 9, 27, 11, 40}, id;
    CHECK(eng_seq_add(ctx, prompt, 5, nullptr, 0, 8, 0.0f, 1.0f, 0, 0, ENG_SEQ_KEEP_LOGITS, &id) == 0);
    int32_t ev[64];
    std::vector<float> buf(4096);
    for (int done = 0; !done;) {
        int n = eng_step(ctx, ev, 16);
        CHECK(n >= 0);
        if (n < 0) break;
        for (int i = 0; i < n; i++) {
            if (ev[i * 4 + 1] == ENG_EVENT_TOKEN) {
                toks->push_back(ev[i * 4 + 2]);
                int32_t V = eng_seq_logits(ctx, id, buf.data(), (int32_t)buf.size());
                CHECK(V > 0);
                if (V > 0) logits->insert(logits->end(), buf.begin(), buf.begin() + V);
            }
            if (ev[i * 4 + 1] == ENG_EVENT_FINISH) done = 1;
        }
    }
    eng_ctx_free(ctx);
}

TEST(weight_placement_same_tokens_with_and_without_the_copy) {
    std::string dir = tied_model_dir("place-e2e");
    std::vector<float> la, lb;
    std::vector<int32_t> ta, tb;
    run_once(dir, 2, &la, &ta); // ENG_PARAM_WEIGHT_COPY 2: kept in the checkpoint mapping
    run_once(dir, 0, &lb, &tb); // default: copied into huge pages when they fit
    CHECK(ta.size() == 8 && ta == tb);
    CHECK(!la.empty() && la.size() == lb.size() && memcmp(la.data(), lb.data(), la.size() * sizeof(float)) == 0);
}

TEST(fp8_nan_scan_marks_only_matrices_without_nan_bytes) {
    Model m;
    std::vector<uint8_t> clean(40 * 64), dirty(40 * 64);
    for (size_t i = 0; i < clean.size(); i++)
        clean[i] = dirty[i] = (uint8_t)(i * 37 % 251) == 0x7F ? 0x7E : (uint8_t)(i * 37 % 251);
    for (uint8_t &b : clean)
        if ((b & 0x7F) == 0x7F) b ^= 1;
    dirty = clean;
    dirty[1234] = 0xFF; // -NaN
    m.embed = Weight{clean.data(), DT_F8_E4M3, 40, 64, nullptr};
    m.lm_head = Weight{dirty.data(), DT_F8_E4M3, 40, 64, nullptr};
    model_check_f8(&m);
    CHECK(m.embed.is_f8_finite);
    CHECK(!m.lm_head.is_f8_finite);
    dirty[1234] = 0x7F; // +NaN
    m.lm_head.is_f8_finite = false;
    model_check_f8(&m);
    CHECK(!m.lm_head.is_f8_finite);
}
