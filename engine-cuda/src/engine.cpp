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
#include "cuda/cuda_api.h" // defines: CudaOptions
#include "kernels.h"       // defines: Kernels, kernels_choose
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

#define ABI_GUARD(body)                                                            \
    try {                                                                          \
        body                                                                       \
    } catch (const std::bad_alloc &) {                                             \
        return fail(ENG_STATUS_OUT_OF_MEMORY, "out of memory");                    \
    } catch (...) {                                                                \
        return fail(ENG_STATUS_INTERNAL, "internal error (unexpected exception)"); \
    }

static int64_t param(const int64_t *params, int32_t n, int idx, int64_t def) {
    return (params && idx < n && params[idx] > 0) ? params[idx] : def;
}

/* The matrices' dtype as run (ENG_INFO_WEIGHT_DTYPE): q8 when any matrix was quantized at load, the
 * mixture's type (q4_k for Q4_K_M, q8_0, q4_0, q6_k) for a mixture made at load; else layer 0's attention output matrix stands for all (every
 * architecture has one, FP8 applies to all the big matrices alike, and a GGUF file's block types
 * are its own: Q8_0..Q6_K). */
static int64_t weight_dtype_run(const Model &m) {
    return m.has_q8()              ? DT_Q8
           : m.mixture != DT_OTHER ? m.mixture // the mixture made at load
           : m.layers.empty()      ? DT_F32
                                   : m.layers[0].wo.dtype;
}

/* Bytes of KV cache one token takes in n_kv_layer layers (the model's, + 1 for an MTP layer) with rows
 * of kv_dtype: MLA one row of the latent and the rope key, else a key and a value row per kv head. */
static int64_t kv_token_bytes(const ModelConfig &mc, int kv_dtype, int64_t n_kv_layer) {
    if (mc.is_mla()) return n_kv_layer * kv_row_bytes(kv_dtype, mc.kv_lora_rank + mc.qk_rope_dim);
    return n_kv_layer * 2LL * mc.n_head_kv * kv_row_bytes(kv_dtype, mc.head_dim);
}

static void fill_info(eng_ctx *c, int64_t n_ctx, int64_t bs, int64_t n_blocks, int64_t n_threads, int kv_dtype,
                      int64_t n_kv_layer) {
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
    in[ENG_INFO_WEIGHT_DTYPE] = weight_dtype_run(c->model);
    in[ENG_INFO_N_THREADS] = n_threads;
    in[ENG_INFO_KV_DTYPE] = kv_dtype;
    in[ENG_INFO_KV_BYTES_PER_TOKEN] = kv_token_bytes(mc, kv_dtype, n_kv_layer);
    in[ENG_INFO_KV_CAPACITY] = n_blocks * bs;
}

/* ENG_PARAM_BACKEND for this model: auto picks cuda when its library is built and sees a GPU, cpu
 * otherwise; a model only the CPU backend runs (vision, q8 weights) takes the CPU in auto mode and
 * is refused when cuda was asked for. Writes ENG_BACKEND_CPU or ENG_BACKEND_CUDA. */
static int32_t choose_backend(const eng_ctx *c, const int64_t *params, int32_t n_params, int64_t *out, bool *is_auto) {
    int64_t b = param(params, n_params, ENG_PARAM_BACKEND, ENG_BACKEND_AUTO);
    if (b > ENG_BACKEND_CUDA) return fail(ENG_STATUS_INVALID_ARG, "unknown backend %lld", (long long)b);
    *is_auto = b == ENG_BACKEND_AUTO;
    if (b == ENG_BACKEND_AUTO) b = cuda_backend_usable(nullptr) ? ENG_BACKEND_CUDA : ENG_BACKEND_CPU;
    if (c->model.vision && b == ENG_BACKEND_CUDA) { // M-RoPE and image embeddings exist on the CPU backend only
        if (!*is_auto)
            return fail(ENG_STATUS_UNSUPPORTED,
                        "cuda backend: vision models (Glm4vForConditionalGeneration) run on the CPU backend only");
        b = ENG_BACKEND_CPU;
    }
    if ((c->model.is_q8 || c->model.mixture != DT_OTHER) &&
        b == ENG_BACKEND_CUDA) { // the Q8 / GGUF kernels are the CPU's
        if (!*is_auto)
            return fail(ENG_STATUS_UNSUPPORTED, "weight dtype %s runs on the CPU backend only",
                        c->model.is_q8 ? "q8" : dtype_name(c->model.mixture));
        b = ENG_BACKEND_CPU;
    }
    *out = b;
    return ENG_STATUS_OK;
}

static int32_t configure(eng_ctx *c, const int64_t *params, int32_t n_params);

/* The CPU backend copies the matrices into huge pages (model_place_weights) when they take at most
 * half of MemAvailable, unless ENG_PARAM_WEIGHT_COPY is 2 or the kernel has transparent huge pages
 * off ("[never]": the copy would gain nothing). Returns that byte budget, or -1 for no copy. */
static int64_t weight_copy_budget(const int64_t *params, int32_t n_params) {
    if (param(params, n_params, ENG_PARAM_WEIGHT_COPY, 1) == 2) return -1;
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
    p[ENG_PARAM_BACKEND] = ENG_BACKEND_CPU;
    return configure(c, p.data(), ENG_PARAM_COUNT);
}

/* What configure() derives from the creation parameters and the model. */
struct Sizes {
    int64_t n_threads = 1, bs = 16, max_batch = 16, chunk = 256, n_ctx = 0, n_blocks = 0, max_logits = 16;
    int64_t spec = ENG_SPEC_OFF, max_draft = 0; // speculative decoding as run
    int64_t n_kv_layer = 0;                     // n_layer, + 1 for the MTP layer when MTP drafts
    int kv_dtype = ENG_KV_DTYPE_F32;
};

/* ENG_PARAM_KV_DTYPE (1 + ENG_KV_DTYPE_*), else the default: f32 for weights run at 16 bits or more
 * (the fixtures' exactness), ENG_KV_DTYPE_DEFAULT_SMALL for weights run at 8 bits or fewer (every
 * dtype code from ENG_WEIGHT_DTYPE_FP8 up: FP8, Q8 and the GGUF block types); the CUDA backend keeps
 * f32 by default and refuses others (cuda_backend_create). Returns OK or INVALID_ARG. */
static int32_t choose_kv_dtype(const Model &m, const int64_t *params, int32_t n_params, int64_t backend, int *out) {
    int64_t p = param(params, n_params, ENG_PARAM_KV_DTYPE, 0);
    if (p == 0) {
        *out = backend != ENG_BACKEND_CUDA && weight_dtype_run(m) >= ENG_WEIGHT_DTYPE_FP8 ? ENG_KV_DTYPE_DEFAULT_SMALL
                                                                                          : ENG_KV_DTYPE_F32;
        return ENG_STATUS_OK;
    }
    int64_t d = p - 1;
    if (d != ENG_KV_DTYPE_F32 && d != ENG_KV_DTYPE_F16 && d != ENG_KV_DTYPE_BF16 && d != ENG_KV_DTYPE_Q8_0)
        return fail(
            ENG_STATUS_INVALID_ARG,
            "ENG_PARAM_KV_DTYPE must be 0 (default) or 1 + ENG_KV_DTYPE_* (1 f32, 2 f16, 3 bf16, 9 q8_0), got %lld",
            (long long)p);
    *out = (int)d;
    return ENG_STATUS_OK;
}

/* Threads, KV block size, batch, prefill chunk, context limit (n_blocks: size_kv_cache) and the
 * speculative mode (has_mtp: the model has an MTP layer; backend: the one chosen). */
static int32_t read_sizes(const ModelConfig &mc, bool has_mtp, int64_t backend, const int64_t *params, int32_t n_params,
                          Sizes *s) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    s->n_threads = param(params, n_params, ENG_PARAM_N_THREADS, online > 0 ? online : 1);
    s->bs = param(params, n_params, ENG_PARAM_BLOCK_SIZE, 16);
    s->max_batch = param(params, n_params, ENG_PARAM_MAX_BATCH, 16);
    s->chunk = param(params, n_params, ENG_PARAM_PREFILL_CHUNK, 256);
    s->n_ctx = param(params, n_params, ENG_PARAM_N_CTX, mc.max_pos);
    s->max_logits = param(params, n_params, ENG_PARAM_MAX_LOGITS, 0);
    if (s->n_threads > 256 || s->bs > 4096 || s->max_batch > 4096 || s->chunk > (1 << 20) || s->max_logits > (1 << 20))
        return fail(ENG_STATUS_INVALID_ARG, "a creation parameter is out of range");
    int64_t spec = param(params, n_params, ENG_PARAM_SPECULATIVE, ENG_SPEC_AUTO);
    if (spec > ENG_SPEC_MTP) return fail(ENG_STATUS_INVALID_ARG, "unknown ENG_PARAM_SPECULATIVE %lld", (long long)spec);
    if (spec == ENG_SPEC_MTP && !has_mtp)
        return fail(ENG_STATUS_UNSUPPORTED,
                    "speculative decoding with MTP drafts needs a checkpoint with an MTP layer (GLM-4.5 / "
                    "DeepSeek-V3 num_nextn_predict_layers with model.layers.%d.eh_proj); this one has none (use "
                    "ngram or auto)",
                    mc.n_layer);
    if (spec == ENG_SPEC_MTP && backend == ENG_BACKEND_CUDA)
        return fail(ENG_STATUS_UNSUPPORTED, "speculative decoding with MTP drafts runs on the CPU backend only");
    s->max_draft = spec == ENG_SPEC_OFF ? 0 : param(params, n_params, ENG_PARAM_SPEC_MAX_DRAFT, 8);
    if (s->max_draft > 64) return fail(ENG_STATUS_INVALID_ARG, "ENG_PARAM_SPEC_MAX_DRAFT must be at most 64");
    // auto: MTP where the checkpoint has it (and the backend runs it), prompt lookup otherwise.
    bool mtp =
        has_mtp && backend == ENG_BACKEND_CPU && s->max_draft > 0 && (spec == ENG_SPEC_MTP || spec == ENG_SPEC_AUTO);
    s->spec = spec == ENG_SPEC_OFF ? ENG_SPEC_OFF : mtp ? ENG_SPEC_MTP : ENG_SPEC_NGRAM;
    s->n_kv_layer = mc.n_layer + (s->spec == ENG_SPEC_MTP ? 1 : 0);
    // Logits rows a step computes: by default a row for each sequence's pending token and drafts; at
    // least one per sequence (fewer than the default: drafts are cut to the rows left, scheduler.cpp).
    if (s->max_logits == 0) s->max_logits = s->max_batch * (1 + s->max_draft);
    if (s->max_logits < s->max_batch) s->max_logits = s->max_batch;
    if (s->n_ctx > mc.max_pos) s->n_ctx = mc.max_pos;
    return ENG_STATUS_OK;
}

/* ENG_PARAM_N_BLOCKS, else room for max_batch full contexts: on CUDA lowered later by the backend to
 * free device memory (and ENG_PARAM_KV_BYTES), on the CPU within ENG_PARAM_KV_BYTES (default 2 GiB;
 * pages are touched lazily). Lowers n_ctx so that one sequence always fits. */
static int32_t size_kv_cache(const ModelConfig &mc, const int64_t *params, int32_t n_params, int64_t backend,
                             Sizes *s) {
    int64_t block_bytes = kv_token_bytes(mc, s->kv_dtype, s->n_kv_layer) * s->bs;
    int64_t want = (s->max_batch * s->n_ctx + s->bs - 1) / s->bs;
    s->n_blocks = param(params, n_params, ENG_PARAM_N_BLOCKS, 0);
    if (s->n_blocks == 0 && backend == ENG_BACKEND_CUDA) {
        s->n_blocks = want > INT32_MAX / 2 ? INT32_MAX / 2 : want;
    } else if (s->n_blocks == 0) {
        int64_t budget = param(params, n_params, ENG_PARAM_KV_BYTES, 2LL << 30);
        s->n_blocks = budget / block_bytes < want ? budget / block_bytes : want;
        if (s->n_blocks < 1)
            return fail(ENG_STATUS_INVALID_ARG, "KV budget %lld bytes holds no block of %lld bytes", (long long)budget,
                        (long long)block_bytes);
    }
    if (s->n_blocks > INT32_MAX / 2) return fail(ENG_STATUS_INVALID_ARG, "too many KV blocks");
    if (s->n_ctx > s->n_blocks * s->bs) s->n_ctx = s->n_blocks * s->bs;
    return ENG_STATUS_OK;
}

static BackendConfig backend_config(const Sizes &s) {
    BackendConfig bc;
    bc.n_threads = (int32_t)s.n_threads;
    bc.block_size = (int32_t)s.bs;
    bc.n_blocks = (int32_t)s.n_blocks;
    bc.max_tokens = (int32_t)(s.chunk + s.max_batch * (1 + s.max_draft));
    bc.max_logits = (int32_t)s.max_logits;
    bc.n_ctx = (int32_t)s.n_ctx;
    bc.verify_rows = s.max_draft > 0 ? 16 : 0;
    bc.use_mtp = s.spec == ENG_SPEC_MTP;
    bc.kv_dtype = s.kv_dtype;
    return bc;
}

/* The CUDA backend with the ENG_PARAM_CUDA_* options and ENG_PARAM_KV_BYTES as its KV cap; n_blocks
 * and n_ctx come down to what it allocated. Returns its status (UNSUPPORTED: no library or GPU, or a
 * model its kernels lack). */
static int32_t create_cuda_backend(eng_ctx *c, const int64_t *params, int32_t n_params, Sizes *s) {
    CudaOptions opt;
    opt.kv_cap_bytes = param(params, n_params, ENG_PARAM_KV_BYTES, 0);
    int64_t device = param(params, n_params, ENG_PARAM_CUDA_DEVICE, 0);
    int64_t tc_min = param(params, n_params, ENG_PARAM_CUDA_TC_MIN_TOKENS, opt.tc_min_tokens);
    if (device > 4096)
        return fail(ENG_STATUS_INVALID_ARG, "ENG_PARAM_CUDA_DEVICE %lld is out of range", (long long)device);
    opt.device = (int32_t)device;
    opt.tc_min_tokens = (int32_t)(tc_min > (1 << 30) ? (1 << 30) : tc_min);
    opt.use_graphs = param(params, n_params, ENG_PARAM_CUDA_GRAPHS, 1) != 2;
    BackendConfig bc = backend_config(*s);
    int32_t st = cuda_backend_create(c->model, &bc, opt, &c->backend);
    if (st < 0) return st;
    s->n_blocks = bc.n_blocks;
    if (s->n_ctx > s->n_blocks * s->bs) s->n_ctx = s->n_blocks * s->bs;
    return ENG_STATUS_OK;
}

/* The CPU backend on kernel table k, after placing the weights (weight_copy_budget). */
static int32_t create_cpu_backend(eng_ctx *c, const int64_t *params, int32_t n_params, const Kernels &k,
                                  const Sizes &s) {
    bool placed;
    model_check_f8(&c->model);
    ENG_TRY(model_place_weights(&c->model, weight_copy_budget(params, n_params), &placed));
    return cpu_backend_create(c->model, backend_config(s), k, &c->backend);
}

/* The block manager, the scheduler and (vision models) the image encoder over the built backend. */
static int32_t init_scheduler(eng_ctx *c, const Sizes &s, const Kernels &k) {
    const ModelConfig &mc = c->model.cfg;
    c->bm.init((int32_t)s.n_blocks, (int32_t)s.bs);
    SchedulerConfig sc;
    sc.max_batch = (int32_t)s.max_batch;
    sc.prefill_chunk = (int32_t)s.chunk;
    sc.n_ctx = (int32_t)s.n_ctx;
    sc.n_vocab = mc.n_vocab;
    sc.max_draft = (int32_t)s.max_draft;
    sc.use_mtp = s.spec == ENG_SPEC_MTP;
    sc.mtp_lookup = sc.use_mtp; // the MTP layer drafts, prompt lookup where it is the better bet
    sc.n_embd = mc.n_embd;
    sc.max_logits = (int32_t)s.max_logits;
    ENG_TRY(c->sched.init(sc, &c->bm, c->backend.get()));
    if (c->model.vision) {
        c->vision.reset(new VisionEncoder());
        ENG_TRY(c->vision->init(*c->model.vision, (int)s.n_threads, k));
        c->sched.set_vision(c->vision.get(), mc.n_embd);
    }
    c->pending.reserve((size_t)((4 + s.max_draft) * s.max_batch + 1) * ENG_EVENT_INTS);
    fill_info(c, s.n_ctx, s.bs, s.n_blocks, s.n_threads, s.kv_dtype, s.n_kv_layer);
    c->info[ENG_INFO_SPECULATIVE] = s.spec;
    c->info[ENG_INFO_SPEC_MAX_DRAFT] = s.max_draft;
    return ENG_STATUS_OK;
}

/* Builds the context's runtime from the creation parameters: the CPU kernel table (ENG_PARAM_SIMD,
 * chosen per context), the backend, the KV cache sizes, then the scheduler. */
static int32_t configure(eng_ctx *c, const int64_t *params, int32_t n_params) {
    const Kernels *k = nullptr;
    int64_t backend = ENG_BACKEND_CPU;
    bool is_auto = false;
    Sizes s;
    ENG_TRY(kernels_choose(param(params, n_params, ENG_PARAM_SIMD, 0), &k));
    ENG_TRY(choose_backend(c, params, n_params, &backend, &is_auto));
    int64_t spec = param(params, n_params, ENG_PARAM_SPECULATIVE, ENG_SPEC_AUTO);
    // MTP drafts run on the CPU: an explicit mtp with the backend on auto goes there. Speculation on
    // auto keeps a model the GPU runs on the GPU, with prompt lookup (a dense model's MTP layer on the
    // CPU would be slower than the GPU without it); a model the GPU lacks (MoE) falls back below.
    if (backend == ENG_BACKEND_CUDA && is_auto && !c->model.mtp.empty() && spec == ENG_SPEC_MTP)
        return configure_cpu_fallback(c, params, n_params);
    ENG_TRY(read_sizes(c->model.cfg, !c->model.mtp.empty(), backend, params, n_params, &s));
    ENG_TRY(choose_kv_dtype(c->model, params, n_params, backend, &s.kv_dtype));
    ENG_TRY(size_kv_cache(c->model.cfg, params, n_params, backend, &s));
    if (backend == ENG_BACKEND_CUDA) {
        int32_t st = create_cuda_backend(c, params, n_params, &s);
        if (st == ENG_STATUS_UNSUPPORTED && is_auto) { // auto: a model the GPU path lacks runs on the CPU
            clear_error();
            return configure_cpu_fallback(c, params, n_params);
        }
        ENG_TRY(st);
    } else {
        ENG_TRY(create_cpu_backend(c, params, n_params, *k, s));
    }
    return init_scheduler(c, s, *k);
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
        if (wd != 0 && wd != ENG_WEIGHT_DTYPE_Q8 && wd != ENG_WEIGHT_DTYPE_Q4_K && wd != ENG_WEIGHT_DTYPE_Q8_0 &&
            wd != ENG_WEIGHT_DTYPE_Q4_0 && wd != ENG_WEIGHT_DTYPE_Q6_K) {
            delete c;
            return fail(ENG_STATUS_INVALID_ARG,
                        "ENG_PARAM_WEIGHT_DTYPE must be 0 (as stored), %d (q8), %d (q4_k_m), %d (q8_0), %d (q4_0) or "
                        "%d (q6_k), got %lld",
                        ENG_WEIGHT_DTYPE_Q8, ENG_WEIGHT_DTYPE_Q4_K, ENG_WEIGHT_DTYPE_Q8_0, ENG_WEIGHT_DTYPE_Q4_0,
                        ENG_WEIGHT_DTYPE_Q6_K, (long long)wd);
        }
        c->model.is_q8 = wd == ENG_WEIGHT_DTYPE_Q8;
        c->model.mixture = wd == 0 || wd == ENG_WEIGHT_DTYPE_Q8 ? DT_OTHER : (DType)wd;
        int64_t nt = param(params, n_params, ENG_PARAM_N_THREADS, 0);
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        c->model.quant_threads = (int)(nt > 0 ? nt : cores > 0 ? cores : 1);
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

ENG_API int32_t eng_cuda_lib_set(const char *path){ABI_GUARD({ return cuda_library_set(path); })}

ENG_API void eng_ctx_free(eng_ctx *ctx) {
    delete ctx;
}

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
    v[ENG_STAT_DRAFT_TOKENS] = s.draft_tokens;
    v[ENG_STAT_DRAFT_ACCEPTED] = s.draft_accepted;
    v[ENG_STAT_DECODE_PASSES] = s.decode_passes;
    v[ENG_STAT_MTP_DRAFTS] = s.mtp_drafts;
    v[ENG_STAT_MTP_FIRST_ACCEPTED] = s.mtp_drafts_accepted;
    v[ENG_STAT_MTP_DRAFT_TOKENS] = s.mtp_draft_tokens;
    v[ENG_STAT_MTP_DRAFT_ACCEPTED] = s.mtp_draft_accepted;
    v[ENG_STAT_TOKEN_COST_PPM] = (int64_t)(ctx->sched.token_cost() * 1e6 + 0.5);
    int32_t n = cap < ENG_STAT_COUNT ? cap : ENG_STAT_COUNT;
    memcpy(out, v, (size_t)n * sizeof(int64_t));
    return n;
}

/* Checks the images of eng_seq_add_mm against the prompt and the vision config; fills s->images
 * (tok0, grid, hash, pixels) and the M-RoPE positions. n_images 0: only refuses placeholders. */
static int32_t add_images(const eng_ctx *ctx, const int32_t *tokens, int32_t n_tokens, const float *pixels,
                          int64_t n_pixels, const int32_t *grids, const uint64_t *hashes, int32_t n_images,
                          Sequence *s) {
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
            return fail(ENG_STATUS_INVALID_ARG,
                        "image %d: grid (%d, %d, %d) must be t >= 1 and h, w positive multiples of %d", i, g[0], g[1],
                        g[2], merge);
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
        return fail(ENG_STATUS_INVALID_ARG, "eng_seq_add_mm: %lld pixel floats given, the grids need %lld",
                    (long long)n_pixels, (long long)want);
    // Each image's placeholders: one consecutive run of exactly its token count, images in order.
    int32_t k = 0, got = 0;
    for (int32_t i = 0; i < n_tokens; i++) {
        if (tokens[i] != image_id) {
            if (got > 0)
                return fail(ENG_STATUS_INVALID_ARG, "image %d has %d consecutive image tokens in the prompt, needs %d",
                            k, got, s->images[(size_t)k].n_tok);
            continue;
        }
        if (k >= n_images)
            return fail(ENG_STATUS_INVALID_ARG, "the prompt holds more image tokens (id %d) than its %d images take",
                        image_id, n_images);
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
                       int32_t max_tokens, float temperature, float top_p, int32_t top_k, uint64_t seed, uint32_t flags,
                       const float *pixels, int64_t n_pixels, const int32_t *grids, const uint64_t *hashes,
                       int32_t n_images, int32_t *out_seq_id) {
    if (!ctx || !tokens || n_tokens < 1 || !out_seq_id || n_stop < 0 || (n_stop > 0 && !stop_ids))
        return fail(ENG_STATUS_INVALID_ARG, "eng_seq_add: tokens (n >= 1), stop ids and out_seq_id are required");
    if (max_tokens < 1) return fail(ENG_STATUS_INVALID_ARG, "max_tokens must be >= 1 (got %d)", max_tokens);
    if (!(temperature == temperature) || isinf(temperature))
        return fail(ENG_STATUS_INVALID_ARG, "temperature must be finite");
    if (!(top_p > 0.0f && top_p <= 1.0f)) return fail(ENG_STATUS_INVALID_ARG, "top_p must be in (0, 1]");
    if (top_k < 0) return fail(ENG_STATUS_INVALID_ARG, "top_k must be >= 0 (got %d)", top_k);
    if (flags & ~(uint32_t)(ENG_SEQ_KEEP_LOGITS | ENG_SEQ_REPORT_PROGRESS | ENG_SEQ_PROMPT_LOGITS))
        return fail(ENG_STATUS_INVALID_ARG, "unknown flags 0x%x", flags);
    if ((flags & ENG_SEQ_PROMPT_LOGITS) && ctx->info[ENG_INFO_BACKEND] != ENG_BACKEND_CPU)
        return fail(ENG_STATUS_UNSUPPORTED, "prompt logits (ENG_SEQ_PROMPT_LOGITS) run on the cpu backend only");
    int32_t V = (int32_t)ctx->info[ENG_INFO_N_VOCAB];
    for (int32_t i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return fail(ENG_STATUS_INVALID_ARG, "prompt token %d at index %d is outside the vocabulary (%d)", tokens[i],
                        i, V);
    ABI_GUARD({
        std::unique_ptr<Sequence> s(new Sequence());
        ENG_TRY(add_images(ctx, tokens, n_tokens, pixels, n_pixels, grids, hashes, n_images, s.get()));
        s->tokens.assign(tokens, tokens + n_tokens);
        if (n_stop > 0) s->stop_ids.assign(stop_ids, stop_ids + n_stop);
        s->max_tokens = max_tokens;
        s->sampling.temperature = temperature;
        s->sampling.top_p = top_p;
        s->sampling.top_k = top_k;
        s->rng.seed(seed);
        s->flags = flags;
        return ctx->sched.add(std::move(s), out_seq_id);
    })
}

ENG_API int32_t eng_seq_add(eng_ctx *ctx, const int32_t *tokens, int32_t n_tokens, const int32_t *stop_ids,
                            int32_t n_stop, int32_t max_tokens, float temperature, float top_p, int32_t top_k,
                            uint64_t seed, uint32_t flags, int32_t *out_seq_id) {
    return seq_add(ctx, tokens, n_tokens, stop_ids, n_stop, max_tokens, temperature, top_p, top_k, seed, flags, nullptr,
                   0, nullptr, nullptr, 0, out_seq_id);
}

ENG_API int32_t eng_seq_add_mm(eng_ctx *ctx, const int32_t *tokens, int32_t n_tokens, const int32_t *stop_ids,
                               int32_t n_stop, int32_t max_tokens, float temperature, float top_p, int32_t top_k,
                               uint64_t seed, uint32_t flags, const float *pixels, int64_t n_pixels,
                               const int32_t *grids, const uint64_t *image_hashes, int32_t n_images,
                               int32_t *out_seq_id) {
    return seq_add(ctx, tokens, n_tokens, stop_ids, n_stop, max_tokens, temperature, top_p, top_k, seed, flags, pixels,
                   n_pixels, grids, image_hashes, n_images, out_seq_id);
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
        return fail(ENG_STATUS_INVALID_ARG,
                    "sequence %d has no kept logits (flag ENG_SEQ_KEEP_LOGITS, after a TOKEN event)", seq_id);
    if (cap < V) return fail(ENG_STATUS_INVALID_ARG, "logits buffer holds %d floats, needs %d", cap, V);
    memcpy(out, s->logits.data(), (size_t)V * sizeof(float));
    return V;
}

ENG_API int32_t eng_seq_prompt_logits(const eng_ctx *ctx, int32_t seq_id, float *out, int64_t cap) {
    if (!ctx || !out) return fail(ENG_STATUS_INVALID_ARG, "eng_seq_prompt_logits: null argument");
    const Sequence *s = ctx->sched.find(seq_id);
    if (!s) return fail(ENG_STATUS_UNKNOWN_SEQ, "no sequence %d", seq_id);
    int64_t V = ctx->info[ENG_INFO_N_VOCAB], need = (int64_t)s->n_prompt * V;
    if (!(s->flags & ENG_SEQ_PROMPT_LOGITS) || !s->is_prefill_reported || (int64_t)s->prompt_logits.size() != need)
        return fail(ENG_STATUS_INVALID_ARG,
                    "sequence %d has no prompt logits (flag ENG_SEQ_PROMPT_LOGITS, after its PREFILLED event)", seq_id);
    if (cap < need)
        return fail(ENG_STATUS_INVALID_ARG, "logits buffer holds %lld floats, needs %lld", (long long)cap,
                    (long long)need);
    memcpy(out, s->prompt_logits.data(), (size_t)need * sizeof(float));
    return s->n_prompt;
}

ENG_API int32_t eng_seq_mask(eng_ctx *ctx, int32_t seq_id, const uint32_t *mask, int32_t n_words) {
    if (!ctx || n_words < 0 || (n_words > 0 && !mask))
        return fail(ENG_STATUS_INVALID_ARG, "eng_seq_mask: null argument");
    // find() is const for the readers; the sequence itself is owned mutably by the scheduler.
    Sequence *s = const_cast<Sequence *>(ctx->sched.find(seq_id));
    if (!s) return fail(ENG_STATUS_UNKNOWN_SEQ, "no sequence %d", seq_id);
    int32_t V = (int32_t)ctx->info[ENG_INFO_N_VOCAB], words = (V + 31) / 32;
    if (n_words == 0) {
        s->mask.clear();
        return ENG_STATUS_OK;
    }
    if (n_words != words) return fail(ENG_STATUS_INVALID_ARG, "mask has %d words, needs %d", n_words, words);
    if (V % 32 != 0 && (mask[words - 1] >> (V % 32)) != 0)
        return fail(ENG_STATUS_INVALID_ARG, "mask allows ids beyond the vocabulary");
    uint32_t any = 0;
    for (int32_t i = 0; i < words; i++) any |= mask[i];
    if (!any) return fail(ENG_STATUS_INVALID_ARG, "mask allows no token");
    ABI_GUARD({
        s->mask.assign(mask, mask + words);
        return ENG_STATUS_OK;
    })
}

ENG_API int32_t eng_seq_draft(eng_ctx *ctx, int32_t seq_id, const int32_t *tokens, int32_t n, const uint32_t *masks,
                              int32_t n_words) {
    if (!ctx || n < 0 || (n > 0 && !tokens) || n_words < 0 || (n_words > 0 && n > 0 && !masks))
        return fail(ENG_STATUS_INVALID_ARG, "eng_seq_draft: null argument");
    Sequence *s = const_cast<Sequence *>(ctx->sched.find(seq_id));
    if (!s) return fail(ENG_STATUS_UNKNOWN_SEQ, "no sequence %d", seq_id);
    int64_t max_draft = ctx->info[ENG_INFO_SPEC_MAX_DRAFT];
    if (n > max_draft)
        return fail(ENG_STATUS_INVALID_ARG, "draft of %d tokens exceeds the most per step (%lld%s)", n,
                    (long long)max_draft, max_draft == 0 ? ": speculative decoding is off" : "");
    int32_t V = (int32_t)ctx->info[ENG_INFO_N_VOCAB];
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return fail(ENG_STATUS_INVALID_ARG, "drafted token %d at index %d is outside the vocabulary (%d)",
                        tokens[i], i, V);
    int32_t words = (V + 31) / 32;
    if (n_words != 0 && n_words != words)
        return fail(ENG_STATUS_INVALID_ARG, "draft masks have %d words, need %d", n_words, words);
    ABI_GUARD({
        s->host_draft.assign(tokens, tokens + n);
        if (n_words > 0) s->host_draft_masks.assign(masks, masks + (size_t)n * (size_t)words);
        else s->host_draft_masks.clear();
        return ENG_STATUS_OK;
    })
}

ENG_API int32_t eng_step(eng_ctx *ctx, int32_t *out, int32_t cap) {
    if (!ctx || !out || cap < ENG_EVENT_INTS)
        return fail(ENG_STATUS_INVALID_ARG, "eng_step: buffer of at least one event required");
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
