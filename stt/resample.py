"""PCM16 frames from a client into 16 kHz float32 samples, across frame boundaries."""
from __future__ import annotations

import numpy as np
import soxr

from .audio import SAMPLE_RATE

MIN_RATE, MAX_RATE = 8_000, 48_000


class PcmStream:
    """Turns a stream of little-endian 16-bit mono frames at ``rate`` into 16 kHz float32.

    A frame may end in the middle of a sample; the odd byte is kept for the next frame. The
    resampler is stateful (soxr's streaming mode), so chunk edges leave no clicks or gaps.
    """

    def __init__(self, rate: int):
        self.rate = rate
        self._carry = b""
        self._resampler = None if rate == SAMPLE_RATE else soxr.ResampleStream(rate, SAMPLE_RATE, 1, dtype="float32", quality="HQ")

    def push(self, data: bytes) -> np.ndarray:
        data = self._carry + data
        usable = len(data) - len(data) % 2
        self._carry = data[usable:]
        samples = np.frombuffer(data[:usable], dtype="<i2").astype(np.float32) / 32768.0
        if self._resampler is None:
            return samples
        return self._resampler.resample_chunk(samples, last=False)

    def flush(self) -> np.ndarray:
        if self._resampler is None:
            return np.zeros(0, dtype=np.float32)
        return self._resampler.resample_chunk(np.zeros(0, dtype=np.float32), last=True)
