/* argmax.cuh: greedy sampling on the device (the host sampler's argmax, lowest id on ties). */
#ifndef MAYA_CUDA_ARGMAX_CUH
#define MAYA_CUDA_ARGMAX_CUH

#include <cuda_runtime.h>
#include <stdint.h>

namespace maya {

/* out[r] = argmax of logits row r (V floats, rows contiguous), for r < n_rows. The lowest index wins
 * ties; NaNs never win (a row of only NaNs gives 0). Returns OK or BACKEND. */
int32_t argmax_rows(int32_t *out, const float *logits, int n_rows, int V, cudaStream_t st);

} // namespace maya

#endif
