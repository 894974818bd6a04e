"""Builds the engine's golden fixtures: tiny random checkpoints + reference logits and greedy tokens.

Run with Debian's Python (python3-torch installs there, not in the pyenv python3 on PATH):

    /usr/bin/python3 scripts/oracle/make_fixtures.py [--out test/fixtures/engine]

For each architecture it writes `<out>/<arch>-<dtype>/` holding a Hugging Face model directory
(config.json, generation_config.json, safetensors weights, sharded for one model) and
fixtures.json (format in test/fixtures/engine/README.md). Everything is seeded and computed on the
CPU in float32, so a rerun reproduces the same files. The script then checks that the fixtures
discriminate (see `sanity_checks`) and exits non-zero if they do not.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference import forward, greedy  # noqa: E402
from safetensors_io import load_checkpoint, write_safetensors  # noqa: E402

SEED = 20261130
TRANSFORMERS_VERSION = "4.53.0"  # the version tag written into config.json, as save_pretrained does
PROMPT_LENGTHS = (5, 17, 40, 130)  # 130 > 2 KV blocks of 16 and crosses the 64- and 128-token marks
GREEDY_TOKENS = 20
# The engine must match every logit within 1e-3; a greedy step whose top-2 gap is under twice that
# could flip legitimately, so prompts are redrawn until every step clears this margin.
MIN_GREEDY_MARGIN = 4e-3
LOGIT_TOLERANCE = 1e-3
# Random models like to loop on one token; a continuation must visit this many distinct tokens.
MIN_DISTINCT_GREEDY = 6

# One spec per checkpoint. Dims are small but keep the real models' oddities: GQA, head_dim
# different from hidden/heads (Qwen3), partial interleaved RoPE and biases (GLM-4), an odd-sized
# vocabulary, tied embeddings (Qwen3), one sharded checkpoint (Llama).
SPECS = [
    {
        "dir": "glm4-bf16",
        "dtype": torch.bfloat16,
        "sharded": False,
        "init": {"embed_std": 0.5, "out_gain": 1.2},
        "config": {
            "architectures": ["Glm4ForCausalLM"],
            "model_type": "glm4",
            "vocab_size": 384,
            "hidden_size": 96,
            "intermediate_size": 160,
            "num_hidden_layers": 2,
            "num_attention_heads": 6,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "partial_rotary_factor": 0.5,
            "rope_theta": 10000.0,
            "rms_norm_eps": 1e-05,
            "max_position_embeddings": 512,
            "attention_bias": True,
            "attention_dropout": 0.0,
            "hidden_act": "silu",
            "initializer_range": 0.02,
            "tie_word_embeddings": False,
            "use_cache": True,
            "torch_dtype": "bfloat16",
            "bos_token_id": 1,
            "eos_token_id": [2, 3],
            "pad_token_id": 0,
        },
    },
    {
        "dir": "llama-f32",
        "dtype": torch.float32,
        "sharded": True,
        "init": {"embed_std": 0.5, "out_gain": 1.8},
        "config": {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "vocab_size": 512,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "rope_theta": 10000.0,
            "rope_scaling": None,
            "rms_norm_eps": 1e-06,
            "max_position_embeddings": 1024,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "mlp_bias": False,
            "pretraining_tp": 1,
            "hidden_act": "silu",
            "initializer_range": 0.02,
            "tie_word_embeddings": False,
            "use_cache": True,
            "torch_dtype": "float32",
            "bos_token_id": 1,
            "eos_token_id": 2,
            "pad_token_id": 0,
        },
    },
    {
        "dir": "qwen3-f16",
        "dtype": torch.float16,
        "sharded": False,
        # Tied embeddings make a random model echo its last token; a small embedding and strong
        # layer outputs keep its greedy continuations varied.
        "init": {"embed_std": 0.15, "out_gain": 2.5},
        "config": {
            "architectures": ["Qwen3ForCausalLM"],
            "model_type": "qwen3",
            "vocab_size": 300,
            "hidden_size": 64,
            "intermediate_size": 192,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 32,
            "rope_theta": 1000000.0,
            "rope_scaling": None,
            "rms_norm_eps": 1e-06,
            "max_position_embeddings": 512,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "use_sliding_window": False,
            "sliding_window": None,
            "max_window_layers": 2,
            "hidden_act": "silu",
            "initializer_range": 0.02,
            "tie_word_embeddings": True,
            "use_cache": True,
            "torch_dtype": "float16",
            "bos_token_id": 1,
            "eos_token_id": 2,
            "pad_token_id": 0,
        },
    },
]


def tensor_shapes(cfg: dict) -> dict[str, tuple[int, ...]]:
    """HF tensor names and shapes ([out, in] for Linear) of a checkpoint of this config."""
    arch = cfg["architectures"][0]
    C, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    H, Hkv, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    if not cfg["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (V, C)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes[p + "input_layernorm.weight"] = (C,)
        shapes[p + "post_attention_layernorm.weight"] = (C,)
        shapes[p + "self_attn.q_proj.weight"] = (H * D, C)
        shapes[p + "self_attn.k_proj.weight"] = (Hkv * D, C)
        shapes[p + "self_attn.v_proj.weight"] = (Hkv * D, C)
        shapes[p + "self_attn.o_proj.weight"] = (C, H * D)
        if cfg["attention_bias"]:
            shapes[p + "self_attn.q_proj.bias"] = (H * D,)
            shapes[p + "self_attn.k_proj.bias"] = (Hkv * D,)
            shapes[p + "self_attn.v_proj.bias"] = (Hkv * D,)
        if arch == "Glm4ForCausalLM":
            shapes[p + "post_self_attn_layernorm.weight"] = (C,)
            shapes[p + "post_mlp_layernorm.weight"] = (C,)
            shapes[p + "mlp.gate_up_proj.weight"] = (2 * I, C)
        else:
            shapes[p + "mlp.gate_proj.weight"] = (I, C)
            shapes[p + "mlp.up_proj.weight"] = (I, C)
        shapes[p + "mlp.down_proj.weight"] = (C, I)
        if arch == "Qwen3ForCausalLM":
            shapes[p + "self_attn.q_norm.weight"] = (D,)
            shapes[p + "self_attn.k_norm.weight"] = (D,)
    return shapes


def random_weights(cfg: dict, init: dict, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Seeded float32 weights scaled so activations stay O(1) and logits are far from flat.

    Norm weights are 1 + N(0, 0.15) and biases N(0, 0.1), never the default ones/zeros: a forward
    pass that forgot a norm or a bias would otherwise compute the same numbers. Linear weights are
    N(0, gain^2 / fan_in), with init["out_gain"] for the layer outputs (o_proj, down_proj).
    """
    out = {}
    for name, shape in tensor_shapes(cfg).items():
        if name.endswith("norm.weight"):
            t = 1.0 + 0.15 * torch.randn(shape, generator=gen)
        elif name.endswith(".bias"):
            t = 0.1 * torch.randn(shape, generator=gen)
        elif name == "model.embed_tokens.weight":
            t = init["embed_std"] * torch.randn(shape, generator=gen)
        else:
            gain = init["out_gain"] if name.endswith(("o_proj.weight", "down_proj.weight")) else 1.2
            t = (gain / math.sqrt(shape[1])) * torch.randn(shape, generator=gen)
        out[name] = t
    return out


def write_checkpoint(spec: dict, model_dir: Path, weights: dict[str, torch.Tensor]) -> None:
    """config.json, generation_config.json and safetensors (two shards + index when sharded)."""
    cfg = dict(spec["config"], transformers_version=TRANSFORMERS_VERSION)
    (model_dir / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    gen_cfg = {
        "_from_model_config": True,
        "bos_token_id": cfg["bos_token_id"],
        "eos_token_id": cfg["eos_token_id"],
        "pad_token_id": cfg["pad_token_id"],
        "transformers_version": TRANSFORMERS_VERSION,
    }
    (model_dir / "generation_config.json").write_text(json.dumps(gen_cfg, indent=2) + "\n")
    stored = {name: t.to(spec["dtype"]) for name, t in weights.items()}
    for old in model_dir.glob("model*.safetensors*"):
        old.unlink()
    if not spec["sharded"]:
        write_safetensors(model_dir / "model.safetensors", stored)
        return
    # Split like save_pretrained's max_shard_size would: layer 0 and the embedding in the first
    # shard, everything else in the second.
    names = sorted(stored)
    first = [n for n in names if n.startswith("model.layers.0.") or n == "model.embed_tokens.weight"]
    files = {1: first, 2: [n for n in names if n not in first]}
    weight_map: dict[str, str] = {}
    total = 0
    for k, part in files.items():
        fname = f"model-{k:05d}-of-00002.safetensors"
        total += write_safetensors(model_dir / fname, {n: stored[n] for n in part})
        weight_map.update({n: fname for n in part})
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (model_dir / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")


def f32_list(t: torch.Tensor) -> list[float]:
    """Float32 values as the shortest decimals that round-trip to the same float32."""
    return [float(str(x)) for x in t.to(torch.float32).numpy()]  # str(np.float32) is shortest


def make_prompts(cfg: dict, weights: dict, gen: torch.Generator) -> list[dict]:
    """Random prompts of PROMPT_LENGTHS, redrawn until every greedy step clears the margin."""
    prompts = []
    V = cfg["vocab_size"]
    for length in PROMPT_LENGTHS:
        for _attempt in range(50):
            ids = torch.randint(0, V, (length,), generator=gen).tolist()
            tokens, margin = greedy(cfg, weights, ids, GREEDY_TOKENS)
            if margin >= MIN_GREEDY_MARGIN and len(set(tokens)) >= MIN_DISTINCT_GREEDY:
                break
        else:
            raise RuntimeError(f"{cfg['model_type']}: no prompt of length {length} clears the margin")
        logits = forward(cfg, weights, ids)[-1]
        if int(torch.argmax(logits)) != tokens[0]:
            raise RuntimeError("greedy and last-position logits disagree")
        prompts.append(
            {
                "ids": ids,
                "greedy": tokens,
                "min_greedy_margin": round(margin, 6),
                "last_logits": f32_list(logits),
            }
        )
    return prompts


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max())


def sanity_checks(models: dict[str, tuple[dict, dict, list[dict]]]) -> list[str]:
    """Proves the fixtures discriminate. Returns human-readable lines; raises on failure.

    - the three architectures give clearly different logits for the same prompt ids;
    - no greedy continuation is a single repeated token;
    - for GLM-4, dropping each detail (interleaved pairs, partial rotary, the two extra norms) and
      for Llama/Qwen3 the corresponding details (NeoX pairs, QK-norm) moves the logits far past the
      tolerance, so an engine that gets one of them wrong cannot pass.
    """
    lines = []
    threshold = 50 * LOGIT_TOLERANCE
    ids = list(range(3, 3 + 40))
    outs = {name: forward(cfg, w, ids)[-1] for name, (cfg, w, _) in models.items()}
    names = list(outs)
    n = min(len(o) for o in outs.values())
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            d = max_diff(outs[names[i]][:n], outs[names[j]][:n])
            lines.append(f"arch difference {names[i]} vs {names[j]}: max |dlogit| {d:.3f}")
            if d < threshold:
                raise RuntimeError(f"{names[i]} and {names[j]} logits are too similar")
    for name, (cfg, w, prompts) in models.items():
        for p in prompts:
            if len(set(p["greedy"])) < MIN_DISTINCT_GREEDY:
                raise RuntimeError(f"{name}: constant greedy continuation")
        spread = [max(p["last_logits"]) - min(p["last_logits"]) for p in prompts]
        lines.append(
            f"{name}: logit spread {min(spread):.2f}..{max(spread):.2f}, "
            f"min greedy margin {min(p['min_greedy_margin'] for p in prompts):.4f}"
        )
        if min(spread) < 1.0:
            raise RuntimeError(f"{name}: logits are nearly flat")
    variants = {
        "glm4-bf16": [
            ("neox pairs instead of interleaved", {"interleaved": False}),
            ("full rotary instead of partial 0.5", {"partial_rotary_factor": 1.0}),
            ("without post_self_attn/post_mlp norms", {"skip_post_norms": True}),
            ("without q/k/v biases", {"skip_bias": True}),
            ("kv head h % Hkv instead of h // (H/Hkv)", {"kv_tile": True}),
        ],
        "llama-f32": [
            ("interleaved pairs instead of neox", {"interleaved": True}),
            ("kv head h % Hkv instead of h // (H/Hkv)", {"kv_tile": True}),
        ],
        "qwen3-f16": [
            ("without q_norm/k_norm", {"skip_qk_norm": True}),
            ("interleaved pairs instead of neox", {"interleaved": True}),
        ],
    }
    for name, cases in variants.items():
        cfg, w, prompts = models[name]
        for label, opts in cases:
            worst = 0.0
            for p in prompts[1:]:  # 5 tokens barely rotate; use the longer prompts
                base = torch.tensor(p["last_logits"])
                worst = max(worst, max_diff(forward(cfg, w, p["ids"], **opts)[-1], base))
            lines.append(f"{name} {label}: max |dlogit| {worst:.3f}")
            if worst < threshold:
                raise RuntimeError(f"{name}: fixture does not detect '{label}'")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parents[2]
    parser.add_argument("--out", type=Path, default=root / "test" / "fixtures" / "engine")
    args = parser.parse_args()
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    models = {}
    for k, spec in enumerate(SPECS):
        gen = torch.Generator().manual_seed(SEED + k)
        model_dir = args.out / spec["dir"]
        model_dir.mkdir(parents=True, exist_ok=True)
        drawn = random_weights(spec["config"], spec["init"], gen)
        write_checkpoint(spec, model_dir, drawn)
        cfg = json.loads((model_dir / "config.json").read_text())
        weights = load_checkpoint(model_dir)  # reference reads back the rounded, stored weights
        for name, t in drawn.items():  # the writer and reader agree bit for bit
            if not torch.equal(weights.pop(name), t.to(spec["dtype"]).to(torch.float32)):
                raise RuntimeError(f"{name}: safetensors round trip changed the tensor")
        if weights:
            raise RuntimeError(f"unexpected tensors in the checkpoint: {sorted(weights)}")
        weights = load_checkpoint(model_dir)
        prompts = make_prompts(cfg, weights, gen)
        fixture = {
            "format": 1,
            "generator": "scripts/oracle/make_fixtures.py",
            "architecture": cfg["architectures"][0],
            "dtype": cfg["torch_dtype"],
            "seed": SEED + k,
            "torch_version": torch.__version__,
            "tolerance": {"max_abs_logit_diff": LOGIT_TOLERANCE, "greedy": "identical"},
            "greedy_tokens": GREEDY_TOKENS,
            "stop_ids": [],
            "prompts": prompts,
        }
        (model_dir / "fixtures.json").write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
        models[spec["dir"]] = (cfg, weights, prompts)
        print(f"wrote {model_dir}")
    for line in sanity_checks(models):
        print(line)
    print("sanity checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
