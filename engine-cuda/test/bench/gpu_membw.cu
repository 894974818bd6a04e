/* gpu_membw.cu: device memory read bandwidth, the ceiling of the decode roofline in
 * `npm run bench:engine -- --backend cuda`. Each thread reads 16-byte vectors (as the decode GEMV
 * does) in a grid-stride loop over a buffer far larger than L2; the best of `reps` timed passes
 * (CUDA events) is printed in GB/s. Usage: gpu_membw [MiB=4096] [reps=20]. Exit 1 on any CUDA error.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

static __global__ void read_kernel(const uint4 *p, size_t n, unsigned *sink) {
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = __ldg(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) *sink = acc; // keeps the loads; practically never stores
}

#define CK(x)                                                                  \
    do {                                                                       \
        cudaError_t e = (x);                                                   \
        if (e != cudaSuccess) {                                                \
            fprintf(stderr, "gpu_membw: %s: %s\n", #x, cudaGetErrorString(e)); \
            return 1;                                                          \
        }                                                                      \
    } while (0)

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 4096;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    size_t bytes = mib << 20, n = bytes / sizeof(uint4);
    uint4 *p = nullptr;
    unsigned *sink = nullptr;
    CK(cudaMalloc(&p, bytes));
    CK(cudaMalloc(&sink, sizeof(unsigned)));
    CK(cudaMemset(p, 1, bytes));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int blocks = prop.multiProcessorCount * 4;
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    float best = 1e30f;
    for (int r = 0; r < reps + 2; r++) {
        CK(cudaEventRecord(a));
        read_kernel<<<blocks, 512>>>(p, n, sink);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r >= 2 && ms < best) best = ms; // two warm-up passes
    }
    printf("%.1f\n", (double)bytes / (best * 1e-3) / 1e9);
    return 0;
}
