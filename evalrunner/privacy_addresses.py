"""Street addresses in production text (:mod:`evalrunner.privacy`'s ADDRESS kind).

``pyap2`` (MIT, pure Python, 250 KB, no dependencies; the maintained fork of ``pyap``) finds
whole street addresses of the United States, Canada and the United Kingdom by its rules for
each country: a number, a street name and type, then the city, state or province and postal
code (``350 Fifth Avenue, New York, NY 10118``; ``10 Downing Street, London SW1A 2AA``;
``123 Main St, Toronto, ON M5V 2T6``), on one line or several, and PO boxes. What it does not
find: addresses of other countries (a French one may be caught in part by the US rules), an
address without its city and state or postcode (``5 Main St`` alone), one without any digit
(this module's cheap gate), a place name on its own. It is small enough for the
monitor's zip Lambda, unlike a statistical address parser (libpostal's model is 2 GB); an
NER model's labels can add other forms (``PiiOptions.ner_labels``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

import pyap

#: The countries pyap2 has rules for.
ADDRESS_COUNTRIES = ("US", "GB", "CA")
_COUNTRY: dict[str, Literal["US", "GB", "CA"]] = {"US": "US", "GB": "GB", "CA": "CA"}

#: What each country's rules need besides the street (so pyap2's costly rules run only near
#: one; over a whole text they cost ~20 ms per KB): US and Canada end an address with the
#: state or province (by code or name), the UK with the postcode; a ZIP code, a Canadian
#: postal code and a PO box are anchors too. The text within _REACH characters of an
#: anchor is searched.
_US_STATES = (
    "AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH "
    "NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY PR GU VI AS MP"
).split()
_US_STATE_NAMES = (
    "Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|"
    "Hawaii|Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|"
    "Michigan|Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|New Hampshire|New Jersey|"
    "New Mexico|New York|North Carolina|North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|"
    "Rhode Island|South Carolina|South Dakota|Tennessee|Texas|Utah|Vermont|Virginia|Washington|"
    "West Virginia|Wisconsin|Wyoming|Puerto Rico|District of Columbia"
)
_CA_PROVINCES = "AB BC MB NB NL NS NT NU ON PE QC SK YT".split()
_CA_PROVINCE_NAMES = (
    "Alberta|British Columbia|Manitoba|New Brunswick|Newfoundland|Nova Scotia|Northwest "
    "Territories|Nunavut|Ontario|Prince Edward Island|Quebec|Québec|Saskatchewan|Yukon"
)
_PO_BOX = r"\b(?=[Pp])[Pp]\.? ?[Oo]\.? ?[Bb][Oo][Xx]\b"
#: Two capitals alone are a state or province code when the country's list has them (a
#: pattern of two capitals, then a set, is ten times quicker than an alternation of codes).
_CODE = r"\b(?P<code>[A-Z]{2})\b"
_ANCHORS = {
    "US": re.compile(rf"{_CODE}|\b(?=[A-Z])(?:{_US_STATE_NAMES})\b|(?<!\d)\d{{5}}(?!\d)|{_PO_BOX}"),
    "CA": re.compile(
        rf"{_CODE}|\b(?=[A-Z])(?:{_CA_PROVINCE_NAMES})\b"
        rf"|\b[A-Za-z]\d[A-Za-z] ?\d[A-Za-z]\d\b|{_PO_BOX}"
    ),
    "GB": re.compile(r"\b[A-Za-z]{1,2}\d[A-Za-z\d]? ?\d[A-Za-z]{2}\b|" + _PO_BOX),
}
_CODES = {"US": frozenset(_US_STATES), "CA": frozenset(_CA_PROVINCES), "GB": frozenset()}
#: How far before an anchor an address may start, and after it end (a ZIP after a state).
_REACH = 300

#: What pyap2 rewrites before matching (a run of commas with spaces or tabs around them, a
#: run of spaces): done here first, with where each character came from, so pyap2's own
#: rewrite changes nothing and its match offsets map back onto the caller's text.
_SQUEEZE = re.compile(r"[ \t]*(?:,[ \t]*)+| {2,}")
#: Every address rule starts at a street number or a PO box's: no digit, no address.
_DIGIT = re.compile(r"\d")
_SPACES = re.compile(r"[\s,]+")


def _squeezed(text: str) -> tuple[str, list[tuple[int, int]]]:
    """``text`` as pyap2 would rewrite it, and for each of its characters the span of
    ``text`` it stands for."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    at = 0
    for m in _SQUEEZE.finditer(text):
        parts.append(text[at : m.start()])
        spans.extend((i, i + 1) for i in range(at, m.start()))
        replacement = _squeeze(m)
        parts.append(replacement)
        spans.extend((m.start(), m.end()) for _ in replacement)
        at = m.end()
    parts.append(text[at:])
    spans.extend((i, i + 1) for i in range(at, len(text)))
    return "".join(parts), spans


def find_addresses(text: str, countries: tuple[str, ...]) -> Iterator[tuple[int, int, str]]:
    """``(start, end, value)`` of each street address in ``text`` (``value``: the address in
    lower case with its spacing and commas evened, so two spellings are one address)."""
    if not countries or not _DIGIT.search(text):
        return
    wanted = [c for c in countries if _anchor(text, c)]
    if not wanted:
        return  # the common case: no anchor, and nothing squeezed or parsed
    squeezed, spans = _squeezed(text)
    for country in wanted:
        for low, high in _windows(squeezed, country):
            for start, end, value in _parsed(squeezed[low:high], country):
                yield from _mapped(text, spans, low + start, low + end, value)


def _anchors(text: str, country: str) -> Iterator[re.Match[str]]:
    codes = _CODES[country]
    for m in _ANCHORS[country].finditer(text):
        code = m.groupdict().get("code")
        if code is None or code in codes:
            yield m


def _anchor(text: str, country: str) -> bool:
    return next(_anchors(text, country), None) is not None


def _squeeze(match: re.Match[str]) -> str:
    return ", " if "," in match.group() else " "


def _windows(text: str, country: str) -> Iterator[tuple[int, int]]:
    """The stretches of ``text`` within reach of an anchor of ``country``, merged, each
    starting and ending at a space or an end of the text (so no word is cut)."""
    low = high = -1
    for m in _anchors(text, country):
        start, end = max(m.start() - _REACH, 0), min(m.end() + _REACH, len(text))
        if low >= 0 and start <= high:
            high = max(high, end)
            continue
        if low >= 0:
            yield _widened(text, low, high)
        low, high = start, end
    if low >= 0:
        yield _widened(text, low, high)


def _widened(text: str, low: int, high: int) -> tuple[int, int]:
    while low > 0 and not text[low - 1].isspace():
        low -= 1
    while high < len(text) and not text[high].isspace():
        high += 1
    return low, high


def _parsed(text: str, country: str) -> Iterator[tuple[int, int, str]]:
    for address in pyap.parse(text, country=_COUNTRY[country]):
        value = _SPACES.sub(" ", address.full_address).strip().casefold()
        yield address.match_start, address.match_end, value


def _mapped(
    text: str, spans: list[tuple[int, int]], first: int, last: int, value: str
) -> Iterator[tuple[int, int, str]]:
    """An address pyap2 found at ``first:last`` of the squeezed text, as a span of ``text``
    without the spaces or commas a rule may take each side; none when it is empty or part
    of a longer word (a postcode's rule inside a code: "GB82WE" of "GB82WEST1234...")."""
    if last > first:
        start = spans[first][0]
        end = spans[last - 1][1]
        while start < end and not text[start].isalnum():
            start += 1
        while end > start and not text[end - 1].isalnum():
            end -= 1
        if start < end and not _inside_word(text, start, end):
            yield start, end, value


def _inside_word(text: str, start: int, end: int) -> bool:
    return (start > 0 and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum())
