/* sampler.cpp: argmax, softmax with temperature, top-k and nucleus (top-p) truncation, RNG. */
#include "sampler.h"

#include <math.h>

#include <algorithm>

namespace maya {

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void Rng::seed(uint64_t seed) {
    uint64_t x = seed;
    for (auto &v : s) v = splitmix64(&x);
}

uint64_t Rng::next() {
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

float Rng::uniform() { return (float)(next() >> 40) * (1.0f / 16777216.0f); }

int32_t argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

void Sampler::init(int32_t n_vocab) {
    n_vocab_ = n_vocab;
    probs_.resize((size_t)n_vocab);
    idx_.resize((size_t)n_vocab);
    masked_.resize((size_t)n_vocab);
}

int32_t Sampler::sample(const float *logits, const SamplerParams &p, Rng *rng, const uint32_t *allowed) {
    int32_t n = n_vocab_;
    if (allowed) {
        for (int32_t i = 0; i < n; i++) masked_[(size_t)i] = (allowed[i >> 5] >> (i & 31)) & 1u ? logits[i] : -INFINITY;
        logits = masked_.data();
    }
    if (p.temperature <= 0) return argmax(logits, n);
    if (p.top_k > 0 && p.top_k < n) {
        int32_t m = 0; // the allowed ids: top-k ranks among them only
        for (int32_t i = 0; i < n; i++)
            if (!allowed || ((allowed[i >> 5] >> (i & 31)) & 1u)) idx_[(size_t)m++] = i;
        if (p.top_k < m) return sample_top_k(logits, m, p, rng);
    }
    float mx = logits[argmax(logits, n)], inv_t = 1.0f / p.temperature;
    double sum = 0;
    for (int32_t i = 0; i < n; i++) {
        probs_[(size_t)i] = expf((logits[i] - mx) * inv_t);
        sum += probs_[(size_t)i];
    }
    float inv_sum = (float)(1.0 / sum);
    for (int32_t i = 0; i < n; i++) probs_[(size_t)i] *= inv_sum;
    float u = rng->uniform();
    if (p.top_p >= 1.0f) {
        float cdf = 0;
        for (int32_t i = 0; i < n; i++) {
            cdf += probs_[(size_t)i];
            if (u < cdf) return i;
        }
        return argmax(probs_.data(), n); // rounding left u above the total
    }
    // Nucleus: tokens below (1 - top_p) / (n - 1) can never be inside the nucleus, so only the
    // rest is sorted (descending probability, ascending id on ties for determinism).
    float cutoff = (1.0f - p.top_p) / (float)(n > 1 ? n - 1 : 1);
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (probs_[(size_t)i] >= cutoff) idx_[(size_t)m++] = i;
    if (m == 0) return argmax(probs_.data(), n);
    const float *pr = probs_.data();
    std::sort(idx_.begin(), idx_.begin() + m,
              [pr](int32_t a, int32_t b) { return pr[a] > pr[b] || (pr[a] == pr[b] && a < b); });
    float cum = 0;
    int32_t last = m - 1;
    for (int32_t i = 0; i < m; i++) {
        cum += pr[idx_[(size_t)i]];
        if (cum >= p.top_p) {
            last = i;
            break;
        }
    }
    float r = u * cum, cdf = 0;
    for (int32_t i = 0; i <= last; i++) {
        cdf += pr[idx_[(size_t)i]];
        if (r < cdf) return idx_[(size_t)i];
    }
    return idx_[(size_t)last];
}

// Top-k over the m candidate ids in idx_: the k best by logit (ascending id on ties, as argmax),
// softmax with temperature over those k alone, then the nucleus over them in that order.
int32_t Sampler::sample_top_k(const float *logits, int32_t m, const SamplerParams &p, Rng *rng) {
    int32_t k = p.top_k;
    std::partial_sort(idx_.begin(), idx_.begin() + k, idx_.begin() + m, [logits](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    float mx = logits[idx_[0]], inv_t = 1.0f / p.temperature;
    double sum = 0;
    for (int32_t j = 0; j < k; j++) {
        probs_[(size_t)j] = expf((logits[idx_[(size_t)j]] - mx) * inv_t);
        sum += probs_[(size_t)j];
    }
    float inv_sum = (float)(1.0 / sum), cum = 0;
    for (int32_t j = 0; j < k; j++) probs_[(size_t)j] *= inv_sum;
    int32_t last = k - 1;
    for (int32_t j = 0; j < k; j++) {
        cum += probs_[(size_t)j];
        if (p.top_p < 1.0f && cum >= p.top_p) {
            last = j;
            break;
        }
    }
    float r = rng->uniform() * cum, cdf = 0;
    for (int32_t j = 0; j <= last; j++) {
        cdf += probs_[(size_t)j];
        if (r < cdf) return idx_[(size_t)j];
    }
    return idx_[(size_t)last];
}

} // namespace maya
