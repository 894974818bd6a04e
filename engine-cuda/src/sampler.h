/* sampler.h: turns one row of logits into a token: greedy, temperature, top-k, top-p; seeded per sequence.
 *
 * Same seed + same logits -> same token sequence. The RNG is xoshiro256** seeded through
 * splitmix64 (Blackman & Vigna, https://prng.di.unimi.it/), reimplemented here.
 */
#ifndef MAYA_SAMPLER_H
#define MAYA_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include <vector>

namespace maya {

struct Rng {
    uint64_t s[4];
    void seed(uint64_t seed);
    uint64_t next();
    float uniform(); // [0, 1)
};

struct SamplerParams {
    float temperature = 0; // <= 0: greedy (argmax, lowest id on ties)
    float top_p = 1;       // (0, 1]
    int32_t top_k = 0;     // >= 0; 0 = off. Keeps the k most likely allowed ids, then top-p over them.
};

class Sampler {
  public:
    /* Reserves scratch for a vocabulary of n_vocab (so sample() does not allocate). */
    void init(int32_t n_vocab);
    /* Samples from logits (n_vocab floats, not modified). allowed: null, or a bitset of
     * ceil(n_vocab / 32) words (bit i of word i / 32 = id i may be sampled, at least one set);
     * disallowed ids get probability 0 under greedy, temperature, top-k and top-p alike. top_k counts
     * allowed ids only (ties: lowest id first, as greedy); top_k >= the allowed count is off. */
    int32_t sample(const float *logits, const SamplerParams &p, Rng *rng, const uint32_t *allowed = nullptr);

  private:
    int32_t sample_top_k(const float *logits, int32_t m, const SamplerParams &p, Rng *rng);

    std::vector<float> probs_;
    std::vector<int32_t> idx_;
    std::vector<float> masked_; // (V) logits with disallowed ids at -inf
    int32_t n_vocab_ = 0;
};

int32_t argmax(const float *x, int32_t n);

} // namespace maya

#endif
