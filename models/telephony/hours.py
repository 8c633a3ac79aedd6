"""Business hours: weekly hours in an IANA time zone with dated exceptions, and whether an instant
falls within them.

Hours are wall-clock times of the zone, so an instant is turned into the zone's local date and
time first: a window of 09:00-17:00 stays 09:00-17:00 local across a daylight-saving change, and
its length in UTC changes that day. ``"24:00"`` ends a window at midnight. A day's windows may not
overlap; a window does not cross midnight (write 22:00-24:00 and the next day's 00:00-02:00).
"""
from __future__ import annotations

import re
from datetime import date, datetime, time, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from models.kernel.errors import InvalidInput

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MAX_WINDOWS_PER_DAY = 8
MAX_EXCEPTIONS = 366
_CLOCK = re.compile(r"(?:[01]\d|2[0-3]):[0-5]\d|24:00")


def zone(name: str, field: str = "timeZone") -> ZoneInfo:
    """The IANA zone ``name``; InvalidInput naming ``field`` when the database has none such."""
    try:
        if not isinstance(name, str) or not name or len(name) > 64 or name.startswith(("/", ".")):
            raise ValueError
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidInput(f"{field} must be an IANA time zone, such as Europe/Paris, not {name!r}.") from None


def _minutes(clock: str) -> int:
    return int(clock[:2]) * 60 + int(clock[3:])


def check_windows(windows, field: str) -> list[dict]:
    """A day's windows ``[{start, end}]`` as given, sorted; InvalidInput naming ``field`` when a
    time is not HH:MM, a window is empty or backwards, or two overlap."""
    if not isinstance(windows, list) or len(windows) > MAX_WINDOWS_PER_DAY:
        raise InvalidInput(f"{field} must be a list of at most {MAX_WINDOWS_PER_DAY} windows {{start, end}}.")
    checked = []
    for i, window in enumerate(windows):
        if not isinstance(window, dict) or set(window) != {"start", "end"}:
            raise InvalidInput(f"{field}[{i}] must be an object with start and end, such as "
                               '{"start": "09:00", "end": "17:00"}.')
        start, end = window["start"], window["end"]
        for name, value in (("start", start), ("end", end)):
            if not isinstance(value, str) or not _CLOCK.fullmatch(value):
                raise InvalidInput(f"{field}[{i}].{name} must be a time HH:MM from 00:00 to 24:00.")
        if _minutes(start) >= _minutes(end):
            raise InvalidInput(f"{field}[{i}] must end after it starts ({start} to {end}); a window "
                               "does not cross midnight.")
        checked.append({"start": start, "end": end})
    checked.sort(key=lambda w: w["start"])
    for before, after in zip(checked, checked[1:]):
        if _minutes(after["start"]) < _minutes(before["end"]):
            raise InvalidInput(f"{field} has overlapping windows: {before['start']}-{before['end']} "
                               f"and {after['start']}-{after['end']}.")
    return checked


def check_weekly_hours(hours, field: str = "weeklyHours") -> dict:
    """``{monday: [windows], ...}``: every day named, absent days closed; InvalidInput otherwise."""
    if not isinstance(hours, dict):
        raise InvalidInput(f"{field} must be an object with a list of windows per day, such as "
                           '{"monday": [{"start": "09:00", "end": "17:00"}]}.')
    unknown = sorted(set(hours) - set(DAYS))
    if unknown:
        raise InvalidInput(f"{field} names {', '.join(unknown)}: days are {', '.join(DAYS)}.")
    return {day: check_windows(hours.get(day, []), f"{field}.{day}") for day in DAYS}


def check_exceptions(exceptions, field: str = "exceptions") -> list[dict]:
    """``[{date, name?, hours}]``, one per date, sorted; hours [] closes the day."""
    if not isinstance(exceptions, list) or len(exceptions) > MAX_EXCEPTIONS:
        raise InvalidInput(f"{field} must be a list of at most {MAX_EXCEPTIONS} dated exceptions.")
    checked, seen = [], set()
    for i, exception in enumerate(exceptions):
        if not isinstance(exception, dict) or "date" not in exception or set(exception) - {"date", "name", "hours"}:
            raise InvalidInput(f"{field}[{i}] must be an object with date, and optionally name and "
                               "hours (none or [] closes the day).")
        try:
            day = date.fromisoformat(exception["date"]) if isinstance(exception["date"], str) else None
        except ValueError:
            day = None
        if day is None or len(exception["date"]) != 10:
            raise InvalidInput(f"{field}[{i}].date must be a date YYYY-MM-DD.")
        if day in seen:
            raise InvalidInput(f"{field} names {day.isoformat()} twice.")
        seen.add(day)
        name = exception.get("name")
        if name is not None and (not isinstance(name, str) or len(name) > 100):
            raise InvalidInput(f"{field}[{i}].name must be text of at most 100 characters.")
        checked.append({"date": day.isoformat(), "name": name,
                        "hours": check_windows(exception.get("hours") or [], f"{field}[{i}].hours")})
    checked.sort(key=lambda e: e["date"])
    return checked


def local(at: datetime, time_zone: str) -> datetime:
    """``at`` (naive UTC, as stored, or aware) as the wall-clock time of ``time_zone``."""
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    return at.astimezone(ZoneInfo(time_zone))


def _within(windows: list[dict], clock: time) -> bool:
    minute = clock.hour * 60 + clock.minute
    return any(_minutes(w["start"]) <= minute < _minutes(w["end"]) for w in windows)


def is_open(*, time_zone: str, weekly_hours: dict, exceptions: list[dict], at: datetime) -> bool:
    """Whether ``at`` falls within the hours: the exception of its local date if there is one,
    else its weekday's windows."""
    wall = local(at, time_zone)
    today = wall.date().isoformat()
    for exception in exceptions:
        if exception["date"] == today:
            return _within(exception["hours"], wall.time())
    return _within(weekly_hours.get(DAYS[wall.weekday()], []), wall.time())
