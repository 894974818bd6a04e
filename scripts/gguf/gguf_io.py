"""GGUF version 3 reader and writer in plain Python + NumPy.

Written from the format's description (ggml-org/ggml docs/gguf.md) and checked against the files
llama.cpp writes and reads; no code of llama.cpp's gguf-py is used. Layout, little-endian:

    u32 magic "GGUF", u32 version 3, u64 tensor_count, u64 kv_count
    kv_count x (string key, u32 value type, value)          string = u64 byte length + UTF-8
    tensor_count x (string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset)
    zero padding to `general.alignment` (default 32) from the start of the file
    tensor data: each tensor at data_start + offset, offsets multiples of the alignment, each
    tensor's bytes followed by zero padding up to the next multiple of the alignment

ne[0] is the innermost (row) length: a PyTorch tensor of shape (rows, cols) is stored with
ne = [cols, rows], an expert stack (E, rows, cols) with ne = [cols, rows, E].
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"GGUF"
VERSION = 3
DEFAULT_ALIGNMENT = 32

# metadata value types
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
_SCALAR = {
    UINT8: "<B",
    INT8: "<b",
    UINT16: "<H",
    INT16: "<h",
    UINT32: "<I",
    INT32: "<i",
    FLOAT32: "<f",
    BOOL: "<?",
    UINT64: "<Q",
    INT64: "<q",
    FLOAT64: "<d",
}
VALUE_TYPE_NAMES = {
    UINT8: "u8",
    INT8: "i8",
    UINT16: "u16",
    INT16: "i16",
    UINT32: "u32",
    INT32: "i32",
    FLOAT32: "f32",
    BOOL: "bool",
    STRING: "str",
    ARRAY: "arr",
    UINT64: "u64",
    INT64: "i64",
    FLOAT64: "f64",
}

# ggml tensor types this project reads: id -> (name, weights per block, bytes per block)
GGML_TYPES = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    30: ("BF16", 1, 2),
}
TYPE_ID = {name: tid for tid, (name, _, _) in GGML_TYPES.items()}


def tensor_nbytes(ggml_type: int, ne: list[int]) -> int:
    _, blk, size = GGML_TYPES[ggml_type]
    if ne[0] % blk:
        raise ValueError(f"row length {ne[0]} is not a multiple of the {GGML_TYPES[ggml_type][0]} block ({blk})")
    n = 1
    for d in ne:
        n *= d
    return n // blk * size


def pad(n: int, align: int) -> int:
    return (n + align - 1) // align * align


@dataclass
class KV:
    """A metadata value with its GGUF type (arrays: `type` ARRAY and `sub` the element type)."""

    type: int
    value: Any
    sub: int | None = None


def u32(v: int) -> KV:
    return KV(UINT32, int(v))


def i32(v: int) -> KV:
    return KV(INT32, int(v))


def u16(v: int) -> KV:
    return KV(UINT16, int(v))


def f32(v: float) -> KV:
    return KV(FLOAT32, float(v))


def boolean(v: bool) -> KV:
    return KV(BOOL, bool(v))


def string(v: str) -> KV:
    return KV(STRING, v)


def str_array(v: list[str]) -> KV:
    return KV(ARRAY, list(v), STRING)


def i32_array(v: list[int]) -> KV:
    return KV(ARRAY, [int(x) for x in v], INT32)


def _pack_string(s: str | bytes) -> bytes:
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def _pack_value(t: int, v: Any, sub: int | None) -> bytes:
    if t in _SCALAR:
        return struct.pack(_SCALAR[t], v)
    if t == STRING:
        return _pack_string(v)
    if t == ARRAY:
        if sub is None or sub == ARRAY:
            raise ValueError("array element type missing")
        out = bytearray(struct.pack("<IQ", sub, len(v)))
        if sub in _SCALAR and sub != BOOL:
            out += np.asarray(v, dtype=np.dtype(_SCALAR[sub])).tobytes()
        else:
            for x in v:
                out += _pack_value(sub, x, None)
        return bytes(out)
    raise ValueError(f"unknown metadata type {t}")


@dataclass
class Tensor:
    name: str
    ggml_type: int
    ne: list[int]  # innermost first
    data: bytes  # exactly tensor_nbytes(ggml_type, ne) bytes


@dataclass
class GGUFFile:
    """Metadata (insertion-ordered) and tensors (in file order)."""

    kv: dict[str, KV] = field(default_factory=dict)
    tensors: list[Tensor] = field(default_factory=list)

    @property
    def alignment(self) -> int:
        a = self.kv.get("general.alignment")
        return int(a.value) if a is not None else DEFAULT_ALIGNMENT


def serialize(g: GGUFFile) -> bytes:
    """The whole file as bytes (tensor offsets assigned in list order)."""
    align = g.alignment
    head = bytearray(MAGIC + struct.pack("<IQQ", VERSION, len(g.tensors), len(g.kv)))
    for key, kv in g.kv.items():
        head += _pack_string(key) + struct.pack("<I", kv.type) + _pack_value(kv.type, kv.value, kv.sub)
    offset = 0
    offsets = []
    for t in g.tensors:
        if len(t.data) != tensor_nbytes(t.ggml_type, t.ne):
            raise ValueError(f"{t.name}: {len(t.data)} bytes for type {t.ggml_type} shape {t.ne}")
        head += _pack_string(t.name) + struct.pack("<I", len(t.ne)) + struct.pack(f"<{len(t.ne)}Q", *t.ne)
        head += struct.pack("<IQ", t.ggml_type, offset)
        offsets.append(offset)
        offset += pad(len(t.data), align)
    out = bytearray(head)
    out += bytes(pad(len(out), align) - len(out))
    for t in g.tensors:
        out += t.data
        out += bytes(pad(len(t.data), align) - len(t.data))
    return bytes(out)


def write(path: Path, g: GGUFFile) -> int:
    data = serialize(g)
    Path(path).write_bytes(data)
    return len(data)


def split_name(path: Path, i: int, n: int) -> Path:
    """llama.cpp's split naming: <prefix>-00001-of-00003.gguf (llama_split_path: "%s-%05d-of-%05d.gguf")."""
    stem = path.name[:-5] if path.name.endswith(".gguf") else path.name
    return path.with_name(f"{stem}-{i + 1:05d}-of-{n:05d}.gguf")


def write_split(path: Path, g: GGUFFile, max_tensors: int) -> list[Path]:
    """Writes g as a split set of files holding at most max_tensors tensors each, as llama.cpp's
    gguf-split --split-max-tensors does: every file carries `split.no` (u16, 0-based),
    `split.count` (u16) and `split.tensors.count` (i32, tensors over all files), after the rest of
    the metadata; the first file also carries all of g's metadata, the others only the split keys
    (gguf-split.cpp: gguf_set_kv for split 0, then the three split keys for every split)."""
    chunks = [g.tensors[i : i + max_tensors] for i in range(0, len(g.tensors), max_tensors)]
    n = len(chunks)
    paths = []
    for i, chunk in enumerate(chunks):
        kv: dict[str, KV] = {}
        if i == 0:
            kv.update(g.kv)
        else:
            if "general.alignment" in g.kv:
                kv["general.alignment"] = g.kv["general.alignment"]
        kv["split.no"] = u16(i)
        kv["split.count"] = u16(n)
        kv["split.tensors.count"] = i32(len(g.tensors))
        p = split_name(path, i, n)
        write(p, GGUFFile(kv, list(chunk)))
        paths.append(p)
    return paths


# ----------------------------------------------------------------------------------------------
# reading


class Reader:
    def __init__(self, buf: bytes):
        self.buf = buf
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.buf):
            raise ValueError(f"truncated at byte {self.pos} (wanted {n} more of {len(self.buf)})")
        b = self.buf[self.pos : self.pos + n]
        self.pos += n
        return b

    def scalar(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        n = self.scalar("<Q")
        return self.take(n).decode("utf-8")

    def value(self, t: int) -> tuple[Any, int | None]:
        if t in _SCALAR:
            return self.scalar(_SCALAR[t]), None
        if t == STRING:
            return self.string(), None
        if t == ARRAY:
            sub = self.scalar("<I")
            n = self.scalar("<Q")
            if sub in _SCALAR and sub != BOOL:
                dt = np.dtype(_SCALAR[sub])
                arr = np.frombuffer(self.take(n * dt.itemsize), dtype=dt)
                return arr.tolist(), sub
            return [self.value(sub)[0] for _ in range(n)], sub
        raise ValueError(f"unknown metadata type {t} at byte {self.pos}")


def read(path: Path) -> GGUFFile:
    """Parses a whole GGUF file (data copied out per tensor)."""
    buf = Path(path).read_bytes()
    r = Reader(buf)
    if r.take(4) != MAGIC:
        raise ValueError(f"{path}: not a GGUF file")
    version, n_tensors, n_kv = struct.unpack("<IQQ", r.take(20))
    if version != VERSION:
        raise ValueError(f"{path}: GGUF version {version}")
    g = GGUFFile()
    for _ in range(n_kv):
        key = r.string()
        t = r.scalar("<I")
        v, sub = r.value(t)
        g.kv[key] = KV(t, v, sub)
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        nd = r.scalar("<I")
        ne = list(struct.unpack(f"<{nd}Q", r.take(8 * nd)))
        ty, off = struct.unpack("<IQ", r.take(12))
        infos.append((name, ne, ty, off))
    start = pad(r.pos, g.alignment)
    for name, ne, ty, off in infos:
        nb = tensor_nbytes(ty, ne)
        a = start + off
        if a + nb > len(buf):
            raise ValueError(f"{path}: tensor {name} runs past the end of the file")
        g.tensors.append(Tensor(name, ty, ne, buf[a : a + nb]))
    return g


def read_split(first: Path) -> GGUFFile:
    """Reads a single file, or a whole split set given its first file: metadata of the first file
    (split.* keys dropped), tensors of all files in order."""
    g = read(first)
    if "split.count" not in g.kv:
        return g
    n = int(g.kv["split.count"].value)
    name = first.name
    prefix = name[: -len("-00001-of-00000.gguf")]
    tensors = list(g.tensors)
    for i in range(1, n):
        part = read(first.with_name(f"{prefix}-{i + 1:05d}-of-{n:05d}.gguf"))
        tensors += part.tensors
    kv = {k: v for k, v in g.kv.items() if not k.startswith("split.")}
    return GGUFFile(kv, tensors)


def metadata_value(g: GGUFFile, key: str, default: Any = None) -> Any:
    kv = g.kv.get(key)
    return default if kv is None else kv.value
