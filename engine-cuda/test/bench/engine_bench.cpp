/* engine_bench.cpp: a quick native micro-benchmark of the engine through the public ABI.
 *
 * Usage (built and run by engine-cuda/test/bench/run.sh): engine-bench MODEL_DIR [threads] [prompt_len] [gen_len]
 *        engine-bench --random-llama DIR DTYPE   (writes a ~110M Llama-shaped model, then exits)
 *        engine-bench --random-glm4-9b DIR [LAYERS] (writes a GLM-4-9B-shaped bf16 model, 40 layers
 *                                                  unless given, streamed: scripts/test-gpu.sh's decode
 *                                                  benchmark where Node is absent)
 * MAYA_WEIGHT_DTYPE=q8 loads the weights as 8-bit; MAYA_ENGINE_SIMD picks the kernel path and
 * MAYA_ENGINE_BACKEND the backend (read here and passed as ENG_PARAM_*).
 * Prints prefill tok/s (batch 1) and decode tok/s at batch 1 and 8 with the weight-bytes roofline
 * inputs. The npm benchmark (bench/engine.bench.ts) is the reported one; this is for kernel work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <string>
#include <vector>

#include "../../include/engine.h"
#include "../model_writer.h"

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now() { return clock_s(CLOCK_MONOTONIC); }
static double g_decode_cpu = 0; // process CPU seconds spent in decode-only steps (all threads)

/* Runs `batch` sequences of prompt_len prompt tokens and gen_len generated tokens; returns the
 * time spent in steps that only decode and how many tokens they produced, and the time to prefill. */
static void run(eng_ctx *ctx, int batch, int prompt_len, int gen_len, double *prefill_s, double *decode_s,
                long *decode_tokens, int salt) {
    std::vector<int32_t> ids((size_t)batch);
    for (int b = 0; b < batch; b++) {
        std::vector<int32_t> p((size_t)prompt_len);
        for (int i = 0; i < prompt_len; i++) p[(size_t)i] = (int32_t)((i * 31 + b * 7 + salt * 131) % 1000 + 3);
        eng_seq_add(ctx, p.data(), prompt_len, nullptr, 0, gen_len, 0.0f, 1.0f, 0, 0, 0, &ids[(size_t)b]);
    }
    std::vector<int32_t> ev(4 * 256);
    int finished = 0, prefilled = 0;
    *prefill_s = *decode_s = 0;
    *decode_tokens = 0;
    while (finished < batch) {
        double t0 = now(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        int n = eng_step(ctx, ev.data(), (int)ev.size());
        double dt = now() - t0, dc = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (n < 0) {
            fprintf(stderr, "step failed %d\n", n);
            exit(1);
        }
        int toks = 0;
        bool was_prefill = prefilled < batch;
        for (int i = 0; i < n; i++) {
            int kind = ev[(size_t)i * 4 + 1];
            if (kind == ENG_EVENT_PREFILLED) prefilled++;
            if (kind == ENG_EVENT_TOKEN) toks++;
            if (kind == ENG_EVENT_FINISH) finished++;
        }
        if (was_prefill) *prefill_s += dt;
        else {
            *decode_s += dt;
            *decode_tokens += toks;
            g_decode_cpu += dc;
        }
    }
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "--random-llama")) {
        RandomModelSpec s;
        s.vocab = 32000;
        s.hidden = 768;
        s.layers = 12;
        s.heads = 12;
        s.kv_heads = 12;
        s.head_dim = 64;
        s.ffn = 2048;
        s.max_pos = 1024;
        s.tied = true;
        s.dtype = argv[3];
        return write_random_model(argv[2], s) ? 0 : 1;
    }
    if (argc >= 3 && !strcmp(argv[1], "--random-glm4-9b")) { // GLM-4-9B's shape (bench/glm4-checkpoint.ts)
        RandomModelSpec s;
        s.arch = "Glm4ForCausalLM";
        s.vocab = 151552;
        s.hidden = 4096;
        s.layers = argc > 3 ? atoi(argv[3]) : 40;
        s.heads = 32;
        s.kv_heads = 2;
        s.head_dim = 128;
        s.ffn = 13696;
        s.max_pos = 32768;
        s.dtype = "BF16";
        return s.layers > 0 && write_random_model_streamed(argv[2], s) ? 0 : 1;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: engine-bench MODEL_DIR [threads] [prompt_len] [gen_len]\n");
        return 2;
    }
    int64_t params[ENG_PARAM_COUNT] = {0};
    params[ENG_PARAM_N_THREADS] = argc > 2 ? atoi(argv[2]) : 0;
    // The library reads no environment: the bench passes these settings as parameters.
    const char *wd = getenv("MAYA_WEIGHT_DTYPE"); // q8: 8-bit weights quantized at load
    if (wd && !strcmp(wd, "q8")) params[ENG_PARAM_WEIGHT_DTYPE] = ENG_WEIGHT_DTYPE_Q8;
    const char *simd = getenv("MAYA_ENGINE_SIMD"), *const paths[] = {"scalar", "avx2", "avx512"};
    for (int i = 0; simd && i < 3; i++)
        if (!strcmp(simd, paths[i])) params[ENG_PARAM_SIMD] = 1 + ENG_SIMD_SCALAR + i; // 1 + ENG_SIMD_*
    const char *backend = getenv("MAYA_ENGINE_BACKEND");
    if (backend && !strcmp(backend, "cpu")) params[ENG_PARAM_BACKEND] = ENG_BACKEND_CPU;
    if (backend && !strcmp(backend, "cuda")) params[ENG_PARAM_BACKEND] = ENG_BACKEND_CUDA;
    int prompt_len = argc > 3 ? atoi(argv[3]) : 128, gen_len = argc > 4 ? atoi(argv[4]) : 64;
    eng_ctx *ctx;
    if (eng_ctx_create(argv[1], params, ENG_PARAM_COUNT, &ctx) != 0) {
        char msg[512];
        eng_last_error(msg, sizeof msg);
        fprintf(stderr, "create: %s\n", msg);
        return 1;
    }
    int64_t info[ENG_INFO_COUNT];
    eng_ctx_info(ctx, info, ENG_INFO_COUNT);
    printf("params %.1fM, weight bytes/token %.1f MB, simd %lld\n", info[ENG_INFO_N_PARAMS] / 1e6,
           info[ENG_INFO_WEIGHT_BYTES] / 1e6, (long long)info[ENG_INFO_SIMD]);
    double pf, dc;
    long dt;
    run(ctx, 1, 16, 4, &pf, &dc, &dt, 99); // warm-up (page in the weights)
    for (int batch : {1, 8}) {
        g_decode_cpu = 0;
        run(ctx, batch, prompt_len, gen_len, &pf, &dc, &dt, batch);
        printf(
            "batch %d: prefill %.1f tok/s, decode %.1f tok/s (%.2f GB/s of weights), %.2f CPU-s per wall-s in decode\n",
            batch, batch * prompt_len / pf, dt / dc, (dt / dc) / batch * info[ENG_INFO_WEIGHT_BYTES] / 1e9,
            g_decode_cpu / dc);
    }
    eng_ctx_free(ctx);
    return 0;
}
