"""Minimal safetensors writer and reader (no dependency beyond torch and numpy).

Format (https://huggingface.co/docs/safetensors, "Format" section): an 8-byte little-endian
unsigned header length N, then N bytes of UTF-8 JSON mapping each tensor name to
{"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the byte buffer that follows
the header) plus an optional "__metadata__" string map, then the raw little-endian tensor bytes.
The reference implementation pads the header with spaces to a multiple of 8 bytes; so do we.

Sharded checkpoints add `model.safetensors.index.json`:
{"metadata": {"total_size": <bytes of tensor data>}, "weight_map": {name: shard file name}}
(the layout transformers' `save_pretrained` writes).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import torch

# safetensors dtype tag -> (torch dtype, bytes per element)
DTYPES = {
    "F32": (torch.float32, 4),
    "F16": (torch.float16, 2),
    "BF16": (torch.bfloat16, 2),
    # torch 1.13 has no float8 dtype: F8_E4M3 bytes travel as uint8 codes (make_moe_fixtures.py
    # encodes and decodes them).
    "F8_E4M3": (torch.uint8, 1),
}
TORCH_TO_TAG = {v[0]: k for k, v in DTYPES.items()}


def tensor_bytes(t: torch.Tensor) -> bytes:
    """Raw little-endian bytes of a contiguous CPU tensor (bf16 goes through an int16 view)."""
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    if t.dtype == torch.float16:
        return t.numpy().astype("<f2").tobytes()
    if t.dtype == torch.float32:
        return t.numpy().astype("<f4").tobytes()
    if t.dtype == torch.uint8:
        return t.numpy().tobytes()
    raise ValueError(f"unsupported dtype {t.dtype}")


def write_safetensors(path: Path, tensors: dict[str, torch.Tensor]) -> int:
    """Writes tensors (already in their storage dtype) sorted by name. Returns data bytes."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    blobs: list[bytes] = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name]
        data = tensor_bytes(t)
        header[name] = {
            "dtype": TORCH_TO_TAG[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * ((8 - len(raw) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for data in blobs:
            f.write(data)
    return offset


def read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    """Reads every tensor of one file, in its stored dtype, validating offsets against the file."""
    buf = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8 : 8 + n].decode("utf-8"))
    data = buf[8 + n :]
    out: dict[str, torch.Tensor] = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dtype, size = DTYPES[meta["dtype"]]
        begin, end = meta["data_offsets"]
        count = int(np.prod(meta["shape"])) if meta["shape"] else 1
        if end - begin != count * size or end > len(data):
            raise ValueError(f"{path}: tensor {name} has bad data_offsets")
        chunk = data[begin:end]
        if dtype == torch.bfloat16:
            arr = np.frombuffer(chunk, dtype="<i2").copy()
            t = torch.from_numpy(arr).view(torch.bfloat16)
        elif dtype == torch.float16:
            t = torch.from_numpy(np.frombuffer(chunk, dtype="<f2").copy())
        elif dtype == torch.uint8:
            t = torch.from_numpy(np.frombuffer(chunk, dtype=np.uint8).copy())
        else:
            t = torch.from_numpy(np.frombuffer(chunk, dtype="<f4").copy())
        out[name] = t.reshape(meta["shape"])
    return out


def load_checkpoint(model_dir: Path) -> dict[str, torch.Tensor]:
    """Loads a model directory's weights (single file or index + shards) as float32 tensors."""
    model_dir = Path(model_dir)
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        weight_map = json.loads(index.read_text())["weight_map"]
        files = sorted(set(weight_map.values()))
    else:
        weight_map = None
        files = ["model.safetensors"]
    weights: dict[str, torch.Tensor] = {}
    for file in files:
        for name, t in read_safetensors(model_dir / file).items():
            if weight_map is not None and weight_map.get(name) != file:
                raise ValueError(f"{file}: tensor {name} is not mapped to this shard")
            weights[name] = t.to(torch.float32)
    if weight_map is not None and set(weight_map) != set(weights):
        raise ValueError("index weight_map and shard contents differ")
    return weights
