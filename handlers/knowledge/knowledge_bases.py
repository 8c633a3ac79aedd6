"""Knowledge bases: createKnowledgeBase, listKnowledgeBases, getKnowledgeBase, updateKnowledgeBase,
deleteKnowledgeBase, createArticle, listArticles, getArticle, updateArticle, deleteArticle,
searchKnowledgeBase."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.knowledge import knowledge_bases as kb
from models.knowledge.knowledge_bases import ArticleRecord, KnowledgeBaseRecord, SearchResult


def knowledge_base_shape(record: KnowledgeBaseRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "name": record.name,
            "description": record.description, "createdBy": record.created_by, "createdAt": iso(record.created_at),
            "updatedAt": iso(record.updated_at)}


def article_shape(record: ArticleRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "knowledgeBaseId": record.knowledge_base_id,
            "title": record.title, "body": record.body, "createdBy": record.created_by,
            "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at)}


def result_shape(result: SearchResult) -> dict:
    return {"articleId": result.article_id, "knowledgeBaseId": result.knowledge_base_id, "title": result.title,
            "score": result.score, "snippet": result.snippet}


def create_knowledge_base(workspaceId: str, body: dict, principal):
    record = kb.create_knowledge_base(principal, workspace_id=workspaceId, name=body["name"],
                                      description=body.get("description"))
    return ok({"knowledgeBase": knowledge_base_shape(record)}, "Knowledge base created")


def list_knowledge_bases(workspaceId: str, limit: int = 20, offset: int = 0):
    page = kb.list_knowledge_bases(workspace_id=workspaceId, limit=limit, offset=offset)
    return ok({"knowledgeBases": [knowledge_base_shape(r) for r in page.items], "pagination": page.pagination()})


def get_knowledge_base(workspaceId: str, knowledgeBaseId: str):
    record = kb.get_knowledge_base(workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId)
    return ok({"knowledgeBase": knowledge_base_shape(record)})


def update_knowledge_base(workspaceId: str, knowledgeBaseId: str, body: dict):
    changes = {k: body[k] for k in ("name", "description") if k in body}
    record = kb.update_knowledge_base(workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId, **changes)
    return ok({"knowledgeBase": knowledge_base_shape(record)}, "Knowledge base updated")


def delete_knowledge_base(workspaceId: str, knowledgeBaseId: str):
    kb.delete_knowledge_base(workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId)
    return deleted(knowledgeBaseId, "Knowledge base deleted")


def create_article(workspaceId: str, knowledgeBaseId: str, body: dict, principal):
    record = kb.create_article(principal, workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId,
                               title=body["title"], body=body["body"])
    return ok({"article": article_shape(record)}, "Article created")


def list_articles(workspaceId: str, knowledgeBaseId: str, limit: int = 20, offset: int = 0):
    page = kb.list_articles(workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId, limit=limit, offset=offset)
    return ok({"articles": [article_shape(r) for r in page.items], "pagination": page.pagination()})


def get_article(workspaceId: str, knowledgeBaseId: str, articleId: str):
    record = kb.get_article(workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId, article_id=articleId)
    return ok({"article": article_shape(record)})


def update_article(workspaceId: str, knowledgeBaseId: str, articleId: str, body: dict):
    changes = {k: body[k] for k in ("title", "body") if k in body}
    record = kb.update_article(workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId, article_id=articleId,
                               **changes)
    return ok({"article": article_shape(record)}, "Article updated")


def delete_article(workspaceId: str, knowledgeBaseId: str, articleId: str):
    kb.delete_article(workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId, article_id=articleId)
    return deleted(articleId, "Article deleted")


def search_knowledge_base(workspaceId: str, knowledgeBaseId: str, q: str, topK: int = 5):
    results = kb.search_knowledge_base(workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId, q=q, limit=topK)
    return ok({"results": [result_shape(r) for r in results]})
