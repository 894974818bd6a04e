/* kernels_avx512.cpp: the kernels built with -mavx512f -mavx512bw -mavx512vl -mavx512dq (plus the
 * AVX2 set) (see kernels.h). */
#if defined(__x86_64__) && \
    !(defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__))
#error "kernels_avx512.cpp must be compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma -mf16c"
#endif
// GCC 12's _mm512_reduce_* / extract intrinsics start from _mm*_undefined_*: a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#define KERNELS_NS avx512
#define KERNELS_TABLE kernels_avx512
#include "kernels_impl.h"

namespace maya {
/* Built with VNNI (vpdpbusd for the Q8 dot products): then the CPU must have it too. */
extern const bool kernels_avx512_vnni;
#if defined(__AVX512VNNI__)
const bool kernels_avx512_vnni = true;
#else
const bool kernels_avx512_vnni = false;
#endif
} // namespace maya
