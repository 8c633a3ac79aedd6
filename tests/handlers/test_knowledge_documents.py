"""Knowledge documents over HTTP: each format (Markdown, HTML, PDF, text, and each sent as
application/octet-stream) read into articles titled by their headings or the document's name,
which search finds; articles cut at the size bound and just past it; the size limit at its
boundary and past it (declared or chunked); files that cannot be read (binary, invalid encoding,
damaged or encrypted PDF, no text) refused with 422 and nothing kept; documents fetched from a
local server and synced again (changed, unchanged with hand edits kept, refused address, timeout,
error status, redirect, too large); deletion with the articles; another workspace's documents 404."""
from __future__ import annotations

import hashlib
import io

import pypdf
import pytest

from models.knowledge.document_text import ARTICLE_MAX_CHARS
from tests.support import factories
from tests.support.client import Api, owner
from tests.support.speech import FIXTURES
from tests.support.webhook_receiver import Answer, Receiver

MD = (FIXTURES / "knowledge.md").read_bytes()
HTML = (FIXTURES / "knowledge.html").read_bytes()
PDF = (FIXTURES / "knowledge.pdf").read_bytes()
TXT = (FIXTURES / "knowledge.txt").read_bytes()
FIELDS = {"id", "workspaceId", "knowledgeBaseId", "name", "contentType", "bytes", "sourceUrl", "contentHash",
          "articleCount", "createdBy", "createdAt", "syncedAt"}
# Where a local server may be fetched from: the address rules let http and loopback through.
LOCAL = {"webhook_allow_http": True, "webhook_allow_private_addresses": True}


@pytest.fixture
def settings_overrides(request):
    # The default settings, unless a test gives its own (parametrized indirectly).
    return getattr(request, "param", {})


@pytest.fixture
def api(platform):
    return owner(platform)


@pytest.fixture
def server():
    receiver = Receiver()
    yield receiver
    receiver.close()


def url_of(server: Receiver, path: str) -> str:
    return f"http://127.0.0.1:{server.server.server_address[1]}{path}"


def upload(api: Api, kb: str, body, content_type: str = "text/markdown", expect: int = 200, name: str = "Billing FAQ",
           **params):
    response = api.client.post(f"/api/v2/knowledge-bases/{kb}/documents", content=body,
                               params={"workspaceId": api.actor.workspace_id, "name": name, **params},
                               headers={**api.actor.headers, "Content-Type": content_type})
    assert response.status_code == expect, response.text
    return response.json()["data"]["result"]["document"] if expect == 200 else response.json()["data"]


def articles(api: Api, kb: str) -> list[tuple[str, str]]:
    return [(a["title"], a["body"]) for a in api("GET", f"/knowledge-bases/{kb}/articles", limit=100)["articles"]]


def nothing_kept(api: Api, kb: str) -> None:
    assert api("GET", f"/knowledge-bases/{kb}/documents")["pagination"]["total"] == 0
    assert api("GET", f"/knowledge-bases/{kb}/articles")["pagination"]["total"] == 0


def test_markdown_is_cut_at_its_headings_and_found_by_search(api):
    kb = factories.knowledge_base(api.actor)
    made = upload(api, kb, MD, name=" Billing FAQ ")
    assert set(made) == FIELDS
    assert (made["name"], made["contentType"], made["bytes"], made["sourceUrl"], made["articleCount"]) == (
        "Billing FAQ", "text/markdown", len(MD), None, 4)
    assert made["contentHash"] == hashlib.sha256(MD).hexdigest() and made["createdBy"] == api.actor.user_id
    assert articles(api, kb) == [
        ("Billing FAQ", "Answers to what callers ask about billing."),
        ("Refunds", "Refunds are paid back to the card within five working days.\n\nA refund needs the order number."),
        ("Invoices", "Invoices are sent by email on the first day of each month.\n\n"
                     "```\n# a comment in a code block, not a heading\n```"),
        ("Opening hours", "We are open from nine to five, Monday to Friday.")]
    found = api("GET", f"/knowledge-bases/{kb}/search", q="refund")["results"]
    assert [r["title"] for r in found] == ["Refunds"]
    assert api("GET", f"/knowledge-bases/{kb}/documents/{made['id']}")["document"] == made
    assert api("GET", f"/knowledge-bases/{kb}/documents") == {
        "documents": [made], "pagination": {"total": 1, "limit": 20, "offset": 0}}


def test_html_is_read_as_a_reader_sees_it(api):
    kb = factories.knowledge_base(api.actor)
    made = upload(api, kb, HTML, "text/html; charset=utf-8", name="Billing help")
    assert (made["contentType"], made["articleCount"]) == ("text/html", 3)
    assert articles(api, kb) == [
        ("Billing help", "Answers to what callers ask about billing."),
        ("Refunds", "Refunds are paid back to the card within five working days.\n\n"
                    "A refund needs the order number.\n\nGift cards are not refunded."),
        ("Invoices & receipts", "Invoices are sent by email on the first day of each month.")]
    assert api("GET", f"/knowledge-bases/{kb}/search", q="tracking")["results"] == []  # the script is not text
    assert [r["title"] for r in api("GET", f"/knowledge-bases/{kb}/search", q="gift")["results"]] == ["Refunds"]


def test_a_pdf_and_a_text_are_titled_by_the_documents_name(api):
    kb = factories.knowledge_base(api.actor)
    pdf = upload(api, kb, PDF, "application/pdf", name="Policies")
    txt = upload(api, kb, TXT, "text/plain", name="Notes")
    assert (pdf["contentType"], pdf["articleCount"], txt["contentType"], txt["articleCount"]) == (
        "application/pdf", 1, "text/plain", 1)
    (pdf_title, pdf_body), (txt_title, txt_body) = articles(api, kb)
    assert pdf_title == "Policies"
    assert "Refunds are paid back to the card" in pdf_body and "Tracking numbers" in pdf_body
    assert (txt_title, txt_body) == ("Notes", TXT.decode().strip())
    hits = api("GET", f"/knowledge-bases/{kb}/search", q="parcels")["results"]
    assert {r["title"] for r in hits} == {"Policies", "Notes"}


@pytest.mark.parametrize("body,filename,kind", [
    (PDF, None, "application/pdf"),  # its first bytes
    (MD, "faq.md", "text/markdown"), (HTML, "faq.HTML", "text/html"), (TXT, "notes.txt", "text/plain"),
    (HTML, None, "text/html"),  # opens with an html element
    (TXT, None, "text/plain"),
])
def test_a_body_sent_as_octet_stream_is_read_by_its_bytes_or_filename(api, body, filename, kind):
    kb = factories.knowledge_base(api.actor)
    params = {"filename": filename} if filename else {}
    assert upload(api, kb, body, "application/octet-stream", **params)["contentType"] == kind


def test_articles_are_cut_at_the_size_bound_and_just_past_it(api):
    kb = factories.knowledge_base(api.actor)
    at_bound = ("word " * (ARTICLE_MAX_CHARS // 5)).strip()[:ARTICLE_MAX_CHARS].strip()
    at_bound += "x" * (ARTICLE_MAX_CHARS - len(at_bound))
    assert len(at_bound) == ARTICLE_MAX_CHARS
    assert upload(api, kb, at_bound.encode(), "text/plain", name="Exact")["articleCount"] == 1
    past = upload(api, kb, (at_bound + "y").encode(), "text/plain", name="Past")
    assert past["articleCount"] == 2
    section = "# Long\n\n" + "\n\n".join(f"Paragraph {n} " + "about refunds " * 30 for n in range(40))
    long = upload(api, kb, section.encode(), name="Long one")
    made = [a for a in api("GET", f"/knowledge-bases/{kb}/articles", limit=100)["articles"]
            if a["title"].startswith("Long (part")]
    assert len(made) == long["articleCount"] > 1
    assert [a["title"] for a in made] == [f"Long (part {n})" for n in range(1, len(made) + 1)]
    assert all(len(a["body"]) <= ARTICLE_MAX_CHARS for a in made)
    assert "Paragraph 0 " in made[0]["body"] and "Paragraph 39 " in made[-1]["body"]


@pytest.mark.parametrize("settings_overrides", [{"kb_max_document_bytes": 1000}], indirect=True)
def test_the_size_limit_at_its_boundary_and_past_it(api):
    kb = factories.knowledge_base(api.actor)
    assert upload(api, kb, b"a" * 1000, "text/plain")["bytes"] == 1000
    data = upload(api, kb, b"a" * 1001, "text/plain", 413)
    assert data["code"] == "payload_too_large" and "1000 bytes" in data["message"]

    def chunks():  # no Content-Length: counted as it comes
        for _ in range(11):
            yield b"a" * 100
    data = upload(api, kb, chunks(), "text/plain", 413)
    assert data["code"] == "payload_too_large"
    assert api("GET", f"/knowledge-bases/{kb}/documents")["pagination"]["total"] == 1


def encrypted_pdf() -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(PDF)))
    writer.encrypt("secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize("body,content_type,reason", [
    (b"   \n\n  \t\n", "text/markdown", "holds no text"),
    (b"<html><body><script>only()</script></body></html>", "text/html", "holds no text"),
    (b"\x00\x01\x02binary" * 50, "application/octet-stream", "NUL bytes"),
    (b"GIF89a" + bytes(range(1, 32)) * 20, "application/octet-stream", "control characters"),
    ("caf\u00e9".encode("latin-1"), "text/plain", "not valid utf-8 text"),
    (b"%PDF-1.4\nnot a pdf at all", "application/pdf", "PDF could not be read"),
    (b"plain words", "application/pdf", "PDF could not be read"),
    (b"hello", "text/plain; charset=klingon", "charset"),
])
def test_what_cannot_be_read_is_422_and_nothing_is_kept(api, body, content_type, reason):
    kb = factories.knowledge_base(api.actor)
    data = upload(api, kb, body, content_type, 422)
    assert data["code"] == "unprocessable_content" and reason in data["message"], data
    nothing_kept(api, kb)


def test_an_encrypted_pdf_is_422_and_a_text_in_its_charset_is_read(api):
    kb = factories.knowledge_base(api.actor)
    assert "encrypted" in upload(api, kb, encrypted_pdf(), "application/pdf", 422)["message"]
    nothing_kept(api, kb)
    made = upload(api, kb, "Caf\u00e9 au lait.".encode("latin-1"), "text/plain; charset=ISO-8859-1")
    assert articles(api, kb) == [("Billing FAQ", "Caf\u00e9 au lait.")] and made["articleCount"] == 1


def test_an_empty_body_a_bad_name_or_an_unknown_type_is_refused(api):
    kb = factories.knowledge_base(api.actor)
    assert "empty" in upload(api, kb, b"", "text/plain", 400)["message"]
    assert "name" in upload(api, kb, b"text", "text/plain", 400, name="   ")["message"]
    upload(api, kb, b"text", "text/plain", 400, name="n" * 201)
    upload(api, kb, b"a,b\n1,2\n", "text/csv", 415)
    nothing_kept(api, kb)


@pytest.mark.parametrize("settings_overrides", [LOCAL], indirect=True)
def test_a_fetched_document_is_synced_again_only_when_it_changed(api, server):
    kb = factories.knowledge_base(api.actor)
    url = url_of(server, "/help/refund%20policy.md")
    server.script = [Answer(body=MD, headers={"Content-Type": "text/markdown; charset=utf-8"}),
                     Answer(body=MD, headers={"Content-Type": "text/markdown"}),
                     Answer(body=b"# Refunds\n\nRefunds now take three days.\n",
                            headers={"Content-Type": "text/plain"})]
    first = api("POST", f"/knowledge-bases/{kb}/documents/sync", json={"url": url})
    made = first["document"]
    assert first["changed"] is True
    assert (made["name"], made["sourceUrl"], made["contentHash"], made["articleCount"]) == (
        "refund policy.md", url, hashlib.sha256(MD).hexdigest(), 4)
    # Unchanged: a hand edit of one of its articles stays.
    refunds = next(a for a in api("GET", f"/knowledge-bases/{kb}/articles")["articles"] if a["title"] == "Refunds")
    api("PATCH", f"/knowledge-bases/{kb}/articles/{refunds['id']}", json={"body": "Edited by hand."})
    again = api("POST", f"/knowledge-bases/{kb}/documents/{made['id']}/sync")
    assert again["changed"] is False and again["document"]["contentHash"] == made["contentHash"]
    assert again["document"]["syncedAt"] >= made["syncedAt"]
    assert ("Refunds", "Edited by hand.") in articles(api, kb)
    # Changed: the articles replaced (served as text/plain now: read as text, titled by the name).
    changed = api("POST", f"/knowledge-bases/{kb}/documents/{made['id']}/sync")
    assert changed["changed"] is True and changed["document"]["contentType"] == "text/plain"
    assert articles(api, kb) == [("refund policy.md", "# Refunds\n\nRefunds now take three days.")]
    assert [r["title"] for r in api("GET", f"/knowledge-bases/{kb}/search", q="three")["results"]] == [
        "refund policy.md"]
    assert api("GET", f"/knowledge-bases/{kb}/search", q="invoices")["results"] == []
    assert [r.headers["user-agent"] for r in server.received] == ["voice-agent-backend-documents/1"] * 3


@pytest.mark.parametrize("settings_overrides", [LOCAL | {"webhook_timeout_s": 0.5, "kb_max_document_bytes": 1000}],
                         indirect=True)
def test_a_fetch_that_fails_stores_nothing(api, server):
    kb = factories.knowledge_base(api.actor)
    url = url_of(server, "/doc.txt")
    sync = f"/knowledge-bases/{kb}/documents/sync"
    for answer, status, words in [
            (Answer(status=404), 502, "answered 404"),
            (Answer(status=302, headers={"Location": "/elsewhere"}), 502, "redirects are not followed"),
            (Answer(delay_s=1.5), 502, "within 0.5 s"),
            (Answer(body=b"a" * 1001), 413, "1000 bytes"),
            (Answer(body=b"\x00" * 100, headers={"Content-Type": "application/octet-stream"}), 422, "NUL bytes")]:
        server.script = [answer]
        data = api("POST", sync, status, json={"url": url, "name": "Doc"})
        assert words in data["message"] and "127.0.0.1" not in data["message"], data
    # A resync that fails keeps the document and its articles as they were.
    server.script = [Answer(body=b"Refunds take five days.")]
    made = api("POST", sync, json={"url": url})["document"]
    server.script = [Answer(status=500)]
    api("POST", f"/knowledge-bases/{kb}/documents/{made['id']}/sync", 502)
    assert articles(api, kb) == [("doc.txt", "Refunds take five days.")]
    assert api("GET", f"/knowledge-bases/{kb}/documents/{made['id']}")["document"] == made
    assert api("GET", f"/knowledge-bases/{kb}/documents")["pagination"]["total"] == 1


def test_a_url_the_address_rules_refuse_is_400_and_nothing_is_fetched(api, server):
    kb = factories.knowledge_base(api.actor)
    sync = f"/knowledge-bases/{kb}/documents/sync"
    assert "https" in api("POST", sync, 400, json={"url": url_of(server, "/doc.md")})["message"]
    for url, words in [("https://127.0.0.1/doc.md", "loopback"), ("https://169.254.169.254/latest", "link-local"),
                       ("https://10.0.0.5/doc.md", "private"), ("https://no-such-host.invalid/doc.md", "resolve")]:
        assert words in api("POST", sync, 400, json={"url": url})["message"], url
    assert server.received == []
    nothing_kept(api, kb)


def test_an_uploaded_document_is_not_synced_and_deleting_one_deletes_its_articles(api):
    kb = factories.knowledge_base(api.actor)
    hand = factories.article(api.actor, kb, "Written by hand", "Refunds by hand.")
    made = upload(api, kb, MD)
    assert "uploaded" in api("POST", f"/knowledge-bases/{kb}/documents/{made['id']}/sync", 409)["message"]
    assert len(api("GET", f"/knowledge-bases/{kb}/search", q="refunds")["results"]) == 2
    assert api("DELETE", f"/knowledge-bases/{kb}/documents/{made['id']}") == {"id": made["id"], "deleted": True}
    api("GET", f"/knowledge-bases/{kb}/documents/{made['id']}", 404)
    api("DELETE", f"/knowledge-bases/{kb}/documents/{made['id']}", 404)
    assert [a["id"] for a in api("GET", f"/knowledge-bases/{kb}/articles")["articles"]] == [hand]
    assert [r["articleId"] for r in api("GET", f"/knowledge-bases/{kb}/search", q="refunds")["results"]] == [hand]


def test_deleting_a_knowledge_base_deletes_its_documents(api):
    kb = factories.knowledge_base(api.actor)
    upload(api, kb, MD)
    api("DELETE", f"/knowledge-bases/{kb}")
    api("GET", f"/knowledge-bases/{kb}/documents", 404)
    from models.kernel.db import database, is_postgres, session
    with session():
        assert database.execute_sql("SELECT COUNT(*) FROM knowledge_document").fetchone()[0] == 0
        assert database.execute_sql("SELECT COUNT(*) FROM knowledge_article").fetchone()[0] == 0
        if not is_postgres():
            assert database.execute_sql("SELECT COUNT(*) FROM knowledge_article_fts").fetchone()[0] == 0


def test_another_workspaces_documents_are_not_found(platform):
    api, other = owner(platform), owner(platform)
    kb = factories.knowledge_base(api.actor)
    made = upload(api, kb, MD)
    theirs = factories.knowledge_base(other.actor)
    for method, path in [("GET", f"/knowledge-bases/{kb}/documents"),
                         ("GET", f"/knowledge-bases/{kb}/documents/{made['id']}"),
                         ("DELETE", f"/knowledge-bases/{kb}/documents/{made['id']}"),
                         ("POST", f"/knowledge-bases/{kb}/documents/{made['id']}/sync"),
                         # Their own knowledge base, our document: reached through its own only.
                         ("GET", f"/knowledge-bases/{theirs}/documents/{made['id']}"),
                         ("DELETE", f"/knowledge-bases/{theirs}/documents/{made['id']}")]:
        other(method, path, 404)
    other("POST", f"/knowledge-bases/{kb}/documents/sync", 404, json={"url": "https://docs.example.com/a.md"})
    upload(other, kb, MD, expect=404)
    assert api("GET", f"/knowledge-bases/{kb}/documents/{made['id']}")["document"] == made
    assert len(articles(api, kb)) == 4
