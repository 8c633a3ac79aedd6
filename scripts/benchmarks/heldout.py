"""The held-out speech set (tests/fixtures/heldout/, made by scripts/make_heldout_audio) plus
tests/fixtures/jfk.wav, and the conditions the accuracy benchmark hears it in, derived in memory
from a seed, so that every run of every build hears the same samples:

* ``clean``: the clips as stored;
* ``pauses``: the clips in order, joined into streams of about 60 s with 0.3 to 2.5 s of silence
  between them, their reference texts joined: a caller who pauses, not one clip per call;
* ``noise``: each clip with white or pink noise (which of the two, drawn) at 15 dB below its
  speech level;
* ``telephone``: each clip over a telephone line (8 kHz, noise at 20 dB SNR, G.711 µ-law) and back
  to 16 kHz, through models.simulations.voice.telephone, as the voice simulations hear a caller.

A clip's noise is seeded by the seed, the condition and the clip's name: a clip gets the same
noise whichever part of the set a run takes.

Transcripts are scored as word lists (stt.scoring.words) with numbers made comparable: the
engine writes "4567", "14th" and "3:30" where the reference, written as a caller speaks, says "four
five six seven", "fourteenth" and "three thirty". Numbers written either way become their digits,
one word per digit ("four five six seven" and "4567" both "4 5 6 7", "two hundred and fifty" and
"250" both "2 5 0"), so that only a misheard number counts as an error, not its spelling.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.simulations import voice
from stt.audio import decode
from stt.scoring import wer, words

from .harness import FIXTURE, JFK, ROOT, SAMPLE_RATE

HELDOUT = ROOT / "tests" / "fixtures" / "heldout"
TRANSCRIPTS = HELDOUT / "transcripts.json"
CONDITIONS = ("clean", "pauses", "noise", "telephone")
STREAM_SECONDS = 60.0
PAUSE_SECONDS = (0.3, 2.5)
NOISE_SNR_DB = 15.0
TELEPHONE_SNR_DB = 20.0


@dataclass(frozen=True)
class Clip:
    name: str
    samples: np.ndarray  # float32, mono, SAMPLE_RATE
    text: str  # the reference

    @property
    def seconds(self) -> float:
        return self.samples.size / SAMPLE_RATE


def entries(directory: Path = HELDOUT) -> list[dict]:
    """transcripts.json: one {"file", "text", "source", "voice", "rate", "seconds"} per clip."""
    return json.loads((directory / "transcripts.json").read_text())


def load(limit: int | None = None, directory: Path = HELDOUT) -> list[Clip]:
    """jfk.wav, then the held-out clips in their order. ``limit``: that many of them, spread evenly
    over the set (jfk.wav always one), so a short run still hears every source and voice."""
    listed = [(FIXTURE.name, FIXTURE, JFK)]
    listed += [(e["file"], directory / e["file"], e["text"]) for e in entries(directory)]
    if limit is not None and limit < len(listed):
        keep = sorted({round(i) for i in np.linspace(0, len(listed) - 1, max(1, limit))})
        listed = [listed[i] for i in keep]
    return [Clip(name, decode(path), text) for name, path, text in listed]


def condition(name: str, clips: list[Clip], seed: int = 0) -> list[Clip]:
    """The clips as condition ``name`` (one of CONDITIONS) has them."""
    if name == "clean":
        return list(clips)
    if name == "pauses":
        return _streams(clips, np.random.default_rng([seed, CONDITIONS.index(name)]))
    if name == "noise":
        return [Clip(c.name, _noisy(c, _rng(seed, name, c)), c.text) for c in clips]
    if name == "telephone":
        return [Clip(c.name, _telephone(c, _rng(seed, name, c)), c.text) for c in clips]
    raise ValueError(f"no condition {name!r}; the conditions are {', '.join(CONDITIONS)}")


def _rng(seed: int, name: str, clip: Clip) -> np.random.Generator:
    return np.random.default_rng([seed, CONDITIONS.index(name), zlib.crc32(clip.name.encode())])


def _streams(clips: list[Clip], rng: np.random.Generator) -> list[Clip]:
    """Consecutive clips joined with pauses until each stream reaches STREAM_SECONDS (the last may
    be shorter)."""
    streams, group = [], []

    def close() -> None:
        parts = []
        for i, clip in enumerate(group):
            if i:
                parts.append(np.zeros(int(rng.uniform(*PAUSE_SECONDS) * SAMPLE_RATE), dtype=np.float32))
            parts.append(clip.samples)
        label = f"stream {len(streams) + 1:02d} ({group[0].name} .. {group[-1].name})"
        streams.append(Clip(label, np.concatenate(parts), " ".join(c.text for c in group)))
        group.clear()

    for clip in clips:
        group.append(clip)
        if sum(c.seconds for c in group) + PAUSE_SECONDS[1] * (len(group) - 1) / 2 >= STREAM_SECONDS:
            close()
    if group:
        close()
    return streams


def _noisy(clip: Clip, rng: np.random.Generator) -> np.ndarray:
    pink = rng.random() < 0.5
    noise = rng.standard_normal(clip.samples.size)
    if pink:
        # 1/f power: each frequency's amplitude over the square root of its frequency.
        spectrum = np.fft.rfft(noise)
        frequencies = np.fft.rfftfreq(noise.size)
        spectrum[1:] /= np.sqrt(frequencies[1:])
        spectrum[0] = 0
        noise = np.fft.irfft(spectrum, noise.size)
    level = voice.speech_level(clip.samples, SAMPLE_RATE) / 10 ** (NOISE_SNR_DB / 20)
    noise *= level / max(float(np.sqrt(np.mean(noise ** 2))), 1e-12)
    return np.clip(clip.samples + noise, -1.0, 1.0).astype(np.float32)


def _telephone(clip: Clip, rng: np.random.Generator) -> np.ndarray:
    line = voice.telephone(voice.Audio(clip.samples, SAMPLE_RATE), snr_db=TELEPHONE_SNR_DB, seed=rng)
    return voice.to_engine(line)


# --- scoring ------------------------------------------------------------------------------------------

_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_UNIT_ORDINALS = ["", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
                  "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
                  "eighteenth", "nineteenth"]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
# word: (value, kind, ordinal)
_NUMBER_WORDS = {
    **{word: (value, "unit", False) for value, word in enumerate(_UNITS)},
    **{word: (value, "unit", True) for value, word in enumerate(_UNIT_ORDINALS) if word},
    **{word: (20 + 10 * i, "ten", False) for i, word in enumerate(_TENS)},
    **{word[:-1] + "ieth": (20 + 10 * i, "ten", True) for i, word in enumerate(_TENS)},
    "hundred": (100, "hundred", False), "hundredth": (100, "hundred", True),
    "thousand": (1000, "thousand", False), "thousandth": (1000, "thousand", True),
}
# What may follow what inside one number: "twenty two", "two hundred and fifty", but "four five" is two.
_FOLLOWS = {None: {"unit", "ten"}, "unit": {"hundred", "thousand"}, "ten": {"unit", "thousand"},
            "hundred": {"unit", "ten", "thousand"}, "thousand": {"unit", "ten"}}
_ORDINAL_SUFFIXES = ("st", "nd", "rd", "th")


def score_words(text: str) -> list[str]:
    """``text`` as the words it is scored by: stt.scoring.words, every number as its digits."""
    tokens, out, i = words(text), [], 0
    while i < len(tokens):
        token = tokens[i]
        digits = token[:-2] if token.endswith(_ORDINAL_SUFFIXES) and token[:-2].isdigit() else token
        if digits.isdigit():
            out += list(digits)
            i += 1
        elif token in _NUMBER_WORDS and _NUMBER_WORDS[token][1] in _FOLLOWS[None]:
            value, i = _spelled_number(tokens, i)
            out += list(str(value))
        else:
            out.append(token)
            i += 1
    return out


def _spelled_number(tokens: list[str], i: int) -> tuple[int, int]:
    """The number spelled from ``tokens[i]`` on, and the index after it."""
    total = group = 0
    last = None
    while i < len(tokens):
        token = tokens[i]
        if token == "and" and last in ("hundred", "thousand") and i + 1 < len(tokens) \
                and _NUMBER_WORDS.get(tokens[i + 1], (0, ""))[1] in ("unit", "ten"):
            i += 1
            continue
        value, kind, ordinal = _NUMBER_WORDS.get(token, (0, "", False))
        if kind not in _FOLLOWS[last] or (last == "ten" and not 1 <= value <= 9):
            break
        if kind == "hundred":
            group *= 100
        elif kind == "thousand":
            total, group = total + group * 1000, 0
        else:
            group += value
        last, i = kind, i + 1
        if ordinal:
            break
    return total + group, i


def edits(reference: str, heard: str) -> int:
    """Word insertions, deletions and substitutions from ``reference`` to ``heard``."""
    said = score_words(reference)
    return round(wer(said, score_words(heard)) * max(1, len(said)))


def reference_words(text: str) -> int:
    return len(score_words(text))
