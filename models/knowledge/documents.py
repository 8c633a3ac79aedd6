"""Knowledge documents: files uploaded to a knowledge base or fetched from a URL, read into articles.

A document is read whole (models.knowledge.document_text) before anything is written: a file that
cannot be read leaves nothing behind. Its articles are written with it in one transaction and
indexed for search as hand-written ones are (models.knowledge.search); each names its document,
and goes with it when the document is deleted. The document keeps its name, its type, its size,
the URL it came from (if fetched) and the SHA-256 of its bytes; the file itself is not kept.

A fetch goes where an outbound webhook may go, under the same rules and time limit: https (http
only with WEBHOOK_ALLOW_HTTP), public addresses only (unless WEBHOOK_ALLOW_PRIVATE_ADDRESSES), the
host resolved and every address checked as the connection is made, no redirect followed, no proxy,
everything within WEBHOOK_TIMEOUT_S (models.webhooks.connections); and at most
KB_MAX_DOCUMENT_BYTES of the answer are read. Syncing a fetched document again replaces its articles
only when the bytes' hash changed: hand edits of the articles of an unchanged document stay.

Lists are by creation time (the index's order), one statement per page, each document with the
count of its articles.
"""
from __future__ import annotations

import functools
import hashlib
from datetime import datetime, timedelta
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

import httpx
from peewee import fn

from models.identity.principal import Principal
from models.kernel.db import database, new_id, utcnow
from models.kernel.errors import Conflict, DomainError, InvalidInput, NotFound, UpstreamFailed
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared
from models.kernel.text import trimmed_text
from models.knowledge import document_text, search
from models.knowledge.document_text import Part
from models.knowledge.knowledge_bases import get_knowledge_base
from models.knowledge.tables import KnowledgeArticle, KnowledgeDocument
from models.webhooks import addresses, connections

NAME_MAX_CHARS = 200
FILENAME_MAX_CHARS = 255
USER_AGENT = "voice-agent-backend-documents/1"
_ACCEPT = "text/markdown, text/html, text/plain, application/pdf;q=0.9, */*;q=0.1"
# Articles written per statement: a few hundred parameters, within either database's limits.
_INSERT_BATCH = 100


class _Limits(NamedTuple):
    max_bytes: int = 10 * 1024 * 1024
    fetch_timeout_s: float = 15.0


_limits = _Limits()


def configure(*, max_bytes: int, fetch_timeout_s: float) -> None:
    global _limits
    _limits = _Limits(max_bytes, fetch_timeout_s)


def max_bytes() -> int:
    return _limits.max_bytes


class DocumentTooLarge(DomainError):
    status = 413
    code = "payload_too_large"

    def __init__(self, what: str = "The document"):
        super().__init__(f"{what} is larger than the limit of {_limits.max_bytes} bytes (KB_MAX_DOCUMENT_BYTES).")


class DocumentRecord(NamedTuple):
    id: str
    workspace_id: str
    knowledge_base_id: str
    name: str
    content_type: str
    bytes: int
    source_url: str | None
    content_hash: str
    created_by: str
    created_at: datetime
    synced_at: datetime
    article_count: int


class Read(NamedTuple):
    """A document read, not yet stored."""
    content_type: str
    size: int
    content_hash: str
    parts: list[Part]


class Fetched(NamedTuple):
    data: bytes
    content_type: str | None


_D, _A = KnowledgeDocument, KnowledgeArticle
# The count of a document's articles, a correlated subquery on the article's document index: one
# statement for a page whatever its size.
_COLUMNS = (_D.id, _D.workspace, _D.knowledge_base, _D.name, _D.content_type, _D.bytes, _D.source_url,
            _D.content_hash, _D.created_by, _D.created_at, _D.synced_at,
            _A.select(fn.COUNT(_A.id)).where(_A.document == _D.id).alias("article_count"))
_ONE = Prepared(lambda workspace_id, knowledge_base_id, document_id: _D.in_workspace(workspace_id, *_COLUMNS)
                .where((_D.knowledge_base == knowledge_base_id) & (_D.id == document_id)))


@functools.cache
def _page():
    return workspace_list(_D, _COLUMNS, order_by=(_D.created_at, _D.id), names=("knowledge_base_id",),
                          where=lambda params: [_D.knowledge_base == params["knowledge_base_id"]])


def check_name(name, field: str = "name") -> str:
    return trimmed_text(name, field, NAME_MAX_CHARS)


def check_filename(filename) -> str | None:
    return trimmed_text(filename, "filename", FILENAME_MAX_CHARS, optional=True)


# --- reading ------------------------------------------------------------------------------------

def read(data: bytes, *, content_type: str | None, name: str, filename: str | None = None) -> Read:
    """``data`` read into articles (UnprocessableContent if it cannot be); no database, no network:
    the caller runs it in a worker thread."""
    if len(data) > _limits.max_bytes:
        raise DocumentTooLarge()
    if not data:
        raise InvalidInput("The document is empty: send the file as the request body.")
    kind = document_text.kind_of(content_type, filename, data[:1024])
    parts = document_text.read(data, kind=kind, name=name, charset=document_text.charset_of(content_type))
    return Read(kind, len(data), hashlib.sha256(data).hexdigest(), parts)


def fetch(url: str) -> Fetched:
    """The body at ``url``, fetched as an outbound webhook is sent (see the module's docstring).
    InvalidInput when the address is refused, DocumentTooLarge past the limit, UpstreamFailed when
    the other end fails, times out or answers other than 2xx; no message names the URL."""
    addresses.check_url(url, "url")
    timeout_s = _limits.fetch_timeout_s
    parts = urlsplit(url)
    try:
        # A webhook's host may resolve later; a document is fetched now, so a host that does not
        # resolve is the URL's fault (the connection resolves it again, and checks what it finds).
        addresses.addresses(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80),
                            min(2.0, timeout_s))
    except addresses.Refused as exc:
        raise InvalidInput(f"url: {exc}") from None
    except OSError as exc:
        raise InvalidInput(f"url: {exc}; nothing was fetched.") from None
    try:
        with connections.http_client(timeout_s) as client:
            with client.stream("GET", url, headers={"user-agent": USER_AGENT, "accept": _ACCEPT}) as response:
                if not 200 <= response.status_code < 300:
                    redirect = " (redirects are not followed)" if 300 <= response.status_code < 400 else ""
                    raise UpstreamFailed(f"The URL answered {response.status_code}{redirect}; nothing was stored.")
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > _limits.max_bytes:
                    raise DocumentTooLarge("The document at the URL")
                received = bytearray()
                for chunk in response.iter_bytes():
                    received += chunk
                    if len(received) > _limits.max_bytes:
                        raise DocumentTooLarge("The document at the URL")
                return Fetched(bytes(received), response.headers.get("content-type"))
    except httpx.TimeoutException:
        raise UpstreamFailed(f"The URL gave no complete answer within {timeout_s:g} s; nothing was stored.") from None
    except httpx.ConnectError as exc:
        reason = str(exc)
        if reason.startswith("Not connected:"):  # the address rules refused it as the connection was made
            raise InvalidInput(f"url: {reason.removeprefix('Not connected:').strip()}"[:300]) from None
        raise UpstreamFailed(f"The connection to the URL failed: {reason[:200]}; nothing was stored.") from None
    except httpx.HTTPError as exc:
        raise UpstreamFailed(f"The URL's answer could not be read ({type(exc).__name__}); nothing was "
                             f"stored.") from None


def name_from_url(url: str) -> str:
    """A fetched document's name when none is given: the URL's last path segment, else its host."""
    parts = urlsplit(url)
    segment = unquote(parts.path.rstrip("/").rpartition("/")[2])
    name = " ".join(segment.split()) or parts.hostname or "Document"
    return name[:NAME_MAX_CHARS]


# --- storing ------------------------------------------------------------------------------------

def create_document(principal: Principal, *, workspace_id: str, knowledge_base_id: str, name: str, read: Read,
                    source_url: str | None = None) -> DocumentRecord:
    name = check_name(name)
    get_knowledge_base(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id)
    now = utcnow()
    with database.atomic():
        row = _D.create(workspace=workspace_id, knowledge_base=knowledge_base_id, name=name,
                        content_type=read.content_type, bytes=read.size, source_url=source_url,
                        content_hash=read.content_hash, created_by=principal.user_id, created_at=now, synced_at=now)
        _write_articles(workspace_id, knowledge_base_id, row.id, read.parts, principal.user_id, now)
    return get_document(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id, document_id=row.id)


def sync_new(principal: Principal, *, workspace_id: str, knowledge_base_id: str, url: str,
             name: str | None = None) -> DocumentRecord:
    """A document fetched from ``url`` and read into articles; nothing is stored if any step fails."""
    name = check_name(name) if name is not None else None
    get_knowledge_base(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id)  # 404 before fetching
    fetched = fetch(url)
    name = name or name_from_url(url)
    return create_document(principal, workspace_id=workspace_id, knowledge_base_id=knowledge_base_id, name=name,
                           read=read(fetched.data, content_type=fetched.content_type, name=name,
                                     filename=urlsplit(url).path),
                           source_url=url)


def resync(principal: Principal, *, workspace_id: str, knowledge_base_id: str,
           document_id: str) -> tuple[DocumentRecord, bool]:
    """The document fetched again from its URL; its articles replaced only if the bytes' hash
    changed. The record, and whether it changed."""
    record = get_document(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id, document_id=document_id)
    if record.source_url is None:
        raise Conflict(f"Document {document_id} was uploaded, not fetched from a URL: upload it again to "
                       f"replace it.")
    fetched = fetch(record.source_url)
    digest = hashlib.sha256(fetched.data).hexdigest()
    # Read before the transaction (it may take a while, and may fail): nothing is held meanwhile.
    new = None if digest == record.content_hash else read(fetched.data, content_type=fetched.content_type,
                                                         name=record.name, filename=urlsplit(record.source_url).path)
    now = utcnow()
    where = (_D.workspace == workspace_id) & (_D.knowledge_base == knowledge_base_id) & (_D.id == document_id)
    with database.atomic():
        # The update first: the row's lock orders two syncs of one document on PostgreSQL.
        if new is None:
            if not _D.update(synced_at=now).where(where).execute():
                raise NotFound(f"No document {document_id} in knowledge base {knowledge_base_id} of this workspace.")
        else:
            if not _D.update(synced_at=now, content_type=new.content_type, bytes=new.size,
                             content_hash=new.content_hash).where(where).execute():
                raise NotFound(f"No document {document_id} in knowledge base {knowledge_base_id} of this workspace.")
            _delete_articles(workspace_id, document_id)
            _write_articles(workspace_id, knowledge_base_id, document_id, new.parts, principal.user_id, now)
    return get_document(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id,
                        document_id=document_id), new is not None


def _write_articles(workspace_id: str, knowledge_base_id: str, document_id: str, parts: list[Part],
                    user_id: str, now: datetime) -> None:
    # A microsecond apart, so that the articles' list (by creation time) follows the document's order.
    rows = [{"id": new_id(), "workspace": workspace_id, "knowledge_base": knowledge_base_id,
             "document": document_id, "title": part.title, "body": part.body, "created_by": user_id,
             "created_at": now + timedelta(microseconds=n), "updated_at": now} for n, part in enumerate(parts)]
    for start in range(0, len(rows), _INSERT_BATCH):
        _A.insert_many(rows[start:start + _INSERT_BATCH]).execute()
    for row in rows:
        search.index_article(row["id"], row["title"], row["body"])


def _delete_articles(workspace_id: str, document_id: str) -> None:
    ids = [article_id for (article_id,) in _A.select(_A.id).where((_A.workspace == workspace_id)
                                                                  & (_A.document == document_id)).tuples()]
    for start in range(0, len(ids), _INSERT_BATCH):
        search.unindex(ids[start:start + _INSERT_BATCH])
    _A.delete().where((_A.workspace == workspace_id) & (_A.document == document_id)).execute()


# --- reading back -------------------------------------------------------------------------------

def list_documents(*, workspace_id: str, knowledge_base_id: str, limit: int, offset: int) -> Page[DocumentRecord]:
    get_knowledge_base(workspace_id=workspace_id, knowledge_base_id=knowledge_base_id)
    return _page().page(DocumentRecord, workspace_id=workspace_id, knowledge_base_id=knowledge_base_id,
                        limit=limit, offset=offset)


def get_document(*, workspace_id: str, knowledge_base_id: str, document_id: str) -> DocumentRecord:
    record = _ONE.first(DocumentRecord, workspace_id=workspace_id, knowledge_base_id=knowledge_base_id,
                        document_id=document_id)
    if record is None:
        raise NotFound(f"No document {document_id} in knowledge base {knowledge_base_id} of this workspace.")
    return record


def delete_document(*, workspace_id: str, knowledge_base_id: str, document_id: str) -> None:
    """The document and its articles, and their entries in the search index."""
    with database.atomic():
        where = (_D.workspace == workspace_id) & (_D.knowledge_base == knowledge_base_id) & (_D.id == document_id)
        if not _D.select(_D.id).where(where).exists():
            raise NotFound(f"No document {document_id} in knowledge base {knowledge_base_id} of this workspace.")
        _delete_articles(workspace_id, document_id)
        _D.delete().where(where).execute()
