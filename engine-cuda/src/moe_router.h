/* moe_router.h: expert choice of the GLM-4.5 / DeepSeek-V3 router for one token (host code, shared
 * by the backends).
 *
 * Semantics of transformers' DeepseekV3TopkRouter (= Glm4MoeTopkRouter): scores = sigmoid(logits);
 * choice = scores + e_score_correction_bias; a group's score is the sum of its two best choices;
 * the topk_group best groups stay and every other expert's choice becomes 0 (masked_fill 0.0, not
 * -inf); the K best choices are the experts; their weights are the scores (the bias only selects),
 * divided by (sum + 1e-20) when norm_topk_prob, times routed_scaling_factor. Ties go to the lower
 * index (group or expert).
 * Qwen3-MoE (is_softmax_router, transformers' Qwen3MoeSparseMoeBlock): scores = softmax(logits) over
 * all experts, no bias or groups; the K best, divided by their sum when norm_topk_prob.
 */
#ifndef MAYA_MOE_ROUTER_H
#define MAYA_MOE_ROUTER_H

#include <stdint.h>

#include "model.h" // defines: ModelConfig

namespace maya {

/* logits, bias: (E); scratch: 2E + n_group floats. Writes ids (K, increasing expert id) and their
 * weights (K). */
void moe_route(const ModelConfig &c, const float *bias, const float *logits, float *scratch, int32_t *ids,
               float *weights);

} // namespace maya

#endif
