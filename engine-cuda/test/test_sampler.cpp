/* test_sampler.cpp: greedy, temperature, top-k and top-p sampling; seeded determinism. */
#include <math.h>

#include <algorithm>
#include <vector>

#include "../src/sampler.h"
#include "test.h"

using namespace maya;

TEST(sampler_greedy_and_ties) {
    Sampler s;
    s.init(5);
    Rng rng;
    rng.seed(1);
    float l[5] = {0.1f, 3.0f, -1.0f, 3.0f, 2.0f};
    SamplerParams p;
    CHECK(s.sample(l, p, &rng) == 1); // ties go to the lowest id
    p.temperature = -1;
    CHECK(s.sample(l, p, &rng) == 1);
}

TEST(sampler_seed_determinism) {
    Sampler s;
    s.init(50);
    std::vector<float> l(50);
    for (int i = 0; i < 50; i++) l[(size_t)i] = sinf((float)i) * 2;
    SamplerParams p;
    p.temperature = 1.0f;
    p.top_p = 0.9f;
    std::vector<int> a, b, c;
    Rng r1, r2, r3;
    r1.seed(42);
    r2.seed(42);
    r3.seed(43);
    for (int i = 0; i < 200; i++) {
        a.push_back(s.sample(l.data(), p, &r1));
        b.push_back(s.sample(l.data(), p, &r2));
        c.push_back(s.sample(l.data(), p, &r3));
    }
    CHECK(a == b);
    CHECK(a != c);
}

TEST(sampler_temperature_distribution) {
    Sampler s;
    s.init(4);
    float l[4] = {0.0f, 1.0f, 2.0f, 0.5f};
    SamplerParams p;
    p.temperature = 2.0f;
    Rng rng;
    rng.seed(7);
    int counts[4] = {0};
    const int n = 40000;
    for (int i = 0; i < n; i++) counts[s.sample(l, p, &rng)]++;
    double z = 0, e[4];
    for (int i = 0; i < 4; i++) z += e[i] = exp(l[i] / 2.0);
    for (int i = 0; i < 4; i++) CHECK_NEAR((double)counts[i] / n, e[i] / z, 0.015); // ~6 sigma at n = 40000
}

TEST(sampler_top_p_truncates) {
    Sampler s;
    s.init(4);
    float l[4] = {logf(0.15f), logf(0.5f), logf(0.05f), logf(0.3f)}; // p = .15 .5 .05 .3
    SamplerParams p;
    p.temperature = 1.0f;
    Rng rng;
    rng.seed(3);
    int counts[4] = {0};
    p.top_p = 0.7f; // nucleus {1 (.5), 3 (.3)}
    for (int i = 0; i < 20000; i++) counts[s.sample(l, p, &rng)]++;
    CHECK(counts[0] == 0 && counts[2] == 0);
    CHECK_NEAR(counts[1] / 20000.0, 0.5 / 0.8, 0.02);
    p.top_p = 0.5f; // exactly the top token
    for (int i = 0; i < 1000; i++) CHECK(s.sample(l, p, &rng) == 1);
    p.top_p = 1e-6f;
    for (int i = 0; i < 100; i++) CHECK(s.sample(l, p, &rng) == 1);
}

TEST(sampler_mask_restricts_every_mode) {
    Sampler s;
    s.init(40);
    std::vector<float> l(40);
    for (int i = 0; i < 40; i++) l[(size_t)i] = (float)i * 0.25f; // id 39 is the argmax
    uint32_t allowed[2] = {0, 0};
    allowed[0] |= 1u << 3;
    allowed[1] |= 1u << (33 - 32);
    SamplerParams p;
    Rng rng;
    rng.seed(7);
    CHECK(s.sample(l.data(), p, &rng) == 39);
    CHECK(s.sample(l.data(), p, &rng, allowed) == 33); // greedy: best allowed id
    for (float top_p : {1.0f, 0.5f}) {
        p.temperature = 2.0f;
        p.top_p = top_p;
        for (int i = 0; i < 300; i++) {
            int32_t t = s.sample(l.data(), p, &rng, allowed);
            CHECK(t == 3 || t == 33);
        }
    }
    CHECK(l[39] == 39 * 0.25f); // logits not modified
}

// The k best ids of l by logit, ties to the lowest id (the order greedy uses).
static std::vector<int32_t> best_ids(const std::vector<float> &l, int32_t k) {
    std::vector<int32_t> ids(l.size());
    for (size_t i = 0; i < l.size(); i++) ids[i] = (int32_t)i;
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return l[(size_t)a] > l[(size_t)b]; });
    ids.resize((size_t)k);
    return ids;
}

TEST(sampler_top_k_1_is_greedy) {
    Sampler s;
    s.init(300);
    std::vector<float> l(300);
    Rng rng, noise;
    rng.seed(5);
    noise.seed(6);
    SamplerParams p, greedy;
    p.top_k = 1;
    for (int round = 0; round < 200; round++) {
        // Coarse logits so that the best value is often tied between several ids.
        for (float &x : l) x = (float)(int)(noise.uniform() * 8.0f);
        p.temperature = 0.3f + (float)(round % 7);
        p.top_p = round % 2 ? 1.0f : 0.9f;
        CHECK(s.sample(l.data(), p, &rng) == s.sample(l.data(), greedy, &rng));
        CHECK(s.sample(l.data(), p, &rng) == argmax(l.data(), 300));
    }
}

TEST(sampler_top_k_keeps_exactly_the_k_best) {
    const int32_t V = 64, k = 5, n = 40000;
    Sampler s;
    s.init(V);
    std::vector<float> l((size_t)V);
    for (int i = 0; i < V; i++) l[(size_t)i] = sinf((float)i * 1.3f) * 1.5f; // a flat-ish spread
    l[17] = l[40];                                                           // a tie inside the k best
    std::vector<int32_t> best = best_ids(l, k);
    SamplerParams p;
    p.temperature = 1.0f;
    p.top_k = k;
    Rng rng;
    rng.seed(11);
    std::vector<int> counts((size_t)V, 0);
    for (int i = 0; i < n; i++) counts[(size_t)s.sample(l.data(), p, &rng)]++;
    double z = 0;
    for (int32_t id : best) z += exp(l[(size_t)id]);
    int inside = 0;
    for (int32_t id : best) {
        inside += counts[(size_t)id];
        // Each kept id at its softmax share renormalised over the k (about 6 sigma at n = 40000).
        CHECK_NEAR((double)counts[(size_t)id] / n, exp(l[(size_t)id]) / z, 0.015);
        CHECK(counts[(size_t)id] > n / 50);
    }
    CHECK(inside == n); // nothing outside the k best, ever
}

TEST(sampler_top_k_ties_go_to_the_lowest_ids) {
    Sampler s;
    s.init(6);
    float l[6] = {1.0f, 3.0f, 3.0f, 3.0f, 0.0f, 3.0f};
    SamplerParams p;
    p.temperature = 1.0f;
    p.top_k = 2;
    Rng rng;
    rng.seed(2);
    int counts[6] = {0};
    for (int i = 0; i < 4000; i++) counts[s.sample(l, p, &rng)]++;
    CHECK(counts[1] > 1500 && counts[2] > 1500 && counts[1] + counts[2] == 4000);
}

TEST(sampler_top_k_then_top_p) {
    Sampler s;
    s.init(4);
    float l[4] = {logf(0.15f), logf(0.5f), logf(0.05f), logf(0.3f)}; // p = .15 .5 .05 .3
    SamplerParams p;
    p.temperature = 1.0f;
    Rng rng;
    rng.seed(9);
    int counts[4] = {0};
    p.top_k = 3; // {1, 3, 0}: .5/.95 .3/.95 .15/.95 = .526 .316 .158
    for (int i = 0; i < 20000; i++) counts[s.sample(l, p, &rng)]++;
    CHECK(counts[2] == 0);
    CHECK_NEAR(counts[0] / 20000.0, 0.15 / 0.95, 0.02);
    CHECK_NEAR(counts[1] / 20000.0, 0.5 / 0.95, 0.02);
    p.top_p = 0.8f; // over the renormalised three: .526, .842 >= .8: the nucleus is {1, 3}
    int c2[4] = {0};
    for (int i = 0; i < 20000; i++) c2[s.sample(l, p, &rng)]++;
    CHECK(c2[0] == 0 && c2[2] == 0);
    CHECK_NEAR(c2[1] / 20000.0, 0.5 / 0.8, 0.02);
    p.top_p = 0.5f; // .526 >= .5: only the best
    for (int i = 0; i < 500; i++) CHECK(s.sample(l, p, &rng) == 1);
}

TEST(sampler_top_k_counts_allowed_ids_only) {
    Sampler s;
    s.init(40);
    std::vector<float> l(40);
    for (int i = 0; i < 40; i++) l[(size_t)i] = (float)i * 0.05f; // id 39 is the argmax
    uint32_t allowed[2] = {0, 0};
    for (int id : {3, 10, 20, 33}) allowed[id >> 5] |= 1u << (id & 31);
    SamplerParams p;
    p.temperature = 1.0f;
    p.top_k = 2; // the 2 best allowed: 33 and 20, not 39 and 38
    Rng rng;
    rng.seed(4);
    int counts[40] = {0};
    for (int i = 0; i < 4000; i++) counts[s.sample(l.data(), p, &rng, allowed)]++;
    CHECK(counts[33] + counts[20] == 4000 && counts[33] > 1000 && counts[20] > 1000);
    p.top_k = 4; // = the allowed count: off, every allowed id can come
    int all[40] = {0};
    for (int i = 0; i < 8000; i++) all[s.sample(l.data(), p, &rng, allowed)]++;
    CHECK(all[3] + all[10] + all[20] + all[33] == 8000);
    CHECK(all[3] > 500 && all[10] > 500);
}

TEST(sampler_top_k_above_vocab_is_off_and_seeded) {
    const int32_t V = 50;
    Sampler s;
    s.init(V);
    std::vector<float> l((size_t)V);
    for (int i = 0; i < V; i++) l[(size_t)i] = sinf((float)i) * 2;
    SamplerParams off, big, k;
    off.temperature = big.temperature = k.temperature = 1.0f;
    off.top_p = big.top_p = k.top_p = 0.95f;
    big.top_k = V + 7;
    k.top_k = 8;
    auto run = [&](const SamplerParams &p, uint64_t seed) {
        Rng rng;
        rng.seed(seed);
        std::vector<int32_t> out;
        for (int i = 0; i < 300; i++) out.push_back(s.sample(l.data(), p, &rng));
        return out;
    };
    CHECK(run(big, 42) == run(off, 42)); // top_k > V: exactly the draws of top_k 0
    CHECK(run(k, 42) == run(k, 42));     // the same seed, the same tokens
    CHECK(run(k, 42) != run(k, 43));
    CHECK(run(k, 42) != run(off, 42));
}
