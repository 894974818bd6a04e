/* test_moe_router.cpp: moe_route on hand-worked cases: group-limited choice, the correction bias
 * choosing but not weighting, norm_topk_prob and routed_scaling_factor, and transformers'
 * masked_fill(0.0) of dropped groups (which beats negative choices). */
#include <math.h>

#include <vector>

#include "../src/moe_router.h"
#include "test.h"

using namespace maya;

static float logit(float p) { return logf(p / (1 - p)); }

TEST(moe_router_hand_worked) {
    ModelConfig c;
    c.n_expert = 8;
    c.n_expert_used = 3;
    c.n_group = 4;
    c.topk_group = 2;
    c.routed_scale = 2.5f;
    c.is_norm_topk = true;
    // scores 0.9 0.1 | 0.8 0.75 | 0.2 0.3 | 0.6 0.85; bias +0.85 on expert 1 -> choice 0.95.
    // Groups (sum of both): 1.85, 1.55, 0.5, 1.45 -> keep 0 and 1 (expert 7, 0.85, is dropped).
    float p[8] = {0.9f, 0.1f, 0.8f, 0.75f, 0.2f, 0.3f, 0.6f, 0.85f}, logits[8], bias[8] = {0, 0.85f, 0, 0, 0, 0, 0, 0};
    for (int e = 0; e < 8; e++) logits[e] = logit(p[e]);
    std::vector<float> scratch(2 * 8 + 4);
    int32_t ids[3];
    float w[3];
    moe_route(c, bias, logits, scratch.data(), ids, w);
    CHECK(ids[0] == 0 && ids[1] == 1 && ids[2] == 2);
    // Weights are the scores 0.9, 0.1, 0.8 (not the biased choice), / 1.8, x 2.5.
    CHECK(fabsf(w[0] - 1.25f) < 1e-5f && fabsf(w[1] - 0.1f / 1.8f * 2.5f) < 1e-5f &&
          fabsf(w[2] - 0.8f / 1.8f * 2.5f) < 1e-5f);
    c.is_norm_topk = false;
    moe_route(c, bias, logits, scratch.data(), ids, w);
    CHECK(fabsf(w[0] - 0.9f * 2.5f) < 1e-5f && fabsf(w[1] - 0.1f * 2.5f) < 1e-5f);
    c.n_group = 1; // no group limit: expert 7 (0.85) beats expert 2 (0.8)
    c.topk_group = 1;
    moe_route(c, bias, logits, scratch.data(), ids, w);
    CHECK(ids[0] == 0 && ids[1] == 1 && ids[2] == 7);
}

TEST(moe_router_dropped_groups_read_zero) {
    ModelConfig c;
    c.n_expert = 4;
    c.n_expert_used = 3;
    c.n_group = 2;
    c.topk_group = 1;
    c.routed_scale = 1.0f;
    // All scores 0.5; biases make the kept group's choices negative (-0.4, -0.3): the dropped
    // experts' 0.0 then rank first, ties to the lower id, as transformers' masked_fill(0.0) gives.
    float logits[4] = {0, 0, 0, 0}, bias[4] = {-0.9f, -0.8f, -1.0f, -1.0f}, w[3];
    std::vector<float> scratch(2 * 4 + 2);
    int32_t ids[3];
    moe_route(c, bias, logits, scratch.data(), ids, w);
    CHECK(ids[0] == 1 && ids[1] == 2 && ids[2] == 3);
    CHECK(fabsf(w[0] - 1.0f / 3) < 1e-6f && fabsf(w[2] - 1.0f / 3) < 1e-6f);
}
