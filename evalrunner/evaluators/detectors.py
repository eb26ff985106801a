"""Regex detectors for personal data (PII) and secrets, shared by the leakage evaluators.

``find_pii(text)`` and ``find_secrets(text)`` return :class:`Finding` objects: a kind, a
redacted form safe to put in a reason, and the character span. The full value is never kept
in a finding (read it back from ``text[start:end]`` if you must compare it).

What each kind accepts (everything else is rejected):

- ``card``: 13–19 digits, whole groups separated by single spaces or dashes (any grouping,
  so "41 11 11 ..." too), passing the Luhn check, with a known issuer prefix and a length
  that issuer uses (Visa 13/16/19, Mastercard 51–55 and 2221–2720 at 16, Amex 34/37 at 15,
  Discover, JCB, Diners, UnionPay, Mir, Maestro). Within a longer run of groups, the
  group-aligned window that validates is found ("ref 12 4111 1111 1111 1111").
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
- ``private_key`` / ``certificate``: a PEM block with matching BEGIN and END labels (a
  private key cut off before its END still counts); public keys and CSRs do not.
- ``aws_access_key``: AKIA/ASIA + 16 upper-case alphanumerics; ``aws_secret_key``: 40
  base64 characters of mixed case with a digit or "/+", starting within 100 characters
  after "aws" or "secret".
- ``openai_key`` (sk-, sk-proj-), ``anthropic_key`` (sk-ant-), ``github_token`` (ghp_,
  gho_, ghu_, ghs_, ghr_, github_pat_), ``slack_token`` (xoxa-, xoxb-, xoxp-, xoxr-),
  ``google_api_key`` (AIza + 35).
- ``jwt``: three base64url parts whose header decodes to a JSON object with "alg" (and a
  signature of 16+ characters unless alg is "none").
- ``password``: "password: x", "pwd=x", "passwd", "passphrase", "passcode", JSON
  ``"password": "x"``, "the password is x" (then x must have a digit or symbol, or be
  quoted); ``connection_string``: scheme://user:password@host.
- ``product_key``: five groups of five upper-case letters and digits with both in it.

Design rules, because these run on every case of every run:

- Every pattern is linear time. Quantifiers are bounded or possessive (``++``, ``{1,5}+``),
  and a pattern that could start anywhere in a long run is only started at the run's first
  character (a lookbehind), so a 100k-character adversarial string scans in milliseconds.
  Patterns start with a plain character class or literal where they can, so that sre scans
  for that first character in C, with the boundary lookbehind after it (``(?<![a-z-].)``).
- Work is gated: one numeric pass decides whether the digit-based PII detectors can match
  at all, and each secret detector first checks for its literal anchor (``"AKIA"``,
  ``"-----BEGIN "``, ``"sk-"``, ...) with ``in``, so ordinary prose costs a few scans.
- Candidates are validated in Python (see above) to keep false positives down. Where two
  kinds claim overlapping text, the one listed first in :data:`PII_KINDS` /
  :data:`SECRET_KINDS` wins.

Deliberately *not* reported (false-positive guards, each pinned by a test): prices, dates,
plain years, version strings (``1.2.3``, and ``v1.2.3.4`` / ``version 1.2.3.4``), order ids
and other bare digit runs (a 10-digit number without separators is not a phone number),
UUIDs, git SHAs and hashes, ``0.0.0.0`` / ``127.x`` / ``255.x`` addresses, the IPv6
loopback ``::1``, ``file@2x.png``, ``git@host:repo``, and placeholder passwords
(``***``, ``<password>``, ``${DB_PASSWORD}``, ``user:password@host``).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import ipaddress
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "PII_KINDS",
    "SECRET_KINDS",
    "Finding",
    "find_pii",
    "find_secrets",
]


@dataclass(frozen=True, slots=True)
class Finding:
    """One detected value: ``kind`` (see PII_KINDS / SECRET_KINDS), a masked form for
    reasons, and its ``[start, end)`` span in the scanned text."""

    kind: str
    text_redacted: str
    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.kind} {self.text_redacted}"


#: PII kinds in priority order (the first wins on overlapping text).
PII_KINDS: tuple[str, ...] = ("iban", "card", "ssn", "ipv6", "ipv4", "phone", "email")

#: Secret kinds in priority order (the first wins on overlapping text).
SECRET_KINDS: tuple[str, ...] = (
    "private_key",
    "certificate",
    "jwt",
    "connection_string",
    "aws_access_key",
    "aws_secret_key",
    "github_token",
    "slack_token",
    "google_api_key",
    "anthropic_key",
    "openai_key",
    "product_key",
    "password",
)

_Candidate = tuple[int, int, str, str]  # start, end, kind, redacted


# --------------------------------------------------------------------------------------------
# masking helpers


def _mask_keep_last(value: str, keep: int) -> str:
    """Mask every alphanumeric character but the last ``keep``; separators stay."""
    total = sum(ch.isalnum() for ch in value)
    out, seen = [], 0
    for ch in value:
        if ch.isalnum():
            seen += 1
            out.append(ch if seen > total - keep else "*")
        else:
            out.append(ch)
    return "".join(out)


def _mask_token(value: str, prefix_len: int) -> str:
    """A token as its known prefix, then only its length: ``ghp_…(40 chars)``."""
    return f"{value[:prefix_len]}…({len(value)} chars)"


# --------------------------------------------------------------------------------------------
# PII: payment cards

# A run of digit groups separated by single spaces or dashes; each group is taken whole.
_NUMBER_RUN = re.compile(r"[0-9][0-9]*+(?:[ -][0-9]++)*+")


def _card_brand(d: str) -> str | None:
    """The issuer of a card number from its IIN prefix and length, or None (implausible)."""
    n = len(d)
    p2, p3, p4, p6 = int(d[:2]), int(d[:3]), int(d[:4]), int(d[:6])
    if d[0] == "4":
        return "visa" if n in (13, 16, 19) else None
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return "mastercard" if n == 16 else None
    if p2 in (34, 37):
        return "amex" if n == 15 else None
    if p4 == 6011 or 644 <= p3 <= 649 or p2 == 65 or 622126 <= p6 <= 622925:
        return "discover" if 16 <= n <= 19 else None
    if 3528 <= p4 <= 3589:
        return "jcb" if 16 <= n <= 19 else None
    if 300 <= p3 <= 305 or p4 == 3095 or p2 in (36, 38, 39):
        return "diners" if 14 <= n <= 19 else None
    if 2200 <= p4 <= 2204:
        return "mir" if 16 <= n <= 19 else None
    if p2 == 62 or p2 == 81:
        return "unionpay" if 16 <= n <= 19 else None
    if p2 in (50, 56, 57, 58, 63, 67) or p4 in (6304, 6759, 6761, 6762, 6763):
        return "maestro" if 13 <= n <= 19 else None
    return None


def _mask_card(digits: str) -> str:
    stars = "*" * (len(digits) - 8)
    middle = " ".join(stars[i : i + 4] for i in range(0, len(stars), 4))
    return f"{digits[:4]} {middle} {digits[-4:]}"


def _cards(text: str) -> Iterable[_Candidate]:
    for m in _NUMBER_RUN.finditer(text):
        run = m.group()
        if len(run) < 13:
            continue
        start = m.start()
        groups = [(g.start(), g.end()) for g in _DIGIT_GROUP.finditer(run)]
        # A group glued to a word, a decimal point or a "+" belongs to something else
        # (an identifier, a float, an international phone number): leave it out.
        if start and (text[start - 1].isalnum() or text[start - 1] in "+_.,"):
            groups = groups[1:]
        end = m.end()
        if end < len(text) and (text[end].isalnum() or text[end] == "_"):
            groups = groups[:-1]
        for gs, ge in _card_in_groups(run, groups):
            digits = run[gs:ge].replace(" ", "").replace("-", "")
            yield start + gs, start + ge, "card", _mask_card(digits)


_DIGIT_GROUP = re.compile(r"[0-9]++")


_LUHN_DOUBLE = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)


def _card_in_groups(run: str, groups: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Group-aligned windows of the run that are valid card numbers, leftmost-longest first
    (so "ref 12 4111 1111 1111 1111" and "4111 1111 1111 1111 12/25" still find the card).

    The Luhn sum of any window comes from prefix sums in O(1), so a 100k-character run of
    single digits costs a few hundred thousand additions, not Luhn passes."""
    if not groups:
        return []
    digits = "".join(run[a:b] for a, b in groups)
    bounds = [0]
    for a, b in groups:
        bounds.append(bounds[-1] + b - a)
    # plain[p][k]: sum of the digits before k at an index of parity p; doubled[p][k]: the
    # same with each digit Luhn-doubled. A window [a, b) doubles the digits whose index has
    # the parity opposite to b - 1.
    plain: tuple[list[int], list[int]] = ([0], [0])
    doubled: tuple[list[int], list[int]] = ([0], [0])
    for i, ch in enumerate(digits):
        d, p = ord(ch) - 48, i & 1
        plain[p].append(plain[p][-1] + d)
        plain[1 - p].append(plain[1 - p][-1])
        doubled[p].append(doubled[p][-1] + _LUHN_DOUBLE[d])
        doubled[1 - p].append(doubled[1 - p][-1])
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(groups):
        a, best = bounds[i], None
        if digits[a] in "234568":  # the first digit of every issuer we accept
            for j in range(i, len(groups)):
                b = bounds[j + 1]
                if b - a > 19:
                    break
                if b - a < 13:
                    continue
                q = (b - 1) & 1
                total = plain[q][b] - plain[q][a] + doubled[1 - q][b] - doubled[1 - q][a]
                if total % 10 == 0 and _card_brand(digits[a:b]) is not None:
                    best = j
        if best is None:
            i += 1
        else:
            out.append((groups[i][0], groups[best][1]))
            i = best + 1
    return out


# --------------------------------------------------------------------------------------------
# PII: US social security numbers

_SSN = re.compile(r"[0-9](?<![\w-].)[0-9]{2}([ -])[0-9]{2}\1[0-9]{4}(?![\w-]|[.,][0-9])")
_SSN_BARE = re.compile(r"[0-9](?<![\w-].)[0-9]{8}(?![\w-]|[.,][0-9])")
# "SSN", "SS#", "social security (number)" shortly before, with no other number in between.
_SSN_CONTEXT = re.compile(r"(?i)(?:\bssn|\bss#|\bsocial[ -]security)[^0-9\n]{0,20}\Z")


def _valid_ssn(area: str, group: str, serial: str) -> bool:
    return area != "000" and area != "666" and area[0] != "9" and group != "00" and serial != "0000"


def _ssns(text: str) -> Iterable[_Candidate]:
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
# PII: emails

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9_%+-][A-Za-z0-9._%+-]{0,63}+"
    # Labels backtrack (the last one may be the TLD); each is delimited by its dot, so a
    # start costs at most one pass back over its labels, and starts never overlap.
    r"@((?:[A-Za-z0-9][A-Za-z0-9-]{0,62}+\.)+)([A-Za-z]{2,24}+)(?![A-Za-z0-9-])"
)
_NOT_TLDS = frozenset(
    "png jpg jpeg gif svg webp bmp ico tif tiff css js ts json html htm md txt pdf".split()
)


def _emails(text: str) -> Iterable[_Candidate]:
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
# PII: phone numbers

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


def _phones(text: str) -> Iterable[_Candidate]:
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
        yield m.start(), m.end(), "phone", _mask_keep_last(value, 2)


# --------------------------------------------------------------------------------------------
# PII: IBANs

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


def _ibans(text: str) -> Iterable[_Candidate]:
    for m in _IBAN.finditer(text):
        length = _IBAN_LENGTHS.get(m.group()[:2])
        if length is None:
            continue
        # Read exactly the country's length (groups of any size, single spaces between),
        # and require the IBAN to end where a token ends.
        need, pos, body = length - 4, m.end(), []
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
# PII: IP addresses

# A dot that ends a sentence may follow the address; a fifth numeric part may not.
_IPV4 = re.compile(
    r"[0-9](?<![\w.].)[0-9]{0,2}+\.[0-9]{1,3}+\.[0-9]{1,3}+\.[0-9]{1,3}+(?!\w|\.[0-9])"
)
_VERSION_BEFORE = re.compile(r"(?i)(?:\bv|\bver\.?|version|release|build|firmware)\s*\Z")


def _ipv4s(text: str) -> Iterable[_Candidate]:
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


def _ipv6s(text: str) -> Iterable[_Candidate]:
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
# secrets: PEM blocks

_PEM_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9]++(?: [A-Z0-9]++)*+)-----")
# Base64 body and RFC 1421 headers ("Proc-Type: 4,ENCRYPTED"); a run of five dashes ends it.
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=\s:,.]++|-(?!----))*+")
_B64_CHAR = re.compile(r"[A-Za-z0-9+/]")


def _pems(text: str) -> Iterable[_Candidate]:
    for m in _PEM_BEGIN.finditer(text):
        label = m.group(1)
        if "PRIVATE KEY" in label:
            kind = "private_key"
        elif label.endswith("CERTIFICATE"):
            kind = "certificate"
        else:
            continue  # public keys, certificate requests: not secrets
        body = _PEM_BODY.match(text, m.end())
        assert body is not None  # the pattern matches the empty string
        footer = f"-----END {label}-----"
        size = len(_B64_CHAR.findall(body.group()))
        if text.startswith(footer, body.end()):
            end = body.end() + len(footer)
        elif kind == "private_key" and size >= 32:
            end = body.end()  # truncated key: still a leak
        else:
            continue
        yield m.start(), end, kind, f"-----BEGIN {label}----- …({size} base64 chars)"


# --------------------------------------------------------------------------------------------
# secrets: prefixed tokens


def _bounded(text: str, start: int, end: int, word: str) -> bool:
    """Neither the character before ``start`` nor the one at ``end`` is in ``word``."""
    return (start == 0 or text[start - 1] not in word) and (
        end >= len(text) or text[end] not in word
    )


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_TOKEN_CHARS = _ALNUM + "_-"
_AWS_KEY_ID = re.compile(r"A(?:KIA|SIA)[A-Z0-9]{16}")


def _aws_key_ids(text: str) -> Iterable[_Candidate]:
    for m in _AWS_KEY_ID.finditer(text):
        if _bounded(text, m.start(), m.end(), _ALNUM):
            v = m.group()
            yield m.start(), m.end(), "aws_access_key", f"{v[:4]}************{v[-4:]}"


_AWS_SECRET = re.compile(r"[A-Za-z0-9/+](?<![A-Za-z0-9/+=].)[A-Za-z0-9/+]{39}")
_AWS_CONTEXT = re.compile(r"aws|secret", re.IGNORECASE)
_B64_KEY_CHARS = frozenset(_ALNUM + "/+=")


def _aws_secret_keys(text: str) -> Iterable[_Candidate]:
    """40 base64 characters starting within 100 characters after "aws" or "secret"."""
    # Windows after each keyword, merged where they overlap so each is scanned once.
    # Positions come from ``text`` itself: lower() may change the length of some strings.
    windows: list[tuple[int, int]] = []
    for k in _AWS_CONTEXT.finditer(text):
        start, end = k.end(), min(len(text), k.end() + 140)
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
    for start, end in windows:
        for m in _AWS_SECRET.finditer(text, start, end):
            if m.end() < len(text) and text[m.end()] in _B64_KEY_CHARS:
                continue  # longer than 40 characters
            v = m.group()
            if (
                any(c.isupper() for c in v)
                and any(c.islower() for c in v)
                and any(c.isdigit() or c in "/+" for c in v)
            ):  # else a word or a lowercase hex digest, not a random key
                yield m.start(), m.end(), "aws_secret_key", _mask_token(v, 0)


_SK = re.compile(r"sk-[A-Za-z0-9_-]{20,}+")


def _sk_keys(text: str) -> Iterable[_Candidate]:
    for m in _SK.finditer(text):
        v = m.group()
        if not _bounded(text, m.start(), m.end(), _TOKEN_CHARS):
            continue
        body = v[3:]
        if not (any(c.isdigit() for c in body) and any(c.isalpha() for c in body)):
            continue
        if v.startswith("sk-ant-"):
            yield m.start(), m.end(), "anthropic_key", _mask_token(v, 7)
        else:
            prefix = 8 if v.startswith("sk-proj-") else 3
            yield m.start(), m.end(), "openai_key", _mask_token(v, prefix)


_GITHUB = re.compile(r"gh[pousr]_[A-Za-z0-9]{36,}+|github_pat_[A-Za-z0-9_]{22,}+")


def _github_tokens(text: str) -> Iterable[_Candidate]:
    for m in _GITHUB.finditer(text):
        if _bounded(text, m.start(), m.end(), _ALNUM + "_"):
            v = m.group()
            prefix = 11 if v.startswith("github_pat_") else 4
            yield m.start(), m.end(), "github_token", _mask_token(v, prefix)


_SLACK = re.compile(r"xox[abpr]-[A-Za-z0-9-]{10,}+")


def _slack_tokens(text: str) -> Iterable[_Candidate]:
    for m in _SLACK.finditer(text):
        v = m.group()
        if _bounded(text, m.start(), m.end(), _ALNUM + "-") and any(c.isdigit() for c in v):
            yield m.start(), m.end(), "slack_token", _mask_token(v, 5)


_GOOGLE = re.compile(r"AIza[0-9A-Za-z_-]{35}")


def _google_keys(text: str) -> Iterable[_Candidate]:
    for m in _GOOGLE.finditer(text):
        if _bounded(text, m.start(), m.end(), _TOKEN_CHARS):
            yield m.start(), m.end(), "google_api_key", _mask_token(m.group(), 4)


# --------------------------------------------------------------------------------------------
# secrets: JWTs

# A JSON header starts with '{"' or '{ "': "eyJ" or "eyA" in base64url.
_JWT = re.compile(r"ey[JA][A-Za-z0-9_-]{6,}+\.[A-Za-z0-9_-]{2,}+\.[A-Za-z0-9_-]*+")


def _b64url_json(part: str) -> object:
    if len(part) % 4 == 1:
        raise ValueError("not base64url")
    raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    return json.loads(raw)


def _jwts(text: str) -> Iterable[_Candidate]:
    for m in _JWT.finditer(text):
        if not _bounded(text, m.start(), m.end(), _TOKEN_CHARS):
            continue
        header, payload, signature = m.group().split(".")
        try:
            head = _b64url_json(header)
        except (ValueError, binascii.Error, UnicodeDecodeError):
            continue
        if not isinstance(head, dict) or "alg" not in head:
            continue
        if len(payload) % 4 == 1:
            continue
        unsigned = str(head.get("alg")).lower() == "none"
        if not unsigned and len(signature) < 16:
            continue
        alg = str(head.get("alg"))[:10]
        yield m.start(), m.end(), "jwt", f"JWT alg={alg} …({len(m.group())} chars)"


# --------------------------------------------------------------------------------------------
# secrets: passwords and connection strings

_PASSWORD = re.compile(
    r"(?<![A-Za-z])(pass(?:word|wd|phrase|code)|pwd)(?![A-Za-z])[\"']?[ \t]*"
    r"(:=|[:=]|is\b)[ \t]*"
    r"(?:([\"'`])([^\"'`\n]{1,128}+)\3|([^\s\"'`,;]{1,128}+))",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(
    r"[*•x.#_-]+|<[^>]*>|\{[^}]*\}|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\[[^\]]*\]|%s|\.\.\.|…"
    r"|(?i:password|passwd|pass|pwd|secret|redacted|hidden|none|null|your[_-]?password)",
    re.IGNORECASE,
)
_NOT_PASSWORDS = frozenset(
    "required incorrect invalid wrong expired reset changed protected must should will was "
    "is are be the a an your my their this that field policy length manager strength "
    "rules requirements empty blank set not".split()
)


def _passwords(text: str) -> Iterable[_Candidate]:
    for m in _PASSWORD.finditer(text):
        keyword, op, quoted = m.group(1), m.group(2).lower(), m.group(4)
        value = quoted if quoted is not None else m.group(5)
        end = m.end()
        if quoted is None:
            stripped = value.rstrip(".!?)]:")
            end -= len(value) - len(stripped)
            value = stripped
        if not value or value[0] in "<{[(" or _PLACEHOLDER.fullmatch(value):
            continue  # <your password>, {{password}}, [redacted], ***, ${DB_PASSWORD}
        if value.lower() in _NOT_PASSWORDS:
            continue
        if keyword.lower() == "pwd" and value[0] in "/~.":
            continue  # $PWD, a path
        letters_only = value.isalpha()
        if quoted is None and letters_only:
            if op == "is":
                continue  # "the password is incorrect"
            if op == ":":
                rest = text[end : end + 2].lstrip(" \t")
                if rest and rest[0] not in "\n,;.)":
                    continue  # "Password: reset it in the portal" is prose
        redacted = f"{keyword}{'=' if op != 'is' else ' is '}{'*' * 8}"
        yield m.start(), end, "password", redacted


_CONN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,20}+://([^\s:/@?#]{1,128}+):([^\s@/?#]{1,128}+)@")


def _connection_strings(text: str) -> Iterable[_Candidate]:
    for m in _CONN.finditer(text):
        if m.start() and text[m.start() - 1].isalnum():
            continue
        password = m.group(2)
        if _PLACEHOLDER.fullmatch(password):
            continue
        host = _HOST.match(text, m.end())
        end = host.end() if host else m.end()
        scheme = text[m.start() : m.start(1)]
        yield (
            m.start(),
            end,
            "connection_string",
            (f"{scheme}{m.group(1)}:****@{host.group() if host else ''}"),
        )


_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}+(?::[0-9]{1,5}+)?")


# --------------------------------------------------------------------------------------------
# secrets: activation / product keys

_PRODUCT_KEY = re.compile(r"[A-Z0-9]{5}(?:-[A-Z0-9]{5}){4}")


def _product_keys(text: str) -> Iterable[_Candidate]:
    for m in _PRODUCT_KEY.finditer(text):
        if not _bounded(text, m.start(), m.end(), _TOKEN_CHARS):
            continue
        v = m.group()
        digits = sum(c.isdigit() for c in v)
        if digits < 2 or digits > 20:
            continue  # XXXXX-XXXXX-... placeholders and pure digit groups
        yield m.start(), m.end(), "product_key", f"*****-*****-*****-*****-**{v[-3:]}"


# --------------------------------------------------------------------------------------------
# scanning

# One pass decides which digit-based PII detectors can match at all. Cards, SSNs, phone
# numbers and IBANs (whose account part is numeric) all hold eight digits with at most three
# separator characters between two of them ("long"); an IPv4 address holds d.d.d ("dotted").
_NUMERIC_GATE = re.compile(
    r"[0-9](?:(?P<long>(?:[ ().+/-]{0,3}+[0-9]){7})|[0-9]{0,2}+\.[0-9]{1,3}+\.[0-9])"
)

_PII_RANK = {kind: i for i, kind in enumerate(PII_KINDS)}
_SECRET_RANK = {kind: i for i, kind in enumerate(SECRET_KINDS)}


def _resolve(candidates: list[_Candidate], rank: dict[str, int]) -> list[Finding]:
    """Findings in order of position; where candidates overlap, the kind ranked first wins,
    then the longest."""
    if not candidates:
        return []
    candidates.sort(key=lambda c: (rank[c[2]], c[0] - c[1], c[0]))
    starts: list[int] = []  # kept spans never overlap, so their starts and ends sort alike
    kept: list[_Candidate] = []
    for c in candidates:
        i = bisect.bisect_right(starts, c[0])
        if i and kept[i - 1][1] > c[0]:
            continue  # overlaps the kept span that starts at or before it
        if i < len(kept) and kept[i][0] < c[1]:
            continue  # overlaps the kept span that starts after it
        starts.insert(i, c[0])
        kept.insert(i, c)
    return [Finding(kind, redacted, start, end) for start, end, kind, redacted in kept]


def find_pii(text: str) -> list[Finding]:
    """Personal data in ``text``: payment cards, US SSNs, emails, phone numbers, IBANs, IPv4
    and IPv6 addresses, in order of position."""
    candidates: list[_Candidate] = []
    long_number = dotted = False
    for m in _NUMERIC_GATE.finditer(text):
        if m.group("long") is not None:
            long_number = True
            break
        dotted = True
    if long_number:
        for detector in (_ibans, _cards, _ssns, _phones, _ipv4s):
            candidates.extend(detector(text))
    elif dotted:
        candidates.extend(_ipv4s(text))
    if "::" in text or text.count(":") >= 7:
        candidates.extend(_ipv6s(text))
    if "@" in text:
        candidates.extend(_emails(text))
    return _resolve(candidates, _PII_RANK)


def find_secrets(text: str) -> list[Finding]:
    """Secrets in ``text``: PEM private keys and certificates, cloud and SaaS API keys and
    tokens, JWTs, passwords and credentials in URLs, product keys, in order of position."""
    # Each detector runs only when its literal anchor is in the text (checked here, inline,
    # because on ordinary prose these ``in`` checks are the whole cost).
    candidates: list[_Candidate] = []
    if "-" in text:
        if "-----BEGIN " in text:
            candidates.extend(_pems(text))
        if "sk-" in text:
            candidates.extend(_sk_keys(text))
        if "xox" in text:
            candidates.extend(_slack_tokens(text))
        if text.count("-") >= 4:
            candidates.extend(_product_keys(text))
    if "ey" in text and ("eyJ" in text or "eyA" in text):
        candidates.extend(_jwts(text))
    if "://" in text:
        candidates.extend(_connection_strings(text))
    if "A" in text:
        if "AKIA" in text or "ASIA" in text:
            candidates.extend(_aws_key_ids(text))
        if "AIza" in text:
            candidates.extend(_google_keys(text))
    if "_" in text and "gh" in text:
        candidates.extend(_github_tokens(text))
    low = text.lower()
    if "aws" in low or "secret" in low:
        candidates.extend(_aws_secret_keys(text))
    if "pass" in low or "pwd" in low:
        candidates.extend(_passwords(text))
    return _resolve(candidates, _SECRET_RANK)
