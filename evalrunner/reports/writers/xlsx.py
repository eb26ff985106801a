"""details.xlsx: the details table and the results for people who open reports in Excel.

The workbook holds the same columns as details.csv and result.csv (built by
:mod:`evalrunner.reports.analysis.stats`, so the files cannot disagree), with what a spreadsheet
adds: typed numbers (sorting and filters work), a frozen header and case column, an autofilter,
wrapped long text, green/red success cells and a colour scale on scores. It is written by
XlsxWriter in its constant-memory mode, row by row (each row goes to a temporary file as it
is finished), so its memory does not grow with the run. Issue 18 had openpyxl's body rows
serialised by hand and spliced into its package through its private API (~0.1 s of CPU at
2,000 cases); issue 30 traded that for a supported writer. XlsxWriter, not openpyxl's
write-only mode: without lxml openpyxl serialises each cell through a pure-Python element
writer and hashes its style, about three times XlsxWriter's CPU for the same cells
(bench/RESULTS.md, issue 30).

Answers come from a model and are untrusted. Every string cell that a spreadsheet would read as
a formula is neutralised by the rule the CSV files use (:func:`formulas.neutralise`: a user who
edits the cell and presses Enter would otherwise bring the formula to life) and stored with
the string type, so openpyxl can never turn it into a formula either. Numbers are written as
numbers and never pass through the rule: a score of -0.5 stays a number, not the text "'-0.5".
Characters that XML cannot carry are dropped, and text over Excel's cell limit is truncated
with a marker rather than producing a file Excel "repairs" on open. (XlsxWriter stores a
carriage return, the one control character kept, as Excel does: ``_x000D_``, which Excel reads
back as the character.)
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable, Sequence
from itertools import chain, islice
from typing import Any

from xlsxwriter import Workbook
from xlsxwriter.format import Format
from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.worksheet import Worksheet

from evalrunner.reports.analysis.stats import (
    LONG_TEXT_COLUMNS,
    RESULT_COLUMNS,
    Cell,
    ColumnKind,
    compute_stats,
    detail_cells,
    detail_header,
    detail_kinds,
    fixed_columns,
    has_conversations,
    has_perturbations,
    ordered_stats,
    result_cells,
    result_kinds,
)
from evalrunner.reports.model import CaseRow, MetricInfo, MetricStats
from evalrunner.reports.writers.formulas import neutralise

#: Excel's limit on the characters of one cell (counted in UTF-16 code units).
EXCEL_CELL_LIMIT = 32_767

#: The characters openpyxl refuses in a cell, as ``openpyxl.cell.cell.ILLEGAL_CHARACTERS_RE``
#: defines them (``[\\000-\\010]|[\\013-\\014]|[\\016-\\037]``: C0 controls but tab, LF and
#: CR), so a workbook reads back in openpyxl and Excel. Written out rather than imported:
#: importing any part of openpyxl runs its ``__init__`` (the whole workbook model and numpy,
#: ~0.3 s of every run's start-up) for one regular expression.
ILLEGAL_CHARACTERS_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
_SURROGATES = re.compile("[\ud800-\udfff]")
#: Whatever :func:`safe_text` removes or replaces (openpyxl's illegal characters, unpaired
#: surrogates): one search settles the many cells that hold none.
_UNCLEAN = re.compile(f"{ILLEGAL_CHARACTERS_RE.pattern}|{_SURROGATES.pattern}")
_NUMBER_FORMATS: dict[ColumnKind, str] = {"latency": "0.0", "number": "0.0000"}

# Excel's own "Good" and "Bad" cell styles, which users already read as pass and fail.
_GOOD = {"bg_color": "#C6EFCE", "font_color": "#006100"}
_BAD = {"bg_color": "#FFC7CE", "font_color": "#9C0006"}
# Excel's red-yellow-green colour scale.
_RED, _YELLOW, _GREEN = "#F8696B", "#FFEB84", "#63BE7B"

_HEADER = {"bold": True, "bg_color": "#DDEBF7", "pattern": 1, "text_wrap": True, "valign": "top"}
_WRAP = {"text_wrap": True, "valign": "top"}
_TOP = {"valign": "top"}

_WIDTH_SAMPLE = 200  # rows looked at to size a column; enough, and cheap on big runs
_MIN_WIDTH, _MAX_WIDTH, _MAX_WRAP_WIDTH = 8, 30, 60


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def truncate(text: str, limit: int = EXCEL_CELL_LIMIT) -> str:
    """``text`` cut to fit Excel's cell limit, ending with a marker that says so and how long
    the text was (details.csv keeps it whole). Excel counts UTF-16 code units, so a character
    outside the Basic Multilingual Plane (an emoji) counts twice."""
    # A character is at most two UTF-16 code units: most cells fit without being encoded.
    if len(text) <= limit // 2 or _utf16_len(text) <= limit:
        return text
    marker = f" … [truncated: {len(text):,} characters; full text in details.csv]"
    keep = limit - _utf16_len(marker)
    # Cutting the UTF-16 bytes may split a surrogate pair; "ignore" drops the half.
    head = text.encode("utf-16-le")[: keep * 2].decode("utf-16-le", errors="ignore")
    return head + marker


def safe_text(text: str) -> str:
    """A string as it can be stored in a cell: no formula start, no characters XML 1.0 cannot
    hold (control characters, unpaired surrogates from a model's JSON), within the cell limit.
    Neutralising comes after cleaning, so stripping a control character cannot bring a
    formula character to the front."""
    if _UNCLEAN.search(text) is not None:
        text = _SURROGATES.sub("\ufffd", ILLEGAL_CHARACTERS_RE.sub("", text))
    return truncate(neutralise(text))


def _fill_sheet(
    workbook: Workbook,
    sheet: Worksheet,
    header: Sequence[str],
    kinds: Sequence[ColumnKind],
    body: Iterable[Sequence[Cell]],
    wrap: Sequence[bool],
) -> None:
    """Header, typed body, frozen header row and first column, autofilter and widths.

    The sheet is in constant-memory mode (a run of any size holds one row of cells): the
    first :data:`_WIDTH_SAMPLE` rows are read ahead to size the columns, then every row is
    written in order."""
    rows = iter(body)
    sample = list(islice(rows, _WIDTH_SAMPLE))
    text_formats = [workbook.add_format(_WRAP if w else _TOP) for w in wrap]
    number_formats = [
        workbook.add_format({**(_WRAP if w else _TOP), "num_format": _NUMBER_FORMATS[k]})
        if k in _NUMBER_FORMATS
        else None
        for w, k in zip(wrap, kinds, strict=True)
    ]
    for c, name in enumerate(header):
        longest = max([len(name), *(_display_len(row[c], kinds[c]) for row in sample)])
        cap = _MAX_WRAP_WIDTH if wrap[c] else _MAX_WIDTH
        # The column carries its cells' format, so an empty cell needs no cell of its own
        # and still shows (and, typed into, takes) the column's alignment and number format.
        sheet.set_column(
            c, c, min(max(longest + 2, _MIN_WIDTH), cap), number_formats[c] or text_formats[c]
        )
    sheet.freeze_panes(1, 1)
    header_format = workbook.add_format(_HEADER)
    for c, name in enumerate(header):
        sheet.write_string(0, c, safe_text(name), header_format)  # never a formula either
    count = 0
    for r, values in enumerate(chain(sample, rows), start=1):
        for c, value in enumerate(values):
            if value is not None:
                _write(sheet, r, c, value, text_formats[c], number_formats[c])
        count = r
    sheet.autofilter(0, 0, max(count, 1), len(header) - 1)


def _write(
    sheet: Worksheet, r: int, c: int, value: Cell, text: Format, number: Format | None
) -> None:
    """One body cell: text made safe (:func:`safe_text`) and stored as a string, never a
    formula; a value of a number column (a boolean too) as a float in the column's number
    format; a boolean elsewhere as a boolean. An empty text, NaN and infinities are left
    out, as None is by the caller: the column's format (:func:`_fill_sheet`) keeps an empty
    cell's alignment, and about a fifth of a lexical run's cells are empty (writing them
    was ~6% of the workbook's CPU: issue 31, the tail at 10,000 cases)."""
    if value is None:
        return
    if isinstance(value, str):
        if value := safe_text(value):
            sheet.write_string(r, c, value, text)
    elif number is not None:
        number_value = float(value)
        if math.isfinite(number_value):
            sheet.write_number(r, c, number_value, number)
    elif isinstance(value, bool):
        sheet.write_boolean(r, c, value, text)
    elif math.isfinite(value):
        sheet.write_number(r, c, value, text)


def _display_len(value: Cell, kind: ColumnKind) -> int:
    if value is None:
        return 0
    if kind in _NUMBER_FORMATS and not isinstance(value, str):
        return len(f"{float(value):.4f}")
    text = str(value)
    # A wrapped cell is as wide as its longest line, not its whole text.
    return max((len(line) for line in text.splitlines()), default=0)


def _range(column: int, rows: int) -> str:
    letter = xl_col_to_name(column - 1)  # XlsxWriter counts columns from 0
    return f"{letter}2:{letter}{max(rows + 1, 2)}"


def _format_metrics(
    workbook: Workbook, sheet: Worksheet, metrics: Sequence[MetricInfo], rows: int, first: int
) -> None:
    """Conditional formats, so they follow the values when a user sorts or edits: success
    true green / false red (blank, i.e. skipped or errored, left alone: in Excel a blank cell
    equals FALSE, hence ISLOGICAL), and a red-to-green scale on scores, reversed for metrics
    where lower is better."""
    good, bad = workbook.add_format(_GOOD), workbook.add_format(_BAD)
    for i, info in enumerate(metrics):
        score_col, success_col = first + 3 * i, first + 3 * i + 1
        top = f"{xl_col_to_name(success_col - 1)}2"
        success = _range(success_col, rows)
        for verdict, look in (("TRUE", good), ("FALSE", bad)):
            rule: dict[str, Any] = {
                "type": "formula",
                "criteria": f"=AND(ISLOGICAL({top}),{top}={verdict})",
                "format": look,
            }
            sheet.conditional_format(success, rule)
        low, high = (_RED, _GREEN) if info.higher_is_better else (_GREEN, _RED)
        scale: dict[str, Any] = {
            "type": "3_color_scale",
            "min_color": low,
            "mid_type": "percentile",
            "mid_value": 50,
            "mid_color": _YELLOW,
            "max_color": high,
        }
        sheet.conditional_format(_range(score_col, rows), scale)


def details_xlsx(
    rows: Sequence[CaseRow],
    metrics: Sequence[MetricInfo],
    *,
    stats: Sequence[MetricStats] | None = None,
) -> bytes:
    """The workbook: a "Details" sheet (details.csv's columns) and a "Results" sheet
    (result.csv's). Pass the run's ``stats`` when they are at hand so the sheet shows exactly
    the numbers of result.csv; without them they are computed from the rows, taking the highest
    iteration seen as the run's iteration count."""
    if stats is None:
        iterations = max((row.iteration for row in rows), default=1)
        stats = compute_stats(rows, metrics, iterations)

    buffer = io.BytesIO()
    # constant_memory: each row is flushed to a temporary file once the next one starts
    workbook = Workbook(buffer, {"constant_memory": True})
    details = workbook.add_worksheet("Details")
    perturbed, conversations = has_perturbations(rows), has_conversations(rows)
    fixed = fixed_columns(perturbed, conversations)
    header = detail_header(metrics, perturbed, conversations)
    # Long text wraps: the free-text columns and every metric's reason.
    wrap = [name in LONG_TEXT_COLUMNS for name in fixed] + [False, False, True] * len(metrics)
    _fill_sheet(
        workbook,
        details,
        header,
        detail_kinds(metrics, perturbed, conversations),
        (detail_cells(r, metrics, perturbed, conversations) for r in rows),
        wrap,
    )
    _format_metrics(workbook, details, metrics, len(rows), len(fixed) + 1)

    results = workbook.add_worksheet("Results")
    _fill_sheet(
        workbook,
        results,
        RESULT_COLUMNS,
        result_kinds(),
        (result_cells(s) for s in ordered_stats(stats)),
        [False] * len(RESULT_COLUMNS),
    )
    workbook.close()
    return buffer.getvalue()
