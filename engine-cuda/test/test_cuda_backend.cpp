/* test_cuda_backend.cpp: what of the CUDA backend runs without a GPU: backend selection and its
 * errors through the ABI, and the paged-KV / split-attention index math the kernels share
 * (src/cuda/paging.h) against the CPU backend's addressing. GPU checks: scripts/test-gpu.sh. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "../include/engine.h"
#include "../src/backend.h"
#include "../src/cuda/paging.h"
#include "model_writer.h"
#include "test.h"

TEST(cuda_paging_matches_cpu_addressing) {
    // cpu_backend.cpp writes K of (pos, kv head g) at ((blk * Hkv + g) * bs + pos % bs) * D.
    std::vector<int32_t> table = {7, 2, 9, 0, 5};
    for (int bs : {1, 4, 16})
        for (int Hkv : {1, 2, 8})
            for (int pos = 0; pos < (int)table.size() * bs; pos++)
                for (int g = 0; g < Hkv; g++) {
                    int64_t blk = table[(size_t)(pos / bs)], D = 24;
                    CHECK(maya::kv_offset(table.data(), pos, bs, Hkv, g, (int32_t)D) == ((blk * Hkv + g) * bs + pos % bs) * D);
                }
}

TEST(cuda_split_ranges_partition_the_kv_length) {
    for (int n = 1; n <= 700; n += (n < 70 ? 1 : 37))
        for (int n_split : {1, 2, 3, 8, 32})
            for (int chunk : {1, 32}) {
                int j0 = 0, j1 = 0, next = 0, nonempty = 0;
                int used = maya::split_range(n, n_split, chunk, 0, &j0, &j1);
                CHECK(used >= 1 && used <= n_split);
                for (int s = 0; s < n_split; s++) {
                    CHECK(maya::split_range(n, n_split, chunk, s, &j0, &j1) == used);
                    if (j0 >= j1) {
                        CHECK(s >= used); // empty pieces come last, and the combine skips them
                        continue;
                    }
                    CHECK(s < used && j0 == next && j0 % chunk == 0);
                    next = j1;
                    nonempty++;
                }
                CHECK_MSG(next == n && nonempty == used, "n %d split %d chunk %d: covered %d in %d pieces", n, n_split,
                          chunk, next, nonempty);
            }
}

static int32_t create_with_env(const std::string &dir, const char *backend, eng_ctx **ctx, std::string *msg) {
    setenv("MAYA_ENGINE_BACKEND", backend, 1);
    int32_t st = eng_ctx_create(dir.c_str(), nullptr, 0, ctx);
    char buf[512] = "";
    eng_last_error(buf, sizeof buf);
    *msg = buf;
    return st;
}

TEST(cuda_backend_selection_and_errors) {
    const char *saved = getenv("MAYA_ENGINE_BACKEND");
    std::string keep = saved ? saved : "";
    std::string dir = test_tmpdir("select");
    RandomModelSpec spec;
    CHECK(write_random_model(dir, spec));
    std::string why, msg;
    bool usable = maya::cuda_backend_usable(&why);
    eng_ctx *ctx = nullptr;
    int64_t info[ENG_INFO_COUNT];

    CHECK(create_with_env(dir, "tpu", &ctx, &msg) == ENG_STATUS_INVALID_ARG && !ctx);
    CHECK(strstr(msg.c_str(), "MAYA_ENGINE_BACKEND must be cpu, cuda or auto"));

    CHECK(create_with_env(dir, "cpu", &ctx, &msg) == ENG_STATUS_OK && ctx);
    if (ctx) {
        eng_ctx_info(ctx, info, ENG_INFO_COUNT);
        CHECK(info[ENG_INFO_BACKEND] == 1);
        eng_ctx_free(ctx);
    }

    int32_t st = create_with_env(dir, "auto", &ctx, &msg);
    CHECK(st == ENG_STATUS_OK && ctx);
    if (ctx) {
        eng_ctx_info(ctx, info, ENG_INFO_COUNT);
        CHECK(info[ENG_INFO_BACKEND] == (usable ? 2 : 1));
        eng_ctx_free(ctx);
    }

    st = create_with_env(dir, "cuda", &ctx, &msg);
    if (usable) {
        CHECK_MSG(st == ENG_STATUS_OK && ctx, "%s", msg.c_str());
        if (ctx) eng_ctx_free(ctx);
    } else {
        // No GPU here (or no library): a clean status and a message saying which, never a crash.
        CHECK(st == ENG_STATUS_UNSUPPORTED && !ctx);
        CHECK_MSG(msg == why || strstr(msg.c_str(), "NVIDIA GPU"), "message '%s', probe '%s'", msg.c_str(), why.c_str());
        const char *lib = getenv("MAYA_ENGINE_CUDA_LIB");
        bool is_lib_missing = lib && access(lib, F_OK) != 0;
        if (is_lib_missing) CHECK_MSG(strstr(msg.c_str(), "is not available"), "%s", msg.c_str());
        fprintf(stderr, "  MAYA_ENGINE_BACKEND=cuda here: %s\n", msg.c_str());
    }
    // An explicit ENG_PARAM_BACKEND wins over the environment.
    setenv("MAYA_ENGINE_BACKEND", "cuda", 1);
    int64_t p[1] = {1};
    CHECK(eng_ctx_create(dir.c_str(), p, 1, &ctx) == ENG_STATUS_OK && ctx);
    if (ctx) eng_ctx_free(ctx);
    setenv("MAYA_ENGINE_BACKEND", keep.empty() ? "cpu" : keep.c_str(), 1);
}
