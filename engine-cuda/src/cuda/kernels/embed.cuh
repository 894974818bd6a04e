/* embed.cuh: token embedding lookup (rows of the stored table widened to f32). */
#ifndef MAYA_CUDA_EMBED_CUH
#define MAYA_CUDA_EMBED_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "../../checkpoint.h" // defines: DType

namespace maya {

/* x (T, C) f32 <- table (V, C) rows tokens (T, device). Returns OK or BACKEND. */
int32_t embed_rows(float *x, const void *table, DType dt, const int32_t *tokens, int T, int C, cudaStream_t st);

} // namespace maya

#endif
