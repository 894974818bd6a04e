"""Builds the GLM-4.5V golden fixture: a tiny random Glm4vMoeForConditionalGeneration checkpoint (the
GLM-4.1V vision tower of make_glm4v_fixtures.py + a GLM-4.5 MoE language model with M-RoPE), with
the vision embeddings and greedy tokens of the same two prompts and images, from
scripts/oracle/reference_glm4v.py.

    /usr/bin/python3 scripts/oracle/make_glm45v_fixtures.py [--out test/fixtures/engine]

Run make_glm4v_fixtures.py first: the images and their pixel_values are read from glm4v-tiny/.
Writes <out>/glm45v-tiny/ (config.json, generation_config.json, preprocessor_config.json, tokenizer
files, model.safetensors, fixtures.json whose images[].pixel_values point at ../glm4v-tiny/).
Weights are redrawn until greedy margins (>= 4e-3) and routing margins (>= 2e-5: K-th vs
(K+1)-th expert choice over the whole run) are wide enough that float32 rounding cannot flip them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_glm4v_fixtures as base  # noqa: E402
from reference_glm4v import forward, greedy, vision_forward  # noqa: E402
from safetensors_io import load_checkpoint, write_safetensors  # noqa: E402

SEED = 20261202
GLM4V_SHAPES = base.tensor_shapes
MIN_ROUTE_MARGIN = 2e-5

TEXT_CONFIG = {
    "model_type": "glm4v_moe_text",
    "vocab_size": 1024,
    "hidden_size": 128,
    "intermediate_size": 160,
    "num_hidden_layers": 2,
    "first_k_dense_replace": 1,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "partial_rotary_factor": 0.5,
    "rope_theta": 10000.0,
    "rope_scaling": {"type": "default", "rope_type": "default", "mrope_section": [2, 3, 3]},
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "n_shared_experts": 1,
    "moe_intermediate_size": 32,
    "n_group": 1,
    "topk_group": 1,
    "norm_topk_prob": True,
    "routed_scaling_factor": 1.0,
    "rms_norm_eps": 1e-05,
    "max_position_embeddings": 2048,
    "attention_bias": True,
    "attention_dropout": 0.0,
    "hidden_act": "silu",
    "initializer_range": 0.02,
    "use_cache": True,
    "torch_dtype": "bfloat16",
    "image_token_id": base.IMAGE,
    "video_token_id": 1005,
    "eos_token_id": [1000, 1007, 1009],
    "pad_token_id": 1000,
}
CONFIG = dict(
    base.CONFIG, architectures=["Glm4vMoeForConditionalGeneration"], model_type="glm4v_moe", text_config=TEXT_CONFIG
)


def tensor_shapes() -> dict[str, tuple[int, ...]]:
    """The vision tensors of GLM-4.1V's layout plus Glm4Moe text layers under model.language_model."""
    s = {n: sh for n, sh in GLM4V_SHAPES().items() if not n.startswith("model.language_model.layers.")}
    tc = TEXT_CONFIG
    C, I, H, Hkv, D = (
        tc["hidden_size"],
        tc["intermediate_size"],
        tc["num_attention_heads"],
        tc["num_key_value_heads"],
        tc["head_dim"],
    )
    E, Ie = tc["n_routed_experts"], tc["moe_intermediate_size"]
    for i in range(tc["num_hidden_layers"]):
        p = f"model.language_model.layers.{i}."
        s[p + "input_layernorm.weight"] = (C,)
        s[p + "post_attention_layernorm.weight"] = (C,)
        s[p + "self_attn.q_proj.weight"] = (H * D, C)
        s[p + "self_attn.q_proj.bias"] = (H * D,)
        s[p + "self_attn.k_proj.weight"] = (Hkv * D, C)
        s[p + "self_attn.k_proj.bias"] = (Hkv * D,)
        s[p + "self_attn.v_proj.weight"] = (Hkv * D, C)
        s[p + "self_attn.v_proj.bias"] = (Hkv * D,)
        s[p + "self_attn.o_proj.weight"] = (C, H * D)
        if i < tc["first_k_dense_replace"]:
            s[p + "mlp.gate_proj.weight"] = (I, C)
            s[p + "mlp.up_proj.weight"] = (I, C)
            s[p + "mlp.down_proj.weight"] = (C, I)
            continue
        s[p + "mlp.gate.weight"] = (E, C)
        s[p + "mlp.gate.e_score_correction_bias"] = (E,)
        for e in range(E):
            s[p + f"mlp.experts.{e}.gate_proj.weight"] = (Ie, C)
            s[p + f"mlp.experts.{e}.up_proj.weight"] = (Ie, C)
            s[p + f"mlp.experts.{e}.down_proj.weight"] = (C, Ie)
        s[p + "mlp.shared_experts.gate_proj.weight"] = (Ie, C)
        s[p + "mlp.shared_experts.up_proj.weight"] = (Ie, C)
        s[p + "mlp.shared_experts.down_proj.weight"] = (C, Ie)
    return s


def random_weights(gen: torch.Generator) -> dict[str, torch.Tensor]:
    """As make_glm4v_fixtures.random_weights; the router's correction bias N(0, 0.05) and kept in F32."""
    saved = base.tensor_shapes
    base.tensor_shapes = tensor_shapes
    try:
        out = base.random_weights(gen)
    finally:
        base.tensor_shapes = saved
    for n in out:
        if n.endswith("e_score_correction_bias"):
            out[n] = 0.05 * torch.randn(out[n].shape, generator=gen)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parents[2]
    parser.add_argument("--out", type=Path, default=root / "test" / "fixtures" / "engine")
    args = parser.parse_args()
    torch.set_num_threads(1)
    src = args.out / "glm4v-tiny"
    model_dir = args.out / "glm45v-tiny"
    model_dir.mkdir(parents=True, exist_ok=True)
    fx4v = json.loads((src / "fixtures.json").read_text())
    pixels, grids = [], []
    for img in fx4v["images"]:
        raw = np.fromfile(src / img["pixel_values"], dtype="<f4")
        pixels.append(torch.from_numpy(raw.reshape(-1, 1176).copy()))
        grids.append(img["grid_thw"])
    for name in ("preprocessor_config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(src / name, model_dir / name)
    cfg = dict(CONFIG, transformers_version=base.TRANSFORMERS_VERSION)
    (model_dir / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    gen_cfg = {
        "_from_model_config": True,
        "eos_token_id": cfg["eos_token_id"],
        "pad_token_id": cfg["pad_token_id"],
        "do_sample": False,
        "transformers_version": base.TRANSFORMERS_VERSION,
    }
    (model_dir / "generation_config.json").write_text(json.dumps(gen_cfg, indent=2) + "\n")
    for attempt in range(60):
        drawn = random_weights(torch.Generator().manual_seed(SEED + attempt))
        stored = {n: (t if n.endswith("e_score_correction_bias") else t.to(torch.bfloat16)) for n, t in drawn.items()}
        write_safetensors(model_dir / "model.safetensors", stored)
        w = load_checkpoint(model_dir)
        for name, t in stored.items():
            if not torch.equal(w[name], t.to(torch.float32)):
                raise RuntimeError(f"{name}: safetensors round trip changed the tensor")
        embeds = [vision_forward(cfg, w, pv, [g]) for pv, g in zip(pixels, grids)]
        prompts, ok = [], True
        for p in fx4v["prompts"]:
            which = p["images"]
            emb = torch.cat([embeds[k] for k in which])
            g = [grids[k] for k in which]
            margins: list = []
            toks, margin = greedy(cfg, w, p["ids"], emb, g, base.GREEDY_TOKENS, margins)
            route = min(margins)
            if margin < base.MIN_GREEDY_MARGIN or len(set(toks)) < base.MIN_DISTINCT_GREEDY or route < MIN_ROUTE_MARGIN:
                ok = False
                break
            logits = forward(cfg, w, p["ids"], emb, g)[-1]
            prompts.append(
                {
                    "text": p["text"],
                    "images": which,
                    "ids": p["ids"],
                    "greedy": toks,
                    "min_greedy_margin": round(margin, 6),
                    "min_route_margin": float(f"{route:.3g}"),
                    "last_logits": base.f32_list(logits),
                }
            )
        if ok:
            break
    else:
        raise RuntimeError("no weight draw clears the greedy and routing margins")
    print(f"weights: attempt {attempt}")
    fixture = {
        "format": 1,
        "generator": "scripts/oracle/make_glm45v_fixtures.py",
        "architecture": "Glm4vMoeForConditionalGeneration",
        "dtype": "bfloat16",
        "seed": SEED + attempt,
        "torch_version": torch.__version__,
        "tolerance": fx4v["tolerance"],
        "greedy_tokens": base.GREEDY_TOKENS,
        "stop_ids": [],
        "images": [
            dict(img, pixel_values="../glm4v-tiny/" + img["pixel_values"], embeddings=base.f32_list(e))
            for img, e in zip(fx4v["images"], embeds)
        ],
        "prompts": prompts,
    }
    (model_dir / "fixtures.json").write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
    print(f"wrote {model_dir}")
    # Discrimination: positions must matter (sequential instead of M-RoPE, a permuted section).
    worst_pos = worst_rot = 0.0
    for p in prompts:
        emb = torch.cat([embeds[k] for k in p["images"]])
        g = [grids[k] for k in p["images"]]
        ids = p["ids"] + p["greedy"][:8]
        ref = forward(cfg, w, ids, emb, g)
        worst_pos = max(worst_pos, float((forward(cfg, w, ids, emb, g, plain_positions=True) - ref).abs().max()))
        worst_rot = max(worst_rot, float((forward(cfg, w, ids, emb, g, mrope_section=[3, 3, 2]) - ref).abs().max()))
    print(f"language model sequential positions instead of M-RoPE: max |dlogit| {worst_pos:.3f}")
    print(f"language model mrope_section permuted: max |dlogit| {worst_rot:.3f}")
    if min(worst_pos, worst_rot) < 50 * base.TOLERANCE:
        raise RuntimeError("the fixture does not discriminate positions")
    print("sanity checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
