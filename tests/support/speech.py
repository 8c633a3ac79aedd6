"""The speech fixtures and their text, audio made from them, and how transcripts are scored."""

from __future__ import annotations

import numpy as np

from stt.scoring import wer, words
from tests.support.servers import ROOT

__all__ = ["FIXTURES", "JFK", "MAX_WER", "fresh_transcriber", "jfk_at", "pcm16", "wer", "words"]

FIXTURES = ROOT / "tests" / "fixtures"

JFK = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."

# A live stream's passes fall wherever the clock puts them, so the model may mishear a word that a
# file transcription gets ("asked not"): two words of the 22 at most.
MAX_WER = 0.1


def pcm16(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


def jfk_at(rate: int) -> bytes:
    import soxr

    from stt.audio import decode
    samples = decode(FIXTURES / "jfk.wav")
    return pcm16(samples if rate == 16000 else soxr.resample(samples, 16000, rate))


def fresh_transcriber(model_path, *, n_threads: int = 1):
    """A freshly loaded engine on ``model_path`` (the ``converted_model`` fixture), for one test.
    whisper.cpp's output for a pass depends on the window size (audio_ctx) of the calls made before
    it on the same context, so an engine shared between tests would make each test's result depend
    on the tests that ran before it."""
    from stt.engine import Transcriber
    return Transcriber(model_path, n_threads=n_threads)
