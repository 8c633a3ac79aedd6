"""Phone numbers in E.164 (models.telephony.e164): what people write is read by libphonenumber,
normalised, or refused with a message naming the field."""
from __future__ import annotations

import pytest

from models.kernel.errors import InvalidInput
from models.telephony.e164 import MAX_INPUT, normalise, time_zone_of


@pytest.mark.parametrize("written", ["+14155550123", "+1 415 555 0123", "+1-415-555-0123", "+1 (415) 555-0123",
                                     "+1.415.555.0123", " +14155550123 ", "+1 415 5550123"])
def test_spaces_dashes_dots_and_parentheses_are_read_away(written):
    assert normalise(written, field="number") == "+14155550123"


def test_other_regions_normalise_to_their_country_code():
    assert normalise("+44 20 7183 8750", field="number") == "+442071838750"
    assert normalise("+33 1 42 68 53 00", field="number") == "+33142685300"


def test_a_national_number_needs_a_region_and_is_read_as_that_regions():
    with pytest.raises(InvalidInput, match="^number is not a phone number"):
        normalise("(415) 555-0123", field="number")
    assert normalise("(415) 555-0123", field="number", region="US") == "+14155550123"
    assert normalise("020 7183 8750", field="number", region="GB") == "+442071838750"
    # An international number is the same whatever the region says.
    assert normalise("+14155550123", field="number", region="GB") == "+14155550123"


@pytest.mark.parametrize("written", ["+1415", "+1 415 555 01234567", "+1 000 555 0123",
                                     "+44 20 7183"])
def test_a_number_of_no_numbering_plan_is_invalid(written):
    with pytest.raises(InvalidInput, match="^number is not a valid phone number"):
        normalise(written, field="number")


@pytest.mark.parametrize("written", ["hello", "++", "+", "call me", "+999 1234 5678"])
def test_what_cannot_be_read_as_a_number_says_so(written):
    with pytest.raises(InvalidInput, match="^callee is not a"):
        normalise(written, field="callee")


@pytest.mark.parametrize("value", ["", "   ", None, 14155550123, ["+14155550123"]])
def test_blank_or_not_text_is_refused_naming_the_field(value):
    with pytest.raises(InvalidInput, match="^number must be a phone number in E.164 form"):
        normalise(value, field="number")


def test_the_input_is_bounded_at_64_characters():
    padded = "+1 415 555 0123".ljust(MAX_INPUT)  # spaces read away
    assert len(padded) == MAX_INPUT
    assert normalise(padded, field="number") == "+14155550123"
    with pytest.raises(InvalidInput, match="E.164 form"):
        normalise(padded + " ", field="number")


def test_a_numbers_time_zone_comes_from_its_region_or_area_code():
    assert time_zone_of("+442071838750") == "Europe/London"
    assert time_zone_of("+14155550123") == "America/Los_Angeles"
    assert time_zone_of("+12125550123") == "America/New_York"
