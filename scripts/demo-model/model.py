"""A Glm4ForCausalLM-shaped decoder (GLM-4-0414 forward) in plain PyTorch 1.13, for training the demo model.

Per layer (transformers' modeling_glm4.py, Glm4DecoderLayer):
h = x + post_self_attn_layernorm(attn(input_layernorm(x)));
out = h + post_mlp_layernorm(mlp(post_attention_layernorm(h))). Attention: q/k/v with bias, o_proj
without, GQA, scale head_dim^-0.5, RoPE on the first rotary_dim = head_dim * partial_rotary_factor
dims with adjacent pairs (x0,x1),(x2,x3)... rotated by the same frequency. MLP: fused gate_up_proj
(first half gate, second half up), down(silu(gate) * up). Parameter names equal the Hugging Face
tensor names without the `model.` prefix handling done in export.py.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    vocab_size: int = 4096
    hidden_size: int = 256
    intermediate_size: int = 512
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 64
    partial_rotary_factor: float = 0.5
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    max_position_embeddings: int = 8192
    tie_word_embeddings: bool = True  # training ties; export writes lm_head.weight anyway

    def to_dict(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, n: int, eps: float, init: float = 1.0):
        super().__init__()
        self.weight = nn.Parameter(torch.full((n,), init))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rope_cos_sin(cfg: Config, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """positions (T,) -> cos, sin (T, rotary_dim), each frequency repeated for its adjacent pair."""
    rot = int(cfg.head_dim * cfg.partial_rotary_factor)
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, rot, 2, dtype=torch.float32) / rot))
    freqs = positions.float()[:, None] * inv_freq[None, :]  # (T, rot/2)
    return freqs.cos().repeat_interleave(2, dim=-1), freqs.sin().repeat_interleave(2, dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (B, H, T, D); rotates the first cos.shape[-1] dims in adjacent pairs."""
    rot = cos.shape[-1]
    xr, xp = x[..., :rot], x[..., rot:]
    x1, x2 = xr[..., 0::2], xr[..., 1::2]
    rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
    return torch.cat((xr * cos + rotated * sin, xp), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        h, kv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.q_proj = nn.Linear(cfg.hidden_size, h * d, bias=True)
        self.k_proj = nn.Linear(cfg.hidden_size, kv * d, bias=True)
        self.v_proj = nn.Linear(cfg.hidden_size, kv * d, bias=True)
        self.o_proj = nn.Linear(h * d, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """bias (B * KV, G * T, T): 0 where a query may attend, -inf elsewhere, for each KV head's G query heads."""
        b, t, _ = x.shape
        h, kv, d = self.cfg.num_attention_heads, self.cfg.num_key_value_heads, self.cfg.head_dim
        g = h // kv
        q = self.q_proj(x).view(b, t, h, d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, kv, d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, kv, d).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        # Grouped-query attention without copying K/V per query head: the g query heads that share a
        # KV head are stacked along the time axis, and the mask is added inside the matmul.
        q = (q * (d**-0.5)).reshape(b * kv, g * t, d)
        att = torch.baddbmm(bias, q, k.reshape(b * kv, t, d).transpose(1, 2))
        y = (F.softmax(att, dim=-1) @ v.reshape(b * kv, t, d)).view(b, h, t, d)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, h * d))


class MLP(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.gate_up_proj = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class Layer(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        post = 1.0 / math.sqrt(2 * cfg.num_hidden_layers)  # keeps the early residual stream balanced
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_self_attn_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, post)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)
        self.post_mlp_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, post)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = x + self.post_self_attn_layernorm(self.self_attn(self.input_layernorm(x), cos, sin, bias))
        return x + self.post_mlp_layernorm(self.mlp(self.post_attention_layernorm(x)))


class Glm4(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = None if cfg.tie_word_embeddings else nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.apply(self._init)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (B, T), one conversation a row (padding after it) -> logits (B, T, V)."""
        return self.logits(self.hidden(ids))

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        w = self.embed_tokens.weight if self.lm_head is None else self.lm_head.weight
        return x @ w.t()

    def hidden(self, ids: torch.Tensor, final_norm: bool = True) -> torch.Tensor:
        """ids (B, T) -> final-norm hidden states (B, T, C); final_norm=False: the last layer's output
        before the final norm (what an MTP layer takes)."""
        b, t = ids.shape
        cos, sin = rope_cos_sin(self.cfg, torch.arange(t))
        # The causal mask, built once for every layer and row, laid out for Attention's grouped heads.
        kv, h = self.cfg.num_key_value_heads, self.cfg.num_attention_heads
        causal = torch.full((t, t), float('-inf')).triu_(1)
        bias = causal.repeat(h // kv, 1).expand(b * kv, (h // kv) * t, t)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, bias)
        return self.norm(x) if final_norm else x


@torch.no_grad()
def generate(model: Glm4, prompt: list[int], stop: set[int], max_new: int = 200) -> list[int]:
    """Greedy decoding, recomputing the whole sequence each step (tiny model; fine for checks)."""
    model.eval()
    ids = list(prompt)
    out: list[int] = []
    for _ in range(max_new):
        logits = model(torch.tensor([ids]))[0, -1]
        nxt = int(logits.argmax())
        out.append(nxt)
        ids.append(nxt)
        if nxt in stop:
            break
    return out
