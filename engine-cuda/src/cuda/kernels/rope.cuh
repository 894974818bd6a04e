/* rope.cuh: rotary position embedding of q and k, then k and v written to their paged KV slots. */
#ifndef MAYA_CUDA_ROPE_CUH
#define MAYA_CUDA_ROPE_CUH

#include <cuda_runtime.h>
#include <stdint.h>

namespace maya {

struct RopeArgs {
    float *q;               // (T, H*D), rotated in place
    float *k;               // (T, Hkv*D), rotated in place
    const float *v;         // (T, Hkv*D)
    float *kcache, *vcache; // this layer: (n_blocks, Hkv, bs, D) each
    const int32_t *tok_pos; // (T) position of each token
    const int32_t *tok_bt;  // (T) offset of its sequence's block table in bt
    const int32_t *bt;      // flat block tables
    const float *inv_freq;  // (rotary_dim / 2)
    int T, H, Hkv, D, rotary_dim, bs;
    bool is_interleaved; // GLM-4 pairs (2i, 2i+1); else neox halves (i, i + rotary_dim/2)
};

/* Returns OK or BACKEND. */
int32_t rope_write_kv(const RopeArgs &a, cudaStream_t st);

} // namespace maya

#endif
