/* test_sampler.cpp: greedy, temperature and top-p sampling; seeded determinism. */
#include <math.h>

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
