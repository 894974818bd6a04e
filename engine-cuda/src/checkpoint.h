/* checkpoint.h: a model on disk: a Hugging Face directory (config.json plus safetensors weights) or a
 * llama.cpp GGUF file (or the first file of a split set), read through gguf.h into the same names.
 *
 * Weights stay memory-mapped read-only in their stored dtype (BF16, F16, F32, F8_E4M3, GGUF's
 * blocks); nothing is copied or converted here (except DeepSeek's MLA kv_b_proj, which GGUF files
 * store split and transposed). Shards are found through model.safetensors.index.json ("weight_map").
 * Every failure names the file or tensor involved (via fail()).
 */
#ifndef MAYA_CHECKPOINT_H
#define MAYA_CHECKPOINT_H

#include <stdint.h>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

#include "../include/engine.h" // defines: ENG_WEIGHT_DTYPE_*
#include "json.h"              // defines: JsonValue, json_parse

namespace maya {

/* The matrix dtypes are engine.h's ENG_WEIGHT_DTYPE_* (ENG_INFO_WEIGHT_DTYPE reports one); DT_OTHER
 * (3) is any other stored dtype. DT_F8_E4M3: OCP float8 e4m3fn (bias 7, no infinities, 0x7F/0xFF
 * NaN), block-scaled by a companion `<name>_scale_inv` tensor (see model.cpp). DT_Q8: never stored
 * in a checkpoint; made at load (ENG_PARAM_WEIGHT_DTYPE q8, quantize_q8_matrix): int8 per block of
 * 32 columns, one f32 scale per (row, block). */
enum DType : int32_t {
    DT_F32 = ENG_WEIGHT_DTYPE_F32,
    DT_F16 = ENG_WEIGHT_DTYPE_F16,
    DT_BF16 = ENG_WEIGHT_DTYPE_BF16,
    DT_OTHER = 3,
    DT_F8_E4M3 = ENG_WEIGHT_DTYPE_FP8,
    DT_Q8 = ENG_WEIGHT_DTYPE_Q8,
    // GGUF block formats (kernels/ggml_blocks.h): stored as ggml lays them out, or made at load
    // (ENG_PARAM_WEIGHT_DTYPE Q4_K: the Q4_K_M mixture).
    DT_Q8_0 = ENG_WEIGHT_DTYPE_Q8_0,
    DT_Q4_0 = ENG_WEIGHT_DTYPE_Q4_0,
    DT_Q4_1 = ENG_WEIGHT_DTYPE_Q4_1,
    DT_Q5_0 = ENG_WEIGHT_DTYPE_Q5_0,
    DT_Q5_1 = ENG_WEIGHT_DTYPE_Q5_1,
    DT_Q4_K = ENG_WEIGHT_DTYPE_Q4_K,
    DT_Q5_K = ENG_WEIGHT_DTYPE_Q5_K,
    DT_Q6_K = ENG_WEIGHT_DTYPE_Q6_K
};

size_t dtype_size(DType dt); // DT_Q8: 1 (its scales add 4 bytes per 32 weights); block dtypes: 0
/* Bytes of one stored row of `cols` weights (block dtypes: cols / block blocks; 0 when cols is not
 * a multiple of the block); DT_Q8 and FP8 scales are not included. */
int64_t dtype_row_bytes(DType dt, int64_t cols);

/* The 8-bit weights of ENG_PARAM_WEIGHT_DTYPE q8: a (rows, cols) F32/F16/BF16 matrix (cols a
 * multiple of 32) to q (rows * cols int8 in [-127, 127]) and scales (rows * cols / 32): per block
 * of 32, d = max|w| / 127, q = round(w / d) (as llama.cpp's Q8_0, with an f32 scale). */
void quantize_q8_matrix(const void *src, DType dt, int64_t rows, int64_t cols, int8_t *q, float *scales);
const char *dtype_name(DType dt);

struct Tensor {
    DType dtype = DT_OTHER;
    std::string dtype_str;      // as written in the header ("BF16", "I8", ...)
    std::vector<int64_t> shape; // row-major, outermost first
    const void *data = nullptr; // inside a read-only mapping owned by the Checkpoint
    size_t nbytes = 0;
    int64_t numel = 1;
};

/* Parses one safetensors image (header + data) already in memory. Adds its tensors to *out
 * (data pointers into base). Returns OK or BAD_CHECKPOINT; file names the image in errors. */
int32_t safetensors_parse(const uint8_t *base, size_t len, const std::string &file,
                          std::unordered_map<std::string, Tensor> *out);

/* Reads a whole small file (config, index). Returns OK or IO. */
int32_t read_text_file(const std::string &path, std::string *out);

class Checkpoint {
  public:
    Checkpoint() = default;
    Checkpoint(const Checkpoint &) = delete;
    Checkpoint &operator=(const Checkpoint &) = delete;
    ~Checkpoint();

    /* Loads dir/config.json and maps dir/model.safetensors or the shards named by
     * dir/model.safetensors.index.json; or, when path names a .gguf file, maps it (and the other
     * files of its split set) and binds it (gguf_bind). Returns OK, IO, BAD_CHECKPOINT or UNSUPPORTED. */
    int32_t open(const std::string &path);
    /* The model came from a GGUF file. */
    bool is_gguf() const { return is_gguf_; }
    /* GGUF llama: q/k rows in llama.cpp's adjacent-pair order (the rotation pairs them, model.cpp). */
    bool is_qk_permuted() const { return is_qk_permuted_; }
    /* Drops the mapped files' resident pages (after the weights were copied out): they are read
     * again from the file if touched. */
    void release_pages() const;

    const JsonValue &config() const { return config_; }
    const Tensor *find(const std::string &name) const;
    const std::unordered_map<std::string, Tensor> &tensors() const { return tensors_; }
    /* The tensor `name` with exactly `shape` in a supported dtype; else BAD_CHECKPOINT (missing,
     * shape mismatch) or UNSUPPORTED (dtype), naming it. */
    int32_t require(const std::string &name, std::initializer_list<int64_t> shape, const Tensor **out) const;

  private:
    struct Mapping {
        void *addr;
        size_t len;
    };
    int32_t map_file(const std::string &path);
    int32_t map_only(const std::string &path, const uint8_t **base, size_t *len);
    int32_t open_gguf(const std::string &path);

    std::vector<Mapping> maps_;
    std::unordered_map<std::string, Tensor> tensors_;
    std::unordered_map<std::string, std::string> source_; // GGUF: Hugging Face name -> the file's name
    std::vector<std::vector<uint8_t>> owned_;             // GGUF: tensors built at load
    JsonValue config_;
    bool is_gguf_ = false, is_qk_permuted_ = false;
};

} // namespace maya

#endif
