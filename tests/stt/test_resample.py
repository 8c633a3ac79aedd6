"""PcmStream: a client's PCM16 frames into 16 kHz float32, however the frames are cut."""
from __future__ import annotations

import numpy as np
import pytest
import soxr

from stt.resample import PcmStream


def tone(rate: int, seconds: float = 1.0, hz: float = 440.0) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def pcm16(samples: np.ndarray) -> bytes:
    return (samples * 32767).astype("<i2").tobytes()


def feed(stream: PcmStream, data: bytes, cuts: list[int]) -> np.ndarray:
    pieces, last = [], 0
    for cut in [*cuts, len(data)]:
        pieces.append(stream.push(data[last:cut]))
        last = cut
    pieces.append(stream.flush())
    return np.concatenate(pieces)


def test_16_khz_passes_through_sample_for_sample():
    data = pcm16(tone(16_000))
    out = feed(PcmStream(16_000), data, [1, 3201, 3202])  # odd cuts split samples in two
    assert np.array_equal(out, np.frombuffer(data, "<i2").astype(np.float32) / 32768.0)


@pytest.mark.parametrize("rate", [8_000, 44_100, 48_000])
def test_other_rates_give_the_same_samples_however_the_frames_are_cut(rate):
    data = pcm16(tone(rate))
    whole = feed(PcmStream(rate), data, [])
    rng = np.random.default_rng(rate)
    cuts = sorted(rng.choice(np.arange(1, len(data)), size=40, replace=False).tolist())
    assert np.allclose(feed(PcmStream(rate), data, cuts), whole, atol=1e-6)


@pytest.mark.parametrize("rate", [8_000, 44_100])
def test_other_rates_are_resampled_to_16_khz_as_one_pass_would(rate):
    samples = tone(rate)
    out = feed(PcmStream(rate), pcm16(samples), [len(samples)])  # two frames of half a second
    reference = soxr.resample(np.frombuffer(pcm16(samples), "<i2").astype(np.float32) / 32768.0, rate, 16_000,
                              quality="HQ")
    assert abs(out.size - 16_000) <= 1 and abs(out.size - reference.size) <= 1
    n = min(out.size, reference.size)
    assert np.max(np.abs(out[:n] - reference[:n])) < 1e-3
