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
                    CHECK(maya::kv_offset(table.data(), pos, bs, Hkv, g, (int32_t)D) ==
                          ((blk * Hkv + g) * bs + pos % bs) * D);
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

static int32_t create_with(const std::string &dir, int64_t backend, int64_t kv_bytes, eng_ctx **ctx, std::string *msg) {
    int64_t p[ENG_PARAM_COUNT] = {0};
    p[ENG_PARAM_BACKEND] = backend;
    p[ENG_PARAM_KV_BYTES] = kv_bytes;
    p[ENG_PARAM_SIMD] = test_simd();
    int32_t st = eng_ctx_create(dir.c_str(), p, ENG_PARAM_COUNT, ctx);
    char buf[512] = "";
    eng_last_error(buf, sizeof buf);
    *msg = buf;
    return st;
}

TEST(cuda_backend_selection_and_errors) {
    std::string dir = test_tmpdir("select");
    RandomModelSpec spec;
    CHECK(write_random_model(dir, spec));
    std::string why, msg;
    bool usable = maya::cuda_backend_usable(&why);
    eng_ctx *ctx = nullptr;
    int64_t info[ENG_INFO_COUNT];

    CHECK(create_with(dir, 3, 0, &ctx, &msg) == ENG_STATUS_INVALID_ARG && !ctx);
    CHECK(strstr(msg.c_str(), "unknown backend 3"));

    CHECK(create_with(dir, 1, 0, &ctx, &msg) == ENG_STATUS_OK && ctx);
    if (ctx) {
        eng_ctx_info(ctx, info, ENG_INFO_COUNT);
        CHECK(info[ENG_INFO_BACKEND] == ENG_BACKEND_CPU);
        eng_ctx_free(ctx);
    }
    // ENG_PARAM_KV_BYTES sets the KV budget (a cap on the GPU): 2 blocks of 2 layers x 2 kv heads x
    // 16 positions x 8 dims x (K, V) x 4 bytes = 4096 bytes each.
    CHECK(create_with(dir, 1, 8192, &ctx, &msg) == ENG_STATUS_OK && ctx);
    if (ctx) {
        eng_ctx_info(ctx, info, ENG_INFO_COUNT);
        CHECK_MSG(info[ENG_INFO_N_BLOCKS] == 2 && info[ENG_INFO_N_CTX] == 32, "blocks %lld ctx %lld",
                  (long long)info[ENG_INFO_N_BLOCKS], (long long)info[ENG_INFO_N_CTX]);
        eng_ctx_free(ctx);
    }

    int32_t st = create_with(dir, 0, 0, &ctx, &msg);
    CHECK(st == ENG_STATUS_OK && ctx);
    if (ctx) {
        eng_ctx_info(ctx, info, ENG_INFO_COUNT);
        CHECK(info[ENG_INFO_BACKEND] == (usable ? ENG_BACKEND_CUDA : ENG_BACKEND_CPU));
        eng_ctx_free(ctx);
    }

    st = create_with(dir, 2, 0, &ctx, &msg);
    if (usable) {
        CHECK_MSG(st == ENG_STATUS_OK && ctx, "%s", msg.c_str());
        if (ctx) eng_ctx_free(ctx);
    } else {
        // No GPU here (or no library): a clean status and a message saying which, never a crash.
        CHECK(st == ENG_STATUS_UNSUPPORTED && !ctx);
        CHECK_MSG(msg == why || strstr(msg.c_str(), "NVIDIA GPU"), "message '%s', probe '%s'", msg.c_str(),
                  why.c_str());
        const char *lib = getenv("MAYA_ENGINE_CUDA_LIB"); // the harness passed it to eng_cuda_lib_set
        bool is_lib_missing = lib && *lib && access(lib, F_OK) != 0;
        if (is_lib_missing) CHECK_MSG(strstr(msg.c_str(), "is not available"), "%s", msg.c_str());
        fprintf(stderr, "  ENG_PARAM_BACKEND cuda here: %s\n", msg.c_str());
    }
    // The CUDA library's path is fixed once it was looked up (above): another one is refused, the
    // same one accepted.
    const char *lib = getenv("MAYA_ENGINE_CUDA_LIB");
    CHECK(eng_cuda_lib_set("/elsewhere/libmaya_engine_cuda.so") == ENG_STATUS_INVALID_ARG);
    CHECK(eng_cuda_lib_set(lib && *lib ? lib : nullptr) == ENG_STATUS_OK);
}

TEST(ctx_create_reads_no_environment) {
    // The settings reach the library as parameters only: values in the environment that would be
    // refused (or would shrink the KV cache to nothing) change nothing.
    std::string dir = test_tmpdir("noenv");
    RandomModelSpec spec;
    CHECK(write_random_model(dir, spec));
    const char *names[] = {"MAYA_ENGINE_BACKEND", "MAYA_ENGINE_SIMD", "MAYA_ENGINE_KV_BYTES", "MAYA_CUDA_DEVICE"};
    std::string saved[4];
    bool had[4];
    for (int i = 0; i < 4; i++) {
        const char *v = getenv(names[i]);
        had[i] = v != nullptr;
        saved[i] = v ? v : "";
        setenv(names[i], "bogus", 1);
    }
    setenv("MAYA_ENGINE_KV_BYTES", "1", 1);
    int64_t p[ENG_PARAM_COUNT] = {0};
    p[ENG_PARAM_BACKEND] = ENG_BACKEND_CPU;
    eng_ctx *ctx = nullptr;
    CHECK(eng_ctx_create(dir.c_str(), p, ENG_PARAM_COUNT, &ctx) == ENG_STATUS_OK && ctx);
    if (ctx) {
        int64_t info[ENG_INFO_COUNT];
        eng_ctx_info(ctx, info, ENG_INFO_COUNT);
        CHECK(info[ENG_INFO_N_BLOCKS] > 2);
        eng_ctx_free(ctx);
    }
    for (int i = 0; i < 4; i++) {
        if (had[i]) setenv(names[i], saved[i].c_str(), 1);
        else unsetenv(names[i]);
    }
}

#ifdef MAYA_GPU_TESTS
/* GPU only (scripts/test-gpu.sh builds this file with -DMAYA_GPU_TESTS): the CUDA backend against
 * the CPU backend through the ABI, and its batch / chunk / prefix-cache invariance. */

struct Workload {
    std::vector<std::vector<int32_t>> tokens;     // per prompt: greedy continuation
    std::vector<std::vector<float>> first_logits; // per prompt: logits of the last prompt position
};

static eng_ctx *open_ctx(const std::string &dir, int64_t backend, int64_t chunk) {
    int64_t p[ENG_PARAM_COUNT] = {0};
    p[ENG_PARAM_BACKEND] = backend;
    p[ENG_PARAM_PREFILL_CHUNK] = chunk;
    p[ENG_PARAM_N_THREADS] = 4;
    eng_ctx *ctx = nullptr;
    int32_t st = test_ctx_create(dir.c_str(), p, ENG_PARAM_COUNT, &ctx);
    char msg[512] = "";
    eng_last_error(msg, sizeof msg);
    CHECK_MSG(st == 0 && ctx, "%s backend %lld: %s", dir.c_str(), (long long)backend, msg);
    return ctx;
}

/* Runs prompts[i] for i in `which` together (added at once) and collects their results. */
static void run_prompts(eng_ctx *ctx, const std::vector<std::vector<int32_t>> &prompts,
                        const std::vector<size_t> &which, int n_gen, Workload *out,
                        uint32_t flags = ENG_SEQ_KEEP_LOGITS) {
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    int32_t V = (int32_t)info[ENG_INFO_N_VOCAB];
    out->tokens.resize(prompts.size());
    out->first_logits.resize(prompts.size());
    std::vector<int32_t> ids(which.size(), -1);
    for (size_t i = 0; i < which.size(); i++) {
        const auto &p = prompts[which[i]];
        CHECK(eng_seq_add(ctx, p.data(), (int32_t)p.size(), nullptr, 0, n_gen, 0.0f, 1.0f, 0, 0, flags, &ids[i]) == 0);
        out->tokens[which[i]].clear();
    }
    std::vector<int32_t> ev(4 * 256);
    int finished = 0;
    for (int guard = 0; guard < 100000 && finished < (int)which.size(); guard++) {
        int32_t n = eng_step(ctx, ev.data(), (int32_t)ev.size());
        CHECK(n >= 0);
        if (n < 0) {
            char msg[512] = "";
            eng_last_error(msg, sizeof msg);
            fprintf(stderr, "  eng_step: %s\n", msg);
            break;
        }
        for (int e = 0; e < n; e++) {
            int32_t sid = ev[(size_t)e * 4], kind = ev[(size_t)e * 4 + 1];
            size_t i = 0;
            while (i < ids.size() && ids[i] != sid) i++;
            if (i == ids.size()) continue;
            size_t p = which[i];
            if (kind == ENG_EVENT_TOKEN) {
                if (out->tokens[p].empty() && (flags & ENG_SEQ_KEEP_LOGITS)) {
                    out->first_logits[p].resize((size_t)V);
                    CHECK(eng_seq_logits(ctx, sid, out->first_logits[p].data(), V) == V);
                }
                out->tokens[p].push_back(ev[(size_t)e * 4 + 2]);
            } else if (kind == ENG_EVENT_FINISH) {
                finished++;
            }
        }
    }
    CHECK(finished == (int)which.size());
}

static double compare(const Workload &a, const Workload &b, const char *what, const std::string &model) {
    double worst = 0;
    for (size_t p = 0; p < a.tokens.size(); p++) {
        CHECK_MSG(a.tokens[p] == b.tokens[p], "%s %s: prompt %zu greedy tokens differ", model.c_str(), what, p);
        for (size_t v = 0; v < a.first_logits[p].size() && v < b.first_logits[p].size(); v++)
            worst = fmax(worst, fabs((double)a.first_logits[p][v] - b.first_logits[p][v]));
    }
    CHECK_MSG(worst <= 2e-2, "%s %s: max |logit diff| %.3g > 2e-2", model.c_str(), what, worst);
    fprintf(stderr, "  %-24s %-34s max |logit diff| %.3g\n", model.c_str(), what, worst);
    return worst;
}

static void gpu_vs_cpu(const std::string &dir, const std::string &name, int32_t vocab) {
    // Lengths cover gemv (<= 8 tokens a step), the SIMT and tensor-core gemms (>= 16), several KV
    // blocks, and a shared 32-token prefix (prompts 3 and 5) for the prefix cache.
    std::vector<std::vector<int32_t>> prompts;
    for (int len : {1, 5, 17, 40, 70, 45}) {
        std::vector<int32_t> p;
        for (int i = 0; i < len; i++) p.push_back((i * 7 + len * 13 + 1) % (vocab - 1) + 1);
        prompts.push_back(p);
    }
    for (int i = 0; i < 32; i++) prompts[5][(size_t)i] = prompts[3][(size_t)i];
    std::vector<size_t> all = {0, 1, 2, 3, 4, 5};
    const int n_gen = 24;
    Workload cpu, gpu, gpu_chunked, gpu_alone, gpu_cached, gpu_argmax;
    eng_ctx *c = open_ctx(dir, ENG_BACKEND_CPU, 256);
    if (!c) return;
    run_prompts(c, prompts, all, n_gen, &cpu);
    eng_ctx_free(c);
    eng_ctx *g = open_ctx(dir, ENG_BACKEND_CUDA, 256);
    if (!g) return;
    run_prompts(g, prompts, all, n_gen, &gpu);
    compare(cpu, gpu, "cuda vs cpu, batched", name);
    run_prompts(g, prompts, all, n_gen, &gpu_cached); // every prompt's full blocks now come from the cache
    int64_t stats[ENG_STAT_COUNT];
    eng_ctx_stats(g, stats, ENG_STAT_COUNT);
    CHECK(stats[ENG_STAT_CACHED_TOKENS] > 0);
    compare(gpu, gpu_cached, "cuda prefix cache vs none", name);
    run_prompts(g, prompts, all, n_gen, &gpu_argmax, 0); // greedy without kept logits: sampled on the device
    gpu_argmax.first_logits = gpu.first_logits;
    compare(gpu, gpu_argmax, "cuda device argmax vs host sampler", name);
    for (size_t p = 0; p < prompts.size(); p++) run_prompts(g, prompts, {p}, n_gen, &gpu_alone);
    compare(gpu, gpu_alone, "cuda alone vs batched", name);
    eng_ctx_free(g);
    g = open_ctx(dir, ENG_BACKEND_CUDA, 7);
    if (!g) return;
    run_prompts(g, prompts, all, n_gen, &gpu_chunked);
    compare(gpu, gpu_chunked, "cuda chunk 7 vs chunk 256", name);
    eng_ctx_free(g);
}

TEST(gpu_matches_cpu_backend_and_invariance) {
    std::string why;
    CHECK_MSG(maya::cuda_backend_usable(&why), "the CUDA backend is not usable: %s", why.c_str());
    for (const char *fx : {"glm4-bf16", "llama-f32", "qwen3-f16"})
        gpu_vs_cpu(test_repo_root() + "/test/fixtures/engine/" + fx, fx, 300);
    // Larger random models: head size 128 with GQA (GLM-4-9B's attention shape), bf16 / f16 / f32.
    const char *arch[] = {"Glm4ForCausalLM", "Qwen3ForCausalLM", "LlamaForCausalLM"};
    const char *dtype[] = {"BF16", "F16", "F32"};
    for (int i = 0; i < 3; i++) {
        RandomModelSpec s;
        s.arch = arch[i];
        s.dtype = dtype[i];
        s.vocab = 1000, s.hidden = 512, s.layers = 3, s.heads = 8, s.kv_heads = 2, s.head_dim = 128, s.ffn = 1024;
        s.max_pos = 1024, s.seed = 5 + (uint64_t)i;
        std::string dir = test_tmpdir("gpu");
        CHECK(write_random_model(dir, s));
        gpu_vs_cpu(dir, std::string("random-") + arch[i] + "-" + dtype[i], s.vocab);
    }
}
#endif
