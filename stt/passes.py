"""An uploaded file transcribed in pieces of about 30 s, one engine task per piece.

Why pieces: the engine pool runs tasks in the order they were queued. Were a file one task, an
11 s clip sent beside a 30-minute file would wait for all of it (tiny.en on 2 cores: about 2.2
engine seconds per minute of speech, so 63 s measured). As one task per piece, with the next
piece queued only once the last is done, every task queued meanwhile runs between two pieces: the
clip waits for one piece (1 to 2 s measured). The pieces also bound what a file holds while it is
transcribed (one piece of samples and the decoder, never the whole audio), and give a job whose
client has gone a place to stop. Transcribing in pieces costs no more engine time than one pass.

Whisper reads audio in 30 s windows, so pieces of at most that length cost no extra windows. A
piece ends at the quietest moment of its last 5 s, where a cut is least likely to split a word; a
file that ends less than 5 s after that is finished in the same piece (up to 35 s), so that no
scrap is left for a piece of its own. Each piece is transcribed with the request's options; a
language detected in the first piece holds for the rest, as whisper itself decides it from its
first window.
"""
from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .audio import SAMPLE_RATE, AudioError, AudioStream
from .engine import Transcript

PIECE_SECONDS = 30.0
# A piece ends at the quietest 100 ms within its last CUT_SEARCH_SECONDS.
CUT_SEARCH_SECONDS = 5.0
_FRAME = SAMPLE_RATE // 50  # 20 ms: the step at which a cut may fall
_QUIET_SPAN = 5  # frames averaged when looking for the quietest moment (100 ms)

# One engine pass: (samples, language or None to detect) -> transcript of those samples.
Transcribe = Callable[[np.ndarray, "str | None"], Transcript]


class FileTranscription:
    """One file's transcription, advanced by ``step`` one piece at a time.

    ``step`` and ``close`` may be called from different threads: ``step`` runs in an engine
    worker; ``close`` (from the request, when it ends or its client goes) releases the decoder at
    once, or after the piece being transcribed, and no further piece is started."""

    def __init__(self, source: bytes | str | Path, transcribe: Transcribe, *, max_seconds: float,
                 language: str | None = None, piece_seconds: float = PIECE_SECONDS):
        self._source: bytes | str | Path | None = source
        self._transcribe = transcribe
        self._max_seconds = max_seconds
        self._language = language
        self._piece_seconds = piece_seconds
        self._audio: AudioStream | None = None
        self._carry = np.zeros(0, dtype=np.float32)  # decoded past the last cut, not yet transcribed
        self._parts: list[tuple[float, Transcript]] = []  # (offset in seconds, transcript of a piece)
        self._offset = 0  # samples transcribed so far
        self._audio_ended = False
        self.done = False
        self._lock = threading.Lock()
        self._busy = False
        self._closed = False

    def step(self) -> bool:
        """Transcribes the next piece (in an engine worker); True once the file is done. Raises
        AudioError for a file that cannot be decoded, is too long, or holds no samples."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the transcription was closed")
            self._busy = True
        try:
            self._transcribe_next_piece()
            return self.done
        finally:
            with self._lock:
                self._busy = False
                if self._closed:
                    self._release()

    def result(self) -> Transcript:
        """The whole file's transcript, once ``step`` has said it is done."""
        if not self.done:
            raise RuntimeError("the transcription is not done")
        return joined(self._parts)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if not self._busy:
                self._release()

    def _transcribe_next_piece(self) -> None:
        if self._audio is None:
            self._audio = AudioStream(self._source, max_seconds=self._max_seconds)
            self._source = None
        piece = self._next_piece()
        if piece.size == 0:  # only a file's first piece can be empty: later ones hold what was carried
            raise AudioError("the file holds no audio samples")
        transcript = self._transcribe(piece, self._language)
        self._parts.append((self._offset / SAMPLE_RATE, transcript))
        self._offset += piece.size
        self._language = self._language or transcript.language
        self.done = self._audio_ended

    def _next_piece(self) -> np.ndarray:
        wanted = int(self._piece_seconds * SAMPLE_RATE)
        search = int(CUT_SEARCH_SECONDS * SAMPLE_RATE)
        # Read a search span past the piece: a file ending within it is finished in this piece
        # rather than leaving a scrap of a piece behind.
        fresh = self._audio.read((wanted + search - self._carry.size) / SAMPLE_RATE)
        audio = np.concatenate([self._carry, fresh]) if self._carry.size else fresh
        if audio.size < wanted + search:
            self._audio_ended, self._carry = True, np.zeros(0, dtype=np.float32)
            return audio
        cut = quietest_cut(audio[:wanted], search)
        self._carry = audio[cut:]
        return audio[:cut]

    def _release(self) -> None:
        if self._audio is not None:
            self._audio.close()
        self._audio, self._source, self._carry = None, None, np.zeros(0, dtype=np.float32)


def quietest_cut(audio: np.ndarray, search: int) -> int:
    """Where to end a piece: the middle of the quietest 100 ms within the last ``search`` samples."""
    start = max(0, audio.size - search)
    frames = (audio.size - start) // _FRAME
    if frames < _QUIET_SPAN:
        return audio.size
    region = audio[audio.size - frames * _FRAME:]
    energy = np.square(region.reshape(frames, _FRAME), dtype=np.float64).mean(axis=1)
    spans = np.convolve(energy, np.ones(_QUIET_SPAN), mode="valid")
    # Among equally quiet spans, the latest: the longest piece.
    quietest = spans.size - 1 - int(np.argmin(spans[::-1]))
    return audio.size - frames * _FRAME + (quietest + _QUIET_SPAN // 2) * _FRAME + _FRAME // 2


def joined(parts: list[tuple[float, Transcript]]) -> Transcript:
    """The transcripts of consecutive pieces as one, their times shifted by each piece's offset."""
    if len(parts) == 1:
        return parts[0][1]
    first = parts[0][1]
    return dataclasses.replace(
        first,
        text=" ".join(t.text for _, t in parts if t.text),
        duration=sum(t.duration for _, t in parts),
        inference_seconds=sum(t.inference_seconds for _, t in parts),
        segments=[_shifted(s, offset) for offset, t in parts for s in t.segments],
        words=[_shifted(w, offset) for offset, t in parts for w in t.words],
    )


def _shifted(item, offset: float):
    """A segment or word moved ``offset`` seconds later (untimed words stay untimed)."""
    if item.start is None:
        return item
    return dataclasses.replace(item, start=round(item.start + offset, 3), end=round(item.end + offset, 3))
