"""Personal data (PII) in text: :func:`find_pii`.

What each kind accepts (everything else is rejected):

- ``card``: see :mod:`evalrunner.evaluators.detectors.cards`.
- ``ssn``: AAA-GG-SSSS or AAA GG SSSS (the same separator twice), or nine bare digits right
  after "SSN" / "social security"; never area 000, 666 or 9xx, group 00 or serial 0000.
- ``email``: local@domain.tld, inside any surrounding punctuation.
- ``phone``: +CC numbers (E.164 compact or grouped, 8–15 digits, "(0)" trunk allowed),
  North American numbers with separators ((415) 555-2671, 415.555.2671, 1-800-555-0199),
  and national numbers with a trunk 0 and separators (020 7946 0958), 9–12 digits.
- ``iban``: a known country code, the country's exact length, mod-97 check digits; grouped
  by spaces or not.
- ``ipv4``: four parts 0–255 without leading zeros; ``ipv6``: anything ``ipaddress``
  accepts with at least two groups and five hex digits.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from evalrunner.evaluators.detectors.cards import card_candidates
from evalrunner.evaluators.detectors.findings import (
    Candidate,
    Finding,
    mask_keep_last,
    resolve_overlaps,
)

__all__ = ["PII_KINDS", "find_pii"]


#: PII kinds in priority order (the first wins on overlapping text).
PII_KINDS: tuple[str, ...] = ("iban", "card", "ssn", "ipv6", "ipv4", "phone", "email")


# --------------------------------------------------------------------------------------------
# US social security numbers

_SSN = re.compile(r"[0-9](?<![\w-].)[0-9]{2}([ -])[0-9]{2}\1[0-9]{4}(?![\w-]|[.,][0-9])")
_SSN_BARE = re.compile(r"[0-9](?<![\w-].)[0-9]{8}(?![\w-]|[.,][0-9])")
# "SSN", "SS#", "social security (number)" shortly before, with no other number in between.
_SSN_CONTEXT = re.compile(r"(?i)(?:\bssn|\bss#|\bsocial[ -]security)[^0-9\n]{0,20}\Z")


def _valid_ssn(area: str, group: str, serial: str) -> bool:
    return area != "000" and area != "666" and area[0] != "9" and group != "00" and serial != "0000"


def _ssns(text: str) -> Iterable[Candidate]:
    for m in _SSN.finditer(text):
        v = m.group()
        if _valid_ssn(v[:3], v[4:6], v[7:]):
            yield m.start(), m.end(), "ssn", f"***-**-{v[7:]}"
    # Nine bare digits are an SSN only when the text says so just before.
    for m in _SSN_BARE.finditer(text):
        d = m.group()
        if _valid_ssn(d[:3], d[3:5], d[5:]) and _SSN_CONTEXT.search(
            text, max(0, m.start() - 40), m.start()
        ):
            yield m.start(), m.end(), "ssn", f"*****{d[5:]}"


# --------------------------------------------------------------------------------------------
# emails

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9_%+-][A-Za-z0-9._%+-]{0,63}+"
    # Labels backtrack (the last one may be the TLD); each is delimited by its dot, so a
    # start costs at most one pass back over its labels, and starts never overlap.
    r"@((?:[A-Za-z0-9][A-Za-z0-9-]{0,62}+\.)+)([A-Za-z]{2,24}+)(?![A-Za-z0-9-])"
)
_NOT_TLDS = frozenset(
    "png jpg jpeg gif svg webp bmp ico tif tiff css js ts json html htm md txt pdf".split()
)


def _emails(text: str) -> Iterable[Candidate]:
    for m in _EMAIL.finditer(text):
        start, end = m.start(), m.end()
        if m.group(2).lower() in _NOT_TLDS:
            continue  # image@2x.png and friends
        local = text[start : text.index("@", start)]
        if local == "git" and text[end : end + 1] == ":":
            continue  # git@github.com:org/repo.git
        # The token this address starts in (bounded look back, so many findings stay linear).
        lo = max(0, start - 256)
        token_start = max(text.rfind(" ", lo, start), text.rfind("\n", lo, start), lo - 1) + 1
        if "://" in text[token_start:start]:
            continue  # the password@host of a URL: a connection string, not an email
        yield start, end, "email", f"{local[0]}***@{m.group(1)}{m.group(2)}"


# --------------------------------------------------------------------------------------------
# phone numbers

# The first character is consumed by a plain class (so sre scans for it in C), then the
# branch for that character follows (the lookbehinds say which one it was).
_PHONE = re.compile(
    r"[+(0-9](?<![\w.+-].)(?:"
    # international: +CC then groups (E.164 compact or separated, optional trunk "(0)")
    r"(?<=\+)[1-9][0-9]{0,3}+(?:\ ?\(0\))?+(?:[ .-]?\(?[0-9]{1,5}+\)?){1,6}+"
    # North American: (415) 555-2671, 415-555-2671, 415.555.2671, 1-800-555-0199
    r"|(?<=\()[2-9][0-9]{2}\)\ ?[2-9][0-9]{2}[ .-][0-9]{4}"
    r"|(?<=1)[ .-](?:\([2-9][0-9]{2}\)\ ?|[2-9][0-9]{2}[ .-])[2-9][0-9]{2}[ .-][0-9]{4}"
    r"|(?<=[2-9])[0-9]{2}[ .-][2-9][0-9]{2}[ .-][0-9]{4}"
    # national with a trunk 0: 020 7946 0958, (020) 7946 0958, 01 23 45 67 89
    r"|(?<=\()0[0-9]{1,4}+\)(?:[ .-][0-9]{2,8}+){1,4}+"
    r"|(?<=0)[0-9]{1,4}+(?:[ .-][0-9]{2,8}+){1,4}+"
    r")(?![\w-]|[.:,/][0-9])"
)
_SSN_SHAPE = re.compile(r"[0-9]{3}([ -])[0-9]{2}\1[0-9]{4}")
_DATE_LIKE = re.compile(r"[0-9]{1,2}[ .-][0-9]{1,2}[ .-](?:19|20)[0-9]{2}\b")


def _phones(text: str) -> Iterable[Candidate]:
    for m in _PHONE.finditer(text):
        value = m.group()
        digits = sum(ch.isdigit() for ch in value)
        if value[0] == "+":
            if not 8 <= digits <= 15:
                continue
        elif value[0] == "0" or value.startswith("(0"):
            if not 9 <= digits <= 12 or _DATE_LIKE.match(value):
                continue
        if value.count("(") != value.count(")") or _SSN_SHAPE.fullmatch(value):
            continue
        yield m.start(), m.end(), "phone", mask_keep_last(value, 2)


# --------------------------------------------------------------------------------------------
# IBANs

# Only the start is matched here; the body is read by hand to the country's exact length.
_IBAN = re.compile(r"[A-Z](?<![A-Za-z0-9].)[A-Z][0-9][0-9](?=\ ?[A-Za-z0-9])")
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32,
    "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
    "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
    "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28, "TL": 23,
    "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}  # fmt: skip


def _iban_ok(iban: str) -> bool:
    rearranged = iban[4:] + iban[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(number) % 97 == 1


def _ibans(text: str) -> Iterable[Candidate]:
    for m in _IBAN.finditer(text):
        length = _IBAN_LENGTHS.get(m.group()[:2])
        if length is None:
            continue
        # Read exactly the country's length (groups of any size, single spaces between),
        # and require the IBAN to end where a token ends.
        need, pos = length - 4, m.end()
        body: list[str] = []
        while pos < len(text) and len(body) < need:
            ch = text[pos]
            if ch == " ":
                if pos + 1 < len(text) and text[pos + 1].isascii() and text[pos + 1].isalnum():
                    pos += 1
                    continue
                break
            if not ch.isascii() or not ch.isalnum():
                break
            body.append(ch)
            pos += 1
        if len(body) < need or (pos < len(text) and text[pos].isalnum()):
            continue
        iban = (m.group() + "".join(body)).upper()
        if _iban_ok(iban):
            masked = iban[:2] + "*" * (len(iban) - 6) + iban[-4:]
            yield (
                m.start(),
                pos,
                "iban",
                " ".join(masked[i : i + 4] for i in range(0, len(iban), 4)),
            )


# --------------------------------------------------------------------------------------------
# IP addresses

# A dot that ends a sentence may follow the address; a fifth numeric part may not.
_IPV4 = re.compile(
    r"[0-9](?<![\w.].)[0-9]{0,2}+\.[0-9]{1,3}+\.[0-9]{1,3}+\.[0-9]{1,3}+(?!\w|\.[0-9])"
)
_VERSION_BEFORE = re.compile(r"(?i)(?:\bv|\bver\.?|version|release|build|firmware)\s*\Z")


def _ipv4s(text: str) -> Iterable[Candidate]:
    for m in _IPV4.finditer(text):
        octets = m.group().split(".")
        if any((len(o) > 1 and o[0] == "0") or int(o) > 255 for o in octets):
            continue  # octet > 255 or a leading zero: not an address
        if octets[0] in ("0", "127", "255"):
            continue  # unspecified, loopback, netmask / broadcast
        if _VERSION_BEFORE.search(text, max(0, m.start() - 16), m.start()):
            continue
        yield m.start(), m.end(), "ipv4", f"{octets[0]}.{octets[1]}.*.*"


_IPV6 = re.compile(
    r"(?<![\w:.])(?=[0-9A-Fa-f]{0,4}+:[0-9A-Fa-f]{0,4}+:)[0-9A-Fa-f:]{2,39}+"
    r"(?:\.[0-9]{1,3}+){0,3}+(?![\w:]|\.[0-9])"
)


def _ipv6s(text: str) -> Iterable[Candidate]:
    for m in _IPV6.finditer(text):
        value = m.group()
        try:
            ipaddress.IPv6Address(value)
        except ValueError:
            continue
        groups = [g for g in value.split(":") if g]
        if len(groups) < 2 or sum(len(g) for g in groups) < 5:
            continue  # ::1, 12::34 and friends are not worth a finding
        yield m.start(), m.end(), "ipv6", f"{groups[0]}:****"


# --------------------------------------------------------------------------------------------
# scanning

# One pass decides which digit-based PII detectors can match at all. Cards, SSNs, phone
# numbers and IBANs (whose account part is numeric) all hold eight digits with at most three
# separator characters between two of them ("long"); an IPv4 address holds d.d.d ("dotted").
_NUMERIC_GATE = re.compile(
    r"[0-9](?:(?P<long>(?:[ ().+/-]{0,3}+[0-9]){7})|[0-9]{0,2}+\.[0-9]{1,3}+\.[0-9])"
)

_PII_RANK = {kind: i for i, kind in enumerate(PII_KINDS)}


def find_pii(text: str) -> list[Finding]:
    """Personal data in ``text``: payment cards, US SSNs, emails, phone numbers, IBANs, IPv4
    and IPv6 addresses, in order of position."""
    candidates: list[Candidate] = []
    long_number = dotted = False
    for m in _NUMERIC_GATE.finditer(text):
        if m.group("long") is not None:
            long_number = True
            break
        dotted = True
    if long_number:
        for detector in (_ibans, card_candidates, _ssns, _phones, _ipv4s):
            candidates.extend(detector(text))
    elif dotted:
        candidates.extend(_ipv4s(text))
    if "::" in text or text.count(":") >= 7:
        candidates.extend(_ipv6s(text))
    if "@" in text:
        candidates.extend(_emails(text))
    return resolve_overlaps(candidates, _PII_RANK)
