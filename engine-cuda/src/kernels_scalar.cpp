/* kernels_scalar.cpp: the portable kernels (baseline ISA) and the run-time choice between tables. */
#define KERNELS_NS scalar
#define KERNELS_TABLE kernels_scalar
#include "kernels_impl.h"

#include <stdlib.h>
#include <string.h>

namespace maya {

const Kernels &kernels_select() {
#if defined(__x86_64__) || defined(__i386__)
    const char *cap = getenv("MAYA_ENGINE_SIMD");
    bool is_forced_scalar = cap && !strcmp(cap, "scalar");
    __builtin_cpu_init();
    bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    if (!is_forced_scalar && kernels_avx2.simd == 1 && has_avx2) return kernels_avx2;
#endif
    return kernels_scalar;
}

} // namespace maya
