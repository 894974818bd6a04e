/* cuda_entry.cu: libmaya_engine_cuda.so's exported entry points (cuda_api.h) and the error hand-off
 * to the engine (cuda_fail / cuda_error, declared in cuda_common.cuh). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <new>

#include "cuda_backend.cuh" // defines: CudaBackend, CudaHost, cuda_layout_stamp

namespace maya {

static const CudaHost *g_host = nullptr;

int32_t cuda_fail(int32_t status, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return g_host && g_host->set_error ? g_host->set_error(status, buf) : status;
}

int32_t cuda_error(cudaError_t e, const char *what, const char *file, int line) {
    const char *base = strrchr(file, '/');
    int32_t st = e == cudaErrorMemoryAllocation ? ENG_STATUS_OUT_OF_MEMORY : ENG_STATUS_BACKEND;
    return cuda_fail(st, "CUDA error at %s:%d (%s): %s (%s)", base ? base + 1 : file, line, what, cudaGetErrorString(e),
                     cudaGetErrorName(e));
}

} // namespace maya

using namespace maya;

extern "C" {

__attribute__((visibility("default"))) uint64_t maya_cuda_stamp(void) { return cuda_layout_stamp(); }

__attribute__((visibility("default"))) int32_t maya_cuda_probe(char *why, int32_t len) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        if (why && len > 0)
            snprintf(why, (size_t)len, "no usable CUDA device: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        return ENG_STATUS_UNSUPPORTED;
    }
    if (n == 0 && why && len > 0) snprintf(why, (size_t)len, "no CUDA device");
    return n;
}

__attribute__((visibility("default"))) int32_t maya_cuda_backend_create(const Model *model, BackendConfig *cfg,
                                                                        const CudaOptions *opt, const CudaHost *host,
                                                                        Backend **out) {
    g_host = host;
    *out = nullptr;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
        return cuda_fail(ENG_STATUS_UNSUPPORTED,
                         "the CUDA backend needs an NVIDIA GPU and its driver; cudaGetDeviceCount: %s",
                         e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
    if (opt->device < 0 || opt->device >= n)
        return cuda_fail(ENG_STATUS_INVALID_ARG, "CUDA device %d does not exist (%d present)", opt->device, n);
    CudaBackend *b = new (std::nothrow) CudaBackend(*model);
    if (!b) return cuda_fail(ENG_STATUS_OUT_OF_MEMORY, "out of host memory");
    int32_t st;
    try {
        st = b->init(cfg, *opt);
    } catch (const std::bad_alloc &) {
        st = cuda_fail(ENG_STATUS_OUT_OF_MEMORY, "out of host memory while creating the CUDA backend");
    }
    if (st < 0) {
        delete b;
        return st;
    }
    *out = b;
    return ENG_STATUS_OK;
}

} // extern "C"
