"""Retrieval: what an agent's runtime asks during a call, the articles of the agent's knowledge
bases that best answer the caller's words, ranked together (models.knowledge.search).

Each hit carries its article's body cut to ``BODY_MAX_CHARS`` (at a word's end where there is one
near, ``truncated`` then true), so that an answer stays small enough to hand to a language model
whatever the articles hold. Three statements whatever the knowledge bases' size: the agent's
knowledge bases, the query words' counts, the ranked hits with their bodies (read with the hits,
by their primary key). A read: no audit entry.
"""
from __future__ import annotations

from typing import NamedTuple

from models.kernel.errors import InvalidInput
from models.knowledge import agents, search

QUERY_MAX_CHARS = 1000
TOP_K_MAX = 20
BODY_MAX_CHARS = 2000


class Passage(NamedTuple):
    article_id: str
    knowledge_base_id: str
    title: str
    body: str
    truncated: bool
    score: float


def _cut(body: str) -> tuple[str, bool]:
    if len(body) <= BODY_MAX_CHARS:
        return body, False
    head = body[:BODY_MAX_CHARS]
    space = head.rfind(" ", BODY_MAX_CHARS - 200)
    return (head[:space] if space > 0 else head).rstrip() + "…", True


def retrieve(*, workspace_id: str, agent_id: str, query: str, top_k: int = 5) -> list[Passage]:
    """The ``top_k`` articles of the agent's knowledge bases best matching ``query``, best first;
    NotFound for an agent not of the workspace, [] for one without knowledge bases."""
    if not isinstance(query, str) or not 1 <= len(query) <= QUERY_MAX_CHARS:
        raise InvalidInput(f"query must be 1 to {QUERY_MAX_CHARS} characters.")
    if not 1 <= top_k <= TOP_K_MAX:
        raise InvalidInput(f"topK must be 1 to {TOP_K_MAX}; {top_k} given.")
    if not search.terms(query):
        raise InvalidInput("query must hold at least one word of letters or digits.")
    knowledge_base_ids = agents.attached_ids(workspace_id, agent_id)
    # One more character than kept, so that a body just over the bound is known to be cut.
    found = search.search_bodies(workspace_id=workspace_id, knowledge_base_ids=knowledge_base_ids, query=query,
                                 limit=top_k, body_chars=BODY_MAX_CHARS + 1)
    return [Passage(hit.article_id, hit.knowledge_base_id, hit.title, *_cut(body), hit.score) for hit, body in found]
