"""Reference forward pass for the MoE families: GLM-4.5/4.6/4.7 (Glm4MoeForCausalLM) and
DeepSeek-V3/V3.1 (DeepseekV3ForCausalLM), in plain float32 PyTorch with full recomputation.

Written from the semantics of Hugging Face transformers' modeling_glm4_moe.py,
modeling_deepseek_v3.py and modeling_rope_utils.py (facts cited per function; no code copied).
Attention here is the *expanded* form transformers computes (kv_b_proj turns every cached latent
into per-head keys and values), while the engine attends in the absorbed form over the latent, so
agreement checks the absorption too.

Shapes: T tokens, C hidden, H heads, E routed experts, K experts per token, R kv_lora_rank,
Dn/Dr/Dv the nope/rope/value head dims.

Keyword options of `forward` are deliberate mistakes used only by make_moe_fixtures.py to prove the
fixtures discriminate (see its sanity checks).
"""

from __future__ import annotations

import math

import torch

from reference import rms_norm, rope_inv_freq, rotate_neox

ARCHS = ("Glm4MoeForCausalLM", "DeepseekV3ForCausalLM")


def lin(x: torch.Tensor, w: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    """nn.Linear: x @ W^T (+ bias when `<name>.bias` is stored)."""
    y = x @ w[name + ".weight"].T
    b = w.get(name + ".bias")
    return y if b is None else y + b


def yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    """`yarn_get_mscale` / `get_mscale`: 0.1 * mscale * ln(scale) + 1 for scale > 1, else 1."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def rope_tables(cfg: dict, rot_dim: int, T: int, opts: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [T, rot_dim] in the half-split layout (cat(freqs, freqs)), times the attention factor.

    Default RoPE: `_compute_default_rope_parameters`. YaRN (`_compute_yarn_parameters`): when
    rope_scaling has original_max_position_embeddings, factor = max_position_embeddings / it; the
    correction range is floor/ceil of dim*ln(orig/(beta*2pi)) / (2 ln base) for beta_fast / beta_slow,
    clamped to [0, dim-1]; a linear ramp over dim/2 blends inv_freq/factor (interpolation) with
    inv_freq (extrapolation); attention_factor (absent: mscale(factor, mscale) /
    mscale(factor, mscale_all_dim) when both are set, else mscale(factor)) multiplies cos and sin.
    """
    base = cfg["rope_theta"]
    inv = rope_inv_freq(rot_dim, base)
    attn = 1.0
    rs = cfg.get("rope_scaling")
    if rs and rs.get("type", rs.get("rope_type")) == "yarn" and not opts.get("no_yarn"):
        factor = rs["factor"]
        orig = rs.get("original_max_position_embeddings", cfg["max_position_embeddings"])
        if "original_max_position_embeddings" in rs:
            factor = cfg["max_position_embeddings"] / orig
        ms, ms_all = rs.get("mscale"), rs.get("mscale_all_dim")
        attn = rs.get("attention_factor")
        if attn is None:
            attn = yarn_mscale(factor, ms) / yarn_mscale(factor, ms_all) if ms and ms_all else yarn_mscale(factor)
        if opts.get("no_attention_factor"):
            attn = 1.0

        def corr(rot: float) -> float:
            return (rot_dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))

        low = max(math.floor(corr(rs.get("beta_fast") or 32)), 0)
        high = min(math.ceil(corr(rs.get("beta_slow") or 1)), rot_dim - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(rot_dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
        extra = 1 - ramp
        pos_freqs = base ** (torch.arange(0, rot_dim, 2, dtype=torch.int64).to(torch.float32) / rot_dim)
        inv = (1.0 / (factor * pos_freqs)) * (1 - extra) + (1.0 / pos_freqs) * extra
    freqs = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * attn, emb.sin() * attn


def rope_neox(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """`apply_rotary_pos_emb`: x*cos + rotate_half(x)*sin on the last dim (= cos.shape[-1])."""
    return x * cos + rotate_neox(x) * sin


def rope_deinterleave(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """`apply_rotary_pos_emb_interleave` (DeepSeek, rope_interleave true): the last dim viewed as
    (d/2, 2), transposed to (2, d/2) and flattened (evens then odds), then the half-split rotation."""
    d = x.shape[-1]
    x = x.reshape(*x.shape[:-1], d // 2, 2).transpose(-1, -2).reshape(*x.shape[:-1], d)
    return rope_neox(x, cos, sin)


def causal_softmax_attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """q, k [H, T, Dk], v [H, T, Dv] -> [T, H*Dv]: softmax(q k^T * scale, causal) v, in float32."""
    T = q.shape[1]
    s = (q @ k.transpose(1, 2)) * scale
    s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), -math.inf)
    p = torch.softmax(s, dim=-1, dtype=torch.float32)
    return (p @ v).transpose(0, 1).reshape(T, -1)


def glm_attention(x: torch.Tensor, cfg: dict, w: dict, p: str, opts: dict) -> torch.Tensor:
    """`Glm4MoeAttention`: q/k/v with attention_bias, optional per-head q_norm/k_norm (use_qk_norm)
    before RoPE, half-split RoPE on the first head_dim*partial_rotary_factor dims (the rest pass),
    GQA with kv head h // (H/Hkv), scale head_dim^-0.5, o_proj without bias."""
    T = x.shape[0]
    H, Hkv, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    q = lin(x, w, p + "q_proj").view(T, H, D)
    k = lin(x, w, p + "k_proj").view(T, Hkv, D)
    v = lin(x, w, p + "v_proj").view(T, Hkv, D)
    if cfg.get("use_qk_norm") and not opts.get("skip_qk_norm"):
        q = rms_norm(q, w[p + "q_norm.weight"], cfg["rms_norm_eps"])
        k = rms_norm(k, w[p + "k_norm.weight"], cfg["rms_norm_eps"])
    q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
    rot = int(D * cfg.get("partial_rotary_factor", 0.5))
    cos, sin = rope_tables(cfg, rot, T, opts)
    rope = rope_deinterleave if opts.get("interleaved") else rope_neox
    q = torch.cat((rope(q[..., :rot], cos, sin), q[..., rot:]), dim=-1)
    k = torch.cat((rope(k[..., :rot], cos, sin), k[..., rot:]), dim=-1)
    n_rep = H // Hkv
    k, v = k.repeat_interleave(n_rep, dim=0), v.repeat_interleave(n_rep, dim=0)
    return lin(causal_softmax_attend(q, k, v, D**-0.5), w, p + "o_proj")


def mla_attention(x: torch.Tensor, cfg: dict, w: dict, p: str, opts: dict) -> torch.Tensor:
    """`DeepseekV3Attention`, expanded: q = q_b(q_a_layernorm(q_a(x))) or q_proj(x) -> [T, H, Dn+Dr];
    kv_a_proj_with_mqa(x) -> latent [R] + shared k_pe [Dr]; kv_b_proj(kv_a_layernorm(latent)) ->
    per-head k_nope [Dn] and v [Dv]; RoPE on q_pe and k_pe (de-interleaved first when
    rope_interleave, the default); keys = [k_nope, k_pe] for every head; scale qk_head_dim^-0.5,
    times mscale(rope_scaling.factor, mscale_all_dim)^2 under YaRN when mscale_all_dim is set."""
    T = x.shape[0]
    H, R = cfg["num_attention_heads"], cfg["kv_lora_rank"]
    Dn, Dr, Dv = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    eps = cfg["rms_norm_eps"]
    if cfg.get("q_lora_rank") is None:
        q = lin(x, w, p + "q_proj")
    else:
        q = lin(rms_norm(lin(x, w, p + "q_a_proj"), w[p + "q_a_layernorm.weight"], eps), w, p + "q_b_proj")
    q = q.view(T, H, Dn + Dr).transpose(0, 1)
    q_nope, q_pe = q[..., :Dn], q[..., Dn:]
    ckv = lin(x, w, p + "kv_a_proj_with_mqa")
    latent, k_pe = ckv[:, :R], ckv[:, R:]
    kv = lin(rms_norm(latent, w[p + "kv_a_layernorm.weight"], eps), w, p + "kv_b_proj").view(T, H, Dn + Dv)
    kv = kv.transpose(0, 1)
    k_nope, v = kv[..., :Dn], kv[..., Dn:]
    cos, sin = rope_tables(cfg, Dr, T, opts)
    interleave = cfg.get("rope_interleave", True) and not opts.get("no_interleave")
    rope = rope_deinterleave if interleave else rope_neox
    q_pe = rope(q_pe, cos, sin)
    k_pe = rope(k_pe[None], cos, sin).expand(H, T, Dr)
    scale = (Dn + Dr) ** -0.5
    rs = cfg.get("rope_scaling")
    if rs and rs.get("mscale_all_dim") and not opts.get("no_softmax_mscale"):
        m = yarn_mscale(rs["factor"], rs["mscale_all_dim"])
        scale = scale * m * m
    out = causal_softmax_attend(torch.cat((q_nope, q_pe), -1), torch.cat((k_nope, k_pe), -1), v, scale)
    return lin(out, w, p + "o_proj")


def swiglu(x: torch.Tensor, w: dict, p: str) -> torch.Tensor:
    """`Glm4MoeMLP` / `DeepseekV3MLP`: down(silu(gate(x)) * up(x))."""
    return lin(torch.nn.functional.silu(lin(x, w, p + "gate_proj")) * lin(x, w, p + "up_proj"), w, p + "down_proj")


def route(x: torch.Tensor, cfg: dict, w: dict, p: str, opts: dict) -> tuple[torch.Tensor, torch.Tensor, float]:
    """`DeepseekV3TopkRouter` (= `Glm4MoeTopkRouter`): sigmoid of float32 router logits; choice =
    score + e_score_correction_bias; group score = sum of the group's top-2 choices; the topk_group
    best groups stay and other choices are set to 0.0 (masked_fill); top-K of the choices give the
    experts; their weights are the scores (not choices), / (sum + 1e-20) when norm_topk_prob, then
    * routed_scaling_factor. Returns (ids [T, K], weights [T, K], the smallest selection margin:
    the gap between the K-th and (K+1)-th choice and between the last kept and first dropped group)."""
    E, K = cfg["n_routed_experts"], cfg["num_experts_per_tok"]
    G, TG = cfg.get("n_group", 1), cfg.get("topk_group", 1)
    if opts.get("no_groups"):
        G, TG = 1, 1
    scores = torch.sigmoid(x @ w[p + "gate.weight"].T)
    bias = w[p + "gate.e_score_correction_bias"]
    choice = scores + (0 if opts.get("no_bias_in_choice") else bias)
    grouped = choice.view(-1, G, E // G)
    gscore = grouped.topk(2, dim=-1).values.sum(-1)
    gsorted = gscore.sort(dim=-1, descending=True).values
    margin = float((gsorted[:, TG - 1] - gsorted[:, TG]).min()) if TG < G else math.inf
    keep = torch.zeros_like(gscore).scatter_(1, gscore.topk(TG, dim=-1).indices, 1.0)
    mask = keep.unsqueeze(-1).expand(-1, G, E // G).reshape(-1, E).bool()
    choice = choice.masked_fill(~mask, 0.0)
    csorted = choice.sort(dim=-1, descending=True).values
    if K < E:
        margin = min(margin, float((csorted[:, K - 1] - csorted[:, K]).min()))
    ids = choice.topk(K, dim=-1).indices
    wts = (scores + (bias if opts.get("bias_in_weights") else 0)).gather(1, ids)
    if cfg.get("norm_topk_prob", True):
        wts = wts / (wts.sum(-1, keepdim=True) + 1e-20)
    if not opts.get("no_routed_scale"):
        wts = wts * cfg.get("routed_scaling_factor", 1.0)
    return ids, wts, margin


def moe(x: torch.Tensor, cfg: dict, w: dict, p: str, opts: dict, margins: list) -> torch.Tensor:
    """`Glm4MoeMoE` / `DeepseekV3MoE`: sum over experts (in increasing id, index_add) of weight *
    expert(x) for the tokens routed there, plus shared_experts(x) (moe_intermediate_size *
    n_shared_experts wide)."""
    ids, wts, margin = route(x, cfg, w, p, opts)
    margins.append(margin)
    out = torch.zeros_like(x)
    for e in range(cfg["n_routed_experts"]):
        tok, slot = torch.where(ids == e)
        if tok.numel():
            out.index_add_(0, tok, swiglu(x[tok], w, p + f"experts.{e}.") * wts[tok, slot].unsqueeze(-1))
    if cfg.get("n_shared_experts", 1) and not opts.get("no_shared"):
        out = out + swiglu(x, w, p + "shared_experts.")
    return out


def decoder_layer(x: torch.Tensor, cfg: dict, w: dict, i: int, opts: dict, margins: list) -> torch.Tensor:
    """`Glm4MoeDecoderLayer` / `DeepseekV3DecoderLayer` i (model.layers.{i}): x += attn(input_layernorm(x));
    x += mlp(post_attention_layernorm(x)); a dense MLP below first_k_dense_replace, else MoE."""
    eps = cfg["rms_norm_eps"]
    attn = mla_attention if cfg["architectures"][0] == "DeepseekV3ForCausalLM" else glm_attention
    p = f"model.layers.{i}."
    x = x + attn(rms_norm(x, w[p + "input_layernorm.weight"], eps), cfg, w, p + "self_attn.", opts)
    h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
    return x + (
        moe(h, cfg, w, p + "mlp.", opts, margins) if i >= cfg["first_k_dense_replace"] else swiglu(h, w, p + "mlp.")
    )


@torch.no_grad()
def hidden(cfg: dict, w: dict[str, torch.Tensor], ids: list[int], margins: list | None = None, **opts) -> torch.Tensor:
    """The last layer's output [T, C] for every position, before the final norm."""
    arch = cfg["architectures"][0]
    if arch not in ARCHS:
        raise ValueError(f"unsupported architecture {arch}")
    margins = [] if margins is None else margins
    x = w["model.embed_tokens.weight"][torch.tensor(ids, dtype=torch.int64)]
    for i in range(cfg["num_hidden_layers"]):
        x = decoder_layer(x, cfg, w, i, opts, margins)
    return x


@torch.no_grad()
def forward(cfg: dict, w: dict[str, torch.Tensor], ids: list[int], margins: list | None = None, **opts) -> torch.Tensor:
    """Logits [T, V] for every position (layers as decoder_layer; MTP layers, index >=
    num_hidden_layers, are not run). margins, when given, collects each MoE layer's smallest routing
    margin."""
    x = rms_norm(hidden(cfg, w, ids, margins, **opts), w["model.norm.weight"], cfg["rms_norm_eps"])
    return x @ w["lm_head.weight"].T


@torch.no_grad()
def mtp_forward(
    cfg: dict, w: dict[str, torch.Tensor], h: torch.Tensor, next_ids: list[int], margins: list | None = None, **opts
) -> tuple[torch.Tensor, torch.Tensor]:
    """The first multi-token-prediction layer (model.layers.{num_hidden_layers}) over positions
    0..T-1: row t pairs the hidden state h[t] (the main model's before the final norm, or this layer's
    own output for a chained prediction) with the embedding of next_ids[t] (the token at t+1), and
    predicts the token at t+2. As DeepSeek-V3 and GLM-4.5 publish the layer and vLLM runs it
    (deepseek_mtp.py / glm4_moe_mtp.py; transformers skips it): x = eh_proj(cat(enorm(embed(next)),
    hnorm(h))), embedding first; one decoder layer with causal attention over these positions; logits
    = shared_head.head(shared_head.norm(x)), the head and embedding falling back to lm_head and
    embed_tokens when the layer has none. Returns (x [T, C], logits [T, V])."""
    L, eps = cfg["num_hidden_layers"], cfg["rms_norm_eps"]
    p = f"model.layers.{L}."
    margins = [] if margins is None else margins
    own = not opts.get("model_head")
    emb = w.get(p + "embed_tokens.weight", w["model.embed_tokens.weight"]) if own else w["model.embed_tokens.weight"]
    e = rms_norm(emb[torch.tensor(next_ids, dtype=torch.int64)], w[p + "enorm.weight"], eps)
    hn = rms_norm(h, w[p + "hnorm.weight"], eps)
    x = lin(torch.cat((hn, e) if opts.get("hidden_first") else (e, hn), -1), w, p + "eh_proj")
    x = decoder_layer(x, cfg, w, L, opts, margins)
    head = w.get(p + "shared_head.head.weight", w["lm_head.weight"]) if own else w["lm_head.weight"]
    return x, rms_norm(x, w[p + "shared_head.norm.weight"], eps) @ head.T
