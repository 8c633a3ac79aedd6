"""Retrieval for an agent's runtime: retrieveKnowledge."""
from __future__ import annotations

from api.envelope import ok
from models.knowledge import retrieval
from models.knowledge.retrieval import Passage


def passage_shape(passage: Passage) -> dict:
    return {"articleId": passage.article_id, "knowledgeBaseId": passage.knowledge_base_id, "title": passage.title,
            "body": passage.body, "truncated": passage.truncated, "score": passage.score}


def retrieve_knowledge(workspaceId: str, body: dict):
    passages = retrieval.retrieve(workspace_id=workspaceId, agent_id=body["agentId"], query=body["query"],
                                  top_k=body.get("topK", 5))
    return ok({"results": [passage_shape(p) for p in passages]})
