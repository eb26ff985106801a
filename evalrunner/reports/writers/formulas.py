"""The one rule that keeps untrusted text from becoming a spreadsheet formula (CSV injection).

Answers come from a model, questions and reasons from many hands; details.csv, result.csv and
details.xlsx are opened in Excel, LibreOffice and Google Sheets, which run a cell that starts
like a formula (``=cmd|' /C calc'!A0``, ``=HYPERLINK(...)``). OWASP's advice is to prefix such
a cell with an apostrophe, which every spreadsheet shows as text. Both report writers call
:func:`neutralise`, so the CSV and the workbook can never disagree on what is defused.

A cell is defused when, after any leading whitespace or invisible format characters (a
spreadsheet trims spaces and line breaks before it decides, and a bare CR or LF at the front
was what split a record), it starts with ``=`` ``+`` ``-`` ``@`` or their full-width and
small forms (``＝＋－＠``, ``﹦﹢﹣﹫``, which an East Asian input method turns into formulas),
or when it starts with a tab or a carriage return at all (OWASP's list). A plain decimal
number such as ``-0.5`` is left alone: it is what our own score columns hold, it cannot
be a formula, and a spreadsheet must keep reading it as a number.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Final

#: Characters that start a formula (or a DDE call) in some spreadsheet, after NFKC folding.
FORMULA_STARTS: Final[frozenset[str]] = frozenset("=+-@")

#: Characters that make a cell unsafe wherever they stand first (OWASP).
_ALWAYS_UNSAFE_STARTS: Final[tuple[str, ...]] = ("\t", "\r")

#: A plain decimal number, ASCII digits only (``re.ASCII``: no full-width digits).
_PLAIN_NUMBER: Final[re.Pattern[str]] = re.compile(
    r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII
)


def _first_visible(text: str) -> str:
    """The first character that is neither whitespace nor an invisible format character
    (zero-width space, BOM, direction marks), folded with NFKC so ``＝`` reads as ``=``;
    empty when there is none."""
    for char in text:
        if char.isspace() or unicodedata.category(char) == "Cf":
            continue
        return unicodedata.normalize("NFKC", char)[:1]
    return ""


#: First characters that settle the question at once: printable ASCII that is no formula
#: start (NFKC leaves ASCII as it is, and none of it is whitespace or a format character).
_SAFE_FIRST: Final[frozenset[str]] = frozenset(
    chr(c) for c in range(0x21, 0x7F) if chr(c) not in FORMULA_STARTS
)


def is_formula_like(text: str) -> bool:
    """Whether a spreadsheet could read ``text`` as a formula (see the module docstring)."""
    if not text or text[0] in _SAFE_FIRST:
        # Most cells (ids, words, formatted scores): one set lookup, for every report cell.
        return False
    if _PLAIN_NUMBER.fullmatch(text):
        return False
    return text.startswith(_ALWAYS_UNSAFE_STARTS) or _first_visible(text) in FORMULA_STARTS


def neutralise(text: str) -> str:
    """``text`` with an apostrophe in front when a spreadsheet could run it as a formula,
    otherwise unchanged. Only text is ever passed here: typed numbers in the workbook stay
    numbers, and the CSV's formatted numbers are plain decimals the rule leaves alone."""
    return "'" + text if is_formula_like(text) else text


def neutralise_all(cells: Iterable[str]) -> list[str]:
    """:func:`neutralise` of each cell of a table row. The cells that settle at once (the
    first test of :func:`is_formula_like`) are passed over here without a call for each:
    the CSV files send every cell of the run through the rule (~74,000 at 2,000 cases)."""
    return [
        cell if cell and cell[0] in _SAFE_FIRST else ("'" + cell if is_formula_like(cell) else cell)
        for cell in cells
    ]
