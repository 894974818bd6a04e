/* cuda_common.cuh: error recording and small device helpers shared by the CUDA backend's files.
 *
 * cuda_fail() formats a message, hands it to the engine (CudaHost::set_error) and returns the
 * status; CUDA_CHECK turns a failed runtime call into ENG_STATUS_BACKEND (OUT_OF_MEMORY for
 * cudaErrorMemoryAllocation) with file:line and the CUDA error text. Nothing here prints or exits.
 */
#ifndef MAYA_CUDA_COMMON_CUH
#define MAYA_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "../../include/engine.h" // defines: ENG_STATUS_*

namespace maya {

int32_t cuda_fail(int32_t status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Maps a CUDA error to a status and records "<what> at file:line: <cuda text>". */
int32_t cuda_error(cudaError_t e, const char *what, const char *file, int line);

#define CUDA_CHECK(call)                                                                 \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) return ::maya::cuda_error(e_, #call, __FILE__, __LINE__); \
    } while (0)

/* A kernel launch: the launch error (bad configuration) checked at once; faults surface at the
 * next synchronising call, which is checked too. */
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#define CUDA_TRY(expr)           \
    do {                         \
        int32_t st_ = (expr);    \
        if (st_ < 0) return st_; \
    } while (0)

inline int ceil_div(int64_t a, int64_t b) { return (int)((a + b - 1) / b); }

/* Stored weight element -> f32, exactly as the CPU's row_to_f32 (bf16: the high half of an f32). */
__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

} // namespace maya

#endif
