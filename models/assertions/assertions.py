"""Assertions: the expected behaviours a suite holds, each a name, a kind and the kind's parameters.

The kinds and their parameters, as the API names them (``check_params`` validates them and fills
in the defaults; ``models.assertions.evaluation`` says how each is evaluated):

- ``contains`` / ``not-contains``: ``text`` (1 to 500 characters) or ``pattern`` (a regular
  expression, models.assertions.patterns), exactly one; ``speaker``: agent (default), caller or
  any; ``caseSensitive`` (default false).
- ``json-field``: ``field`` (a field of the agent's structured output, 1 to 100 characters) and
  either ``equals`` (any JSON value, at most 2000 characters as JSON) or ``exists`` (boolean).
- ``max-turns``: ``max`` (1 to 1000): the conversation has at most this many turns, both sides'.
- ``ended-by``: ``by``: agent or caller.
- ``judge``: ``rubric`` (free text, 1 to 4000 characters): the language model answers pass or
  fail with a reason.

A suite holds at most ``MAX_PER_SUITE`` assertions: its row is locked while one is added, so two
adds at once cannot pass the bound together (409 past it). An assertion's parameters are stored as
checked, so that what evaluates them reads them without checking again.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

import orjson
from peewee import fn

from models.assertions import patterns, suites
from models.assertions.tables import Assertion
from models.feedback.feedbacks import text_field
from models.identity.principal import Principal
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.sql import Prepared
from models.kernel.text import text_problem

MAX_PER_SUITE = 100
NAME_MAX_CHARS = 100
TEXT_MAX_CHARS = 500
FIELD_MAX_CHARS = 100
EQUALS_MAX_CHARS = 2000
MAX_TURNS = 1000
RUBRIC_MAX_CHARS = 4000
SPEAKERS = ("agent", "caller", "any")
ENDERS = ("agent", "caller")

# Each kind's parameters, in the order a message lists them.
KINDS: dict[str, tuple[str, ...]] = {
    "contains": ("text", "pattern", "speaker", "caseSensitive"),
    "not-contains": ("text", "pattern", "speaker", "caseSensitive"),
    "json-field": ("field", "equals", "exists"),
    "max-turns": ("max",),
    "ended-by": ("by",),
    "judge": ("rubric",),
}
# Parameters of which a kind takes exactly one: an update giving one drops the other.
ONE_OF = (("text", "pattern"), ("equals", "exists"))


class AssertionRecord(NamedTuple):
    """An assertion as the domain hands it on; ``params`` are its kind's, checked, defaults filled
    in. The last three fields are for its wire shape, and default to None for an assertion made up
    elsewhere (a test, a simulation's own)."""
    id: str
    suite_id: str
    name: str
    kind: str
    params: dict
    created_by: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


_A = Assertion
_COLUMNS = (_A.id, _A.suite, _A.name, _A.kind, _A.params, _A.created_by, _A.created_at, _A.updated_at)
_ONE = Prepared(lambda workspace_id, suite_id, assertion_id: _A.in_workspace(workspace_id, *_COLUMNS)
                .where((_A.suite == suite_id) & (_A.id == assertion_id)))
_PAGE = PageQuery(
    lambda workspace_id, suite_id, limit, offset: _A.in_workspace(workspace_id, *_COLUMNS)
    .where(_A.suite == suite_id).order_by(_A.created_at, _A.id).limit(limit).offset(offset),
    lambda workspace_id, suite_id: _count(workspace_id, suite_id),
)


def _count(workspace_id, suite_id):
    return _A.in_workspace(workspace_id, fn.COUNT(_A.id)).where(_A.suite == suite_id)


# --- parameters ---------------------------------------------------------------------------------

def _boolean(value, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{field} must be true or false.")
    return value


def _choice(value, field: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise InvalidInput(f"{field} must be one of {', '.join(choices)}.")
    return value


def _one_of(params: dict, names: tuple[str, str], kind: str) -> str:
    given = [name for name in names if name in params]
    if len(given) != 1:
        raise InvalidInput(f"A {kind} assertion takes exactly one of {names[0]} and {names[1]}; "
                           f"{'both' if given else 'neither'} given.")
    return given[0]


def _text(value) -> str:
    """The text as given, spaces and all (it is matched as it is): one line of 1 to
    TEXT_MAX_CHARS characters, not only spaces."""
    if not isinstance(value, str):
        raise InvalidInput("text must be text.")
    if problem := text_problem(value):
        raise InvalidInput(f"text {problem}.")
    if not 1 <= len(value) <= TEXT_MAX_CHARS or not value.strip():
        raise InvalidInput(f"text must be 1 to {TEXT_MAX_CHARS} characters, not only spaces; {len(value)} given.")
    return value


def _said(kind: str, params: dict) -> dict:
    checked = {"text": _text(params["text"])} if _one_of(params, ("text", "pattern"), kind) == "text" \
        else {"pattern": patterns.check(params["pattern"])}
    checked["speaker"] = _choice(params.get("speaker", "agent"), "speaker", SPEAKERS)
    checked["caseSensitive"] = _boolean(params.get("caseSensitive", False), "caseSensitive")
    return checked


def _json_field(kind: str, params: dict) -> dict:
    checked = {"field": text_field(params.get("field"), "field", FIELD_MAX_CHARS, required=True)}
    if _one_of(params, ("equals", "exists"), kind) == "exists":
        checked["exists"] = _boolean(params["exists"], "exists")
    else:
        try:
            size = len(orjson.dumps(params["equals"]))
        except TypeError:  # a value no JSON document holds (a body is JSON: only a caller in Python)
            raise InvalidInput("equals must be a JSON value.") from None
        if size > EQUALS_MAX_CHARS:
            raise InvalidInput(f"equals must be at most {EQUALS_MAX_CHARS} characters as JSON; {size} given.")
        checked["equals"] = params["equals"]
    return checked


def _max_turns(kind: str, params: dict) -> dict:
    value = params.get("max")
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TURNS:
        raise InvalidInput(f"max must be an integer from 1 to {MAX_TURNS}.")
    return {"max": value}


def _ended_by(kind: str, params: dict) -> dict:
    if "by" not in params:
        raise InvalidInput("by is required: agent or caller.")
    return {"by": _choice(params["by"], "by", ENDERS)}


def _judge(kind: str, params: dict) -> dict:
    return {"rubric": text_field(params.get("rubric"), "rubric", RUBRIC_MAX_CHARS, required=True, multiline=True)}


_CHECKS = {"contains": _said, "not-contains": _said, "json-field": _json_field, "max-turns": _max_turns,
           "ended-by": _ended_by, "judge": _judge}


def check_params(kind, params: dict) -> dict:
    """The parameters of a ``kind`` assertion as stored: each checked (InvalidInput naming the
    field), defaults filled in; a parameter of another kind is refused, naming the kind's."""
    if kind not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}.")
    if unknown := [name for name in params if name not in KINDS[kind]]:
        raise InvalidInput(f"A {kind} assertion has no parameter {unknown[0]!r}; its parameters: "
                           f"{', '.join(KINDS[kind])}.")
    return _CHECKS[kind](kind, params)


def _name(value) -> str:
    return text_field(value, "name", NAME_MAX_CHARS, required=True)


# --- reads and writes ---------------------------------------------------------------------------

def create(principal: Principal, *, workspace_id: str, suite_id: str, name: str, kind: str,
           params: dict[str, Any]) -> AssertionRecord:
    """A new assertion of the suite (NotFound otherwise); 409 once the suite holds MAX_PER_SUITE."""
    name, params = _name(name), check_params(kind, params)
    now = utcnow()
    with database.atomic():
        suites.lock(workspace_id, suite_id)
        if _count(workspace_id, suite_id).scalar() >= MAX_PER_SUITE:
            raise Conflict(f"A suite holds at most {MAX_PER_SUITE} assertions; delete one or start another suite.")
        row = _A.create(workspace=workspace_id, suite=suite_id, name=name, kind=kind, params=params,
                        created_by=principal.user_id, created_at=now, updated_at=now)
        suites.touch(workspace_id, suite_id)
    return get(workspace_id=workspace_id, suite_id=suite_id, assertion_id=row.id)


def list_assertions(*, workspace_id: str, suite_id: str, limit: int, offset: int) -> Page[AssertionRecord]:
    """The suite's assertions, oldest first; NotFound for a suite not of the workspace. One
    statement for a page with rows."""
    page = _PAGE.page(AssertionRecord, limit=limit, offset=offset, workspace_id=workspace_id, suite_id=suite_id)
    if not page.items:
        suites.get(workspace_id=workspace_id, suite_id=suite_id)
    return page


def get(*, workspace_id: str, suite_id: str, assertion_id: str) -> AssertionRecord:
    record = _ONE.first(AssertionRecord, workspace_id=workspace_id, suite_id=suite_id, assertion_id=assertion_id)
    if record is None:
        suites.get(workspace_id=workspace_id, suite_id=suite_id)  # which one is missing
        raise NotFound(f"No assertion {assertion_id} in suite {suite_id}.")
    return record


def update(*, workspace_id: str, suite_id: str, assertion_id: str, name: str | None = None, kind: str | None = None,
           params: dict[str, Any] | None = None) -> AssertionRecord:
    """Its name, and its kind and parameters. A new kind takes ``params`` as its parameters (the
    rest at their defaults); the same kind merges them into those it has, a parameter of a pair
    taking exactly one (``text``/``pattern``, ``equals``/``exists``) replacing its other."""
    params = params or {}
    with database.atomic():
        suites.lock(workspace_id, suite_id)
        current = get(workspace_id=workspace_id, suite_id=suite_id, assertion_id=assertion_id)
        changes: dict = {"updated_at": utcnow()}
        if name is not None:
            changes["name"] = _name(name)
        if kind is not None and kind != current.kind:
            changes["kind"], changes["params"] = kind, check_params(kind, params)
        elif params:
            merged = dict(current.params)
            for pair in ONE_OF:
                if any(field in params for field in pair):
                    for field in pair:
                        merged.pop(field, None)
            changes["params"] = check_params(current.kind, merged | params)
        _A.update(**changes).where((_A.workspace == workspace_id) & (_A.id == assertion_id)).execute()
        suites.touch(workspace_id, suite_id)
    return get(workspace_id=workspace_id, suite_id=suite_id, assertion_id=assertion_id)


def delete(*, workspace_id: str, suite_id: str, assertion_id: str) -> None:
    with database.atomic():
        suites.lock(workspace_id, suite_id)
        if not _A.delete().where((_A.workspace == workspace_id) & (_A.suite == suite_id)
                                 & (_A.id == assertion_id)).execute():
            raise NotFound(f"No assertion {assertion_id} in suite {suite_id}.")
        suites.touch(workspace_id, suite_id)


def assertions_of(*, workspace_id: str, suite_ids: Iterable[str]) -> list[AssertionRecord]:
    """The assertions of the suites ``suite_ids`` (those of the workspace; another's yield none),
    suite by suite in the order given, each suite's oldest first. One statement."""
    ids = list(dict.fromkeys(suite_ids))
    if not ids:
        return []
    rows = (_A.in_workspace(workspace_id, *_COLUMNS).where(_A.suite.in_(ids))
            .order_by(_A.created_at, _A.id).tuples())
    order = {suite_id: i for i, suite_id in enumerate(ids)}
    return sorted((AssertionRecord._make(row) for row in rows), key=lambda record: order[record.suite_id])
