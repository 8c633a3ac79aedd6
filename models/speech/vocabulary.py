"""A workspace's vocabulary: the terms its calls name (product names, abbreviations, codes), each a
written form ("Acme Pay", "SIP", "ACME-42") and the forms it is spoken in ("acme pay", "sip",
"acme forty two").

The rules: a written form of 1 to 100 characters, one line, unique per workspace without regard to
case (a unique index: two writes at once get one row and one 409); 1 to 10 spoken forms of 1 to 100
characters each, kept in lower case with one space between words, listed once (none given: the
written form in lower case); at most MAX_TERMS terms per workspace (the workspace's row, written
first, orders concurrent creations, so the cap holds on PostgreSQL with several processes).

The speech server applies a workspace's vocabulary to its transcripts (``Vocabulary``): its written
forms bias recognition through the decoder's prompt (``prompt``), and its spoken forms are
rewritten into the written ones (``edits``).
"""
from __future__ import annotations

import functools
import re
from datetime import datetime
from typing import NamedTuple

from peewee import IntegrityError

from models.identity.principal import Principal
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, workspace_list
from models.kernel.scoping import Workspace
from models.kernel.sql import Prepared
from models.kernel.text import text_problem
from models.speech.rewriting import Edit
from models.speech.tables import VocabularyTerm

MAX_TERMS = 500
WRITTEN_MAX_CHARS = 100
SPOKEN_MAX_CHARS = 100
MAX_SPOKEN = 10
# The characters of a prompt given to the vocabulary and the caller's own prompt together. whisper
# keeps 224 tokens of prompt; terms of capitals, digits and hyphens tokenize at about 2.5
# characters a token, so 500 characters stay within it.
PROMPT_BUDGET_CHARS = 500


class _Term(NamedTuple):
    written: str
    spoken: list


class TermRecord(NamedTuple):
    id: str
    workspace_id: str
    written: str
    spoken: list
    created_by: str
    created_at: datetime
    updated_at: datetime


_T = VocabularyTerm
_COLUMNS = (_T.id, _T.workspace, _T.written, _T.spoken, _T.created_by, _T.created_at, _T.updated_at)
_ONE = Prepared(lambda workspace_id, term_id: _T.in_workspace(workspace_id, *_COLUMNS).where(_T.id == term_id))
_ALL = Prepared(lambda workspace_id: _T.in_workspace(workspace_id, _T.written, _T.spoken).order_by(_T.written_key))


@functools.cache
def _page():
    return workspace_list(_T, _COLUMNS, order_by=(_T.written_key, _T.id))


# --- the rules -----------------------------------------------------------------------------------

def _written(value) -> str:
    if not isinstance(value, str):
        raise InvalidInput("written must be text.")
    if problem := text_problem(value):
        raise InvalidInput(f"written {problem}.")
    value = " ".join(value.split())
    if not 1 <= len(value) <= WRITTEN_MAX_CHARS:
        raise InvalidInput(f"written must be 1 to {WRITTEN_MAX_CHARS} characters once trimmed; {len(value)} given.")
    return value


def _spoken(value, written: str) -> list[str]:
    if value is None:
        return [written.lower()]
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_SPOKEN:
        raise InvalidInput(f"spoken must be a list of 1 to {MAX_SPOKEN} spoken forms.")
    forms: list[str] = []
    for i, form in enumerate(value):
        if not isinstance(form, str):
            raise InvalidInput(f"spoken[{i}] must be text.")
        if problem := text_problem(form):
            raise InvalidInput(f"spoken[{i}] {problem}.")
        form = " ".join(form.lower().split())
        if not 1 <= len(form) <= SPOKEN_MAX_CHARS or not re.search(r"\w", form):
            raise InvalidInput(f"spoken[{i}] must be 1 to {SPOKEN_MAX_CHARS} characters once trimmed, "
                               "with a letter or digit.")
        if form not in forms:  # the same form twice means it once, as the filter's words do
            forms.append(form)
    return forms


def _written_taken(workspace_id: str, written: str, term_id: str | None = None) -> Conflict:
    holder = _T.in_workspace(workspace_id, _T.id, _T.written).where(
        (_T.written_key == written.lower()) & (_T.id != (term_id or ""))).tuples().first()
    if holder is None:
        return Conflict(f"The written form {written!r} was taken by another term written at the same time; try again.")
    return Conflict(f"The term {holder[1]!r} ({holder[0]}) has this written form already; written forms are unique "
                    "per workspace without regard to case.")


# --- operations ----------------------------------------------------------------------------------

def create_term(principal: Principal, *, workspace_id: str, written, spoken=None) -> TermRecord:
    """A term of the workspace's vocabulary. 409 past MAX_TERMS, or naming the term holding its
    written form."""
    written = _written(written)
    forms = _spoken(spoken, written)
    now = utcnow()
    try:
        with database.atomic():
            # The workspace's row, written first, orders concurrent creations: the cap holds.
            Workspace.update(id=Workspace.id).where(Workspace.id == workspace_id).execute()
            if _T.in_workspace(workspace_id).count() >= MAX_TERMS:
                raise Conflict(f"A workspace's vocabulary holds at most {MAX_TERMS} terms; delete one first.")
            with database.atomic():  # a savepoint: a refused insert leaves the caller's transaction whole
                row = _T.create(workspace=workspace_id, written=written, written_key=written.lower(), spoken=forms,
                                created_by=principal.user_id, created_at=now, updated_at=now)
    except IntegrityError:
        raise _written_taken(workspace_id, written) from None
    return get_term(workspace_id=workspace_id, term_id=row.id)


def list_terms(*, workspace_id: str, limit: int, offset: int) -> Page[TermRecord]:
    """The workspace's terms by written form without regard to case. One statement per page."""
    return _page().page(TermRecord, workspace_id=workspace_id, limit=limit, offset=offset)


def get_term(*, workspace_id: str, term_id: str) -> TermRecord:
    record = _ONE.first(TermRecord, workspace_id=workspace_id, term_id=term_id)
    if record is None:
        raise NotFound(f"No vocabulary term {term_id} in this workspace.")
    return record


def update_term(*, workspace_id: str, term_id: str, **given) -> TermRecord:
    """The written form, the spoken forms or both, under the rules of a new term. A written form
    changed without spoken forms keeps the spoken forms the term has."""
    with database.atomic():
        query = _T.in_workspace(workspace_id, _T.id).where(_T.id == term_id)
        if (query.for_update() if is_postgres() else query).scalar() is None:
            raise NotFound(f"No vocabulary term {term_id} in this workspace.")
        current = get_term(workspace_id=workspace_id, term_id=term_id)
        written = _written(given["written"]) if "written" in given else current.written
        forms = _spoken(given["spoken"], written) if "spoken" in given else current.spoken
        try:
            with database.atomic():
                _T.update(written=written, written_key=written.lower(), spoken=forms, updated_at=utcnow()).where(
                    _T.id == term_id).execute()
        except IntegrityError:
            raise _written_taken(workspace_id, written, term_id) from None
    return get_term(workspace_id=workspace_id, term_id=term_id)


def delete_term(*, workspace_id: str, term_id: str) -> None:
    with database.atomic():
        if not _T.delete().where((_T.workspace == workspace_id) & (_T.id == term_id)).execute():
            raise NotFound(f"No vocabulary term {term_id} in this workspace.")


# --- applying it ---------------------------------------------------------------------------------

class Vocabulary:
    """A workspace's terms, compiled for transcripts: what the speech server caches."""

    def __init__(self, terms: list[tuple[str, list[str]]]):
        self.terms = terms
        by_spoken: dict[str, str] = {}
        for written, forms in terms:
            for form in forms:
                # a form two terms share: the first by written form
                by_spoken.setdefault(_key(form), written)
        self._written = by_spoken
        # Longest first, so that "acme pay plus" wins over "acme pay"; a space or a hyphen of a
        # spoken form matches any run of spaces and hyphens ("forty-two" is "forty two").
        alternatives = [r"[\s-]+".join(re.escape(w) for w in key.split(" "))
                        for key in sorted(by_spoken, key=lambda f: (-len(f), f)) if key]
        self._pattern = (re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)
                         if alternatives else None)

    def __bool__(self) -> bool:
        return bool(self.terms)

    def edits(self, text: str) -> list[Edit]:
        """The spoken forms found in ``text`` (word-boundary, without regard to case, longest first),
        each to be replaced by its written form."""
        if self._pattern is None:
            return []
        return [Edit(m.start(), m.end(), self._written[_key(m.group(0))]) for m in self._pattern.finditer(text)]

    def prompt(self, own: str | None) -> str:
        """The decoder's prompt: the caller's own first, then as many written forms as fit in
        PROMPT_BUDGET_CHARS with it (in the vocabulary's order)."""
        own = (own or "").strip()
        room = PROMPT_BUDGET_CHARS - len(own) - 2
        chosen: list[str] = []
        for written, _ in self.terms:
            if len(written) + 2 > room:
                break
            chosen.append(written)
            room -= len(written) + 2
        glossary = ", ".join(chosen) + "." if chosen else ""
        return " ".join(part for part in (own, glossary) if part)


def _key(form: str) -> str:
    """A spoken form as the rewriting compares it: lower case, its words apart by one space."""
    return " ".join(word for word in re.split(r"[\s-]+", form.lower()) if word)


def vocabulary_of(workspace_id: str) -> Vocabulary:
    """The workspace's vocabulary, compiled: one statement."""
    return Vocabulary([(t.written, list(t.spoken)) for t in _ALL.records(_Term, workspace_id=workspace_id)])
