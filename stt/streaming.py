"""The streaming confirmation policy (LocalAgreement-2), independent of any socket.

Interface (the WebSocket layer relies on exactly this):

    session = StreamingTranscriber(transcriber)      # one per stream; transcriber: stt.engine.Transcriber
    session.add_audio(samples)     # 16 kHz mono float32; called on the event loop while a pass may run
    session.due()                  # True when a pass should start now (enough new audio since the last)
    update = session.step()        # one pass, blocking (run it in an engine thread): Update(final, partial)
    result = session.finish()      # after eof, blocking: Result(text, word_confidences, language)

Update.final is the text of the words newly confirmed by this pass ("" if none); Update.partial
the unconfirmed tail. The concatenation of every final (joined by spaces) is a prefix of
Result.text, and a final is never taken back.

How it works: every pass re-transcribes the audio buffer (the audio since the last cut), and the
words on which this hypothesis and the previous one agree, beyond those already confirmed, are
confirmed. Once confirmed text ends a sentence and a quiet stretch follows it, the buffer is cut
there; a cap on the buffer's length keeps the cost of a pass independent of the session's length.
The confirmed text from before the buffer can be the passes' prompt (``prompt_chars``), but it is off
by default: on tiny.en it made the model skip or invent words at the buffer's head (60 s of
jfk.wav offline: WER 0.009 without, 0.164 with 120 characters). An energy check keeps
the engine away from audio without speech, where whisper invents text.
"""
from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from .annotations import is_annotation
from .audio import SAMPLE_RATE
from .engine import Options, Transcriber, Word, fitted_audio_ctx
from .languages import NAMES, code_of

_FRAME = SAMPLE_RATE // 100  # 10 ms: the resolution of the energy analysis and of every cut


@dataclass(frozen=True)
class Update:
    final: str
    partial: str
    # The newly confirmed words, with start/end in seconds from the start of the stream.
    final_words: tuple[Word, ...] = ()


@dataclass(frozen=True)
class Result:
    text: str
    word_confidences: list[dict]  # [{"word": ..., "confidence": ...}] for every word of text
    language: str
    # The same words with start/end in seconds from the start of the stream.
    words: list[Word] = field(default_factory=list)


@dataclass(frozen=True)
class PassStats:
    stream_seconds: float  # audio received when the pass started
    buffer_seconds: float  # audio the pass looked at
    seconds: float  # wall time of the engine call, 0 when none was needed
    transcribed: bool


@dataclass(frozen=True, slots=True)
class _W:
    text: str
    norm: str
    confidence: float
    start: float  # seconds from the start of the stream
    end: float
    boundary: bool = False  # last word of a segment that another segment follows
    timed: bool = True  # its timestamps look right


def normalize(word: str) -> str:
    """A word's comparison key: case and punctuation do not make two hypotheses disagree."""
    return "".join(c for c in word.lower() if c.isalnum())


def cut_repetition(norms: list[str], *, max_n: int = 4, repeats: int = 3, phrase: int = 4) -> int:
    """How many words to keep: up to the first copy of what whisper's decoding loops repeat, else all.

    A loop is an n-gram (n <= ``max_n``) repeated back to back ``repeats`` times or more ("so so
    so"), or a phrase of ``phrase`` words or more said again at once: whole, or cut short by the
    end of the hypothesis (its first half or more). A pass over audio the engine mishears in
    this way ("... for your country. can do for your country.") puts the copy over the real words'
    time, so only the repetition gives it away; a speaker who truly repeats such a phrase loses
    the second copy."""
    for i in range(len(norms)):
        for n in range(1, max_n + 1):
            if i + n * repeats > len(norms):
                break
            gram = norms[i:i + n]
            if all(norms[i + r * n:i + (r + 1) * n] == gram for r in range(1, repeats)):
                return i + n
        for n in range(phrase, (len(norms) - i) // 2 + 1):
            if norms[i + n:i + 2 * n] == norms[i:i + n]:
                return i + n
        for n in range(phrase, len(norms) - i - 1):
            rest = norms[i + n:]
            if len(rest) < n <= 2 * len(rest) and norms[i:i + len(rest)] == rest:
                return i + n
    return len(norms)


def _skip_confirmed(confirmed: list[_W], hyp: list[_W]) -> int:
    """How many leading words of ``hyp`` (a hypothesis of the whole buffer) stand for the words
    already confirmed in the buffer. The model may re-spell, merge or drop those words, so this
    aligns the confirmed words with the hypothesis's head (edit distance); among equally good
    alignments it takes the longest whose last skipped word does not start after the confirmed audio."""
    if not confirmed or not hyp:
        return 0
    c = [w.norm for w in confirmed]
    h = [w.norm for w in hyp]
    row = list(range(len(h) + 1))
    for i in range(1, len(c) + 1):
        new = [i] + [0] * len(h)
        for j in range(1, len(h) + 1):
            new[j] = min(row[j] + 1, new[j - 1] + 1, row[j - 1] + (c[i - 1] != h[j - 1]))
        row = new
    best = min(row)
    ties = [j for j in range(len(h), -1, -1) if row[j] == best]
    limit = confirmed[-1].end + 0.3
    for j in ties:
        if j == 0 or hyp[j - 1].start <= limit:
            return j
    return ties[-1]


def _common_prefix(first: list[_W], *others: list[_W]) -> int:
    n = 0
    while n < len(first) and all(n < len(o) and o[n].norm == first[n].norm for o in others):
        n += 1
    return n


def _join(words) -> str:
    return " ".join(w.text for w in words)


def _ends_sentence(text: str) -> bool:
    # "..." is how the model trails off where the audio stops, not a sentence's end.
    text = text.rstrip("\"')»”’")
    return text[-1:] in (".", "?", "!") and not text.endswith("..")


class StreamingTranscriber:
    """One stream's confirmation policy over a shared Transcriber; see the module docstring.

    Keywords: ``language`` (code or name; None detects it on multilingual models and keeps the
    language of the first confirmed words), ``interval`` (seconds of new audio between passes),
    ``max_buffer`` (seconds of audio a pass looks at before the buffer is cut even without a sentence
    end), ``prompt_chars`` (confirmed text given as the prompt; 0: none), ``bias`` (text put before that
    prompt on every pass: a workspace's vocabulary, see models.speech.vocabulary), ``unsure`` and ``unsure_window``
    (a word below that confidence, ending within that many seconds of the newest audio, needs a third
    agreeing hypothesis: the trade between latency and accuracy; on 60 s of jfk.wav offline, a
    window of 3 s gave final-word latency median 1.66 s, WER 0.009; 1 s gave 1.16 s, WER 0.08).
    """

    def __init__(self, transcriber: Transcriber, *, language: str | None = None, interval: float = 0.5,
                 max_buffer: float = 16.0, context: float = 3.0, right_context: float = 0.3,
                 unsure: float = 0.5, unsure_window: float = 3.0, prompt_chars: int = 0, bias: str = ""):
        self.bias = bias
        self.context = context
        self.force_after = 6.0  # seconds past max_buffer without any agreement
        self.right_context = right_context
        self.unsure = unsure
        self.unsure_window = unsure_window
        self.transcriber = transcriber
        self.interval = interval
        self.max_buffer = max_buffer
        self.prompt_chars = prompt_chars
        self._given_language = language
        self._language: str | None = None  # kept once the first words are confirmed
        self._detected: str | None = None

        self._lock = threading.Lock()  # the audio buffer and the pass flags
        self._pass_lock = threading.Lock()  # one pass of a session at a time
        self._audio = np.zeros(30 * SAMPLE_RATE, dtype=np.float32)
        self._size = 0
        self._start = 0  # stream sample of the buffer's first sample
        self._mark = 0  # stream samples received when the last pass started
        self._running = False
        self._finished = False

        self._seen = 0  # stream sample up to which the previous pass looked
        self._levels = deque(maxlen=3000)  # recent frame energies, for the noise floor
        self._levels_upto = 0  # stream frame index
        self._confirmed: list[_W] = []
        self._first_in_buffer = 0  # index in _confirmed of the first word heard in the buffer
        self._history: list[list[_W]] = []  # the last hypotheses of the buffer, newest last
        self._partial: list[_W] = []
        self._partial_fresh = False  # the partial comes from a pass over all the audio received
        self._quiet_passes = 0
        self.passes: deque[PassStats] = deque(maxlen=10_000)
        self.last_pass: PassStats | None = None

    # --- called by the socket layer ----------------------------------------------------------

    def add_audio(self, samples: np.ndarray) -> None:
        """Append 16 kHz mono float32 samples. Safe while a pass runs in another thread."""
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        with self._lock:
            if self._finished:
                raise RuntimeError("the session is finished")
            need = self._size + samples.size
            if need > self._audio.size:
                grown = np.zeros(max(need, 2 * self._audio.size), dtype=np.float32)
                grown[:self._size] = self._audio[:self._size]
                self._audio = grown
            self._audio[self._size:need] = samples
            self._size = need

    def due(self) -> bool:
        """True when no pass runs and at least ``interval`` seconds arrived since the last one started."""
        with self._lock:
            return (not self._running and not self._finished
                    and self._start + self._size - self._mark >= self.interval * SAMPLE_RATE)

    def step(self) -> Update:
        """One pass over the buffer (blocking): the words it newly confirms and the unconfirmed rest."""
        if not self._pass_lock.acquire(blocking=False):
            raise RuntimeError("a pass of this session is already running")
        try:
            with self._lock:
                if self._finished:
                    raise RuntimeError("the session is finished")
                audio, start = self._audio[:self._size].copy(), self._start
                self._mark = start + audio.size
                self._running = True
            try:
                return self._step(audio, start)
            finally:
                with self._lock:
                    self._running = False
        finally:
            self._pass_lock.release()

    def finish(self) -> Result:
        """The last pass over what remains (blocking, after eof): confirmed text plus the final tail."""
        with self._pass_lock:
            with self._lock:
                self._finished = True
                audio, start = self._audio[:self._size].copy(), self._start
            tail: list[_W] = []
            if audio.size >= _FRAME:
                if start + audio.size <= self._seen and self._partial_fresh:
                    tail = list(self._partial)  # nothing arrived since that pass
                else:
                    levels = self._analyse(audio, start)
                    if self._has_speech(levels, 0):
                        hyp, _ = self._transcribe(audio, start, levels, start + audio.size)
                        tail = hyp[_skip_confirmed(self._confirmed[self._first_in_buffer:], hyp):]
            words = [Word(w.text, w.confidence, w.start, w.end) for w in self._confirmed + tail]
            return Result(" ".join(w.word for w in words),
                          [{"word": w.word, "confidence": w.confidence} for w in words], self.language, words)

    def confirmed(self) -> Result:
        """The words confirmed so far as a result, without a pass: what a session that cannot wait
        for its last pass (the server is stopping) still owes its client."""
        words = self.words
        return Result(" ".join(w.word for w in words),
                      [{"word": w.word, "confidence": w.confidence} for w in words], self.language, words)

    # --- for observers (tests, simulations, logs) --------------------------------------------

    @property
    def buffer_seconds(self) -> float:
        """Seconds of audio in the buffer: what the next pass will transcribe."""
        with self._lock:
            return self._size / SAMPLE_RATE

    @property
    def buffer_start(self) -> float:
        """Stream time (seconds) of the buffer's first sample."""
        with self._lock:
            return self._start / SAMPLE_RATE

    @property
    def words(self) -> list[Word]:
        """The confirmed words so far, with start/end in seconds from the start of the stream."""
        return [Word(w.text, w.confidence, w.start, w.end) for w in self._confirmed]

    @property
    def language(self) -> str:
        if not self.transcriber.multilingual:
            return "english"
        if self._given_language:
            return NAMES.get(code_of(self._given_language) or "", "english")
        return self._language or self._detected or "english"

    # --- the policy --------------------------------------------------------------------------

    def _step(self, audio: np.ndarray, start: float) -> Update:
        received = start + audio.size
        levels = self._analyse(audio, start)
        new_from = max(0, (self._seen - start) // _FRAME - 20)  # 200 ms back: a word's onset
        self._seen = received
        stats = dict(stream_seconds=received / SAMPLE_RATE, buffer_seconds=audio.size / SAMPLE_RATE)

        if not self._has_speech(levels, 0):
            # Nothing to transcribe: whisper would invent text ("Thank you."). Keep only a short
            # tail, in case a word is starting.
            self._partial, self._history, self._partial_fresh = [], [], True
            keep = int(0.5 * SAMPLE_RATE) // _FRAME * _FRAME
            if audio.size > keep:
                self._cut(received - keep, len(self._confirmed))
            return self._record(stats, 0.0, False, Update("", ""))

        speaking = self._has_speech(levels, new_from)
        if speaking:
            self._quiet_passes = 0
        elif not self._partial or (self._quiet_passes >= 2 and audio.size <= self.max_buffer * SAMPLE_RATE):
            # Silence since the last pass and nothing left to settle: a pass would change nothing.
            # (A tail that never settles gets passes again once the buffer is too long to keep.)
            self._partial_fresh = False
            if not self._partial:
                self._cut_after_speech(levels, start)
            return self._record(stats, 0.0, False, Update("", _join(self._partial)))
        else:
            self._quiet_passes += 1  # a pause: let the tail settle, a few passes at most

        hyp, took = self._transcribe(audio, start, levels, received)
        in_buffer = self._confirmed[self._first_in_buffer:]
        tail = hyp[_skip_confirmed(in_buffer, hyp):]
        agreed = 0
        if self._history:
            before = [h[_skip_confirmed(in_buffer, h):] for h in self._history[-2:]]
            agreed = _common_prefix(tail, before[-1])
            # A word the model is unsure of needs a third hypothesis to agree ("asked" / "ask"), while
            # it has little audio after it; later on, a third would often never come and block the rest.
            # After a second of pause the hypotheses have heard all there is after the word: two are
            # enough, or the last words of an utterance would stay partial until eof.
            settled = not speaking and self._quiet_passes >= 2
            sure = _common_prefix(tail, before[0], before[-1]) if len(before) == 2 and not settled else agreed
            recent = received / SAMPLE_RATE - self.unsure_window
            for i in range(sure, agreed):
                if min(tail[i].confidence, before[-1][i].confidence) < self.unsure and tail[i].end > recent:
                    agreed = i
                    break
            if self._has_speech(levels, levels.size - 30, frames=3):
                # The speech goes on: a word close to the buffer's end may be cut, or heard without
                # what follows it ("what you are" for "what your coun-"), in both hypotheses alike.
                latest = received / SAMPLE_RATE - self.right_context
                agreed = next((i for i in range(agreed) if tail[i].end > latest or not tail[i].timed), agreed)
        new = tail[:agreed]
        self._confirmed.extend(new)
        self._history = [*self._history[-1:], hyp]
        self._partial, self._partial_fresh = tail[agreed:], True
        if new and self._language is None:
            self._language = self._detected
        new += self._trim(audio, start, levels, hyp)
        return self._record(stats, took, True, Update(_join(new), _join(self._partial),
                                                      tuple(Word(w.text, w.confidence, w.start, w.end) for w in new)))

    def _record(self, stats: dict, took: float, transcribed: bool, update: Update) -> Update:
        self.last_pass = PassStats(seconds=took, transcribed=transcribed, **stats)
        self.passes.append(self.last_pass)
        return update

    def _transcribe(self, audio: np.ndarray, start: int, levels: np.ndarray, received: int) -> tuple[list[_W], float]:
        seconds = audio.size / SAMPLE_RATE
        language = self._given_language or self._language
        options = Options(
            language=language, prompt=" ".join(p for p in (self.bias, self._prompt()) if p), temperature=0.0,
            # Temperature fallback on a short buffer costs seconds per pass, for nothing better.
            temperature_inc=0.0,
            # whisper.cpp pads every pass to 30 s unless the encoder window is cut to the audio.
            audio_ctx=fitted_audio_ctx(audio.size),
            max_tokens=int(6 * seconds + 10), single_segment=False, no_speech_thold=0.6, token_timestamps=True)
        started = time.perf_counter()
        transcript = self.transcriber.transcribe(audio, options=options)
        took = time.perf_counter() - started
        if self.transcriber.multilingual:
            self._detected = transcript.language
        return self._hypothesis(transcript, start, levels), took

    def _hypothesis(self, transcript, start: int, levels: np.ndarray) -> list[_W]:
        offset, length = start / SAMPLE_RATE, levels.size * _FRAME / SAMPLE_RATE
        boundaries: set[int] = set()
        counted = 0
        for segment in transcript.segments[:-1]:
            counted += len(segment.text.split())
            boundaries.add(counted - 1)
        if counted + len(transcript.segments[-1].text.split() if transcript.segments else []) != len(transcript.words):
            boundaries = set()  # words and segment texts disagree: no segment ends then
        words, depth = [], 0
        for i, w in enumerate(transcript.words):
            text = w.word.strip()
            # Non-speech annotations ("[BLANK_AUDIO]", "(upbeat music)") are not words.
            if text[:1] in "[(" or depth:
                depth += text.count("[") + text.count("(") - text.count("]") - text.count(")")
                depth = max(depth, 0)
                continue
            if is_annotation(text) or not normalize(text):
                continue
            s = min(max(w.start or 0.0, 0.0), length)
            e = min(max(w.end or s, s), length)
            # Token timestamps collapse onto the buffer's end at times: such a word has no place.
            timed = s < e and s < length - 0.05
            words.append(_W(text, normalize(text), w.confidence, offset + s, offset + e, i in boundaries, timed))
        words = words[:cut_repetition([w.norm for w in words])]
        # After a second of silence, words starting well after the last speech are invented on it.
        # (Not sooner: at the buffer's end the timestamps of the words just heard often collapse.)
        voiced = np.flatnonzero(levels >= self._speech_threshold())
        if voiced.size and levels.size - voiced[-1] > 100:
            last_voice = offset + (voiced[-1] + 1) * _FRAME / SAMPLE_RATE
            keep = len(words)
            while keep and words[keep - 1].start > last_voice + 0.3:
                keep -= 1
            words = words[:keep]
        return words

    def _prompt(self) -> str:
        """Confirmed text from before the buffer only: prompting with words the buffer still holds
        makes the model skip them."""
        parts, size = [], 0
        for w in reversed(self._confirmed[:self._first_in_buffer]):
            if size + len(w.text) + 1 > self.prompt_chars:
                break
            parts.append(w.text)
            size += len(w.text) + 1
        return " ".join(reversed(parts))

    # --- trimming the buffer -----------------------------------------------------------------

    def _trim(self, audio: np.ndarray, start: int, levels: np.ndarray, hyp: list[_W]) -> list[_W]:
        """Cut the buffer after the last confirmed sentence (or utterance) followed by a quiet
        stretch; past max_buffer after any confirmed word. Returns words confirmed by force (none
        unless the hypotheses never agree)."""
        end = (start + audio.size) / SAMPLE_RATE
        in_buffer = self._confirmed[self._first_in_buffer:]
        after = in_buffer[1:] + self._partial[:1]
        # A word confirmed mid-sentence may end one by now: the newest hypothesis has seen the pause.
        ends = [_ends_sentence(w.text) or w.boundary for w in in_buffer]
        if _skip_confirmed(in_buffer, hyp) == len(in_buffer):
            for i, (w, h) in enumerate(zip(in_buffer, hyp)):
                ends[i] = ends[i] or (w.norm == h.norm and (_ends_sentence(h.text) or h.boundary))
        voiced = np.flatnonzero(levels >= self._speech_threshold())
        silent_end = levels.size - (voiced[-1] + 1 if voiced.size else 0) >= 80
        # Keep some seconds of audio before the words still to confirm: without the speech before
        # them, small models mishear the first words of a buffer ("S not" for "ask not").
        pending = self._partial[0].start if self._partial and self._partial[0].timed else end
        keep_from = int((pending - self.context) * SAMPLE_RATE)
        for i in range(len(in_buffer) - 1, -1, -1):
            w = in_buffer[i]
            # Everything heard is confirmed and the speaker paused: the utterance ended.
            utterance_end = i == len(in_buffer) - 1 and not self._partial and silent_end
            if not (ends[i] or utterance_end) or w.start * SAMPLE_RATE > keep_from:
                continue
            cut = self._quiet_cut(levels, start, w, after[i] if i < len(after) else None)
            if cut is not None and cut <= keep_from:
                self._cut(cut, self._first_in_buffer + i + 1)
                break

        seconds = (start + audio.size - self._start) / SAMPLE_RATE
        if seconds <= self.max_buffer:
            return []
        in_buffer = self._confirmed[self._first_in_buffer:]
        after = in_buffer[1:] + self._partial[:1]
        for i in range(len(in_buffer) - 1, -1, -1):
            cut = self._quiet_cut(levels, start, in_buffer[i], after[i] if i < len(after) else None)
            if cut is not None:
                self._cut(cut, self._first_in_buffer + i + 1)
                return []
        if in_buffer:
            # Speech without a pause: cut at the word's end, but never into the next word.
            w, nxt = in_buffer[-1], (self._partial[:1] or [None])[0]
            end = min(w.end, nxt.start) if nxt and nxt.timed else w.end
            self._cut(max(self._start, int(end * SAMPLE_RATE)) // _FRAME * _FRAME, len(self._confirmed))
            return []
        if seconds <= self.max_buffer + self.force_after:
            return []
        # Past the hard limit and the hypotheses never agreed: confirm the first half as the newest
        # hypothesis has it, or without any words drop the oldest audio.
        middle = (self._start + audio.size // 2) / SAMPLE_RATE
        forced = list(itertools.takewhile(lambda w: w.end <= middle, self._partial))
        if not forced:
            self._partial, self._history = [], []
            self._cut(int(middle * SAMPLE_RATE) // _FRAME * _FRAME, len(self._confirmed))
            return []
        self._confirmed.extend(forced)
        self._partial = self._partial[len(forced):]
        nxt = self._partial[0] if self._partial else None
        cut = self._quiet_cut(levels, start, forced[-1], nxt)
        if cut is None:
            end = min(forced[-1].end, nxt.start) if nxt and nxt.timed else forced[-1].end
            cut = int(end * SAMPLE_RATE) // _FRAME * _FRAME
        self._cut(max(cut, self._start), len(self._confirmed))
        return forced

    def _cut_after_speech(self, levels: np.ndarray, start: int) -> None:
        """Everything heard is confirmed and silence follows: drop the confirmed audio."""
        voiced = np.flatnonzero(levels >= self._speech_threshold())
        if not voiced.size:
            return
        quiet = self._quiet_run(levels, voiced[-1] + 1, levels.size)
        if quiet is not None:
            self._cut(start + (quiet + 5) * _FRAME, len(self._confirmed))

    def _quiet_cut(self, levels: np.ndarray, start: int, word: _W, following: _W | None) -> int | None:
        """The stream sample where a cut after ``word`` loses nothing: 50 ms into the first quiet
        stretch after the word's start. Its end is no guide: the last word of a segment gets its end
        stretched to the segment's end, which may lie in the next sentence."""
        if not word.timed:
            return None
        begin = max(0, int((word.start + 0.1) * SAMPLE_RATE - start) // _FRAME)
        # Without a (timed) next word the hypothesis may have missed what follows: stay near the word.
        until = following.start + 0.2 if following is not None and following.timed else word.end + 0.3
        limit = min(levels.size, int(until * SAMPLE_RATE - start) // _FRAME)
        quiet = self._quiet_run(levels, begin, limit)
        if quiet is None:
            return None
        if np.count_nonzero(levels[begin:quiet] >= self._speech_threshold()) > 100:
            return None  # more than a word's worth of speech before it: the timestamps are off
        return start + (quiet + 5) * _FRAME

    def _quiet_run(self, levels: np.ndarray, begin: int, limit: int, frames: int = 15) -> int | None:
        """First frame in [begin, limit) starting at least ``frames`` quiet frames (150 ms)."""
        quiet = (levels < self._quiet_threshold()).astype(np.int32)
        if begin >= limit or quiet.size - begin < frames:
            return None
        sums = np.convolve(quiet[begin:], np.ones(frames, dtype=np.int32), mode="valid")
        hits = np.flatnonzero(sums[:limit - begin] == frames)
        return begin + int(hits[0]) if hits.size else None

    def _cut(self, sample: int, first_in_buffer: int) -> None:
        """Drop the buffer's audio before stream sample ``sample``; the confirmed words from
        ``first_in_buffer`` on are the ones still heard in the buffer."""
        leaving = self._confirmed[self._first_in_buffer:first_in_buffer]
        if leaving:
            self._history = [h[_skip_confirmed(leaving, h):] for h in self._history]
        self._first_in_buffer = first_in_buffer
        with self._lock:
            drop = min(max(sample - self._start, 0), self._size)
            self._audio[:self._size - drop] = self._audio[drop:self._size]
            self._size -= drop
            self._start += drop

    # --- speech energy -----------------------------------------------------------------------

    def _analyse(self, audio: np.ndarray, start: int) -> np.ndarray:
        """RMS of each 10 ms frame of the buffer; feeds the noise floor with the frames not seen yet."""
        frames = audio[:audio.size // _FRAME * _FRAME].reshape(-1, _FRAME)
        levels = np.sqrt(np.mean(np.square(frames, dtype=np.float64), axis=1)) if frames.size else np.zeros(0)
        first = start // _FRAME
        fresh = levels[max(0, self._levels_upto - first):]
        self._levels.extend(fresh.tolist())
        self._levels_upto = max(self._levels_upto, first + levels.size)
        return levels

    def _floor(self) -> float:
        return float(np.percentile(np.fromiter(self._levels, float), 10)) if self._levels else 0.0

    def _speech_threshold(self) -> float:
        # Steady noise sets the floor; speech rises well above it.
        return max(0.015, 4 * min(self._floor(), 0.05))

    def _quiet_threshold(self) -> float:
        return max(0.004, 2.5 * min(self._floor(), 0.02))

    def _has_speech(self, levels: np.ndarray, begin: int, frames: int = 8) -> bool:
        return int(np.count_nonzero(levels[begin:] >= self._speech_threshold())) >= frames
