/* backend.h: the interface between the scheduler and a compute device (nano-vllm's ModelRunner).
 *
 * A Backend owns the paged KV cache and runs one forward pass over a Batch: the new tokens of
 * every scheduled sequence (prefill chunks and single decode tokens together), each with its
 * block table. It writes those tokens' K/V into their slots and the logits of the requested rows.
 * Two implementations: the CPU backend (cpu_backend.cpp) and the CUDA backend (cuda/, a separate library).
 */
#ifndef MAYA_BACKEND_H
#define MAYA_BACKEND_H

#include <stdint.h>
#include <memory>
#include <string>
#include <vector>

#include "model.h" // defines: Model

namespace maya {

struct BatchSeq {
    int32_t tok0 = 0;                     // first row of this sequence's tokens in Batch::tokens
    int32_t n_tokens = 0;                 // tokens computed this step
    int32_t pos0 = 0;                     // position of the first one (= tokens already in the KV cache)
    const int32_t *block_table = nullptr; // (n_blocks) block ids covering positions [0, pos0 + n_tokens)
    int32_t n_blocks = 0;
    int32_t logits_row = -1;     // row of the logits output for its last token, or -1 (mid-prefill chunk)
    int32_t n_logits = 1;        // with logits_row >= 0: rows logits_row.. for its last n_logits tokens, in order
                                 // (> 1: a decode pass verifying drafted tokens)
    int32_t all_logits_row = -1; // ENG_SEQ_PROMPT_LOGITS prefill: rows [all_logits_row, + n_tokens) hold every
                                 // token's logits (logits_row, when set, is the last of them); -1: none
};

struct Batch {
    std::vector<int32_t> tokens;        // (T) token ids, grouped per sequence
    std::vector<BatchSeq> seqs;         // (B)
    int32_t n_logits = 0;               // rows of logits requested
    std::vector<uint8_t> row_is_greedy; // (n_logits) 1: sampled by argmax and its logits not kept, so a
                                        // backend with argmax_rows() may skip copying that row
    // Multimodal (GLM-4.1V), both empty otherwise: (T, 3) M-RoPE positions of every token (the
    // model's mrope_section picks one per rotary frequency), and (T) rows replacing embed_tokens for
    // image tokens (null for text tokens). The CPU backend honours them; others decline such models.
    std::vector<int32_t> mpos;
    std::vector<const float *> embd_rows;

    void clear() {
        tokens.clear();
        seqs.clear();
        n_logits = 0;
        row_is_greedy.clear();
        mpos.clear();
        embd_rows.clear();
    }
};

struct BackendConfig {
    int32_t n_threads = 1;
    int32_t block_size = 16;
    int32_t n_blocks = 0;
    int32_t max_tokens = 0;  // most tokens in one Batch
    int32_t max_logits = 0;  // most logits rows in one Batch (>= max batch x (1 + most drafted tokens))
    int32_t n_ctx = 0;       // longest sequence
    int32_t verify_rows = 0; // CPU: query rows (tokens x heads per kv head) one attention task of a verification
                             // pass covers, so its drafts read the KV cache together (0: speculation off)
    int32_t kv_dtype = 0;    // the KV cache's rows: ENG_KV_DTYPE_* (the CUDA backend takes f32 only)
    bool use_mtp = false;    // MTP drafting: the model's MTP layer is one more KV layer (Model::mtp non-empty)
};

class Backend {
  public:
    virtual ~Backend() = default;
    /* Runs the model. logits: (n_logits, V) written at each BatchSeq::logits_row (and the rows of
     * BatchSeq::all_logits_row). Returns OK, INVALID_ARG (batch exceeds the configured limits),
     * UNSUPPORTED (all_logits_row on a backend without it) or BACKEND. */
    virtual int32_t forward(const Batch &batch, float *logits) = 0;
    /* Optional: (n_logits) argmax of every row of the latest forward() (lowest id on ties, as the
     * sampler's); rows flagged in Batch::row_is_greedy may then lack their logits. Null: not offered. */
    virtual const int32_t *argmax_rows() const { return nullptr; }
    /* MTP drafting (BackendConfig::use_mtp), optional: the main model's last hidden states (before the
     * final norm) of every token of the latest forward(), (T, n_embd); valid until the next forward()
     * or mtp_forward(). Null: not offered. */
    virtual const float *hidden() const { return nullptr; }
    /* Runs the MTP layer (model.h MtpLayer) over a batch laid out as forward()'s: token i of a sequence,
     * at position pos0 + i, is the token that FOLLOWS that position, and h row i (T, n_embd) the hidden
     * state at the position (the main model's, or the MTP layer's own output for a chained prediction).
     * Writes the MTP layer's KV at those positions (its own KV layer, same blocks), its output hidden
     * states to h_out (T, n_embd) when not null, and the logits of the requested rows as forward() does.
     * Returns OK, INVALID_ARG or UNSUPPORTED (no MTP layer in this backend). Signature:
     * mtp_forward(batch, h, h_out, logits). */
    virtual int32_t mtp_forward(const Batch &, const float *, float *, float *) { return ENG_STATUS_UNSUPPORTED; }
    virtual int32_t kind() const = 0; // ENG_INFO_BACKEND: ENG_BACKEND_CPU or ENG_BACKEND_CUDA
    virtual int32_t simd() const = 0; // ENG_INFO_SIMD: ENG_SIMD_*
};

struct Kernels;     // kernels.h
struct CudaOptions; // cuda/cuda_api.h

/* Creates the CPU backend over a loaded model (which must outlive it), running the kernel table k.
 * Returns OK, OUT_OF_MEMORY or INVALID_ARG. */
int32_t cpu_backend_create(const Model &model, const BackendConfig &cfg, const Kernels &k,
                           std::unique_ptr<Backend> *out);

/* The CUDA backend lives in libmaya_engine_cuda.so (src/cuda/, loaded on first use by
 * cuda_loader.cpp). Whether it is built, loadable and sees a GPU; else *why says what is missing. */
bool cuda_backend_usable(std::string *why);
/* The library's path for the next (first) load; "" = beside this module. Returns OK, or
 * INVALID_ARG once the library was looked up at another path (eng_cuda_lib_set). */
int32_t cuda_library_set(const char *path);
/* Creates it; cfg->n_blocks (wanted) is lowered to what device memory and opt.kv_cap_bytes (0: no
 * cap) hold. Returns OK, UNSUPPORTED (library or GPU missing), OUT_OF_MEMORY, INVALID_ARG or BACKEND. */
int32_t cuda_backend_create(const Model &model, BackendConfig *cfg, const CudaOptions &opt,
                            std::unique_ptr<Backend> *out);

} // namespace maya

#endif
