"""Reference forward pass for Maya's engine oracle: GLM-4-0414, Llama and Qwen3 in plain PyTorch.

Written from the semantics of Hugging Face transformers' modeling code (facts cited per function;
no code copied). Everything is computed in float32 from the stored (already rounded) weights, with
full recomputation of the whole sequence on every call: no KV cache, so there is nothing for the
engine's own cache logic to agree with by accident.

Shapes follow engine.h: T tokens, C hidden size, H query heads, Hkv key/value heads, D head size,
V vocabulary.

Variant switches (keyword arguments of `forward`) exist only so make_fixtures.py can prove that the
fixtures discriminate: a forward pass that gets a detail wrong must produce different logits.
"""

from __future__ import annotations

import math

import torch

ARCHS = ("Glm4ForCausalLM", "LlamaForCausalLM", "Qwen3ForCausalLM")


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """x * rsqrt(mean(x^2) + eps) * w, in float32.

    Source: `LlamaRMSNorm.forward` / `Glm4RMSNorm.forward` / `Qwen3RMSNorm.forward` (variance is
    the mean of squares over the last dim, computed in float32, then scaled by the weight).
    """
    x = x.to(torch.float32)
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def linear(x: torch.Tensor, weights: dict[str, torch.Tensor], name: str, use_bias: bool = True) -> torch.Tensor:
    """nn.Linear semantics: x @ W^T (+ b when `<name>.bias` exists in the checkpoint)."""
    y = x @ weights[name + ".weight"].T
    bias = weights.get(name + ".bias") if use_bias else None
    return y if bias is None else y + bias


def rope_inv_freq(rot_dim: int, theta: float, rope_scaling: dict | None = None) -> torch.Tensor:
    """1 / theta^(2i / rot_dim) for i in [0, rot_dim/2), then Llama-3's scaling when rope_scaling's
    rope_type is "llama3" (any other rope_scaling is not modelled here and is ignored).

    Source: transformers `modeling_rope_utils._compute_default_rope_parameters`: the rotary dim is
    `int(head_dim * partial_rotary_factor)` and the exponent is `arange(0, dim, 2) / dim`.
    Llama-3 (`_compute_llama3_parameters`): with wavelength w = 2 pi / inv_freq, the original
    context o = original_max_position_embeddings (8192), low_freq_factor l (1), high_freq_factor h
    (4) and factor f (8): w > o / l divides inv_freq by f; w < o / h keeps it; between, with
    s = (o / w - l) / (h - l), inv_freq becomes (1 - s) inv_freq / f + s inv_freq.
    """
    exponent = torch.arange(0, rot_dim, 2, dtype=torch.int64).to(torch.float32) / rot_dim
    inv = 1.0 / (theta**exponent)
    rs = rope_scaling or {}
    if rs.get("rope_type", rs.get("type")) != "llama3":
        return inv
    f, lo, hi = rs.get("factor", 8.0), rs.get("low_freq_factor", 1.0), rs.get("high_freq_factor", 4.0)
    o = rs.get("original_max_position_embeddings", 8192)
    w = 2 * math.pi / inv
    s = (o / w - lo) / (hi - lo)
    smoothed = (1 - s) * inv / f + s * inv
    return torch.where(w > o / lo, inv / f, torch.where(w < o / hi, inv, smoothed))


def rotate_neox(x: torch.Tensor) -> torch.Tensor:
    """Half-split rotation: [x1, x2] -> [-x2, x1] (Llama/Qwen3 `rotate_half`)."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_interleaved(x: torch.Tensor) -> torch.Tensor:
    """Adjacent-pair rotation: (x0, x1), (x2, x3)... -> (-x1, x0), (-x3, x2)...

    Source: `modeling_glm4.rotate_half` (stacks -x[1::2] and x[0::2] on a new last dim, flattens).
    """
    return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor,
    rot_dim: int,
    theta: float,
    interleaved: bool,
    rope_scaling: dict | None = None,
) -> torch.Tensor:
    """Rotates the first rot_dim dims of x [heads, T, D]; dims rot_dim.. pass through.

    Llama/Qwen3 (`modeling_llama.apply_rotary_pos_emb`): cos/sin = cat(freqs, freqs) over the full
    head dim, `x*cos + rotate_half(x)*sin`.
    GLM-4 (`modeling_glm4.apply_rotary_pos_emb`): cos/sin built the same way over rot_dim, then the
    first half is taken and `repeat_interleave(2)`-ed, so pair (2i, 2i+1) uses inv_freq[i]; only
    `q[..., :rot_dim]` is rotated and the rest is concatenated back unchanged.
    Frequencies are float32 position * inv_freq (`Glm4RotaryEmbedding.forward`, autocast off).
    """
    freqs = positions.to(torch.float32)[:, None] * rope_inv_freq(rot_dim, theta, rope_scaling)[None, :]  # [T, rot/2]
    if interleaved:
        cos = freqs.cos().repeat_interleave(2, dim=-1)
        sin = freqs.sin().repeat_interleave(2, dim=-1)
        rotate = rotate_interleaved
    else:
        cos = torch.cat((freqs.cos(), freqs.cos()), dim=-1)
        sin = torch.cat((freqs.sin(), freqs.sin()), dim=-1)
        rotate = rotate_neox
    x_rot, x_pass = x[..., :rot_dim], x[..., rot_dim:]
    return torch.cat((x_rot * cos + rotate(x_rot) * sin, x_pass), dim=-1)


def attention(x: torch.Tensor, cfg: dict, weights: dict[str, torch.Tensor], prefix: str, opts: dict) -> torch.Tensor:
    """Causal GQA self-attention of one layer; x is the normed input [T, C]; returns [T, C].

    q/k/v/o projections as `Glm4Attention` / `LlamaAttention` / `Qwen3Attention` (biases as stored:
    GLM-4 has q/k/v bias, o_proj none). Qwen3 applies `q_norm`/`k_norm` (RMSNorm over D, one weight
    shared by all heads) to the [T, heads, D] view before the transpose and before RoPE
    (`Qwen3Attention.forward`). Key/value head j serves query heads j*n_rep .. (j+1)*n_rep-1
    (`repeat_kv`). Scores are scaled by D^-0.5 (`self.scaling = head_dim**-0.5`), masked causally,
    softmaxed in float32 (`eager_attention_forward`).
    """
    arch = cfg["architectures"][0]
    T = x.shape[0]
    H, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim") or cfg["hidden_size"] // H
    use_bias = not opts.get("skip_bias")
    q = linear(x, weights, prefix + "q_proj", use_bias).view(T, H, D)
    k = linear(x, weights, prefix + "k_proj", use_bias).view(T, Hkv, D)
    v = linear(x, weights, prefix + "v_proj", use_bias).view(T, Hkv, D)
    if arch == "Qwen3ForCausalLM" and not opts.get("skip_qk_norm"):
        eps = cfg["rms_norm_eps"]
        q = rms_norm(q, weights[prefix + "q_norm.weight"], eps)
        k = rms_norm(k, weights[prefix + "k_norm.weight"], eps)
    q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)  # [heads, T, D]

    factor = opts.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0))
    rot_dim = int(D * factor)
    interleaved = opts.get("interleaved", arch == "Glm4ForCausalLM")
    positions = torch.arange(T)
    scaling = None if opts.get("skip_rope_scaling") else cfg.get("rope_scaling")
    q = apply_rope(q, positions, rot_dim, cfg["rope_theta"], interleaved, scaling)
    k = apply_rope(k, positions, rot_dim, cfg["rope_theta"], interleaved, scaling)

    n_rep = H // Hkv
    if opts.get("kv_tile"):  # wrong on purpose: query head h reads kv head h % Hkv
        k, v = k.repeat(n_rep, 1, 1), v.repeat(n_rep, 1, 1)
    else:
        k, v = k.repeat_interleave(n_rep, dim=0), v.repeat_interleave(n_rep, dim=0)
    scores = (q @ k.transpose(1, 2)) * (D**-0.5)  # [H, T, T]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(mask, -math.inf)
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32)
    out = (probs @ v).transpose(0, 1).reshape(T, H * D)
    return linear(out, weights, prefix + "o_proj")


def mlp(x: torch.Tensor, cfg: dict, weights: dict[str, torch.Tensor], prefix: str) -> torch.Tensor:
    """SwiGLU MLP: down(silu(gate) * up).

    GLM-4 (`Glm4MLP.forward`): one fused `gate_up_proj` of 2*I rows, `chunk(2)` -> [gate, up].
    Llama/Qwen3 (`LlamaMLP.forward`): separate gate_proj and up_proj. hidden_act is "silu".
    """
    if cfg["architectures"][0] == "Glm4ForCausalLM":
        gate, up = linear(x, weights, prefix + "gate_up_proj").chunk(2, dim=-1)
    else:
        gate = linear(x, weights, prefix + "gate_proj")
        up = linear(x, weights, prefix + "up_proj")
    return linear(torch.nn.functional.silu(gate) * up, weights, prefix + "down_proj")


def decoder_layer(x: torch.Tensor, cfg: dict, weights: dict[str, torch.Tensor], i: int, opts: dict) -> torch.Tensor:
    """One decoder layer on the residual stream x [T, C].

    Llama/Qwen3 (`LlamaDecoderLayer.forward`): h = x + attn(input_layernorm(x));
    out = h + mlp(post_attention_layernorm(h)).
    GLM-4 (`Glm4DecoderLayer.forward`): four norms; `post_self_attn_layernorm` normalises the
    attention output before its residual add, `post_attention_layernorm` is the pre-MLP norm, and
    `post_mlp_layernorm` normalises the MLP output before its residual add.
    """
    p = f"model.layers.{i}."
    eps = cfg["rms_norm_eps"]
    glm = cfg["architectures"][0] == "Glm4ForCausalLM"
    post_norms = glm and not opts.get("skip_post_norms")
    a = attention(rms_norm(x, weights[p + "input_layernorm.weight"], eps), cfg, weights, p + "self_attn.", opts)
    if post_norms:
        a = rms_norm(a, weights[p + "post_self_attn_layernorm.weight"], eps)
    h = x + a
    m = mlp(rms_norm(h, weights[p + "post_attention_layernorm.weight"], eps), cfg, weights, p + "mlp.")
    if post_norms:
        m = rms_norm(m, weights[p + "post_mlp_layernorm.weight"], eps)
    return h + m


@torch.no_grad()
def forward(cfg: dict, weights: dict[str, torch.Tensor], ids: list[int], **opts) -> torch.Tensor:
    """Logits [T, V] (float32) for every position of `ids`.

    Embedding lookup without scaling (`model.embed_tokens`), the layers, final `model.norm`, then
    `lm_head` — or the embedding matrix when `tie_word_embeddings` is true (the checkpoint then has
    no `lm_head.weight`, as transformers saves tied models).
    Options: interleaved (bool), partial_rotary_factor (float), skip_post_norms, skip_qk_norm,
    skip_bias, kv_tile (all wrong on purpose; see the module docstring).
    """
    arch = cfg["architectures"][0]
    if arch not in ARCHS:
        raise ValueError(f"unsupported architecture {arch}")
    x = weights["model.embed_tokens.weight"][torch.tensor(ids, dtype=torch.int64)]
    for i in range(cfg["num_hidden_layers"]):
        x = decoder_layer(x, cfg, weights, i, opts)
    x = rms_norm(x, weights["model.norm.weight"], cfg["rms_norm_eps"])
    head = weights["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else weights["lm_head.weight"]
    return x @ head.T


def greedy(cfg: dict, weights: dict[str, torch.Tensor], ids: list[int], n: int, **opts) -> tuple[list[int], float]:
    """n greedy tokens, each from a full recomputation over prompt + tokens so far (no cache).

    Ties go to the lowest id (torch.argmax). No stop tokens: EOS is an ordinary token here.
    Returns (tokens, smallest top-1 minus top-2 logit gap over the n steps).
    """
    seq = list(ids)
    out: list[int] = []
    min_margin = math.inf
    for _ in range(n):
        logits = forward(cfg, weights, seq, **opts)[-1]
        top2 = torch.topk(logits, 2).values
        min_margin = min(min_margin, float(top2[0] - top2[1]))
        token = int(torch.argmax(logits))
        out.append(token)
        seq.append(token)
    return out, min_margin
