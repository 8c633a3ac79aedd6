"""A recording's transcript is stored with the workspace's vocabulary and, when it is on, its
speech filter, in the text and the timed words alike; another workspace's change nothing."""
from __future__ import annotations

import pytest

from models.calls import recordings, transcription
from models.calls.tables import Call
from models.kernel.db import session
from tests.support import factories

TEXT = "Pay with acme pay on 4111 1111 1111 1111."
WORDS = [{"word": w, "start": float(i), "end": i + 0.5, "confidence": 0.9}
         for i, w in enumerate(["Pay", "with", "acme", "pay", "on", "4111", "1111", "1111", "1111."])]


@pytest.fixture
def owner(db, tmp_path):
    recordings.configure(tmp_path)
    return factories.workspace()


def transcribed(actor) -> Call:
    call_id = factories.call(actor)
    part = recordings.part_file(actor.workspace_id, call_id)
    part.write_bytes(b"RIFF")
    with session():
        recordings.attach(workspace_id=actor.workspace_id, call_id=call_id, path=recordings.finish_part(part),
                          content_type="audio/wav", size=4)
        job = transcription.claim(60)
        assert transcription.complete(job, text=TEXT, words=WORDS, language="english")
        return Call.get_by_id(call_id)


def test_a_recordings_transcript_has_the_vocabulary_and_the_filters_masks(owner):
    factories.term(owner, "Acme Pay")
    factories.speech_filter(owner, enabled=True)
    call = transcribed(owner)
    assert call.transcription_text == "Pay with Acme Pay on [card]."
    assert [(w["word"], w["start"], w["end"]) for w in call.transcription_words] == [
        ("Pay", 0.0, 0.5), ("with", 1.0, 1.5), ("Acme Pay", 2.0, 3.5), ("on", 4.0, 4.5), ("[card].", 5.0, 8.5)]


def test_without_customisation_the_transcript_is_stored_as_heard(owner):
    other = factories.workspace()
    factories.term(other, "Acme Pay")
    factories.speech_filter(other, enabled=True)
    call = transcribed(owner)
    assert (call.transcription_text, call.transcription_words) == (TEXT, WORDS)
