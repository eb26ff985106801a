"""Street addresses masked as ADDRESS (evalrunner/privacy_addresses.py, pyap2's rules for the
US, Canada and the UK): the whole address, however it is spaced, one placeholder per
address across a case, and the look-alikes of ordinary text left alone."""

from __future__ import annotations

import pytest

from evalrunner.errors import ConfigError
from evalrunner.privacy import PiiKind, PiiMasker, PiiOptions, mask_case, mask_pii, pii_options


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (
            "Ship to 225 E. John Carpenter Freeway, Suite 1500 Irving, Texas 75062 by Friday.",
            "Ship to <ADDRESS_1> by Friday.",
        ),
        ("Our office: 350 Fifth Avenue, New York, NY 10118.", "Our office: <ADDRESS_1>."),
        ("visit 1600 Pennsylvania Avenue NW, Washington, DC 20500", "visit <ADDRESS_1>"),
        ("Send it to 10 Downing Street, London SW1A 2AA please", "Send it to <ADDRESS_1> please"),
        ("Flat 3, 27 Old Gloucester Street, London WC1N 3AX", "<ADDRESS_1>"),
        ("mail PO Box 1234, Springfield, IL 62701 today", "mail <ADDRESS_1> today"),
        ("Toronto office 123 Main St, Toronto, ON M5V 2T6", "Toronto office <ADDRESS_1>"),
        ("Address:\n10 Downing Street\nLondon SW1A 2AA\nThanks", "Address:\n<ADDRESS_1>\nThanks"),
        ("Ship to:\n350 Fifth Avenue\nNew York, NY 10118", "Ship to:\n<ADDRESS_1>"),
    ],
)
def test_street_addresses_are_masked_whole(text: str, masked: str) -> None:
    assert mask_pii(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "Chapter 12, Section 3 of the leave policy",
        "We have 20 days of leave per year and 5 sick days.",
        "the 2024 plan covers 300 employees in 12 states",
        "I paid 1200 dollars on 5 Main St last week",
        "Room 101 Main Building, floor 3",
        "IBAN GB82WEST12345698765432 is the account",  # GB's postcode rule inside a code
    ],
)
def test_look_alikes_of_addresses_are_left_alone(text: str) -> None:
    assert "<ADDRESS" not in mask_pii(text)


def test_an_address_spaced_oddly_is_masked_exactly_and_is_one_value() -> None:
    # pyap2 squeezes runs of spaces and commas before matching; the span masked is still
    # exactly the address in the text as written, and both spellings are one address
    text = "at 350  Fifth Avenue ,  New York,NY 10118; again 350 Fifth Avenue, New York, NY 10118."
    assert mask_pii(text) == "at <ADDRESS_1>; again <ADDRESS_1>."


def test_one_address_one_placeholder_across_a_case() -> None:
    masked = mask_case(
        "I moved to 10 Downing Street, London SW1A 2AA, write jo@ex.com",
        "Updated your address to 10 Downing Street, London SW1A 2AA.",
        ["Old address: 27 Old Gloucester Street, London WC1N 3AX"],
    )
    assert masked.question == "I moved to <ADDRESS_1>, write <EMAIL_1>"
    assert masked.answer == "Updated your address to <ADDRESS_1>."
    assert masked.contexts == ["Old address: <ADDRESS_2>"]
    assert masked.masked == {"ADDRESS": 2, "EMAIL": 1}


def test_countries_are_chosen_and_unknown_ones_refused() -> None:
    us_only = PiiMasker(PiiOptions(address_countries=("US",)))
    text = "10 Downing Street, London SW1A 2AA"
    assert us_only.mask(text) == text
    assert PiiMasker(PiiOptions(address_countries=("gb",))).mask(text) == "<ADDRESS_1>"
    no_addresses = PiiMasker(PiiOptions(kinds=(PiiKind.EMAIL,)))
    assert no_addresses.mask(text) == text
    with pytest.raises(ConfigError, match=r"address_countries.*'DE'.*US, GB, CA"):
        pii_options({"address_countries": ["DE"]})


def test_a_phone_inside_an_address_loses_nothing() -> None:
    # an address around a value of a kind that wins overlaps: both masked, nothing visible
    text = "PO Box 1234, Springfield, IL 62701 +1 415-555-0132"
    masked = mask_pii(text)
    assert "1234" not in masked and "Springfield" not in masked and "555" not in masked
    assert "<ADDRESS_1>" in masked and "<PHONE_1>" in masked
