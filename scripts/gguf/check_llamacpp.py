"""Holds llama.cpp to the fixtures' own contract: for every GGUF fixture, llama.cpp loads the file
and its logits meet the bound an engine must meet.

    /usr/bin/python3 scripts/gguf/check_llamacpp.py --llama-logits /path/to/gguf-logits [--only llama,qwen3]

--llama-logits names a program linked against llama.cpp that reads lines "PROMPT IDS | FORCED IDS"
and prints {"last_logits": [...], "greedy": [...], "forced": [[...], ...]} per line (the logits
after each forced token, fed one at a time after the prompt); see test/fixtures/gguf/README.md.
Per file it reports: max |logit - reference| at the last prompt position, the same over the
forced-decoding steps the fixture marks as checked (at the reference's top-8 tokens), and the
greedy tokens llama.cpp shares with the reference against the number the fixture checks. Exits 1
when llama.cpp misses a bound an engine is held to, with one exception reported but not failed:
F16/BF16 files, where llama.cpp rounds activations to f16/bf16 (Maya computes in f32).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
ORDER = ["llama", "qwen3", "glm4", "qwen3moe", "glm4moe", "deepseek2", "maya-demo", "llama3rope"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-logits", type=Path, required=True)
    ap.add_argument("--dir", type=Path, default=ROOT / "test" / "fixtures" / "gguf")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    failed = False
    print("| file | bound | last-position max abs diff | forced-decoding max abs diff | greedy agreement / checked |")
    print("| --- | ---: | ---: | ---: | --- |")
    for model in ORDER:
        if args.only and model not in args.only.split(","):
            continue
        doc = json.loads((args.dir / f"{model}.json").read_text())
        n = doc["greedy_tokens"]
        for f in doc["files"]:
            lines = "".join(
                " ".join(map(str, ids)) + " | " + " ".join(map(str, rec["greedy"][: n - 1])) + "\n"
                for ids, rec in zip(doc["prompts"], f["prompts"])
            )
            r = subprocess.run(
                [str(args.llama_logits), str(args.dir / f["file"]), str(n), "2"],
                input=lines,
                capture_output=True,
                text=True,
                timeout=900,
            )
            if r.returncode != 0:
                print(f"| {f['file']} | llama.cpp failed: {r.stderr.strip()[-300:]} |")
                failed = True
                continue
            outs = [json.loads(x) for x in r.stdout.strip().splitlines()]
            bound = f["tolerance"]["max_abs_logit_diff"]
            last = forced = 0.0
            agree_ok = True
            agree_txt = []
            for rec, out in zip(f["prompts"], outs):
                last = max(last, float(np.abs(np.array(out["last_logits"]) - np.array(rec["last_logits"])).max()))
                for step in rec["decode_checked_steps"]:
                    top = rec["decode_topk"][step - 1]
                    got = np.array(out["forced"][step - 1])[top["ids"]]
                    forced = max(forced, float(np.abs(got - np.array(top["logits"])).max()))
                agree = next((i for i, (a, b) in enumerate(zip(out["greedy"], rec["greedy"])) if a != b), n)
                agree_ok &= agree >= rec["greedy_checked"]
                agree_txt.append(f"{agree}/{rec['greedy_checked']}")
            float_file = all(t in ("F32", "F16", "BF16") for t in f["tensor_types"])
            ok = last <= bound and forced <= bound and agree_ok
            note = ""
            if not ok and float_file and "F32" != f["ftype"]:
                note = " (llama.cpp rounds activations to f16/bf16 here)"
            elif not ok:
                failed = True
                note = " **FAIL**"
            print(
                f"| {f['file']} | {bound:.3g} | {last:.3g} | {forced:.3g} | {' '.join(agree_txt)}{note} |", flush=True
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
