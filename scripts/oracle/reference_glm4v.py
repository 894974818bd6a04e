"""Reference forward pass of GLM-4.1V (Glm4vForConditionalGeneration) and GLM-4.5V
(Glm4vMoeForConditionalGeneration) in plain PyTorch: the image processor's pixel layout, the vision
tower (ViT + 2x2 downsample + merger) and the language model with 3-section M-RoPE positions
(GLM-4.1V: GLM-4-0414 layers, interleaved pairs; GLM-4.5V: GLM-4.5 MoE layers, half-split).

Written from the semantics of Hugging Face transformers' `models/glm4v/modeling_glm4v.py`,
`image_processing_glm4v.py` and `configuration_glm4v.py` (facts cited per function; no code
copied). Everything is computed in float32 from the stored (already rounded) weights, with full
recomputation on every call, as scripts/oracle/reference.py does for the text models.

Shapes: N patches, P = C*tp*ps*ps floats per patch row (3*2*14*14 = 1176), Cv vision hidden size,
O out_hidden_size (= the language model's hidden size), T tokens.

Variant switches (keyword arguments) exist only so make_glm4v_fixtures.py can prove that the
fixtures discriminate: a forward pass that gets one detail wrong must give different numbers.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from reference import linear, rms_norm, rotate_interleaved, rotate_neox
from reference_moe import causal_softmax_attend, lin, moe, swiglu

# OPENAI_CLIP_MEAN / OPENAI_CLIP_STD (transformers image_utils.py), Glm4vImageProcessor's defaults.
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


# ----------------------------------------------------------------------------- image processor


def smart_resize(
    height: int, width: int, factor: int, min_pixels: int, max_pixels: int, temporal: int = 2
) -> tuple[int, int]:
    """Target (height, width) of `image_processing_glm4v.smart_resize` for a still image.

    A still image counts as `temporal_patch_size` (2) frames: the pixel budget compares
    2 * h * w against [min_pixels, max_pixels] (`size.shortest_edge` / `size.longest_edge`).
    Sides round to multiples of factor (patch 14 x merge 2 = 28); over budget they shrink by
    sqrt(2*h*w / max) and floor, under budget they grow by sqrt(min / (2*h*w)) and ceil.
    """
    if height < factor or width < factor:
        scale = max(factor / height, factor / width)
        height, width = int(height * scale), int(width * scale)
    if max(height, width) / min(height, width) > 200:
        raise ValueError("aspect ratio over 200")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if temporal * h_bar * w_bar > max_pixels:
        beta = math.sqrt(temporal * height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif temporal * h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (temporal * height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def pixel_values(rgb: np.ndarray, pre: dict) -> tuple[torch.Tensor, list[int]]:
    """(pixel_values [N, P] float32, grid_thw [1, gh, gw]) of one RGB uint8 image [H, W, 3] whose
    sides are already what smart_resize asks for (no resampling here).

    Normalisation as the torchvision-backed Glm4vImageProcessor does it (rescale fused into
    normalize): mean' = f32(mean) * (1 / rescale_factor), std' likewise, then (x - mean') / std' in
    float32. Patch order (`Glm4vImageProcessor.patchify`): the image [C, H, W] is viewed as
    [C, gh/m, m, ps, gw/m, m, ps] and permuted to [gh/m, gw/m, m, m, C, ps, ps] (merge-window
    groups of m x m patches, row-major inside a window), each patch duplicated along a new temporal
    axis of temporal_patch_size placed after C: a row is [C, tp, ps, ps].
    """
    ps, m, tp = pre["patch_size"], pre["merge_size"], pre["temporal_patch_size"]
    H, W, C = rgb.shape
    if H % (ps * m) or W % (ps * m):
        raise ValueError("sides must be multiples of patch_size * merge_size")
    x = torch.from_numpy(rgb.astype(np.float32)).permute(2, 0, 1)  # [C, H, W]
    inv = 1.0 / pre["rescale_factor"]
    mean = torch.tensor(pre["image_mean"], dtype=torch.float32) * inv
    std = torch.tensor(pre["image_std"], dtype=torch.float32) * inv
    x = (x - mean[:, None, None]) / std[:, None, None]
    gh, gw = H // ps, W // ps
    p = x.reshape(C, gh // m, m, ps, gw // m, m, ps).permute(1, 4, 2, 5, 0, 3, 6)
    p = p.unsqueeze(5).expand(gh // m, gw // m, m, m, C, tp, ps, ps)
    return p.reshape(gh * gw, C * tp * ps * ps).contiguous(), [1, gh, gw]


# ----------------------------------------------------------------------------- vision tower


def patch_coords(grid: list[int], m: int) -> torch.Tensor:
    """[t*h*w, 2] (row, col) of every patch in the processor's merge-grouped order, repeated per
    temporal index (transformers `get_vision_position_ids`, the Qwen2-VL `rot_pos_emb` layout)."""
    t, h, w = grid
    rows = torch.arange(h)[:, None].expand(h, w).reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
    cols = torch.arange(w)[None, :].expand(h, w).reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
    return torch.stack([rows, cols], dim=-1).repeat(t, 1)


def vision_rope(coords: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [N, head_dim] of the ViT's axial 2-D rotary embedding.

    Source: `Glm4vVisionRotaryEmbedding`: inv_freq over head_dim // 2 dims (head_dim / 4
    frequencies, exponent arange(0, dim/2, 2) / (dim/2)); angles row * inv_freq and col * inv_freq
    are concatenated [row | col] and the result duplicated [hw | hw] (NeoX halves, `rotate_half`).
    """
    spatial = head_dim // 2
    inv_freq = 1.0 / (theta ** (torch.arange(0, spatial, 2, dtype=torch.float32) / spatial))
    freqs = coords.to(torch.float32)[..., None] * inv_freq  # [N, 2, head_dim/4]
    hw = torch.cat([freqs[:, 0], freqs[:, 1]], dim=-1)
    full = torch.cat([hw, hw], dim=-1)
    return full.cos(), full.sin()


def position_embedding(
    table: torch.Tensor, coords: torch.Tensor, grid: list[int], mode: str = "bicubic"
) -> torch.Tensor:
    """The learned S x S position table resampled at this image's patch centres: [N, Cv].

    Source: `Glm4vVisionEmbeddings.forward`: the table [S*S, Cv] viewed [S, S, Cv] (row, col) as an
    image; each patch samples it with `F.grid_sample(mode="bicubic", align_corners=False,
    padding_mode="border")` at x = ((col + 0.5) / w) * 2 - 1, y = ((row + 0.5) / h) * 2 - 1, in
    float32.
    """
    S = int(round(table.shape[0] ** 0.5))
    img = table.view(S, S, -1).permute(2, 0, 1).unsqueeze(0).to(torch.float32)
    _, h, w = grid
    x = (coords[:, 1].to(torch.float32) + 0.5) / w * 2 - 1
    y = (coords[:, 0].to(torch.float32) + 0.5) / h * 2 - 1
    g = torch.stack([x, y], dim=-1)[None, :, None, :]
    out = F.grid_sample(img, g, mode=mode, align_corners=False, padding_mode="border")
    return out[0, :, :, 0].T


def vision_block(
    x: torch.Tensor,
    vc: dict,
    w: dict,
    i: int,
    cos: torch.Tensor,
    sin: torch.Tensor,
    spans: list[tuple[int, int]],
    opts: dict,
) -> torch.Tensor:
    """One ViT block (`Glm4vVisionBlock`): x += attn(norm1(x)); x += mlp(norm2(x)).

    Attention (`Glm4vVisionAttention`): fused qkv [3*Cv, Cv] (bias when attention_bias), viewed
    [N, 3, heads, head_dim]; q and k rotated with the 2-D rope (NeoX halves); full (non-causal)
    attention within each image (cu_seqlens), scale head_dim^-0.5; `proj` without bias.
    MLP (`Glm4VisionMlp`): down(silu(gate x) * up x), width out_hidden_size, no biases.
    """
    p = f"model.visual.blocks.{i}."
    eps = vc["rms_norm_eps"]
    N, Cv = x.shape
    heads = vc["num_heads"]
    hd = Cv // heads
    h = rms_norm(x, w[p + "norm1.weight"], eps)
    qkv = linear(h, w, p + "attn.qkv").view(N, 3, heads, hd)
    q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]  # [N, heads, hd]
    if not opts.get("skip_vit_rope"):
        c, s = cos[:, None, :], sin[:, None, :]
        q = q * c + rotate_neox(q) * s
        k = k * c + rotate_neox(k) * s
    out = torch.empty(N, heads, hd)
    for a, b in spans:
        qs, ks, vs = q[a:b].transpose(0, 1), k[a:b].transpose(0, 1), v[a:b].transpose(0, 1)
        probs = torch.softmax((qs @ ks.transpose(1, 2)) * hd**-0.5, dim=-1)
        out[a:b] = (probs @ vs).transpose(0, 1)
    x = x + linear(out.reshape(N, Cv), w, p + "attn.proj")
    h = rms_norm(x, w[p + "norm2.weight"], eps)
    m = linear(F.silu(linear(h, w, p + "mlp.gate_proj")) * linear(h, w, p + "mlp.up_proj"), w, p + "mlp.down_proj")
    return x + m


@torch.no_grad()
def vision_forward(cfg: dict, w: dict, pixels: torch.Tensor, grids: list[list[int]], **opts) -> torch.Tensor:
    """Image embeddings [sum(t*h*w/4), O] for the concatenated pixel rows of images with grids.

    Order (`Glm4vVisionModel.forward`): patch_embed (Conv3d with kernel = stride = (tp, ps, ps):
    one matmul of each pixel row with the weight flattened to [Cv, P], plus bias) ->
    post_conv_layernorm (RMSNorm) -> + resampled position embedding -> blocks (rope from the patch
    (row, col)) -> post_layernorm (RMSNorm) -> each 4 consecutive rows (one 2x2 merge window,
    row-major) as a [Cv, 2, 2] image through `downsample` (Conv2d Cv -> O, kernel = stride = 2,
    bias) -> merger (`Glm4vVisionPatchMerger`): proj (no bias), LayerNorm (weight, bias, eps 1e-5),
    exact GELU, then down(silu(gate x) * up x) of width vision intermediate_size.
    """
    vc = cfg["vision_config"]
    eps = vc["rms_norm_eps"]
    m = vc["spatial_merge_size"]
    Cv, O = vc["hidden_size"], vc["out_hidden_size"]
    pw = w["model.visual.patch_embed.proj.weight"]
    x = pixels.to(torch.float32) @ pw.reshape(Cv, -1).T + w["model.visual.patch_embed.proj.bias"]
    if not opts.get("skip_post_conv_norm"):
        x = rms_norm(x, w["model.visual.post_conv_layernorm.weight"], eps)
    coords = torch.cat([patch_coords(g, m) for g in grids])
    if not opts.get("skip_pos_embed"):
        pos, at = [], 0
        for g in grids:
            n = g[0] * g[1] * g[2]
            pos.append(
                position_embedding(
                    w["model.visual.embeddings.position_embedding.weight"],
                    coords[at : at + n],
                    g,
                    opts.get("pos_mode", "bicubic"),
                )
            )
            at += n
        x = x + torch.cat(pos)
    theta = (vc.get("rope_parameters") or {}).get("rope_theta", 10000.0)
    cos, sin = vision_rope(coords, Cv // vc["num_heads"], theta)
    spans, at = [], 0  # attention runs within each frame of each image
    for g in grids:
        for _ in range(g[0]):
            spans.append((at, at + g[1] * g[2]))
            at += g[1] * g[2]
    for i in range(vc["depth"]):
        x = vision_block(x, vc, w, i, cos, sin, spans, opts)
    x = rms_norm(x, w["model.visual.post_layernorm.weight"], eps)
    win = x.view(-1, m, m, Cv).permute(0, 3, 1, 2)  # [N/4, Cv, 2, 2]
    if opts.get("downsample_transposed"):
        win = win.transpose(2, 3)
    y = win.reshape(win.shape[0], -1) @ w["model.visual.downsample.weight"].reshape(O, -1).T
    y = y + w["model.visual.downsample.bias"]
    y = linear(y, w, "model.visual.merger.proj")
    y = F.layer_norm(
        y,
        (O,),
        w["model.visual.merger.post_projection_norm.weight"],
        w["model.visual.merger.post_projection_norm.bias"],
        1e-5,
    )
    y = F.gelu(y, approximate="tanh" if opts.get("gelu_tanh") else "none")
    return linear(
        F.silu(linear(y, w, "model.visual.merger.gate_proj")) * linear(y, w, "model.visual.merger.up_proj"),
        w,
        "model.visual.merger.down_proj",
    )


# ----------------------------------------------------------------------------- language model


def rope_index(cfg: dict, ids: list[int], grids: list[list[int]]) -> torch.Tensor:
    """[3, T] (temporal, height, width) positions of every token (`Glm4vModel.get_rope_index`).

    Text tokens advance all three by one from a running start. A run of image tokens (image i of
    grids, t*h*w/m^2 tokens, in merged-window row-major order) takes t = start + frame,
    h = start + row, w = start + col over its (t, h/m, w/m) grid; the running start then advances
    by max(h, w) / m (not by its token count), so text after an image resumes there.
    """
    m = cfg["vision_config"]["spatial_merge_size"]
    image_id = cfg["image_token_id"]
    out = torch.zeros(3, len(ids), dtype=torch.int64)
    pos, i, img = 0, 0, 0
    while i < len(ids):
        if ids[i] != image_id:
            out[:, i] = pos
            pos += 1
            i += 1
            continue
        t, h, w = grids[img]
        gh, gw = h // m, w // m
        n = t * gh * gw
        if ids[i : i + n] != [image_id] * n:
            raise ValueError(f"image {img} needs {n} consecutive image tokens at {i}")
        tt, hh, ww = torch.meshgrid(torch.arange(t), torch.arange(gh), torch.arange(gw), indexing="ij")
        out[0, i : i + n] = tt.flatten() + pos
        out[1, i : i + n] = hh.flatten() + pos
        out[2, i : i + n] = ww.flatten() + pos
        pos += max(h, w) // m
        i += n
        img += 1
    if img != len(grids):
        raise ValueError("fewer image token runs than images")
    return out


def mrope_cos_sin(cfg: dict, positions: torch.Tensor, opts: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [T, rot] of the text M-RoPE (`Glm4vTextRotaryEmbedding`).

    inv_freq over rot = head_dim * partial_rotary_factor dims (rot/2 frequencies); frequency j takes
    the position of section s(j), where mrope_section [a, b, c] (sum rot/2) gives j < a -> t,
    a <= j < a+b -> h, else w (`recomposition_frequencies`: split, take section i from component
    i % 3); then each is `repeat_interleave(2)`-ed: adjacent pairs (GLM-4.1V's `rotate_half_llm`).
    """
    tc = cfg["text_config"]
    hd = tc.get("head_dim") or tc["hidden_size"] // tc["num_attention_heads"]
    rot = int(hd * tc.get("partial_rotary_factor", 1.0))
    inv_freq = 1.0 / (tc["rope_theta"] ** (torch.arange(0, rot, 2, dtype=torch.float32) / rot))
    section = opts.get("mrope_section", tc["rope_scaling"]["mrope_section"])
    which = torch.cat([torch.full((n,), k % 3, dtype=torch.int64) for k, n in enumerate(section)])
    pos = positions.to(torch.float32)  # [3, T]
    freqs = pos[which].T * inv_freq  # [T, rot/2]: frequency j uses the position of its section
    if is_moe(cfg):  # Glm4vMoeTextRotaryEmbedding: cat(freqs, freqs), NeoX halves (`rotate_half`)
        return torch.cat([freqs.cos(), freqs.cos()], dim=-1), torch.cat([freqs.sin(), freqs.sin()], dim=-1)
    return freqs.cos().repeat_interleave(2, dim=-1), freqs.sin().repeat_interleave(2, dim=-1)


def is_moe(cfg: dict) -> bool:
    return cfg["architectures"][0] == "Glm4vMoeForConditionalGeneration"


def moe_text_layer(
    x: torch.Tensor, cfg: dict, w: dict, i: int, cos: torch.Tensor, sin: torch.Tensor, margins: list
) -> torch.Tensor:
    """GLM-4.5V's layer (`Glm4vMoeTextDecoderLayer` = `Glm4MoeDecoderLayer`): x += attn(input_layernorm
    x); x += mlp(post_attention_layernorm x), the MLP dense for layers < first_k_dense_replace, else
    the routed experts + shared experts of reference_moe.moe. Attention (`Glm4vMoeTextAttention`):
    q/k/v with bias, no QK-norm, M-RoPE on the leading rot dims as NeoX halves, GQA, o_proj without
    bias, head_dim from the config."""
    tc = cfg["text_config"]
    p = f"model.language_model.layers.{i}."
    eps = tc["rms_norm_eps"]
    T = x.shape[0]
    H, Hkv, D = tc["num_attention_heads"], tc["num_key_value_heads"], tc["head_dim"]
    rot = cos.shape[-1]
    h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
    q = lin(h, w, p + "self_attn.q_proj").view(T, H, D).transpose(0, 1)
    k = lin(h, w, p + "self_attn.k_proj").view(T, Hkv, D).transpose(0, 1)
    v = lin(h, w, p + "self_attn.v_proj").view(T, Hkv, D).transpose(0, 1)
    q = torch.cat([q[..., :rot] * cos + rotate_neox(q[..., :rot]) * sin, q[..., rot:]], dim=-1)
    k = torch.cat([k[..., :rot] * cos + rotate_neox(k[..., :rot]) * sin, k[..., rot:]], dim=-1)
    k, v = k.repeat_interleave(H // Hkv, dim=0), v.repeat_interleave(H // Hkv, dim=0)
    x = x + lin(causal_softmax_attend(q, k, v, D**-0.5), w, p + "self_attn.o_proj")
    h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
    if i >= tc["first_k_dense_replace"]:
        return x + moe(h, tc, w, p + "mlp.", {}, margins)
    return x + swiglu(h, w, p + "mlp.")


def text_layer(x: torch.Tensor, cfg: dict, w: dict, i: int, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """`Glm4vTextDecoderLayer`: GLM-4-0414's layer (q/k/v bias, o_proj without, partial interleaved
    rope on the leading rot dims of each head, GQA, causal, four RMSNorms incl. the post-attention and
    post-MLP ones, fused gate_up_proj); head_dim = hidden_size / num_attention_heads."""
    tc = cfg["text_config"]
    p = f"model.language_model.layers.{i}."
    eps = tc["rms_norm_eps"]
    T = x.shape[0]
    H, Hkv = tc["num_attention_heads"], tc["num_key_value_heads"]
    D = tc["hidden_size"] // H
    rot = cos.shape[-1]
    h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
    q = linear(h, w, p + "self_attn.q_proj").view(T, H, D).transpose(0, 1)
    k = linear(h, w, p + "self_attn.k_proj").view(T, Hkv, D).transpose(0, 1)
    v = linear(h, w, p + "self_attn.v_proj").view(T, Hkv, D).transpose(0, 1)

    def rope(t: torch.Tensor) -> torch.Tensor:
        r, rest = t[..., :rot], t[..., rot:]
        return torch.cat([r * cos + rotate_interleaved(r) * sin, rest], dim=-1)

    q, k = rope(q), rope(k)
    k, v = k.repeat_interleave(H // Hkv, dim=0), v.repeat_interleave(H // Hkv, dim=0)
    scores = (q @ k.transpose(1, 2)) * D**-0.5
    scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), -math.inf)
    a = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(T, H * D)
    a = rms_norm(linear(a, w, p + "self_attn.o_proj"), w[p + "post_self_attn_layernorm.weight"], eps)
    x = x + a
    h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
    gate, up = linear(h, w, p + "mlp.gate_up_proj").chunk(2, dim=-1)
    mo = linear(F.silu(gate) * up, w, p + "mlp.down_proj")
    return x + rms_norm(mo, w[p + "post_mlp_layernorm.weight"], eps)


@torch.no_grad()
def forward(
    cfg: dict,
    w: dict,
    ids: list[int],
    image_embeds: torch.Tensor,
    grids: list[list[int]],
    margins: list | None = None,
    **opts,
) -> torch.Tensor:
    """Logits [T, V] for ids whose image tokens take image_embeds' rows in order
    (`Glm4vModel.forward`: embed_tokens, then `masked_scatter` at image_token_id positions)."""
    tc = cfg["text_config"]
    x = w["model.language_model.embed_tokens.weight"][torch.tensor(ids, dtype=torch.int64)].clone()
    mask = torch.tensor(ids) == cfg["image_token_id"]
    if int(mask.sum()) != image_embeds.shape[0]:
        raise ValueError("image tokens and image embeddings differ in number")
    x[mask] = image_embeds
    if opts.get("plain_positions"):
        positions = torch.arange(len(ids)).expand(3, -1)
    else:
        positions = rope_index(cfg, ids, grids)
    cos, sin = mrope_cos_sin(cfg, positions, opts)
    margins = [] if margins is None else margins
    for i in range(tc["num_hidden_layers"]):
        x = moe_text_layer(x, cfg, w, i, cos, sin, margins) if is_moe(cfg) else text_layer(x, cfg, w, i, cos, sin)
    x = rms_norm(x, w["model.language_model.norm.weight"], tc["rms_norm_eps"])
    return x @ w["lm_head.weight"].T


def greedy(
    cfg: dict,
    w: dict,
    ids: list[int],
    image_embeds: torch.Tensor,
    grids: list[list[int]],
    n: int,
    margins: list | None = None,
    **opts,
) -> tuple[list[int], float]:
    """n greedy tokens by full recomputation (no cache); ties to the lowest id. Generated tokens are
    text: their positions continue from the running start (`rope_deltas` in transformers)."""
    seq = list(ids)
    out: list[int] = []
    margin = math.inf
    for _ in range(n):
        logits = forward(cfg, w, seq, image_embeds, grids, margins, **opts)[-1]
        top2 = torch.topk(logits, 2).values
        margin = min(margin, float(top2[0] - top2[1]))
        tok = int(torch.argmax(logits))
        out.append(tok)
        seq.append(tok)
    return out, margin
