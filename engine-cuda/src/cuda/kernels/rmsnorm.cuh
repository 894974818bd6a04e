/* rmsnorm.cuh: RMSNorm of rows (also per head: rows = T*H, n = D), optionally gathered. */
#ifndef MAYA_CUDA_RMSNORM_CUH
#define MAYA_CUDA_RMSNORM_CUH

#include <cuda_runtime.h>
#include <stdint.h>

namespace maya {

/* out[r] = x[src(r)] / sqrt(mean(x[src(r)]^2) + eps) * w, for r < n_rows; rows are n floats with
 * strides ld_out / ld_x; src(r) = rows ? rows[r] : r (device array). out may equal x.
 * Returns OK or BACKEND. */
int32_t rmsnorm_rows(float *out, int ld_out, const float *x, int ld_x, const int32_t *rows, const float *w, int n_rows,
                     int n, float eps, cudaStream_t st);

/* The residual step between blocks, fused (one read of each row): for each of T rows,
 * h' = post_w ? rmsnorm(h) * post_w : h;  x += h';  h = next_w ? rmsnorm(x) * next_w : (untouched).
 * x, h: (T, n). post_w / next_w: (n) or null. Returns OK or BACKEND. */
int32_t add_rmsnorm_rows(float *x, float *h, const float *post_w, const float *next_w, int T, int n, float eps,
                         cudaStream_t st);

} // namespace maya

#endif
