"""Personas: simulated callers, which simulations put on the line against an agent or workflow.

A persona has a name (unique in the workspace without regard to case), a goal (what the caller
wants), traits (impatient, hard of hearing...), a language (a BCP 47 tag, as an agent's), an
opening line (what it says first), facts it knows ({accountNumber: "12345"}), constraints (what it
never does), an end condition (when it hangs up) and the client's own metadata. Text is kept
trimmed; an opening line or end condition that is blank is none (None). Traits, and constraints,
are each listed once without regard to case (400 naming the one listed twice).

The name's rule is a unique index on (workspace, folded name): two requests naming two personas
alike at once get one row and one 409 naming the persona holding the name, on either database.
The list is in name order (without regard to case), the index's.

Simulations read personas through ``get_persona`` and ``personas_by_id`` (one statement whatever
the count, NotFound naming the first id that is no persona of the workspace).
"""
from __future__ import annotations

import functools
import re
from datetime import datetime
from typing import NamedTuple

from peewee import IntegrityError

from models.identity.principal import Principal
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared, like, like_pattern
from models.kernel.text import printable, text_problem, trimmed_text
from models.personas.tables import Persona

NAME_MAX_CHARS = 100
GOAL_MAX_CHARS = 2000
MAX_TRAITS = 20
TRAIT_MAX_CHARS = 100
LANGUAGE_MAX_CHARS = 35
DEFAULT_LANGUAGE = "en"
OPENING_LINE_MAX_CHARS = 1000
MAX_FACTS = 50
FACT_NAME_MAX_CHARS = 100
FACT_VALUE_MAX_CHARS = 1000
MAX_CONSTRAINTS = 20
CONSTRAINT_MAX_CHARS = 500
END_CONDITION_MAX_CHARS = 1000
MAX_METADATA_PROPERTIES = 50
# The agent configuration's rule for a language (openapi/schemas/agent-config.yaml).
_LANGUAGE = re.compile(r"[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*")
UNSET = object()  # a field an update leaves as it is (None clears it)


class PersonaRecord(NamedTuple):
    id: str
    workspace_id: str
    name: str
    goal: str
    traits: list[str]
    language: str
    opening_line: str | None
    facts: dict[str, str]
    constraints: list[str]
    end_condition: str | None
    created_by: str
    created_at: datetime
    updated_at: datetime
    metadata: dict


_P = Persona
_COLUMNS = (_P.id, _P.workspace, _P.name, _P.goal, _P.traits, _P.language, _P.opening_line, _P.facts, _P.constraints,
            _P.end_condition, _P.created_by, _P.created_at, _P.updated_at, _P.metadata)
_ONE = Prepared(lambda workspace_id, persona_id: _P.in_workspace(workspace_id, *_COLUMNS).where(_P.id == persona_id))


@functools.cache
def _page(names: tuple[str, ...]):
    # By name without regard to case: the unique index on the folded name serves the order and the page.
    return workspace_list(_P, _COLUMNS, order_by=(_P.name_key, _P.id), names=names, where=lambda params: [
        like(_P.name_key, params["q"], fold=False) | like(_P.goal, params["q"])] if names else [])


# --- the rules of each field ------------------------------------------------------------------

_text = trimmed_text


def _listed_once(value, field: str, max_items: int, max_chars: int) -> list[str]:
    """A list of at most ``max_items`` one-line texts, each once without regard to case."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > max_items:
        raise InvalidInput(f"{field} must be a list of at most {max_items} texts.")
    found: list[str] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(value):
        text = _text(item, f"{field}[{index}]", max_chars)
        if text.lower() in seen:
            raise InvalidInput(f"{field} lists {text!r} twice ({field}[{seen[text.lower()]}] and {field}[{index}]); "
                               "each is listed once without regard to case.")
        seen[text.lower()] = index
        found.append(text)
    return found


def _language(value) -> str:
    if value is None:
        return DEFAULT_LANGUAGE
    if not isinstance(value, str) or len(value) > LANGUAGE_MAX_CHARS or not _LANGUAGE.fullmatch(value):
        raise InvalidInput(f"language must be a BCP 47 language tag of at most {LANGUAGE_MAX_CHARS} characters, "
                           "such as en or en-US.")
    return value


def _facts(value) -> dict[str, str]:
    """At most 50 names (1 to 100 characters once trimmed, one line, each once) to values (up to
    1,000 characters once trimmed, line breaks allowed)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_FACTS:
        raise InvalidInput(f"facts must be an object of at most {MAX_FACTS} names to texts.")
    found: dict[str, str] = {}
    for key, item in value.items():
        if problem := text_problem(key):
            raise InvalidInput(f"A name in facts {problem}.")
        name = key.strip()
        if not 1 <= len(name) <= FACT_NAME_MAX_CHARS:
            raise InvalidInput(f"Each name in facts must be 1 to {FACT_NAME_MAX_CHARS} characters once trimmed; "
                               f"{printable(key)!r} has {len(name)}.")
        if name in found:
            raise InvalidInput(f"facts names {name!r} twice once trimmed.")
        if not isinstance(item, str):
            raise InvalidInput(f"facts.{name} must be text.")
        found[name] = _text(item, f"facts.{name}", FACT_VALUE_MAX_CHARS, multiline=True, optional=True) or ""
    return found


def _metadata(value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_METADATA_PROPERTIES:
        raise InvalidInput(f"metadata must be an object of at most {MAX_METADATA_PROPERTIES} properties.")
    return value


def _required(value, field: str, max_chars: int, *, multiline: bool = False) -> str:
    if value is None:
        raise InvalidInput(f"{field} is required; it cannot be cleared.")
    return _text(value, field, max_chars, multiline=multiline)


# Each field's rule, by its name in the domain: the value given -> the value stored.
_RULES = {
    "name": lambda v: _required(v, "name", NAME_MAX_CHARS),
    "goal": lambda v: _required(v, "goal", GOAL_MAX_CHARS, multiline=True),
    "traits": lambda v: _listed_once(v, "traits", MAX_TRAITS, TRAIT_MAX_CHARS),
    "language": _language,
    "opening_line": lambda v: _text(v, "openingLine", OPENING_LINE_MAX_CHARS, multiline=True, optional=True),
    "facts": _facts,
    "constraints": lambda v: _listed_once(v, "constraints", MAX_CONSTRAINTS, CONSTRAINT_MAX_CHARS),
    "end_condition": lambda v: _text(v, "endCondition", END_CONDITION_MAX_CHARS, multiline=True, optional=True),
    "metadata": _metadata,
}
FIELDS = tuple(_RULES)


def _checked(given: dict) -> dict:
    """The columns to write for the fields ``given`` (None: cleared, or its default)."""
    columns = {field: _RULES[field](value) for field, value in given.items()}
    if "name" in columns:
        columns["name_key"] = _key(columns["name"])
    return columns


def _key(name: str) -> str:
    return name.lower()


def _name_taken(workspace_id: str, name: str, persona_id: str | None = None) -> Conflict:
    """The 409 of a write the unique index on names refused, naming the persona holding the name."""
    holder = _P.in_workspace(workspace_id, _P.id, _P.name).where(
        (_P.name_key == _key(name)) & (_P.id != (persona_id or ""))).tuples().first()
    if holder is None:  # the holder was deleted since: the write may be tried again
        return Conflict(f"The name {name!r} was taken by another persona written at the same time; try again.")
    return Conflict(f"A persona named {holder[1]!r} exists in this workspace already ({holder[0]}); names are "
                    "unique without regard to case.")


# --- operations ---------------------------------------------------------------------------------

def create_persona(principal: Principal, *, workspace_id: str, name: str, goal: str, traits=None, language=None,
                   opening_line=None, facts=None, constraints=None, end_condition=None,
                   metadata=None) -> PersonaRecord:
    """A persona of the workspace; 409 naming the persona that holds its name."""
    columns = _checked({"name": name, "goal": goal, "traits": traits, "language": language,
                        "opening_line": opening_line, "facts": facts, "constraints": constraints,
                        "end_condition": end_condition, "metadata": metadata})
    now = utcnow()
    try:
        with database.atomic():  # a savepoint: a refused insert leaves the caller's transaction whole
            row = _P.create(workspace=workspace_id, created_by=principal.user_id, created_at=now, updated_at=now,
                            **columns)
    except IntegrityError:
        raise _name_taken(workspace_id, columns["name"]) from None
    return get_persona(workspace_id=workspace_id, persona_id=row.id)


def list_personas(*, workspace_id: str, limit: int, offset: int, q: str | None = None) -> Page[PersonaRecord]:
    """The workspace's personas by name (without regard to case); ``q`` keeps those whose name or
    goal holds it, without regard to case. One statement per page."""
    values = {} if q is None else {"q": like_pattern(q)}
    return _page(tuple(sorted(values))).page(PersonaRecord, workspace_id=workspace_id, limit=limit, offset=offset,
                                             **values)


def get_persona(*, workspace_id: str, persona_id: str) -> PersonaRecord:
    record = _ONE.first(PersonaRecord, workspace_id=workspace_id, persona_id=persona_id)
    if record is None:
        raise NotFound(f"No persona {persona_id} in this workspace.")
    return record


def personas_by_id(*, workspace_id: str, ids: list[str]) -> dict[str, PersonaRecord]:
    """The personas of ``ids`` (in their order, each once) in one statement; NotFound naming the
    first that is no persona of the workspace."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    rows = _P.in_workspace(workspace_id, *_COLUMNS).where(_P.id.in_(wanted)).tuples()
    found = {record.id: record for record in map(PersonaRecord._make, rows)}
    for persona_id in wanted:
        if persona_id not in found:
            raise NotFound(f"No persona {persona_id} in this workspace.")
    return {persona_id: found[persona_id] for persona_id in wanted}


def update_persona(*, workspace_id: str, persona_id: str, **changes) -> PersonaRecord:
    """The fields given in ``changes`` (by their names in ``FIELDS``; None clears an optional one,
    language back to en), under the rules of a new persona: 409 naming the persona holding the name."""
    if unknown := set(changes) - set(FIELDS):
        raise TypeError(f"unknown persona fields: {sorted(unknown)}")
    if not changes:
        raise InvalidInput("Give at least one field to change.")
    columns = _checked(changes)
    columns["updated_at"] = utcnow()
    try:
        with database.atomic():
            if not _P.update(**columns).where((_P.workspace == workspace_id) & (_P.id == persona_id)).execute():
                raise NotFound(f"No persona {persona_id} in this workspace.")
    except IntegrityError:
        raise _name_taken(workspace_id, columns["name"], persona_id) from None
    return get_persona(workspace_id=workspace_id, persona_id=persona_id)


def delete_persona(*, workspace_id: str, persona_id: str) -> None:
    """The persona; a feedback's reference to it stays, labelled with its kind and id from then on."""
    with database.atomic():
        if not _P.delete().where((_P.workspace == workspace_id) & (_P.id == persona_id)).execute():
            raise NotFound(f"No persona {persona_id} in this workspace.")
