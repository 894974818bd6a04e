/* moe_router.cpp: see moe_router.h. */
#include "moe_router.h"

#include <math.h>

#include <utility>

namespace maya {

void moe_route(const ModelConfig &c, const float *bias, const float *logits, float *scratch, int32_t *ids,
               float *weights) {
    int E = c.n_expert, K = c.n_expert_used, G = c.n_group, per = E / G;
    float *score = scratch, *choice = score + E, *gscore = choice + E;
    if (c.is_softmax_router) { // Qwen3-MoE: softmax over all experts (float32, max subtracted)
        float mx = -INFINITY, sum = 0;
        for (int e = 0; e < E; e++) mx = logits[e] > mx ? logits[e] : mx;
        for (int e = 0; e < E; e++) {
            score[e] = expf(logits[e] - mx);
            sum += score[e];
        }
        for (int e = 0; e < E; e++) {
            score[e] /= sum;
            choice[e] = score[e];
        }
    } else {
        for (int e = 0; e < E; e++) {
            score[e] = 1.0f / (1.0f + expf(-logits[e]));
            choice[e] = score[e] + bias[e];
        }
    }
    if (G > 1) {
        for (int g = 0; g < G; g++) {
            float b1 = -INFINITY, b2 = -INFINITY;
            for (int e = g * per; e < (g + 1) * per; e++) {
                if (choice[e] > b1) {
                    b2 = b1;
                    b1 = choice[e];
                } else if (choice[e] > b2) b2 = choice[e];
            }
            gscore[g] = b1 + b2;
        }
        for (int n = 0; n < c.topk_group; n++) { // keep the best groups: mark them +inf
            int best = -1;
            for (int g = 0; g < G; g++)
                if (gscore[g] != INFINITY && (best < 0 || gscore[g] > gscore[best])) best = g;
            gscore[best] = INFINITY;
        }
        for (int g = 0; g < G; g++)
            if (gscore[g] != INFINITY)
                for (int e = g * per; e < (g + 1) * per; e++) choice[e] = 0.0f;
    }
    for (int j = 0; j < K; j++) {
        int best = -1;
        for (int e = 0; e < E; e++)
            if (choice[e] != -INFINITY && (best < 0 || choice[e] > choice[best])) best = e;
        ids[j] = best;
        choice[best] = -INFINITY;
    }
    for (int j = 1; j < K; j++) // increasing id: a token sums its experts in expert order
        for (int i = j; i > 0 && ids[i] < ids[i - 1]; i--) std::swap(ids[i], ids[i - 1]);
    float sum = 0;
    for (int j = 0; j < K; j++) sum += score[ids[j]];
    for (int j = 0; j < K; j++)
        weights[j] = (c.is_norm_topk ? score[ids[j]] / (sum + 1e-20f) : score[ids[j]]) * c.routed_scale;
}

} // namespace maya
