"""Personas: simulated callers, made through the domain as the API makes them."""
from __future__ import annotations

import itertools

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal

_names = itertools.count(1)


def persona(actor: Actor, name: str | None = None, goal: str = "Book a table for two tonight at 8 pm.",
            **fields) -> str:
    """A persona of the actor's workspace (named "Caller <n>", unique, unless ``name`` is given),
    with any other fields of ``models.personas.personas.create_persona``; its id."""
    from models.personas import personas
    with session():
        return personas.create_persona(principal(actor), workspace_id=actor.workspace_id,
                                       name=name or f"Caller {next(_names)}", goal=goal, **fields).id
