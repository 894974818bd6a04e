/* gguf.h: llama.cpp's GGUF model files, read in place.
 *
 * gguf_parse checks one file image (header v2/v3, metadata key-values of every value type, tensor
 * infos, alignment, the data section's bounds) and records where each tensor's bytes lie; nothing
 * is copied. gguf_bind turns a parsed file set of a supported architecture (llama, qwen3, qwen3moe,
 * glm4, glm4moe, deepseek2) into what the safetensors path produces: a Hugging Face config.json
 * tree and tensors under Hugging Face names, so model.cpp binds them unchanged.
 *
 * The format, from llama.cpp's ggml/src/gguf.cpp and gguf-py (facts only, no code): little-endian;
 * "GGUF", u32 version, u64 tensor count, u64 key-value count; each key-value a string key
 * (u64 length + bytes), a u32 value type and the value (arrays: u32 element type, u64 count, the
 * elements); each tensor info a string name, u32 n_dims, n_dims u64 extents (innermost first), u32
 * ggml type, u64 offset into the data section; the data section starts at the next multiple of
 * general.alignment (default 32) and each tensor's offset is a multiple of it.
 */
#ifndef MAYA_GGUF_H
#define MAYA_GGUF_H

#include <stdint.h>
#include <string>
#include <unordered_map>
#include <vector>

#include "checkpoint.h" // defines: Tensor, DType
#include "json.h"       // defines: JsonValue

namespace maya {

enum GgufValueType : uint32_t {
    GGUF_U8 = 0,
    GGUF_I8 = 1,
    GGUF_U16 = 2,
    GGUF_I16 = 3,
    GGUF_U32 = 4,
    GGUF_I32 = 5,
    GGUF_F32 = 6,
    GGUF_BOOL = 7,
    GGUF_STRING = 8,
    GGUF_ARRAY = 9,
    GGUF_U64 = 10,
    GGUF_I64 = 11,
    GGUF_F64 = 12,
    GGUF_TYPE_COUNT = 13
};

/* One metadata value. Scalars: is_int (integers and bools: i; u64 above INT64_MAX: is_big) or
 * number (f32/f64); strings: str. Arrays: arr_type and n; numeric arrays of at most kGgufKeepItems
 * elements keep their values in nums, string arrays keep none (the tokenizer is the host's). */
struct GgufValue {
    uint32_t type = GGUF_U8;
    uint32_t arr_type = 0;
    uint64_t n = 0;
    int64_t i = 0;
    double number = 0;
    bool is_big = false;
    std::string str;
    std::vector<double> nums;
};
const uint64_t kGgufKeepItems = 4096;

struct GgufTensor {
    std::string name;
    int n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1}; // innermost first
    uint32_t type = 0;            // ggml type id
    uint64_t offset = 0;          // into the data section
    const uint8_t *data = nullptr;
    size_t nbytes = 0;
    int file = 0; // index of the split file holding it
};

struct GgufFile {
    uint32_t version = 0;
    uint64_t alignment = 32;
    std::vector<std::pair<std::string, GgufValue>> kvs; // in file order
    std::unordered_map<std::string, size_t> kv_index;   // key -> kvs index
    std::vector<GgufTensor> tensors;
    const GgufValue *get(const std::string &key) const;
};

/* ggml type name ("Q4_K"), or nullptr for an id ggml does not define. */
const char *ggml_type_name(uint32_t type);
/* Elements per block and bytes per block of a ggml type (0, 0 for an unknown id). */
void ggml_type_block(uint32_t type, int64_t *block, int64_t *bytes);

/* Parses the GGUF image base[0, len) (a mapped file named `file` in messages) into *out; tensors
 * get file index file_no. Returns OK or BAD_CHECKPOINT naming what is wrong; UNSUPPORTED for a
 * version this reader does not know. Never reads outside [base, base + len). */
int32_t gguf_parse(const uint8_t *base, size_t len, const std::string &file, int file_no, GgufFile *out);

/* What gguf_bind hands the Checkpoint. */
struct GgufBound {
    JsonValue config;                                    // a Hugging Face config.json tree
    std::unordered_map<std::string, Tensor> tensors;     // Hugging Face names
    std::unordered_map<std::string, std::string> source; // Hugging Face name -> GGUF tensor name
    std::vector<std::vector<uint8_t>> owned;             // tensors built at load (MLA kv_b_proj)
    bool is_qk_permuted = false;                         // llama: q/k rows in adjacent-pair order (see gguf.cpp)
};

/* Maps a parsed file (all splits merged) of a supported architecture onto Hugging Face names and a
 * synthesized config. Returns OK, BAD_CHECKPOINT (a missing or ill-typed key, a vocabulary that
 * disagrees with the embedding, a malformed tensor) or UNSUPPORTED (the architecture, a tensor
 * type), naming it. */
int32_t gguf_bind(const GgufFile &f, const std::string &file, GgufBound *out);

} // namespace maya

#endif
