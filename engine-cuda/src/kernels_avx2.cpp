/* kernels_avx2.cpp: the kernels built with -mavx2 -mfma -mf16c (see kernels.h). */
#if defined(__x86_64__) && !defined(__AVX2__)
#error "kernels_avx2.cpp must be compiled with -mavx2 -mfma -mf16c"
#endif
#define KERNELS_NS avx2
#define KERNELS_TABLE kernels_avx2
#include "kernels_impl.h"
