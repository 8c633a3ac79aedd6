"""Audio decoding: any supported container and codec into 16 kHz mono float32 samples, in process.

PyAV's wheels carry the FFmpeg libraries, so ``pip install`` alone is enough; no ffmpeg binary on
the host, no subprocess per request.

A small, highly compressed file can hold hours of audio (three hours of Opus silence fit in
2.5 MB), and every second of it is 64 kB of samples. So ``AudioStream`` decodes a file piece by
piece under a limit on its length: a file whose container states a duration over the limit (or,
stating none, whose packets run past it) is refused before anything is decoded, and decoding
stops as soon as the audio passes the limit. Nothing holds more samples than the piece asked for.
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
_DEMUXERS_ALL = set().union(*_DEMUXERS.values())
# decode()'s limit when the caller names none: bounds what a file given to the library can claim.
MAX_SECONDS = 2 * 60 * 60
# How far a container's stated duration may exceed the limit before it is refused unread.
_STATED_SLACK_S = 1.0


class AudioError(ValueError):
    """The input is not audio this server can decode; the message says why."""


class UnsupportedFormat(AudioError):
    """The file is a container of a format this server does not take."""


class AudioTooLong(AudioError):
    """The audio lasts longer than the limit; ``seconds`` is its length where the container states it."""

    def __init__(self, limit: float, seconds: float | None = None):
        self.limit, self.seconds = limit, seconds
        if seconds is None:
            super().__init__(f"it lasts longer than the limit of {describe_seconds(limit)}")
        else:
            super().__init__(f"it lasts {describe_seconds(seconds)}; the limit is {describe_seconds(limit)}")


def describe_seconds(seconds: float) -> str:
    """A length as people read it: "30 minutes (1800 s)", "1 minute (60 s)", "45 s"."""
    exact = f"{round(seconds, 1):g} s"
    if seconds < 60:
        return exact
    minutes = f"{round(seconds / 60, 1):g}"
    return f"{minutes} {'minute' if minutes == '1' else 'minutes'} ({exact})"


class AudioStream:
    """A file decoded piece by piece into 16 kHz mono float32 in [-1, 1], never past ``max_seconds``.

    Opening decodes nothing: an unsupported format, a file without audio, and a duration over the
    limit (from the header, else from the packets' timestamps) are refused there. ``read`` then
    decodes just what the piece asked for needs. Not thread-safe: one caller at a time. Close it
    (or use ``with``) to release the decoder."""

    def __init__(self, source: bytes | str | Path, *, max_seconds: float):
        self.max_seconds = max_seconds
        self.samples_read = 0  # decoded so far
        self._limit = int(max_seconds * SAMPLE_RATE)
        self._pending: list[np.ndarray] = []  # decoded but not yet handed out
        self._pending_size = 0
        self._ended = False
        self._container = _open(source)
        try:
            stream = self._audio_stream()
            self._refuse_duration_over_limit(source, stream)
            self._frames = self._container.decode(stream)
            self._resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        except BaseException:
            self.close()
            raise

    def read(self, seconds: float) -> np.ndarray:
        """The next ``seconds`` of audio: fewer samples once the file ends, none after it."""
        wanted = int(seconds * SAMPLE_RATE)
        while self._pending_size < wanted and not self._ended:
            self._decode_more()
        pending = np.concatenate(self._pending) if self._pending else np.zeros(0, dtype=np.float32)
        piece, rest = pending[:wanted], pending[wanted:]
        self._pending, self._pending_size = ([rest] if rest.size else []), rest.size
        return piece

    def close(self) -> None:
        self._pending, self._pending_size = [], 0
        self._container.close()  # PyAV: a second close is a no-op

    def __enter__(self) -> AudioStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _audio_stream(self):
        if not _DEMUXERS_ALL & set(self._container.format.name.split(",")):
            raise UnsupportedFormat(f"the file's format ({self._container.format.name}) is not one of: "
                                    f"{', '.join(SUPPORTED_FORMATS)}")
        if not self._container.streams.audio:
            raise AudioError("the file has no audio stream")
        return self._container.streams.audio[0]

    def _refuse_duration_over_limit(self, source: bytes | str | Path, stream) -> None:
        """Refuses, before anything is decoded, a file whose container says it is over the limit.

        FFmpeg's duration is the header's where there is one (WAV, FLAC, MP4, Matroska, Ogg's last
        page); a WebM file recorded live has none, and then the packets' timestamps tell (reading
        them holds no samples and takes a third of the time decoding would: 0.45 s for 40 minutes
        of Opus, against minutes of transcribing before decoding reached the limit). Either may
        run a little over what decodes
        (Ogg/Opus counts its 6.5 ms pre-skip), so only a length clearly over the limit is refused
        here; decoding enforces the limit to the sample."""
        allowed = self.max_seconds + _STATED_SLACK_S
        if self._container.duration is not None:
            stated = self._container.duration / av.time_base
            if stated > allowed:
                raise AudioTooLong(self.max_seconds, stated)
        elif _packets_reach(source, stream.index, allowed):
            raise AudioTooLong(self.max_seconds)

    def _decode_more(self) -> None:
        try:
            frame = next(self._frames, None)
            # No frame left: flush what the resampler still holds.
            converted = self._resampler.resample(frame)
        except (av.FFmpegError, ValueError) as exc:
            raise AudioError(f"decoding stopped part way ({_reason(exc)})") from None
        self._ended = frame is None
        for out in converted:
            samples = np.clip(out.to_ndarray().reshape(-1), -1.0, 1.0)
            self._pending.append(samples)
            self._pending_size += samples.size
            self.samples_read += samples.size
        if self.samples_read > self._limit:
            raise AudioTooLong(self.max_seconds)


def decode(source: bytes | str | Path, *, max_seconds: float = MAX_SECONDS) -> np.ndarray:
    """Decode ``source`` (bytes or a path) to mono float32 samples at 16 kHz in [-1, 1]."""
    with AudioStream(source, max_seconds=max_seconds) as audio:
        pieces = []
        while (piece := audio.read(60)).size:
            pieces.append(piece)
    samples = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
    if samples.size == 0:
        raise AudioError("the file holds no audio samples")
    return samples


def format_of(filename: str | None) -> str | None:
    """The supported format an upload's file name claims, or None."""
    suffix = Path(filename or "").suffix.lower().lstrip(".")
    return suffix if suffix in SUPPORTED_FORMATS else None


def _packets_reach(source: bytes | str | Path, stream_index: int, seconds: float) -> bool:
    """Whether the timestamps of a stream's packets run past ``seconds``; reads packets, decodes none."""
    with _open(source) as container:
        stream = container.streams[stream_index]
        try:
            for packet in container.demux(stream):
                if packet.pts is not None and (packet.pts + (packet.duration or 0)) * stream.time_base > seconds:
                    return True
        except (av.FFmpegError, ValueError):
            pass  # a damaged file: decoding will say so
    return False


def _open(source: bytes | str | Path):
    try:
        return av.open(io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else str(source),
                       mode="r", metadata_errors="ignore")
    except (av.FFmpegError, ValueError, OSError) as exc:
        raise AudioError(f"the file could not be read as audio ({_reason(exc)})") from None


def _reason(exc: Exception) -> str:
    return str(getattr(exc, "strerror", None) or exc).split(":")[-1].strip() or type(exc).__name__
