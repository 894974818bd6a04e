/* cuda_api.h: the boundary between libmaya_engine.so and libmaya_engine_cuda.so.
 *
 * The CUDA backend is a separate shared library so that the engine builds and runs on machines
 * without nvcc, a GPU or the CUDA runtime; the engine dlopen()s it on request (cuda_loader.cpp).
 * Both sides are compiled from the same headers by the same host compiler in one build, and the
 * engine refuses a library whose layout stamp differs (a stale build). Errors cross the boundary
 * through CudaHost::set_error, which lands in the engine's thread-local last error.
 */
#ifndef MAYA_CUDA_API_H
#define MAYA_CUDA_API_H

#include <stdint.h>

#include "../backend.h" // defines: Backend, BackendConfig, Batch, Model

namespace maya {

/* Bump when the functions below change meaning. */
#define MAYA_CUDA_API_VERSION 2

/* Options the engine passes at creation, from its ENG_PARAM_CUDA_* parameters (flat, so the stamp
 * covers them). */
struct CudaOptions {
    int64_t kv_cap_bytes = 0;   // most device bytes for the KV cache; 0 = no cap beyond free memory
    int32_t device = 0;         // CUDA device ordinal
    int32_t tc_min_tokens = 16; // a matmul over at least this many tokens uses the tensor-core gemm
    int32_t use_graphs = 1;     // 1: decode steps are replayed as CUDA graphs; 0: each kernel launched
};

/* Layout stamp of every struct that crosses the boundary (by reference). */
constexpr uint64_t cuda_layout_stamp() {
    return (uint64_t)MAYA_CUDA_API_VERSION * 1000003ull ^ (uint64_t)sizeof(Model) * 7919ull ^
           (uint64_t)sizeof(ModelConfig) * 104729ull ^ (uint64_t)sizeof(LayerWeights) * 1299709ull ^
           (uint64_t)sizeof(Weight) * 15485863ull ^ (uint64_t)sizeof(BackendConfig) * 32452843ull ^
           (uint64_t)sizeof(Batch) * 49979687ull ^ (uint64_t)sizeof(BatchSeq) * 67867967ull ^
           (uint64_t)sizeof(CudaOptions) * 86028121ull;
}

struct CudaHost {
    /* Records status + message as the engine's last error; returns status. */
    int32_t (*set_error)(int32_t status, const char *msg);
};

} // namespace maya

extern "C" {
/* Layout stamp the library was built with (compare with maya::cuda_layout_stamp()). */
typedef uint64_t (*maya_cuda_stamp_fn)(void);
/* Number of usable CUDA devices (>= 0), or a negative status with the reason in why (len bytes). */
typedef int32_t (*maya_cuda_probe_fn)(char *why, int32_t len);
/* Creates the CUDA backend: uploads the model's weights and allocates the KV cache. cfg->n_blocks
 * is the wanted block count on input and is lowered to what device memory (and kv_cap_bytes)
 * holds. Returns OK, OUT_OF_MEMORY (naming model size and free memory), UNSUPPORTED (no device,
 * dtype) or BACKEND; details through host->set_error. */
typedef int32_t (*maya_cuda_backend_create_fn)(const maya::Model *model, maya::BackendConfig *cfg,
                                               const maya::CudaOptions *opt, const maya::CudaHost *host,
                                               maya::Backend **out);
}

#endif
