"""Tiny random Hugging Face checkpoints, the sources of the GGUF fixtures (test/fixtures/gguf):

    /usr/bin/python3 scripts/gguf/make_checkpoints.py [--work build/gguf-work]

One per architecture llama.cpp and Maya share: LlamaForCausalLM, Qwen3ForCausalLM,
Qwen3MoeForCausalLM, Glm4ForCausalLM, Glm4MoeForCausalLM, DeepseekV3ForCausalLM. Each directory
is what save_pretrained writes (config.json, generation_config.json, model.safetensors in F32)
plus a small byte-level BPE tokenizer (tokenizer.json, tokenizer_config.json, no chat template):
the 256 byte symbols, the first 48 merges of the demo model's tokenizer (models/maya-demo) and
16 special tokens named as the family's real ones, with the family's real pre-tokenizer split.

Shapes: hidden 256 and every matrix's row length (its input width) a multiple of 256 so K-quants
apply (the llama model has no other), except where noted: rows of 320 (qwen3 / glm4 ffn_down, like
GLM-4-9B's 13696), 160 (glm4moe dense ffn_down, like GLM-4.5-Air's 10944), 32 (the routed and
shared experts' ffn_down of qwen3moe, glm4moe and deepseek2, like GLM-4.5-Air's 1408) and 64
(deepseek2 attn_k_b, like DeepSeek-V3's 128) make llama-quantize fall back from Q4_K to Q5_0 and
from Q6_K to Q8_0 in the Q4_K_M files, as in real files.

Weights as scripts/oracle/make_moe_fixtures.py draws them (norms 1 + N(0, 0.15), biases N(0, 0.1),
selection bias N(0, 0.25), embeddings N(0, 0.5) (tied ones N(0, 1.2^2 / hidden), as they are the
output head too), linear N(0, gain^2 / fan_in), gain 1.2, 1.6 on o_proj / down_proj, 2.0 on
routers), seeded; deterministic.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "oracle"))
from safetensors_io import write_safetensors  # noqa: E402  (the one Python safetensors writer)


SEED = 20261205
TRANSFORMERS_VERSION = "4.57.0"
N_MERGES = 48
VOCAB = 256 + N_MERGES + 16

# fmt: off (tokenizer and fixture-config tables: a row of values per line)
REGEX_LLAMA3 = (
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)
REGEX_QWEN2 = (
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)
REGEX_DEEPSEEK3 = [
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
    "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
]

# special tokens (16 each, ids 304..319) and which of them the tokenizer config names
SPECIALS = {
    "llama": {
        "tokens": [
            "<|begin_of_text|>",
            "<|end_of_text|>",
            "<|reserved_special_token_0|>",
            "<|reserved_special_token_1|>",
            "<|finetune_right_pad_id|>",
            "<|reserved_special_token_2|>",
            "<|start_header_id|>",
            "<|end_header_id|>",
            "<|eom_id|>",
            "<|eot_id|>",
            "<|python_tag|>",
        ]
        + [f"<|reserved_special_token_{i}|>" for i in range(3, 8)],
        "bos": "<|begin_of_text|>",
        "eos": "<|eot_id|>",
        "pad": None,
        "add_bos": True,
        "regex": [REGEX_LLAMA3],
        "eos_ids": ["<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"],
    },
    "qwen": {
        "tokens": [
            "<|endoftext|>",
            "<|im_start|>",
            "<|im_end|>",
            "<|object_ref_start|>",
            "<|object_ref_end|>",
            "<|box_start|>",
            "<|box_end|>",
            "<|quad_start|>",
            "<|quad_end|>",
            "<|vision_start|>",
            "<|vision_end|>",
            "<|vision_pad|>",
            "<|image_pad|>",
            "<|video_pad|>",
            "<tool_call>",
            "</tool_call>",
        ],
        "nonspecial": {"<tool_call>", "</tool_call>"},
        "bos": None,
        "eos": "<|im_end|>",
        "pad": "<|endoftext|>",
        "add_bos": False,
        "regex": [REGEX_QWEN2],
        "eos_ids": ["<|im_end|>"],
        "bos_id": "<|endoftext|>",
    },
    "glm": {
        "tokens": [
            "<|endoftext|>",
            "[MASK]",
            "[gMASK]",
            "[sMASK]",
            "<sop>",
            "<eop>",
            "<|system|>",
            "<|user|>",
            "<|assistant|>",
            "<|observation|>",
            "<|begin_of_image|>",
            "<|end_of_image|>",
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
        ],
        "bos": None,
        "eos": "<|endoftext|>",
        "pad": "<|endoftext|>",
        "add_bos": None,
        "regex": [REGEX_LLAMA3],
        "eos_ids": ["<|endoftext|>", "<|user|>", "<|observation|>"],
    },
    "deepseek": {
        "tokens": [
            "<｜begin▁of▁sentence｜>",
            "<｜end▁of▁sentence｜>",
            "<｜▁pad▁｜>",
            "<｜User｜>",
            "<｜Assistant｜>",
            "<think>",
            "</think>",
            "<｜tool▁calls▁begin｜>",
            "<｜tool▁calls▁end｜>",
            "<｜tool▁call▁begin｜>",
            "<｜tool▁call▁end｜>",
            "<｜tool▁outputs▁begin｜>",
            "<｜tool▁outputs▁end｜>",
            "<｜tool▁output▁begin｜>",
            "<｜tool▁output▁end｜>",
            "<｜tool▁sep｜>",
        ],
        "nonspecial": {"<think>", "</think>"},
        "bos": "<｜begin▁of▁sentence｜>",
        "eos": "<｜end▁of▁sentence｜>",
        "pad": None,
        "add_bos": True,
        "regex": REGEX_DEEPSEEK3,
        "eos_ids": ["<｜end▁of▁sentence｜>"],
    },
}

COMMON = {
    "vocab_size": VOCAB,
    "hidden_size": 256,
    "hidden_act": "silu",
    "attention_dropout": 0.0,
    "initializer_range": 0.02,
    "use_cache": True,
    "torch_dtype": "float32",
}

SPECS = [
    # the model quantized to every type: every row length a multiple of 256
    {
        "dir": "llama",
        "family": "llama",
        "config": dict(
            COMMON,
            architectures=["LlamaForCausalLM"],
            model_type="llama",
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=64,
            intermediate_size=256,
            rope_theta=500000.0,
            rope_scaling=None,
            rms_norm_eps=1e-5,
            max_position_embeddings=2048,
            tie_word_embeddings=False,
            attention_bias=False,
            mlp_bias=False,
        ),
    },
    # head_dim 128, one kv head, tied embeddings; ffn_down rows of 320
    {
        "dir": "qwen3",
        "family": "qwen",
        "config": dict(
            COMMON,
            architectures=["Qwen3ForCausalLM"],
            model_type="qwen3",
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=128,
            intermediate_size=320,
            rope_theta=1000000.0,
            rope_scaling=None,
            rms_norm_eps=1e-6,
            max_position_embeddings=4096,
            tie_word_embeddings=True,
            attention_bias=False,
        ),
    },
    # partial rotary (32 of 64 dims, adjacent pairs), q/k/v bias, 4 norms, fused gate_up; ffn_down rows of 320
    {
        "dir": "glm4",
        "family": "glm",
        "config": dict(
            COMMON,
            architectures=["Glm4ForCausalLM"],
            model_type="glm4",
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=64,
            partial_rotary_factor=0.5,
            intermediate_size=320,
            rope_theta=10000.0,
            rope_scaling=None,
            rms_norm_eps=1e-5,
            max_position_embeddings=4096,
            tie_word_embeddings=False,
            attention_bias=True,
        ),
    },
    # every layer MoE (softmax top-k, renormalised), QK-norm; expert ffn_down rows of 32
    {
        "dir": "qwen3moe",
        "family": "qwen",
        "config": dict(
            COMMON,
            architectures=["Qwen3MoeForCausalLM"],
            model_type="qwen3_moe",
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=64,
            intermediate_size=512,
            moe_intermediate_size=32,
            num_experts=12,
            num_experts_per_tok=2,
            norm_topk_prob=True,
            decoder_sparse_step=1,
            mlp_only_layers=[],
            rope_theta=1000000.0,
            rope_scaling=None,
            rms_norm_eps=1e-6,
            max_position_embeddings=4096,
            tie_word_embeddings=False,
            attention_bias=False,
            output_router_logits=False,
            router_aux_loss_coef=0.001,
        ),
    },
    # layer 0 dense, layer 1 MoE (sigmoid + selection bias, shared expert), one MTP layer (blk.2)
    {
        "dir": "glm4moe",
        "family": "glm",
        "config": dict(
            COMMON,
            architectures=["Glm4MoeForCausalLM"],
            model_type="glm4_moe",
            num_hidden_layers=2,
            first_k_dense_replace=1,
            num_nextn_predict_layers=1,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=64,
            partial_rotary_factor=0.5,
            attention_bias=True,
            use_qk_norm=True,
            intermediate_size=160,
            moe_intermediate_size=32,
            n_routed_experts=12,
            num_experts_per_tok=4,
            n_shared_experts=1,
            n_group=1,
            topk_group=1,
            norm_topk_prob=True,
            routed_scaling_factor=2.5,
            rope_theta=1000000.0,
            rope_scaling=None,
            rms_norm_eps=1e-5,
            max_position_embeddings=4096,
            tie_word_embeddings=False,
        ),
    },
    # MLA (q_lora 256, kv_lora 256, nope 64, rope 32, v 128), YaRN as V3 ships it, group-limited routing
    {
        "dir": "deepseek2",
        "family": "deepseek",
        "config": dict(
            COMMON,
            architectures=["DeepseekV3ForCausalLM"],
            model_type="deepseek_v3",
            num_hidden_layers=2,
            first_k_dense_replace=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            q_lora_rank=256,
            kv_lora_rank=256,
            qk_nope_head_dim=64,
            qk_rope_head_dim=32,
            v_head_dim=128,
            intermediate_size=256,
            moe_intermediate_size=32,
            n_routed_experts=12,
            num_experts_per_tok=4,
            n_shared_experts=1,
            n_group=4,
            topk_group=2,
            norm_topk_prob=True,
            routed_scaling_factor=2.5,
            scoring_func="sigmoid",
            topk_method="noaux_tc",
            moe_layer_freq=1,
            ep_size=1,
            rope_theta=10000.0,
            rope_interleave=True,
            max_position_embeddings=512,
            attention_bias=False,
            rope_scaling={
                "type": "yarn",
                "factor": 4.0,
                "original_max_position_embeddings": 128,
                "beta_fast": 32,
                "beta_slow": 1,
                "mscale": 1.0,
                "mscale_all_dim": 1.0,
            },
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            num_nextn_predict_layers=1,
        ),
    },
    # Llama-3.1's RoPE scaling (rope_type llama3) with a short original context, so that the
    # fixture's positions (up to 145) reach it: with theta 1e4 and head_dim 32, pairs 0-1 keep their
    # frequency (wavelength < 64 / 4), 2-4 are smoothed, 5-15 divided by 8. Small: hidden 128, F16.
    {
        "dir": "llama3rope",
        "family": "llama",
        "config": dict(
            COMMON,
            architectures=["LlamaForCausalLM"],
            model_type="llama",
            hidden_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=32,
            intermediate_size=256,
            rope_theta=10000.0,
            rope_scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
            },
            rms_norm_eps=1e-5,
            max_position_embeddings=2048,
            tie_word_embeddings=False,
            attention_bias=False,
            mlp_bias=False,
        ),
    },
]
# fmt: on


def mlp(p: str, C: int, I: int) -> dict:
    return {p + "gate_proj.weight": (I, C), p + "up_proj.weight": (I, C), p + "down_proj.weight": (C, I)}


def tensor_shapes(cfg: dict) -> dict[str, tuple[int, ...]]:
    arch = cfg["architectures"][0]
    C, V, H, L = cfg["hidden_size"], cfg["vocab_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    s: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    if not cfg.get("tie_word_embeddings"):
        s["lm_head.weight"] = (V, C)
    n_mtp = cfg.get("num_nextn_predict_layers") or 0
    for i in range(L + n_mtp):
        p = f"model.layers.{i}."
        a = p + "self_attn."
        s[p + "input_layernorm.weight"] = (C,)
        s[p + "post_attention_layernorm.weight"] = (C,)
        if arch == "DeepseekV3ForCausalLM":
            if i >= L:  # DeepSeek's MTP layer: the converter drops it; a few tensors suffice
                s.update({p + "enorm.weight": (C,), p + "hnorm.weight": (C,), p + "eh_proj.weight": (C, 2 * C)})
                continue
            R, Dn, Dr, Dv, Rq = (
                cfg["kv_lora_rank"],
                cfg["qk_nope_head_dim"],
                cfg["qk_rope_head_dim"],
                cfg["v_head_dim"],
                cfg["q_lora_rank"],
            )
            s.update(
                {
                    a + "q_a_proj.weight": (Rq, C),
                    a + "q_a_layernorm.weight": (Rq,),
                    a + "q_b_proj.weight": (H * (Dn + Dr), Rq),
                    a + "kv_a_proj_with_mqa.weight": (R + Dr, C),
                    a + "kv_a_layernorm.weight": (R,),
                    a + "kv_b_proj.weight": (H * (Dn + Dv), R),
                    a + "o_proj.weight": (C, H * Dv),
                }
            )
        else:
            D, Hkv = cfg["head_dim"], cfg["num_key_value_heads"]
            s.update(
                {
                    a + "q_proj.weight": (H * D, C),
                    a + "k_proj.weight": (Hkv * D, C),
                    a + "v_proj.weight": (Hkv * D, C),
                    a + "o_proj.weight": (C, H * D),
                }
            )
            if cfg.get("attention_bias"):
                s.update({a + "q_proj.bias": (H * D,), a + "k_proj.bias": (Hkv * D,), a + "v_proj.bias": (Hkv * D,)})
            if arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM") or cfg.get("use_qk_norm"):
                s.update({a + "q_norm.weight": (D,), a + "k_norm.weight": (D,)})
        m = p + "mlp."
        if arch == "Glm4ForCausalLM":
            I = cfg["intermediate_size"]
            s.update(
                {
                    m + "gate_up_proj.weight": (2 * I, C),
                    m + "down_proj.weight": (C, I),
                    p + "post_self_attn_layernorm.weight": (C,),
                    p + "post_mlp_layernorm.weight": (C,),
                }
            )
        elif arch in ("LlamaForCausalLM", "Qwen3ForCausalLM"):
            s.update(mlp(m, C, cfg["intermediate_size"]))
        elif arch == "Qwen3MoeForCausalLM":
            E, I = cfg["num_experts"], cfg["moe_intermediate_size"]
            s[m + "gate.weight"] = (E, C)
            for e in range(E):
                s.update(mlp(m + f"experts.{e}.", C, I))
        elif i < cfg["first_k_dense_replace"]:
            s.update(mlp(m, C, cfg["intermediate_size"]))
        else:
            E, I = cfg["n_routed_experts"], cfg["moe_intermediate_size"]
            s[m + "gate.weight"] = (E, C)
            s[m + "gate.e_score_correction_bias"] = (E,)
            for e in range(E):
                s.update(mlp(m + f"experts.{e}.", C, I))
            s.update(mlp(m + "shared_experts.", C, I * cfg["n_shared_experts"]))
        if i >= L:  # GLM-4.5's MTP layer: a full decoder layer plus these
            s.update(
                {
                    p + "enorm.weight": (C,),
                    p + "hnorm.weight": (C,),
                    p + "eh_proj.weight": (C, 2 * C),
                    p + "shared_head.norm.weight": (C,),
                }
            )
    return s


def random_weights(cfg: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    out = {}
    for name, shape in tensor_shapes(cfg).items():
        if name.endswith("norm.weight"):
            t = 1.0 + 0.15 * rng.standard_normal(shape)
        elif name.endswith("e_score_correction_bias"):
            t = 0.25 * rng.standard_normal(shape)
        elif name.endswith(".bias"):
            t = 0.1 * rng.standard_normal(shape)
        elif name == "model.embed_tokens.weight":
            # tied embeddings are also the output head: scaled like lm_head so logits stay O(1)
            std = 1.2 / math.sqrt(shape[1]) if cfg.get("tie_word_embeddings") else 0.5
            t = std * rng.standard_normal(shape)
        else:
            gain = 1.6 if name.endswith(("o_proj.weight", "down_proj.weight")) else 1.2
            gain = 2.0 if name.endswith("gate.weight") else gain
            t = (gain / math.sqrt(shape[1])) * rng.standard_normal(shape)
        out[name] = t.astype(np.float32)
    return out


def tokenizer_files(family: str) -> tuple[dict, dict, dict[str, int]]:
    """tokenizer.json, tokenizer_config.json and the special token ids."""
    demo = json.loads((ROOT / "models" / "maya-demo" / "tokenizer.json").read_text(encoding="utf-8"))
    inv = {i: t for t, i in demo["model"]["vocab"].items()}
    vocab = {inv[i]: i for i in range(256 + N_MERGES)}
    merges = demo["model"]["merges"][:N_MERGES]
    sp = SPECIALS[family]
    ids = {tok: 256 + N_MERGES + k for k, tok in enumerate(sp["tokens"])}
    added = [
        {
            "id": ids[t],
            "content": t,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": t not in sp.get("nonspecial", set()),
        }
        for t in sp["tokens"]
    ]
    pre = [{"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False} for r in sp["regex"]]
    pre.append({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False})
    post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    if sp["add_bos"]:
        post = {
            "type": "Sequence",
            "processors": [
                {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
                {
                    "type": "TemplateProcessing",
                    "single": [
                        {"SpecialToken": {"id": sp["bos"], "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}},
                    ],
                    "pair": [
                        {"SpecialToken": {"id": sp["bos"], "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}},
                        {"SpecialToken": {"id": sp["bos"], "type_id": 1}},
                        {"Sequence": {"id": "B", "type_id": 1}},
                    ],
                    "special_tokens": {sp["bos"]: {"id": sp["bos"], "ids": [ids[sp["bos"]]], "tokens": [sp["bos"]]}},
                },
            ],
        }
    tj = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": pre},
        "post_processor": post,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges,
        },
    }
    tc: dict = {
        "added_tokens_decoder": {
            str(a["id"]): {k: a[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}
            for a in added
        },
        "bos_token": sp["bos"],
        "eos_token": sp["eos"],
        "pad_token": sp["pad"],
        "clean_up_tokenization_spaces": False,
        "model_max_length": 4096,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    if sp["add_bos"] is not None:
        tc["add_bos_token"] = sp["add_bos"]
        tc["add_eos_token"] = False
    special_ids = {"eos": [ids[t] for t in sp["eos_ids"]]}
    bos = sp.get("bos") or sp.get("bos_id")
    if bos:
        special_ids["bos"] = ids[bos]
    if sp["pad"]:
        special_ids["pad"] = ids[sp["pad"]]
    return tj, tc, special_ids


def write_checkpoint(spec: dict, out: Path, seed: int) -> dict:
    cfg = dict(spec["config"])
    tj, tc, sid = tokenizer_files(spec["family"])
    if "bos" in sid:
        cfg["bos_token_id"] = sid["bos"]
    cfg["eos_token_id"] = sid["eos"] if len(sid["eos"]) > 1 else sid["eos"][0]
    if "pad" in sid:
        cfg["pad_token_id"] = sid["pad"]
    cfg["transformers_version"] = TRANSFORMERS_VERSION
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    gen = {
        "_from_model_config": True,
        "eos_token_id": cfg["eos_token_id"],
        "transformers_version": TRANSFORMERS_VERSION,
    }
    if "bos_token_id" in cfg:
        gen["bos_token_id"] = cfg["bos_token_id"]
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    (out / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (out / "tokenizer_config.json").write_text(json.dumps(tc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    weights = random_weights(cfg, np.random.default_rng(seed))
    write_safetensors(out / "model.safetensors", {name: torch.from_numpy(t) for name, t in weights.items()})
    return cfg


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=ROOT / "build" / "gguf-work")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    for k, spec in enumerate(SPECS):
        if args.only and spec["dir"] not in args.only.split(","):
            continue
        cfg = write_checkpoint(spec, args.work / "hf" / spec["dir"], SEED + k)
        n = sum(int(np.prod(s)) for s in tensor_shapes(cfg).values())
        print(f"{spec['dir']}: {n} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
