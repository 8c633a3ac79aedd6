"""Vocabulary terms and speech-filter settings, made through the domain as the API makes them."""
from __future__ import annotations

import itertools

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal

_terms = itertools.count(1)


def term(actor: Actor, written: str | None = None, spoken: list[str] | None = None) -> str:
    """A term of the actor's workspace's vocabulary (written "TERM-<n>", unique, unless ``written``
    is given); its id."""
    from models.speech import vocabulary
    with session():
        return vocabulary.create_term(principal(actor), workspace_id=actor.workspace_id,
                                      written=written or f"TERM-{next(_terms)}", spoken=spoken).id


def speech_filter(actor: Actor, **settings) -> dict:
    """The actor's workspace's speech filter set to ``settings`` (wire names, merged onto what it
    has); the settings it then has."""
    from models.identity import workspaces
    with session():
        return workspaces.update(workspace_id=actor.workspace_id,
                                 settings={"speechFilter": settings}).settings["speechFilter"]
