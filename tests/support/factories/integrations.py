"""Integrations: a workspace's third-party credentials, made through the domain as the API makes them."""
from __future__ import annotations

import itertools

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal

_names = itertools.count(1)


def integration(actor: Actor, kind: str = "crm", secret: str = "factory-secret-0000", name: str | None = None,
                **fields) -> str:
    """An integration of the actor's workspace (named "Integration <n>" unless ``name`` is given),
    with any other fields of ``models.integrations.integrations.create``; its id."""
    from models.integrations import integrations
    with session():
        return integrations.create(principal(actor), workspace_id=actor.workspace_id, kind=kind, secret=secret,
                                   name=name or f"Integration {next(_names)}", **fields).id
