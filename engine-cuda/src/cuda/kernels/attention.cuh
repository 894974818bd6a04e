/* attention.cuh: causal attention over the paged KV cache, for prefill and decode tokens alike. */
#ifndef MAYA_CUDA_ATTENTION_CUH
#define MAYA_CUDA_ATTENTION_CUH

#include <cuda_runtime.h>
#include <stdint.h>

namespace maya {

/* Positions per shared-memory tile (and the unit in which splits cut the KV length). */
constexpr int kAttnTile = 32;

struct AttnArgs {
    const float *q;               // (T, H*D), already rotated
    float *out;                   // (T, H*D)
    const float *kcache, *vcache; // this layer: (n_blocks, Hkv, bs, D) each
    const int32_t *tok_pos;       // (T) token t attends positions [0, tok_pos[t]]
    const int32_t *tok_bt;        // (T) offset of its sequence's block table in bt
    const int32_t *bt;            // flat block tables
    float *o_part;                // (n_split, T, H, D) unnormalised partial outputs (n_split > 1)
    float *ml_part;               // (n_split, T, H, 2) running max and sum of each partial
    int T, H, Hkv, D, bs, n_split;
    float scale;
};

/* Shared memory one block needs (bytes). */
size_t attention_smem_bytes(int H, int Hkv, int D);
/* Raises the kernel's dynamic shared memory limit for this shape. Returns OK, UNSUPPORTED
 * (the shape needs more than the device has) or BACKEND. */
int32_t attention_prepare(int H, int Hkv, int D, size_t smem_limit);
/* n_split == 1: one pass; > 1: flash-decoding over n_split pieces of the KV length, then a combine.
 * Returns OK or BACKEND. */
int32_t attention(const AttnArgs &a, cudaStream_t st);

} // namespace maya

#endif
