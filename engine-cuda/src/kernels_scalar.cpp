/* kernels_scalar.cpp: the portable kernels (baseline ISA) and the run-time choice between tables. */
#define KERNELS_NS scalar
#define KERNELS_TABLE kernels_scalar
#include "kernels_impl.h"

#include "common.h" // defines: fail

namespace maya {

/* Tables this CPU can run, fastest last. Only the baseline-ISA file tests CPU features. */
extern const bool kernels_avx512_vnni;

static int supported(const Kernels **out) {
    int n = 0;
    out[n++] = &kernels_scalar;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    bool has_avx512 = has_avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                      (!kernels_avx512_vnni || __builtin_cpu_supports("avx512vnni"));
    if (has_avx2 && kernels_avx2.simd == ENG_SIMD_AVX2) out[n++] = &kernels_avx2;
    if (has_avx512 && kernels_avx512.simd == ENG_SIMD_AVX512) out[n++] = &kernels_avx512;
#endif
    return n;
}

int kernels_supported(const Kernels **out) { return supported(out); }

int32_t kernels_choose(int64_t simd, const Kernels **out) {
    const Kernels *t[3];
    int n = supported(t);
    if (simd == 0) {
        *out = t[n - 1];
        return ENG_STATUS_OK;
    }
    static const char *const names[] = {"scalar", "avx2", "avx512"}; // by ENG_SIMD_*
    int64_t path = simd - 1;                                         // ENG_PARAM_SIMD is 1 + ENG_SIMD_*
    if (path < ENG_SIMD_SCALAR || path > ENG_SIMD_AVX512)
        return fail(ENG_STATUS_INVALID_ARG,
                    "ENG_PARAM_SIMD must be 0 (fastest), 1 scalar, 2 avx2 or 3 avx512 (got %lld)", (long long)simd);
    for (int i = 0; i < n; i++)
        if (t[i]->simd == path) {
            *out = t[i];
            return ENG_STATUS_OK;
        }
    const char *want = names[path];
    return fail(ENG_STATUS_UNSUPPORTED, "kernel path %s: this CPU (or this build) lacks the %s kernels", want, want);
}

} // namespace maya
