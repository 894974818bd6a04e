/* engine.cpp: the C ABI of engine.h over the internals (Model, Backend, BlockManager, Scheduler).
 *
 * Every entry point validates its arguments, converts C++ exceptions (allocation failure) into
 * status codes, and leaves the detail in the thread-local last error. Nothing here prints or exits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <memory>
#include <new>
#include <vector>

#include "backend.h"       // defines: Backend, cpu_backend_create, cuda_backend_create
#include "block_manager.h" // defines: BlockManager
#include "common.h"        // defines: fail, last_error, ENG_TRY
#include "model.h"         // defines: Model, model_load
#include "scheduler.h"     // defines: Scheduler
#include "vision.h"        // defines: VisionEncoder, mrope_positions

using namespace maya;

struct eng_ctx {
    Model model;
    std::unique_ptr<Backend> backend;
    BlockManager bm;
    Scheduler sched;
    std::unique_ptr<VisionEncoder> vision; // vision models only
    int64_t info[ENG_INFO_COUNT] = {};
    std::vector<int32_t> pending; // events not yet handed out (ENG_EVENT_INTS each)
    size_t pending_pos = 0;
};

#define ABI_GUARD(body)                                                              \
    try {                                                                            \
        body                                                                         \
    } catch (const std::bad_alloc &) {                                               \
        return fail(ENG_STATUS_OUT_OF_MEMORY, "out of memory");                      \
    } catch (...) {                                                                  \
        return fail(ENG_STATUS_INTERNAL, "internal error (unexpected exception)");   \
    }

static int64_t param(const int64_t *params, int32_t n, int idx, int64_t def) {
    return (params && idx < n && params[idx] > 0) ? params[idx] : def;
}

static void fill_info(eng_ctx *c, int64_t n_ctx, int64_t bs, int64_t n_blocks) {
    const ModelConfig &mc = c->model.cfg;
    int64_t *in = c->info;
    in[ENG_INFO_N_VOCAB] = mc.n_vocab;
    in[ENG_INFO_N_CTX] = n_ctx;
    in[ENG_INFO_N_LAYER] = mc.n_layer;
    in[ENG_INFO_N_EMBD] = mc.n_embd;
    in[ENG_INFO_N_HEAD] = mc.n_head;
    in[ENG_INFO_N_HEAD_KV] = mc.n_head_kv;
    in[ENG_INFO_HEAD_DIM] = mc.head_dim;
    in[ENG_INFO_BLOCK_SIZE] = bs;
    in[ENG_INFO_N_BLOCKS] = n_blocks;
    in[ENG_INFO_BACKEND] = c->backend->kind();
    in[ENG_INFO_ARCH] = mc.arch;
    in[ENG_INFO_N_PARAMS] = c->model.n_params;
    in[ENG_INFO_WEIGHT_BYTES] = c->model.weight_bytes;
    in[ENG_INFO_SIMD] = c->backend->simd();
    in[ENG_INFO_N_PARAMS_ACTIVE] = c->model.n_params_active;
    in[ENG_INFO_VISION] = c->model.vision ? 1 : 0;
}

/* ENG_PARAM_BACKEND, else $MAYA_ENGINE_BACKEND (cpu|cuda|auto), else auto: cuda when its library
 * is built and sees a GPU, cpu otherwise. Writes 1 (cpu) or 2 (cuda). */
static int32_t choose_backend(const int64_t *params, int32_t n_params, int64_t *out, bool *is_auto) {
    int64_t b = param(params, n_params, ENG_PARAM_BACKEND, 0);
    const char *env = getenv("MAYA_ENGINE_BACKEND");
    if (b == 0 && env && *env) {
        if (strcmp(env, "cpu") == 0) b = 1;
        else if (strcmp(env, "cuda") == 0) b = 2;
        else if (strcmp(env, "auto") != 0)
            return fail(ENG_STATUS_INVALID_ARG, "MAYA_ENGINE_BACKEND must be cpu, cuda or auto (got '%s')", env);
    }
    if (b > 2) return fail(ENG_STATUS_INVALID_ARG, "unknown backend %lld", (long long)b);
    *is_auto = b == 0;
    if (b == 0) b = cuda_backend_usable(nullptr) ? 2 : 1;
    *out = b;
    return ENG_STATUS_OK;
}

static int32_t configure(eng_ctx *c, const int64_t *params, int32_t n_params);

/* The CPU backend copies the matrices into huge pages (model_place_weights) when they take at most
 * half of MemAvailable; $MAYA_ENGINE_WEIGHT_COPY=0 keeps them in the checkpoint mapping, and so
 * does a kernel with transparent huge pages off ("[never]": the copy would gain nothing). */
static int64_t weight_copy_budget() {
    const char *env = getenv("MAYA_ENGINE_WEIGHT_COPY");
    if (env && strcmp(env, "0") == 0) return -1;
    char line[256];
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (thp) {
        bool is_never = fgets(line, sizeof line, thp) && strstr(line, "[never]");
        fclose(thp);
        if (is_never) return -1;
    }
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
    fclose(f);
    return kb > 0 ? kb * 1024 / 2 : -1;
}

/* configure() again with the CPU backend forced: auto mode, when the CUDA backend declines the model. */
static int32_t configure_cpu_fallback(eng_ctx *c, const int64_t *params, int32_t n_params) {
    std::vector<int64_t> p(ENG_PARAM_COUNT, 0);
    for (int32_t i = 0; i < n_params && i < ENG_PARAM_COUNT; i++) p[(size_t)i] = params[i];
    p[ENG_PARAM_BACKEND] = 1;
    return configure(c, p.data(), ENG_PARAM_COUNT);
}

/* Sizes the KV cache and context limit from the creation parameters and builds the backend,
 * block manager and scheduler. */
static int32_t configure(eng_ctx *c, const int64_t *params, int32_t n_params) {
    const ModelConfig &mc = c->model.cfg;
    int64_t backend = 1;
    bool is_auto = false;
    ENG_TRY(choose_backend(params, n_params, &backend, &is_auto));
    if (c->model.vision && backend == 2) { // M-RoPE and image embeddings exist on the CPU backend only
        if (!is_auto) return fail(ENG_STATUS_UNSUPPORTED, "cuda backend: vision models (Glm4vForConditionalGeneration) run on the CPU backend only");
        backend = 1;
    }
    if (c->model.is_q8 && backend == 2) { // the Q8 kernels are the CPU backend's
        if (!is_auto) return fail(ENG_STATUS_UNSUPPORTED, "weight dtype q8 runs on the CPU backend only");
        backend = 1;
    }
    const char *kv_env = getenv("MAYA_ENGINE_KV_BYTES"); // the KV budget / cap when ENG_PARAM_KV_BYTES is unset
    int64_t kv_bytes_env = kv_env ? strtoll(kv_env, nullptr, 10) : 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t n_threads = param(params, n_params, ENG_PARAM_N_THREADS, online > 0 ? online : 1);
    int64_t bs = param(params, n_params, ENG_PARAM_BLOCK_SIZE, 16);
    int64_t max_batch = param(params, n_params, ENG_PARAM_MAX_BATCH, 16);
    int64_t chunk = param(params, n_params, ENG_PARAM_PREFILL_CHUNK, 256);
    int64_t n_ctx = param(params, n_params, ENG_PARAM_N_CTX, mc.max_pos);
    if (n_threads > 256 || bs > 4096 || max_batch > 4096 || chunk > (1 << 20))
        return fail(ENG_STATUS_INVALID_ARG, "a creation parameter is out of range");
    if (n_ctx > mc.max_pos) n_ctx = mc.max_pos;
    int64_t block_bytes = mc.n_layer * mc.kv_floats_per_token() * bs * (int64_t)sizeof(float);
    int64_t n_blocks = param(params, n_params, ENG_PARAM_N_BLOCKS, 0);
    if (n_blocks == 0 && backend == 2) {
        // CUDA: room for max_batch full contexts, lowered by the backend to free device memory
        // (capped by ENG_PARAM_KV_BYTES, else $MAYA_ENGINE_KV_BYTES, when given).
        n_blocks = (max_batch * n_ctx + bs - 1) / bs;
        if (n_blocks > INT32_MAX / 2) n_blocks = INT32_MAX / 2;
    } else if (n_blocks == 0) {
        // Default: room for max_batch full contexts within 2 GiB (pages are touched lazily).
        int64_t budget = param(params, n_params, ENG_PARAM_KV_BYTES, kv_bytes_env > 0 ? kv_bytes_env : 2LL << 30);
        int64_t want = (max_batch * n_ctx + bs - 1) / bs;
        n_blocks = budget / block_bytes < want ? budget / block_bytes : want;
        if (n_blocks < 1) return fail(ENG_STATUS_INVALID_ARG, "KV budget %lld bytes holds no block of %lld bytes",
                                      (long long)budget, (long long)block_bytes);
    }
    if (n_blocks > INT32_MAX / 2) return fail(ENG_STATUS_INVALID_ARG, "too many KV blocks");
    if (n_ctx > n_blocks * bs) n_ctx = n_blocks * bs; // one sequence must always fit
    BackendConfig bc;
    bc.n_threads = (int32_t)n_threads;
    bc.block_size = (int32_t)bs;
    bc.n_blocks = (int32_t)n_blocks;
    bc.max_tokens = (int32_t)(chunk + max_batch);
    bc.max_logits = (int32_t)max_batch;
    bc.n_ctx = (int32_t)n_ctx;
    if (backend == 2) {
        int64_t cap = param(params, n_params, ENG_PARAM_KV_BYTES, kv_bytes_env > 0 ? kv_bytes_env : 0);
        int32_t st = cuda_backend_create(c->model, &bc, cap, &c->backend);
        if (st == ENG_STATUS_UNSUPPORTED && is_auto) { // auto: a model the GPU path lacks runs on the CPU
            clear_error();
            return configure_cpu_fallback(c, params, n_params);
        }
        ENG_TRY(st);
        n_blocks = bc.n_blocks;
        if (n_ctx > n_blocks * bs) n_ctx = n_blocks * bs;
    } else {
        bool placed;
        model_check_f8(&c->model);
        ENG_TRY(model_place_weights(&c->model, weight_copy_budget(), &placed));
        ENG_TRY(cpu_backend_create(c->model, bc, &c->backend));
    }
    c->bm.init((int32_t)n_blocks, (int32_t)bs);
    SchedulerConfig sc;
    sc.max_batch = (int32_t)max_batch;
    sc.prefill_chunk = (int32_t)chunk;
    sc.n_ctx = (int32_t)n_ctx;
    sc.n_vocab = mc.n_vocab;
    ENG_TRY(c->sched.init(sc, &c->bm, c->backend.get()));
    if (c->model.vision) {
        c->vision.reset(new VisionEncoder());
        ENG_TRY(c->vision->init(*c->model.vision, (int)n_threads));
        c->sched.set_vision(c->vision.get(), mc.n_embd);
    }
    c->pending.reserve((size_t)(4 * max_batch + 1) * ENG_EVENT_INTS);
    fill_info(c, n_ctx, bs, n_blocks);
    return ENG_STATUS_OK;
}

extern "C" {

ENG_API int32_t eng_abi_version(void) { return ENG_ABI_VERSION; }

ENG_API const char *eng_status_str(int32_t status) {
    switch (status) {
    case ENG_STATUS_OK: return "ok";
    case ENG_STATUS_NO_KV_SPACE: return "no KV cache space";
    case ENG_STATUS_INVALID_ARG: return "invalid argument";
    case ENG_STATUS_IO: return "I/O error";
    case ENG_STATUS_BAD_CHECKPOINT: return "bad checkpoint";
    case ENG_STATUS_UNSUPPORTED: return "unsupported";
    case ENG_STATUS_CONTEXT_OVERFLOW: return "context overflow";
    case ENG_STATUS_OUT_OF_MEMORY: return "out of memory";
    case ENG_STATUS_UNKNOWN_SEQ: return "unknown sequence";
    case ENG_STATUS_BACKEND: return "backend failure";
    case ENG_STATUS_INTERNAL: return "internal error";
    default: return "unknown status";
    }
}

ENG_API int32_t eng_last_error(char *buf, int32_t len) {
    const char *msg = last_error();
    int32_t n = (int32_t)strlen(msg);
    if (!buf || len < n + 1) return -(n + 1);
    memcpy(buf, msg, (size_t)n + 1);
    return n;
}

ENG_API int32_t eng_ctx_create(const char *model_dir, const int64_t *params, int32_t n_params, eng_ctx **out) {
    if (out) *out = nullptr;
    if (!model_dir || !out || n_params < 0 || (n_params > 0 && !params))
        return fail(ENG_STATUS_INVALID_ARG, "eng_ctx_create: model_dir and out are required");
    eng_ctx *c = nullptr;
    int32_t st;
    try {
        c = new eng_ctx();
        int64_t wd = param(params, n_params, ENG_PARAM_WEIGHT_DTYPE, 0);
        if (wd > 2) {
            delete c;
            return fail(ENG_STATUS_INVALID_ARG, "ENG_PARAM_WEIGHT_DTYPE must be 0, 1 (as stored) or 2 (q8), got %lld", (long long)wd);
        }
        c->model.is_q8 = wd == 2;
        st = model_load(model_dir, &c->model);
        if (st >= 0) st = configure(c, params, n_params);
    } catch (const std::bad_alloc &) {
        st = fail(ENG_STATUS_OUT_OF_MEMORY, "out of memory while loading %s", model_dir);
    } catch (...) {
        st = fail(ENG_STATUS_INTERNAL, "internal error while loading %s", model_dir);
    }
    if (st < 0) {
        delete c;
        return st;
    }
    *out = c;
    return ENG_STATUS_OK;
}

ENG_API void eng_ctx_free(eng_ctx *ctx) { delete ctx; }

ENG_API int32_t eng_ctx_info(const eng_ctx *ctx, int64_t *out, int32_t cap) {
    if (!ctx || !out || cap < 0) return fail(ENG_STATUS_INVALID_ARG, "eng_ctx_info: null argument");
    int32_t n = cap < ENG_INFO_COUNT ? cap : ENG_INFO_COUNT;
    memcpy(out, ctx->info, (size_t)n * sizeof(int64_t));
    return n;
}

ENG_API int32_t eng_ctx_stats(const eng_ctx *ctx, int64_t *out, int32_t cap) {
    if (!ctx || !out || cap < 0) return fail(ENG_STATUS_INVALID_ARG, "eng_ctx_stats: null argument");
    const SchedulerStats &s = ctx->sched.stats();
    int64_t v[ENG_STAT_COUNT];
    v[ENG_STAT_BLOCKS_TOTAL] = ctx->bm.n_blocks();
    v[ENG_STAT_BLOCKS_FREE] = ctx->bm.n_free();
    v[ENG_STAT_BLOCKS_CACHED] = ctx->bm.n_cached_free();
    v[ENG_STAT_SEQS_WAITING] = ctx->sched.n_waiting();
    v[ENG_STAT_SEQS_RUNNING] = ctx->sched.n_running();
    v[ENG_STAT_STEPS] = s.steps;
    v[ENG_STAT_PREFILL_TOKENS] = s.prefill_tokens;
    v[ENG_STAT_CACHED_TOKENS] = s.cached_tokens;
    v[ENG_STAT_DECODE_TOKENS] = s.decode_tokens;
    v[ENG_STAT_PREEMPTIONS] = s.preemptions;
    v[ENG_STAT_IMAGES_ENCODED] = s.images_encoded;
    v[ENG_STAT_ENCODE_US] = s.encode_us;
    v[ENG_STAT_ENCODE_CPU_US] = s.encode_cpu_us;
    int32_t n = cap < ENG_STAT_COUNT ? cap : ENG_STAT_COUNT;
    memcpy(out, v, (size_t)n * sizeof(int64_t));
    return n;
}

/* Checks the images of eng_seq_add_mm against the prompt and the vision config; fills s->images
 * (tok0, grid, hash, pixels) and the M-RoPE positions. n_images 0: only refuses placeholders. */
static int32_t add_images(const eng_ctx *ctx, const int32_t *tokens, int32_t n_tokens, const float *pixels,
                          int64_t n_pixels, const int32_t *grids, const uint64_t *hashes, int32_t n_images, Sequence *s) {
    const Model &m = ctx->model;
    if (n_images < 0 || n_pixels < 0) return fail(ENG_STATUS_INVALID_ARG, "eng_seq_add_mm: negative count");
    if (n_images > 0 && !m.vision)
        return fail(ENG_STATUS_UNSUPPORTED, "this checkpoint has no vision encoder: images are not supported");
    if (n_images > 0 && (!pixels || !grids || !hashes))
        return fail(ENG_STATUS_INVALID_ARG, "eng_seq_add_mm: pixels, grids and image_hashes are required with images");
    if (n_images == 0 && n_pixels != 0) return fail(ENG_STATUS_INVALID_ARG, "eng_seq_add_mm: pixels without images");
    int32_t image_id = m.cfg.image_token_id;
    if (image_id < 0) return ENG_STATUS_OK;
    int32_t merge = m.vision->cfg.merge;
    int64_t P = m.vision->cfg.patch_floats(), want = 0;
    s->images.resize((size_t)n_images);
    for (int32_t i = 0; i < n_images; i++) {
        const int32_t *g = grids + 3 * i;
        if (g[0] < 1 || g[0] > 1024 || g[1] < merge || g[2] < merge || g[1] > 65536 || g[2] > 65536 || g[1] % merge ||
            g[2] % merge)
            return fail(ENG_STATUS_INVALID_ARG, "image %d: grid (%d, %d, %d) must be t >= 1 and h, w positive multiples of %d",
                        i, g[0], g[1], g[2], merge);
        int64_t patches = (int64_t)g[0] * g[1] * g[2];
        if (patches / (merge * merge) > n_tokens)
            return fail(ENG_STATUS_INVALID_ARG, "image %d needs %lld image tokens; the prompt has %d tokens", i,
                        (long long)(patches / (merge * merge)), n_tokens);
        SeqImage &img = s->images[(size_t)i];
        memcpy(img.grid, g, sizeof img.grid);
        img.n_tok = (int32_t)(patches / (merge * merge));
        img.hash = hashes[i];
        img.tok0 = -1;
        want += patches * P;
    }
    if (n_pixels != want)
        return fail(ENG_STATUS_INVALID_ARG, "eng_seq_add_mm: %lld pixel floats given, the grids need %lld", (long long)n_pixels,
                    (long long)want);
    // Each image's placeholders: one consecutive run of exactly its token count, images in order.
    int32_t k = 0, got = 0;
    for (int32_t i = 0; i < n_tokens; i++) {
        if (tokens[i] != image_id) {
            if (got > 0)
                return fail(ENG_STATUS_INVALID_ARG, "image %d has %d consecutive image tokens in the prompt, needs %d", k, got,
                            s->images[(size_t)k].n_tok);
            continue;
        }
        if (k >= n_images)
            return fail(ENG_STATUS_INVALID_ARG, "the prompt holds more image tokens (id %d) than its %d images take", image_id,
                        n_images);
        if (got == 0) s->images[(size_t)k].tok0 = i;
        if (++got == s->images[(size_t)k].n_tok) {
            k++;
            got = 0;
        }
    }
    if (k != n_images || got != 0)
        return fail(ENG_STATUS_INVALID_ARG, "the prompt holds image tokens for %d of %d images", k, n_images);
    if (n_images == 0) return ENG_STATUS_OK;
    std::vector<int32_t> tok0((size_t)n_images);
    for (int32_t i = 0; i < n_images; i++) tok0[(size_t)i] = s->images[(size_t)i].tok0;
    s->mpos.resize((size_t)n_tokens * 3);
    mrope_positions(n_tokens, tok0.data(), grids, n_images, merge, s->mpos.data(), &s->mrope_delta);
    for (int32_t i = 0; i < n_images; i++) {
        const float *p0 = pixels;
        for (int32_t j = 0; j < i; j++) p0 += (int64_t)grids[3 * j] * grids[3 * j + 1] * grids[3 * j + 2] * P;
        s->images[(size_t)i].pixels.assign(p0, p0 + (int64_t)grids[3 * i] * grids[3 * i + 1] * grids[3 * i + 2] * P);
    }
    return ENG_STATUS_OK;
}

static int32_t seq_add(eng_ctx *ctx, const int32_t *tokens, int32_t n_tokens, const int32_t *stop_ids, int32_t n_stop,
                       int32_t max_tokens, float temperature, float top_p, uint64_t seed, uint32_t flags, const float *pixels,
                       int64_t n_pixels, const int32_t *grids, const uint64_t *hashes, int32_t n_images, int32_t *out_seq_id) {
    if (!ctx || !tokens || n_tokens < 1 || !out_seq_id || n_stop < 0 || (n_stop > 0 && !stop_ids))
        return fail(ENG_STATUS_INVALID_ARG, "eng_seq_add: tokens (n >= 1), stop ids and out_seq_id are required");
    if (max_tokens < 1) return fail(ENG_STATUS_INVALID_ARG, "max_tokens must be >= 1 (got %d)", max_tokens);
    if (!(temperature == temperature) || isinf(temperature))
        return fail(ENG_STATUS_INVALID_ARG, "temperature must be finite");
    if (!(top_p > 0.0f && top_p <= 1.0f)) return fail(ENG_STATUS_INVALID_ARG, "top_p must be in (0, 1]");
    if (flags & ~(uint32_t)(ENG_SEQ_KEEP_LOGITS | ENG_SEQ_REPORT_PROGRESS)) return fail(ENG_STATUS_INVALID_ARG, "unknown flags 0x%x", flags);
    int32_t V = (int32_t)ctx->info[ENG_INFO_N_VOCAB];
    for (int32_t i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return fail(ENG_STATUS_INVALID_ARG, "prompt token %d at index %d is outside the vocabulary (%d)", tokens[i], i, V);
    ABI_GUARD({
        std::unique_ptr<Sequence> s(new Sequence());
        ENG_TRY(add_images(ctx, tokens, n_tokens, pixels, n_pixels, grids, hashes, n_images, s.get()));
        s->tokens.assign(tokens, tokens + n_tokens);
        if (n_stop > 0) s->stop_ids.assign(stop_ids, stop_ids + n_stop);
        s->max_tokens = max_tokens;
        s->sampling.temperature = temperature;
        s->sampling.top_p = top_p;
        s->rng.seed(seed);
        s->flags = flags;
        return ctx->sched.add(std::move(s), out_seq_id);
    })
}

ENG_API int32_t eng_seq_add(eng_ctx *ctx, const int32_t *tokens, int32_t n_tokens, const int32_t *stop_ids,
                            int32_t n_stop, int32_t max_tokens, float temperature, float top_p, uint64_t seed,
                            uint32_t flags, int32_t *out_seq_id) {
    return seq_add(ctx, tokens, n_tokens, stop_ids, n_stop, max_tokens, temperature, top_p, seed, flags, nullptr, 0, nullptr,
                   nullptr, 0, out_seq_id);
}

ENG_API int32_t eng_seq_add_mm(eng_ctx *ctx, const int32_t *tokens, int32_t n_tokens, const int32_t *stop_ids,
                               int32_t n_stop, int32_t max_tokens, float temperature, float top_p, uint64_t seed,
                               uint32_t flags, const float *pixels, int64_t n_pixels, const int32_t *grids,
                               const uint64_t *image_hashes, int32_t n_images, int32_t *out_seq_id) {
    return seq_add(ctx, tokens, n_tokens, stop_ids, n_stop, max_tokens, temperature, top_p, seed, flags, pixels, n_pixels,
                   grids, image_hashes, n_images, out_seq_id);
}

ENG_API int32_t eng_seq_cancel(eng_ctx *ctx, int32_t seq_id) {
    if (!ctx) return fail(ENG_STATUS_INVALID_ARG, "eng_seq_cancel: null context");
    return ctx->sched.cancel(seq_id);
}

ENG_API int32_t eng_seq_logits(const eng_ctx *ctx, int32_t seq_id, float *out, int32_t cap) {
    if (!ctx || !out) return fail(ENG_STATUS_INVALID_ARG, "eng_seq_logits: null argument");
    const Sequence *s = ctx->sched.find(seq_id);
    if (!s) return fail(ENG_STATUS_UNKNOWN_SEQ, "no sequence %d", seq_id);
    int32_t V = (int32_t)ctx->info[ENG_INFO_N_VOCAB];
    if (!(s->flags & ENG_SEQ_KEEP_LOGITS) || s->logits.empty())
        return fail(ENG_STATUS_INVALID_ARG, "sequence %d has no kept logits (flag ENG_SEQ_KEEP_LOGITS, after a TOKEN event)", seq_id);
    if (cap < V) return fail(ENG_STATUS_INVALID_ARG, "logits buffer holds %d floats, needs %d", cap, V);
    memcpy(out, s->logits.data(), (size_t)V * sizeof(float));
    return V;
}

ENG_API int32_t eng_seq_mask(eng_ctx *ctx, int32_t seq_id, const uint32_t *mask, int32_t n_words) {
    if (!ctx || n_words < 0 || (n_words > 0 && !mask)) return fail(ENG_STATUS_INVALID_ARG, "eng_seq_mask: null argument");
    // find() is const for the readers; the sequence itself is owned mutably by the scheduler.
    Sequence *s = const_cast<Sequence *>(ctx->sched.find(seq_id));
    if (!s) return fail(ENG_STATUS_UNKNOWN_SEQ, "no sequence %d", seq_id);
    int32_t V = (int32_t)ctx->info[ENG_INFO_N_VOCAB], words = (V + 31) / 32;
    if (n_words == 0) {
        s->mask.clear();
        return ENG_STATUS_OK;
    }
    if (n_words != words) return fail(ENG_STATUS_INVALID_ARG, "mask has %d words, needs %d", n_words, words);
    if (V % 32 != 0 && (mask[words - 1] >> (V % 32)) != 0) return fail(ENG_STATUS_INVALID_ARG, "mask allows ids beyond the vocabulary");
    uint32_t any = 0;
    for (int32_t i = 0; i < words; i++) any |= mask[i];
    if (!any) return fail(ENG_STATUS_INVALID_ARG, "mask allows no token");
    ABI_GUARD({
        s->mask.assign(mask, mask + words);
        return ENG_STATUS_OK;
    })
}

ENG_API int32_t eng_step(eng_ctx *ctx, int32_t *out, int32_t cap) {
    if (!ctx || !out || cap < ENG_EVENT_INTS) return fail(ENG_STATUS_INVALID_ARG, "eng_step: buffer of at least one event required");
    ABI_GUARD({
        int32_t st = ENG_STATUS_OK;
        if (ctx->pending_pos >= ctx->pending.size()) {
            ctx->pending.clear();
            ctx->pending_pos = 0;
            st = ctx->sched.step(&ctx->pending);
        }
        size_t avail = (ctx->pending.size() - ctx->pending_pos) / ENG_EVENT_INTS;
        size_t n = (size_t)(cap / ENG_EVENT_INTS);
        if (n > avail) n = avail;
        memcpy(out, ctx->pending.data() + ctx->pending_pos, n * ENG_EVENT_INTS * sizeof(int32_t));
        ctx->pending_pos += n * ENG_EVENT_INTS;
        if (n == 0 && st < 0) return st;
        return (int32_t)n;
    })
}

} // extern "C"
