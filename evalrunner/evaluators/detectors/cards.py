"""Payment card numbers in text (``card``): 13–19 digits, whole groups separated by single
spaces or dashes (any grouping, so "41 11 11 ..." too), passing the Luhn check, with a known
issuer prefix and a length that issuer uses (Visa 13/16/19, Mastercard 51–55 and 2221–2720
at 16, Amex 34/37 at 15, Discover, JCB, Diners, UnionPay, Mir, Maestro). Within a longer
run of groups, the group-aligned window that validates is found ("ref 12 4111 1111 1111
1111")."""

from __future__ import annotations

import re
from collections.abc import Iterable

from evalrunner.evaluators.detectors.findings import Candidate

__all__ = ["card_candidates"]

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


def card_candidates(text: str) -> Iterable[Candidate]:
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
