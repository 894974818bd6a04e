"""Builds the golden fixtures of the MoE families: tiny random GLM-4.5 (Glm4MoeForCausalLM) and
DeepSeek-V3 (DeepseekV3ForCausalLM) checkpoints, BF16 and block-FP8, with reference logits and greedy
tokens from scripts/oracle/reference_moe.py.

    /usr/bin/python3 scripts/oracle/make_moe_fixtures.py [--out test/fixtures/engine]

Same layout and fixtures.json format as make_fixtures.py (test/fixtures/engine/README.md). FP8
checkpoints store every linear weight except the router, embeddings and lm_head as F8_E4M3 with a
`<name>_scale_inv` F32 tensor of one multiplier per 128x128 block (edge blocks partial), and
`quantization_config` {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
"weight_block_size": [128, 128]}, as the DeepSeek-V3 and GLM-4.5-FP8 releases do; the reference
runs on the dequantized weights (byte value * block scale) in float32. Each checkpoint also stores a
few tensors of one multi-token-prediction layer (model.layers.{num_hidden_layers}.*), which the
engine must load past; the *-mtp-* checkpoints hold that layer whole instead, and their prompts
carry the MTP layer's reference logits and drafts (mtp_case, mtp_drafts; reference_moe.mtp_forward).
Prompts are redrawn until greedy margins and MoE routing margins (the gap that decides an expert or
group choice, the MTP layer's included) are wide enough that float32 rounding cannot flip them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_moe import forward, hidden, mtp_forward  # noqa: E402
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

SEED = 20261201
TRANSFORMERS_VERSION = "4.57.0"
PROMPT_LENGTHS = (5, 17, 40, 130)
GREEDY_TOKENS = 20
MIN_GREEDY_MARGIN = 4e-3
MIN_ROUTE_MARGIN = 2e-5  # router choices are sigmoid(f32 logits) + bias: errors ~1e-6
MIN_DISTINCT_GREEDY = 6
LOGIT_TOLERANCE = 1e-3
BLOCK = 128
FP8_QUANT = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [BLOCK, BLOCK]}

# The fixture configs stay as written, a few related keys per line (out of black's reach).
# fmt: off
GLM_BASE = {
    "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe",
    "num_hidden_layers": 2, "first_k_dense_replace": 1, "num_nextn_predict_layers": 1,
    "num_attention_heads": 4, "num_key_value_heads": 2, "partial_rotary_factor": 0.5,
    "attention_bias": True, "use_qk_norm": True, "rope_theta": 1000000.0, "rope_scaling": None,
    "n_routed_experts": 8, "num_experts_per_tok": 3, "n_shared_experts": 1, "n_group": 4, "topk_group": 2,
    "norm_topk_prob": True, "routed_scaling_factor": 2.5, "rms_norm_eps": 1e-05,
    "max_position_embeddings": 512, "hidden_act": "silu", "tie_word_embeddings": False,
    "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True,
    "bos_token_id": 1, "eos_token_id": [2, 3], "pad_token_id": 0,
}
DS_BASE = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
    "num_hidden_layers": 2, "first_k_dense_replace": 1, "num_nextn_predict_layers": 1,
    "num_attention_heads": 4, "num_key_value_heads": 4, "attention_bias": False,
    "qk_rope_head_dim": 8, "rope_theta": 10000.0,
    "n_routed_experts": 8, "num_experts_per_tok": 3, "n_shared_experts": 1, "n_group": 4, "topk_group": 2,
    "norm_topk_prob": True, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "topk_method": "noaux_tc",
    "moe_layer_freq": 1, "ep_size": 1, "rms_norm_eps": 1e-06, "hidden_act": "silu",
    "tie_word_embeddings": False, "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True,
    "bos_token_id": 0, "eos_token_id": 1,
}
SPECS = [
    {"dir": "glm45-moe-bf16", "fp8": False, "config": dict(
        GLM_BASE, vocab_size=256, hidden_size=64, intermediate_size=96, head_dim=16, moe_intermediate_size=16,
        torch_dtype="bfloat16")},
    # dims off the 128 grid: hidden 136 (blocks 128 + 8), q 4x40 = 160, intermediate 136
    {"dir": "glm45-moe-fp8", "fp8": True, "config": dict(
        GLM_BASE, vocab_size=200, hidden_size=136, intermediate_size=136, head_dim=40, moe_intermediate_size=24,
        torch_dtype="bfloat16", quantization_config=FP8_QUANT)},
    # q_lora_rank set, YaRN (factor 512/128 = 4) with mscale != mscale_all_dim
    {"dir": "deepseek3-bf16", "fp8": False, "config": dict(
        DS_BASE, vocab_size=256, hidden_size=64, intermediate_size=96, q_lora_rank=48, kv_lora_rank=32,
        qk_nope_head_dim=16, v_head_dim=16, moe_intermediate_size=16, max_position_embeddings=512,
        torch_dtype="bfloat16",
        rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128,
                      "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 0.707})},
    # q_lora_rank null, FP8 with hidden 136, kv_b rows 4 x (24 + 16) = 160, YaRN as V3 ships it
    {"dir": "deepseek3-fp8", "fp8": True, "config": dict(
        DS_BASE, vocab_size=200, hidden_size=136, intermediate_size=136, q_lora_rank=None, kv_lora_rank=40,
        qk_nope_head_dim=24, v_head_dim=16, moe_intermediate_size=24, max_position_embeddings=1024,
        torch_dtype="bfloat16", quantization_config=FP8_QUANT,
        rope_scaling={"type": "yarn", "factor": 8.0, "original_max_position_embeddings": 128,
                      "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0})},
    # Whole MTP layers (bf16): GLM-4.5 without its own head / embedding (the model's are shared),
    # DeepSeek-V3 with shared_head.head and embed_tokens of its own, as V3 ships them.
    {"dir": "glm45-moe-mtp-bf16", "fp8": False, "mtp": "shared", "config": dict(
        GLM_BASE, vocab_size=256, hidden_size=64, intermediate_size=96, head_dim=16, moe_intermediate_size=16,
        torch_dtype="bfloat16")},
    {"dir": "deepseek3-mtp-bf16", "fp8": False, "mtp": "own", "config": dict(
        DS_BASE, vocab_size=256, hidden_size=64, intermediate_size=96, q_lora_rank=48, kv_lora_rank=32,
        qk_nope_head_dim=16, v_head_dim=16, moe_intermediate_size=16, max_position_embeddings=512,
        torch_dtype="bfloat16",
        rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128,
                      "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 0.707})},
]
# fmt: on


def mlp_shapes(p: str, C: int, I: int) -> dict:
    return {p + "gate_proj.weight": (I, C), p + "up_proj.weight": (I, C), p + "down_proj.weight": (C, I)}


def tensor_shapes(cfg: dict, mtp: str = "") -> dict[str, tuple[int, ...]]:
    """HF names and shapes of a checkpoint of this config (+ a few MTP-layer tensors; with mtp, the
    whole MTP layer: "own" adds its shared_head.head and embed_tokens)."""
    C, V, H, L = cfg["hidden_size"], cfg["vocab_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    s = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,), "lm_head.weight": (V, C)}
    for i in range(L + 1 if mtp else L):
        p = f"model.layers.{i}."
        s[p + "input_layernorm.weight"] = (C,)
        s[p + "post_attention_layernorm.weight"] = (C,)
        a = p + "self_attn."
        if cfg["architectures"][0] == "Glm4MoeForCausalLM":
            D, Hkv = cfg["head_dim"], cfg["num_key_value_heads"]
            s.update(
                {
                    a + "q_proj.weight": (H * D, C),
                    a + "k_proj.weight": (Hkv * D, C),
                    a + "v_proj.weight": (Hkv * D, C),
                    a + "o_proj.weight": (C, H * D),
                    a + "q_proj.bias": (H * D,),
                    a + "k_proj.bias": (Hkv * D,),
                    a + "v_proj.bias": (Hkv * D,),
                    a + "q_norm.weight": (D,),
                    a + "k_norm.weight": (D,),
                }
            )
        else:
            R, Dn, Dr, Dv = cfg["kv_lora_rank"], cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
            Rq = cfg["q_lora_rank"]
            if Rq is None:
                s[a + "q_proj.weight"] = (H * (Dn + Dr), C)
            else:
                s.update(
                    {
                        a + "q_a_proj.weight": (Rq, C),
                        a + "q_a_layernorm.weight": (Rq,),
                        a + "q_b_proj.weight": (H * (Dn + Dr), Rq),
                    }
                )
            s.update(
                {
                    a + "kv_a_proj_with_mqa.weight": (R + Dr, C),
                    a + "kv_a_layernorm.weight": (R,),
                    a + "kv_b_proj.weight": (H * (Dn + Dv), R),
                    a + "o_proj.weight": (C, H * Dv),
                }
            )
        m = p + "mlp."
        if i < cfg["first_k_dense_replace"]:
            s.update(mlp_shapes(m, C, cfg["intermediate_size"]))
        else:
            E, I = cfg["n_routed_experts"], cfg["moe_intermediate_size"]
            s[m + "gate.weight"] = (E, C)
            s[m + "gate.e_score_correction_bias"] = (E,)
            for e in range(E):
                s.update(mlp_shapes(m + f"experts.{e}.", C, I))
            s.update(mlp_shapes(m + "shared_experts.", C, I * cfg["n_shared_experts"]))
    p = f"model.layers.{L}."  # the MTP layer's own tensors (DeepSeek/GLM naming); without mtp never read
    s.update(
        {
            p + "enorm.weight": (C,),
            p + "hnorm.weight": (C,),
            p + "input_layernorm.weight": (C,),
            p + "shared_head.norm.weight": (C,),
        }
    )
    if mtp:
        s[p + "eh_proj.weight"] = (C, 2 * C)
    if mtp == "own":
        s[p + "shared_head.head.weight"] = (V, C)
        s[p + "embed_tokens.weight"] = (V, C)
    return s


def random_weights(cfg: dict, gen: torch.Generator, mtp: str = "") -> dict[str, torch.Tensor]:
    """Norms 1 + N(0, 0.15), biases N(0, 0.1), selection bias N(0, 0.25), embeddings N(0, 0.5),
    linear weights N(0, gain^2 / fan_in) (gain 1.2; 1.6 for layer outputs; 2.0 for the router)."""
    out = {}
    for name, shape in tensor_shapes(cfg, mtp).items():
        if name.endswith("norm.weight"):
            t = 1.0 + 0.15 * torch.randn(shape, generator=gen)
        elif name.endswith("e_score_correction_bias"):
            t = 0.25 * torch.randn(shape, generator=gen)
        elif name.endswith(".bias"):
            t = 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith("embed_tokens.weight"):
            t = 0.5 * torch.randn(shape, generator=gen)
        else:
            gain = 1.6 if name.endswith(("o_proj.weight", "down_proj.weight")) else 1.2
            gain = 2.0 if name.endswith("gate.weight") else gain
            t = (gain / math.sqrt(shape[1])) * torch.randn(shape, generator=gen)
        out[name] = t
    return out


def f8_values() -> np.ndarray:
    """The float value of each e4m3fn byte (OCP FP8: bias 7, exponent 0 subnormal, 0x7F/0xFF NaN)."""
    v = np.zeros(256, dtype=np.float64)
    for b in range(256):
        sign, exp, mant = -1.0 if b & 0x80 else 1.0, (b >> 3) & 0xF, b & 7
        if exp == 15 and mant == 7:
            v[b] = np.nan
        elif exp == 0:
            v[b] = sign * mant * 2.0**-9
        else:
            v[b] = sign * (1 + mant / 8) * 2.0 ** (exp - 7)
    return v


F8 = f8_values()


def f8_encode(x: np.ndarray) -> np.ndarray:
    """Nearest e4m3fn byte for each value (|x| <= 448)."""
    codes = np.array([b for b in range(256) if not np.isnan(F8[b])], dtype=np.uint8)
    vals = F8[codes]
    order = np.argsort(vals)
    codes, vals = codes[order], vals[order]
    idx = np.clip(np.searchsorted(vals, x), 1, len(vals) - 1)
    left, right = vals[idx - 1], vals[idx]
    pick = np.where(np.abs(x - left) <= np.abs(right - x), idx - 1, idx)
    return codes[pick]


def quantize(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Block FP8: scale = amax/448 per 128x128 block (partial at the edges); bytes = e4m3(w/scale)."""
    a = w.numpy().astype(np.float64)
    rows, cols = a.shape
    br, bc = -(-rows // BLOCK), -(-cols // BLOCK)
    scale = np.zeros((br, bc), dtype=np.float32)
    q = np.zeros(a.shape, dtype=np.uint8)
    for i in range(br):
        for j in range(bc):
            blk = a[i * BLOCK : (i + 1) * BLOCK, j * BLOCK : (j + 1) * BLOCK]
            s = np.float32(np.abs(blk).max() / 448.0)
            scale[i, j] = s
            q[i * BLOCK : (i + 1) * BLOCK, j * BLOCK : (j + 1) * BLOCK] = f8_encode(blk / float(s))
    return torch.from_numpy(q), torch.from_numpy(scale)


def is_fp8_weight(name: str, shape: tuple) -> bool:
    """Linear weights become FP8; embeddings, lm_head and the router stay BF16."""
    return len(shape) == 2 and name.endswith("_proj.weight") and "embed" not in name and not name.startswith("lm_head")


def stored_tensors(spec: dict, drawn: dict) -> dict[str, torch.Tensor]:
    out = {}
    for name, t in drawn.items():
        if spec["fp8"] and is_fp8_weight(name, tuple(t.shape)):
            q, s = quantize(t)
            out[name], out[name + "_scale_inv"] = q, s
        elif name.endswith("e_score_correction_bias"):
            out[name] = t.to(torch.float32)  # stored F32 in the releases
        else:
            out[name] = t.to(torch.bfloat16)
    return out


def load_reference_weights(path: Path) -> dict[str, torch.Tensor]:
    """The checkpoint as the reference reads it: float32, FP8 bytes dequantized with their scales."""
    raw = read_safetensors(path)
    w = {}
    for name, t in raw.items():
        if name.endswith("_scale_inv"):
            continue
        if t.dtype == torch.uint8:
            s = raw[name + "_scale_inv"].numpy()
            full = np.repeat(np.repeat(s, BLOCK, 0), BLOCK, 1)[: t.shape[0], : t.shape[1]]
            w[name] = torch.from_numpy((F8[t.numpy()] * full).astype(np.float32))
        else:
            w[name] = t.to(torch.float32)
    return w


def write_checkpoint(spec: dict, model_dir: Path, drawn: dict) -> None:
    cfg = dict(spec["config"], transformers_version=TRANSFORMERS_VERSION)
    (model_dir / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    gen_cfg = {
        "_from_model_config": True,
        "bos_token_id": cfg["bos_token_id"],
        "eos_token_id": cfg["eos_token_id"],
        "transformers_version": TRANSFORMERS_VERSION,
    }
    (model_dir / "generation_config.json").write_text(json.dumps(gen_cfg, indent=2) + "\n")
    write_safetensors(model_dir / "model.safetensors", stored_tensors(spec, drawn))


def f32_list(t: torch.Tensor) -> list[float]:
    return [float(str(x)) for x in t.to(torch.float32).numpy()]


def greedy(cfg: dict, w: dict, ids: list[int], n: int) -> tuple[list[int], float, float]:
    """n greedy tokens by full recomputation; (tokens, min top-2 gap, min routing margin)."""
    seq, out, gap = list(ids), [], math.inf
    for _ in range(n):
        logits = forward(cfg, w, seq)[-1]
        top2 = torch.topk(logits, 2).values
        gap = min(gap, float(top2[0] - top2[1]))
        out.append(int(torch.argmax(logits)))
        seq.append(out[-1])
    margins: list[float] = []
    forward(cfg, w, seq[:-1], margins)  # every routed position of the whole run
    return out, gap, min(margins)


def mtp_case(cfg: dict, w: dict, ids: list[int]) -> tuple[dict, float]:
    """The MTP layer on a prompt of n tokens: positions 0..n-2 pair the main model's hidden state with
    the next prompt token (logits: the prediction at n-2, of token n); then one chained prediction at
    n-1 from the layer's own output at n-2 and its argmax there (chain_token). Returns the fixture entry
    and the smallest MTP routing margin."""
    margins: list[float] = []
    h = hidden(cfg, w, ids)
    x, logits = mtp_forward(cfg, w, h[:-1], ids[1:], margins)
    chain = int(torch.argmax(logits[-1]))
    x2, logits2 = mtp_forward(cfg, w, torch.cat((h[:-1], x[-1:])), ids[1:] + [chain], margins)
    entry = {"logits": f32_list(logits[-1]), "chain_token": chain, "chain_logits": f32_list(logits2[-1])}
    return entry, min(margins)


def top2_gap(logits: torch.Tensor) -> float:
    top2 = torch.topk(logits, 2).values
    return round(float(top2[0] - top2[1]), 6)


def mtp_drafts(cfg: dict, w: dict, ids: list[int], greedy_tokens: list[int]) -> list[list]:
    """The MTP drafts of a greedy run, as the engine drafts them: for the decode pass whose pending
    token is greedy[i] (at position P = len(ids) + i, i = 0..G-2), d1 = argmax of the MTP prediction
    at P-1 (the hidden state at P-1 with the pending token) and d2 = argmax of the chained prediction
    at P (the layer's own output at P-1 with d1). Entries [d1, gap1, d2, gap2] (gaps: top-2 logit
    gaps, so a test can pass over near ties)."""
    seq = ids + greedy_tokens
    out = []
    for i in range(len(greedy_tokens) - 1):
        P = len(ids) + i
        h = hidden(cfg, w, seq[: P + 1])
        x, logits = mtp_forward(cfg, w, h[:P], seq[1 : P + 1])
        d1 = int(torch.argmax(logits[-1]))
        _, logits2 = mtp_forward(cfg, w, torch.cat((h[:P], x[-1:])), seq[1 : P + 1] + [d1])
        out.append([d1, top2_gap(logits[-1]), int(torch.argmax(logits2[-1])), top2_gap(logits2[-1])])
    return out


def make_prompts(cfg: dict, w: dict, gen: torch.Generator, has_mtp: bool = False) -> list[dict]:
    prompts = []
    for length in PROMPT_LENGTHS:
        for _ in range(60):
            ids = torch.randint(0, cfg["vocab_size"], (length,), generator=gen).tolist()
            tokens, gap, route_margin = greedy(cfg, w, ids, GREEDY_TOKENS)
            mtp, mtp_margin = mtp_case(cfg, w, ids) if has_mtp else ({}, math.inf)
            if (
                gap >= MIN_GREEDY_MARGIN
                and min(route_margin, mtp_margin) >= MIN_ROUTE_MARGIN
                and len(set(tokens)) >= MIN_DISTINCT_GREEDY
            ):
                break
        else:
            raise RuntimeError(f"{cfg['model_type']}: no prompt of length {length} clears the margins")
        logits = forward(cfg, w, ids)[-1]
        prompts.append(
            {
                "ids": ids,
                "greedy": tokens,
                "min_greedy_margin": round(gap, 6),
                "min_route_margin": float(f"{min(route_margin, mtp_margin):.3g}"),
                "last_logits": f32_list(logits),
            }
        )
        if has_mtp:
            mtp["drafts"] = mtp_drafts(cfg, w, ids, tokens)
            prompts[-1]["mtp"] = mtp
    return prompts


VARIANTS = {
    "Glm4MoeForCausalLM": [
        ("interleaved pairs instead of half-split", {"interleaved": True}),
        ("without q_norm/k_norm", {"skip_qk_norm": True}),
        ("selection without e_score_correction_bias", {"no_bias_in_choice": True}),
        ("e_score_correction_bias in the weights", {"bias_in_weights": True}),
        ("without routed_scaling_factor", {"no_routed_scale": True}),
        ("without shared experts", {"no_shared": True}),
        ("without group-limited routing", {"no_groups": True}),
    ],
    "DeepseekV3ForCausalLM": [
        ("half-split instead of interleaved rope", {"no_interleave": True}),
        ("without YaRN", {"no_yarn": True}),
        ("without the YaRN attention factor", {"no_attention_factor": True}),
        ("without mscale in the softmax scale", {"no_softmax_mscale": True}),
        ("selection without e_score_correction_bias", {"no_bias_in_choice": True}),
        ("without shared experts", {"no_shared": True}),
        ("without group-limited routing", {"no_groups": True}),
    ],
}


def sanity_lines(name: str, cfg: dict, w: dict, prompts: list[dict]) -> list[str]:
    """Each deliberate mistake must move some logit by > 50x the tolerance (else the run fails)."""
    lines = []
    spread = min(max(p["last_logits"]) - min(p["last_logits"]) for p in prompts)
    lines.append(
        f"{name}: logit spread >= {spread:.2f}, min greedy margin "
        f"{min(p['min_greedy_margin'] for p in prompts):.4f}, min route margin "
        f"{min(p['min_route_margin'] for p in prompts):.2e}"
    )
    if spread < 1.0:
        raise RuntimeError(f"{name}: logits are nearly flat")
    for label, opts in VARIANTS[cfg["architectures"][0]]:
        rs = cfg.get("rope_scaling") or {}
        if (opts.get("no_yarn") or opts.get("no_attention_factor") or opts.get("no_softmax_mscale")) and not rs:
            continue
        if opts.get("no_attention_factor") and rs.get("mscale") == rs.get("mscale_all_dim"):
            continue  # the factor is exactly 1 (DeepSeek-V3's own setting): nothing to detect
        worst = max(
            float((forward(cfg, w, p["ids"], **opts)[-1] - torch.tensor(p["last_logits"])).abs().max())
            for p in prompts[1:]
        )
        lines.append(f"{name} {label}: max |dlogit| {worst:.3f}")
        if worst < 50 * LOGIT_TOLERANCE:
            raise RuntimeError(f"{name}: fixture does not detect '{label}'")
    mtp_variants = [("MTP: hidden state first in eh_proj's input", {"hidden_first": True})]
    if f"model.layers.{cfg['num_hidden_layers']}.embed_tokens.weight" in w:
        mtp_variants.append(("MTP: the model's head and embedding instead of its own", {"model_head": True}))
    for label, opts in mtp_variants if "mtp" in prompts[0] else []:
        worst = 0.0
        for p in prompts[1:]:
            ids = p["ids"]
            _, logits = mtp_forward(cfg, w, hidden(cfg, w, ids)[:-1], ids[1:], **opts)
            worst = max(worst, float((logits[-1] - torch.tensor(p["mtp"]["logits"])).abs().max()))
        lines.append(f"{name} {label}: max |dlogit| {worst:.3f}")
        if worst < 50 * LOGIT_TOLERANCE:
            raise RuntimeError(f"{name}: fixture does not detect '{label}'")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parents[2]
    parser.add_argument("--out", type=Path, default=root / "test" / "fixtures" / "engine")
    parser.add_argument("--only", default="", help="comma-separated fixture dirs to rebuild")
    args = parser.parse_args()
    torch.set_num_threads(1)
    lines = []
    for k, spec in enumerate(SPECS):
        if args.only and spec["dir"] not in args.only.split(","):
            continue
        gen = torch.Generator().manual_seed(SEED + k)
        model_dir = args.out / spec["dir"]
        model_dir.mkdir(parents=True, exist_ok=True)
        write_checkpoint(spec, model_dir, random_weights(spec["config"], gen, spec.get("mtp", "")))
        cfg = json.loads((model_dir / "config.json").read_text())
        w = load_reference_weights(model_dir / "model.safetensors")
        prompts = make_prompts(cfg, w, gen, bool(spec.get("mtp")))
        fixture = {
            "format": 1,
            "generator": "scripts/oracle/make_moe_fixtures.py",
            "architecture": cfg["architectures"][0],
            "dtype": "float8_e4m3fn" if spec["fp8"] else "bfloat16",
            "seed": SEED + k,
            "torch_version": torch.__version__,
            "tolerance": {"max_abs_logit_diff": LOGIT_TOLERANCE, "greedy": "identical"},
            "greedy_tokens": GREEDY_TOKENS,
            "stop_ids": [],
            "prompts": prompts,
        }
        (model_dir / "fixtures.json").write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
        print(f"wrote {model_dir}", flush=True)
        lines += sanity_lines(spec["dir"], cfg, w, prompts)
    for line in lines:
        print(line)
    print("sanity checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
