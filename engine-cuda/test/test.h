/* test.h: a minimal test runner for the engine's C-level tests (llm.c style checks).
 *
 * TEST(name) registers a function; CHECK(cond) and CHECK_NEAR(a, b, tol) record failures and
 * keep going; main (test_main.cpp) runs every test, or those whose name contains argv[1].
 * Tests link the library's objects compiled with -DTESTING and include internal headers.
 */
#ifndef MAYA_TEST_H
#define MAYA_TEST_H

#include <math.h>
#include <stdio.h>
#include <string>

#include "../include/engine.h"

struct TestCase {
    const char *name;
    void (*fn)();
};
void test_register(const char *name, void (*fn)());
extern int g_test_failures;
/* A fresh empty directory under $TMPDIR for the current test. */
std::string test_tmpdir(const char *tag);
/* Repository root (for test/fixtures). */
std::string test_repo_root();
/* The kernel path the harness runs (ENG_PARAM_SIMD code from $MAYA_ENGINE_SIMD: 0 fastest, else 1 + ENG_SIMD_*). */
int64_t test_simd();
/* eng_ctx_create with the harness's engine settings where params leave them unset (0). The library
 * reads no environment; the harness does, as the server's config/ does: ENG_PARAM_BACKEND from
 * $MAYA_ENGINE_BACKEND (default cpu: test-gpu.sh sets cuda), ENG_PARAM_SIMD from $MAYA_ENGINE_SIMD
 * (run.sh runs every path), ENG_PARAM_CUDA_TC_MIN_TOKENS / _CUDA_GRAPHS / _CUDA_DEVICE from
 * $MAYA_CUDA_TC_MIN_TOKENS (0 = never) / $MAYA_CUDA_GRAPHS (0 = off) / $MAYA_CUDA_DEVICE. */
int32_t test_ctx_create(const char *dir, const int64_t *params, int32_t n_params, eng_ctx **out);
/* Whether the latest test_ctx_create's context is one the CUDA backend (asked for by
 * $MAYA_ENGINE_BACKEND=cuda, params leaving the backend unset) refused at load, UNSUPPORTED, and
 * that then runs on auto, on the CPU: test-gpu.sh runs every test on such a machine. */
bool test_ctx_refused_by_cuda();

#define TEST(name)                                               \
    static void test_##name();                                   \
    static struct Register_##name {                              \
        Register_##name() { test_register(#name, test_##name); } \
    } register_##name;                                           \
    static void test_##name()

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) {                                                        \
            g_test_failures++;                                                \
            fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                     \
    } while (0)

#define CHECK_MSG(cond, ...)                                                  \
    do {                                                                      \
        if (!(cond)) {                                                        \
            g_test_failures++;                                                \
            fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
        }                                                                     \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                                      \
    do {                                                                                                           \
        double a_ = (a), b_ = (b);                                                                                 \
        if (!(fabs(a_ - b_) <= (tol))) {                                                                           \
            g_test_failures++;                                                                                     \
            fprintf(stderr, "  FAIL %s:%d: %s = %.9g vs %s = %.9g (tol %g)\n", __FILE__, __LINE__, #a, a_, #b, b_, \
                    (double)(tol));                                                                                \
        }                                                                                                          \
    } while (0)

#endif
