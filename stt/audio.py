"""Audio decoding: any supported container and codec into 16 kHz mono float32 samples, in process.

PyAV's wheels carry the FFmpeg libraries, so ``pip install`` alone is enough; no ffmpeg binary on
the host, no subprocess per request.
"""
from __future__ import annotations

import io
from pathlib import Path

import av
import numpy as np

SAMPLE_RATE = 16_000
SUPPORTED_FORMATS = ("wav", "mp3", "flac", "ogg", "m4a", "webm")

# FFmpeg's demuxer names for what each upload format may be; "mov" also covers m4a/mp4.
_DEMUXERS = {
    "wav": {"wav"}, "mp3": {"mp3"}, "flac": {"flac"}, "ogg": {"ogg"},
    "m4a": {"mov", "mp4", "m4a", "3gp", "3g2", "mj2"}, "webm": {"matroska", "webm"},
}
# Seconds of audio decoded at most: bounds the memory a small, highly compressed file can claim.
MAX_SECONDS = 2 * 60 * 60


class AudioError(ValueError):
    """The input is not audio this server can decode; the message says why."""


def decode(source: bytes | str | Path, *, max_seconds: float = MAX_SECONDS) -> np.ndarray:
    """Decode ``source`` (bytes or a path) to mono float32 samples at 16 kHz in [-1, 1]."""
    try:
        container = av.open(io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else str(source),
                            mode="r", metadata_errors="ignore")
    except (av.FFmpegError, ValueError, OSError) as exc:
        raise AudioError(f"the file could not be read as audio ({_reason(exc)})") from None
    with container:
        if not _DEMUXERS_ALL & set(container.format.name.split(",")):
            raise AudioError(f"the file's format ({container.format.name}) is not one of: {', '.join(SUPPORTED_FORMATS)}")
        if not container.streams.audio:
            raise AudioError("the file has no audio stream")
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        chunks, total, limit = [], 0, int(max_seconds * SAMPLE_RATE)
        try:
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    chunks.append(out.to_ndarray().reshape(-1))
                    total += chunks[-1].size
                if total > limit:
                    raise AudioError(f"the audio is longer than {max_seconds / 60:.0f} minutes")
            for out in resampler.resample(None):
                chunks.append(out.to_ndarray().reshape(-1))
        except (av.FFmpegError, ValueError) as exc:
            raise AudioError(f"the audio could not be decoded ({_reason(exc)})") from None
    samples = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
    if samples.size == 0:
        raise AudioError("the file holds no audio samples")
    return np.clip(samples, -1.0, 1.0).astype(np.float32, copy=False)


def format_of(filename: str | None) -> str | None:
    """The supported format an upload's file name claims, or None."""
    suffix = Path(filename or "").suffix.lower().lstrip(".")
    return suffix if suffix in SUPPORTED_FORMATS else None


_DEMUXERS_ALL = set().union(*_DEMUXERS.values())


def _reason(exc: Exception) -> str:
    return str(getattr(exc, "strerror", None) or exc).split(":")[-1].strip() or type(exc).__name__
