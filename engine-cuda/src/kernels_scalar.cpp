/* kernels_scalar.cpp: the portable kernels (baseline ISA) and the run-time choice between tables. */
#define KERNELS_NS scalar
#define KERNELS_TABLE kernels_scalar
#include "kernels_impl.h"

namespace maya {

const Kernels &kernels_select() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (kernels_avx2.simd == 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c"))
        return kernels_avx2;
#endif
    return kernels_scalar;
}

} // namespace maya
