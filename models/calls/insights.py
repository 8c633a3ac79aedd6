"""Structured-data fields (the insights group): their definitions per workspace, which agents'
calls carry them, and the values calls hold.

A value is checked against its field's type wherever it comes from: through the API a bad one is
InvalidInput naming the field; in an end-of-call-report the report is kept and the value is left
out with a warning (the runtime cannot correct a call that has ended). Values are stored one row
per (call, field) in the column of their type, with the call's start, agent and type copied,
so that analytics (models.calls.analytics) groups this table alone.
"""
from __future__ import annotations

import math
from datetime import datetime
from typing import NamedTuple

from peewee import IntegrityError, fn

from models.calls.tables import AgentInsight, Call, CallValue, StructuredField
from models.configs.tables import Agent
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import same_workspace
from models.kernel.sql import Prepared

FIELD_TYPES = ("string", "number", "boolean", "enum")


# ---------------------------------------------------------------------------------------------
# The domain.

NAME_MAX_CHARS = 100
TEXT_VALUE_MAX_CHARS = 1000
_UNSET = object()


class FieldRecord(NamedTuple):
    id: int
    workspace_id: str
    name: str
    type: str
    enum_values: list | None
    description: str | None
    created_at: datetime
    updated_at: datetime


_FIELD_COLUMNS = (StructuredField.id, StructuredField.workspace, StructuredField.name, StructuredField.type,
                  StructuredField.enum_values, StructuredField.description, StructuredField.created_at,
                  StructuredField.updated_at)
_FIELDS_PAGE = PageQuery(
    lambda workspace_id, limit, offset: StructuredField.in_workspace(workspace_id, *_FIELD_COLUMNS)
    .order_by(StructuredField.id).limit(limit).offset(offset),
    lambda workspace_id: StructuredField.in_workspace(workspace_id, fn.COUNT(StructuredField.id)))
_FIELD = Prepared(lambda workspace_id, field_id: StructuredField.in_workspace(workspace_id, *_FIELD_COLUMNS)
                  .where(StructuredField.id == field_id))


def _name(value: str) -> str:
    name = value.strip()
    if not 1 <= len(name) <= NAME_MAX_CHARS:
        raise InvalidInput(f"name must be 1 to {NAME_MAX_CHARS} characters once trimmed; {len(name)} given.")
    return name


def _enum_values(type_: str, values: list | None) -> list | None:
    if type_ != "enum":
        if values is not None:
            raise InvalidInput(f"enumValues belongs to fields of type enum only; this one is {type_}.")
        return None
    if not values:
        raise InvalidInput("enumValues must list the values of an enum field (1 to 100).")
    if len(set(values)) != len(values):
        raise InvalidInput("enumValues must not repeat a value.")
    return list(values)


def create_field(*, workspace_id: str, name: str, type: str, enum_values: list | None = None,
                 description: str | None = None) -> FieldRecord:
    name = _name(name)
    enum_values = _enum_values(type, enum_values)
    now = utcnow()
    try:
        with database.atomic():
            row = StructuredField.create(workspace=workspace_id, name=name, name_key=name.lower(), type=type,
                                         enum_values=enum_values, description=description, created_at=now,
                                         updated_at=now)
    except IntegrityError:
        raise Conflict(f"A field named {name!r} exists in this workspace already (names are unique without "
                       f"regard to case).") from None
    return get_field(workspace_id=workspace_id, field_id=row.id)


def list_fields(*, workspace_id: str, limit: int, offset: int) -> Page[FieldRecord]:
    return _FIELDS_PAGE.page(FieldRecord, workspace_id=workspace_id, limit=limit, offset=offset)


def get_field(*, workspace_id: str, field_id: int) -> FieldRecord:
    record = _FIELD.first(FieldRecord, workspace_id=workspace_id, field_id=field_id)
    if record is None:
        raise NotFound(f"No structured-data field {field_id} in this workspace.")
    return record


def update_field(*, workspace_id: str, field_id: int, name: str | None = None, type: str | None = None,
                 enum_values=_UNSET, description=_UNSET) -> FieldRecord:
    """A field's type, or an enum's values, change only while no call holds a value they would
    no longer admit (409 saying how many do)."""
    with database.atomic():
        current = get_field(workspace_id=workspace_id, field_id=field_id)
        changes: dict = {"updated_at": utcnow()}
        if name is not None:
            changes["name"] = _name(name)
            changes["name_key"] = changes["name"].lower()
        new_type = type or current.type
        if enum_values is _UNSET:
            enum_values = current.enum_values if new_type == "enum" else None
        enum_values = _enum_values(new_type, enum_values)
        values = CallValue.in_workspace(workspace_id).where(CallValue.field == field_id)
        if new_type != current.type:
            held = values.count()
            if held:
                raise Conflict(f"Field {current.name!r} holds values in {held} call(s); its type cannot change "
                               f"from {current.type} to {new_type} (delete the field to start over).")
        elif new_type == "enum":
            held = values.where(CallValue.text_value.not_in(enum_values)).count()
            if held:
                raise Conflict(f"{held} call(s) hold values of field {current.name!r} that enumValues would "
                               f"no longer list.")
        changes.update(type=new_type, enum_values=enum_values)
        if description is not _UNSET:
            changes["description"] = description
        try:
            with database.atomic():
                StructuredField.update(**changes).where(StructuredField.id == field_id).execute()
        except IntegrityError:
            raise Conflict(f"A field named {changes['name']!r} exists in this workspace already (names are "
                           f"unique without regard to case).") from None
    return get_field(workspace_id=workspace_id, field_id=field_id)


def delete_field(*, workspace_id: str, field_id: int) -> None:
    """The field, its values in every call and its assignments to agents."""
    with database.atomic():
        if not StructuredField.delete().where((StructuredField.workspace == workspace_id)
                                              & (StructuredField.id == field_id)).execute():
            raise NotFound(f"No structured-data field {field_id} in this workspace.")


# --- agent insights ---------------------------------------------------------------------------

def _agent_exists(workspace_id: str, agent_id: str) -> None:
    if not Agent.in_workspace(workspace_id, Agent.id).where(Agent.id == agent_id).exists():
        raise NotFound(f"No agent {agent_id} in this workspace.")


def agent_fields(*, workspace_id: str, agent_id: str) -> list[FieldRecord]:
    """The fields an agent's calls carry, in the order of their ids."""
    _agent_exists(workspace_id, agent_id)
    rows = (StructuredField.in_workspace(workspace_id, *_FIELD_COLUMNS)
            .join(AgentInsight, on=same_workspace(AgentInsight.field == StructuredField.id, AgentInsight, StructuredField))
            .where(AgentInsight.agent == agent_id).order_by(StructuredField.id).tuples())
    return [FieldRecord(*row[:4], _json(row[4]), *row[5:]) for row in rows]


def set_agent_fields(*, workspace_id: str, agent_id: str, field_ids: list[int]) -> list[FieldRecord]:
    """The agent's calls carry exactly ``field_ids`` from now on."""
    wanted = list(dict.fromkeys(field_ids))
    with database.atomic():
        _agent_exists(workspace_id, agent_id)
        found = {row.id for row in StructuredField.in_workspace(workspace_id, StructuredField.id)
                 .where(StructuredField.id.in_(wanted))} if wanted else set()
        missing = [str(i) for i in wanted if i not in found]
        if missing:
            raise InvalidInput(f"insightIds name no field of this workspace: {', '.join(missing)}.")
        AgentInsight.delete().where(AgentInsight.agent == agent_id).execute()
        if wanted:
            now = utcnow()
            AgentInsight.insert_many([{"workspace": workspace_id, "agent": agent_id, "field": i, "created_at": now}
                                      for i in wanted]).execute()
    return agent_fields(workspace_id=workspace_id, agent_id=agent_id)


def _json(value):
    return StructuredField.enum_values.python_value(value) if isinstance(value, str) else value


# --- values -----------------------------------------------------------------------------------

def _columns(field_name: str, field_type: str, enum_values: list | None, value) -> dict:
    """The value in the column of its type; InvalidInput naming the field if it is not one."""
    where = f"structuredData.{field_name}"
    if field_type == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InvalidInput(f"{where} must be a finite number.")
        if abs(value) > 1e300:
            raise InvalidInput(f"{where} must lie between -1e300 and 1e300.")
        return {"number_value": float(value)}
    if field_type == "boolean":
        if not isinstance(value, bool):
            raise InvalidInput(f"{where} must be true or false.")
        return {"boolean_value": value}
    if not isinstance(value, str):
        raise InvalidInput(f"{where} must be a string.")
    if field_type == "enum" and value not in (enum_values or ()):
        raise InvalidInput(f"{where} must be one of {', '.join(map(repr, enum_values or ()))}.")
    if len(value) > TEXT_VALUE_MAX_CHARS:
        raise InvalidInput(f"{where} must be at most {TEXT_VALUE_MAX_CHARS} characters.")
    return {"text_value": value}


def _fields_by_key(workspace_id: str, names) -> dict[str, tuple]:
    keys = list({name.lower() for name in names})
    if not keys:
        return {}
    rows = (StructuredField.in_workspace(workspace_id, StructuredField.id, StructuredField.name,
                                         StructuredField.type, StructuredField.enum_values,
                                         StructuredField.name_key)
            .where(StructuredField.name_key.in_(keys)).tuples())
    return {row[4]: (row[0], row[1], row[2], _json(row[3])) for row in rows}


def _rows(workspace_id, call_id, started_at, agent_id, call_type, values: dict, *, strict: bool):
    fields = _fields_by_key(workspace_id, values)
    rows, warnings, seen = [], [], set()
    for name, value in values.items():
        field = fields.get(name.lower())
        if field is None:
            problem = f"structuredData.{name} names no structured-data field of this workspace."
        elif field[0] in seen:
            problem = f"structuredData.{name} repeats field {field[1]!r}."
        elif value is None:
            continue
        else:
            try:
                columns = _columns(name, field[2], field[3], value)
            except InvalidInput as exc:
                problem = str(exc)
            else:
                seen.add(field[0])
                rows.append({"workspace": workspace_id, "call": call_id, "field": field[0], "started_at": started_at,
                             "agent_id": agent_id, "call_type": call_type, "number_value": None,
                             "boolean_value": None, "text_value": None, **columns})
                continue
        if strict:
            raise InvalidInput(problem)
        warnings.append(problem + " The value was not kept.")
    return rows, warnings


def store_report_values(*, workspace_id: str, call_id: str, started_at: datetime, agent_id: str | None,
                        call_type: str | None, structured_data: dict) -> list[str]:
    """A new call's values from its report (inside the ingest's transaction); the warnings for
    those not kept."""
    rows, warnings = _rows(workspace_id, call_id, started_at, agent_id, call_type, structured_data, strict=False)
    if rows:
        CallValue.insert_many(rows).execute()
    return warnings


def set_call_values(*, workspace_id: str, call_id: str, values: dict) -> dict:
    """The call's values become exactly ``values`` (a null leaves its field without a value)."""
    with database.atomic():
        call = (Call.in_workspace(workspace_id, Call.started_at, Call.agent_id, Call.call_type)
                .where(Call.id == call_id).tuples().first())
        if call is None:
            raise NotFound(f"No call {call_id} in this workspace.")
        rows, _ = _rows(workspace_id, call_id, *call, values, strict=True)
        CallValue.delete().where(CallValue.call == call_id).execute()
        if rows:
            CallValue.insert_many(rows).execute()
    return values_by_call(workspace_id=workspace_id, call_ids=[call_id]).get(call_id, {})


def call_values(*, workspace_id: str, call_id: str) -> dict:
    if not Call.in_workspace(workspace_id, Call.id).where(Call.id == call_id).exists():
        raise NotFound(f"No call {call_id} in this workspace.")
    return values_by_call(workspace_id=workspace_id, call_ids=[call_id]).get(call_id, {})


def values_by_call(*, workspace_id: str, call_ids: list[str]) -> dict[str, dict]:
    """Each call's values by field name, in the order of the fields' ids: one statement."""
    if not call_ids:
        return {}
    rows = (CallValue.in_workspace(workspace_id, CallValue.call, StructuredField.name, StructuredField.type,
                                   CallValue.number_value, CallValue.boolean_value, CallValue.text_value)
            .join(StructuredField, on=same_workspace(StructuredField.id == CallValue.field, StructuredField, CallValue))
            .where(CallValue.call.in_(call_ids)).order_by(CallValue.field).tuples())
    found: dict[str, dict] = {}
    for call_id, name, type_, number, boolean, text in rows:
        value = number if type_ == "number" else boolean if type_ == "boolean" else text
        if type_ == "number" and value is not None and value.is_integer() and abs(value) < 2 ** 53:
            value = int(value)
        found.setdefault(call_id, {})[name] = value
    return found
