"""Knowledge documents: uploadDocument, syncDocumentFromUrl, resyncDocument, listDocuments,
getDocument, deleteDocument.

The upload reads its own body, as a recording's does, but into memory: it is at most
KB_MAX_DOCUMENT_BYTES (10 MB by default), refused with 413 as soon as it passes them (at once when
its Content-Length says so). The file is then read into articles in a worker thread (a PDF's pages
take a while), and stored in a session of its own. A sync waits on another host: its operations run
in a worker thread and write in their own transaction once the fetch is done.
"""
from __future__ import annotations

import functools

import anyio.to_thread
import connexion
from starlette.requests import ClientDisconnect

from api.envelope import ok
from api.offload import in_session
from handlers.wire import deleted, iso
from models.kernel.errors import InvalidInput
from models.knowledge import documents
from models.knowledge.documents import DocumentRecord, DocumentTooLarge
from models.knowledge.knowledge_bases import get_knowledge_base


def document_shape(record: DocumentRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "knowledgeBaseId": record.knowledge_base_id,
            "name": record.name, "contentType": record.content_type, "bytes": record.bytes,
            "sourceUrl": record.source_url, "contentHash": record.content_hash, "articleCount": record.article_count,
            "createdBy": record.created_by, "createdAt": iso(record.created_at), "syncedAt": iso(record.synced_at)}


async def upload_document(workspaceId: str, knowledgeBaseId: str, name: str, principal, filename: str | None = None):
    request = connexion.request
    limit = documents.max_bytes()
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise DocumentTooLarge()
    name, filename = documents.check_name(name), documents.check_filename(filename)
    await in_session(get_knowledge_base, workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId)
    data = await receive(request.stream(), limit)
    read = await anyio.to_thread.run_sync(functools.partial(
        documents.read, data, content_type=request.headers.get("content-type"), name=name, filename=filename))
    record = await in_session(documents.create_document, principal=principal, workspace_id=workspaceId,
                              knowledge_base_id=knowledgeBaseId, name=name, read=read)
    return ok({"document": document_shape(record)}, "Document uploaded")


async def receive(stream, limit: int) -> bytes:
    """The body, at most ``limit`` bytes (DocumentTooLarge as soon as it passes them)."""
    received = bytearray()
    while True:
        try:
            chunk = await anext(stream, None)
        except ClientDisconnect:
            raise InvalidInput("The client went away before the document's body was complete.") from None
        if chunk is None:
            return bytes(received)
        received += chunk
        if len(received) > limit:
            raise DocumentTooLarge()


def sync_document_from_url(workspaceId: str, knowledgeBaseId: str, body: dict, principal):
    record = documents.sync_new(principal, workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId,
                                url=body["url"], name=body.get("name"))
    return ok({"document": document_shape(record), "changed": True}, "Document fetched")


def resync_document(workspaceId: str, knowledgeBaseId: str, documentId: str, principal):
    record, changed = documents.resync(principal, workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId,
                                       document_id=documentId)
    return ok({"document": document_shape(record), "changed": changed},
              "Document changed: its articles were replaced" if changed else "Document unchanged")


def list_documents(workspaceId: str, knowledgeBaseId: str, limit: int = 20, offset: int = 0):
    page = documents.list_documents(workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId, limit=limit,
                                    offset=offset)
    return ok({"documents": [document_shape(r) for r in page.items], "pagination": page.pagination()})


def get_document(workspaceId: str, knowledgeBaseId: str, documentId: str):
    record = documents.get_document(workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId,
                                    document_id=documentId)
    return ok({"document": document_shape(record)})


def delete_document(workspaceId: str, knowledgeBaseId: str, documentId: str):
    documents.delete_document(workspace_id=workspaceId, knowledge_base_id=knowledgeBaseId, document_id=documentId)
    return deleted(documentId, "Document deleted")
