"""The language model endpoint of a workspace: its newest ``llm`` integration, else the settings'.

Everything that asks a model for a workspace (chat sessions, simulations) resolves its endpoint
through ``endpoint_for`` (or ``required_for``), so that a workspace's own endpoint takes the place
of LLM_BASE_URL, LLM_API_KEY and LLM_MODEL for it. The timeout stays the settings' (LLM_TIMEOUT_S).
"""
from __future__ import annotations

from typing import NamedTuple

from models.integrations.tables import Integration
from models.kernel import chat_completions, encryption
from models.kernel.chat_completions import Endpoint
from models.kernel.errors import Unavailable
from models.webhooks import connections

DEFAULT_TIMEOUT_S = 30.0
_I = Integration


def endpoint_for(workspace_id: str) -> Endpoint | None:
    """The workspace's newest llm integration as an Endpoint, else the settings' (None when neither)."""
    platform = chat_completions.configured()
    row = (_I.in_workspace(workspace_id, _I.base_url, _I.model, _I.secret).where(_I.kind == "llm")
           .order_by(_I.created_at.desc(), _I.id.desc()).tuples().first())
    if row is None:
        return platform
    base_url, model, secret = row
    # The workspace's URL was checked when it was saved; its connections are checked as they are
    # made too, since the name may resolve elsewhere by then.
    return Endpoint(base_url=base_url, api_key=encryption.decrypt(secret), model=model,
                    timeout_s=platform.timeout_s if platform else DEFAULT_TIMEOUT_S,
                    http_client=connections.http_client)


def required_for(workspace_id: str) -> Endpoint:
    """``endpoint_for``; Unavailable (503) saying what to set when there is none."""
    endpoint = endpoint_for(workspace_id)
    if endpoint is None:
        raise Unavailable(chat_completions.NOT_CONFIGURED + " Or add an llm integration to the workspace.",
                          retry_after_s=60)
    return endpoint


class Model(NamedTuple):
    """A model the workspace may ask: the platform's (integration_id None) or an integration's."""
    model: str
    source: str  # platform or integration
    integration_id: str | None


def models_for(workspace_id: str) -> list[Model]:
    """The platform's LLM_MODEL when LLM_BASE_URL is set, then the workspace's llm integrations'
    models, oldest first. One statement."""
    found = []
    if (platform := chat_completions.configured()) is not None:
        found.append(Model(platform.model, "platform", None))
    rows = (_I.in_workspace(workspace_id, _I.model, _I.id).where(_I.kind == "llm")
            .order_by(_I.created_at, _I.id).tuples())
    found.extend(Model(model, "integration", integration_id) for model, integration_id in rows)
    return found
