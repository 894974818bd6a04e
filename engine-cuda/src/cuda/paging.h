/* paging.h: index math of the paged KV cache and of split attention, shared by the CUDA kernels
 * and host code (and tested on the host: engine-cuda/test/test_cuda_paging.cpp).
 *
 * KV layout per layer, as the CPU backend's: K then V, each (n_blocks, Hkv, bs, D) f32; a token at
 * position pos of a sequence lives in block block_table[pos / bs], row pos % bs.
 */
#ifndef MAYA_CUDA_PAGING_H
#define MAYA_CUDA_PAGING_H

#include <stdint.h>

#if defined(__CUDACC__)
#define MAYA_HD __host__ __device__ __forceinline__
#else
#define MAYA_HD inline
#endif

namespace maya {

/* Float offset of (position pos, kv head g, dim 0) inside one layer's K (or V) cache. */
MAYA_HD int64_t kv_offset(const int32_t *block_table, int32_t pos, int32_t bs, int32_t Hkv, int32_t g, int32_t D) {
    int64_t blk = block_table[pos / bs];
    return ((blk * Hkv + g) * bs + pos % bs) * (int64_t)D;
}

/* Split attention (flash-decoding): n positions are cut into at most n_split pieces of whole
 * chunks of `chunk` positions; split s covers [*j0, *j1) (empty when s is past the last piece).
 * Returns the number of non-empty pieces. */
MAYA_HD int32_t split_range(int32_t n, int32_t n_split, int32_t chunk, int32_t s, int32_t *j0, int32_t *j1) {
    int32_t n_chunks = (n + chunk - 1) / chunk;
    int32_t per = (n_chunks + n_split - 1) / n_split; // chunks per piece
    int32_t used = per > 0 ? (n_chunks + per - 1) / per : 0;
    int32_t a = s * per * chunk, b = a + per * chunk;
    *j0 = a < n ? a : n;
    *j1 = b < n ? b : n;
    return used;
}

} // namespace maya

#endif
