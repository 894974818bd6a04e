"""Prints the tables of test/fixtures/gguf/README.md from the fixture JSON files:

    python3 scripts/gguf/report.py [test/fixtures/gguf]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ORDER = ["llama", "qwen3", "glm4", "qwen3moe", "glm4moe", "deepseek2", "maya-demo"]


def main() -> int:
    d = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "test" / "fixtures" / "gguf"
    docs = [json.loads((d / f"{m}.json").read_text()) for m in ORDER if (d / f"{m}.json").exists()]
    print(
        "| file | bytes | tensor types | bound | D | llama.cpp vs reference | llama.cpp vs 8-bit sim | "
        "llama.cpp greedy agreement | greedy checked |"
    )
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | --- | --- |")
    total = 0
    for doc in docs:
        for f in doc["files"]:
            total += f["bytes"]
            types = ", ".join(f"{k} {v}" for k, v in f["tensor_types"].items())
            name = f["file"] if "split_files" not in f else f"{f['file']} (+{len(f['split_files']) - 1} parts)"
            lc = f.get("llama_cpp", {})
            agree = "/".join(str(x) for x in lc.get("greedy_agree_prefix", []))
            checked = "/".join(str(p["greedy_checked"]) for p in f["prompts"])
            tol = f["tolerance"]
            sim = f"{lc['max_abs_diff_to_actq']:.3g}" if "max_abs_diff_to_actq" in lc else "-"
            print(
                f"| {name} | {f['bytes']} | {types} | {tol['max_abs_logit_diff']:.3g} | "
                f"{tol['activation_quantization_deviation']:.3g} | {lc.get('max_abs_logit_diff', float('nan')):.3g} | "
                f"{sim} | {agree} | {checked} |"
            )
    print(f"\ntotal {total} bytes ({total / 1e6:.1f} MB) in {sum(len(doc['files']) for doc in docs)} fixtures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
