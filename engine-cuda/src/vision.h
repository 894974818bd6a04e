/* vision.h: GLM-4.1V / GLM-4.5V's vision tower on the CPU (transformers' Glm4vVisionModel) and the
 * language side's multimodal positions (Glm4vModel.get_rope_index).
 *
 * encode(): pixel rows (the image processor's pixel_values: per image t*h*w patch rows of
 * C*tp*ps*ps floats, merge-window grouped) -> patch embedding (Conv3d with kernel = stride: a
 * matmul) -> post_conv_layernorm (RMSNorm) -> + learned position table resampled bicubically at
 * the patch centres -> depth x [RMSNorm, attention with 2-D rotary (full within a frame), RMSNorm,
 * SwiGLU] -> post_layernorm -> 2x2 downsample (Conv2d with kernel = stride = 2: a matmul over
 * the 4 rows of a merge window) -> merger (Linear, LayerNorm, exact GELU, SwiGLU) -> one
 * out_hidden_size row per merge window: the embeddings of the image's tokens in prompt order.
 *
 * Shapes: N patches, P = C*tp*ps*ps, Cv vision hidden, Dv its head size, O out_hidden_size (the
 * language model's hidden size), Iv merger width (vision intermediate_size), S x S learned positions.
 */
#ifndef MAYA_VISION_H
#define MAYA_VISION_H

#include <stdint.h>
#include <vector>

#include "kernels.h"     // defines: Kernels
#include "model.h"       // defines: Model, Weight
#include "thread_pool.h" // defines: ThreadPool

namespace maya {

struct VisionConfig {
    int32_t depth = 0, hidden = 0, n_head = 0, head_dim = 0; // Cv, Dv = Cv / heads
    int32_t out_hidden = 0;                                  // O
    int32_t merger_ff = 0;                                   // Iv: vision intermediate_size
    int32_t patch = 14, temporal = 2, merge = 2, in_ch = 3;
    int32_t pos_side = 0; // S = image_size / patch
    float eps = 1e-5f, rope_theta = 10000.0f;
    bool has_qkv_bias = false;
    int32_t patch_floats() const { return in_ch * temporal * patch * patch; } // P
};

struct VisionBlock {
    std::vector<float> norm1, norm2; // (Cv)
    Weight qkv;                      // (3 Cv, Cv): rows [q; k; v], heads contiguous within each
    std::vector<float> qkv_bias;     // (3 Cv) when attention_bias
    Weight proj;                     // (Cv, Cv)
    Weight gate, up;                 // (O, Cv)
    Weight down;                     // (Cv, O)
};

struct VisionModel {
    VisionConfig cfg;
    std::vector<float> pos_table;                 // (S*S, Cv) f32, row-major (row, col)
    Weight patch_w;                               // (Cv, P)
    std::vector<float> patch_b;                   // (Cv)
    std::vector<float> post_conv_norm, post_norm; // (Cv)
    std::vector<VisionBlock> blocks;
    Weight down_w;                 // (O, 4 Cv) as (O, Cv, 2, 2)
    std::vector<float> down_b;     // (O)
    Weight proj;                   // (O, O)
    std::vector<float> ln_w, ln_b; // (O) merger LayerNorm
    Weight gate, up;               // (Iv, O)
    Weight down;                   // (O, Iv)
    int64_t n_params = 0;
};

/* Parses vision_config and binds model.visual.* (or visual.*) of m's checkpoint into m->vision.
 * Returns OK, BAD_CHECKPOINT or UNSUPPORTED. */
int32_t vision_load(Model *m);

/* Runs the tower; owns its thread pool and activations (grown to the largest image seen). */
class VisionEncoder {
  public:
    /* k: the context's CPU kernel table (ENG_PARAM_SIMD). Returns OK or OUT_OF_MEMORY. */
    int32_t init(const VisionModel &v, int n_threads, const Kernels &k);
    /* pixels: (t*h*w, P) rows of one image, grid in patches (h, w multiples of merge);
     * out: (t*h*w / merge^2, O). Frames attend within themselves. */
    void encode(const float *pixels, int t, int h, int w, float *out);

  private:
    void linear(const Weight &w, const float *x, int ldx, int T, float *y, int ldy, const float *bias);
    // The steps of encode(), in order (vision.cpp says what each computes).
    void reserve(int N, int L);
    void embed(const float *pixels, int t, int h, int w);
    void add_positions(int t, int h, int w);
    void rotary_angles(int L);
    void block(const VisionBlock &B, int t, int N, int L);
    void rotate_and_repack(int N, int L);
    void merge(int N, float *out);

    const VisionModel *v_ = nullptr;
    const Kernels *k_ = nullptr;
    ThreadPool pool_;
    std::vector<float> x_, h_, qkv_, kh_, vh_, att_, ff_, ff2_, cos_, sin_, win_, y_, z_;
    std::vector<int32_t> rows_, cols_;
    std::vector<std::vector<float>> scratch_;
    std::vector<float *> scratch_ptr_;
};

/* Multimodal rotary positions of a prompt (Glm4vModel.get_rope_index): text tokens advance
 * (t, h, w) together from a running start; image i's n_i tokens (grid t_i x h_i/m x w_i/m,
 * row-major) take start + (frame, row, col), then the start advances by max(h_i, w_i) / m.
 * images: (n_images) first prompt index of each image's tokens, with grids (n_images x 3).
 * Writes (n_tokens, 3) positions and the delta that later (generated) tokens add to their index. */
void mrope_positions(int32_t n_tokens, const int32_t *img_tok0, const int32_t *grids, int32_t n_images, int32_t merge,
                     int32_t *out, int32_t *delta);

} // namespace maya

#endif
