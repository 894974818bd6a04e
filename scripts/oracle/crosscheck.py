"""Second opinion on the committed fixtures: an independent float64 NumPy decoder with a KV cache.

    /usr/bin/python3 scripts/oracle/crosscheck.py [--dir test/fixtures/engine]

It shares nothing with reference.py but the safetensors reader and is shaped the way the engine
works rather than the way transformers does: tokens go through one at a time, keys/values are
appended to a per-layer cache, RoPE is a complex multiplication on (re, im) pairs (adjacent dims for
GLM-4, dims i and i + rot/2 for Llama/Qwen3), and each query head loops over its kv head. It checks,
for every model and prompt in fixtures.json, that its last-position logits lie within 1e-4 of the
committed ones and that its cached greedy decode reproduces the committed tokens. Agreement means
the float32 full-recompute reference and a cache-based float64 decoder read the checkpoints the same
way; the printed error is the float32 reference's distance from float64.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from safetensors_io import load_checkpoint  # noqa: E402

TOLERANCE = 1e-4


class Decoder:
    """Token-at-a-time float64 decoder over one model directory."""

    def __init__(self, model_dir: Path):
        self.cfg = json.loads((model_dir / "config.json").read_text())
        self.w = {k: v.numpy().astype(np.float64) for k, v in load_checkpoint(model_dir).items()}
        c = self.cfg
        self.arch = c["architectures"][0]
        self.H, self.Hkv, self.D = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        self.rot = int(self.D * c.get("partial_rotary_factor", 1.0))
        self.eps = c["rms_norm_eps"]
        self.inv_freq = c["rope_theta"] ** (-np.arange(0, self.rot, 2) / self.rot)
        self.reset()

    def reset(self) -> None:
        self.cache = [([], []) for _ in range(self.cfg["num_hidden_layers"])]

    def norm(self, x: np.ndarray, name: str) -> np.ndarray:
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * self.w[name]

    def lin(self, x: np.ndarray, name: str) -> np.ndarray:
        y = self.w[name + ".weight"] @ x
        return y + self.w[name + ".bias"] if name + ".bias" in self.w else y

    def rope(self, x: np.ndarray, pos: int) -> np.ndarray:
        """x [heads, D]: rotate the first self.rot dims as complex pairs by pos * inv_freq."""
        x = x.copy()
        r = x[:, : self.rot]
        if self.arch == "Glm4ForCausalLM":
            z = r[:, 0::2] + 1j * r[:, 1::2]
        else:
            z = r[:, : self.rot // 2] + 1j * r[:, self.rot // 2 :]
        z = z * np.exp(1j * pos * self.inv_freq)
        if self.arch == "Glm4ForCausalLM":
            r[:, 0::2], r[:, 1::2] = z.real, z.imag
        else:
            r[:, : self.rot // 2], r[:, self.rot // 2 :] = z.real, z.imag
        return x

    def attend(self, x: np.ndarray, layer: int, pos: int) -> np.ndarray:
        p = f"model.layers.{layer}.self_attn."
        q = self.lin(x, p + "q_proj").reshape(self.H, self.D)
        k = self.lin(x, p + "k_proj").reshape(self.Hkv, self.D)
        v = self.lin(x, p + "v_proj").reshape(self.Hkv, self.D)
        if self.arch == "Qwen3ForCausalLM":
            q, k = self.norm(q, p + "q_norm.weight"), self.norm(k, p + "k_norm.weight")
        keys, values = self.cache[layer]
        keys.append(self.rope(k, pos))
        values.append(v)
        K, Vv = np.stack(keys), np.stack(values)  # [t, Hkv, D]
        q = self.rope(q, pos)
        group = self.H // self.Hkv
        out = np.empty((self.H, self.D))
        for h in range(self.H):
            s = K[:, h // group, :] @ q[h] / np.sqrt(self.D)
            e = np.exp(s - s.max())
            out[h] = (e / e.sum()) @ Vv[:, h // group, :]
        return self.lin(out.reshape(-1), p + "o_proj")

    def mlp(self, x: np.ndarray, layer: int) -> np.ndarray:
        p = f"model.layers.{layer}.mlp."
        if self.arch == "Glm4ForCausalLM":
            gate, up = np.split(self.lin(x, p + "gate_up_proj"), 2)
        else:
            gate, up = self.lin(x, p + "gate_proj"), self.lin(x, p + "up_proj")
        return self.lin(gate / (1 + np.exp(-gate)) * up, p + "down_proj")

    def step(self, token: int, pos: int) -> np.ndarray:
        """Feeds one token at position pos; returns its logits [V]."""
        x = self.w["model.embed_tokens.weight"][token]
        glm = self.arch == "Glm4ForCausalLM"
        for i in range(self.cfg["num_hidden_layers"]):
            p = f"model.layers.{i}."
            a = self.attend(self.norm(x, p + "input_layernorm.weight"), i, pos)
            x = x + (self.norm(a, p + "post_self_attn_layernorm.weight") if glm else a)
            m = self.mlp(self.norm(x, p + "post_attention_layernorm.weight"), i)
            x = x + (self.norm(m, p + "post_mlp_layernorm.weight") if glm else m)
        x = self.norm(x, "model.norm.weight")
        head = "model.embed_tokens.weight" if self.cfg.get("tie_word_embeddings") else "lm_head.weight"
        return self.w[head] @ x


def check_model(model_dir: Path) -> float:
    """Checks one fixture directory; returns the largest logit difference seen. Raises on mismatch."""
    fixture = json.loads((model_dir / "fixtures.json").read_text())
    dec = Decoder(model_dir)
    worst = 0.0
    for n, prompt in enumerate(fixture["prompts"]):
        dec.reset()
        for pos, token in enumerate(prompt["ids"]):
            logits = dec.step(token, pos)
        diff = float(np.max(np.abs(logits - np.array(prompt["last_logits"]))))
        worst = max(worst, diff)
        if diff > TOLERANCE:
            raise RuntimeError(f"{model_dir.name} prompt {n}: last logits differ by {diff:.2e}")
        tokens = []
        pos = len(prompt["ids"])
        for _ in range(fixture["greedy_tokens"]):
            tokens.append(int(np.argmax(logits)))
            logits = dec.step(tokens[-1], pos)
            pos += 1
        if tokens != prompt["greedy"]:
            raise RuntimeError(f"{model_dir.name} prompt {n}: greedy {tokens} != {prompt['greedy']}")
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parents[2]
    parser.add_argument("--dir", type=Path, default=root / "test" / "fixtures" / "engine")
    args = parser.parse_args()
    dirs = sorted(d for d in args.dir.iterdir() if (d / "fixtures.json").exists())
    if not dirs:
        raise SystemExit(f"no fixtures under {args.dir}")
    for d in dirs:
        print(f"{d.name}: max |float64 cached - fixture| {check_model(d):.2e}, greedy identical")
    print(f"crosscheck passed ({len(dirs)} models)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
