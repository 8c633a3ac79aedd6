"""Knowledge documents, read into articles through the domain as the API reads an upload."""
from __future__ import annotations

import itertools

from models.kernel.db import session
from tests.support.factories.identity import Actor, principal

_names = itertools.count(1)


def document(actor: Actor, knowledge_base_id: str, body: bytes = b"# Refunds\n\nRefunds are paid back in five days.\n",
             content_type: str = "text/markdown", name: str | None = None) -> str:
    """A document of the knowledge base (named "Document <n>" unless ``name`` is given), its
    articles written and indexed; its id."""
    from models.knowledge import documents
    name = name or f"Document {next(_names)}"
    read = documents.read(body, content_type=content_type, name=name)
    with session():
        return documents.create_document(principal(actor), workspace_id=actor.workspace_id,
                                         knowledge_base_id=knowledge_base_id, name=name, read=read).id
