"""The workspace's phone book: a name for a number (an alias), one name per number and one number
per name, names unique without regard to case.

Both rules are unique indexes ((workspace, name_key), (workspace, number)): two requests adding
the same name at once get one row and one 409, on either database; which rule refused is read
after the failed write. The calls list, a call and the export show the alias of a call's customer
number (models.calls.calls joins this table), matching the number as the call recorded it.
"""
from __future__ import annotations

import functools
from datetime import datetime
from typing import NamedTuple

from peewee import IntegrityError

from models.identity.principal import Principal
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared, like, like_pattern
from models.kernel.text import text_problem
from models.telephony import e164
from models.telephony.numbers import number_prefix
from models.telephony.tables import PhoneAlias

NAME_MAX_CHARS = 100


class AliasRecord(NamedTuple):
    id: str
    workspace_id: str
    name: str
    number: str
    created_by: str
    created_at: datetime
    updated_at: datetime


_A = PhoneAlias
_COLUMNS = (_A.id, _A.workspace, _A.name, _A.number, _A.created_by, _A.created_at, _A.updated_at)
_ONE = Prepared(lambda workspace_id, alias_id: _A.in_workspace(workspace_id, *_COLUMNS).where(_A.id == alias_id))


@functools.cache
def _page(names: tuple[str, ...]):
    # By name (the unique index on the folded name serves the order and the page).
    return workspace_list(_A, _COLUMNS, order_by=(_A.name_key, _A.id), names=names, where=lambda params: [
        like(_A.name_key, params["name_part"], fold=False)
        | like(_A.number, params["number_prefix"], fold=False)] if names else [])


def _name(value: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput("name must be text.")
    if problem := text_problem(value):
        raise InvalidInput(f"name {problem}.")
    name = value.strip()
    if not 1 <= len(name) <= NAME_MAX_CHARS:
        raise InvalidInput(f"name must be 1 to {NAME_MAX_CHARS} characters once trimmed; {len(name)} given.")
    return name


def _key(name: str) -> str:
    return name.lower()


def _refused(workspace_id: str, name: str | None, number: str | None, alias_id: str | None = None) -> Conflict:
    """The 409 of a write a unique index refused: which rule, and the entry holding it."""
    if name is not None:
        holder = _A.in_workspace(workspace_id, _A.id).where((_A.name_key == _key(name))
                                                             & (_A.id != (alias_id or ""))).scalar()
        if holder is not None:
            return Conflict(f"The phone book has an entry named {name!r} already ({holder}); names are unique "
                            "without regard to case.")
    holder = _A.in_workspace(workspace_id, _A.id, _A.name).where((_A.number == number)
                                                                 & (_A.id != (alias_id or ""))).tuples().first()
    if holder is not None:
        return Conflict(f"The number {number} has a name in the phone book already: {holder[1]!r} ({holder[0]}); "
                        "a number has one name.")
    return Conflict("The phone book entry conflicts with another written at the same time; try again.")


def create(principal: Principal, *, workspace_id: str, name: str, number: str) -> AliasRecord:
    name, number = _name(name), e164.normalise(number, field="number")
    now = utcnow()
    try:
        with database.atomic():
            row = _A.create(workspace=workspace_id, name=name, name_key=_key(name), number=number,
                            created_by=principal.user_id, created_at=now, updated_at=now)
    except IntegrityError:
        raise _refused(workspace_id, name, number) from None
    return get(workspace_id=workspace_id, alias_id=row.id)


def list_aliases(*, workspace_id: str, limit: int, offset: int, q: str | None = None) -> Page[AliasRecord]:
    """The phone book by name; ``q`` keeps the entries whose name holds it (without case) or whose
    number starts with it (spaces, dashes, dots and parentheses in ``q`` ignored)."""
    values = {} if q is None else {"name_part": like_pattern(_key(q)),
                                   "number_prefix": like_pattern(number_prefix(q), prefix=True)}
    return _page(tuple(sorted(values))).page(AliasRecord, workspace_id=workspace_id, limit=limit, offset=offset,
                                             **values)


def get(*, workspace_id: str, alias_id: str) -> AliasRecord:
    record = _ONE.first(AliasRecord, workspace_id=workspace_id, alias_id=alias_id)
    if record is None:
        raise NotFound(f"No phone book entry {alias_id} in this workspace.")
    return record


def update(*, workspace_id: str, alias_id: str, name: str | None = None, number: str | None = None) -> AliasRecord:
    changes: dict = {"updated_at": utcnow()}
    if name is not None:
        name = _name(name)
        changes.update(name=name, name_key=_key(name))
    if number is not None:
        number = changes["number"] = e164.normalise(number, field="number")
    try:
        with database.atomic():
            if not _A.update(**changes).where((_A.workspace == workspace_id) & (_A.id == alias_id)).execute():
                raise NotFound(f"No phone book entry {alias_id} in this workspace.")
    except IntegrityError:
        raise _refused(workspace_id, name, number, alias_id) from None
    return get(workspace_id=workspace_id, alias_id=alias_id)


def delete(*, workspace_id: str, alias_id: str) -> None:
    with database.atomic():
        if not _A.delete().where((_A.workspace == workspace_id) & (_A.id == alias_id)).execute():
            raise NotFound(f"No phone book entry {alias_id} in this workspace.")
