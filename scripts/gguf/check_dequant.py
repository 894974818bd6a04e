"""Checks dequant.py against ggml's own dequantization, bit for bit in f32, on every tensor of the
GGUF fixtures (or the files given):

    /usr/bin/python3 scripts/gguf/check_dequant.py --dump /path/to/dequant-dump [FILE.gguf ...]

`--dump` names a program linked against ggml that writes, for every tensor of a GGUF file in file
order, ggml_get_type_traits(type)->to_float of its data as raw f32 (`PROG MODEL.gguf OUT.bin`; see
test/fixtures/gguf/README.md). Also checks that the float64 exact values round to the same f32
values (they differ only where f32 arithmetic rounds: Q4_1/Q5_1's d*q + m and the K-quants'
d*sc*q - dmin*m, by at most 1 ulp).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gguf_io as G  # noqa: E402
from dequant import dequantize  # noqa: E402


def check(path: Path, prog: Path) -> tuple[int, dict[str, int], int]:
    """(tensors, weights checked per type, weights where the exact value's f32 rounding differs)."""
    g = G.read(path)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "dump.bin"
        subprocess.run([str(prog), str(path), str(out)], check=True, capture_output=True)
        ref = np.fromfile(out, dtype="<f4")
    off, per_type, ulp = 0, {}, 0
    for t in g.tensors:
        n = int(np.prod(t.ne))
        mine = dequantize(t.ggml_type, t.data, t.ne, exact=False).ravel()
        theirs = ref[off : off + n]
        off += n
        if mine.view(np.uint32).tobytes() != theirs.view(np.uint32).tobytes():
            bad = int(np.sum(mine.view(np.uint32) != theirs.view(np.uint32)))
            raise SystemExit(f"{path.name}: {t.name} ({G.GGML_TYPES[t.ggml_type][0]}): {bad} of {n} values differ")
        exact = dequantize(t.ggml_type, t.data, t.ne, exact=True).ravel().astype(np.float32)
        diff = exact.view(np.int32).astype(np.int64) - theirs.view(np.int32).astype(np.int64)
        if np.abs(diff).max() > 1:
            raise SystemExit(f"{path.name}: {t.name}: exact values more than 1 ulp from ggml's")
        ulp += int(np.count_nonzero(diff))
        name = G.GGML_TYPES[t.ggml_type][0]
        per_type[name] = per_type.get(name, 0) + n
    if off != ref.size:
        raise SystemExit(f"{path.name}: dump has {ref.size} values, tensors {off}")
    return len(g.tensors), per_type, ulp


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", type=Path, required=True)
    ap.add_argument("files", nargs="*", type=Path)
    args = ap.parse_args()
    files = args.files or sorted((HERE.parents[1] / "test" / "fixtures" / "gguf").glob("*.gguf"))
    total: dict[str, int] = {}
    for f in files:
        n, per_type, ulp = check(f, args.dump)
        for k, v in per_type.items():
            total[k] = total.get(k, 0) + v
        print(
            f"{f.name}: {n} tensors identical ({', '.join(f'{k} {v}' for k, v in sorted(per_type.items()))}); "
            f"exact values 1 ulp off f32 in {ulp}"
        )
    print("all identical; weights per type:", ", ".join(f"{k} {v}" for k, v in sorted(total.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
