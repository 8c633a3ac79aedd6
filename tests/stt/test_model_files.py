"""Which ggml file each model id is served from (STT_WEIGHTS), and how much of whisper's encoder
window a pass asks for."""
from __future__ import annotations

import numpy as np
import pytest

from core.settings import Settings
from stt.audio import SAMPLE_RATE
from stt.engine import fitted_audio_ctx
from stt.models import DEFAULT_WEIGHTS, available_models, check_weights, prepare


def test_the_default_weights_are_q8_0_in_a_file_of_their_own(tmp_path):
    assert DEFAULT_WEIGHTS == Settings().stt_weights == "q8_0"
    source = available_models(tmp_path)["svc-stt"]
    assert source.path == tmp_path / "models" / "ggml-tiny.en-q8_0.bin" and source.weights == "q8_0"


@pytest.mark.parametrize(("weights", "name"), [("f16", "ggml-tiny.en.bin"), ("f32", "ggml-tiny.en-f32.bin"),
                                                ("q5_1", "ggml-tiny.en-q5_1.bin")])
def test_each_weights_type_has_its_own_file_and_float16_keeps_the_old_name(tmp_path, weights, name):
    # A data directory converted before quantisation (float16) is used as it is when asked for.
    assert available_models(tmp_path, weights=weights)["svc-stt"].path.name == name


def test_a_model_path_is_used_as_it_is_whatever_the_weights(tmp_path):
    source = available_models(tmp_path, str(tmp_path / "mine.bin"), "q4_0")["svc-stt"]
    assert source.path == tmp_path / "mine.bin" and source.bundled is None


@pytest.mark.parametrize("weights", ["q3_k", "Q8_0", "", "int8"])
def test_weights_the_converter_cannot_write_are_refused_naming_the_setting(tmp_path, weights):
    with pytest.raises(ValueError, match=r"STT_WEIGHTS must be one of f32, f16, q8_0, q5_0, q5_1, q4_0"):
        available_models(tmp_path, weights=weights)
    assert not (tmp_path / "models").exists()


def test_the_setting_is_read_case_insensitively(monkeypatch):
    monkeypatch.setenv("STT_WEIGHTS", "F16")
    assert check_weights(Settings.from_env().stt_weights) == "f16"


def test_prepare_converts_to_the_asked_weights_once(tmp_path):
    source = available_models(tmp_path, weights="q8_0")["svc-stt"]
    path = prepare(source)
    header = path.read_bytes()[:48]
    assert int.from_bytes(header[44:48], "little") == 2007  # whisper.cpp's quantisation version 2, q8_0
    made = path.stat().st_mtime_ns
    assert prepare(source) == path and path.stat().st_mtime_ns == made


@pytest.mark.parametrize(("seconds", "ctx"), [(0, 500), (1, 500), (8.7, 500), (8.74, 501), (10, 564),
                                               (28.7, 1499), (28.72, 1500), (30, 1500), (600, 1500)])
def test_a_pass_encodes_the_audio_it_has_and_at_least_10_seconds(seconds, ctx):
    # 50 encoder positions a second plus 64 of margin, floored at 500 (the decoder loops on less)
    # and capped at whisper's 30 s window.
    assert fitted_audio_ctx(int(round(seconds * SAMPLE_RATE))) == ctx


@pytest.mark.parametrize(("name", "samples"), [
    ("silence", np.zeros(3 * SAMPLE_RATE, np.float32)),
    ("a low noise floor", (np.random.default_rng(0).standard_normal(3 * SAMPLE_RATE) * 0.003).astype(np.float32))])
def test_a_clip_without_sound_keeps_the_full_window_and_gives_no_words(converted_model, name, samples):
    # With a window fitted to 3 s of silence whisper says "you"; the full window hears nothing.
    from stt.engine import Transcriber
    assert Transcriber(converted_model).transcribe(samples).text == "", name
