"""Dashboard widgets, made through the domain as the API makes them."""
from __future__ import annotations

import itertools

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal

_names = itertools.count(1)


def widget(actor: Actor, name: str | None = None, source: str = "calls", **fields) -> str:
    """A widget of the actor's workspace (named "Widget <n>", unique, unless ``name`` is given): of
    calls counting them by default, else with the fields of
    ``models.dashboards.widgets.create_widget``; its id."""
    from models.dashboards import widgets
    if source == "calls":
        fields.setdefault("metric", "count")
    with session():
        return widgets.create_widget(principal(actor), workspace_id=actor.workspace_id,
                                     name=name or f"Widget {next(_names)}", source=source, **fields).id
