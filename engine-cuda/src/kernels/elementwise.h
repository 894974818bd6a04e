/* kernels/elementwise.h: the vector kernels of one row: dot, axpy, scale, RMSNorm and
 * SiLU(gate) * up.
 */
#ifndef MAYA_KERNELS_ELEMENTWISE_H
#define MAYA_KERNELS_ELEMENTWISE_H

#include "base.h" // defines: vecw, hsum, vw_exp

namespace maya {
namespace KERNELS_NS {

static float dot(const float *a, const float *b, int n) {
    int i = 0;
    float s = 0;
#ifdef KERNELS_VECTOR
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    s = hsum(_mm256_add_ps(acc0, acc1));
#endif
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

static void axpy(float *y, float a, const float *x, int n) {
    int i = 0;
#ifdef KERNELS_VECTOR
    __m256 av = _mm256_set1_ps(a);
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
#endif
    for (; i < n; i++) y[i] += a * x[i];
}

static void scale(float *y, float a, int n) {
    for (int i = 0; i < n; i++) y[i] *= a;
}

static void rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    float ss = dot(x, x, n);
    float inv = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * inv * w[i];
}

static void silu_mul(float *out, const float *gate, const float *up, int n) {
    int i = 0;
#ifdef KERNELS_VECTOR
    for (; i + VW <= n; i += VW) {
        vecw g = vw_loadx(gate + i);
        vecw e = vw_exp(vw_sub(vw_zero(), g));
        vw_store(out + i, vw_mul(vw_div(g, vw_add(vw_set1(1.0f), e)), vw_loadx(up + i)));
    }
#endif
    for (; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

} // namespace KERNELS_NS
} // namespace maya

#endif
