"""Converts a Hugging Face checkpoint directory into a GGUF file (F32, F16 or BF16 tensors) laid out
as llama.cpp's converter (convert_hf_to_gguf.py) lays it out, for the architectures Maya reads:

    /usr/bin/python3 scripts/gguf/convert_hf.py MODEL_DIR OUT.gguf --outtype bf16 [--split-max-tensors N]
        [--pre NAME] [--name NAME]

NumPy only (no torch, no transformers). Facts taken from llama.cpp's converter and loader (read,
not imported or copied; llama.cpp commit in test/fixtures/gguf/README.md):

- Architectures: LlamaForCausalLM -> llama, Qwen3ForCausalLM -> qwen3, Qwen3MoeForCausalLM ->
  qwen3moe, Glm4ForCausalLM -> glm4, Glm4MoeForCausalLM -> glm4moe, DeepseekV3ForCausalLM ->
  deepseek2.
- Tensor names: token_embd, output_norm, output (absent when the checkpoint has no lm_head:
  tied embeddings), blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm,
  attn_k_norm, ffn_norm, ffn_gate, ffn_up, ffn_down, ...}; HF post_attention_layernorm is
  ffn_norm except in glm4moe, where it is post_attention_norm (the pre-MLP norm); GLM-4's
  post_self_attn_layernorm / post_mlp_layernorm are post_attention_norm / post_ffw_norm and its
  fused gate_up_proj (gate rows first) is ffn_up; routers are ffn_gate_inp, the selection bias
  e_score_correction_bias is exp_probs_b.bias; experts are stacked into one 3-D tensor per
  projection, ffn_{gate,up,down}_exps (E, rows, cols); shared experts ffn_*_shexp.
- Llama only: q_proj and k_proj rows (weights and biases) are permuted from the half-split
  (NeoX) rotary layout into adjacent pairs: per head of D rows, new row 2i = old row i, new row
  2i+1 = old row D/2 + i (converter LlamaModel.permute; k with the kv head count). qwen3,
  qwen3moe, glm4moe keep HF rows (llama.cpp runs NeoX RoPE for them); glm4 and deepseek2 keep HF
  rows too (HF already rotates adjacent pairs there and llama.cpp runs normal RoPE).
- deepseek2 (MLA): kv_b_proj (H*(Dn+Dv), R) is not stored; it is viewed as (H, Dn+Dv, R) and
  split into attn_k_b = the first Dn rows of each head transposed, (H, R, Dn), GGUF ne
  [Dn, R, H], and attn_v_b = the last Dv rows, (H, Dv, R), ne [R, Dv, H] (converter
  DeepseekV2Model.modify_tensors; the loader wants these two when key_length_mla is present and
  only accepts the unsplit attn_kv_b from old files). `attention.head_count_kv` is written as 1,
  key_length = R + Dr, value_length = R, key_length_mla = Dn + Dr, value_length_mla = Dv. Layers
  >= num_hidden_layers (multi-token prediction) are dropped. glm4moe keeps its MTP layer as
  blk.L with nextn.* tensors and counts it in block_count, with nextn_predict_layers.
- Storage types: 1-D tensors, *_norm.weight, ffn_gate_inp and non-".weight" tensors are F32;
  the rest take the output type. general.file_type: 0 F32, 1 F16, 32 BF16.
- Tokenizer (when tokenizer.json exists): tokenizer.ggml.model "gpt2", .pre, .tokens (id order,
  "[PAD<i>]" for ids up to vocab_size that the tokenizer lacks), .token_type (1 normal,
  3 control: added tokens marked special or shaped <|...|>, 4 user-defined: other added tokens,
  5 unused: padding), .merges ("a b"; a space inside a part is written as chr(ord(' ') + 256),
  U+0120), special ids from tokenizer_config.json's *_token entries and then
  config.json's *_token_id integers (first one found wins), add_bos/add_eos from
  tokenizer_config.json, tokenizer.chat_template from tokenizer_config.json's chat_template or
  else chat_template.jinja.
- Split sets (--split-max-tensors): see gguf_io.write_split.
- Llama-3 RoPE scaling (rope_scaling rope_type "llama3", Llama-3.1/3.2/3.3) is not metadata: the
  converter (LlamaModel.generate_extra_tensors) writes a 1-D F32 tensor `rope_freqs.weight` of
  head_dim / 2 divisors, first in the file, and llama.cpp's RoPE divides pair i's angle by
  divisor i (ggml rope's freq_factors). Per pair, with inv_freq_i = 1 / theta^(2i / head_dim)
  in float32 and wavelength w = 2 pi / inv_freq_i: 1 when w < original_max_position_embeddings /
  high_freq_factor, `factor` when w > original_max_position_embeddings / low_freq_factor, else
  1 / ((1 - s) / factor + s) with s = (original_max_position_embeddings / w - low_freq_factor) /
  (high_freq_factor - low_freq_factor) (defaults: factor 8, low 1, high 4, original 8192).
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gguf_io as G  # noqa: E402

ARCH_OF = {
    "LlamaForCausalLM": "llama",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3moe",
    "Glm4ForCausalLM": "glm4",
    "Glm4MoeForCausalLM": "glm4moe",
    "DeepseekV3ForCausalLM": "deepseek2",
}
FILE_TYPE = {"f32": 0, "f16": 1, "bf16": 32}
OUT_GGML_TYPE = {"f32": G.TYPE_ID["F32"], "f16": G.TYPE_ID["F16"], "bf16": G.TYPE_ID["BF16"]}

# per-layer HF suffix -> GGUF suffix (without the experts and kv_b, handled separately)
LAYER_MAP = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "post_self_attn_layernorm.weight": "post_attention_norm.weight",
    "post_mlp_layernorm.weight": "post_ffw_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.o_proj.bias": "attn_output.bias",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "self_attn.q_a_proj.weight": "attn_q_a.weight",
    "self_attn.q_a_layernorm.weight": "attn_q_a_norm.weight",
    "self_attn.q_b_proj.weight": "attn_q_b.weight",
    "self_attn.kv_a_proj_with_mqa.weight": "attn_kv_a_mqa.weight",
    "self_attn.kv_a_layernorm.weight": "attn_kv_a_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "mlp.gate_up_proj.weight": "ffn_up.weight",
    "mlp.gate.weight": "ffn_gate_inp.weight",
    "mlp.gate.e_score_correction_bias": "exp_probs_b.bias",
    "mlp.shared_experts.gate_proj.weight": "ffn_gate_shexp.weight",
    "mlp.shared_experts.up_proj.weight": "ffn_up_shexp.weight",
    "mlp.shared_experts.down_proj.weight": "ffn_down_shexp.weight",
    "eh_proj.weight": "nextn.eh_proj.weight",
    "enorm.weight": "nextn.enorm.weight",
    "hnorm.weight": "nextn.hnorm.weight",
    "shared_head.norm.weight": "nextn.shared_head_norm.weight",
    "shared_head.head.weight": "nextn.shared_head_head.weight",
    "embed_tokens.weight": "nextn.embed_tokens.weight",
}
GLOBAL_MAP = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
EXPERT_RE = re.compile(r"mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight$")

# llama.cpp's pre-tokenizer regexes for the `tokenizer.ggml.pre` names used here (llama-vocab.cpp;
# written as the tokenizer.json originals). Used only to warn when a tokenizer.json splits
# differently from what llama.cpp will do for the chosen name.
PRE_REGEX = {
    "llama-bpe": [
        (
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
            "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
        )
    ],
    "glm4": [
        (
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
            "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
        )
    ],
    "qwen2": [
        (
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
            "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
        )
    ],
    "deepseek-v3": [
        "\\p{N}{1,3}",
        "[一-龥぀-ゟ゠-ヿ]+",
        (
            "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
            "| ?[\\p{P}\\p{S}]+[\r\n]*"
            "|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
        ),
    ],
}
DEFAULT_PRE = {
    "llama": "llama-bpe",
    "qwen3": "qwen2",
    "qwen3moe": "qwen2",
    "glm4": "glm4",
    "glm4moe": "glm4",
    "deepseek2": "deepseek-v3",
}


# ----------------------------------------------------------------------------------------------
# safetensors (F32 / F16 / BF16) with NumPy


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """name -> float32 array (bf16 and f16 widened exactly)."""
    buf = path.read_bytes()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = buf[base + a : base + b]
        dt = info["dtype"]
        if dt == "F32":
            arr = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        elif dt == "F16":
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif dt == "BF16":
            arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError(f"{path}: tensor {name} has dtype {dt}; only F32/F16/BF16 checkpoints convert")
        out[name] = arr.reshape(info["shape"])
    return out


def load_checkpoint(model_dir: Path) -> dict[str, np.ndarray]:
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors: dict[str, np.ndarray] = {}
    for f in files:
        tensors.update(read_safetensors(model_dir / f))
    return tensors


# ----------------------------------------------------------------------------------------------
# float encodings


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bit patterns, round to nearest even (NaN kept quiet)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), r)


def encode(x: np.ndarray, ggml_type: int) -> bytes:
    name = G.GGML_TYPES[ggml_type][0]
    if name == "F32":
        return np.ascontiguousarray(x, dtype="<f4").tobytes()
    if name == "F16":
        return np.ascontiguousarray(x, dtype=np.float32).astype("<f2").tobytes()
    if name == "BF16":
        return to_bf16_bits(x).astype("<u2").tobytes()
    raise ValueError(name)


# ----------------------------------------------------------------------------------------------
# tensors


def permute_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """HF half-split rotary rows -> adjacent pairs, per head (LlamaModel.permute)."""
    rows = w.shape[0]
    return w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of permute_rows."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def storage_type(gguf_name: str, ndim: int, outtype: str) -> int:
    if (
        ndim <= 1
        or gguf_name.endswith("_norm.weight")
        or "ffn_gate_inp." in gguf_name
        or not gguf_name.endswith(".weight")
    ):
        return G.TYPE_ID["F32"]
    return OUT_GGML_TYPE[outtype]


def rope_type_of(cfg: dict) -> str | None:
    rs = cfg.get("rope_scaling") or {}
    return rs.get("rope_type", rs.get("type"))


def llama3_rope_divisors(cfg: dict) -> np.ndarray:
    """rope_freqs.weight of a Llama-3 rope_scaling (module docstring), float32 (head_dim / 2)."""
    rs = cfg["rope_scaling"]
    base = float(cfg.get("rope_theta", 10000.0))
    dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    factor, low, high = rs.get("factor", 8.0), rs.get("low_freq_factor", 1.0), rs.get("high_freq_factor", 4.0)
    orig = rs.get("original_max_position_embeddings", 8192)
    inv_freq = (1.0 / np.float32(base) ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim))).astype(np.float32)
    out = []
    for f in inv_freq:
        wavelen = 2 * np.pi / float(f)
        if wavelen < orig / high:
            out.append(1.0)
        elif wavelen > orig / low:
            out.append(factor)
        else:
            s = (orig / wavelen - low) / (high - low)
            out.append(1 / ((1 - s) / factor + s))
    return np.array(out, dtype=np.float32)


def convert_tensors(cfg: dict, arch: str, hf: dict[str, np.ndarray]) -> list[tuple[str, np.ndarray]]:
    """(gguf name, array in PyTorch order) in file order."""
    L = cfg["num_hidden_layers"]
    n_layers_out = L + ((cfg.get("num_nextn_predict_layers") or 0) if arch == "glm4moe" else 0)
    H = cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads", H)
    out: list[tuple[str, np.ndarray]] = []
    used = set()

    def emit(name: str, arr: np.ndarray, *src: str) -> None:
        out.append((name, arr))
        used.update(src)

    if arch == "llama" and rope_type_of(cfg) == "llama3":
        emit("rope_freqs.weight", llama3_rope_divisors(cfg))
    emit("token_embd.weight", hf["model.embed_tokens.weight"], "model.embed_tokens.weight")
    layer_re = re.compile(r"model\.layers\.(\d+)\.(.+)$")
    by_layer: dict[int, dict[str, str]] = {}
    for name in hf:
        m = layer_re.match(name)
        if m:
            by_layer.setdefault(int(m.group(1)), {})[m.group(2)] = name
    for i in sorted(by_layer):
        names = by_layer[i]
        if i >= n_layers_out:
            used.update(names.values())  # MTP layers the converter drops (deepseek2)
            continue
        experts: dict[str, dict[int, str]] = {}
        for suffix in sorted(names, key=_layer_order):
            full = names[suffix]
            m = EXPERT_RE.search(suffix)
            if m:
                experts.setdefault(m.group(2), {})[int(m.group(1))] = full
                continue
            if suffix == "self_attn.kv_b_proj.weight":
                Dn, Dv, R = cfg["qk_nope_head_dim"], cfg["v_head_dim"], cfg["kv_lora_rank"]
                kv = hf[full].reshape(Hkv, Dn + Dv, R)
                emit(f"blk.{i}.attn_k_b.weight", np.ascontiguousarray(kv[:, :Dn, :].transpose(0, 2, 1)), full)
                emit(f"blk.{i}.attn_v_b.weight", np.ascontiguousarray(kv[:, Dn:, :]), full)
                continue
            if suffix not in LAYER_MAP:
                raise ValueError(f"no GGUF name for {full}")
            g = LAYER_MAP[suffix]
            if arch == "glm4moe" and suffix == "post_attention_layernorm.weight":
                g = "post_attention_norm.weight"
            arr = hf[full]
            if arch == "llama" and suffix.startswith("self_attn.q_proj."):
                arr = permute_rows(arr, H)
            elif arch == "llama" and suffix.startswith("self_attn.k_proj."):
                arr = permute_rows(arr, Hkv)
            emit(f"blk.{i}.{g}", arr, full)
        for proj in ("gate", "up", "down"):  # (the converter's order is down, gate, up; any order loads)
            if proj in experts:
                ids = sorted(experts[proj])
                if ids != list(range(len(ids))):
                    raise ValueError(f"layer {i}: experts {ids}")
                emit(
                    f"blk.{i}.ffn_{proj}_exps.weight",
                    np.stack([hf[experts[proj][e]] for e in ids]),
                    *experts[proj].values(),
                )
    emit("output_norm.weight", hf["model.norm.weight"], "model.norm.weight")
    if "lm_head.weight" in hf and not (arch == "deepseek2" and cfg.get("tie_word_embeddings")):
        emit("output.weight", hf["lm_head.weight"], "lm_head.weight")
    elif "lm_head.weight" in hf:
        used.add("lm_head.weight")
    left = sorted(set(hf) - used)
    if left:
        raise ValueError(f"tensors without a GGUF name: {left[:5]}")
    return out


_ORDER = [
    "input_layernorm",
    "self_attn.q_a_proj",
    "self_attn.q_a_layernorm",
    "self_attn.q_b_proj",
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.kv_a_proj_with_mqa",
    "self_attn.kv_a_layernorm",
    "self_attn.kv_b_proj",
    "self_attn.q_norm",
    "self_attn.k_norm",
    "self_attn.o_proj",
    "post_self_attn_layernorm",
    "post_attention_layernorm",
    "mlp.gate.",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.gate_up_proj",
    "mlp.down_proj",
    "mlp.experts",
    "mlp.shared_experts",
    "post_mlp_layernorm",
    "eh_proj",
    "enorm",
    "hnorm",
    "embed_tokens",
    "shared_head",
]


def _layer_order(suffix: str) -> tuple[int, str]:
    for k, prefix in enumerate(_ORDER):
        if suffix.startswith(prefix):
            return k, suffix
    return len(_ORDER), suffix


# ----------------------------------------------------------------------------------------------
# metadata


def arch_metadata(cfg: dict, arch: str, outtype: str) -> dict[str, G.KV]:
    """The `<arch>.*` keys (and general.file_type) in the converter's order."""
    kv: dict[str, G.KV] = {}
    a = arch
    L = cfg["num_hidden_layers"]
    block_count = L + ((cfg.get("num_nextn_predict_layers") or 0) if arch == "glm4moe" else 0)
    H = cfg["num_attention_heads"]
    Hkv = 1 if arch == "deepseek2" else cfg.get("num_key_value_heads", H)
    kv[f"{a}.block_count"] = G.u32(block_count)
    if "max_position_embeddings" in cfg:
        kv[f"{a}.context_length"] = G.u32(cfg["max_position_embeddings"])
    kv[f"{a}.embedding_length"] = G.u32(cfg["hidden_size"])
    if "intermediate_size" in cfg:
        kv[f"{a}.feed_forward_length"] = G.u32(cfg["intermediate_size"])
    kv[f"{a}.attention.head_count"] = G.u32(H)
    kv[f"{a}.attention.head_count_kv"] = G.u32(Hkv)
    rs = cfg.get("rope_scaling") or {}
    rope_type = rs.get("rope_type", rs.get("type"))
    if rope_type == "yarn" and rs.get("factor") is not None:
        kv[f"{a}.rope.scaling.type"] = G.string("yarn")
        kv[f"{a}.rope.scaling.factor"] = G.f32(rs["factor"])
        kv[f"{a}.rope.scaling.original_context_length"] = G.u32(rs["original_max_position_embeddings"])
        if rs.get("extrapolation_factor") is not None:
            kv[f"{a}.rope.scaling.yarn_ext_factor"] = G.f32(rs["extrapolation_factor"])
        if rs.get("attention_factor", rs.get("attn_factor")) is not None:
            kv[f"{a}.rope.scaling.yarn_attn_factor"] = G.f32(rs.get("attention_factor", rs.get("attn_factor")))
        if rs.get("beta_fast") is not None:
            kv[f"{a}.rope.scaling.yarn_beta_fast"] = G.f32(rs["beta_fast"])
        if rs.get("beta_slow") is not None:
            kv[f"{a}.rope.scaling.yarn_beta_slow"] = G.f32(rs["beta_slow"])
    elif rope_type == "llama3" and arch == "llama":
        pass  # no metadata: the rope_freqs.weight tensor (convert_tensors)
    elif rope_type not in (None, "default"):
        raise ValueError(f"rope_scaling type {rope_type!r} is not handled")
    kv[f"{a}.rope.freq_base"] = G.f32(cfg.get("rope_theta", 10000.0))
    kv[f"{a}.attention.layer_norm_rms_epsilon"] = G.f32(cfg.get("rms_norm_eps", 1e-6))
    n_exp = cfg.get("num_local_experts", cfg.get("num_experts", cfg.get("n_routed_experts")))
    if n_exp is not None:
        kv[f"{a}.expert_count"] = G.u32(n_exp)
    if cfg.get("num_experts_per_tok") is not None:
        kv[f"{a}.expert_used_count"] = G.u32(cfg["num_experts_per_tok"])
    if cfg.get("n_group") is not None:
        kv[f"{a}.expert_group_count"] = G.u32(cfg["n_group"])
    if cfg.get("topk_group") is not None:
        kv[f"{a}.expert_group_used_count"] = G.u32(cfg["topk_group"])
    score = cfg.get("scoring_func")
    if score is not None:
        kv[f"{a}.expert_gating_func"] = G.u32({"softmax": 1, "sigmoid": 2}[score])
    if cfg.get("head_dim") is not None:
        kv[f"{a}.attention.key_length"] = G.u32(cfg["head_dim"])
        kv[f"{a}.attention.value_length"] = G.u32(cfg["head_dim"])
    kv["general.file_type"] = G.u32(FILE_TYPE[outtype])

    D = cfg.get("head_dim") or cfg["hidden_size"] // H
    if arch == "llama":
        kv[f"{a}.vocab_size"] = G.u32(cfg["vocab_size"])
        kv[f"{a}.rope.dimension_count"] = G.u32(D)
    elif arch == "qwen3moe":
        kv[f"{a}.expert_feed_forward_length"] = G.u32(cfg["moe_intermediate_size"])
        if cfg.get("shared_expert_intermediate_size") is not None:
            kv[f"{a}.expert_shared_feed_forward_length"] = G.u32(cfg["shared_expert_intermediate_size"])
    elif arch == "glm4":
        kv[f"{a}.rope.dimension_count"] = G.u32(int(D * cfg.get("partial_rotary_factor", 0.5)))
    elif arch == "glm4moe":
        kv[f"{a}.rope.dimension_count"] = G.u32(int(D * cfg.get("partial_rotary_factor", 0.5)))
        kv[f"{a}.expert_count"] = G.u32(cfg["n_routed_experts"])
        kv[f"{a}.expert_feed_forward_length"] = G.u32(cfg["moe_intermediate_size"])
        kv[f"{a}.expert_shared_count"] = G.u32(cfg["n_shared_experts"])
        kv[f"{a}.leading_dense_block_count"] = G.u32(cfg["first_k_dense_replace"])
        kv[f"{a}.expert_gating_func"] = G.u32(2)
        if cfg.get("routed_scaling_factor") is not None:
            kv[f"{a}.expert_weights_scale"] = G.f32(cfg["routed_scaling_factor"])
        if cfg.get("norm_topk_prob") is not None:
            kv[f"{a}.expert_weights_norm"] = G.boolean(cfg["norm_topk_prob"])
        if cfg.get("num_nextn_predict_layers") is not None:
            kv[f"{a}.nextn_predict_layers"] = G.u32(cfg["num_nextn_predict_layers"])
    elif arch == "deepseek2":
        R, Dr = cfg.get("kv_lora_rank", 512), cfg["qk_rope_head_dim"]
        first = cfg.get("first_k_dense_replace")
        if first is None:
            first = L if cfg.get("n_routed_experts") is None else 0
        kv[f"{a}.leading_dense_block_count"] = G.u32(first)
        kv[f"{a}.vocab_size"] = G.u32(cfg["vocab_size"])
        if cfg.get("q_lora_rank") is not None:
            kv[f"{a}.attention.q_lora_rank"] = G.u32(cfg["q_lora_rank"])
        kv[f"{a}.attention.kv_lora_rank"] = G.u32(R)
        kv[f"{a}.attention.key_length"] = G.u32(R + Dr)
        kv[f"{a}.attention.value_length"] = G.u32(R)
        kv[f"{a}.attention.key_length_mla"] = G.u32(cfg["qk_nope_head_dim"] + Dr)
        kv[f"{a}.attention.value_length_mla"] = G.u32(cfg["v_head_dim"])
        kv[f"{a}.expert_feed_forward_length"] = G.u32(cfg.get("moe_intermediate_size", cfg.get("intermediate_size")))
        if cfg.get("n_routed_experts") is not None:
            kv[f"{a}.expert_count"] = G.u32(cfg["n_routed_experts"])
        kv[f"{a}.expert_shared_count"] = G.u32(cfg.get("n_shared_experts", 0))
        if cfg.get("routed_scaling_factor") is not None:
            kv[f"{a}.expert_weights_scale"] = G.f32(cfg["routed_scaling_factor"])
        if cfg.get("norm_topk_prob"):
            kv[f"{a}.expert_weights_norm"] = G.boolean(True)
        kv[f"{a}.rope.dimension_count"] = G.u32(Dr)
        if rs.get("mscale_all_dim") is not None:
            # llama.cpp stores 0.1 * mscale_all_dim here and its loader divides by 0.1 again
            kv[f"{a}.rope.scaling.yarn_log_multiplier"] = G.f32(0.1 * rs["mscale_all_dim"])
    return kv


def looks_special(tok: str) -> bool:
    return (
        (tok.startswith("<|") and tok.endswith("|>"))
        or (tok.startswith("<｜") and tok.endswith("｜>"))
        or tok in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
        or (tok.startswith("<unused") and tok.endswith(">"))
    )


def tokenizer_metadata(model_dir: Path, cfg: dict, arch: str, pre: str | None) -> tuple[dict[str, G.KV], list[str]]:
    """tokenizer.* keys from tokenizer.json / tokenizer_config.json / chat_template.jinja, and
    warnings."""
    warnings: list[str] = []
    tj_path = model_dir / "tokenizer.json"
    if not tj_path.exists():
        return {}, warnings
    tj = json.loads(tj_path.read_text(encoding="utf-8"))
    model = tj["model"]
    if model.get("type") != "BPE":
        raise ValueError(f"tokenizer model {model.get('type')} is not byte-level BPE")
    tc_path = model_dir / "tokenizer_config.json"
    tc = json.loads(tc_path.read_text(encoding="utf-8")) if tc_path.exists() else {}
    V = cfg["vocab_size"]
    id_to_tok: dict[int, str] = {i: t for t, i in model["vocab"].items()}
    added = {a["id"]: a for a in tj.get("added_tokens", [])}
    for i, a in added.items():
        id_to_tok[i] = a["content"]
    if max(id_to_tok) >= V:
        raise ValueError(f"token id {max(id_to_tok)} >= vocab_size {V}")
    tokens, types = [], []
    for i in range(V):
        if i not in id_to_tok:
            tokens.append(f"[PAD{i}]")
            types.append(5)
        elif i in added:
            tokens.append(id_to_tok[i])
            types.append(3 if added[i].get("special") or looks_special(id_to_tok[i]) else 4)
        else:
            tokens.append(id_to_tok[i])
            types.append(1)
    merges = []
    for m in model.get("merges", []):
        if isinstance(m, str):
            merges.append(m)
        else:
            merges.append(" ".join("".join(chr(ord(c) + 256) if c == " " else c for c in part) for part in m))

    pre_name = pre or DEFAULT_PRE[arch]
    regexes = _split_regexes(tj.get("pre_tokenizer"))
    if pre_name in PRE_REGEX and regexes != PRE_REGEX[pre_name]:
        warnings.append(
            f"tokenizer.json pre-tokenizer {regexes} differs from llama.cpp's '{pre_name}' split "
            f"{PRE_REGEX[pre_name]}"
        )

    # special ids: tokenizer_config *_token contents (looked up among added tokens), then
    # config.json *_token_id integers; the first value found for a type wins
    special: dict[str, int] = {}
    add_flags: dict[str, bool] = {}
    content_to_id = {a["content"]: a["id"] for a in tj.get("added_tokens", [])}
    for typ in ("bos", "eos", "unk", "sep", "pad", "cls", "mask"):
        flag = tc.get(f"add_{typ}_token")
        if isinstance(flag, bool):
            add_flags[typ] = flag
        entry = tc.get(f"{typ}_token")
        content = entry.get("content") if isinstance(entry, dict) else entry
        if isinstance(content, str) and content in content_to_id and content_to_id[content] < V:
            special.setdefault(typ, content_to_id[content])
    for typ in ("bos", "eos", "unk", "sep", "pad", "cls", "mask"):
        tid = cfg.get(f"{typ}_token_id")
        if isinstance(tid, int) and 0 <= tid < V:
            special.setdefault(typ, tid)
    # the converter's per-architecture additions (only where not set already)
    if arch == "glm4":
        for typ, content in (
            ("eos", "<|endoftext|>"),
            ("eot", "<|user|>"),
            ("unk", "<|endoftext|>"),
            ("bos", "<|endoftext|>"),
        ):
            if content in content_to_id:
                special.setdefault(typ, content_to_id[content])
    elif arch == "glm4moe":
        for typ, content in (
            ("bos", "[gMASK]"),
            ("eot", "<|user|>"),
            ("unk", "<|endoftext|>"),
            ("eom", "<|observation|>"),
        ):
            if content in content_to_id:
                special.setdefault(typ, content_to_id[content])
    if "bos" not in add_flags:
        # TemplateProcessing post-processor starting with the bos token adds it
        pp = tj.get("post_processor") or {}
        for proc in pp.get("processors", [pp]):
            if proc.get("type") == "TemplateProcessing":
                single = proc.get("single", [])
                first = single[0].get("SpecialToken", {}).get("id") if single else None
                if first is not None and len(single) > 1 and content_to_id.get(first) == special.get("bos"):
                    add_flags["bos"] = True

    kv: dict[str, G.KV] = {
        "tokenizer.ggml.model": G.string("gpt2"),
        "tokenizer.ggml.pre": G.string(pre_name),
        "tokenizer.ggml.tokens": G.str_array(tokens),
        "tokenizer.ggml.token_type": G.i32_array(types),
    }
    if merges:
        kv["tokenizer.ggml.merges"] = G.str_array(merges)
    else:
        warnings.append("tokenizer.json has no merges")
    key = {
        "bos": "bos_token_id",
        "eos": "eos_token_id",
        "unk": "unknown_token_id",
        "sep": "seperator_token_id",
        "pad": "padding_token_id",
        "mask": "mask_token_id",
        "eot": "eot_token_id",
        "eom": "eom_token_id",
    }
    for typ, tid in special.items():
        if typ in key:
            kv[f"tokenizer.ggml.{key[typ]}"] = G.u32(tid)
    for typ in ("bos", "eos", "sep"):
        if typ in add_flags:
            kv[f"tokenizer.ggml.add_{typ}_token"] = G.boolean(add_flags[typ])
    template = tc.get("chat_template")
    jinja = model_dir / "chat_template.jinja"
    if template is None and jinja.exists():
        template = jinja.read_text(encoding="utf-8")
    if isinstance(template, str):
        kv["tokenizer.chat_template"] = G.string(template)
    return kv, warnings


def _split_regexes(pt: dict | None) -> list[str]:
    if not pt:
        return []
    items = pt.get("pretokenizers", [pt])
    return [p["pattern"].get("Regex", p["pattern"].get("String")) for p in items if p.get("type") == "Split"]


def convert(
    model_dir: Path, outtype: str, pre: str | None = None, name: str | None = None
) -> tuple[G.GGUFFile, list[str]]:
    cfg = json.loads((model_dir / "config.json").read_text())
    hf_arch = cfg["architectures"][0]
    if hf_arch not in ARCH_OF:
        raise ValueError(f"architecture {hf_arch} is not converted")
    arch = ARCH_OF[hf_arch]
    hf = load_checkpoint(model_dir)
    g = G.GGUFFile()
    g.kv["general.architecture"] = G.string(arch)
    g.kv["general.type"] = G.string("model")
    g.kv["general.name"] = G.string(name or model_dir.name)
    g.kv.update(arch_metadata(cfg, arch, outtype))
    g.kv["general.quantization_version"] = G.u32(2)
    tok_kv, warnings = tokenizer_metadata(model_dir, cfg, arch, pre)
    g.kv.update(tok_kv)
    for gname, arr in convert_tensors(cfg, arch, hf):
        t = storage_type(gname, arr.ndim, outtype)
        g.tensors.append(G.Tensor(gname, t, list(reversed(arr.shape)), encode(arr, t)))
    return g, warnings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--outtype", choices=sorted(FILE_TYPE), default="bf16")
    ap.add_argument("--pre", default=None, help="tokenizer.ggml.pre (default: by architecture)")
    ap.add_argument("--name", default=None, help="general.name (default: the directory name)")
    ap.add_argument("--split-max-tensors", type=int, default=0)
    args = ap.parse_args()
    g, warnings = convert(args.model_dir, args.outtype, args.pre, args.name)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.split_max_tensors:
        for p in G.write_split(args.out, g, args.split_max_tensors):
            print(p)
    else:
        n = G.write(args.out, g)
        print(f"{args.out}: {n} bytes, {len(g.tensors)} tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
