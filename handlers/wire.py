"""Conversions between wire values and domain values that every group's handlers share."""
from __future__ import annotations

from datetime import datetime, timezone

from api.envelope import ok
from models.kernel.errors import InvalidInput


def iso(value: datetime | None) -> str | None:
    """A stored timestamp (naive UTC) as the wire writes it: ISO 8601 with milliseconds and Z."""
    return None if value is None else value.isoformat(timespec="milliseconds") + "Z"


def parse_datetime(value: str | None, field: str) -> datetime | None:
    """An ISO 8601 date-time from the wire, timezone-aware; InvalidInput naming ``field`` otherwise."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"{field} must be an ISO 8601 date-time, such as 2030-01-31T12:00:00Z.") from None
    if parsed.tzinfo is None:
        raise InvalidInput(f"{field} must carry a time zone offset, such as Z or +02:00.")
    return parsed


def naive_utc(value: str | None, field: str) -> datetime | None:
    """An ISO 8601 date-time with an offset from the wire, as stored: naive UTC. InvalidInput naming
    ``field`` when it is malformed, has no offset, or falls outside the years 1 to 9999 in UTC."""
    parsed = parse_datetime(value, field)
    if parsed is None:
        return None
    try:
        return parsed.astimezone(timezone.utc).replace(tzinfo=None)
    except OverflowError:
        raise InvalidInput(f"{field} must fall within the years 1 to 9999 in UTC.") from None


def id_list(values: list[str], field: str) -> list[str]:
    """A comma-separated list parameter (the contract bounds its length), each id trimmed and non-blank."""
    ids = [value.strip() for value in values]
    if not all(ids):
        raise InvalidInput(f"{field} must list ids separated by commas, none of them blank.")
    return ids


def deleted(resource_id: str | int, message: str, **more):
    """The answer of every DELETE: ``{id, deleted: true}`` (the contract's Deleted), with ``more``
    where an operation says more of what went."""
    return ok({"id": resource_id, "deleted": True, **more}, message)
