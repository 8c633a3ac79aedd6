"""Webhooks: subscriptions of a workspace, with their signing secrets."""
from __future__ import annotations

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal


def webhook_subscription(actor: Actor, url: str, events: list[str] = ("end-of-call-report",),
                         enabled: bool = True) -> tuple[str, str]:
    """A webhook subscription of the actor's workspace: its id and its signing secret. The URL is
    checked against the policy the test configured (models.webhooks.addresses)."""
    from models.webhooks.subscriptions import create
    with session():
        record, secret = create(principal(actor), workspace_id=actor.workspace_id, url=url, events=list(events),
                                enabled=enabled)
    return record.id, secret
