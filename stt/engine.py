"""The speech engine: whisper.cpp through pywhispercpp, loaded once, shared by threads.

A whisper.cpp context runs one pass at a time, so a Transcriber holds one or more loaded
contexts and lends each to one caller at a time. Every keyword given to pywhispercpp's
``transcribe`` stays set on that context, so every call sets all of the decoding parameters.
"""
from __future__ import annotations

import math
import queue
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import _pywhispercpp as pw
import numpy as np
from pywhispercpp.model import Model

from .audio import SAMPLE_RATE, decode
from .languages import NAMES, code_of


@dataclass(frozen=True)
class Word:
    word: str
    confidence: float  # mean probability of the word's tokens, in [0, 1]
    # Seconds from the start of the audio; only with Options(token_timestamps=True), else None.
    start: float | None = None
    end: float | None = None


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str
    no_speech_prob: float = 0.0


@dataclass(frozen=True)
class Transcript:
    text: str
    language: str  # the language's name, e.g. "english"
    duration: float  # seconds of audio
    words: list[Word] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    inference_seconds: float = 0.0


@dataclass(frozen=True)
class Options:
    """Decoding parameters of one pass; see Transcriber.transcribe."""
    language: str | None = None
    prompt: str = ""
    temperature: float = 0.0
    temperature_inc: float = 0.2
    audio_ctx: int = 0
    max_tokens: int = 0
    single_segment: bool = False
    no_speech_thold: float = 0.6
    token_timestamps: bool = False


class Transcriber:
    """Speech to text on a ggml whisper model, usable without any server::

        t = Transcriber("data/models/ggml-tiny.en.bin", n_threads=2)
        result = t.transcribe("meeting.mp3")
        print(result.text, result.language, [(w.word, w.confidence) for w in result.words])

    ``instances`` contexts are loaded (about 150 MB each for tiny.en) so that as many calls run
    at once; further callers wait for a free one.
    """

    def __init__(self, model_path: str | Path, *, n_threads: int = 2, instances: int = 1):
        path = Path(model_path)
        if not path.is_file():
            # pywhispercpp would take an unknown path for a model name and try to download it.
            raise FileNotFoundError(f"no ggml model file at {path}")
        self.model_path = path
        self.n_threads = n_threads
        self._idle: queue.Queue[Model] = queue.Queue()
        self._models = [Model(str(path), n_threads=n_threads, print_progress=False, print_realtime=False,
                              redirect_whispercpp_logs_to=None) for _ in range(instances)]
        for model in self._models:
            self._idle.put(model)
        self.multilingual = bool(pw.whisper_is_multilingual(self._models[0]._ctx)) \
            if hasattr(pw, "whisper_is_multilingual") else not path.name.endswith(".en.bin")
        self._eot = pw.whisper_token_eot(self._models[0]._ctx)

    @property
    def instances(self) -> int:
        return len(self._models)

    def transcribe(self, audio: str | Path | bytes | np.ndarray, *, language: str | None = None,
                   prompt: str | None = None, temperature: float = 0.0, words: bool = True,
                   options: Options | None = None) -> Transcript:
        """Transcribe a file path, encoded bytes, or 16 kHz mono float32 samples.

        ``language`` is a code or name ("de", "german"); None detects it (multilingual models) or
        takes English (``.en`` models). ``prompt`` conditions the decoder on preceding text.
        ``temperature`` 0 decodes greedily, falling back to higher temperatures on failure.
        """
        samples = audio if isinstance(audio, np.ndarray) else decode(audio if isinstance(audio, bytes) else Path(audio))
        options = options or Options(language=language, prompt=prompt or "", temperature=temperature,
                                     temperature_inc=0.2 if temperature == 0 else 0.0)
        with self._context() as model:
            started = time.perf_counter()
            model.transcribe(samples, **self._params(options))
            elapsed = time.perf_counter() - started
            return self._read_result(model, samples.size / SAMPLE_RATE, elapsed, words, options.token_timestamps)

    @contextmanager
    def _context(self):
        model = self._idle.get()
        try:
            yield model
        finally:
            self._idle.put(model)

    def _params(self, o: Options) -> dict:
        if self.multilingual:
            code = code_of(o.language) if o.language else "auto"
        else:
            code = "en"
        return dict(
            language=code or "auto", initial_prompt=o.prompt, temperature=float(o.temperature),
            temperature_inc=float(o.temperature_inc), audio_ctx=int(o.audio_ctx), max_tokens=int(o.max_tokens),
            single_segment=o.single_segment, no_speech_thold=float(o.no_speech_thold), translate=False,
            no_context=True, suppress_blank=True, token_timestamps=o.token_timestamps, print_progress=False,
            print_realtime=False, print_timestamps=False, n_threads=self.n_threads,
        )

    def _read_result(self, model: Model, duration: float, elapsed: float, want_words: bool,
                     timed: bool) -> Transcript:
        ctx = model._ctx
        segments, words = [], []
        for i in range(pw.whisper_full_n_segments(ctx)):
            text = pw.whisper_full_get_segment_text(ctx, i).decode("utf-8", errors="replace")
            no_speech = pw.whisper_full_get_segment_no_speech_prob(ctx, i) \
                if hasattr(pw, "whisper_full_get_segment_no_speech_prob") else 0.0
            segments.append(Segment(pw.whisper_full_get_segment_t0(ctx, i) / 100,
                                    pw.whisper_full_get_segment_t1(ctx, i) / 100, text.strip(), no_speech))
            if want_words:
                words.extend(self._words(ctx, i, timed))
        language = "english"
        if self.multilingual:
            language = NAMES.get(pw.whisper_lang_str(pw.whisper_full_lang_id(ctx)), "english")
        text = " ".join(s.text for s in segments if s.text).strip()
        return Transcript(text, language, duration, words, segments, elapsed)

    def _words(self, ctx, segment: int, timed: bool) -> list[Word]:
        """Tokens to words: a token starting with a space starts a word; confidence is the mean
        probability of the word's tokens (as openai-whisper computes word probabilities)."""
        words: list[list] = []  # [bytes, probabilities, start, end]
        for j in range(pw.whisper_full_n_tokens(ctx, segment)):
            data = pw.whisper_full_get_token_data(ctx, segment, j)
            if data.id >= self._eot:
                continue
            piece = pw.whisper_full_get_token_text(ctx, segment, j)
            piece = piece if isinstance(piece, bytes) else piece.encode("utf-8")
            if not words or piece.startswith(b" "):
                words.append([bytearray(), [], data.t0 / 100, data.t1 / 100])
            words[-1][0].extend(piece)
            words[-1][1].append(min(1.0, max(0.0, float(data.p))))
            words[-1][3] = data.t1 / 100
        result = []
        for raw, probs, start, end in words:
            # Bytes first, text after: a character may be split across tokens.
            text = raw.decode("utf-8", errors="replace").strip()
            confidence = float(np.mean(probs))
            if text:
                result.append(Word(text, round(confidence if math.isfinite(confidence) else 0.0, 4),
                                   start if timed else None, end if timed else None))
        return result
