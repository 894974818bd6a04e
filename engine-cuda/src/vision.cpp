/* vision.cpp: the GLM-4.1V vision tower on the CPU (see vision.h) and the M-RoPE positions.
 *
 * Semantics from Hugging Face transformers' models/glm4v/modeling_glm4v.py (Glm4vVisionModel,
 * Glm4vVisionEmbeddings, Glm4vVisionRotaryEmbedding, Glm4vVisionAttention, Glm4vVisionPatchMerger,
 * Glm4vModel.get_rope_index) and PyTorch's grid_sample (bicubic, align_corners=False, border
 * padding; cubic convolution with A = -0.75). Matmuls go through the kernel table (weights read in
 * their stored dtype); the rest is plain loops. Computed in f32.
 */
#include "vision.h"

#include <math.h>
#include <string.h>

#include <algorithm>
#include <string>

#include "common.h" // defines: fail, ENG_TRY

namespace maya {

namespace {

const JsonValue *field(const JsonValue &c, const char *key) {
    const JsonValue *v = c.get(key);
    return (v && !v->is_null()) ? v : nullptr;
}

int32_t get_int(const JsonValue &c, const char *key, int64_t def, int32_t *out) {
    const JsonValue *v = field(c, key);
    if (!v) {
        if (def < 0) return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: vision_config.%s is missing", key);
        *out = (int32_t)def;
        return ENG_STATUS_OK;
    }
    // image_size / patch_size may be [h, w] pairs in other vision configs; GLM-4.1V's are ints.
    if (v->kind != JsonValue::NUMBER || !v->is_integer || v->integer <= 0 || v->integer > (1 << 20))
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: vision_config.%s is not a positive integer", key);
    *out = (int32_t)v->integer;
    return ENG_STATUS_OK;
}

struct Binder {
    Model *m;
    const Kernels &k;
    std::string p; // model.visual. or visual.
    int32_t matrix(const std::string &name, std::initializer_list<int64_t> shape, int64_t rows, int64_t cols,
                   Weight *w) {
        const Tensor *t;
        ENG_TRY(m->ckpt.require(p + name, shape, &t));
        if (t->dtype == DT_F8_E4M3)
            return fail(ENG_STATUS_UNSUPPORTED, "tensor %s%s: F8 vision weights are not supported", p.c_str(),
                        name.c_str());
        w->data = t->data;
        w->dtype = t->dtype;
        w->rows = (int32_t)rows;
        w->cols = (int32_t)cols;
        w->scale = nullptr;
        m->vision->n_params += t->numel;
        return ENG_STATUS_OK;
    }
    int32_t vec(const std::string &name, std::initializer_list<int64_t> shape, std::vector<float> *out) {
        const Tensor *t;
        ENG_TRY(m->ckpt.require(p + name, shape, &t));
        if (t->dtype == DT_F8_E4M3)
            return fail(ENG_STATUS_UNSUPPORTED, "tensor %s%s: F8 vision weights are not supported", p.c_str(),
                        name.c_str());
        out->resize((size_t)t->numel);
        k.row_to_f32(out->data(), t->data, t->dtype, 0, (int)t->numel, nullptr);
        m->vision->n_params += t->numel;
        return ENG_STATUS_OK;
    }
};

/* PyTorch's cubic convolution weights (upsample_bicubic2d / grid_sample, A = -0.75) for a sample at
 * fraction f in [0, 1) past the second of four neighbours. */
void cubic_weights(float f, float w[4]) {
    const float A = -0.75f;
    float x0 = f + 1, x1 = f, x2 = 1 - f, x3 = 2 - f;
    w[0] = ((A * x0 - 5 * A) * x0 + 8 * A) * x0 - 4 * A;
    w[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
    w[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    w[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
}

struct MatTask {
    const Kernels *k;
    const Weight *w;
    const float *x;
    int ldx, T;
    float *y;
    int ldy;
    const float *bias;
    float *const *scratch;
};

void mat_task(void *arg, int task, int worker) {
    const MatTask &m = *(const MatTask *)arg;
    int r0 = task * kMatmulRows, r1 = std::min(r0 + kMatmulRows, m.w->rows);
    m.k->matmul(m.x, m.ldx, m.T, m.w->data, m.w->dtype, m.w->cols, r0, r1, m.y, m.ldy, m.bias, m.scratch[worker], false,
                m.w->scale);
}

/* Query patches one attention task covers. */
const int kVisionTile = 4;

struct AttnTask {
    const Kernels *k;
    const float *qkv;     // (N, 3 Cv): q rows used in place
    const float *kh, *vh; // (H, N, Dv): keys and values repacked per head
    float *out;           // (N, Cv)
    int Cv, Dv, H, N, L;  // L: patches per frame (attention span)
    float scale;
    float *const *scores; // per worker: (kVisionTile, L)
};

/* One (head, up to kVisionTile consecutive query patches of a frame): scores against the keys of
 * the frame, softmax, weighted sum of values (the kernel table's attention loops over contiguous
 * per-head rows, each loaded once for the tile's patches; a patch's bits are those it has alone). */
void attn_task(void *arg, int task, int worker) {
    const AttnTask &a = *(const AttnTask *)arg;
    int tiles = (a.L + kVisionTile - 1) / kVisionTile; // per frame
    int tile = task / a.H, h = task % a.H, f0 = tile / tiles * a.L;
    int n0 = f0 + tile % tiles * kVisionTile, nq = std::min(kVisionTile, f0 + a.L - n0);
    const float *q = a.qkv + (int64_t)n0 * 3 * a.Cv + h * a.Dv;
    const float *kr = a.kh + ((int64_t)h * a.N + f0) * a.Dv, *vr = a.vh + ((int64_t)h * a.N + f0) * a.Dv;
    float *sc = a.scores[worker], *o = a.out + (int64_t)n0 * a.Cv + h * a.Dv;
    a.k->attn_scores(sc, a.L, 0, q, 3 * a.Cv, nq, 1, kr, a.L, a.Dv, a.scale);
    for (int i = 0; i < nq; i++) {
        a.k->softmax(sc + (int64_t)i * a.L, a.L);
        memset(o + (int64_t)i * a.Cv, 0, sizeof(float) * (size_t)a.Dv);
    }
    a.k->attn_accum(o, a.Cv, sc, a.L, 0, nq, 1, vr, a.L, a.Dv, a.Dv);
}

} // namespace

int32_t vision_load(Model *m) {
    const JsonValue &root = m->ckpt.config();
    const JsonValue *vc = field(root, "vision_config");
    if (!vc || vc->kind != JsonValue::OBJECT)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "config.json: vision_config is missing");
    m->vision = std::make_shared<VisionModel>();
    VisionConfig &c = m->vision->cfg;
    int32_t image_size = 0;
    ENG_TRY(get_int(*vc, "depth", -1, &c.depth));
    ENG_TRY(get_int(*vc, "hidden_size", -1, &c.hidden));
    ENG_TRY(get_int(*vc, "num_heads", -1, &c.n_head));
    ENG_TRY(get_int(*vc, "out_hidden_size", -1, &c.out_hidden));
    ENG_TRY(get_int(*vc, "intermediate_size", -1, &c.merger_ff));
    ENG_TRY(get_int(*vc, "patch_size", 14, &c.patch));
    ENG_TRY(get_int(*vc, "temporal_patch_size", 2, &c.temporal));
    ENG_TRY(get_int(*vc, "spatial_merge_size", 2, &c.merge));
    ENG_TRY(get_int(*vc, "in_channels", 3, &c.in_ch));
    ENG_TRY(get_int(*vc, "image_size", 336, &image_size));
    const JsonValue *eps = field(*vc, "rms_norm_eps");
    if (eps && eps->kind == JsonValue::NUMBER) c.eps = (float)eps->number;
    const JsonValue *rp = field(*vc, "rope_parameters");
    const JsonValue *theta = rp ? field(*rp, "rope_theta") : nullptr;
    if (theta && theta->kind == JsonValue::NUMBER && theta->number > 0) c.rope_theta = (float)theta->number;
    const JsonValue *bias = field(*vc, "attention_bias");
    c.has_qkv_bias = bias && bias->kind == JsonValue::BOOL && bias->boolean;
    const JsonValue *act = field(*vc, "hidden_act");
    if (act && act->kind == JsonValue::STRING && act->string != "silu")
        return fail(ENG_STATUS_UNSUPPORTED, "config.json: vision_config.hidden_act %s is not supported (silu only)",
                    act->string.c_str());
    c.head_dim = c.hidden / c.n_head;
    c.pos_side = image_size / c.patch;
    if (c.hidden % c.n_head != 0 || c.head_dim % 4 != 0 || c.pos_side < 1)
        return fail(ENG_STATUS_BAD_CHECKPOINT,
                    "config.json: vision head size %d (hidden %d / %d heads) must be a multiple of 4", c.head_dim,
                    c.hidden, c.n_head);
    if (c.out_hidden != m->cfg.n_embd)
        return fail(ENG_STATUS_BAD_CHECKPOINT,
                    "config.json: vision_config.out_hidden_size %d differs from the text hidden size %d", c.out_hidden,
                    m->cfg.n_embd);
    VisionModel &v = *m->vision;
    // The vectors are widened to f32 at load, exactly on every kernel path: the portable table does it.
    Binder b{m, kernels_scalar, m->ckpt.find("model.visual.patch_embed.proj.weight") ? "model.visual." : "visual."};
    int64_t Cv = c.hidden, O = c.out_hidden, Iv = c.merger_ff, S = c.pos_side, mm = c.merge;
    ENG_TRY(b.vec("embeddings.position_embedding.weight", {S * S, Cv}, &v.pos_table));
    ENG_TRY(b.matrix("patch_embed.proj.weight", {Cv, c.in_ch, c.temporal, c.patch, c.patch}, Cv, c.patch_floats(),
                     &v.patch_w));
    ENG_TRY(b.vec("patch_embed.proj.bias", {Cv}, &v.patch_b));
    ENG_TRY(b.vec("post_conv_layernorm.weight", {Cv}, &v.post_conv_norm));
    ENG_TRY(b.vec("post_layernorm.weight", {Cv}, &v.post_norm));
    v.blocks.resize((size_t)c.depth);
    for (int i = 0; i < c.depth; i++) {
        VisionBlock &B = v.blocks[(size_t)i];
        std::string p = "blocks." + std::to_string(i) + ".";
        ENG_TRY(b.vec(p + "norm1.weight", {Cv}, &B.norm1));
        ENG_TRY(b.vec(p + "norm2.weight", {Cv}, &B.norm2));
        ENG_TRY(b.matrix(p + "attn.qkv.weight", {3 * Cv, Cv}, 3 * Cv, Cv, &B.qkv));
        if (c.has_qkv_bias) ENG_TRY(b.vec(p + "attn.qkv.bias", {3 * Cv}, &B.qkv_bias));
        ENG_TRY(b.matrix(p + "attn.proj.weight", {Cv, Cv}, Cv, Cv, &B.proj));
        ENG_TRY(b.matrix(p + "mlp.gate_proj.weight", {O, Cv}, O, Cv, &B.gate));
        ENG_TRY(b.matrix(p + "mlp.up_proj.weight", {O, Cv}, O, Cv, &B.up));
        ENG_TRY(b.matrix(p + "mlp.down_proj.weight", {Cv, O}, Cv, O, &B.down));
    }
    ENG_TRY(b.matrix("downsample.weight", {O, Cv, mm, mm}, O, Cv * mm * mm, &v.down_w));
    ENG_TRY(b.vec("downsample.bias", {O}, &v.down_b));
    ENG_TRY(b.matrix("merger.proj.weight", {O, O}, O, O, &v.proj));
    ENG_TRY(b.vec("merger.post_projection_norm.weight", {O}, &v.ln_w));
    ENG_TRY(b.vec("merger.post_projection_norm.bias", {O}, &v.ln_b));
    ENG_TRY(b.matrix("merger.gate_proj.weight", {Iv, O}, Iv, O, &v.gate));
    ENG_TRY(b.matrix("merger.up_proj.weight", {Iv, O}, Iv, O, &v.up));
    ENG_TRY(b.matrix("merger.down_proj.weight", {O, Iv}, O, Iv, &v.down));
    m->n_params += v.n_params;
    return ENG_STATUS_OK;
}

int32_t VisionEncoder::init(const VisionModel &v, int n_threads, const Kernels &k) {
    v_ = &v;
    k_ = &k;
    ENG_TRY(pool_.start(n_threads));
    const VisionConfig &c = v.cfg;
    int64_t kmax = std::max<int64_t>(
        {(int64_t)c.patch_floats(), (int64_t)c.hidden * c.merge * c.merge, c.out_hidden, c.merger_ff, c.hidden});
    scratch_.resize((size_t)pool_.n_threads());
    for (auto &s : scratch_) {
        s.resize((size_t)(kMatmulRows * kmax));
        scratch_ptr_.push_back(s.data());
    }
    return ENG_STATUS_OK;
}

void VisionEncoder::linear(const Weight &w, const float *x, int ldx, int T, float *y, int ldy, const float *bias) {
    MatTask m{k_, &w, x, ldx, T, y, ldy, bias, scratch_ptr_.data()};
    pool_.run((w.rows + kMatmulRows - 1) / kMatmulRows, mat_task, &m);
}

/* Sizes the activations for N patches of L per frame (they only grow). */
void VisionEncoder::reserve(int N, int L) {
    const VisionConfig &c = v_->cfg;
    int Cv = c.hidden, O = c.out_hidden, half = c.head_dim / 2;
    x_.resize((size_t)N * Cv);
    h_.resize((size_t)N * Cv);
    qkv_.resize((size_t)N * 3 * Cv);
    kh_.resize((size_t)N * Cv);
    vh_.resize((size_t)N * Cv);
    att_.resize((size_t)N * Cv);
    ff_.resize((size_t)N * 2 * O);
    ff2_.resize((size_t)N * O);
    cos_.resize((size_t)L * half);
    sin_.resize((size_t)L * half);
    rows_.resize((size_t)L);
    cols_.resize((size_t)L);
    for (auto &s : scratch_) // the attention scores of a tile
        if (s.size() < (size_t)kVisionTile * L) {
            s.resize((size_t)kVisionTile * L);
            scratch_ptr_[(size_t)(&s - scratch_.data())] = s.data();
        }
}

/* x_ = post_conv_layernorm(patch embedding) + the sampled position table; rows_ / cols_: the
 * (row, col) of each patch of a frame in the processor's merge-window order. */
void VisionEncoder::embed(const float *pixels, int t, int h, int w) {
    const VisionModel &v = *v_;
    const VisionConfig &c = v.cfg;
    int L = h * w, N = t * L, Cv = c.hidden, m = c.merge, mm = m * m;
    linear(v.patch_w, pixels, c.patch_floats(), N, x_.data(), Cv, v.patch_b.data());
    for (int n = 0; n < N; n++)
        k_->rmsnorm(&x_[(size_t)n * Cv], &x_[(size_t)n * Cv], v.post_conv_norm.data(), Cv, c.eps);
    for (int n = 0; n < L; n++) {
        int win = n / mm, in = n % mm, wr = win / (w / m), wc = win % (w / m);
        rows_[(size_t)n] = wr * m + in / m;
        cols_[(size_t)n] = wc * m + in % m;
    }
    add_positions(t, h, w);
}

/* x_ += the S x S position table sampled bicubically at each patch centre: grid_sample's x
 * (column) = ((col + 0.5) / w) * 2 - 1, unnormalised with align_corners=False to
 * ((x + 1) * S - 1) / 2; the 4 x 4 neighbours' indices are clamped to the table (border padding).
 * Every frame gets the same positions. */
void VisionEncoder::add_positions(int t, int h, int w) {
    const VisionModel &v = *v_;
    const Kernels &k = *k_;
    int L = h * w, Cv = v.cfg.hidden, S = v.cfg.pos_side;
    std::vector<float> pe((size_t)Cv);
    for (int n = 0; n < L; n++) {
        float gx = ((float)cols_[(size_t)n] + 0.5f) / (float)w * 2 - 1,
              gy = ((float)rows_[(size_t)n] + 0.5f) / (float)h * 2 - 1;
        float ix = ((gx + 1) * (float)S - 1) / 2, iy = ((gy + 1) * (float)S - 1) / 2;
        float fx = floorf(ix), fy = floorf(iy), wx[4], wy[4];
        cubic_weights(ix - fx, wx);
        cubic_weights(iy - fy, wy);
        std::fill(pe.begin(), pe.end(), 0.0f);
        for (int a = 0; a < 4; a++) {
            int r = std::min(std::max((int)fy - 1 + a, 0), S - 1);
            std::vector<float> row((size_t)Cv, 0.0f); // interpolate along x first, as PyTorch does
            for (int b = 0; b < 4; b++) {
                int col = std::min(std::max((int)fx - 1 + b, 0), S - 1);
                k.axpy(row.data(), wx[b], &v.pos_table[((size_t)r * S + col) * Cv], Cv);
            }
            k.axpy(pe.data(), wy[a], row.data(), Cv);
        }
        for (int f = 0; f < t; f++) {
            float *xr = &x_[((size_t)f * L + n) * Cv];
            for (int i = 0; i < Cv; i++) xr[i] += pe[(size_t)i];
        }
    }
}

/* 2-D rotary angles of the L patches of a frame: dims [0, Dv/4) take row * inv_freq, [Dv/4, Dv/2)
 * col * inv_freq; the second half of the head repeats them (NeoX pairs x[i], x[i + Dv/2]). */
void VisionEncoder::rotary_angles(int L) {
    const VisionConfig &c = v_->cfg;
    int half = c.head_dim / 2, quarter = c.head_dim / 4;
    for (int n = 0; n < L; n++)
        for (int i = 0; i < half; i++) {
            int j = i % quarter;
            float inv = 1.0f / powf(c.rope_theta, (float)(2 * j) / (float)half);
            float ang = (float)(i < quarter ? rows_[(size_t)n] : cols_[(size_t)n]) * inv;
            cos_[(size_t)n * half + i] = (float)cos((double)ang);
            sin_[(size_t)n * half + i] = (float)sin((double)ang);
        }
}

/* Rotates the q and k heads of qkv_ in place, then repacks k and v per head into kh_ / vh_ (H, N, Dv). */
void VisionEncoder::rotate_and_repack(int N, int L) {
    const VisionConfig &c = v_->cfg;
    int Cv = c.hidden, Dv = c.head_dim, half = Dv / 2;
    for (int n = 0; n < N; n++) {
        const float *cs = &cos_[(size_t)(n % L) * half], *sn = &sin_[(size_t)(n % L) * half];
        for (int part = 0; part < 2; part++) // q, then k
            for (int hd = 0; hd < c.n_head; hd++) {
                float *x = &qkv_[(size_t)n * 3 * Cv + (size_t)part * Cv + (size_t)hd * Dv];
                for (int i = 0; i < half; i++) {
                    float a = x[i], b = x[i + half];
                    x[i] = a * cs[i] - b * sn[i];
                    x[i + half] = b * cs[i] + a * sn[i];
                }
            }
    }
    for (int n = 0; n < N; n++)
        for (int hd = 0; hd < c.n_head; hd++) {
            const float *row = &qkv_[(size_t)n * 3 * Cv + (size_t)hd * Dv];
            memcpy(&kh_[((size_t)hd * N + n) * Dv], row + Cv, sizeof(float) * (size_t)Dv);
            memcpy(&vh_[((size_t)hd * N + n) * Dv], row + 2 * Cv, sizeof(float) * (size_t)Dv);
        }
}

/* One ViT block over x_ (t frames of L patches, N in all): RMSNorm, qkv, 2-D rotary, attention
 * within each frame, proj, residual; RMSNorm, SwiGLU MLP, residual. */
void VisionEncoder::block(const VisionBlock &B, int t, int N, int L) {
    const VisionConfig &c = v_->cfg;
    const Kernels &k = *k_;
    int Cv = c.hidden, Dv = c.head_dim, O = c.out_hidden;
    for (int n = 0; n < N; n++) k.rmsnorm(&h_[(size_t)n * Cv], &x_[(size_t)n * Cv], B.norm1.data(), Cv, c.eps);
    linear(B.qkv, h_.data(), Cv, N, qkv_.data(), 3 * Cv, B.qkv_bias.empty() ? nullptr : B.qkv_bias.data());
    rotate_and_repack(N, L);
    AttnTask at{&k,
                qkv_.data(),
                kh_.data(),
                vh_.data(),
                att_.data(),
                Cv,
                Dv,
                c.n_head,
                N,
                L,
                1.0f / sqrtf((float)Dv),
                scratch_ptr_.data()};
    pool_.run(t * ((L + kVisionTile - 1) / kVisionTile) * c.n_head, attn_task, &at);
    linear(B.proj, att_.data(), Cv, N, h_.data(), Cv, nullptr);
    for (size_t i = 0; i < (size_t)N * Cv; i++) x_[i] += h_[i];
    for (int n = 0; n < N; n++) k.rmsnorm(&h_[(size_t)n * Cv], &x_[(size_t)n * Cv], B.norm2.data(), Cv, c.eps);
    linear(B.gate, h_.data(), Cv, N, ff_.data(), 2 * O, nullptr);
    linear(B.up, h_.data(), Cv, N, ff_.data() + O, 2 * O, nullptr);
    for (int n = 0; n < N; n++)
        k.silu_mul(&ff2_[(size_t)n * O], &ff_[(size_t)n * 2 * O], &ff_[(size_t)n * 2 * O + O], O);
    linear(B.down, ff2_.data(), O, N, h_.data(), Cv, nullptr);
    for (size_t i = 0; i < (size_t)N * Cv; i++) x_[i] += h_[i];
}

/* The N patch rows of x_ to N / merge^2 output rows: downsample, then the merger. */
void VisionEncoder::merge(int N, float *out) {
    const VisionModel &v = *v_;
    const VisionConfig &c = v.cfg;
    const Kernels &k = *k_;
    int Cv = c.hidden, O = c.out_hidden, Iv = c.merger_ff, mm = c.merge * c.merge, M = N / mm;
    // Downsample: window g's m*m rows as a [Cv, m, m] image; the Conv2d weight (O, Cv, m, m) is a
    // (O, Cv*m*m) matrix over the input laid out channel-major: win[c * m*m + r] = x[g*m*m + r][c].
    win_.resize((size_t)M * Cv * mm);
    for (int g = 0; g < M; g++)
        for (int r = 0; r < mm; r++)
            for (int ch = 0; ch < Cv; ch++) win_[((size_t)g * Cv + ch) * mm + r] = x_[((size_t)g * mm + r) * Cv + ch];
    y_.resize((size_t)M * O);
    z_.resize((size_t)M * 2 * std::max(O, Iv));
    linear(v.down_w, win_.data(), Cv * mm, M, y_.data(), O, v.down_b.data());
    // Merger: proj -> LayerNorm (eps 1e-5, nn.LayerNorm's default) -> exact GELU -> SwiGLU.
    linear(v.proj, y_.data(), O, M, z_.data(), O, nullptr);
    for (int g = 0; g < M; g++) {
        float *r = &z_[(size_t)g * O];
        double mean = 0, var = 0;
        for (int i = 0; i < O; i++) mean += r[i];
        mean /= O;
        for (int i = 0; i < O; i++) var += (r[i] - mean) * (r[i] - mean);
        var /= O;
        float inv = (float)(1.0 / sqrt(var + 1e-5));
        for (int i = 0; i < O; i++) {
            float u = ((float)(r[i] - mean)) * inv * v.ln_w[(size_t)i] + v.ln_b[(size_t)i];
            y_[(size_t)g * O + i] = 0.5f * u * (1.0f + erff(u * (float)M_SQRT1_2));
        }
    }
    linear(v.gate, y_.data(), O, M, z_.data(), 2 * Iv, nullptr);
    linear(v.up, y_.data(), O, M, z_.data() + Iv, 2 * Iv, nullptr);
    ff2_.resize(std::max(ff2_.size(), (size_t)M * Iv));
    for (int g = 0; g < M; g++)
        k.silu_mul(&ff2_[(size_t)g * Iv], &z_[(size_t)g * 2 * Iv], &z_[(size_t)g * 2 * Iv + Iv], Iv);
    linear(v.down, ff2_.data(), Iv, M, out, O, nullptr);
}

void VisionEncoder::encode(const float *pixels, int t, int h, int w, float *out) {
    const VisionModel &v = *v_;
    const VisionConfig &c = v.cfg;
    int L = h * w, N = t * L, Cv = c.hidden;
    reserve(N, L);
    embed(pixels, t, h, w);
    rotary_angles(L);
    for (const VisionBlock &B : v.blocks) block(B, t, N, L);
    for (int n = 0; n < N; n++) k_->rmsnorm(&x_[(size_t)n * Cv], &x_[(size_t)n * Cv], v.post_norm.data(), Cv, c.eps);
    merge(N, out);
}

void mrope_positions(int32_t n_tokens, const int32_t *img_tok0, const int32_t *grids, int32_t n_images, int32_t merge,
                     int32_t *out, int32_t *delta) {
    int32_t pos = 0, i = 0;
    for (int32_t img = 0; img <= n_images; img++) {
        int32_t end = img < n_images ? img_tok0[img] : n_tokens;
        for (; i < end; i++, pos++) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = pos; // text
        if (img == n_images) break;
        int32_t t = grids[3 * img], gh = grids[3 * img + 1] / merge, gw = grids[3 * img + 2] / merge;
        for (int32_t f = 0; f < t; f++)
            for (int32_t r = 0; r < gh; r++)
                for (int32_t c = 0; c < gw; c++, i++) {
                    out[3 * i] = pos + f;
                    out[3 * i + 1] = pos + r;
                    out[3 * i + 2] = pos + c;
                }
        pos += std::max(grids[3 * img + 1], grids[3 * img + 2]) / merge;
    }
    *delta = pos - n_tokens;
}

} // namespace maya
