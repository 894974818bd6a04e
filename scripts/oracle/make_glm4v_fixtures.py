"""Builds the GLM-4.1V golden fixtures: a tiny random Glm4vForConditionalGeneration checkpoint, two
test images, their pixel_values, the vision embeddings and greedy tokens of prompts with images,
from scripts/oracle/reference_glm4v.py.

    /usr/bin/python3 scripts/oracle/make_glm4v_fixtures.py [--out test/fixtures/engine]

Writes (format in test/fixtures/engine/README.md, "GLM-4.1V"):
  <out>/glm4v-tiny/            model dir: config.json, generation_config.json, preprocessor_config.json,
                               tokenizer.json + tokenizer_config.json (the demo model's tokenizer, the
                               chat template with image parts), model.safetensors (BF16), fixtures.json,
                               pixel_values.f32 / pixel_values2.f32 (raw little-endian float32 rows)
  <out>/glm4v-tiny-image.png   140 x 112 RGB (grid 8 x 10 patches, 20 image tokens)
  <out>/glm4v-tiny-image2.png  84 x 112 RGB (grid 8 x 6 patches, 12 image tokens)
Seeded and deterministic; ends with checks that the fixtures discriminate (exits non-zero if not).
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_glm4v import (  # noqa: E402
    CLIP_MEAN,
    CLIP_STD,
    forward,
    greedy,
    pixel_values,
    smart_resize,
    vision_forward,
)  # noqa: E402
from safetensors_io import load_checkpoint, write_safetensors  # noqa: E402

SEED = 20261201
TRANSFORMERS_VERSION = "4.57.0"
GREEDY_TOKENS = 16
MIN_GREEDY_MARGIN = 4e-3
MIN_DISTINCT_GREEDY = 5
TOLERANCE = 1e-3
# Demo tokenizer ids (models/maya-demo/tokenizer.json): <|begin_of_image|> 1010, <|end_of_image|> 1011,
# <|image|> 1012. It has no video tokens: the video ids point at unused specials ([MASK] 1001,
# [sMASK] 1003, <eop> 1005) so they never collide with the image ones; video is not supported.
IMAGE_START, IMAGE_END, IMAGE = 1010, 1011, 1012
# The chat template's rendering of [{role: user, content: [image, text "What is in this image?"]}] with
# add_generation_prompt, tokenized by the demo tokenizer (checkpoint/tokenizer.ts); one <|image|>
# that the processor expands to t*h*w/4 copies.
PROMPT_TEXT = "[gMASK]<sop><|user|>\n<|begin_of_image|><|image|><|end_of_image|>What is in this image?<|assistant|>"
PROMPT_IDS = [1002, 1004, 1007, 10, 1010, 1012, 1011, 532, 32, 320, 32, 270, 32, 498, 32, 105, 345, 103, 101, 63, 1008]
PROMPT2_TEXT = (
    "[gMASK]<sop><|user|>\nCompare <|begin_of_image|><|image|><|end_of_image|> with "
    "<|begin_of_image|><|image|><|end_of_image|><|assistant|>"
)
PROMPT2_IDS = [1002, 1004, 1007, 10, 67, 485, 112, 367, 32, 1010, 1012, 1011, 32, 295, 32, 1010, 1012, 1011, 1008]

TEXT_CONFIG = {
    "model_type": "glm4v_text",
    "vocab_size": 1024,
    "hidden_size": 128,
    "intermediate_size": 160,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "partial_rotary_factor": 0.5,
    "rope_theta": 10000.0,
    # head_dim 32 -> 16 rotated dims -> 8 frequencies, split [2, 3, 3] (GLM-4.1V: [8, 12, 12] of 32)
    "rope_scaling": {"type": "default", "rope_type": "default", "mrope_section": [2, 3, 3]},
    "rms_norm_eps": 1e-05,
    "max_position_embeddings": 2048,
    "attention_bias": True,
    "attention_dropout": 0.0,
    "hidden_act": "silu",
    "initializer_range": 0.02,
    "use_cache": True,
    "torch_dtype": "bfloat16",
    "image_token_id": IMAGE,
    "video_token_id": 1005,
    "eos_token_id": [1000, 1007, 1009],
    "pad_token_id": 1000,
}
VISION_CONFIG = {
    "model_type": "glm4v",
    "depth": 2,
    "hidden_size": 64,
    "num_heads": 4,
    "intermediate_size": 96,
    "out_hidden_size": 128,
    "hidden_act": "silu",
    "attention_bias": False,
    "attention_dropout": 0.0,
    "hidden_dropout_prob": 0.0,
    "in_channels": 3,
    "image_size": 112,  # 8 x 8 learned positions, resampled per image
    "patch_size": 14,
    "temporal_patch_size": 2,
    "spatial_merge_size": 2,
    "rms_norm_eps": 1e-05,
    "initializer_range": 0.02,
}
CONFIG = {
    "architectures": ["Glm4vForConditionalGeneration"],
    "model_type": "glm4v",
    "text_config": TEXT_CONFIG,
    "vision_config": VISION_CONFIG,
    "image_start_token_id": IMAGE_START,
    "image_end_token_id": IMAGE_END,
    "image_token_id": IMAGE,
    "video_start_token_id": 1001,
    "video_end_token_id": 1003,
    "video_token_id": 1005,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "eos_token_id": [1000, 1007, 1009],
    "pad_token_id": 1000,
}
PREPROCESSOR = {
    "image_processor_type": "Glm4vImageProcessor",
    "processor_class": "Glm4vProcessor",
    "do_resize": True,
    "resample": 3,  # bicubic
    "do_rescale": True,
    "rescale_factor": 0.00392156862745098,
    "do_normalize": True,
    "image_mean": CLIP_MEAN,
    "image_std": CLIP_STD,
    "do_convert_rgb": True,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    # min as GLM-4.1V ships it (112*112); max: 2 * 1036 * 1036, so a 1024 x 1024 image resizes to
    # 1036 x 1036 (74 x 74 patches) and the bench's image fits (the pixel budget counts 2 frames).
    "size": {"shortest_edge": 12544, "longest_edge": 2146592},
}


def tensor_shapes() -> dict[str, tuple[int, ...]]:
    """HF tensor names (transformers >= 4.52 layout: model.visual.*, model.language_model.*, lm_head)."""
    tc, vc = TEXT_CONFIG, VISION_CONFIG
    C, I, V = tc["hidden_size"], tc["intermediate_size"], tc["vocab_size"]
    H, Hkv = tc["num_attention_heads"], tc["num_key_value_heads"]
    D = C // H
    Cv, O, Iv = vc["hidden_size"], vc["out_hidden_size"], vc["intermediate_size"]
    ps, tp, m = vc["patch_size"], vc["temporal_patch_size"], vc["spatial_merge_size"]
    S = (vc["image_size"] // ps) ** 2
    s: dict[str, tuple[int, ...]] = {
        "model.language_model.embed_tokens.weight": (V, C),
        "model.language_model.norm.weight": (C,),
        "lm_head.weight": (V, C),
        "model.visual.embeddings.position_embedding.weight": (S, Cv),
        "model.visual.patch_embed.proj.weight": (Cv, vc["in_channels"], tp, ps, ps),
        "model.visual.patch_embed.proj.bias": (Cv,),
        "model.visual.post_conv_layernorm.weight": (Cv,),
        "model.visual.post_layernorm.weight": (Cv,),
        "model.visual.downsample.weight": (O, Cv, m, m),
        "model.visual.downsample.bias": (O,),
        "model.visual.merger.proj.weight": (O, O),
        "model.visual.merger.post_projection_norm.weight": (O,),
        "model.visual.merger.post_projection_norm.bias": (O,),
        "model.visual.merger.gate_proj.weight": (Iv, O),
        "model.visual.merger.up_proj.weight": (Iv, O),
        "model.visual.merger.down_proj.weight": (O, Iv),
    }
    for i in range(vc["depth"]):
        p = f"model.visual.blocks.{i}."
        s[p + "norm1.weight"] = (Cv,)
        s[p + "norm2.weight"] = (Cv,)
        s[p + "attn.qkv.weight"] = (3 * Cv, Cv)
        s[p + "attn.proj.weight"] = (Cv, Cv)
        s[p + "mlp.gate_proj.weight"] = (O, Cv)
        s[p + "mlp.up_proj.weight"] = (O, Cv)
        s[p + "mlp.down_proj.weight"] = (Cv, O)
    for i in range(tc["num_hidden_layers"]):
        p = f"model.language_model.layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm", "post_self_attn_layernorm", "post_mlp_layernorm"):
            s[p + n + ".weight"] = (C,)
        s[p + "self_attn.q_proj.weight"] = (H * D, C)
        s[p + "self_attn.q_proj.bias"] = (H * D,)
        s[p + "self_attn.k_proj.weight"] = (Hkv * D, C)
        s[p + "self_attn.k_proj.bias"] = (Hkv * D,)
        s[p + "self_attn.v_proj.weight"] = (Hkv * D, C)
        s[p + "self_attn.v_proj.bias"] = (Hkv * D,)
        s[p + "self_attn.o_proj.weight"] = (C, H * D)
        s[p + "mlp.gate_up_proj.weight"] = (2 * I, C)
        s[p + "mlp.down_proj.weight"] = (C, I)
    return s


def random_weights(gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Norm weights 1 + N(0, 0.15), biases N(0, 0.1) (never the ones/zeros defaults), the position
    table N(0, 0.5) (so resampling it matters), embeddings N(0, 0.5), matrices N(0, gain^2 / fan_in)."""
    out = {}
    for name, shape in tensor_shapes().items():
        if name.endswith("norm.weight") or name.endswith("norm1.weight") or name.endswith("norm2.weight"):
            t = 1.0 + 0.15 * torch.randn(shape, generator=gen)
        elif name.endswith(".bias"):
            t = 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith("position_embedding.weight") or name.endswith("embed_tokens.weight"):
            t = 0.5 * torch.randn(shape, generator=gen)
        else:
            fan_in = int(np.prod(shape[1:]))
            gain = 1.4 if name.endswith(("o_proj.weight", "down_proj.weight", "attn.proj.weight")) else 1.2
            t = (gain / math.sqrt(fan_in)) * torch.randn(shape, generator=gen)
        out[name] = t
    return out


def write_png(path: Path, rgb: np.ndarray) -> None:
    """An 8-bit RGB PNG (no filter, zlib level 9): signature, IHDR, one IDAT, IEND (PNG spec 1.2)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    H, W, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].astype(np.uint8).tobytes() for y in range(H))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.write_bytes(png)


def read_png(path: Path) -> np.ndarray:
    """Decodes what write_png wrote (filter type 0 rows only), as a check of the committed file."""
    buf = path.read_bytes()
    pos, idat, W, H = 8, b"", 0, 0
    while pos < len(buf):
        (n,) = struct.unpack(">I", buf[pos : pos + 4])
        kind, data = buf[pos + 4 : pos + 8], buf[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            W, H = struct.unpack(">II", data[:8])
        elif kind == b"IDAT":
            idat += data
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(H, 1 + 3 * W)
    if raw[:, 0].any():
        raise ValueError("unexpected PNG filter")
    return raw[:, 1:].reshape(H, W, 3)


def make_image(gen: torch.Generator, H: int, W: int) -> np.ndarray:
    """Smooth colour gradients, a few rectangles and mild noise: every patch differs."""
    y, x = np.mgrid[0:H, 0:W].astype(np.float32)
    img = np.stack([255 * x / W, 255 * y / H, 128 + 100 * np.sin((x + y) / 9.0)], axis=-1)
    for _ in range(4):
        y0, x0 = [int(v) for v in torch.randint(0, min(H, W) - 20, (2,), generator=gen)]
        colour = torch.randint(0, 256, (3,), generator=gen).numpy()
        img[y0 : y0 + 20, x0 : x0 + 28] = colour
    img += 12 * torch.randn(H, W, 3, generator=gen).numpy()
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def expand(ids: list[int], counts: list[int]) -> list[int]:
    """The processor's expansion of each <|image|> into its image's token count."""
    out, k = [], 0
    for t in ids:
        if t == IMAGE:
            out += [IMAGE] * counts[k]
            k += 1
        else:
            out.append(t)
    return out


def f32_list(t: torch.Tensor) -> list[float]:
    return [float(str(x)) for x in t.to(torch.float32).flatten().numpy()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parents[2]
    parser.add_argument("--out", type=Path, default=root / "test" / "fixtures" / "engine")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model_dir = args.out / "glm4v-tiny"
    model_dir.mkdir(parents=True, exist_ok=True)

    gen = torch.Generator().manual_seed(SEED)
    images = [make_image(gen, 112, 140), make_image(gen, 112, 84)]
    paths = [args.out / "glm4v-tiny-image.png", args.out / "glm4v-tiny-image2.png"]
    pixels, grids = [], []
    for img, path, fname in zip(images, paths, ["pixel_values.f32", "pixel_values2.f32"]):
        write_png(path, img)
        if not np.array_equal(read_png(path), img):
            raise RuntimeError(f"{path}: PNG round trip changed the pixels")
        try:  # a second decoder, where Pillow is installed
            from PIL import Image

            if not np.array_equal(np.asarray(Image.open(path).convert("RGB")), img):
                raise RuntimeError(f"{path}: Pillow decodes different pixels")
        except ImportError:
            pass
        H, W, _ = img.shape
        if smart_resize(H, W, 28, PREPROCESSOR["size"]["shortest_edge"], PREPROCESSOR["size"]["longest_edge"]) != (
            H,
            W,
        ):
            raise RuntimeError(f"{path}: the processor would resize it")
        pv, grid = pixel_values(img, PREPROCESSOR)
        (model_dir / fname).write_bytes(pv.numpy().astype("<f4").tobytes())
        pixels.append(pv)
        grids.append(grid)
    if smart_resize(1024, 1024, 28, PREPROCESSOR["size"]["shortest_edge"], PREPROCESSOR["size"]["longest_edge"]) != (
        1036,
        1036,
    ):
        raise RuntimeError("1024 x 1024 must resize to 1036 x 1036")

    cfg = dict(CONFIG, transformers_version=TRANSFORMERS_VERSION)
    (model_dir / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    gen_cfg = {
        "_from_model_config": True,
        "eos_token_id": cfg["eos_token_id"],
        "pad_token_id": cfg["pad_token_id"],
        "do_sample": False,
        "transformers_version": TRANSFORMERS_VERSION,
    }
    (model_dir / "generation_config.json").write_text(json.dumps(gen_cfg, indent=2) + "\n")
    (model_dir / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR, indent=2) + "\n")

    counts = [g[0] * g[1] * g[2] // 4 for g in grids]
    prompts_src = [
        (PROMPT_TEXT, PROMPT_IDS, [0]),
        (PROMPT2_TEXT, PROMPT2_IDS, [0, 1]),
    ]
    # Redraw the weights until every greedy step clears the margin and continuations vary.
    for attempt in range(40):
        wgen = torch.Generator().manual_seed(SEED + 1 + attempt)
        drawn = random_weights(wgen)
        write_safetensors(model_dir / "model.safetensors", {n: t.to(torch.bfloat16) for n, t in drawn.items()})
        w = load_checkpoint(model_dir)
        for name, t in drawn.items():
            if not torch.equal(w[name], t.to(torch.bfloat16).to(torch.float32)):
                raise RuntimeError(f"{name}: safetensors round trip changed the tensor")
        embeds = [vision_forward(cfg, w, pv, [g]) for pv, g in zip(pixels, grids)]
        both = vision_forward(cfg, w, torch.cat(pixels), grids)
        if float((both - torch.cat(embeds)).abs().max()) > 1e-5:
            raise RuntimeError("two images encoded together differ from each alone")
        prompts, ok = [], True
        for text, ids, which in prompts_src:
            full = expand(ids, [counts[k] for k in which])
            emb = torch.cat([embeds[k] for k in which])
            g = [grids[k] for k in which]
            toks, margin = greedy(cfg, w, full, emb, g, GREEDY_TOKENS)
            if margin < MIN_GREEDY_MARGIN or len(set(toks)) < MIN_DISTINCT_GREEDY:
                ok = False
                break
            logits = forward(cfg, w, full, emb, g)[-1]
            prompts.append(
                {
                    "text": text,
                    "images": which,
                    "ids": full,
                    "greedy": toks,
                    "min_greedy_margin": round(margin, 6),
                    "last_logits": f32_list(logits),
                }
            )
        if ok:
            break
    else:
        raise RuntimeError("no weight draw clears the greedy margin")
    print(f"weights: attempt {attempt}")

    fixture = {
        "format": 1,
        "generator": "scripts/oracle/make_glm4v_fixtures.py",
        "architecture": "Glm4vForConditionalGeneration",
        "dtype": "bfloat16",
        "seed": SEED + 1 + attempt,
        "torch_version": torch.__version__,
        "tolerance": {
            "max_abs_embed_diff": TOLERANCE,
            "max_abs_logit_diff": TOLERANCE,
            "greedy": "identical",
            "max_abs_pixel_diff": 1e-5,
        },
        "greedy_tokens": GREEDY_TOKENS,
        "stop_ids": [],
        "images": [
            {
                "png": p.name,
                "height": int(img.shape[0]),
                "width": int(img.shape[1]),
                "pixel_values": f,
                "grid_thw": g,
                "n_tokens": n,
                "embeddings": f32_list(e),
            }
            for p, img, f, g, n, e in zip(
                paths, images, ["pixel_values.f32", "pixel_values2.f32"], grids, counts, embeds
            )
        ],
        "prompts": prompts,
    }
    (model_dir / "fixtures.json").write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
    print(f"wrote {model_dir}")
    for line in sanity_checks(cfg, w, pixels, grids, embeds, prompts):
        print(line)
    print("sanity checks passed")
    return 0


def sanity_checks(cfg, w, pixels, grids, embeds, prompts) -> list[str]:
    """Each deliberate mistake must move the embeddings or the logits by > 50x the tolerance."""
    lines, threshold = [], 50 * TOLERANCE
    for label, opts in [
        ("bilinear instead of bicubic position resampling", {"pos_mode": "bilinear"}),
        ("without the position embedding", {"skip_pos_embed": True}),
        ("without the ViT rotary embedding", {"skip_vit_rope": True}),
        ("without post_conv_layernorm", {"skip_post_conv_norm": True}),
        ("2x2 window transposed before downsample", {"downsample_transposed": True}),
    ]:
        d = max(
            float((vision_forward(cfg, w, pv, [g], **opts) - e).abs().max()) for pv, g, e in zip(pixels, grids, embeds)
        )
        lines.append(f"vision {label}: max |dembed| {d:.3f}")
        if d < threshold:
            raise RuntimeError(f"fixture does not detect '{label}'")
    for label, opts in [
        ("sequential positions instead of M-RoPE", {"plain_positions": True}),
        ("mrope_section with h and w swapped", {"mrope_section": [2, 3, 3][::-1]}),
    ]:
        worst = 0.0
        for p in prompts:
            emb = torch.cat([embeds[k] for k in p["images"]])
            g = [grids[k] for k in p["images"]]
            ids = p["ids"] + p["greedy"][:8]
            base = forward(cfg, w, ids, emb, g)
            worst = max(worst, float((forward(cfg, w, ids, emb, g, **opts) - base).abs().max()))
        lines.append(f"language model {label}: max |dlogit| {worst:.3f}")
        if worst < threshold:
            raise RuntimeError(f"fixture does not detect '{label}'")
    return lines


if __name__ == "__main__":
    sys.exit(main())
