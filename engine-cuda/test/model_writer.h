/* model_writer.h: writes small random Hugging Face model directories (config.json +
 * model.safetensors) for the C tests and the engine micro-benchmark. */
#ifndef MAYA_MODEL_WRITER_H
#define MAYA_MODEL_WRITER_H

#include <stdint.h>
#include <string>
#include <vector>

struct RandomModelSpec {
    std::string arch = "LlamaForCausalLM";
    int vocab = 64, hidden = 32, layers = 2, heads = 4, kv_heads = 2, head_dim = 8, ffn = 48, max_pos = 256;
    std::string dtype = "BF16"; // F32, F16, BF16
    bool tied = false;
    uint64_t seed = 1;
};

struct RawTensor {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};

/* Writes tensors as one safetensors file. Returns false on an I/O error. */
bool write_safetensors(const std::string &path, const std::vector<RawTensor> &tensors);
/* Writes dir/config.json and dir/model.safetensors for spec (directory must exist). */
bool write_random_model(const std::string &dir, const RandomModelSpec &spec);
/* The same checkpoint layout for a model too large to hold in memory (a speed benchmark's): each
 * tensor repeats a pool of 2^22 values drawn from its range, written as it goes. */
bool write_random_model_streamed(const std::string &dir, const RandomModelSpec &spec);

/* A tensor of a random model: its name, its shape and the range its values are drawn from
 * (offset +- scale). */
struct TensorSpec {
    std::string name;
    std::vector<int64_t> shape;
    float scale, offset;
};
/* The tensors write_random_model writes for spec, in order. */
std::vector<TensorSpec> random_model_tensors(const RandomModelSpec &spec);
/* The scheduler-sized model the scheduler and speculation tests run: vocab 97, hidden 48, 2 layers,
 * 4 heads (2 KV) of 12, FFN 64, 512 positions; its dtype and seed vary. */
RandomModelSpec scheduler_model_spec(const std::string &dtype, uint64_t seed);
bool write_text(const std::string &path, const std::string &text);

#endif
