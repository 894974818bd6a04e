"""Builds the GGUF fixtures (test/fixtures/gguf): tiny random checkpoints converted with our writer,
quantized with llama.cpp's llama-quantize, and per file the float64 reference logits, greedy
continuations and logit bound.

    /usr/bin/python3 scripts/gguf/make_fixtures.py --llama-bin /path/to/llama.cpp/build/bin \\
        [--llama-logits /path/to/gguf-logits] [--only llama,qwen3] [--work build/gguf-work]

--llama-bin names a directory holding a llama-quantize built from a llama.cpp checkout (CPU
build; the commit used is in the README). Nothing here builds or downloads llama.cpp.
--llama-logits optionally names a program that prints llama.cpp's logits for token-id prompts
(`PROG MODEL N_GREEDY < prompts`, one prompt of space-separated ids per line, one JSON line
{"last_logits": [...], "greedy": [...]} per prompt; see the README): the run then records, per
file, llama.cpp's max |logit - reference| and how many greedy tokens agree.

Deterministic given the same llama-quantize and NumPy/PyTorch (a rerun rewrites identical files).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import gguf_io as G  # noqa: E402
import make_checkpoints as MC  # noqa: E402
from convert_hf import convert  # noqa: E402
from reference_gguf import Model  # noqa: E402

SEED = 20261206
PROMPT_LENGTHS = (5, 17, 40, 130)
CANDIDATES = {"llama": 8}  # random prompts tried per length (default 16)
GREEDY_TOKENS = 16
TOPK = 8  # logits kept per forced-decoding step
F32_BOUND = 1e-3  # the engine's usual bound on f32-compute logits
FLOAT_GREEDY_MARGIN = 4e-3
BOUND_FACTOR = 2.0
MIN_ROUTE_MARGIN = 2e-5  # float files: f32 rounding cannot flip an expert choice
ROUTE_FACTOR = 3.0  # quantized files: margin >= 3x the largest margin change 8-bit activations caused
SCHEMES = ("llama.cpp", "q8_0_all")

# file name -> (source model, how it is made)
#   ("writer", outtype)             our converter
#   ("quantize", ftype, pure)       llama-quantize of the model's float file
#   ("split", outtype, parts)       our converter, written as a split set
PLAN = {
    "llama": [
        ("F32", ("writer", "f32")),
        ("F16", ("writer", "f16")),
        ("BF16", ("writer", "bf16")),
        ("Q8_0", ("quantize", "Q8_0", True)),
        ("Q4_0", ("quantize", "Q4_0", True)),
        ("Q4_1", ("quantize", "Q4_1", True)),
        ("Q5_0", ("quantize", "Q5_0", True)),
        ("Q5_1", ("quantize", "Q5_1", True)),
        ("Q4_K", ("quantize", "Q4_K_S", True)),
        ("Q5_K", ("quantize", "Q5_K_S", True)),
        ("Q6_K", ("quantize", "Q6_K", True)),
        ("Q4_K_M", ("quantize", "Q4_K_M", False)),
        ("Q5_K_M", ("quantize", "Q5_K_M", False)),
    ],
    "qwen3": [("BF16", ("writer", "bf16")), ("Q4_K_M", ("quantize", "Q4_K_M", False))],
    "glm4": [("F16", ("split", "f16", 3)), ("Q4_K_M", ("quantize", "Q4_K_M", False))],
    "qwen3moe": [("BF16", ("writer", "bf16")), ("Q4_K_M", ("quantize", "Q4_K_M", False))],
    "glm4moe": [("BF16", ("writer", "bf16")), ("Q4_K_M", ("quantize", "Q4_K_M", False))],
    "deepseek2": [("F16", ("writer", "f16")), ("Q4_K_M", ("quantize", "Q4_K_M", False))],
    "maya-demo": [("Q4_K_M", ("quantize", "Q4_K_M", False))],
    "llama3rope": [("F16", ("writer", "f16"))],
}
SOURCE_OF_QUANT = {"llama": "F32"}  # quantized from this file; the others from their float file


def f7(x: float) -> float:
    return float(f"{x:.7g}")


def sha256(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


def build_files(model: str, src_dir: Path, out: Path, work: Path, llama_bin: Path) -> dict[str, list[Path]]:
    """Writes the model's GGUF files; returns name -> [paths] (a split set has several)."""
    files: dict[str, list[Path]] = {}
    float_path: Path | None = None
    for tag, how in PLAN[model]:
        name = f"{model}-{tag}"
        if how[0] in ("writer", "split"):
            g, warnings = convert(src_dir, how[1], name=model)
            for w in warnings:
                print(f"  {model}: warning: {w}")
            if how[0] == "split":
                per = math.ceil(len(g.tensors) / how[2])
                paths = G.write_split(out / f"{name}.gguf", g, per)
                whole = work / "gguf" / f"{name}.gguf"  # the same file unsplit, to quantize from
                G.write(whole, g)
                files[name] = paths
                float_path = float_path or whole
            else:
                p = out / f"{name}.gguf"
                G.write(p, g)
                files[name] = [p]
                float_path = float_path or p
            if model in SOURCE_OF_QUANT and tag == SOURCE_OF_QUANT[model]:
                float_path = files[name][0]
    for tag, how in PLAN[model]:
        if how[0] != "quantize":
            continue
        name = f"{model}-{tag}"
        src = float_path
        if src is None:  # the demo model: quantize from a BF16 conversion kept out of the tree
            g, warnings = convert(src_dir, "bf16", name=model)
            for w in warnings:
                print(f"  {model}: warning: {w}")
            src = work / "gguf" / f"{model}-BF16.gguf"
            G.write(src, g)
        dst = out / f"{name}.gguf"
        cmd = [str(llama_bin / "llama-quantize")] + (["--pure"] if how[2] else []) + [str(src), str(dst), how[1], "1"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        files[name] = [dst]
    return files


def tensor_types(g: G.GGUFFile) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in g.tensors:
        n = G.GGML_TYPES[t.ggml_type][0]
        out[n] = out.get(n, 0) + 1
    return dict(sorted(out.items()))


def flipped_positions(m: Model, seq: list[int], exact_choices: list) -> set[int]:
    """Positions where some MoE layer picks other experts under either activation rounding."""
    out: set[int] = set()
    if not exact_choices:
        return out
    for sch in SCHEMES:
        choices = m.routing(seq, actq=True, scheme=sch)[0]
        for layer_a, layer_b in zip(choices, exact_choices):
            out.update(t for t, (a, b) in enumerate(zip(layer_a, layer_b)) if a != b)
    return out


def deviation(m: Model, seq: list[int], positions: list[int]) -> float:
    """max over the given positions (bar those whose own routing flips), the vocabulary and the
    rounding schemes of |activation-quantized logits - exact logits|."""
    ref = m.forward(seq)
    skip = flipped_positions(m, seq, m.routing(seq)[0])
    keep = [t for t in positions if t not in skip]
    if not keep:
        return 0.0
    return max(float((m.forward(seq, actq=True, scheme=sch) - ref)[keep].abs().max()) for sch in SCHEMES)


def checked_positions(ids: list[int], e: dict, route_need: float) -> list[int]:
    """The positions an engine test compares: the last prompt position and every forced-decoding
    step whose routing margin clears route_need."""
    P = len(ids)
    steps = [
        s for s in range(1, GREEDY_TOKENS) if not e["step_route_margin"] or e["step_route_margin"][s] >= route_need
    ]
    return [P - 1] + [P - 1 + s for s in steps]


def route_perturbation(m: Model, seqs: list[list[int]]) -> float:
    """Largest change of a last-position selection margin under activation rounding (where the
    choice itself stays), over seqs, layers and schemes; 0 for dense models."""
    worst = 0.0
    for seq in seqs:
        choices, margins = m.routing(seq)
        for sch in SCHEMES:
            c2, m2 = m.routing(seq, actq=True, scheme=sch)
            for a, b, ca, cb in zip(margins, m2, choices, c2):
                if ca[-1] == cb[-1]:
                    worst = max(worst, abs(a[-1] - b[-1]))
    return worst


def evaluate(m: Model, ids: list[int], bound: float, route_need: float) -> dict:
    """Greedy run, margins, checked prefix, forced-decoding top logits and routing robustness of one
    prompt on one file."""
    tokens, gaps = m.greedy(ids, GREEDY_TOKENS)
    seq = ids + tokens
    P = len(ids)
    logits = m.forward(seq[:-1])
    topk = []
    for step in range(1, GREEDY_TOKENS):
        v, i = torch.topk(logits[P - 1 + step], TOPK)
        topk.append({"ids": i.tolist(), "logits": [f7(x) for x in v.tolist()]})
    choices, margins = m.routing(seq)
    step_margin = [min(layer[P - 1 + k] for layer in margins) for k in range(GREEDY_TOKENS)] if margins else []
    need = BOUND_FACTOR * bound if m.quantized else FLOAT_GREEDY_MARGIN
    checked = next(
        (k for k, g in enumerate(gaps) if g < need or (step_margin and step_margin[k] < route_need)), GREEDY_TOKENS
    )
    if not margins:
        robust, flips = True, 0
    elif not m.quantized:
        robust, flips = min(min(layer) for layer in margins) >= MIN_ROUTE_MARGIN, 0
    else:
        robust = step_margin[0] >= route_need
        flips = len([t for t in flipped_positions(m, seq, choices) if t < P - 1]) if robust else 0
    return {
        "greedy": tokens,
        "gaps": gaps,
        "checked": checked,
        "topk": topk,
        "step_route_margin": step_margin,
        "min_route_margin": min(min(layer) for layer in margins) if margins else math.inf,
        "robust": robust,
        "flips": flips,
    }


def choose_prompts(
    models: dict[str, Model],
    bounds: dict[str, float],
    route_need: dict[str, float],
    vocab: int,
    rng: random.Random,
    label: str,
    candidates: int,
) -> list[list[int]]:
    """Per length, among candidates whose routing at the last prompt position is robust on every file
    (and whose float files clear the greedy margin), the one with the most checkable greedy tokens
    over all files, penalising earlier positions whose routing flips under activation rounding."""
    prompts = []
    for n in PROMPT_LENGTHS:
        best, best_score, best_stats = None, -math.inf, ""
        for _ in range(candidates):
            ids = [rng.randrange(vocab) for _ in range(n)]
            score, ok, checked, flips = 0.0, True, 0, 0
            for name, m in models.items():
                e = evaluate(m, ids, bounds[name], route_need[name])
                if not e["robust"] or (not m.quantized and e["checked"] < GREEDY_TOKENS):
                    ok = False
                    break
                checked += e["checked"]
                flips += e["flips"]
                score += e["checked"] - 4 * e["flips"] + 1e-3 * min(e["gaps"][: e["checked"] + 1])
            if ok and score > best_score:
                best, best_score = ids, score
                best_stats = (
                    f"mean checked greedy tokens {checked / len(models):.1f}, routing flips before the end {flips}"
                )
        if best is None:
            raise RuntimeError(f"{label}: no prompt of length {n} is robust on every file")
        prompts.append(best)
        print(f"  {label}: length {n}: {best_stats}", flush=True)
    return prompts


def run_llama(prog: Path, path: Path, prompts: list[list[int]]) -> list[dict]:
    r = subprocess.run(
        [str(prog), str(path), str(GREEDY_TOKENS), "2"],
        input="".join(" ".join(map(str, p)) + "\n" for p in prompts),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if r.returncode != 0:
        raise RuntimeError(f"{prog} {path}: {r.stderr[-2000:]}")
    return [json.loads(line) for line in r.stdout.strip().splitlines()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-bin", type=Path, required=True)
    ap.add_argument("--llama-logits", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "test" / "fixtures" / "gguf")
    ap.add_argument("--work", type=Path, default=ROOT / "build" / "gguf-work")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.work / "gguf").mkdir(parents=True, exist_ok=True)
    specs = {s["dir"]: (k, s) for k, s in enumerate(MC.SPECS)}
    for k_model, model in enumerate(PLAN):
        if args.only and model not in args.only.split(","):
            continue
        t0 = time.time()
        if model == "maya-demo":
            src = ROOT / "models" / "maya-demo"
            source = {"dir": "models/maya-demo"}
        else:
            k, spec = specs[model]
            src = args.work / "hf" / model
            MC.write_checkpoint(spec, src, MC.SEED + k)
            source = {
                "generator": "scripts/gguf/make_checkpoints.py",
                "seed": MC.SEED + k,
                "config": json.loads((src / "config.json").read_text()),
            }
        files = build_files(model, src, args.out, args.work, args.llama_bin)
        # a file with rope_freqs.weight (Llama-3 RoPE scaling) is modelled from its source's rope_scaling
        rs = source.get("config", {}).get("rope_scaling")
        models = {name: Model(paths[0], rs) for name, paths in files.items()}
        vocab = next(iter(models.values())).cfg["vocab_size"]
        rng = random.Random(SEED + k_model)
        discrimination = {}
        for name, m in models.items():
            if m.cfg.get("rope_scaling", {}).get("rope_type") == "llama3":
                # the fixture must tell the scaling apart: unscaled RoPE moves the logits by > 0.05
                probe_rng = random.Random(1)
                probe = [probe_rng.randrange(vocab) for _ in range(PROMPT_LENGTHS[2])]
                plain = Model(m.path, rs)
                plain.cfg = dict(plain.cfg, rope_scaling=None)
                d = float((plain.forward(probe) - m.forward(probe)).abs().max())
                print(f"  {name}: without rope scaling, max |logit diff| {d:.3g} over {len(probe)} positions")
                if d <= 0.05:
                    raise RuntimeError(f"{name}: RoPE scaling changes the logits by only {d:.3g}")
                discrimination[name] = {"without_rope_scaling_max_abs_logit_diff": float(f"{d:.3g}")}
        # provisional bounds from calibration prompts (all positions), final ones add the chosen prompts
        calib = [[rng.randrange(vocab) for _ in range(n)] for n in PROMPT_LENGTHS[:3]]
        bounds, dev, route_need = {}, {}, {}
        for name, m in models.items():
            dev[name] = max(deviation(m, p, [len(p) - 1]) for p in calib) if m.quantized else 0.0
            bounds[name] = F32_BOUND + BOUND_FACTOR * dev[name]
            route_need[name] = (
                max(MIN_ROUTE_MARGIN, ROUTE_FACTOR * route_perturbation(m, calib)) if m.quantized else MIN_ROUTE_MARGIN
            )
        prompts = choose_prompts(models, bounds, route_need, vocab, rng, model, CANDIDATES.get(model, 24))
        entries = []
        for name, m in models.items():
            evals = [evaluate(m, ids, bounds[name], route_need[name]) for ids in prompts]
            if m.quantized:
                dev[name] = max(
                    dev[name],
                    max(
                        deviation(m, ids + e["greedy"][:-1], checked_positions(ids, e, route_need[name]))
                        for ids, e in zip(prompts, evals)
                    ),
                )
                bounds[name] = F32_BOUND + BOUND_FACTOR * dev[name]
                evals = [evaluate(m, ids, bounds[name], route_need[name]) for ids in prompts]
            recs = []
            for ids, e in zip(prompts, evals):
                rec = {"last_logits": [f7(x) for x in m.forward(ids)[-1].tolist()]}
                if m.quantized:
                    rec["last_logits_actq"] = {
                        s: [f7(x) for x in m.forward(ids, actq=True, scheme=s)[-1].tolist()] for s in SCHEMES
                    }
                rec.update(
                    {
                        "greedy": e["greedy"],
                        "greedy_margins": [f7(g) for g in e["gaps"]],
                        "greedy_checked": e["checked"],
                        "decode_topk": e["topk"],
                    }
                )
                rec["decode_checked_steps"] = [t - len(ids) + 1 for t in checked_positions(ids, e, route_need[name])][
                    1:
                ]
                if e["step_route_margin"]:
                    rec["decode_route_margins"] = [float(f"{x:.3g}") for x in e["step_route_margin"]]
                    rec["min_route_margin"] = float(f"{e['min_route_margin']:.3g}")
                recs.append(rec)
            paths = files[name]
            entry = {
                "file": paths[0].name,
                "ftype": name[len(model) + 1 :],
                "bytes": sum(p.stat().st_size for p in paths),
                "sha256": sha256(paths),
                "tensor_types": tensor_types(m.gguf),
                "tolerance": {
                    "max_abs_logit_diff": float(f"{bounds[name]:.3g}"),
                    "activation_quantization_deviation": float(f"{dev[name]:.3g}"),
                    "min_route_margin_checked": float(f"{route_need[name]:.3g}"),
                },
                "prompts": recs,
            }
            if len(paths) > 1:
                entry["split_files"] = [p.name for p in paths]
            if name in discrimination:
                entry["discrimination"] = discrimination[name]
            if args.llama_logits:
                outs = run_llama(args.llama_logits, paths[0], prompts)
                d = max(
                    float(np.abs(np.array(o["last_logits"]) - np.array(r["last_logits"])).max())
                    for o, r in zip(outs, recs)
                )
                agree = [
                    next((i for i, (a, b) in enumerate(zip(o["greedy"], r["greedy"])) if a != b), GREEDY_TOKENS)
                    for o, r in zip(outs, recs)
                ]
                entry["llama_cpp"] = {"max_abs_logit_diff": float(f"{d:.3g}"), "greedy_agree_prefix": agree}
                if m.quantized:
                    da = max(
                        float(np.abs(np.array(o["last_logits"]) - np.array(r["last_logits_actq"]["llama.cpp"])).max())
                        for o, r in zip(outs, recs)
                    )
                    entry["llama_cpp"]["max_abs_diff_to_actq"] = float(f"{da:.3g}")
                print(
                    f"  {entry['file']}: bound {bounds[name]:.3g}, llama.cpp {d:.3g}, greedy agree {agree}, "
                    f"checked {[r['greedy_checked'] for r in recs]}",
                    flush=True,
                )
            entries.append(entry)
        doc = {
            "format": 1,
            "generator": "scripts/gguf/make_fixtures.py",
            "model": model,
            "architecture": G.metadata_value(next(iter(models.values())).gguf, "general.architecture"),
            "source": source,
            "torch_version": torch.__version__,
            "numpy_version": np.__version__,
            "greedy_tokens": GREEDY_TOKENS,
            "stop_ids": [],
            "prompts": prompts,
            "files": entries,
        }
        (args.out / f"{model}.json").write_text(json.dumps(doc, separators=(",", ":")) + "\n")
        print(f"{model}: {len(entries)} files in {time.time() - t0:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
