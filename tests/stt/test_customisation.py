"""A workspace's vocabulary and speech filter change what the real speech server answers it (file
and stream), within STT_CUSTOMISATION_TTL_S of a change, and nothing of what it answers another
workspace; a vocabulary lowers the word error rate on its terms (slow)."""
from __future__ import annotations

import time

import httpx
import pytest

from tests.support.speech import FIXTURES, jfk_at, wer, words
from tests.support.speech_server import start_stt, stop_stt
from tests.support.streams import run, session
from tests.support.vocabulary_audio import TERMS, customise, fillers, reference, said, wav_of


def transcribe(server, token: str, audio: bytes | None = None) -> dict:
    audio = audio if audio is not None else (FIXTURES / "jfk.wav").read_bytes()
    answer = httpx.post(server.url + "/v1/audio/transcriptions", headers={"Authorization": f"Bearer {token}"},
                        files={"file": ("audio.wav", audio, "audio/wav")},
                        data={"response_format": "verbose_json", "timestamp_granularities[]": "word"}, timeout=120)
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.fixture(scope="module")
def server(tmp_path_factory, converted_model):
    server = start_stt(tmp_path_factory.mktemp("stt"), converted_model, STT_CUSTOMISATION_TTL_S="0.5")
    yield server
    stop_stt(server)


def test_a_workspaces_vocabulary_and_filter_change_its_transcripts_and_no_others(server):
    mine = server.admin("bootstrap", "--workspace", "mine", "--email", "mine@example.com")
    other = server.admin("bootstrap", "--workspace", "other", "--email", "other@example.com")
    customise(server.env, other, terms=[["ASK-NOT", ["ask not"]], ["AMERICANS", ["americans"]]],
              speech_filter={"enabled": True, "words": ["country"]})
    time.sleep(0.6)  # past the time the server keeps a workspace's customisation
    theirs = transcribe(server, other["token"])
    assert "ASK-NOT what your **** can do for you" in theirs["text"], theirs["text"]
    assert "country" not in theirs["text"].lower()
    assert "ASK-NOT" in " ".join(s["text"] for s in theirs["segments"])
    merged = [w for w in theirs["words"] if "ASK-NOT" in w["word"]]
    assert len(merged) == 1 and 0 < merged[0]["start"] < merged[0]["end"] <= theirs["duration"], theirs["words"]
    assert [w["start"] for w in theirs["words"]] == sorted(w["start"] for w in theirs["words"])
    assert sum("****" in w["word"] for w in theirs["words"]) == 2

    plain = transcribe(server, mine["token"])
    assert "ask not what your country" in plain["text"].lower() and "****" not in plain["text"]
    customise(server.env, mine, speech_filter={"enabled": True, "words": ["ask not"]})
    time.sleep(0.6)  # a change shows once the server's copy is older than STT_CUSTOMISATION_TTL_S
    assert "**** what your country" in transcribe(server, mine["token"])["text"]

    frames = run(session(server.url, other["token"], jfk_at(16000), speed=4.0))
    result = frames["result"][0][1]
    # Whisper punctuates a stream's passes as it likes ("ask, "Not what"): a one-word term is sure to be heard.
    assert "AMERICANS" in result["text"] and "country" not in result["text"].lower(), result
    assert words(" ".join(w["word"] for w in result["word_confidences"])) == words(result["text"])


@pytest.mark.slow
def test_a_vocabulary_lowers_the_word_error_rate_on_its_terms(server):
    plain = server.admin("bootstrap", "--workspace", "plain", "--email", "plain@example.com")
    custom = server.admin("bootstrap", "--workspace", "custom", "--email", "custom@example.com")
    customise(server.env, custom, terms=[[w, [s]] for w, s, _ in TERMS] + fillers(200 - len(TERMS)))
    time.sleep(0.6)
    errors = {"plain": [], "custom": []}
    for written, spoken, sentence in TERMS:
        audio, _ = wav_of(said(sentence, spoken))
        expected = words(reference(sentence, written))
        for name, owner in (("plain", plain), ("custom", custom)):
            errors[name].append(wer(expected, words(transcribe(server, owner["token"], audio)["text"])))
    assert sum(errors["custom"]) < sum(errors["plain"]), errors
