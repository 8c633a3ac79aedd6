"""Voice mode of a simulation: the caller's turn is spoken, carried, and heard again.

A turn's text is synthesised by eSpeak NG, optionally sent down a telephone line (8 kHz, G.711
µ-law, noise at a signal-to-noise ratio), resampled to what the speech engine takes (16 kHz) and
transcribed; what was said and what was heard are compared by their word error rate. The engine is
given as a plain callable, so this module knows nothing of it::

    channel = VoiceChannel(lambda samples: transcriber.transcribe(samples).text, telephone=True)
    heard = channel.hear("I would like to book an appointment for Tuesday")
    heard.heard, heard.wer, heard.audio_ms

eSpeak NG comes from the ``espeakng-loader`` wheel, which carries libespeak-ng and its data: no
system package, nothing fetched at run time. The library keeps its state in globals (the voice,
the rate, the callback) and is not thread-safe, so one lock serialises every use of it in a
process, and it is initialised once, on first use. Its output is not quite the same from one call
to the next for the same text (its pitch flutter and gain control carry on from the synthesis
before), so the same turn may be heard a little differently in two runs; the line's noise, seeded,
is the same.
"""
from __future__ import annotations

import ctypes
import math
import threading
import time
import zlib
from collections.abc import Callable
from typing import NamedTuple

import espeakng_loader
import numpy as np
import soxr

from stt.scoring import wer, words

TELEPHONE_RATE = 8_000
ENGINE_RATE = 16_000
# eSpeak NG's own bounds for the speaking rate (espeakRATE), in words per minute.
MIN_WORDS_PER_MINUTE, MAX_WORDS_PER_MINUTE = 80, 450

# eSpeak NG's API constants (speak_lib.h).
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000  # on an error, return it instead of ending the process
_CHARS_UTF8 = 1
_POS_CHARACTER = 1
_RATE = 1
_EE_OK = 0


class VoiceError(ValueError):
    """Voice mode cannot speak a turn: no voice for its language, or the synthesiser failed. The
    sentence says which; a simulation's conversation fails with it (asking again would not help)."""


class Audio(NamedTuple):
    samples: np.ndarray  # float32, mono, in [-1, 1]
    sample_rate: int

    @property
    def ms(self) -> float:
        return self.samples.size * 1000 / self.sample_rate


class Heard(NamedTuple):
    said: str               # the caller's text, as synthesised
    heard: str              # what the speech engine transcribed from the audio
    wer: float              # word error rate of heard against said (above 1 when words were inserted)
    audio_ms: float         # how long the spoken turn lasts
    synthesis_ms: float     # producing the audio the engine gets: synthesis, the line, resampling
    transcription_ms: float  # the engine's call


# --- eSpeak NG ------------------------------------------------------------------------------------

class _Voice(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("languages", ctypes.c_void_p), ("identifier", ctypes.c_char_p),
                ("gender", ctypes.c_ubyte), ("age", ctypes.c_ubyte), ("variant", ctypes.c_ubyte),
                ("xx1", ctypes.c_ubyte), ("score", ctypes.c_int), ("spare", ctypes.c_void_p)]


_SynthCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)


class _Espeak:
    """libespeak-ng, initialised: its sample rate, the voice for each language tag it knows, and
    the samples of the synthesis under way (collected by the callback, under the module's lock)."""

    def __init__(self) -> None:
        lib = ctypes.CDLL(espeakng_loader.get_library_path())
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetSynthCallback.argtypes = [_SynthCallback]
        lib.espeak_SetSynthCallback.restype = None
        lib.espeak_ListVoices.argtypes = [ctypes.c_void_p]
        lib.espeak_ListVoices.restype = ctypes.POINTER(ctypes.POINTER(_Voice))
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_SetParameter.restype = ctypes.c_int
        lib.espeak_Synth.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
                                     ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
        lib.espeak_Synth.restype = ctypes.c_int
        lib.espeak_Synchronize.argtypes = []
        lib.espeak_Synchronize.restype = ctypes.c_int
        rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, espeakng_loader.get_data_path().encode(),
                                     _INITIALIZE_DONT_EXIT)
        if rate <= 0:
            raise VoiceError(f"eSpeak NG did not start (error {rate}) with its data at "
                               f"{espeakng_loader.get_data_path()}")
        self.lib, self.sample_rate = lib, rate
        self.chunks: list[np.ndarray] = []
        # Kept on the instance: ctypes frees a callback's trampoline with the Python object.
        self._callback = _SynthCallback(self._collect)
        lib.espeak_SetSynthCallback(self._callback)
        self.voices = self._voices_by_language()

    def _collect(self, wav, count, _events) -> int:
        if count > 0 and wav:
            self.chunks.append(np.ctypeslib.as_array(wav, (count,)).copy())
        return 0  # go on

    def _voices_by_language(self) -> dict[str, str]:
        """Each language tag (lower case) a voice speaks, to the voice that speaks it best: a voice
        lists (priority, tag) pairs, the lowest priority first (eSpeak's own choice for "en" is
        en-GB, priority 2, before en-US's 3); on a tie, the voice eSpeak lists first."""
        best: dict[str, tuple[int, str]] = {}
        voices = self.lib.espeak_ListVoices(None)
        i = 0
        while voices[i]:
            voice = voices[i].contents
            at = voice.languages
            # A byte of priority, the tag's bytes, a NUL; a priority of 0 ends the list.
            while priority := ctypes.c_ubyte.from_address(at).value:
                tag = ctypes.string_at(at + 1)
                at += len(tag) + 2
                key = tag.decode().lower()
                if key not in best or priority < best[key][0]:
                    best[key] = (priority, voice.identifier.decode())
            i += 1
        return {tag: identifier for tag, (_, identifier) in best.items()}

    def synthesise(self, text: bytes, voice: str, words_per_minute: int) -> np.ndarray:
        self.chunks = []
        if self.lib.espeak_SetVoiceByName(voice.encode()) != _EE_OK:
            raise VoiceError(f"eSpeak NG could not load its voice {voice}")
        self.lib.espeak_SetParameter(_RATE, words_per_minute, 0)
        status = self.lib.espeak_Synth(text, len(text) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
        self.lib.espeak_Synchronize()
        if status != _EE_OK:
            raise VoiceError(f"eSpeak NG failed to synthesise (error {status})")
        pcm = np.concatenate(self.chunks) if self.chunks else np.zeros(0, dtype=np.int16)
        self.chunks = []
        return pcm


_lock = threading.Lock()
_espeak: _Espeak | None = None


def _engine() -> _Espeak:
    """The process's eSpeak NG, initialised on first use; call with _lock held."""
    global _espeak
    if _espeak is None:
        _espeak = _Espeak()
    return _espeak


def languages() -> list[str]:
    """The language tags eSpeak NG has a voice for (lower case: "en", "en-us", "pt-br", "zh")."""
    with _lock:
        return sorted(_engine().voices)


def voice_for(language: str) -> str:
    """The eSpeak NG voice that speaks ``language``, a BCP 47 style tag in any case, with "-" or
    "_": the tag itself, else the tag with its last subtags dropped one by one ("en-AU" is spoken
    by "en", "zh-Hans-CN" by "zh"). A language no voice speaks is a VoiceError."""
    tag = (language or "").strip().lower().replace("_", "-")
    with _lock:
        voices = _engine().voices
    parts = tag.split("-")
    while parts and parts[0]:
        if (found := voices.get("-".join(parts))) is not None:
            return found
        parts.pop()
    raise VoiceError(f"the speech synthesiser has no voice for the language {language!r}; "
                     "give a language tag such as en, en-US, de, fr or pt-BR")


def _check_rate(words_per_minute: int) -> None:
    if not MIN_WORDS_PER_MINUTE <= words_per_minute <= MAX_WORDS_PER_MINUTE:
        raise ValueError(f"words_per_minute must be from {MIN_WORDS_PER_MINUTE} to {MAX_WORDS_PER_MINUTE}, "
                         f"not {words_per_minute}")


def synthesise(text: str, *, language: str = "en", words_per_minute: int = 165) -> Audio:
    """``text`` spoken by eSpeak NG in ``language`` at ``words_per_minute``: mono float32 at the
    synthesiser's own rate (22050 Hz). Text with nothing to say gives a few milliseconds of silence."""
    _check_rate(words_per_minute)
    voice = voice_for(language)
    # A NUL would end the text early in C: what follows it would go unsaid.
    data = text.replace("\0", " ").encode("utf-8")
    with _lock:
        espeak = _engine()
        pcm = espeak.synthesise(data, voice, int(words_per_minute))
        rate = espeak.sample_rate
    return Audio(pcm.astype(np.float32) / 32768.0, rate)


# --- the telephone line ---------------------------------------------------------------------------

def mulaw_encode(pcm: np.ndarray) -> np.ndarray:
    """16-bit linear samples to G.711 µ-law codes (uint8), as ITU-T G.191's reference ulaw_compress:
    the 14 most significant bits, the magnitude of a negative sample taken by one's complement,
    biased by 33, cut to 8191; its segment (exponent) and the 4 bits below the segment's leading 1
    (mantissa), inverted; the sign bit set for samples >= 0. So 0 is 0xFF, -1 is 0x7F, 32767 is 0x80
    and -32768 is 0x00."""
    pcm = np.asarray(pcm, dtype=np.int16).astype(np.int32)
    magnitude = np.where(pcm < 0, ~pcm, pcm) >> 2
    biased = np.minimum(magnitude + 33, 0x1FFF)
    # The segment: 1 for biased values under 64, one more for each doubling above.
    segment = np.ones_like(biased)
    rest = biased >> 6
    while np.any(rest):
        segment += rest > 0
        rest >>= 1
    high = 8 - segment
    low = 0xF - ((biased >> segment) & 0xF)
    code = (high << 4) | low
    return np.where(pcm >= 0, code | 0x80, code).astype(np.uint8)


def mulaw_decode(codes: np.ndarray) -> np.ndarray:
    """G.711 µ-law codes to 16-bit linear samples, as G.191's ulaw_expand: the middle of each
    code's quantisation interval, from -32124 (0x00) to 32124 (0x80), 0xFF and 0x7F both 0."""
    codes = np.asarray(codes, dtype=np.uint8).astype(np.int32)
    inverted = ~codes
    exponent = (inverted >> 4) & 0x7
    mantissa = inverted & 0xF
    step = 4 << (exponent + 1)
    magnitude = (0x80 << exponent) + step * mantissa + step // 2 - 4 * 33
    return np.where(codes < 0x80, -magnitude, magnitude).astype(np.int16)


def to_pcm16(samples: np.ndarray) -> np.ndarray:
    return np.clip(np.round(np.asarray(samples, dtype=np.float64) * 32768), -32768, 32767).astype(np.int16)


def speech_level(samples: np.ndarray, sample_rate: int) -> float:
    """The RMS of the speech in ``samples``: over its 20 ms frames that are no more than 50 dB below
    the loudest, so that the pauses and the silence around a turn do not lower it (as an active
    speech level does); 0 for silence. A signal-to-noise ratio is taken against it."""
    samples = np.asarray(samples, dtype=np.float64)
    frame = max(1, sample_rate // 50)
    count = samples.size // frame
    if count == 0:
        return float(np.sqrt(np.mean(samples ** 2))) if samples.size else 0.0
    energy = np.mean(samples[:count * frame].reshape(count, frame) ** 2, axis=1)
    loudest = float(energy.max())
    if loudest == 0.0:
        return 0.0
    return float(np.sqrt(np.mean(energy[energy >= loudest * 10 ** (-50 / 10)])))


def add_noise(samples: np.ndarray, sample_rate: int, snr_db: float, *, seed: int | np.random.Generator = 0
              ) -> np.ndarray:
    """``samples`` with white Gaussian noise whose RMS is ``snr_db`` below their speech level;
    the same seed, the same noise."""
    if not math.isfinite(snr_db):
        raise ValueError(f"snr_db must be a finite number of decibels, not {snr_db}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    level = speech_level(samples, sample_rate) / 10 ** (snr_db / 20)
    return (samples + rng.standard_normal(samples.size) * level).astype(np.float32)


def _resample(audio: Audio, rate: int) -> np.ndarray:
    samples = np.asarray(audio.samples, dtype=np.float32)
    if audio.sample_rate == rate or samples.size == 0:
        return samples.copy()
    return soxr.resample(samples, audio.sample_rate, rate, quality="HQ").astype(np.float32, copy=False)


def telephone(audio: Audio, *, snr_db: float | None = 20.0, seed: int | np.random.Generator = 0) -> Audio:
    """``audio`` as a telephone line carries it: resampled to 8 kHz (the line's band, up to 4 kHz),
    noise added at ``snr_db`` against the speech level (None: none), then coded to G.711 µ-law and
    back. The noise goes in before the codec, as the caller's room noise does: what comes out is
    only ever one of µ-law's 256 levels, as on a real line."""
    samples = _resample(audio, TELEPHONE_RATE)
    if snr_db is not None:
        samples = add_noise(samples, TELEPHONE_RATE, snr_db, seed=seed)
    line = mulaw_decode(mulaw_encode(to_pcm16(samples)))
    return Audio(line.astype(np.float32) / 32768.0, TELEPHONE_RATE)


def to_engine(audio: Audio) -> np.ndarray:
    """``audio`` as the speech engine takes it: float32 mono at 16 kHz."""
    return _resample(audio, ENGINE_RATE)


def word_error_rate(said: str, heard: str) -> float:
    """How far ``heard`` is from ``said``, by words (case and punctuation do not count)."""
    return wer(words(said), words(heard))


# --- the channel ------------------------------------------------------------------------------------

class VoiceChannel:
    """The way a simulated caller's turns reach the agent in voice mode: spoken, carried (over a
    telephone line when ``telephone``, with noise at ``snr_db`` unless None), heard by
    ``transcribe`` (16 kHz float32 samples to text). Checks its settings when built, so that a
    language no voice speaks fails before the first turn.

    The noise of a turn is seeded by ``seed`` and the turn's text: the same turn gets the same
    noise in every run, and different turns different noise."""

    def __init__(self, transcribe: Callable[[np.ndarray], str], *, telephone: bool = False,
                 snr_db: float | None = 20.0, language: str = "en", words_per_minute: int = 165, seed: int = 0):
        _check_rate(words_per_minute)
        if snr_db is not None and not math.isfinite(snr_db):
            raise ValueError(f"snr_db must be a finite number of decibels or None, not {snr_db}")
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
        voice_for(language)
        self.transcribe = transcribe
        self.telephone, self.snr_db, self.language = telephone, snr_db, language
        self.words_per_minute, self.seed = words_per_minute, seed

    def noise_for(self, text: str) -> np.random.Generator:
        """The generator of the line's noise for the turn ``text``."""
        return np.random.default_rng([self.seed, zlib.crc32(text.encode("utf-8"))])

    def hear(self, text: str) -> Heard:
        if not words(text):
            # Nothing to say: no audio, and nothing for the engine to mishear.
            return Heard(text, "", 0.0, 0.0, 0.0, 0.0)
        started = time.perf_counter()
        audio = synthesise(text, language=self.language, words_per_minute=self.words_per_minute)
        if self.telephone:
            audio = telephone(audio, snr_db=self.snr_db, seed=self.noise_for(text))
        samples = to_engine(audio)
        synthesised = time.perf_counter()
        heard = self.transcribe(samples)
        transcribed = time.perf_counter()
        return Heard(text, heard, word_error_rate(text, heard), audio.ms, (synthesised - started) * 1000,
                     (transcribed - synthesised) * 1000)
