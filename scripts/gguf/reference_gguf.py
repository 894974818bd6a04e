"""Float64 reference forward of a GGUF file: dequantize every tensor exactly, undo llama.cpp's
layout (names, q/k row permutation, expert stacking, MLA's k_b/v_b split), rebuild the Hugging
Face config from the GGUF metadata, and run the repository's PyTorch reference forward
(scripts/oracle/reference.py, reference_moe.py; reference_qwen3moe.py here) in float64.

The oracle modules compute in float32 by naming torch.float32; `use_float64()` points their
`torch` at a proxy whose float32 is float64, so the same code runs in double precision without
being edited.

`forward(..., actq=True)` runs the activation-quantized variant: every matmul input against a
quantized weight is first rounded as llama.cpp's CPU kernels round it (Q8_0 per 32 for
Q4_0/Q5_0/Q8_0, Q8_1 for Q4_1/Q5_1, Q8_K per 256 for the K-quants; dequant.quantize_activation),
`scheme="q8_0_all"` rounds per 32 with an f32 scale for every quantized type (Maya's q8 path).
MLA is computed in the expanded form, so kv_b's input is rounded once with the coarser of k_b's
and v_b's activation formats (llama.cpp rounds the absorbed q_nope and attention output instead).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "oracle"))
import gguf_io as G  # noqa: E402
from convert_hf import unpermute_rows  # noqa: E402
from dequant import dequantize, quantize_activation  # noqa: E402
import reference  # noqa: E402
import reference_moe  # noqa: E402
import reference_qwen3moe  # noqa: E402

HF_ARCH = {
    "llama": "LlamaForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3moe": "Qwen3MoeForCausalLM",
    "glm4": "Glm4ForCausalLM",
    "glm4moe": "Glm4MoeForCausalLM",
    "deepseek2": "DeepseekV3ForCausalLM",
}
FLOAT_TYPES = {"F32", "F16", "BF16"}


_ROUTE = reference_moe.route


def _traced_route(x, cfg, w, p, opts):
    ids, wts, margin = _ROUTE(x, cfg, w, p, opts)
    if reference_qwen3moe.TRACE is not None:  # per-position margins: route each row alone
        gaps = [_ROUTE(x[t : t + 1], cfg, w, p, opts)[2] for t in range(x.shape[0])]
        reference_qwen3moe.TRACE.append((ids.sort(dim=-1).values.tolist(), gaps))
    return ids, wts, margin


def use_float64() -> None:
    """Points the oracle modules' `torch` at a proxy whose float32 is float64, and lets
    reference_moe's routing report its expert choices (reference_qwen3moe.TRACE)."""
    proxy = types.ModuleType("torch_float64")
    proxy.__getattr__ = lambda name: getattr(torch, name)  # type: ignore[attr-defined]
    proxy.float32 = torch.float64
    for mod in (reference, reference_moe, reference_qwen3moe):
        mod.torch = proxy
    reference_moe.route = _traced_route


# ----------------------------------------------------------------------------------------------
# metadata -> Hugging Face config


def hf_config(g: G.GGUFFile, rope_scaling: dict | None = None) -> dict:
    """The config.json fields the reference reads, from the GGUF metadata alone; except Llama-3's
    RoPE scaling, which the file carries as per-pair divisors (`rope_freqs.weight`, see
    convert_hf.py): the source config's rope_scaling must then be given, and the divisors are
    checked against it."""
    m = lambda key, default=None: G.metadata_value(g, key, default)  # noqa: E731
    arch = m("general.architecture")
    if arch not in HF_ARCH:
        raise ValueError(f"architecture {arch} is not supported")
    a = arch
    names = {t.name for t in g.tensors}
    n_nextn = m(f"{a}.nextn_predict_layers", 0) or 0
    L = m(f"{a}.block_count") - n_nextn
    V = len(m("tokenizer.ggml.tokens", [])) or m(f"{a}.vocab_size")
    emb = next(t for t in g.tensors if t.name == "token_embd.weight")
    if V is None or V != emb.ne[1]:
        V = emb.ne[1]
    cfg: dict = {
        "architectures": [HF_ARCH[arch]],
        "vocab_size": V,
        "hidden_size": m(f"{a}.embedding_length"),
        "num_hidden_layers": L,
        "num_attention_heads": m(f"{a}.attention.head_count"),
        "rms_norm_eps": m(f"{a}.attention.layer_norm_rms_epsilon"),
        "rope_theta": m(f"{a}.rope.freq_base", 10000.0),
        "max_position_embeddings": m(f"{a}.context_length"),
        "tie_word_embeddings": "output.weight" not in names,
    }
    H = cfg["num_attention_heads"]
    if arch != "deepseek2":
        cfg["num_key_value_heads"] = m(f"{a}.attention.head_count_kv", H)
        D = m(f"{a}.attention.key_length", cfg["hidden_size"] // H)
        cfg["head_dim"] = D
        n_rot = m(f"{a}.rope.dimension_count", D)
        cfg["partial_rotary_factor"] = n_rot / D
        cfg["intermediate_size"] = m(f"{a}.feed_forward_length")
    if arch == "qwen3moe":
        cfg.update(
            num_experts=m(f"{a}.expert_count"),
            num_experts_per_tok=m(f"{a}.expert_used_count"),
            moe_intermediate_size=m(f"{a}.expert_feed_forward_length"),
            norm_topk_prob=True,
        )
    if arch == "glm4moe":
        cfg.update(
            n_routed_experts=m(f"{a}.expert_count"),
            num_experts_per_tok=m(f"{a}.expert_used_count"),
            moe_intermediate_size=m(f"{a}.expert_feed_forward_length"),
            n_shared_experts=m(f"{a}.expert_shared_count"),
            first_k_dense_replace=m(f"{a}.leading_dense_block_count", 0),
            n_group=m(f"{a}.expert_group_count", 1),
            topk_group=m(f"{a}.expert_group_used_count", 1),
            norm_topk_prob=m(f"{a}.expert_weights_norm", False),
            routed_scaling_factor=m(f"{a}.expert_weights_scale", 1.0),
            use_qk_norm="blk.0.attn_q_norm.weight" in names,
            num_nextn_predict_layers=n_nextn,
        )
        if m(f"{a}.expert_gating_func", 2) != 2:
            raise ValueError("glm4moe with a non-sigmoid gate")
    if arch == "deepseek2":
        R = m(f"{a}.attention.kv_lora_rank")
        Dk_mla, Dv = m(f"{a}.attention.key_length_mla"), m(f"{a}.attention.value_length_mla")
        Dr = m(f"{a}.rope.dimension_count")
        if Dk_mla is None:
            raise ValueError("deepseek2 file without key_length_mla (old layout with attn_kv_b)")
        cfg.update(
            num_key_value_heads=H,
            kv_lora_rank=R,
            qk_rope_head_dim=Dr,
            qk_nope_head_dim=Dk_mla - Dr,
            v_head_dim=Dv,
            q_lora_rank=m(f"{a}.attention.q_lora_rank"),
            intermediate_size=m(f"{a}.feed_forward_length"),
            moe_intermediate_size=m(f"{a}.expert_feed_forward_length"),
            n_routed_experts=m(f"{a}.expert_count"),
            num_experts_per_tok=m(f"{a}.expert_used_count"),
            n_shared_experts=m(f"{a}.expert_shared_count", 0),
            first_k_dense_replace=m(f"{a}.leading_dense_block_count", 0),
            n_group=m(f"{a}.expert_group_count", 1),
            topk_group=m(f"{a}.expert_group_used_count", 1),
            norm_topk_prob=m(f"{a}.expert_weights_norm", False),
            routed_scaling_factor=m(f"{a}.expert_weights_scale", 1.0),
            rope_interleave=True,
        )
        if m(f"{a}.expert_gating_func", 1) != 2:
            raise ValueError("deepseek2 with a softmax gate is not modelled by reference_moe")
        if m(f"{a}.rope.scaling.type") == "yarn":
            log_mul = m(f"{a}.rope.scaling.yarn_log_multiplier")
            mscale_all = None if log_mul is None else round(log_mul / 0.1, 6)
            rs = {
                "type": "yarn",
                "factor": m(f"{a}.rope.scaling.factor"),
                "original_max_position_embeddings": m(f"{a}.rope.scaling.original_context_length"),
                "beta_fast": m(f"{a}.rope.scaling.yarn_beta_fast", 32.0),
                "beta_slow": m(f"{a}.rope.scaling.yarn_beta_slow", 1.0),
            }
            if mscale_all is not None:
                # llama.cpp keeps only mscale_all_dim; HF's attention factor
                # mscale(f, mscale) / mscale(f, mscale_all_dim) is 1 when they are equal (V3's config)
                rs["mscale"] = rs["mscale_all_dim"] = mscale_all
            if m(f"{a}.rope.scaling.yarn_attn_factor") is not None:
                rs["attention_factor"] = m(f"{a}.rope.scaling.yarn_attn_factor")
            cfg["rope_scaling"] = rs
            # HF derives the YaRN factor as max_position_embeddings / original when both are set
            cfg["max_position_embeddings"] = int(round(rs["factor"] * rs["original_max_position_embeddings"]))
    elif m(f"{a}.rope.scaling.type") not in (None, "none"):
        raise ValueError(f"rope scaling {m(f'{a}.rope.scaling.type')} is not modelled")
    if "rope_freqs.weight" in names:
        rs = rope_scaling or {}
        if arch != "llama" or rs.get("rope_type", rs.get("type")) != "llama3":
            raise ValueError("rope_freqs.weight: only a llama file with its source's llama3 rope_scaling is modelled")
        t = next(t for t in g.tensors if t.name == "rope_freqs.weight")
        got = dequantize(t.ggml_type, t.data, t.ne, exact=True).reshape(-1)
        D = cfg["head_dim"]
        with torch.no_grad():
            plain = reference.rope_inv_freq(D, cfg["rope_theta"]).double()
            scaled = reference.rope_inv_freq(D, cfg["rope_theta"], rs).double()
        want = (plain / scaled).numpy()
        if got.shape != want.shape or float(np.abs(got / want - 1).max()) > 1e-5:
            raise ValueError(f"rope_freqs.weight {got.tolist()} disagrees with rope_scaling {rs}")
        cfg["rope_scaling"] = dict(rs)
    return cfg


# ----------------------------------------------------------------------------------------------
# tensors -> Hugging Face weights

LAYER_INV = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "post_ffw_norm.weight": "post_mlp_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.weight": "self_attn.o_proj.weight",
    "attn_output.bias": "self_attn.o_proj.bias",
    "attn_q_norm.weight": "self_attn.q_norm.weight",
    "attn_k_norm.weight": "self_attn.k_norm.weight",
    "attn_q_a.weight": "self_attn.q_a_proj.weight",
    "attn_q_a_norm.weight": "self_attn.q_a_layernorm.weight",
    "attn_q_b.weight": "self_attn.q_b_proj.weight",
    "attn_kv_a_mqa.weight": "self_attn.kv_a_proj_with_mqa.weight",
    "attn_kv_a_norm.weight": "self_attn.kv_a_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
    "ffn_gate_inp.weight": "mlp.gate.weight",
    "exp_probs_b.bias": "mlp.gate.e_score_correction_bias",
    "ffn_gate_shexp.weight": "mlp.shared_experts.gate_proj.weight",
    "ffn_up_shexp.weight": "mlp.shared_experts.up_proj.weight",
    "ffn_down_shexp.weight": "mlp.shared_experts.down_proj.weight",
}


def hf_weights(g: G.GGUFFile, cfg: dict) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """HF name -> float64 array (exact dequantized values), HF name -> GGUF storage type name.
    Tensors of MTP layers (blk.L and above) are left out: the reference never runs them."""
    arch = G.metadata_value(g, "general.architecture")
    L = cfg["num_hidden_layers"]
    w: dict[str, np.ndarray] = {}
    qt: dict[str, str] = {}
    kb: dict[int, tuple[np.ndarray, str]] = {}
    vb: dict[int, tuple[np.ndarray, str]] = {}

    def put(name: str, arr: np.ndarray, tname: str) -> None:
        if name in w:
            raise ValueError(f"{name} twice")
        w[name] = arr
        qt[name] = tname

    for t in g.tensors:
        tname = G.GGML_TYPES[t.ggml_type][0]
        arr = dequantize(t.ggml_type, t.data, t.ne, exact=True)
        if t.name == "token_embd.weight":
            put("model.embed_tokens.weight", arr, tname)
            continue
        if t.name == "output_norm.weight":
            put("model.norm.weight", arr, tname)
            continue
        if t.name == "output.weight":
            put("lm_head.weight", arr, tname)
            continue
        if t.name == "rope_freqs.weight":  # read by hf_config
            continue
        parts = t.name.split(".", 2)
        if parts[0] != "blk":
            raise ValueError(f"unexpected tensor {t.name}")
        i, suffix = int(parts[1]), parts[2]
        if i >= L:
            continue
        p = f"model.layers.{i}."
        if suffix in ("ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"):
            proj = suffix.split("_")[1]
            for e in range(arr.shape[0]):
                put(f"{p}mlp.experts.{e}.{proj}_proj.weight", arr[e], tname)
            continue
        if suffix == "attn_k_b.weight":
            kb[i] = (arr, tname)
            continue
        if suffix == "attn_v_b.weight":
            vb[i] = (arr, tname)
            continue
        if suffix == "ffn_up.weight":
            hf = "mlp.gate_up_proj.weight" if arch == "glm4" else "mlp.up_proj.weight"
        elif suffix == "post_attention_norm.weight":
            hf = "post_attention_layernorm.weight" if arch == "glm4moe" else "post_self_attn_layernorm.weight"
        elif suffix in LAYER_INV:
            hf = LAYER_INV[suffix]
        else:
            raise ValueError(f"no Hugging Face name for {t.name}")
        if arch == "llama" and suffix.startswith("attn_q."):
            arr = unpermute_rows(arr, cfg["num_attention_heads"])
        elif arch == "llama" and suffix.startswith("attn_k."):
            arr = unpermute_rows(arr, cfg["num_key_value_heads"])
        put(p + hf, arr, tname)
    for i in sorted(kb):
        k, kt = kb[i]  # (H, R, Dn)
        v, vt = vb[i]  # (H, Dv, R)
        kv = np.concatenate([k.transpose(0, 2, 1), v], axis=1)  # (H, Dn + Dv, R)
        # the expanded form rounds kv_b's input once: use the coarser activation format
        coarse = vt if vt in ("Q4_K", "Q5_K", "Q6_K") or kt in FLOAT_TYPES else kt
        put(f"model.layers.{i}.self_attn.kv_b_proj.weight", kv.reshape(-1, kv.shape[-1]), coarse)
    if "lm_head.weight" not in w:
        qt["lm_head.weight"] = qt["model.embed_tokens.weight"]
    return w, qt


# ----------------------------------------------------------------------------------------------
# activation-quantized matmuls


class QWeight:
    """A weight whose matmul inputs are rounded first: `x @ W.T` (the only way the reference
    modules multiply by a weight) rounds x as a matmul against this storage type would; indexing
    (the embedding lookup) reads the exact values."""

    def __init__(self, t: torch.Tensor, qtype: str, scheme: str, transposed: bool = False):
        self.t, self.qtype, self.scheme, self.transposed = t, qtype, scheme, transposed

    @property
    def T(self) -> "QWeight":
        return QWeight(self.t, self.qtype, self.scheme, not self.transposed)

    def __rmatmul__(self, x: torch.Tensor) -> torch.Tensor:
        xq = torch.from_numpy(round_activation(x.detach().numpy(), self.qtype, self.scheme))
        return xq @ (self.t.T if self.transposed else self.t)

    def __getitem__(self, idx):
        return self.t[idx]


def round_activation(x: np.ndarray, qtype: str, scheme: str) -> np.ndarray:
    if qtype in FLOAT_TYPES:
        return x
    if scheme == "q8_0_all":
        # Maya's q8 activation quantizer: per 32, d = amax/127 kept in f32, round half to even
        x32 = np.asarray(x, dtype=np.float32)
        b = x32.reshape(-1, 32)
        amax = np.abs(b).max(axis=1, keepdims=True)
        d = (amax / np.float32(127)).astype(np.float32)
        idd = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1), 0).astype(np.float32)
        q = np.rint((b * idd).astype(np.float32))
        return (q.astype(np.float64) * d.astype(np.float64)).reshape(x.shape)
    return quantize_activation(x, qtype)


def torch_weights(w: dict[str, np.ndarray], qt: dict[str, str], actq: bool, scheme: str = "llama.cpp") -> dict:
    out = {}
    for name, arr in w.items():
        t = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float64))
        out[name] = QWeight(t, qt[name], scheme) if actq and qt[name] not in FLOAT_TYPES and arr.ndim == 2 else t
    if "lm_head.weight" not in out:
        out["lm_head.weight"] = out["model.embed_tokens.weight"]
    return out


# ----------------------------------------------------------------------------------------------


class Model:
    """A GGUF file ready for the reference: cfg, exact weights and their storage types."""

    def __init__(self, path: Path, rope_scaling: dict | None = None):
        use_float64()
        self.path = Path(path)
        self.gguf = G.read_split(self.path)
        self.cfg = hf_config(self.gguf, rope_scaling)
        self.w_np, self.qtypes = hf_weights(self.gguf, self.cfg)
        self.types = sorted({G.GGML_TYPES[t.ggml_type][0] for t in self.gguf.tensors})
        self._w = {}

    def weights(self, actq: bool = False, scheme: str = "llama.cpp") -> dict:
        key = (actq, scheme)
        if key not in self._w:
            self._w[key] = torch_weights(self.w_np, self.qtypes, actq, scheme)
        return self._w[key]

    @property
    def quantized(self) -> bool:
        return any(t not in FLOAT_TYPES for t in self.types)

    def forward(
        self, ids: list[int], actq: bool = False, scheme: str = "llama.cpp", margins: list | None = None
    ) -> torch.Tensor:
        """Logits [T, V] (float64)."""
        w = self.weights(actq, scheme)
        arch = self.cfg["architectures"][0]
        with torch.no_grad():
            if arch in reference.ARCHS:
                return reference.forward(self.cfg, w, ids)
            if arch in reference_moe.ARCHS:
                return reference_moe.forward(self.cfg, w, ids, margins)
            return reference_qwen3moe.forward(self.cfg, w, ids, margins)

    def greedy(self, ids: list[int], n: int) -> tuple[list[int], list[float]]:
        """n greedy tokens by full recomputation, and each step's top-1 minus top-2 margin."""
        seq, out, gaps = list(ids), [], []
        for _ in range(n):
            logits = self.forward(seq)[-1]
            top2 = torch.topk(logits, 2).values
            gaps.append(float(top2[0] - top2[1]))
            out.append(int(torch.argmax(logits)))
            seq.append(out[-1])
        return out, gaps

    def routing(self, ids: list[int], actq: bool = False, scheme: str = "llama.cpp") -> tuple[list, list]:
        """Per MoE layer: the chosen experts at every position of ids (sorted ids) and each
        position's selection margin (K-th minus (K+1)-th choice score, and for group-limited
        routing also the last kept minus the first dropped group); ([], []) for dense models."""
        reference_qwen3moe.TRACE = []
        try:
            self.forward(ids, actq=actq, scheme=scheme)
            trace = reference_qwen3moe.TRACE
        finally:
            reference_qwen3moe.TRACE = None
        return [t[0] for t in trace], [t[1] for t in trace]
