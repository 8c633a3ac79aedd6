"""Phone numbers in E.164, parsed and validated by phonenumbers (libphonenumber's numbering plans),
and the time zone a number's region lies in."""
from __future__ import annotations

import phonenumbers
from phonenumbers import timezone as number_zones

from models.kernel.errors import InvalidInput

MAX_INPUT = 64  # longer is no phone number, however it is written


def normalise(value: str, *, field: str, region: str | None = None) -> str:
    """``value`` in E.164 (``+14155550123``); InvalidInput naming ``field`` unless it is a valid
    number. Without ``region`` the number must be international (start with +); with one (an ISO
    3166 code, such as US) a national number is read as that region's."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_INPUT:
        raise InvalidInput(f"{field} must be a phone number in E.164 form, such as +14155550123.")
    try:
        parsed = phonenumbers.parse(value, region)
    except phonenumbers.NumberParseException:
        raise InvalidInput(f"{field} is not a phone number: {value!r} cannot be read as one; "
                           "write it in E.164 form, such as +14155550123.") from None
    if not phonenumbers.is_valid_number(parsed):
        raise InvalidInput(f"{field} is not a valid phone number: {value!r} is not a number of any "
                           "numbering plan.")
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)


def time_zone_of(number: str) -> str | None:
    """The IANA time zone of a number in E.164 when its region has one alone (a US number has
    several: its area code decides, and libphonenumber knows it), else the first it names; None
    when the number's region is unknown."""
    zones = number_zones.time_zones_for_number(phonenumbers.parse(number, None))
    zones = [zone for zone in zones if zone != number_zones.UNKNOWN_TIMEZONE]
    return zones[0] if zones else None
