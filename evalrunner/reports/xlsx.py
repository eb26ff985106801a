"""details.xlsx: the details table and the results for people who open reports in Excel.

The workbook holds the same columns as details.csv and result.csv (built by
:mod:`evalrunner.reports.stats`, so the files cannot disagree), with what a spreadsheet adds:
typed numbers (sorting and filters work), a frozen header and case column, an autofilter,
wrapped long text, green/red success cells and a colour scale on scores. It is written in
openpyxl's write-only mode, row by row, so its memory does not grow with the run; the body
rows are serialised by :mod:`.xlsx_rows` (the same bytes openpyxl writes, at a seventh of its
CPU) and spliced into the package openpyxl saved.

Answers come from a model and are untrusted. Every string cell that a spreadsheet would read as
a formula is neutralised by the rule the CSV files use (:func:`formulas.neutralise`: a user who
edits the cell and presses Enter would otherwise bring the formula to life) and stored with
the string type, so openpyxl can never turn it into a formula either. Numbers are written as
numbers and never pass through the rule: a score of -0.5 stays a number, not the text "'-0.5".
Characters that XML cannot carry are dropped, and text over Excel's cell limit is truncated
with a marker rather than producing a file Excel "repairs" on open.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from itertools import chain, islice

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.formatting.rule import ColorScaleRule, FormulaRule
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet._write_only import WriteOnlyWorksheet

from evalrunner.reports.formulas import neutralise
from evalrunner.reports.model import CaseRow, MetricInfo, MetricStats
from evalrunner.reports.stats import (
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
from evalrunner.reports.xlsx_rows import RowWriter, splice

#: Excel's limit on the characters of one cell (counted in UTF-16 code units).
EXCEL_CELL_LIMIT = 32_767

_SURROGATES = re.compile("[\ud800-\udfff]")
#: Whatever :func:`safe_text` removes or replaces (openpyxl's illegal characters, unpaired
#: surrogates): one search settles the many cells that hold none.
_UNCLEAN = re.compile(f"{ILLEGAL_CHARACTERS_RE.pattern}|{_SURROGATES.pattern}")
_NUMBER_FORMATS: dict[ColumnKind, str] = {"latency": "0.0", "number": "0.0000"}

# Excel's own "Good" and "Bad" cell styles, which users already read as pass and fail.
_GOOD = PatternFill(start_color="C6EFCE", end_color="C6EFCE", fill_type="solid")
_BAD = PatternFill(start_color="FFC7CE", end_color="FFC7CE", fill_type="solid")
_GOOD_FONT = Font(color="006100")
_BAD_FONT = Font(color="9C0006")
# Excel's red-yellow-green colour scale.
_RED, _YELLOW, _GREEN = "F8696B", "FFEB84", "63BE7B"

_HEADER_FONT = Font(bold=True)
_HEADER_FILL = PatternFill(start_color="DDEBF7", end_color="DDEBF7", fill_type="solid")
_WRAP = Alignment(wrap_text=True, vertical="top")
_TOP = Alignment(vertical="top")

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


def _header_cell(sheet: WriteOnlyWorksheet, name: str) -> WriteOnlyCell:
    cell = WriteOnlyCell(sheet)
    cell.alignment = _WRAP
    cell.value = safe_text(name)
    cell.data_type = "s"  # a column name is never a formula either
    cell.font = _HEADER_FONT
    cell.fill = _HEADER_FILL
    return cell


def _fill_sheet(
    sheet: WriteOnlyWorksheet,
    header: Sequence[str],
    kinds: Sequence[ColumnKind],
    body: Iterable[Sequence[Cell]],
    wrap: Sequence[bool],
) -> RowWriter:
    """Header, typed body, frozen header row and first column, autofilter and widths; returns
    the body rows' writer (its row count, and its file for :func:`splice`).

    The sheet is write-only (openpyxl streams it to a temporary file; the body rows go to
    another through :class:`RowWriter`, so a run of any size holds one row of cells, not one
    object per cell of the sheet): the column widths and the frozen panes go into the sheet's
    head and must be set before the first row, so the first :data:`_WIDTH_SAMPLE` rows are
    read ahead to size the columns; the autofilter goes into its tail and is set once the rows
    are counted."""
    rows = iter(body)
    sample = list(islice(rows, _WIDTH_SAMPLE))
    for c, name in enumerate(header, start=1):
        longest = max([len(name), *(_display_len(row[c - 1], kinds[c - 1]) for row in sample)])
        cap = _MAX_WRAP_WIDTH if wrap[c - 1] else _MAX_WIDTH
        sheet.column_dimensions[get_column_letter(c)].width = min(max(longest + 2, _MIN_WIDTH), cap)
    sheet.freeze_panes = "B2"
    sheet.append([_header_cell(sheet, name) for name in header])
    writer = RowWriter(
        sheet,
        [_WRAP if w else _TOP for w in wrap],
        [_NUMBER_FORMATS.get(k) for k in kinds],
        safe_text,
    )
    for values in chain(sample, rows):
        writer.row(values)
    last = get_column_letter(len(header))
    sheet.auto_filter.ref = f"A1:{last}{max(writer.count + 1, 2)}"
    return writer


def _display_len(value: Cell, kind: ColumnKind) -> int:
    if value is None:
        return 0
    if kind in _NUMBER_FORMATS and not isinstance(value, str):
        return len(f"{float(value):.4f}")
    text = str(value)
    # A wrapped cell is as wide as its longest line, not its whole text.
    return max((len(line) for line in text.splitlines()), default=0)


def _range(column: int, rows: int) -> str:
    letter = get_column_letter(column)
    return f"{letter}2:{letter}{max(rows + 1, 2)}"


def _format_metrics(
    sheet: WriteOnlyWorksheet, metrics: Sequence[MetricInfo], rows: int, first: int
) -> None:
    """Conditional formats, so they follow the values when a user sorts or edits: success
    true green / false red (blank, i.e. skipped or errored, left alone: in Excel a blank cell
    equals FALSE, hence ISLOGICAL), and a red-to-green scale on scores, reversed for metrics
    where lower is better."""
    for i, info in enumerate(metrics):
        score_col, success_col = first + 3 * i, first + 3 * i + 1
        top = f"{get_column_letter(success_col)}2"
        success = _range(success_col, rows)
        sheet.conditional_formatting.add(
            success,
            FormulaRule(formula=[f"AND(ISLOGICAL({top}),{top}=TRUE)"], fill=_GOOD, font=_GOOD_FONT),
        )
        sheet.conditional_formatting.add(
            success,
            FormulaRule(formula=[f"AND(ISLOGICAL({top}),{top}=FALSE)"], fill=_BAD, font=_BAD_FONT),
        )
        low, high = (_RED, _GREEN) if info.higher_is_better else (_GREEN, _RED)
        sheet.conditional_formatting.add(
            _range(score_col, rows),
            ColorScaleRule(
                start_type="min",
                start_color=low,
                mid_type="percentile",
                mid_value=50,
                mid_color=_YELLOW,
                end_type="max",
                end_color=high,
            ),
        )


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

    workbook = Workbook(write_only=True)
    details = workbook.create_sheet("Details")
    perturbed, conversations = has_perturbations(rows), has_conversations(rows)
    fixed = fixed_columns(perturbed, conversations)
    header = detail_header(metrics, perturbed, conversations)
    # Long text wraps: the free-text columns and every metric's reason.
    wrap = [name in LONG_TEXT_COLUMNS for name in fixed] + [False, False, True] * len(metrics)
    details_rows = _fill_sheet(
        details,
        header,
        detail_kinds(metrics, perturbed, conversations),
        (detail_cells(r, metrics, perturbed, conversations) for r in rows),
        wrap,
    )
    _format_metrics(details, metrics, len(rows), len(fixed) + 1)

    results = workbook.create_sheet("Results")
    results_rows = _fill_sheet(
        results,
        RESULT_COLUMNS,
        result_kinds(),
        (result_cells(s) for s in ordered_stats(stats)),
        [False] * len(RESULT_COLUMNS),
    )

    buffer = io.BytesIO()
    workbook.save(buffer)  # the sheets' parts are named (xl/worksheets/sheetN.xml) on saving
    bodies = {
        details.path.lstrip("/"): details_rows.file,
        results.path.lstrip("/"): results_rows.file,
    }
    try:
        return splice(buffer.getvalue(), bodies)
    finally:
        for body in bodies.values():
            body.close()
