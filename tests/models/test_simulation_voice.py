"""Voice mode's audio: eSpeak NG's speech, the telephone line (G.711 µ-law, noise at a signal-to-noise
ratio), and the bundled speech model hearing it, all for real."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from models.simulations import voice
from models.simulations.voice import Audio, VoiceChannel
from tests.support.speech import fresh_transcriber

BOOKING = "I would like to book an appointment for Tuesday"


@pytest.fixture(scope="module")
def booking() -> Audio:
    return voice.synthesise(BOOKING)


def snr_of(clean: np.ndarray, noisy: np.ndarray, rate: int) -> float:
    """The signal-to-noise ratio of ``noisy`` measured back: the speech level of ``clean`` over the
    RMS of what was added."""
    noise = noisy.astype(np.float64) - clean
    return 20 * np.log10(voice.speech_level(clean, rate) / np.sqrt(np.mean(noise ** 2)))


# --- synthesis --------------------------------------------------------------------------------------

def test_a_sentence_lasts_as_long_as_its_words_take_at_the_rate_and_is_not_silent(booking):
    assert booking.sample_rate == 22050
    assert booking.samples.dtype == np.float32 and booking.samples.ndim == 1
    # 9 words at 165 words a minute: 3.3 s by the word count; eSpeak says it in about 2.5 s.
    expected_ms = 9 / 165 * 60_000
    assert 0.5 * expected_ms <= booking.ms <= 1.5 * expected_ms
    assert np.abs(booking.samples).max() <= 1.0
    assert voice.speech_level(booking.samples, booking.sample_rate) > 0.05


def test_a_faster_rate_says_the_same_sentence_in_less_time():
    slow, fast = (voice.synthesise(BOOKING, words_per_minute=rate) for rate in (80, 300))
    assert fast.ms < slow.ms / 2


@pytest.mark.parametrize("rate", [voice.MIN_WORDS_PER_MINUTE, voice.MAX_WORDS_PER_MINUTE])
def test_the_rate_bounds_are_spoken(rate):
    assert voice.synthesise("Tuesday", words_per_minute=rate).samples.size > 0


@pytest.mark.parametrize("rate", [voice.MIN_WORDS_PER_MINUTE - 1, voice.MAX_WORDS_PER_MINUTE + 1])
def test_a_rate_past_the_bounds_is_refused(rate):
    with pytest.raises(ValueError, match="words_per_minute must be from 80 to 450"):
        voice.synthesise("Tuesday", words_per_minute=rate)


@pytest.mark.parametrize("language, speaker", [
    ("en", "gmw/en"), ("EN", "gmw/en"), ("en-US", "gmw/en-US"), ("en_us", "gmw/en-US"),
    ("en-AU", "gmw/en"),  # no Australian voice: English
    ("pt-BR", "roa/pt-BR"), ("de-AT", "gmw/de"), ("zh-Hans-CN", "sit/cmn"),
])
def test_a_language_tag_falls_back_to_the_language_without_its_region(language, speaker):
    assert voice.voice_for(language) == speaker


@pytest.mark.parametrize("language", ["xx", "xx-US", "", "-", "klingon"])
def test_a_language_no_voice_speaks_fails_with_a_sentence(language):
    with pytest.raises(ValueError, match=f"the speech synthesiser has no voice for the language {language!r}"):
        voice.synthesise("Hello", language=language)
    with pytest.raises(ValueError, match="no voice for the language"):
        VoiceChannel(lambda samples: "", language=language)


def test_another_language_is_spoken():
    audio = voice.synthesise("Guten Tag, ich möchte einen Termin vereinbaren", language="de")
    assert 1000 < audio.ms < 6000
    assert voice.speech_level(audio.samples, audio.sample_rate) > 0.05


def test_text_with_nothing_to_say_gives_next_to_no_audio():
    for text in ("", "   ", "...", "\0"):
        assert voice.synthesise(text).ms < 50


def test_threads_synthesising_at_once_each_get_their_own_sentence():
    # One word, and twenty: the lock keeps each synthesis's samples apart.
    texts = ["Yes.", "Hi, I'm calling about my order from last week, it still hasn't arrived and the "
                     "tracking page says nothing at all."] * 3
    alone = {text: voice.synthesise(text).ms for text in texts}
    results: dict[int, float] = {}

    def speak(i: int) -> None:
        results[i] = voice.synthesise(texts[i]).ms

    threads = [threading.Thread(target=speak, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, text in enumerate(texts):
        # eSpeak's output varies by a few milliseconds from one call to the next.
        assert results[i] == pytest.approx(alone[text], abs=50)


# --- G.711 µ-law ------------------------------------------------------------------------------------

ALL_PCM = np.arange(-32768, 32768).astype(np.int16)


def test_every_16_bit_sample_is_coded_to_one_of_256_codes_and_back_to_one_of_255_levels():
    codes = voice.mulaw_encode(ALL_PCM)
    assert codes.dtype == np.uint8 and len(np.unique(codes)) == 256
    levels = voice.mulaw_decode(np.arange(256))
    assert len(np.unique(levels)) == 255  # 0xFF and 0x7F are both zero
    # Coding is monotonic: a louder sample never gets a quieter level.
    assert np.all(np.diff(voice.mulaw_decode(codes).astype(np.int32)) >= 0)


@pytest.mark.parametrize("sample, code", [
    (0, 0xFF), (-1, 0x7F),                  # the two zeros
    (32767, 0x80), (-32768, 0x00),          # full scale, past the last level (32124): clipped
    (31611, 0x81), (31612, 0x80),           # the last decision level: 7903 in 14 bits
    (3, 0xFF), (4, 0xFE),                   # the first step of the first segment (4 in 16 bits)
    (123, 0xF0), (124, 0xEF),               # the first segment ends at 31 in 14 bits, 124 in 16
    (-124, 0x70), (-125, 0x6F),             # and at -125 on the negative side (one's complement)
])
def test_known_g711_codes_at_the_boundaries(sample, code):
    assert int(voice.mulaw_encode(np.array([sample]))[0]) == code


@pytest.mark.parametrize("code, sample", [
    (0xFF, 0), (0x7F, 0), (0x80, 32124), (0x00, -32124),
    (0xF0, 120), (0xEF, 132), (0x70, -120), (0x6F, -132), (0xFE, 8),
])
def test_known_g711_levels(code, sample):
    assert int(voice.mulaw_decode(np.array([code]))[0]) == sample


def test_a_decoded_sample_is_within_half_a_step_of_the_original():
    codes = voice.mulaw_encode(ALL_PCM)
    error = np.abs(voice.mulaw_decode(codes).astype(np.int32) - ALL_PCM)
    magnitude = np.abs(ALL_PCM.astype(np.int32))
    # The step doubles with each segment (the code's exponent): 8 in the first, 1024 in the last.
    half_step = 4 << ((~codes.astype(np.int32) >> 4) & 0x7)
    # Past the last level (32124) and its half step, the error is the clipping.
    inside = magnitude <= 32124 + 512
    assert np.all(error[inside] <= half_step[inside])
    assert np.all(error[~inside] <= 32768 - 32124)
    # So a sample keeps its value to within 1/15 of it (to 4 near zero): about 24 dB, at any level.
    assert np.all(error[inside] <= np.maximum(4, magnitude[inside] / 15))


@pytest.mark.parametrize("level_db", [0, -10, -20, -30, -40])
def test_a_tone_keeps_about_the_same_signal_to_noise_ratio_at_any_level(level_db):
    # What companding is for: a linear 8-bit code would lose 6 dB for every halving of the level.
    # 1004 Hz, the usual test tone, so that the samples do not fall on the same few phases.
    tone = np.sin(2 * np.pi * 1004 * np.arange(8000) / 8000 + 0.1) * 0.99 * 10 ** (level_db / 20)
    coded = voice.mulaw_decode(voice.mulaw_encode(voice.to_pcm16(tone))) / 32768
    assert 33 < 10 * np.log10(np.mean(tone ** 2) / np.mean((coded - tone) ** 2)) < 41


def test_the_codec_agrees_with_pythons_own():
    audioop = pytest.importorskip("audioop")  # in the standard library until Python 3.13
    codes = voice.mulaw_encode(ALL_PCM)
    theirs = np.frombuffer(audioop.lin2ulaw(ALL_PCM.tobytes(), 2), np.uint8)
    # audioop is Sun's coder, which takes a negative sample's magnitude by two's complement where
    # G.191 takes one's: on that side a sample at a decision level may get the next code.
    assert np.array_equal(codes[ALL_PCM >= 0], theirs[ALL_PCM >= 0])
    assert np.all(np.abs(codes[ALL_PCM < 0].astype(int) - theirs[ALL_PCM < 0]) <= 1)
    assert np.array_equal(voice.mulaw_decode(np.arange(256)),
                          np.frombuffer(audioop.ulaw2lin(bytes(range(256)), 2), np.int16))


# --- the telephone line ----------------------------------------------------------------------------

def test_the_line_is_8_khz_on_the_256_levels_and_as_long_as_the_speech(booking):
    line = voice.telephone(booking, snr_db=20)
    assert line.sample_rate == 8000 and line.samples.dtype == np.float32
    assert line.ms == pytest.approx(booking.ms, abs=1)
    levels = set((voice.mulaw_decode(np.arange(256)) / 32768).astype(np.float32).tolist())
    assert set(np.unique(line.samples).tolist()) <= levels


@pytest.mark.parametrize("snr_db", [30.0, 20.0, 10.0, 0.0])
def test_noise_is_added_at_the_signal_to_noise_ratio(booking, snr_db):
    clean = voice.to_engine(booking)
    noisy = voice.add_noise(clean, 16000, snr_db, seed=1)
    assert snr_of(clean, noisy, 16000) == pytest.approx(snr_db, abs=1)


@pytest.mark.parametrize("snr_db", [20.0, 10.0, 0.0])
def test_the_line_carries_the_noise_at_its_ratio(booking, snr_db):
    # The codec's own error (about 38 dB below) adds a little to the noise measured back.
    clean = voice.telephone(booking, snr_db=None).samples
    noisy = voice.telephone(booking, snr_db=snr_db, seed=3).samples
    assert snr_of(clean, noisy, 8000) == pytest.approx(snr_db, abs=1)


def test_the_speech_level_does_not_count_silence(booking):
    padded = np.concatenate([np.zeros(22050 * 3, np.float32), booking.samples, np.zeros(22050 * 3, np.float32)])
    assert voice.speech_level(padded, 22050) == pytest.approx(voice.speech_level(booking.samples, 22050), rel=0.01)
    assert voice.speech_level(np.zeros(1000, np.float32), 22050) == 0.0
    # Silence stays silent on the line, whatever the ratio asked.
    assert not np.any(voice.telephone(Audio(np.zeros(22050, np.float32), 22050), snr_db=0).samples)


def test_the_same_seed_gives_the_same_noise_and_another_seed_other_noise(booking):
    first, again, other = (voice.telephone(booking, snr_db=10, seed=seed).samples for seed in (7, 7, 8))
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)
    assert np.array_equal(voice.telephone(booking, snr_db=None, seed=1).samples,
                          voice.telephone(booking, snr_db=None, seed=2).samples)


@pytest.mark.parametrize("snr_db", [float("nan"), float("inf")])
def test_a_ratio_that_is_no_number_is_refused(booking, snr_db):
    with pytest.raises(ValueError, match="snr_db must be a finite number"):
        voice.telephone(booking, snr_db=snr_db)
    with pytest.raises(ValueError, match="snr_db must be a finite number"):
        VoiceChannel(lambda samples: "", telephone=True, snr_db=snr_db)


@pytest.mark.parametrize("rate", [8000, 16000, 22050])
def test_the_engine_gets_16_khz_float32_of_the_same_length(rate):
    audio = Audio(np.sin(np.arange(rate) / 10).astype(np.float32) * 0.5, rate)
    samples = voice.to_engine(audio)
    assert samples.dtype == np.float32 and samples.ndim == 1
    assert samples.size == pytest.approx(16000, abs=2)


def test_the_word_error_rate_is_the_speech_tests_own():
    assert voice.word_error_rate("Book it for Tuesday.", "book it for tuesday") == 0.0
    assert voice.word_error_rate("Book it for Tuesday", "book it on Tuesday") == 0.25
    assert voice.word_error_rate("yes", "yes yes yes") == 2.0  # insertions count past 1
    assert voice.word_error_rate("", "") == 0.0


# --- heard by the bundled speech model --------------------------------------------------------------

@pytest.fixture
def engine(converted_model):
    transcriber = fresh_transcriber(converted_model)
    return lambda samples: transcriber.transcribe(samples).text


def test_a_clean_sentence_is_heard_as_it_was_said(engine):
    heard = VoiceChannel(engine).hear(BOOKING)
    assert heard.said == BOOKING
    assert heard.wer <= 0.35, heard.heard
    assert heard.wer == voice.word_error_rate(BOOKING, heard.heard)
    assert 0.5 * 9 / 165 * 60_000 <= heard.audio_ms <= 1.5 * 9 / 165 * 60_000
    assert heard.synthesis_ms > 0 and heard.transcription_ms > 0


def test_the_telephone_line_is_heard_and_scored(engine):
    heard = VoiceChannel(engine, telephone=True, snr_db=20).hear(BOOKING)
    assert heard.heard.strip()
    assert 0 <= heard.wer <= 1.5, heard.heard
    assert heard.audio_ms == pytest.approx(voice.synthesise(BOOKING).ms, abs=50)


def test_a_line_as_loud_as_the_speech_is_heard_no_better_than_clean_speech(engine):
    # Over three sentences, so that one lucky guess through the noise cannot turn it round.
    sentences = [BOOKING, "Can you tell me what time you open on Saturday?",
                 "I'd like to cancel my subscription, please."]
    clean = VoiceChannel(engine)
    noisy = VoiceChannel(engine, telephone=True, snr_db=0)
    assert sum(noisy.hear(s).wer for s in sentences) >= sum(clean.hear(s).wer for s in sentences)


def test_a_turn_with_nothing_to_say_never_reaches_the_engine():
    calls = []

    def transcribe(samples):
        calls.append(samples)
        return "something"

    channel = VoiceChannel(transcribe, telephone=True)
    for text in ("", "  ", "...", "😀"):
        assert channel.hear(text) == (text, "", 0.0, 0.0, 0.0, 0.0)
    assert calls == []
    channel.hear("Yes")
    assert len(calls) == 1 and calls[0].dtype == np.float32


def test_a_turn_gets_the_same_noise_in_every_run_and_other_turns_other_noise():
    draw = lambda channel, text: channel.noise_for(text).standard_normal(4).tolist()  # noqa: E731
    channel, rerun, other = (VoiceChannel(lambda samples: "", telephone=True, seed=seed) for seed in (5, 5, 6))
    assert draw(channel, BOOKING) == draw(rerun, BOOKING)
    assert draw(channel, BOOKING) != draw(channel, "Yes")
    assert draw(channel, BOOKING) != draw(other, BOOKING)


@pytest.mark.parametrize("seed", [-1, 1.5, None])
def test_a_seed_that_numpy_cannot_take_is_refused(seed):
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        VoiceChannel(lambda samples: "", telephone=True, seed=seed)
