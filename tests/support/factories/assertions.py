"""Unit tests: suites, their assertions and their assignments, made through the domain as the API
makes them."""
from __future__ import annotations

import itertools

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal

_names = itertools.count(1)


def suite(actor: Actor, name: str | None = None, *, description: str | None = None) -> str:
    """A suite of the actor's workspace (a fresh name unless given); its id."""
    from models.assertions import suites
    with session():
        return suites.create(principal(actor), workspace_id=actor.workspace_id, name=name or f"Suite {next(_names)}",
                             description=description).id


def assertion(actor: Actor, suite_id: str, kind: str = "contains", name: str | None = None, **params) -> str:
    """An assertion of ``kind`` in the suite, with ``params`` as the API names them (a contains
    assertion of "refund" unless given); its id."""
    from models.assertions import assertions
    if kind == "contains" and not params:
        params = {"text": "refund"}
    with session():
        return assertions.create(principal(actor), workspace_id=actor.workspace_id, suite_id=suite_id,
                                 name=name or f"Assertion {next(_names)}", kind=kind, params=params).id


def assignment(actor: Actor, suite_id: str, entity_type: str, entity_id: str) -> None:
    """The suite put on the actor's agent or workflow."""
    from models.assertions import assignments
    with session():
        assignments.assign(principal(actor), workspace_id=actor.workspace_id, suite_id=suite_id,
                           entity_type=entity_type, entity_id=entity_id)
