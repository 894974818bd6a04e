"""Reference forward of Qwen3-MoE (Qwen3MoeForCausalLM) in plain PyTorch, full recomputation,
written from the semantics of transformers' modeling_qwen3_moe.py (facts, no code copied):

- Attention is Qwen3's (q_norm / k_norm per head before NeoX RoPE, GQA, scale D^-0.5): the dense
  oracle's `reference.attention`, called with the Qwen3 architecture name.
- Layer i is sparse when i is not in `mlp_only_layers` and (i + 1) % decoder_sparse_step == 0
  (`Qwen3MoeDecoderLayer`); the fixtures make every layer sparse (llama.cpp's qwen3moe has no
  dense layers).
- `Qwen3MoeSparseMoeBlock`: router logits = gate(x) (no bias); probabilities = softmax over all
  experts in float32; the top num_experts_per_tok of them, renormalised to sum 1 when
  norm_topk_prob; output = sum of weight * expert(x), expert = down(silu(gate(x)) * up(x)); no
  shared expert.

Computes in float32 as the other oracle modules; reference_gguf.use_float64 makes it float64.
"""

from __future__ import annotations

import torch

from reference import attention, rms_norm

ARCHS = ("Qwen3MoeForCausalLM",)
TRACE: list | None = None  # when a list, each MoE layer appends (chosen expert ids [T, K] sorted,
# per-position selection margins [T])


def lin(x: torch.Tensor, w: dict, name: str) -> torch.Tensor:
    return x @ w[name + ".weight"].T


def expert(x: torch.Tensor, w: dict, p: str) -> torch.Tensor:
    return lin(torch.nn.functional.silu(lin(x, w, p + "gate_proj")) * lin(x, w, p + "up_proj"), w, p + "down_proj")


def moe(x: torch.Tensor, cfg: dict, w: dict, p: str, margins: list) -> torch.Tensor:
    E, K = cfg["num_experts"], cfg["num_experts_per_tok"]
    probs = torch.softmax(x @ w[p + "gate.weight"].T, dim=-1, dtype=torch.float32)
    s = probs.sort(dim=-1, descending=True).values
    gap = s[:, K - 1] - s[:, K] if K < E else torch.full_like(s[:, 0], float("inf"))
    margins.append(float(gap.min()))
    top, ids = probs.topk(K, dim=-1)
    if TRACE is not None:
        TRACE.append((ids.sort(dim=-1).values.tolist(), gap.tolist()))
    if cfg.get("norm_topk_prob", False):
        top = top / top.sum(-1, keepdim=True)
    out = torch.zeros_like(x)
    for e in range(E):
        tok, slot = torch.where(ids == e)
        if tok.numel():
            out.index_add_(0, tok, expert(x[tok], w, p + f"experts.{e}.") * top[tok, slot].unsqueeze(-1))
    return out


@torch.no_grad()
def forward(cfg: dict, w: dict, ids: list[int], margins: list | None = None) -> torch.Tensor:
    """Logits [T, V]; margins collects each MoE layer's smallest top-K selection gap."""
    if cfg["architectures"][0] not in ARCHS:
        raise ValueError(f"unsupported architecture {cfg['architectures'][0]}")
    margins = [] if margins is None else margins
    acfg = dict(cfg, architectures=["Qwen3ForCausalLM"], partial_rotary_factor=1.0)
    eps = cfg["rms_norm_eps"]
    sparse_step = cfg.get("decoder_sparse_step", 1)
    dense_layers = set(cfg.get("mlp_only_layers") or [])
    x = w["model.embed_tokens.weight"][torch.tensor(ids, dtype=torch.int64)]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = x + attention(rms_norm(x, w[p + "input_layernorm.weight"], eps), acfg, w, p + "self_attn.", {})
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if i in dense_layers or (i + 1) % sparse_step:
            raise ValueError("dense Qwen3-MoE layers are not modelled (llama.cpp has none)")
        x = x + moe(h, cfg, w, p + "mlp.", margins)
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    return x @ head.T
