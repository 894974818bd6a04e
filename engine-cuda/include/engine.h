/* engine.h: the entire C ABI of Maya's inference engine.
 *
 * One opaque context owns a loaded checkpoint, its backend (CPU, or CUDA in its own library), a paged KV
 * cache with prefix reuse, and a FIFO scheduler doing continuous batching. The host (ffi.ts)
 * adds sequences, polls eng_step() for token events and cancels sequences; the library never
 * calls back into the host, never exits and never prints.
 *
 * Rules: scalars, pointers and caller-owned buffers only (no structs by value, for bun:ffi and
 * koffi alike). Every function returning int32_t returns a status: 0 = ok, > 0 = recoverable,
 * < 0 = failure; eng_status_str() names it and eng_last_error() gives the detail of the most
 * recent failure on the calling thread. A context is not thread-safe: one thread drives it.
 *
 * Shapes (used in comments across engine-cuda/src): B = sequences in a step, T = tokens,
 * C = hidden size, H = query heads, Hkv = key/value heads, D = head size, V = vocabulary.
 */
#ifndef MAYA_ENGINE_H
#define MAYA_ENGINE_H

#include <stdint.h>

#if defined(_WIN32)
#define ENG_API __declspec(dllexport)
#else
#define ENG_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ENG_ABI_VERSION 12

typedef struct eng_ctx eng_ctx;

/* Status codes. */
enum {
    ENG_STATUS_OK = 0,
    ENG_STATUS_NO_KV_SPACE = 1, /* recoverable: retry when blocks free up */
    ENG_STATUS_INVALID_ARG = -1,
    ENG_STATUS_IO = -2,               /* a file could not be opened, read or mapped */
    ENG_STATUS_BAD_CHECKPOINT = -3,   /* config/safetensors malformed, tensor missing, shape mismatch */
    ENG_STATUS_UNSUPPORTED = -4,      /* architecture, dtype or backend not supported */
    ENG_STATUS_CONTEXT_OVERFLOW = -5, /* prompt + max_tokens exceeds the model's context */
    ENG_STATUS_OUT_OF_MEMORY = -6,
    ENG_STATUS_UNKNOWN_SEQ = -7,
    ENG_STATUS_BACKEND = -8, /* a backend (CUDA) call failed */
    ENG_STATUS_INTERNAL = -9
};

/* Creation parameters: a flat int64 array indexed by ENG_PARAM_*. A value <= 0 (or an array
 * shorter than the index) means "choose the default". The library reads no environment variable:
 * every setting arrives here (the host's config/ reads MAYA_* and encodes them, see ffi.ts). */
enum {
    ENG_PARAM_BACKEND = 0,       /* 0 auto (cuda when its library is built and sees a GPU, else cpu), 1 cpu, 2 cuda */
    ENG_PARAM_N_THREADS = 1,     /* CPU worker threads; default: online cores */
    ENG_PARAM_BLOCK_SIZE = 2,    /* tokens per KV block; default 16 */
    ENG_PARAM_N_BLOCKS = 3,      /* KV blocks; default sized from ENG_PARAM_KV_BYTES */
    ENG_PARAM_KV_BYTES = 4,      /* KV cache budget in bytes when N_BLOCKS is unset (CPU: default 2 GiB, pages
                                    touched lazily; CUDA: a cap below free device memory, default none) */
    ENG_PARAM_MAX_BATCH = 5,     /* most sequences decoded in one step; default 16 */
    ENG_PARAM_PREFILL_CHUNK = 6, /* most prompt tokens prefilled in one step; default 256 */
    ENG_PARAM_N_CTX = 7,         /* context limit; default (and maximum) max_position_embeddings */
    ENG_PARAM_WEIGHT_DTYPE = 8,  /* 0 as stored; ENG_WEIGHT_DTYPE_Q8: matrices quantized at load to int8 per
                                    block of 32 with an f32 scale; ENG_WEIGHT_DTYPE_Q4_K: llama.cpp's Q4_K_M
                                    mixture made at load (Q4_K, some Q6_K; Q5_0 / Q8_0 where rows are
                                    not whole 256-blocks); ENG_WEIGHT_DTYPE_Q8_0 / Q4_0 / Q6_K: llama.cpp's
                                    Q8_0 / Q4_0 / Q6_K files' mixtures (the output matrix Q6_K in the
                                    latter two). CPU backend only; MoE routers and matrices
                                    whose columns are not a multiple of 32 stay as stored */
    ENG_PARAM_SIMD = 9,          /* CPU kernel path of this context: 0 the fastest this CPU runs, else
                                    1 + ENG_SIMD_* (UNSUPPORTED when the CPU or the build lacks it) */
    ENG_PARAM_WEIGHT_COPY = 10,  /* CPU backend: 0/1 copy the matrices into transparent huge pages when they
                                    take at most half of MemAvailable; 2 keep them in the checkpoint mapping */
    ENG_PARAM_CUDA_DEVICE = 11,  /* CUDA device ordinal; default 0 */
    ENG_PARAM_CUDA_TC_MIN_TOKENS = 12, /* CUDA: a matmul over at least this many tokens uses the tensor-core
                                    bf16 gemm; default 16 (a value above any batch, e.g. 1 << 30: never) */
    ENG_PARAM_CUDA_GRAPHS = 13,        /* CUDA: 0/1 replay decode steps as CUDA graphs; 2 launch each kernel */
    ENG_PARAM_SPECULATIVE = 14,        /* speculative decoding: ENG_SPEC_* (0 auto: the checkpoint's MTP layer
                                          where it has one (CPU backend), else prompt lookup; ENG_SPEC_MTP
                                          without an MTP layer, or on CUDA, is UNSUPPORTED) */
    ENG_PARAM_SPEC_MAX_DRAFT = 15,     /* most drafted tokens a sequence verifies in one step; default 8, at most 64 */
    ENG_PARAM_KV_DTYPE = 16,           /* KV cache rows: 1 + ENG_KV_DTYPE_*; default (0): f32 for weights run as f32,
                                  f16 or bf16, ENG_KV_DTYPE_DEFAULT_SMALL for weights run at 8 bits or fewer
                                  (ENG_INFO_WEIGHT_DTYPE >= ENG_WEIGHT_DTYPE_FP8); CUDA: f32 only */
    ENG_PARAM_MAX_LOGITS = 17,         /* most rows of logits one step computes; default MAX_BATCH x (1 + SPEC_MAX_DRAFT
                                  as run), minimum MAX_BATCH (below the default, drafts are cut to the rows
                                  left). ENG_SEQ_PROMPT_LOGITS sequences prefill at most this many tokens a step */
    ENG_PARAM_COUNT = 18
};

/* Fields of eng_ctx_info() (fixed for the context's life). */
enum {
    ENG_INFO_N_VOCAB = 0,
    ENG_INFO_N_CTX = 1,
    ENG_INFO_N_LAYER = 2,
    ENG_INFO_N_EMBD = 3,
    ENG_INFO_N_HEAD = 4,
    ENG_INFO_N_HEAD_KV = 5,
    ENG_INFO_HEAD_DIM = 6,
    ENG_INFO_BLOCK_SIZE = 7,
    ENG_INFO_N_BLOCKS = 8,
    ENG_INFO_BACKEND = 9, /* ENG_BACKEND_CPU or ENG_BACKEND_CUDA */
    ENG_INFO_ARCH = 10,   /* ENG_ARCH_* */
    ENG_INFO_N_PARAMS = 11,
    ENG_INFO_WEIGHT_BYTES = 12,       /* bytes of weights one decoded token reads */
    ENG_INFO_SIMD = 13,               /* the CPU kernel path: ENG_SIMD_* */
    ENG_INFO_N_PARAMS_ACTIVE = 14,    /* parameters one token uses (MoE: K of E routed experts) */
    ENG_INFO_VISION = 15,             /* 1: the checkpoint has a vision encoder (eng_seq_add_mm takes images) */
    ENG_INFO_WEIGHT_DTYPE = 16,       /* the matrices' dtype as run: ENG_WEIGHT_DTYPE_* (Q8: quantized at load) */
    ENG_INFO_N_THREADS = 17,          /* CPU worker threads (ENG_PARAM_N_THREADS, else online cores) */
    ENG_INFO_SPECULATIVE = 18,        /* speculative decoding as run: ENG_SPEC_OFF, _NGRAM or _MTP */
    ENG_INFO_SPEC_MAX_DRAFT = 19,     /* most drafted tokens per sequence and step (0 when off) */
    ENG_INFO_KV_DTYPE = 20,           /* the KV cache's rows: ENG_KV_DTYPE_* */
    ENG_INFO_KV_BYTES_PER_TOKEN = 21, /* KV cache bytes one token takes, all layers (with MTP drafts, its layer too) */
    ENG_INFO_KV_CAPACITY = 22,        /* tokens the whole KV cache holds (N_BLOCKS * BLOCK_SIZE) */
    ENG_INFO_COUNT = 23
};

/* Codes of backends (ENG_PARAM_BACKEND, ENG_INFO_BACKEND), architectures (ENG_INFO_ARCH, by the
 * checkpoint's config.json architectures[0]), CPU kernel paths (ENG_INFO_SIMD; ENG_PARAM_SIMD takes
 * them plus one) and weight dtypes (ENG_INFO_WEIGHT_DTYPE; ENG_PARAM_WEIGHT_DTYPE takes Q8). */
enum { ENG_BACKEND_AUTO = 0, ENG_BACKEND_CPU = 1, ENG_BACKEND_CUDA = 2 };
enum {
    ENG_ARCH_GLM4 = 1,        /* Glm4ForCausalLM */
    ENG_ARCH_LLAMA = 2,       /* LlamaForCausalLM */
    ENG_ARCH_QWEN3 = 3,       /* Qwen3ForCausalLM */
    ENG_ARCH_GLM4_MOE = 4,    /* Glm4MoeForCausalLM */
    ENG_ARCH_DEEPSEEK_V3 = 5, /* DeepseekV3ForCausalLM */
    ENG_ARCH_GLM4V = 6,       /* Glm4vForConditionalGeneration */
    ENG_ARCH_GLM4V_MOE = 7,   /* Glm4vMoeForConditionalGeneration */
    ENG_ARCH_QWEN3_MOE = 8    /* Qwen3MoeForCausalLM */
};
enum { ENG_SIMD_SCALAR = 0, ENG_SIMD_AVX2 = 1, ENG_SIMD_AVX512 = 2 };
enum {
    ENG_WEIGHT_DTYPE_F32 = 0,
    ENG_WEIGHT_DTYPE_F16 = 1,
    ENG_WEIGHT_DTYPE_BF16 = 2,
    ENG_WEIGHT_DTYPE_FP8 = 4, /* float8 e4m3, block-scaled (3: no matrix dtype) */
    ENG_WEIGHT_DTYPE_Q8 = 5,  /* int8 per block of 32 with an f32 scale, made at load */
    /* GGUF (ggml) block formats, stored exactly as ggml lays them out (ggml-common.h): a row of K
     * weights is K / block weights of blocks; 7 is unused. As ENG_PARAM_WEIGHT_DTYPE, Q4_K asks
     * for llama.cpp's Q4_K_M mixture made at load (Q4_K, some matrices Q6_K; see model.cpp). */
    ENG_WEIGHT_DTYPE_Q8_0 = 8,  /* 32 weights in 34 bytes */
    ENG_WEIGHT_DTYPE_Q4_0 = 9,  /* 32 weights in 18 bytes */
    ENG_WEIGHT_DTYPE_Q4_1 = 10, /* 32 weights in 20 bytes */
    ENG_WEIGHT_DTYPE_Q5_0 = 11, /* 32 weights in 22 bytes */
    ENG_WEIGHT_DTYPE_Q5_1 = 12, /* 32 weights in 24 bytes */
    ENG_WEIGHT_DTYPE_Q4_K = 13, /* 256 weights in 144 bytes */
    ENG_WEIGHT_DTYPE_Q5_K = 14, /* 256 weights in 176 bytes */
    ENG_WEIGHT_DTYPE_Q6_K = 15  /* 256 weights in 210 bytes */
};
/* Speculative decoding modes (ENG_PARAM_SPECULATIVE, ENG_INFO_SPECULATIVE). */
enum { ENG_SPEC_AUTO = 0, ENG_SPEC_OFF = 1, ENG_SPEC_NGRAM = 2, ENG_SPEC_MTP = 3 };
/* KV cache row formats (ENG_PARAM_KV_DTYPE takes them plus one; the codes of the same formats among
 * the weight dtypes). q8_0: ggml's block_q8_0, an f16 scale per 32 values (a row's last block may be
 * shorter). */
enum { ENG_KV_DTYPE_F32 = 0, ENG_KV_DTYPE_F16 = 1, ENG_KV_DTYPE_BF16 = 2, ENG_KV_DTYPE_Q8_0 = 8 };
#define ENG_KV_DTYPE_DEFAULT_SMALL ENG_KV_DTYPE_F16

/* Fields of eng_ctx_stats() (a snapshot; counters are cumulative). */
enum {
    ENG_STAT_BLOCKS_TOTAL = 0,
    ENG_STAT_BLOCKS_FREE = 1,
    ENG_STAT_BLOCKS_CACHED = 2,
    ENG_STAT_SEQS_WAITING = 3,
    ENG_STAT_SEQS_RUNNING = 4,
    ENG_STAT_STEPS = 5,
    ENG_STAT_PREFILL_TOKENS = 6,
    ENG_STAT_CACHED_TOKENS = 7,
    ENG_STAT_DECODE_TOKENS = 8, /* tokens generated by decode passes (the first token of a prompt is prefill's) */
    ENG_STAT_PREEMPTIONS = 9,
    ENG_STAT_IMAGES_ENCODED = 10, /* images run through the vision encoder */
    ENG_STAT_ENCODE_US = 11,      /* microseconds spent encoding them (wall clock) */
    ENG_STAT_ENCODE_CPU_US = 12,  /* CPU microseconds of the whole process meanwhile (all threads) */
    ENG_STAT_DRAFT_TOKENS = 13,   /* drafted tokens scored by verification passes */
    ENG_STAT_DRAFT_ACCEPTED = 14, /* of those, accepted (the output is unchanged by them: see eng_step) */
    ENG_STAT_DECODE_PASSES = 15,  /* decode passes: one per decoding sequence and step (DECODE_TOKENS counts the
                                     tokens they produced; DECODE_TOKENS / DECODE_PASSES = tokens per pass) */
    /* Of the drafts, the MTP layer's (speculative mode mtp or auto on a checkpoint with one; prompt
     * lookup's and the host's are not counted here): */
    ENG_STAT_MTP_DRAFTS = 16,         /* passes that verified an MTP draft (one first drafted token each) */
    ENG_STAT_MTP_FIRST_ACCEPTED = 17, /* of those, the ones whose first drafted token was accepted */
    ENG_STAT_MTP_DRAFT_TOKENS = 18,   /* their drafted tokens, the chained ones included */
    ENG_STAT_MTP_DRAFT_ACCEPTED = 19, /* of those, accepted */
    /* Not a counter: the turn-down's current cost of one more token in a decode pass, in millionths
     * of a generated token's time (measured: the step cost model's slope over the mean time per
     * generated token; 0 before it has enough steps, or with speculation off). A host that drafts
     * (eng_seq_draft) weighs its drafts with it. */
    ENG_STAT_TOKEN_COST_PPM = 20,
    ENG_STAT_COUNT = 21
};

/* A step writes events of 4 int32 each: { seq_id, kind, token, value }. */
enum {
    ENG_EVENT_PREFILLED = 1,       /* prompt fully prefilled; value = prompt tokens served from cache */
    ENG_EVENT_TOKEN = 2,           /* token = sampled token id; value = tokens generated so far */
    ENG_EVENT_FINISH = 3,          /* value = ENG_FINISH_*; the sequence is gone after this event */
    ENG_EVENT_PREFILL_PROGRESS = 4 /* ENG_SEQ_REPORT_PROGRESS sequences, once per prompt prefill chunk:
                                      token = prompt tokens served from cache, value = prompt tokens
                                      whose K/V are in the cache after the chunk (cached included) */
};
enum { ENG_FINISH_STOP = 1, ENG_FINISH_LENGTH = 2, ENG_FINISH_CANCELLED = 3, ENG_FINISH_ERROR = 4 };
#define ENG_EVENT_INTS 4

/* Sequence flags. PROMPT_LOGITS: keep the logits of every prompt position (eng_seq_prompt_logits,
 * for scoring a text); such a sequence never takes its prompt from the prefix cache, never drafts
 * (speculative decoding is off for it), and prefills at most ENG_PARAM_MAX_LOGITS tokens a step
 * (CPU backend only). */
enum {
    ENG_SEQ_KEEP_LOGITS = 1,     /* keep the logits of the latest sampled position (eng_seq_logits) */
    ENG_SEQ_REPORT_PROGRESS = 2, /* report ENG_EVENT_PREFILL_PROGRESS while the prompt is prefilled */
    ENG_SEQ_PROMPT_LOGITS = 4    /* keep the logits of every prompt position (see above) */
};

ENG_API int32_t eng_abi_version(void);
ENG_API const char *eng_status_str(int32_t status);
/* Detail of the latest failure on this thread. Returns its length; -needed if len is too small. */
ENG_API int32_t eng_last_error(char *buf, int32_t len);

/* Loads a Hugging Face model directory (config.json + safetensors), or a llama.cpp GGUF file (a path
 * ending in .gguf; of a split set, the first file). Writes the context to *out.
 * Returns OK, INVALID_ARG, IO, BAD_CHECKPOINT, UNSUPPORTED, OUT_OF_MEMORY, BACKEND. */
ENG_API int32_t eng_ctx_create(const char *model_dir, const int64_t *params, int32_t n_params, eng_ctx **out);
/* Where the CUDA backend's library is loaded from; default libmaya_engine_cuda.so beside this
 * library. It is loaded once per process, by the first eng_ctx_create whose backend is auto or
 * cuda, and never unloaded, so set it before that. NULL or "" = the default. Returns OK, or
 * INVALID_ARG once the library was looked up at another path. */
ENG_API int32_t eng_cuda_lib_set(const char *path);
ENG_API void eng_ctx_free(eng_ctx *ctx);
/* Copy min(cap, ENG_INFO_COUNT) / ENG_STAT_COUNT fields into out. Return the count written. */
ENG_API int32_t eng_ctx_info(const eng_ctx *ctx, int64_t *out, int32_t cap);
ENG_API int32_t eng_ctx_stats(const eng_ctx *ctx, int64_t *out, int32_t cap);

/* Queues a sequence (FIFO). tokens: the prompt (n_tokens >= 1), copied. stop_ids: token ids that
 * end generation (the stop token is reported, then FINISH stop). temperature <= 0: greedy.
 * top_p in (0, 1]. top_k >= 0: sample among the top_k most likely ids only (after the mask of
 * eng_seq_mask, counting allowed ids; ties to the lowest id), then top_p among those; 0 = off, and
 * top_k >= the allowed count is off too. seed: the sampler's seed. Writes its id to *out_seq_id.
 * Returns OK, INVALID_ARG, CONTEXT_OVERFLOW (n_tokens + max_tokens > n_ctx). */
ENG_API int32_t eng_seq_add(eng_ctx *ctx, const int32_t *tokens, int32_t n_tokens, const int32_t *stop_ids,
                            int32_t n_stop, int32_t max_tokens, float temperature, float top_p, int32_t top_k,
                            uint64_t seed, uint32_t flags, int32_t *out_seq_id);
/* eng_seq_add plus images, for a checkpoint with a vision encoder (GLM-4.1V). pixels: the
 * concatenation over images of the image processor's pixel_values rows (image i: t*h*w rows of
 * C*temporal_patch*patch*patch floats, merge-window grouped, as Glm4vImageProcessor orders them),
 * n_pixels floats in all, copied. grids: (n_images x 3) t, h, w of each image in patches (h, w
 * multiples of the merge size). image_hashes: a hash of each image's pixels, mixed into the
 * prefix-cache hashes of its tokens' blocks (same hash: reusable; different: never shared). The
 * prompt must hold, for image i in order, exactly t*h*w / merge^2 consecutive image_token_id
 * placeholders (config.json). An image is encoded inside eng_step, before the first prefill chunk
 * that reaches its tokens (not at all when the prefix cache serves them all); the language model
 * sees its embeddings at those positions with 3-section M-RoPE positions. n_images = 0 is
 * eng_seq_add. Returns what eng_seq_add returns; INVALID_ARG on any count mismatch (eng_seq_add
 * on a vision model also refuses prompts holding image placeholders); UNSUPPORTED when n_images > 0
 * and the checkpoint has no vision encoder. */
ENG_API int32_t eng_seq_add_mm(eng_ctx *ctx, const int32_t *tokens, int32_t n_tokens, const int32_t *stop_ids,
                               int32_t n_stop, int32_t max_tokens, float temperature, float top_p, int32_t top_k,
                               uint64_t seed, uint32_t flags, const float *pixels, int64_t n_pixels,
                               const int32_t *grids, const uint64_t *image_hashes, int32_t n_images,
                               int32_t *out_seq_id);
/* Marks a sequence cancelled; the next eng_step frees its blocks and reports FINISH cancelled.
 * Returns OK or UNKNOWN_SEQ. */
ENG_API int32_t eng_seq_cancel(eng_ctx *ctx, int32_t seq_id);
/* Copies the logits (V floats) of the latest sampled position of a KEEP_LOGITS sequence.
 * Valid after the TOKEN event, until the next eng_step. Returns V, or a negative status. */
ENG_API int32_t eng_seq_logits(const eng_ctx *ctx, int32_t seq_id, float *out, int32_t cap);

/* Copies the logits of every prompt position of a PROMPT_LOGITS sequence: row i (V floats) follows
 * prompt token i, so it scores token i + 1; out holds n_prompt * V floats. Valid once the sequence
 * reported PREFILLED, until the eng_step after its FINISH. Returns n_prompt, or a negative status
 * (INVALID_ARG: no such logits yet, or cap < n_prompt * V; UNKNOWN_SEQ). */
ENG_API int32_t eng_seq_prompt_logits(const eng_ctx *ctx, int32_t seq_id, float *out, int64_t cap);

/* Restricts the next samples of a sequence to the ids set in mask (constrained decoding): a bitset
 * of n_words = ceil(V / 32) words, bit i % 32 of word i / 32 = id i allowed, at least one set; it
 * is copied and stays in force until replaced. n_words = 0 lifts it. The host sets the mask for the
 * next token between eng_step calls. Returns OK, INVALID_ARG (size, no id allowed), UNKNOWN_SEQ. */
ENG_API int32_t eng_seq_mask(eng_ctx *ctx, int32_t seq_id, const uint32_t *mask, int32_t n_words);

/* Drafted tokens for a sequence's next decode pass (speculative decoding), replacing the engine's
 * own prompt-lookup draft for that one pass: the step scores them with the sequence's pending token
 * in one pass and keeps the longest accepted prefix plus one token of its own. Each position samples
 * as decoding without drafts would (greedy: the argmax; sampling: one draw of the sequence's RNG) and
 * a draft is accepted when it is the token drawn: for a point-mass draft that is the
 * speculative-sampling rule, and the tokens are those of decoding without drafts, seed for seed.
 * Constrained sequences: masks (n x n_words words, as eng_seq_mask's) holds the mask of the token
 * after each drafted token (the first is restricted by the sequence's mask), so the host's matcher
 * advances over the draft; a sequence with a mask set takes a draft only with masks, and a draft is
 * cut before its first token its mask forbids. masks = NULL, n_words = 0: none. Also cut to what
 * max_tokens, the context and free KV blocks allow, and dropped for a PROMPT_LOGITS sequence (which
 * never drafts). n = 0 clears it. Returns OK, INVALID_ARG (ids
 * outside the vocabulary, n above ENG_INFO_SPEC_MAX_DRAFT, speculation off, mask size), UNKNOWN_SEQ. */
ENG_API int32_t eng_seq_draft(eng_ctx *ctx, int32_t seq_id, const int32_t *tokens, int32_t n, const uint32_t *masks,
                              int32_t n_words);

/* One bounded unit of work: schedule (admit, chunk prefill, batch decode) -> run -> sample.
 * Writes at most cap / ENG_EVENT_INTS events into out and returns how many, or a negative status.
 * A sequence yields at most 4 + ENG_INFO_SPEC_MAX_DRAFT events a step (PREFILL_PROGRESS,
 * PREFILLED, its TOKENs, FINISH); events that do not fit are kept and returned by the next call
 * before any new work. Returns 0 when idle. With speculation, a decoding sequence may yield several
 * TOKEN events in one step (a verified draft); greedy tokens are the same as without it, token for
 * token. Drafting is off for a sequence while a mask is set: the host's matcher sees every token
 * before the next. */
ENG_API int32_t eng_step(eng_ctx *ctx, int32_t *out, int32_t cap);

#ifdef __cplusplus
}
#endif
#endif /* MAYA_ENGINE_H */
