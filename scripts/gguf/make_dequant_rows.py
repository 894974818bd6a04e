"""Writes test/fixtures/gguf/dequant-rows.bin: a few rows of every GGUF block type Maya reads, cut
from the committed llama-<TYPE>.gguf fixtures (made by llama-quantize --pure), with the f32 values
llama.cpp's dequantization gives them (dequant.py's exact=False flavour, checked bit for bit
against ggml by check_dequant.py). The engine's C test (test_ggml.cpp) compares its scalar and
vector dequantization against it.

    /usr/bin/python3 scripts/gguf/make_dequant_rows.py

Format (little-endian): b"MDQ1", u32 entries; per entry: u32 Maya dtype (engine.h's
ENG_WEIGHT_DTYPE_*), u32 rows, u32 columns, the rows' raw blocks, then rows x columns f32.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gguf_io as G  # noqa: E402
from dequant import dequantize  # noqa: E402

ROOT = HERE.parent.parent
FIX = ROOT / "test" / "fixtures" / "gguf"
# GGUF type name -> engine.h's ENG_WEIGHT_DTYPE_* code
MAYA_DTYPE = {"Q8_0": 8, "Q4_0": 9, "Q4_1": 10, "Q5_0": 11, "Q5_1": 12, "Q4_K": 13, "Q5_K": 14, "Q6_K": 15}
TENSORS = ["blk.0.ffn_down.weight", "blk.1.attn_v.weight"]
ROWS = 3


def main() -> None:
    out = bytearray(b"MDQ1")
    entries = []
    for name, code in MAYA_DTYPE.items():
        g = G.read(FIX / f"llama-{name}.gguf")
        by_name = {t.name: t for t in g.tensors}
        for tname in TENSORS:
            t = by_name[tname]
            assert G.GGML_TYPES[t.ggml_type][0] == name, (name, tname)
            cols = t.ne[0]
            row_bytes = G.tensor_nbytes(t.ggml_type, [cols])
            raw = t.data[: ROWS * row_bytes]
            vals = dequantize(t.ggml_type, raw, [cols, ROWS], exact=False).astype("<f4")
            entries.append(struct.pack("<III", code, ROWS, cols) + raw + vals.tobytes())
    out += struct.pack("<I", len(entries))
    for e in entries:
        out += e
    path = FIX / "dequant-rows.bin"
    path.write_bytes(bytes(out))
    print(f"{path}: {len(entries)} entries, {len(out)} bytes")


if __name__ == "__main__":
    main()
