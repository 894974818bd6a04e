"""Dequantization of the GGUF tensor types Maya reads, and the 8-bit activation quantizers that
llama.cpp's CPU dot products use, in NumPy.

Written from the block layouts (llama.cpp ggml/src/ggml-common.h) and the value formulas of
ggml-quants.c's dequantize_row_* functions (facts, no code copied). Two flavours:

- `dequantize(..., exact=True)` (float64): the exact value each block encodes. Every product
  below (f16 scale x 6- or 8-bit sub-scale x 4- to 8-bit quant) fits in a float64 mantissa, so
  these are the mathematical weights of the file. The float64 reference uses these.
- `dequantize(..., exact=False)` (float32): llama.cpp's to_float, operation by operation in f32
  (e.g. Q4_K: d1 = d*sc, m1 = dmin*m, y = d1*q - m1, each rounded to f32; Q6_K: (d*sc)*q). This
  is what `check_dequant` compares bit for bit with ggml's own dequantization.

Block layouts (bytes):
  Q4_0  (32 w, 18 B): f16 d | qs[16]: w[j] = lo(qs[j]), w[j+16] = hi(qs[j]);  d*(q-8)
  Q4_1  (32 w, 20 B): f16 d, f16 m | qs[16];                                   d*q + m
  Q5_0  (32 w, 22 B): f16 d | u32 qh (bit j = 5th bit of w[j]) | qs[16];        d*(q-16)
  Q5_1  (32 w, 24 B): f16 d, f16 m | u32 qh | qs[16];                          d*q + m
  Q8_0  (32 w, 34 B): f16 d | i8 qs[32];                                       d*q
  Q4_K (256 w, 144 B): f16 d, f16 dmin | scales[12] (8 x (6-bit scale, 6-bit min)) | qs[128]:
        4 chunks of 64 weights, chunk c uses qs[32c..32c+32): low nibbles = weights 0..31 of the
        chunk (sub-block 2c), high nibbles = weights 32..63 (sub-block 2c+1); d*sc*q - dmin*m
  Q5_K (256 w, 176 B): as Q4_K plus qh[32] between scales and qs: bit (2c) of qh[l] is the 5th
        bit of weight l of sub-block 2c, bit (2c+1) that of sub-block 2c+1
  Q6_K (256 w, 210 B): ql[128] | qh[64] | i8 scales[16] | f16 d; 2 halves of 128 weights, half h
        uses ql[64h..64h+64), qh[32h..32h+32), scales[8h..8h+8): for l < 32,
        w[l]    = lo(ql[l])    | ((qh[l] >> 0) & 3) << 4,   w[l+32] = lo(ql[l+32]) | ((qh[l] >> 2) & 3) << 4,
        w[l+64] = hi(ql[l])    | ((qh[l] >> 4) & 3) << 4,   w[l+96] = hi(ql[l+32]) | ((qh[l] >> 6) & 3) << 4,
        each minus 32, times d * scales[l/16 + 2*k] for the k-th of those four groups
  Scale/min unpacking of Q4_K/Q5_K (sub-block j of 8): j < 4: sc = s[j] & 63, m = s[j+4] & 63;
        else sc = (s[j+4] & 15) | (s[j-4] >> 6) << 4, m = (s[j+4] >> 4) | (s[j] >> 6) << 4.
"""

from __future__ import annotations

import numpy as np

from gguf_io import GGML_TYPES, TYPE_ID

F32, F16, BF16 = TYPE_ID["F32"], TYPE_ID["F16"], TYPE_ID["BF16"]


def _f16(b: np.ndarray) -> np.ndarray:
    """(n, 2) uint8 -> f16 values as float64 (exact)."""
    return np.ascontiguousarray(b).view("<f2")[:, 0].astype(np.float64)


def _blocks(data: bytes, block_bytes: int) -> np.ndarray:
    a = np.frombuffer(data, dtype=np.uint8)
    return a.reshape(-1, block_bytes)


def _scale_min_k4(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s: (n, 12) uint8 -> (sc, m), each (n, 8) int."""
    s = s.astype(np.int64)
    sc = np.empty((s.shape[0], 8), dtype=np.int64)
    m = np.empty_like(sc)
    for j in range(8):
        if j < 4:
            sc[:, j] = s[:, j] & 63
            m[:, j] = s[:, j + 4] & 63
        else:
            sc[:, j] = (s[:, j + 4] & 0xF) | ((s[:, j - 4] >> 6) << 4)
            m[:, j] = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
    return sc, m


def _nibbles32(qs: np.ndarray) -> np.ndarray:
    """(n, 16) bytes -> (n, 32) ints: low nibbles then high nibbles."""
    q = qs.astype(np.int64)
    return np.concatenate([q & 0xF, q >> 4], axis=1)


def _qh_bits32(qh4: np.ndarray) -> np.ndarray:
    """(n, 4) bytes of a little-endian u32 -> (n, 32) bits (bit j of the u32)."""
    u = qh4.astype(np.uint32)
    word = u[:, 0] | (u[:, 1] << 8) | (u[:, 2] << 16) | (u[:, 3] << 24)
    return ((word[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.int64)


def _k4_quants(qs: np.ndarray) -> np.ndarray:
    """Q4_K/Q5_K qs (n, 128) -> (n, 8, 32) low-4-bit quants per sub-block."""
    q = qs.astype(np.int64).reshape(-1, 4, 32)
    out = np.empty((q.shape[0], 8, 32), dtype=np.int64)
    out[:, 0::2] = q & 0xF
    out[:, 1::2] = q >> 4
    return out


def _q6k_quants(ql: np.ndarray, qh: np.ndarray) -> np.ndarray:
    """ql (n, 128), qh (n, 64) -> (n, 16, 16) signed quants (q - 32) per 16-weight group."""
    n = ql.shape[0]
    ql = ql.astype(np.int64).reshape(n, 2, 64)
    qh = qh.astype(np.int64).reshape(n, 2, 32)
    w = np.empty((n, 2, 128), dtype=np.int64)
    lo0, lo1 = ql[:, :, :32], ql[:, :, 32:]
    w[:, :, 0:32] = (lo0 & 0xF) | (((qh >> 0) & 3) << 4)
    w[:, :, 32:64] = (lo1 & 0xF) | (((qh >> 2) & 3) << 4)
    w[:, :, 64:96] = (lo0 >> 4) | (((qh >> 4) & 3) << 4)
    w[:, :, 96:128] = (lo1 >> 4) | (((qh >> 6) & 3) << 4)
    return (w - 32).reshape(n, 16, 16)


def dequantize(ggml_type: int, data: bytes, ne: list[int], exact: bool = True) -> np.ndarray:
    """The tensor as an array of shape reversed(ne) (PyTorch order): float64 exact, or float32
    computed as llama.cpp's to_float does."""
    name, blk, size = GGML_TYPES[ggml_type]
    shape = tuple(reversed(ne))
    if name == "F32":
        out = np.frombuffer(data, dtype="<f4")
    elif name == "F16":
        out = np.frombuffer(data, dtype="<f2").astype(np.float32)
    elif name == "BF16":
        out = (np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        b = _blocks(data, size)
        out = _dequant_blocks(name, b, exact)
    if exact:
        return np.asarray(out, dtype=np.float64).reshape(shape)
    return np.asarray(out, dtype=np.float32).reshape(shape)


def _dequant_blocks(name: str, b: np.ndarray, exact: bool) -> np.ndarray:
    ft = np.float64 if exact else np.float32

    def c(x):  # cast to the working float type
        return np.asarray(x, dtype=ft)

    if name in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"):
        d = c(_f16(b[:, 0:2]))[:, None]
        if name == "Q8_0":
            q = b[:, 2:34].view(np.int8).astype(np.int64)
            return (c(q) * d).ravel()
        if name == "Q4_0":
            return (c(_nibbles32(b[:, 2:18]) - 8) * d).ravel()
        if name == "Q5_0":
            q = _nibbles32(b[:, 6:22]) | (_qh_bits32(b[:, 2:6]) << 4)
            return (c(q - 16) * d).ravel()
        m = c(_f16(b[:, 2:4]))[:, None]
        if name == "Q4_1":
            q = _nibbles32(b[:, 4:20])
        else:
            q = _nibbles32(b[:, 8:24]) | (_qh_bits32(b[:, 4:8]) << 4)
        return (c(q) * d + m).ravel()
    if name in ("Q4_K", "Q5_K"):
        d = c(_f16(b[:, 0:2]))[:, None]
        dmin = c(_f16(b[:, 2:4]))[:, None]
        sc, m = _scale_min_k4(b[:, 4:16])
        if name == "Q4_K":
            q = _k4_quants(b[:, 16:144])
        else:
            qh = b[:, 16:48].astype(np.int64)  # (n, 32)
            q = _k4_quants(b[:, 48:176])
            for j in range(8):
                q[:, j, :] |= ((qh >> j) & 1) << 4
        d1 = (d * c(sc))[:, :, None]  # f32: d*sc rounded (exact anyway)
        m1 = (dmin * c(m))[:, :, None]
        return (d1 * c(q) - m1).ravel()
    if name == "Q6_K":
        q = _q6k_quants(b[:, 0:128], b[:, 128:192])  # (n, 16, 16)
        sc = b[:, 192:208].view(np.int8).astype(np.int64)  # (n, 16)
        d = c(_f16(b[:, 208:210]))[:, None]
        # group g of 16 (0..15) = half h (g // 8), within it l/16 + 2k ordering: the 16-weight
        # groups in weight order are exactly scales[0..15] in order (w index 16g..16g+16 uses
        # scales[g]): w[l + 32k] of half h uses scales[8h + l//16 + 2k], and l + 32k = 16(2k + l//16) + l%16.
        dsc = (d * c(sc))[:, :, None]
        return (dsc * c(q)).ravel()
    raise ValueError(f"cannot dequantize {name}")


# ----------------------------------------------------------------------------------------------
# 8-bit activation quantization as llama.cpp's CPU matmuls do it (for the bound and for the
# activation-quantized variant of the reference)

# the activation format ggml-cpu converts src1 to for each weight type (type_traits_cpu vec_dot_type)
VEC_DOT_TYPE = {
    "Q4_0": "Q8_0",
    "Q5_0": "Q8_0",
    "Q8_0": "Q8_0",
    "Q4_1": "Q8_1",
    "Q5_1": "Q8_1",
    "Q4_K": "Q8_K",
    "Q5_K": "Q8_K",
    "Q6_K": "Q8_K",
    "F32": "F32",
    "F16": "F16",
    "BF16": "BF16",
}


def f32_to_f16_f64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float64)


def quantize_act_q8_0(x: np.ndarray) -> np.ndarray:
    """x (..., K) -> the values a Q8_0 / Q8_1 block holds: per 32, d = amax/127 (f32), q =
    round-half-away(x * (1/d)) in f32, stored d rounded to f16; returns f16(d) * q (float64).
    (quantize_row_q8_0_ref / q8_1_ref.)"""
    x32 = np.asarray(x, dtype=np.float32)
    shp = x32.shape
    b = x32.reshape(-1, 32)
    amax = np.abs(b).max(axis=1, keepdims=True)
    d = amax / np.float32(127)
    with np.errstate(divide="ignore"):
        idd = np.where(d != 0, np.float32(1) / np.where(d != 0, d, 1), np.float32(0)).astype(np.float32)
    v = (b * idd).astype(np.float32).astype(np.float64)
    q = np.sign(v) * np.floor(np.abs(v) + 0.5)  # roundf: half away from zero
    return (q.astype(np.float64) * f32_to_f16_f64(d)).reshape(shp)


def quantize_act_q8_k(x: np.ndarray) -> np.ndarray:
    """x (..., K) -> the values a Q8_K block holds: per 256, max = the element of largest |x|,
    iscale = -127/max (f32), q = min(127, nearest(iscale*x)), d = 1/iscale (f32); returns d*q.
    (quantize_row_q8_K_ref; nearest_int rounds half to even.)"""
    x32 = np.asarray(x, dtype=np.float32)
    shp = x32.shape
    b = x32.reshape(-1, 256)
    idx = np.abs(b).argmax(axis=1)
    mx = b[np.arange(b.shape[0]), idx][:, None]
    zero = mx == 0
    iscale = np.where(zero, np.float32(0), np.float32(-127) / np.where(zero, 1, mx)).astype(np.float32)
    q = np.minimum(127, np.rint((iscale * b).astype(np.float32)))
    d = np.where(zero, np.float32(0), np.float32(1) / np.where(zero, 1, iscale)).astype(np.float32)
    return (q.astype(np.float64) * d.astype(np.float64)).reshape(shp)


def quantize_activation(x: np.ndarray, weight_type: str) -> np.ndarray:
    """The activation values a llama.cpp CPU matmul against a `weight_type` matrix multiplies.
    F32/F16/BF16 weights: unchanged (Maya computes those in f32)."""
    vt = VEC_DOT_TYPE[weight_type]
    if vt in ("Q8_0", "Q8_1"):
        return quantize_act_q8_0(x)
    if vt == "Q8_K":
        return quantize_act_q8_k(x)
    return np.asarray(x, dtype=np.float64)
