"""Business hours (models.telephony.hours): the checks of windows and exceptions at their bounds,
24:00, exceptions over weekdays, and wall-clock hours across daylight-saving changes in New York
and London, each at a fixed instant."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from models.kernel.errors import InvalidInput
from models.telephony import hours
from models.telephony.schedules import ScheduleRecord, open_at

DAYS_9_TO_5 = {day: [{"start": "09:00", "end": "17:00"}] for day in hours.DAYS}


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def is_open(at: datetime, time_zone: str = "America/New_York", weekly=None, exceptions=()) -> bool:
    return hours.is_open(time_zone=time_zone, weekly_hours=DAYS_9_TO_5 if weekly is None else weekly,
                         exceptions=list(exceptions), at=at)


# --- checks --------------------------------------------------------------------------------------

@pytest.mark.parametrize("windows", [
    [], [{"start": "00:00", "end": "24:00"}], [{"start": "23:59", "end": "24:00"}],
    [{"start": "12:00", "end": "17:00"}, {"start": "09:00", "end": "12:00"}],
    [{"start": f"{h:02d}:00", "end": f"{h:02d}:01"} for h in range(hours.MAX_WINDOWS_PER_DAY)],
])
def test_windows_that_are_accepted(windows):
    checked = hours.check_windows(windows, "monday")
    assert [w["start"] for w in checked] == sorted(w["start"] for w in windows)


@pytest.mark.parametrize("windows, says", [
    ([{"start": "09:00", "end": "09:00"}], "must end after it starts"),
    ([{"start": "17:00", "end": "09:00"}], "does not cross midnight"),
    ([{"start": "00:00", "end": "24:01"}], "00:00 to 24:00"),
    ([{"start": "24:00", "end": "24:00"}], "must end after it starts"),
    ([{"start": "9:00", "end": "17:00"}], "HH:MM"),
    ([{"start": "09:60", "end": "17:00"}], "HH:MM"),
    ([{"start": "09:00", "end": "12:01"}, {"start": "12:00", "end": "17:00"}], "overlapping"),
    ([{"start": "09:00", "end": "17:00"}, {"start": "10:00", "end": "11:00"}], "overlapping"),
    ([{"start": "09:00", "end": "17:00", "extra": 1}], "start and end"),
    ([{"start": f"{h:02d}:00", "end": f"{h:02d}:01"} for h in range(hours.MAX_WINDOWS_PER_DAY + 1)], "at most"),
    ("09:00-17:00", "a list"),
])
def test_windows_that_are_refused_name_the_day(windows, says):
    with pytest.raises(InvalidInput) as refused:
        hours.check_windows(windows, "weeklyHours.monday")
    assert says in refused.value.message and "weeklyHours.monday" in refused.value.message


def test_weekly_hours_name_every_day_and_only_days():
    checked = hours.check_weekly_hours({"friday": [{"start": "09:00", "end": "17:00"}]})
    assert list(checked) == list(hours.DAYS) and checked["monday"] == []
    with pytest.raises(InvalidInput, match="funday"):
        hours.check_weekly_hours({"funday": []})
    with pytest.raises(InvalidInput, match="weeklyHours"):
        hours.check_weekly_hours([])


def test_exceptions_one_per_date_sorted_bounded():
    checked = hours.check_exceptions([{"date": "2026-12-31", "name": "Eve", "hours": [{"start": "09:00", "end": "12:00"}]},
                                      {"date": "2026-12-25"}])
    assert checked == [{"date": "2026-12-25", "name": None, "hours": []},
                       {"date": "2026-12-31", "name": "Eve", "hours": [{"start": "09:00", "end": "12:00"}]}]
    for bad, says in (([{"date": "2026-12-25"}, {"date": "2026-12-25"}], "twice"),
                      ([{"date": "2026-02-29"}], "YYYY-MM-DD"), ([{"date": "2026-1-05"}], "YYYY-MM-DD"),
                      ([{"name": "no date"}], "date"), ([{"date": "2026-12-25", "name": "x" * 101}], "100"),
                      ([{"date": "2026-12-25", "open": True}], "date")):
        with pytest.raises(InvalidInput, match=says):
            hours.check_exceptions(bad)
    start = datetime(2028, 1, 1)
    most = [{"date": (start + timedelta(days=i)).date().isoformat()} for i in range(hours.MAX_EXCEPTIONS)]
    assert len(hours.check_exceptions(most)) == hours.MAX_EXCEPTIONS
    with pytest.raises(InvalidInput, match="at most"):
        hours.check_exceptions(most + [{"date": "2030-01-01"}])


@pytest.mark.parametrize("name", ["Mars/Olympus", "", "/etc/localtime", "../UTC", "x" * 65, None])
def test_a_zone_that_is_not_iana_is_refused(name):
    with pytest.raises(InvalidInput, match="timeZone"):
        hours.zone(name)


# --- whether an instant is within the hours -----------------------------------------------------

def test_a_window_includes_its_start_and_excludes_its_end():
    # 2026-11-23 is a Monday; New York is UTC-5.
    assert not is_open(utc("2026-11-23T13:59:59"))
    assert is_open(utc("2026-11-23T14:00:00"))
    assert is_open(utc("2026-11-23T21:59:59"))
    assert not is_open(utc("2026-11-23T22:00:00"))


def test_24_00_ends_a_window_at_midnight():
    late = {"monday": [{"start": "22:00", "end": "24:00"}], "tuesday": [{"start": "00:00", "end": "02:00"}]}
    assert is_open(utc("2026-11-23T22:00:00"), "UTC", late)
    assert is_open(utc("2026-11-23T23:59:59"), "UTC", late)
    assert is_open(utc("2026-11-24T00:00:00"), "UTC", late)  # Tuesday's window
    assert not is_open(utc("2026-11-24T02:00:00"), "UTC", late)
    assert not is_open(utc("2026-11-24T22:00:00"), "UTC", late)  # Tuesday has no late window


def test_an_exception_replaces_its_local_dates_hours():
    closed = [{"date": "2026-12-25", "name": "Christmas", "hours": []}]
    short = [{"date": "2026-12-24", "name": "Eve", "hours": [{"start": "09:00", "end": "12:00"}]}]
    assert not is_open(utc("2026-12-25T15:00:00"), exceptions=closed)
    assert is_open(utc("2026-12-26T15:00:00"), exceptions=closed)
    # 03:00Z on the 26th is still the 25th in New York: the exception's local date decides.
    evening = {day: [{"start": "00:00", "end": "24:00"}] for day in hours.DAYS}
    assert not is_open(utc("2026-12-26T03:00:00"), weekly=evening, exceptions=closed)
    assert is_open(utc("2026-12-26T05:00:00"), weekly=evening, exceptions=closed)
    assert is_open(utc("2026-12-24T16:59:00"), exceptions=short)
    assert not is_open(utc("2026-12-24T17:00:00"), exceptions=short)
    # An exception may open a day its weekday keeps closed.
    weekdays_only = {day: [{"start": "09:00", "end": "17:00"}] for day in hours.DAYS[:5]}
    saturday = [{"date": "2026-11-28", "hours": [{"start": "10:00", "end": "14:00"}]}]
    assert not is_open(utc("2026-11-28T16:00:00"), weekly=weekdays_only)
    assert is_open(utc("2026-11-28T16:00:00"), weekly=weekdays_only, exceptions=saturday)


@pytest.mark.parametrize("at, within", [
    # New York springs forward on 2026-03-08 at 02:00 EST (UTC-5 -> UTC-4).
    ("2026-03-07T13:59:59", False), ("2026-03-07T14:00:00", True), ("2026-03-07T21:59:59", True),
    ("2026-03-07T22:00:00", False),
    ("2026-03-08T12:59:59", False), ("2026-03-08T13:00:00", True), ("2026-03-08T20:59:59", True),
    ("2026-03-08T21:00:00", False),
    # And falls back on 2026-11-01 at 02:00 EDT (UTC-4 -> UTC-5).
    ("2026-10-31T13:00:00", True), ("2026-10-31T20:59:59", True), ("2026-10-31T21:00:00", False),
    ("2026-11-01T13:59:59", False), ("2026-11-01T14:00:00", True), ("2026-11-01T21:59:59", True),
    ("2026-11-01T22:00:00", False),
])
def test_nine_to_five_in_new_york_across_the_change_days(at, within):
    assert is_open(utc(at)) is within


@pytest.mark.parametrize("at, within", [
    # London: GMT (UTC+0) until 2026-03-29 01:00 UTC, then BST (UTC+1) until 2026-10-25 01:00 UTC.
    ("2026-03-28T08:59:59", False), ("2026-03-28T09:00:00", True), ("2026-03-28T16:59:59", True),
    ("2026-03-29T07:59:59", False), ("2026-03-29T08:00:00", True), ("2026-03-29T15:59:59", True),
    ("2026-03-29T16:00:00", False),
    ("2026-10-25T08:59:59", False), ("2026-10-25T09:00:00", True), ("2026-10-25T16:59:59", True),
    ("2026-10-25T17:00:00", False),
])
def test_nine_to_five_in_london_across_the_change_days(at, within):
    assert is_open(utc(at), "Europe/London") is within


def test_a_window_over_the_skipped_hour_opens_when_the_clock_reaches_its_start():
    # 02:00-04:00 on the spring change day: 02:00-03:00 does not exist, the clock goes 01:59 -> 03:00.
    night = {"sunday": [{"start": "02:00", "end": "04:00"}]}
    assert not is_open(utc("2026-03-08T06:59:59"), weekly=night)  # 01:59:59 EST
    assert is_open(utc("2026-03-08T07:00:00"), weekly=night)  # 03:00 EDT
    assert not is_open(utc("2026-03-08T08:00:00"), weekly=night)  # 04:00 EDT


def test_a_window_over_the_repeated_hour_is_open_both_times():
    night = {"sunday": [{"start": "01:00", "end": "02:00"}]}
    assert is_open(utc("2026-11-01T05:30:00"), weekly=night)  # 01:30 EDT
    assert is_open(utc("2026-11-01T06:30:00"), weekly=night)  # 01:30 EST, an hour later
    assert not is_open(utc("2026-11-01T07:00:00"), weekly=night)  # 02:00 EST


def test_naive_instants_are_utc_and_open_at_reads_a_stored_schedule():
    record = ScheduleRecord("id", "ws", "Office", "America/New_York", DAYS_9_TO_5, [], "user",
                            datetime(2026, 1, 1), datetime(2026, 1, 1))
    assert open_at(record, datetime(2026, 11, 23, 14, 0)) is True
    assert open_at(record, datetime(2026, 11, 23, 13, 59)) is False
    assert open_at(record, datetime(2026, 11, 23, 9, 0, tzinfo=timezone(timedelta(hours=-5)))) is True
