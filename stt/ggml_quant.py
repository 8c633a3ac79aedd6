"""ggml's block quantisations of a weight matrix, with numpy alone, byte for byte as ggml lays them out.

whisper.cpp multiplies quantised matrices without widening them first, so a quantised model is smaller
and, on a CPU whose memory bandwidth bounds the decoder, faster. Each row is cut into blocks of 32
values; a block keeps one float16 scale (and for the ``_1`` types a float16 minimum) and 32 small
integers:

* ``q8_0``: d = max|x| / 127, q = round(x / d) as int8. 34 bytes a block.
* ``q5_0``: d = m / -16 where m is the value of largest magnitude, q = x / d + 16 (0..31); the low four
  bits of q[j] and q[j + 16] share byte j, the fifth bits go into a 32-bit mask. 22 bytes.
* ``q5_1``: d = (max - min) / 31, q = (x - min) / d (0..31), laid out as q5_0 after d and min. 24 bytes.
* ``q4_0``: d = m / -8, q = x / d + 8 (0..15), two to a byte. 18 bytes.

The rounding follows ggml's reference quantisers (``quantize_row_*_ref``): round half away from zero
for q8_0, a truncating cast after adding the offset and one half for the others. ``dequantize`` is
the inverse, for checks.

Which tensors are quantised is whisper.cpp's rule (its ``quantize`` tool): the 2-D matrices, not the
convolution kernels (3-D, kept float16), the biases and norms (1-D, float32) nor the positional
embeddings (float32), which whisper.cpp allocates with fixed types.
"""
from __future__ import annotations

import numpy as np

QK = 32  # values per block

# name → (ggml_type id of a tensor, whisper.cpp's ftype of the file, bytes per block)
TYPES: dict[str, tuple[int, int, int]] = {
    "q8_0": (8, 7, 34),
    "q5_0": (6, 8, 22),
    "q5_1": (7, 9, 24),
    "q4_0": (2, 2, 18),
}
# whisper.cpp reads a quantised file's ftype as QNT_VERSION * 1000 + ftype (ggml's GGML_QNT_VERSION 2).
QNT_VERSION_FACTOR = 1000
QNT_VERSION = 2


def quantise(matrix: np.ndarray, kind: str) -> bytes:
    """The ggml encoding of ``matrix`` (rows of a multiple of 32 values) as ``kind``."""
    x = np.ascontiguousarray(matrix, dtype=np.float32)
    if x.shape[-1] % QK:
        raise ValueError(f"rows of {x.shape[-1]} values do not split into blocks of {QK}")
    blocks = x.reshape(-1, QK)
    return _QUANTISERS[kind](blocks).tobytes()


def dequantise(data: bytes, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    """The float32 values that ``data`` (``kind`` blocks) stands for, in ``shape``."""
    return _DEQUANTISERS[kind](data).reshape(shape)


def _round_away(values: np.ndarray) -> np.ndarray:
    # C's roundf: halves go away from zero (numpy's round goes to even).
    return np.trunc(values + np.copysign(np.float32(0.5), values))


def _inverse(d: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)


def _signed_extreme(blocks: np.ndarray) -> np.ndarray:
    """Per block, the value of largest magnitude, with its sign (the first such on a tie)."""
    index = np.argmax(np.abs(blocks), axis=1)
    return blocks[np.arange(blocks.shape[0]), index][:, None]


def _q8_0(blocks: np.ndarray) -> np.ndarray:
    d = (np.abs(blocks).max(axis=1, keepdims=True) / np.float32(127)).astype(np.float32)
    q = _round_away(blocks * _inverse(d)).astype(np.int8)
    out = np.empty(blocks.shape[0], dtype=[("d", "<f2"), ("qs", "i1", QK)])
    out["d"], out["qs"] = d[:, 0], q
    return out


def _fifth_bits(q: np.ndarray) -> np.ndarray:
    """The 32-bit little-endian mask whose bit j is bit 4 of q[j]."""
    bits = ((q >> 4) & 1).astype(np.uint32)
    return (bits << np.arange(QK, dtype=np.uint32)).sum(axis=1, dtype=np.uint32)


def _nibbles(q: np.ndarray) -> np.ndarray:
    """Byte j: the low four bits of q[j], and of q[j + 16] above them."""
    half = QK // 2
    return ((q[:, :half] & 0x0F) | ((q[:, half:] & 0x0F) << 4)).astype(np.uint8)


def _q5_0(blocks: np.ndarray) -> np.ndarray:
    d = (_signed_extreme(blocks) / np.float32(-16)).astype(np.float32)
    q = np.minimum(31, np.trunc(blocks * _inverse(d) + np.float32(16.5))).astype(np.int32)
    out = np.empty(blocks.shape[0], dtype=[("d", "<f2"), ("qh", "<u4"), ("qs", "u1", QK // 2)])
    out["d"], out["qh"], out["qs"] = d[:, 0], _fifth_bits(q), _nibbles(q)
    return out


def _q5_1(blocks: np.ndarray) -> np.ndarray:
    low = blocks.min(axis=1, keepdims=True)
    d = ((blocks.max(axis=1, keepdims=True) - low) / np.float32(31)).astype(np.float32)
    q = np.trunc((blocks - low) * _inverse(d) + np.float32(0.5)).astype(np.int32)
    out = np.empty(blocks.shape[0], dtype=[("d", "<f2"), ("m", "<f2"), ("qh", "<u4"), ("qs", "u1", QK // 2)])
    out["d"], out["m"], out["qh"], out["qs"] = d[:, 0], low[:, 0], _fifth_bits(q), _nibbles(q)
    return out


def _q4_0(blocks: np.ndarray) -> np.ndarray:
    d = (_signed_extreme(blocks) / np.float32(-8)).astype(np.float32)
    q = np.minimum(15, np.trunc(blocks * _inverse(d) + np.float32(8.5))).astype(np.int32)
    out = np.empty(blocks.shape[0], dtype=[("d", "<f2"), ("qs", "u1", QK // 2)])
    out["d"], out["qs"] = d[:, 0], _nibbles(q)
    return out


_QUANTISERS = {"q8_0": _q8_0, "q5_0": _q5_0, "q5_1": _q5_1, "q4_0": _q4_0}


def _unpack_nibbles(qs: np.ndarray) -> np.ndarray:
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int32)


def _unpack_fifth(qh: np.ndarray) -> np.ndarray:
    return ((qh[:, None] >> np.arange(QK, dtype=np.uint32)) & 1).astype(np.int32) << 4


def _dq8_0(data: bytes) -> np.ndarray:
    b = np.frombuffer(data, dtype=[("d", "<f2"), ("qs", "i1", QK)])
    return b["d"].astype(np.float32)[:, None] * b["qs"].astype(np.float32)


def _dq5_0(data: bytes) -> np.ndarray:
    b = np.frombuffer(data, dtype=[("d", "<f2"), ("qh", "<u4"), ("qs", "u1", QK // 2)])
    q = _unpack_nibbles(b["qs"]) | _unpack_fifth(b["qh"])
    return b["d"].astype(np.float32)[:, None] * (q - 16).astype(np.float32)


def _dq5_1(data: bytes) -> np.ndarray:
    b = np.frombuffer(data, dtype=[("d", "<f2"), ("m", "<f2"), ("qh", "<u4"), ("qs", "u1", QK // 2)])
    q = _unpack_nibbles(b["qs"]) | _unpack_fifth(b["qh"])
    return b["d"].astype(np.float32)[:, None] * q.astype(np.float32) + b["m"].astype(np.float32)[:, None]


def _dq4_0(data: bytes) -> np.ndarray:
    b = np.frombuffer(data, dtype=[("d", "<f2"), ("qs", "u1", QK // 2)])
    return b["d"].astype(np.float32)[:, None] * (_unpack_nibbles(b["qs"]) - 8).astype(np.float32)


_DEQUANTISERS = {"q8_0": _dq8_0, "q5_0": _dq5_0, "q5_1": _dq5_1, "q4_0": _dq4_0}
