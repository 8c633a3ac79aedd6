"""The speech server as a drop-in for code written against OpenAI: model ids, word timestamps,
prompts, non-speech annotations and rate-limit headers, through the openai SDK where it applies."""
from __future__ import annotations

import io
import wave

import httpx
import numpy as np
import openai
import pytest

from stt.annotations import is_annotation, speech_words
from stt.engine import PROMPT_TOKENS
from tests.support.speech import FIXTURES, JFK, wer, words
from tests.support.speech_server import start_stt, stop_stt
from tests.support.transcriptions import assert_openai_error, jfk, post

OPENAI_IDS = ["whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe"]
RATE_HEADERS = {"ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"}


@pytest.fixture(scope="module")
def client(stt) -> openai.OpenAI:
    return openai.OpenAI(base_url=stt.url + "/v1", api_key=stt.token, max_retries=0)


@pytest.fixture(scope="module")
def transcriber(converted_model):
    from stt.engine import Transcriber
    return Transcriber(converted_model, n_threads=1)


def wav(samples: np.ndarray) -> bytes:
    """16 kHz mono 16-bit WAV of float samples in [-1, 1]."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return buf.getvalue()


def silence(seconds: float) -> bytes:
    return wav(np.zeros(int(16000 * seconds)))


def jfk_samples() -> np.ndarray:
    from stt.audio import decode
    return decode(FIXTURES / "jfk.wav")


# --- model ids ------------------------------------------------------------------------------

@pytest.mark.parametrize("model", OPENAI_IDS)
def test_openai_model_ids_transcribe_with_the_default_model(client, model):
    with open(FIXTURES / "jfk.wav", "rb") as f:
        result = client.audio.transcriptions.create(model=model, file=f)
    assert words(result.text) == words(JFK)


def test_an_unknown_model_is_400_naming_the_known_ones(client):
    with open(FIXTURES / "jfk.wav", "rb") as f, pytest.raises(openai.BadRequestError) as refused:
        client.audio.transcriptions.create(model="whisper-2", file=f)
    error = refused.value.body
    assert refused.value.status_code == 400 and error["param"] == "model" and error["code"] == "model_not_found"
    assert all(name in error["message"] for name in ["svc-stt", *OPENAI_IDS])


def test_the_model_list_has_our_models_and_the_openai_ids_in_openai_shape(client):
    models = client.models.list()
    ids = [m.id for m in models.data]
    assert ids[0] == "svc-stt" and ids[-len(OPENAI_IDS):] == OPENAI_IDS
    for m in models.data:
        assert m.object == "model" and m.owned_by == "system" and isinstance(m.created, int) and m.created > 0


def test_the_aliases_come_from_the_setting(tmp_path, converted_model):
    server = start_stt(tmp_path, converted_model, STT_MODEL_ALIASES=" my-whisper ,,whisper-large ")
    try:
        listed = httpx.get(server.url + "/v1/models", headers=server.headers).json()
        assert [m["id"] for m in listed["data"]][-2:] == ["my-whisper", "whisper-large"]
        for accepted in ("my-whisper", "whisper-large"):
            r = post(server, files=jfk("ogg"), data={"model": accepted})
            assert r.status_code == 200 and words(r.json()["text"]) == words(JFK)
        error = assert_openai_error(post(server, files=jfk("ogg"), data={"model": "whisper-1"}), 400, "model")
        assert "my-whisper" in error["message"] and "whisper-1" not in error["message"].split("Known models:")[1]
    finally:
        stop_stt(server)


# --- word timestamps ------------------------------------------------------------------------

def assert_timed_jfk_words(result_words, duration):
    assert [words(w.word)[0] for w in result_words] == words(JFK)
    starts = [w.start for w in result_words]
    assert starts == sorted(starts) and len(set(starts)) == len(starts), starts
    for w in result_words:
        assert 0.0 <= w.start <= w.end <= duration, w
        assert 0.0 <= w.confidence <= 1.0


@pytest.mark.parametrize("granularities", [["word"], ["word", "segment"]])
def test_word_granularity_times_every_word_and_keeps_its_confidence(client, granularities):
    with open(FIXTURES / "jfk.wav", "rb") as f:
        result = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="verbose_json",
                                                    timestamp_granularities=granularities)
    assert abs(result.duration - 11.0) < 0.1
    assert_timed_jfk_words(result.words, result.duration)
    assert result.words[0].start < 1.0 and result.words[-1].end > 10.0
    assert result.segments and result.segments[0].start == 0.0


@pytest.mark.parametrize("data", [{}, {"timestamp_granularities[]": "segment"}])
def test_without_word_granularity_words_are_untimed_as_before(stt, data):
    r = post(stt, files=jfk(), data={"response_format": "verbose_json", **data})
    body = r.json()
    assert r.status_code == 200 and all(set(w) == {"word", "confidence"} for w in body["words"])
    assert [words(w["word"])[0] for w in body["words"]] == words(JFK)
    assert body["segments"] and all({"id", "start", "end", "text"} <= set(s) for s in body["segments"])


def test_the_bare_field_name_with_commas_is_taken_too(stt):
    r = post(stt, files=jfk(), data={"response_format": "verbose_json", "timestamp_granularities": "segment,word"})
    assert r.status_code == 200 and all({"start", "end"} <= set(w) for w in r.json()["words"])


@pytest.mark.parametrize("value", ["words", "char", "word,sentence"])
def test_an_unknown_granularity_is_400_naming_the_field(stt, value):
    r = post(stt, files=jfk(), data={"response_format": "verbose_json", "timestamp_granularities[]": value})
    assert "timestamp_granularities[]" in assert_openai_error(r, 400, "timestamp_granularities")["message"]


@pytest.mark.parametrize("fmt", ["json", "text", "srt"])
def test_granularities_need_verbose_json(stt, fmt):
    r = post(stt, files=jfk(), data={"response_format": fmt, "timestamp_granularities[]": "word"})
    assert "verbose_json" in assert_openai_error(r, 400, "timestamp_granularities")["message"]


# --- the prompt -----------------------------------------------------------------------------

def handed_to_whisper(transcriber) -> str:
    """The initial prompt of the last pass, as whisper.cpp's parameters hold it."""
    return transcriber._models[0]._params.initial_prompt


@pytest.mark.parametrize("prompt", ["1234567890" * 1600, "https://example.com/a/b?c=d&" * 570,
                                    "The customer asked about a refund. " * 460])
def test_a_long_prompt_is_cut_to_its_last_224_tokens(transcriber, prompt):
    result = transcriber.transcribe(jfk_samples(), prompt=prompt)
    given = handed_to_whisper(transcriber)
    # The prompt still conditions the decoder (this one turns "ask" into "asked" at times).
    assert wer(words(JFK), words(result.text)) <= 0.1, result.text
    # All that fits of the tail: at most 224 tokens, and within a word of it.
    assert PROMPT_TOKENS - 5 <= transcriber.count_tokens(given) <= PROMPT_TOKENS
    assert prompt.strip().endswith(given) and len(given) < len(prompt)


def test_a_prompt_of_224_tokens_is_kept_whole_and_one_more_cuts_its_head(transcriber):
    # "refund" is two tokens at the start and one after a space.
    whole = next(p for k in range(200, 240) if transcriber.count_tokens(p := " ".join(["refund"] * k)) == PROMPT_TOKENS)
    assert transcriber.prompt_tail(whole) == whole
    longer = whole + " refund"
    assert transcriber.count_tokens(longer) == PROMPT_TOKENS + 1
    assert transcriber.prompt_tail(longer) == whole


def test_a_prompt_wrapped_in_quotes_does_not_wrap_the_text(stt):
    r = post(stt, files=jfk(), data={"prompt": '"Marmalade xylophone"'})
    text = r.json()["text"]
    assert words(text) == words(JFK) and not text.startswith('"') and not text.endswith('"'), text


def test_a_distinctive_prompt_never_reaches_the_text_of_speech(client):
    prompt = "Zorblax quibblewick fennimore, Marmalade Xylophone Industries."
    with open(FIXTURES / "jfk.wav", "rb") as f:
        result = client.audio.transcriptions.create(model="whisper-1", file=f, prompt=prompt,
                                                    response_format="verbose_json", timestamp_granularities=["word"])
    assert words(result.text) == words(JFK)
    assert not set(words(prompt)) & set(words(result.text) + [w for x in result.words for w in words(x.word)])


def test_a_distinctive_prompt_on_silence_gives_nothing(client):
    result = client.audio.transcriptions.create(model="whisper-1", file=("silence.wav", silence(3.0)),
                                                prompt="Zorblax quibblewick fennimore.", response_format="verbose_json")
    assert result.text == "" and result.words == [] and result.segments == []


def test_a_prompt_copied_onto_noise_is_dropped(stt):
    """On quiet noise whisper continues this prompt ("the moon tonight"); a pass without it hears
    nothing there, so nothing is returned."""
    noise = wav(np.random.default_rng(0).standard_normal(48000) * 0.003)
    r = post(stt, files={"file": ("noise.wav", noise)},
             data={"prompt": "Purple elephant dances on the moon tonight", "response_format": "verbose_json"})
    assert r.status_code == 200 and r.json()["text"] == "" and r.json()["words"] == []


def test_speech_that_repeats_the_prompt_is_kept(stt):
    """The same check keeps a prompt's words that the audio does say."""
    r = post(stt, files=jfk(), data={"prompt": JFK})
    assert words(r.json()["text"]) == words(JFK)


# --- non-speech annotations -----------------------------------------------------------------

@pytest.mark.parametrize("words_in, speech", [
    (["[BLANK_AUDIO]"], [False]),
    (["[", "Silence", "]"], [False, False, False]),
    (["(very", "upbeat", "music)"], [False, False, False]),
    (["*music*"], [False]),
    (["♪", "la", "la", "♪"], [False, False, False, False]),
    (["Hello", "(laughs)", "there."], [True, False, True]),
    (["And", "so,", "[MUSIC]", "my", "fellow"], [True, True, False, True, True]),
    (["(inaudible", "words"], [False, False]),  # left open: to the end of the segment
    (["Americans,", "ask", "not"], [True, True, True]),
])
def test_annotations_are_not_speech(words_in, speech):
    assert speech_words(words_in) == speech


def test_the_word_rule_is_the_streams_rule():
    assert is_annotation("[BLANK_AUDIO]") and is_annotation("(upbeat") and is_annotation("music)")
    assert is_annotation("*sigh*") and is_annotation("♪")
    assert not is_annotation("Americans,") and not is_annotation("don't")


SHORT = {"short.wav": lambda: wav(jfk_samples()[:2400]), "silent.wav": lambda: silence(0.15),
         "hum.wav": lambda: wav(0.05 * np.sin(np.arange(48000) * 2 * np.pi * 120 / 16000))}


@pytest.mark.parametrize("name", SHORT)
def test_no_annotation_reaches_a_client_in_any_format(stt, name):
    """A 0.15 s clip gave "[BLANK_AUDIO]", a hum "(upbeat music)": no speech, so nothing."""
    files = {"file": (name, SHORT[name]())}
    expected = {"json": lambda r: r.json()["text"] == "", "text": lambda r: r.text == "", "srt": lambda r: r.text == "",
                "vtt": lambda r: r.text.strip() == "WEBVTT",
                "verbose_json": lambda r: (r.json()["text"], r.json()["words"], r.json()["segments"]) == ("", [], [])}
    for fmt, holds in expected.items():
        r = post(stt, files=files, data={"response_format": fmt})
        assert r.status_code == 200 and holds(r), (fmt, r.text)


def test_speech_around_silence_keeps_its_words_only(stt):
    audio = np.concatenate([np.zeros(16000 * 3), jfk_samples(), np.zeros(16000 * 3)])
    r = post(stt, files={"file": ("padded.wav", wav(audio))},
             data={"response_format": "verbose_json", "timestamp_granularities[]": "word"})
    body = r.json()
    assert words(body["text"]) == words(JFK) and not set("[]()*♪") & set(body["text"])
    assert [words(w["word"])[0] for w in body["words"]] == words(JFK)
    # Token timestamps place the first word early after a long silence; later ones are in order.
    starts = [w["start"] for w in body["words"]]
    assert starts == sorted(starts) and starts[-1] > 10.0 and body["words"][-1]["end"] <= body["duration"]


# --- rate-limit headers ---------------------------------------------------------------------

def test_every_speech_response_carries_the_rate_limit_headers(stt):
    responses = [post(stt, files=jfk("ogg"), data={"response_format": fmt})
                 for fmt in ("json", "text", "srt", "vtt", "verbose_json")]
    responses += [post(stt, files=jfk("ogg"), data={"model": "whisper-2"}),
                  post(stt, files=jfk("ogg"), data={"response_format": "json", "timestamp_granularities[]": "word"}),
                  httpx.get(stt.url + "/v1/models", headers=stt.headers)]
    assert [r.status_code for r in responses] == [200] * 5 + [400, 400, 200]
    for r in responses:
        assert RATE_HEADERS <= set(r.headers), (r.status_code, dict(r.headers))
    assert len({r.headers["ratelimit-limit"] for r in responses}) == 1
