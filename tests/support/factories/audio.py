"""Audio library files, made through the domain as the upload makes them (the file written,
probed with PyAV and named in its row), and their transcriptions requested as the API requests them."""
from __future__ import annotations

import itertools
import shutil

from models.audio import library
from models.calls import recordings
from models.kernel.db import session
from tests.support.factories.identity import Actor, principal
from tests.support.speech import FIXTURES

_names = itertools.count(1)


def audio_file(actor: Actor, fixture: str = "jfk.wav", content_type: str = "audio/wav", kind: str = "greeting",
               name: str | None = None) -> str:
    """An audio file of the actor's workspace, a copy of tests/fixtures/``fixture`` (named
    "Audio <n>" unless ``name`` is given); its id."""
    part = library.part_file(actor.workspace_id)
    shutil.copyfile(FIXTURES / fixture, part)
    final = recordings.finish_part(part)
    probed = library.probe(final, content_type)
    with session():
        return library.create_audio(principal(actor), workspace_id=actor.workspace_id,
                                    name=name or f"Audio {next(_names)}", kind=kind, path=final,
                                    content_type=content_type, size=final.stat().st_size, probed=probed).id


def audio_transcription(actor: Actor, audio_id: str, force: bool = False) -> str:
    """The file's transcription requested (queued, unless one is under way or has succeeded); its status."""
    from models.audio import transcription
    with session():
        return transcription.request_transcription(principal(actor), workspace_id=actor.workspace_id,
                                                   audio_id=audio_id, force=force).transcription.status
