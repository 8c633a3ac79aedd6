"""A document's text, read from its bytes and cut into articles: no database, no network.

The kinds read: plain text, Markdown, HTML (through the standard library's html.parser: the text
a reader sees, scripts, styles and the like left out) and PDF (through pypdf, page by page). A
body sent as application/octet-stream is a PDF when it starts as one does (``%PDF-``), else named
by its filename's extension, else HTML when it opens with an html element, else plain text.

Markdown and HTML are cut at their headings (each heading the title of what follows it, up to the
next), plain text and PDF only by size. A piece longer than ``ARTICLE_MAX_CHARS`` is cut between
paragraphs (between lines or words where a paragraph alone is longer), and each of its parts is
titled "<title> (part n)"; text before a first heading, and a whole text or PDF, is titled by the
document's name. So every article is a passage short enough for a search snippet and for a model's
prompt, and no longer than an article written by hand may be.

What cannot be read is UnprocessableContent with the reason: bytes that are no text (NUL bytes,
control characters, an invalid encoding), a PDF that is damaged or encrypted, a document that
holds no text, or one whose text would make more than ``MAX_ARTICLES`` articles.
"""
from __future__ import annotations

import codecs
import io
import re
from html.parser import HTMLParser
from typing import NamedTuple

import pypdf
from pypdf.errors import PdfReadError

from models.kernel.errors import UnprocessableContent
from models.knowledge.knowledge_bases import BODY_MAX_CHARS, TITLE_MAX_CHARS

PLAIN, MARKDOWN, HTML, PDF = "text/plain", "text/markdown", "text/html", "application/pdf"
KINDS = (PLAIN, MARKDOWN, HTML, PDF)
OCTET_STREAM = "application/octet-stream"
# Long enough to hold a section of a manual, short enough to be one search hit and a few hundred
# tokens of a prompt; well within an article's BODY_MAX_CHARS.
ARTICLE_MAX_CHARS = 4000
# 10 MB of plain text makes about 2,600 articles; a PDF's compressed streams may hold more text
# than its size suggests, and this bounds what one request writes.
MAX_ARTICLES = 5000
# A text whose share of control characters (other than tab, line breaks and form feed) is above
# this is binary data sent as text.
_BINARY_SHARE = 0.01
_EXTENSIONS = {".txt": PLAIN, ".text": PLAIN, ".md": MARKDOWN, ".markdown": MARKDOWN, ".html": HTML,
               ".htm": HTML, ".pdf": PDF}
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_HTML_START = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html[\s>])", re.I | re.S)
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", re.I)
# What an article's body may not hold (models.kernel.text's rule for free text), replaced by a space.
_NOT_FREE_TEXT = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_PARAGRAPHS = re.compile(r"\n[ \t]*\n+")
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class Part(NamedTuple):
    title: str
    body: str


def kind_of(content_type: str | None, filename: str | None, head: bytes) -> str:
    """The kind of document a body is: its Content-Type's, or, for application/octet-stream (or
    none), what its first bytes or its filename say."""
    declared = media_type(content_type)
    if declared in KINDS:
        return declared
    if head.lstrip()[:5] == b"%PDF-":
        return PDF
    if filename:
        extension = filename[filename.rfind("."):].lower() if "." in filename else ""
        if extension in _EXTENSIONS:
            return _EXTENSIONS[extension]
    return HTML if _HTML_START.match(head[:1024]) else PLAIN


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def charset_of(content_type: str | None) -> str | None:
    for parameter in (content_type or "").split(";")[1:]:
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"').lower()
    return None


def read(data: bytes, *, kind: str, name: str, charset: str | None = None) -> list[Part]:
    """The articles of a document of ``kind``, titled from its headings or from ``name``."""
    if kind == PDF:
        parts = _by_size(name, _pdf_text(data))
    else:
        text = decode(data, charset, html=kind == HTML)
        if kind == HTML:
            parts = _sections(name, _html_sections(text))
        elif kind == MARKDOWN:
            parts = _sections(name, _markdown_sections(text))
        else:
            parts = _by_size(name, text)
    if not parts:
        raise UnprocessableContent("The document holds no text to make articles of.")
    if len(parts) > MAX_ARTICLES:
        raise UnprocessableContent(f"The document's text would make {len(parts)} articles, more than the "
                                   f"{MAX_ARTICLES} one document may make; split it into several.")
    return parts


def decode(data: bytes, charset: str | None, *, html: bool = False) -> str:
    """``data`` as text: in ``charset``, or the one its byte order mark (or an HTML page's meta
    element) names, else UTF-8; UnprocessableContent when it is no text in that encoding."""
    encoding = charset
    if encoding is None:
        encoding = next((name for bom, name in _BOMS if data.startswith(bom)), None)
    if encoding is None and html and (found := _META_CHARSET.search(data[:4096])):
        encoding = found.group(1).decode("ascii").lower()
    encoding = encoding or "utf-8"
    if encoding in ("utf-8", "utf8"):
        encoding = "utf-8-sig"  # a BOM that a charset parameter also names is not text
    if b"\x00" in data and "16" not in encoding and "32" not in encoding:
        raise UnprocessableContent("The document holds NUL bytes: binary data, not text. Send a text, "
                                   "Markdown, HTML or PDF file.")
    try:
        text = data.decode(encoding)
    except LookupError:
        raise UnprocessableContent(f"The document's charset {encoding[:40]!r} is not one this service knows.") from None
    except UnicodeDecodeError as exc:
        raise UnprocessableContent(f"The document is not valid {encoding.removesuffix('-sig')} text "
                                   f"(byte {exc.start}): send its charset in Content-Type, or a PDF as "
                                   f"application/pdf.") from None
    controls = len(_CONTROL.findall(text))
    if controls > max(8, len(text) * _BINARY_SHARE):
        raise UnprocessableContent(f"The document holds {controls} control characters: binary data, not text.")
    return _clean(text)


def _clean(text: str) -> str:
    """Line breaks as \\n, a form feed a paragraph break, nothing an article may not hold."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n\n")
    return _NOT_FREE_TEXT.sub(" ", text)


# --- PDF ---------------------------------------------------------------------------------------

def _pdf_text(data: bytes) -> str:
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and reader.decrypt("") == pypdf.PasswordType.NOT_DECRYPTED:
            raise UnprocessableContent("The PDF is encrypted with a password: send it decrypted.")
        pages = [page.extract_text() or "" for page in reader.pages]
    except UnprocessableContent:
        raise
    except PdfReadError as exc:
        raise UnprocessableContent(f"The PDF could not be read: {_reason(exc)}") from None
    except Exception as exc:  # pypdf fails in many ways on a damaged file; each is the file's fault
        raise UnprocessableContent(f"The PDF could not be read ({type(exc).__name__}): {_reason(exc)}") from None
    # Each page a paragraph of its own at least.
    return _clean("\n\n".join(pages))


def _reason(exc: BaseException) -> str:
    return (str(exc).strip() or "it is damaged or not a PDF")[:200]


# --- Markdown and HTML: sections by heading ------------------------------------------------------

def _markdown_sections(text: str) -> list[tuple[str | None, str]]:
    """(heading or None, the text under it) in order; a heading inside a fenced code block is code."""
    sections, title, lines, fence = [], None, [], None
    for line in text.split("\n"):
        if fence is None and (found := _FENCE.match(line)):
            fence = found.group(1)[0] * len(found.group(1))
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None and (heading := _ATX_HEADING.match(line)):
            sections.append((title, "\n".join(lines)))
            title, lines = _one_line(heading.group(1) or "") or None, []
            continue
        lines.append(line)
    sections.append((title, "\n".join(lines)))
    return sections


class _HtmlText(HTMLParser):
    """The text of an HTML page as a reader sees it: blocks on lines of their own, a heading
    opening a section, what is never shown (scripts, styles, templates) left out."""

    HIDDEN = frozenset({"script", "style", "noscript", "template", "svg", "title", "iframe", "object"})
    HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
    BLOCKS = frozenset({"p", "div", "br", "li", "tr", "td", "th", "section", "article", "blockquote", "pre", "table",
                        "ul", "ol", "dl", "dd", "dt", "hr", "header", "footer", "nav", "aside", "main", "figure",
                        "figcaption", "caption", "form", "fieldset", "address", "details", "summary", "body"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[tuple[str | None, str]] = []
        self._title: str | None = None
        self._text: list[str] = []
        self._heading: list[str] | None = None
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN:
            self._hidden += 1
        elif tag in self.HEADINGS and not self._hidden:
            self._heading = []
        elif tag in self.BLOCKS:
            self._text.append("\n")

    def handle_startendtag(self, tag, attrs):
        if tag in self.BLOCKS:
            self._text.append("\n")

    def handle_endtag(self, tag):
        if tag in self.HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag in self.HEADINGS and self._heading is not None:
            self.sections.append((self._title, "".join(self._text)))
            self._title, self._text, self._heading = _one_line("".join(self._heading)) or None, [], None
        elif tag in self.BLOCKS:
            self._text.append("\n")

    def handle_data(self, data):
        if self._hidden:
            return
        (self._heading if self._heading is not None else self._text).append(data)

    def close(self):
        super().close()
        if self._heading is not None:  # a heading never closed: its words are text
            self._text.extend(self._heading)
        self.sections.append((self._title, "".join(self._text)))


def _html_sections(text: str) -> list[tuple[str | None, str]]:
    parser = _HtmlText()
    parser.feed(text)
    parser.close()
    # Each block a paragraph of its own, its white space collapsed as a browser shows it.
    return [(title, "\n\n".join(line for line in (" ".join(raw.split()) for raw in body.split("\n")) if line))
            for title, body in parser.sections]


# --- cutting to size ---------------------------------------------------------------------------

def _sections(name: str, sections: list[tuple[str | None, str]]) -> list[Part]:
    parts = []
    for title, body in sections:
        parts.extend(_by_size(title or name, body))
    return parts


def _by_size(title: str, text: str) -> list[Part]:
    bodies = _pack([p.strip() for p in _PARAGRAPHS.split(text) if p.strip()], ARTICLE_MAX_CHARS)
    if len(bodies) == 1:
        return [Part(_title(title, None), bodies[0])]
    return [Part(_title(title, n), body) for n, body in enumerate(bodies, 1)]


def _pack(paragraphs: list[str], max_chars: int) -> list[str]:
    """The paragraphs joined into as few bodies of at most ``max_chars`` as keep their order; a
    paragraph longer than that alone is cut first."""
    bodies, current, size = [], [], 0
    for paragraph in paragraphs:
        for piece in _cut(paragraph, max_chars):
            if current and size + 2 + len(piece) > max_chars:
                bodies.append("\n\n".join(current))
                current, size = [], 0
            size += len(piece) + (2 if current else 0)
            current.append(piece)
    if current:
        bodies.append("\n\n".join(current))
    return bodies


def _cut(text: str, max_chars: int) -> list[str]:
    """``text`` in pieces of at most ``max_chars``, each cut at the last line break or white space
    before the limit (anywhere in a run of text with none)."""
    pieces = []
    while len(text) > max_chars:
        at = text.rfind("\n", 0, max_chars + 1)
        if at <= max_chars // 2:
            at = max(text.rfind(" ", 0, max_chars + 1), text.rfind("\t", 0, max_chars + 1))
        if at <= 0:
            at = max_chars
        pieces.append(text[:at].rstrip())
        text = text[at:].lstrip()
    if text:
        pieces.append(text)
    return [p for p in pieces if p]


def _one_line(text: str) -> str:
    return " ".join(_NOT_FREE_TEXT.sub(" ", text).split())


def _title(title: str, part: int | None) -> str:
    suffix = f" (part {part})" if part is not None else ""
    base = _one_line(title)
    if len(base) + len(suffix) > TITLE_MAX_CHARS:
        base = base[:TITLE_MAX_CHARS - len(suffix) - 1].rstrip() + "…"
    return base + suffix


assert ARTICLE_MAX_CHARS <= BODY_MAX_CHARS
