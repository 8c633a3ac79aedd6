"""The speech engine: whisper.cpp through pywhispercpp, loaded once, shared by threads.

A whisper.cpp context runs one pass at a time, so a Transcriber holds one or more loaded
contexts and lends each to one caller at a time. Every keyword given to pywhispercpp's
``transcribe`` stays set on that context, so every call sets all of the decoding parameters.

What a Transcript holds is speech only. Whisper's non-speech annotations ("[BLANK_AUDIO]",
"(music)"; see stt.annotations) are dropped from segments and words, so silence gives "". A
prompt conditions the decoder but never reaches the text: only its tail is given to whisper (see
``prompt_tail``), and a segment that merely repeats the prompt is kept only if a pass without the
prompt hears speech there too (see ``transcribe``).

whisper.cpp's own log goes to the ``stt.whisper`` logger, warnings and errors only.
"""
from __future__ import annotations

import logging
import math
import queue
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import _pywhispercpp as pw
import numpy as np
from pywhispercpp.model import Model

from .annotations import speech_words
from .audio import SAMPLE_RATE, decode
from .languages import NAMES, code_of

# What of a prompt conditions the decoder: its last 224 tokens, as OpenAI documents for its
# transcription API and as whisper.cpp itself keeps (half the text context of every whisper model).
PROMPT_TOKENS = 224
# A prompt is cut to this many characters before its tokens are counted: whisper.cpp's tokenizer
# takes time quadratic in the length of a run without spaces (16 kB of digits: 4.5 s a count, and
# a pass counts twice). 224 tokens of English are about 1,000 characters; 8 a token leaves room.
PROMPT_CHARS = PROMPT_TOKENS * 8
# Quotes that, wrapped around a whole prompt, whisper copies onto the transcript.
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»"}
# ggml's log levels.
_LOG_LEVELS = {3: logging.WARNING, 4: logging.ERROR}

log = logging.getLogger("stt.whisper")


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


@dataclass(frozen=True)
class _Pass:
    """What one whisper pass heard: its segments (speech only), each with its words, and the language."""
    parts: list[tuple[Segment, list[Word]]]
    language: str


class Transcriber:
    """Speech to text on a ggml whisper model, usable without any server::

        t = Transcriber("data/models/ggml-tiny.en.bin", n_threads=1)
        result = t.transcribe("meeting.mp3")
        print(result.text, result.language, [(w.word, w.confidence) for w in result.words])

    ``instances`` contexts are loaded (about 150 MB each for tiny.en) so that as many calls run
    at once; further callers wait for a free one.
    """

    def __init__(self, model_path: str | Path, *, n_threads: int = 1, instances: int = 1, flash_attn: bool = False):
        path = Path(model_path)
        if not path.is_file():
            # pywhispercpp would take an unknown path for a model name and try to download it.
            raise FileNotFoundError(f"no ggml model file at {path}")
        pw.whisper_log_set(_whisper_log)
        self.model_path = path
        self.n_threads = n_threads
        self._idle: queue.Queue[Model] = queue.Queue()
        # Flash attention stays off by default: a full 30 s window's encoder is about 30% sooner with
        # it, but together with a window fitted to a short clip it misheard more (held-out set,
        # clean: 15.6% word error rate instead of 13.7% with either speed-up alone).
        self._models = [Model(str(path), n_threads=n_threads, print_progress=False, print_realtime=False,
                              redirect_whispercpp_logs_to=None, context_params={"flash_attn": flash_attn})
                        for _ in range(instances)]
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
                   word_timestamps: bool = False, options: Options | None = None) -> Transcript:
        """Transcribe a file path, encoded bytes, or 16 kHz mono float32 samples.

        ``language`` is a code or name ("de", "german"); None detects it (multilingual models) or
        takes English (``.en`` models). ``prompt`` conditions the decoder on preceding text (its
        tail: see ``prompt_tail``). ``temperature`` 0 decodes greedily, falling back to higher
        temperatures on failure. ``word_timestamps`` times every word (whisper's token timestamps).

        Whisper copies its prompt into the text at times, on silence or noise above all. A segment
        made mostly of runs of the prompt's words is therefore checked by a second pass without the
        prompt, and kept only if that pass hears speech in the same stretch of audio.
        """
        samples = audio if isinstance(audio, np.ndarray) else decode(audio if isinstance(audio, bytes) else Path(audio))
        options = options or Options(language=language, prompt=prompt or "", temperature=temperature,
                                     temperature_inc=0.2 if temperature == 0 else 0.0,
                                     token_timestamps=word_timestamps,
                                     # With a long prompt a cut window made the decoder drop or garble
                                     # the clip's first words (a 224-token prompt, 11 s); on silence
                                     # it says "you" where the full window hears nothing: full window.
                                     audio_ctx=fitted_audio_ctx(samples.size) if not prompt and _audible(samples)
                                     else 0)
        options = replace(options, prompt=self.prompt_tail(options.prompt))
        with self._context() as model:
            started = time.perf_counter()
            heard = self._pass(model, samples, options)
            parts = heard.parts
            if echoes := _prompt_echoes(parts, options.prompt):
                unprompted = self._pass(model, samples, replace(options, prompt="")).parts
                parts = [p for p in parts if p[0] not in echoes or _overlaps(p[0], unprompted)]
            elapsed = time.perf_counter() - started
        segments = [segment for segment, _ in parts]
        return Transcript(" ".join(s.text for s in segments), heard.language, samples.size / SAMPLE_RATE,
                          [w for _, ws in parts for w in ws] if words else [], segments, elapsed)

    def prompt_tail(self, prompt: str) -> str:
        """The part of ``prompt`` given to whisper: its last PROMPT_TOKENS tokens at most (cut at a
        word where it can be), within its last PROMPT_CHARS characters. A prompt wrapped whole in
        quotes loses them: whisper would wrap the transcript in them too."""
        text = _unquoted(prompt.strip())
        text = _tail(text, PROMPT_CHARS)
        while (count := self.count_tokens(text)) > PROMPT_TOKENS:
            text = _tail(text, len(text) * PROMPT_TOKENS // count)
        return text

    def count_tokens(self, text: str) -> int:
        """How many of whisper's tokens ``text`` makes (whisper.cpp's own tokenizer)."""
        if not text:
            return 0
        # Given no room for tokens, whisper_tokenize writes none and answers minus their count
        # (logging a complaint that _whisper_log drops).
        return -pw.whisper_tokenize(self._models[0]._ctx, text, 0, 0)

    @contextmanager
    def _context(self):
        model = self._idle.get()
        try:
            yield model
        finally:
            self._idle.put(model)

    def _pass(self, model: Model, samples: np.ndarray, options: Options) -> _Pass:
        model.transcribe(samples, **self._params(options))
        ctx = model._ctx
        # Whisper times a segment within its 30 s window, past the audio's end at times.
        duration = samples.size / SAMPLE_RATE
        parts = []
        for i in range(pw.whisper_full_n_segments(ctx)):
            words = self._words(ctx, i, options.token_timestamps, duration)
            words = [w for w, speech in zip(words, speech_words([w.word for w in words])) if speech]
            if not words:
                continue  # silence, music, noise: nothing was said
            no_speech = pw.whisper_full_get_segment_no_speech_prob(ctx, i) \
                if hasattr(pw, "whisper_full_get_segment_no_speech_prob") else 0.0
            segment = Segment(min(pw.whisper_full_get_segment_t0(ctx, i) / 100, duration),
                              min(pw.whisper_full_get_segment_t1(ctx, i) / 100, duration),
                              " ".join(w.word for w in words), no_speech)
            parts.append((segment, words))
        language = "english"
        if self.multilingual:
            language = NAMES.get(pw.whisper_lang_str(pw.whisper_full_lang_id(ctx)), "english")
        return _Pass(parts, language)

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

    def _words(self, ctx, segment: int, timed: bool, duration: float) -> list[Word]:
        """Tokens to words: a token starting with a space starts a word; confidence is the mean
        probability of the word's tokens (as openai-whisper computes word probabilities); a
        word's times are those of its first and last token, within ``duration``."""
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
                                   min(start, duration) if timed else None, min(end, duration) if timed else None))
        return result


def fitted_audio_ctx(samples: int) -> int:
    """The encoder window for ``samples`` of audio: whisper.cpp encodes a whole 30 s window (1500
    positions) unless told fewer, and the encoder is most of a short clip's cost (11 s: 3x faster
    fitted). Whisper's decoder, trained on full windows, tends to loop ("so, so, so") below about
    10 s of context, hence the floor of 500; 64 positions (1.3 s) of margin past the audio's end."""
    return min(1500, max(500, math.ceil(samples * 50 / SAMPLE_RATE) + 64))


def _audible(samples: np.ndarray) -> bool:
    """Whether ``samples`` hold at least 80 ms of sound well above their own floor (10 ms frames
    with an RMS of 0.015 and 4 times the quietest tenth's): what the stream policy counts as speech.
    Only the window depends on it, never whether the clip is transcribed."""
    frames = samples[:samples.size // 160 * 160].reshape(-1, 160)
    if not frames.size:
        return False
    levels = np.sqrt(np.mean(np.square(frames, dtype=np.float64), axis=1))
    threshold = max(0.015, 4 * min(float(np.percentile(levels, 10)), 0.05))
    return int(np.count_nonzero(levels >= threshold)) >= 8


def _whisper_log(level: int, text: str) -> None:
    """whisper.cpp's log, into Python's: warnings and errors only (it reports every model load at
    length), and not the complaint that comes with every ``count_tokens``."""
    if level in _LOG_LEVELS and "too many resulting tokens" not in text:
        log.log(_LOG_LEVELS[level], "%s", text.rstrip())


def _unquoted(prompt: str) -> str:
    if len(prompt) >= 2 and _QUOTES.get(prompt[0]) == prompt[-1]:
        return prompt[1:-1].strip()
    return prompt


def _tail(text: str, chars: int) -> str:
    """The last ``chars`` characters of ``text`` at most, from the start of a word where the
    cut falls inside one and a later word starts within them."""
    if len(text) <= chars:
        return text
    if chars <= 0:
        return ""
    tail = text[-chars:]
    if not text[-chars - 1].isspace() and not tail[0].isspace():
        words = tail.split(maxsplit=1)
        tail = words[1] if len(words) == 2 else tail
    return tail.lstrip()


def _plain_words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _prompt_echoes(parts: list[tuple[Segment, list[Word]]], prompt: str) -> set[Segment]:
    """The segments most of whose words repeat runs of the prompt's words (runs of three, or all
    of a shorter segment or prompt): what whisper writes when it copies its prompt."""
    prompt_words = _plain_words(prompt)
    echoes = set()
    for segment, _ in parts:
        words = _plain_words(segment.text)
        n = min(3, len(words), len(prompt_words))
        if n == 0:
            continue
        runs = {tuple(prompt_words[i:i + n]) for i in range(len(prompt_words) - n + 1)}
        covered = {i + k for i in range(len(words) - n + 1) if tuple(words[i:i + n]) in runs for k in range(n)}
        if 2 * len(covered) >= len(words):
            echoes.add(segment)
    return echoes


def _overlaps(segment: Segment, parts: list[tuple[Segment, list[Word]]]) -> bool:
    """Whether any of ``parts`` (speech heard by another pass) shares time with ``segment``."""
    return any(other.start <= segment.end and segment.start <= other.end for other, _ in parts)
