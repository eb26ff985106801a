"""details.xlsx written by XlsxWriter (issue 30, in place of openpyxl rows serialised by hand):
read back with openpyxl, every cell holds what the table says, as the writer before wrote it
(the same values and types, text neutralised by the formula rule, blanks blank, numbers in the
column's format), and the styles, panes, filter and widths a reader sees are the ones before.
The reference is the table itself (:mod:`evalrunner.reports.analysis.stats`) and the cell rules the
writer before applied, so a change of writer that loses or retypes a cell fails here."""

from __future__ import annotations

import io
import math
import re
from typing import Any

import pytest
from openpyxl import load_workbook

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.analysis.stats import (
    detail_cells,
    detail_header,
    detail_kinds,
    has_conversations,
    has_perturbations,
)
from evalrunner.reports.model import CaseRow
from evalrunner.reports.writers import xlsx
from evalrunner.suite.model import Perturbation
from tests.unit.reports.test_report_xlsx import METRICS, column_of
from tests.unit.reports.test_report_xlsx import rows as formula_rows

_ESCAPED = re.compile("_x([0-9A-Fa-f]{4})_")


def as_excel_reads(value: Any) -> Any:
    """A cell's text as Excel shows it: OOXML stores a control character as ``_xHHHH_``
    (a carriage return as ``_x000D_``), which Excel decodes and openpyxl leaves as it is."""
    if isinstance(value, str):
        return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), value)
    return value


def expected(value: Any, kind: str) -> Any:
    """What the writer before stored for a table cell: text made safe (an empty result is a
    blank cell), a number column's value as a float (NaN and infinities blank), the rest as
    it is; numbers to 16 significant digits (``%.16g``, as openpyxl wrote them too)."""
    if isinstance(value, str):
        return xlsx.safe_text(value) or None
    if value is None:
        return None
    if kind in xlsx._NUMBER_FORMATS:
        number = float(value)
        return float(f"{number:.16g}") if math.isfinite(number) else None
    if isinstance(value, float):
        return float(f"{value:.16g}")
    return value


def _result(metric: str, score: float | None, success: bool | None) -> MetricResult:
    status: Any = "scored" if score is not None else "error"
    return MetricResult(
        evaluator="quality",
        metric=metric,
        status=status,
        score=score,
        success=success,
        reason=f"  {metric} <b>&amp; ",
    )


def edge_rows() -> list[CaseRow]:
    """Text in every shape the serialiser treats apart (surrounding or only whitespace,
    empty, markup characters, line breaks, characters beyond the BMP), numbers of every sign
    and size, ints, booleans, blanks; a perturbed copy and a conversation turn for the
    optional columns; the first row blank where later ones hold numbers, so styles are
    first used in a different order than the columns'."""
    texts = [
        " leading",
        "trailing ",
        "   ",
        "",
        "a & b < c > d \"quoted\" 'single'",
        "line\nbreak\r\nand\ttab",
        "emoji 😀 and \u2028 separator",
        "-0.5",
        "=SUM(A1)",
    ]
    out = [
        CaseRow(case_id="blank", iteration=1, question="q", status="not_run"),
    ]
    for i, text in enumerate(texts):
        out.append(
            CaseRow(
                case_id=f"e{i}",
                iteration=1,
                categories=[text, "b"],
                question=text or "q",
                expected_answer=text,
                answer=text,
                contexts=[text],
                latency_ms=[0.0, -0.0, 1e-20, 123456.789, 0.1 + 0.2][i % 5],
                input_tokens=[0, 7, 10**12, None][i % 4],
                output_tokens=None,
                cost=0.000123,
                status="ok",
                sanitized=i % 2 == 0,
                notes=[text],
                results=[
                    _result("alpha", [0.0, 1.0, -0.25, 1 / 3][i % 4], i % 3 == 0),
                    _result("beta", None if i % 2 else 0.5, None if i % 2 else False),
                ],
                perturbation=Perturbation(
                    of="e0", kind="typo", name="typo", intensity=0.3, original_question=" q "
                )
                if i == 3
                else None,
                conversation_id="conv" if i == 4 else None,
                turn=1 if i == 4 else None,
            )
        )
    return out


@pytest.mark.parametrize("case_rows", [edge_rows, formula_rows, lambda: []])
def test_every_cell_reads_back_as_the_table_says(case_rows: Any) -> None:
    data = case_rows()
    book = load_workbook(io.BytesIO(xlsx.details_xlsx(data, METRICS)))
    details = book["Details"]
    perturbed, conversations = has_perturbations(data), has_conversations(data)
    header = detail_header(METRICS, perturbed, conversations)
    kinds = detail_kinds(METRICS, perturbed, conversations)
    assert [c.value for c in details[1]] == header
    assert details.max_row == max(len(data) + 1, 1)
    for r, row in enumerate(data, start=2):
        cells = detail_cells(row, METRICS, perturbed, conversations)
        for c, (value, kind) in enumerate(zip(cells, kinds, strict=True), start=1):
            cell = details.cell(r, c)
            want = expected(value, kind)
            assert as_excel_reads(cell.value) == want, (cell.coordinate, value)
            if isinstance(want, str):
                assert cell.data_type == "s", cell.coordinate  # never a formula
            if isinstance(want, float) and kind in xlsx._NUMBER_FORMATS:
                assert cell.number_format == xlsx._NUMBER_FORMATS[kind], cell.coordinate
            if isinstance(value, bool) and kind not in xlsx._NUMBER_FORMATS:
                assert cell.data_type == "b", cell.coordinate
    last = details.cell(1, len(header)).column_letter
    assert details.freeze_panes == "B2"
    assert details.auto_filter.ref == f"A1:{last}{max(len(data) + 1, 2)}"
    assert book["Results"].freeze_panes == "B2"


def test_columns_are_as_wide_as_before_with_excels_padding() -> None:
    """Widths are sized from the first rows as before (capped at 30, wrapped text at 60);
    XlsxWriter stores them as Excel does, with its 5-pixel padding (+0.71)."""
    details = load_workbook(io.BytesIO(xlsx.details_xlsx(edge_rows(), METRICS)))["Details"]
    widths = {k: v.width for k, v in details.column_dimensions.items()}
    assert widths["A"] == pytest.approx(len("case_id") + 2 + 0.71, abs=0.01)  # its header
    assert max(widths.values()) <= xlsx._MAX_WRAP_WIDTH + 0.72
    assert any(width > xlsx._MAX_WIDTH for width in widths.values())  # wrapped text, wider


def test_styles_read_back_are_the_ones_before() -> None:
    """The styles a reader sees on header, score, success, text and wrapped cells."""
    book = load_workbook(io.BytesIO(xlsx.details_xlsx(edge_rows(), METRICS)))
    details = book["Details"]
    header = details.cell(1, 1)
    assert (header.font.b, header.fill.fill_type, header.fill.fgColor.rgb) == (
        True,
        "solid",
        "FFDDEBF7",
    )
    assert (header.alignment.wrap_text, header.alignment.vertical) == (True, "top")
    row = 4  # e1 (row 2 is the case not run): alpha scored 1.0 and failed, beta errored
    score = details.cell(row, column_of(details, "alpha score"))
    assert (score.value, score.number_format, score.alignment.vertical) == (1.0, "0.0000", "top")
    assert not score.alignment.wrap_text and not score.font.b and score.fill.fill_type is None
    success = details.cell(row, column_of(details, "alpha success"))
    assert (success.value, success.data_type, success.number_format) == (False, "b", "General")
    assert success.fill.fill_type is None  # green and red come from conditional formats
    latency = details.cell(row, column_of(details, "latency_ms"))
    assert (latency.value, latency.number_format) == (-0.0, "0.0")
    tokens = details.cell(row, column_of(details, "input_tokens"))
    assert (tokens.value, tokens.number_format) == (7, "General")
    case = details.cell(row, 1)
    assert (case.value, case.data_type, case.alignment.wrap_text) == ("e1", "s", None)
    answer = details.cell(row, column_of(details, "answer"))
    assert (answer.value, answer.alignment.wrap_text, answer.alignment.vertical) == (
        "trailing ",
        True,
        "top",
    )
    blank = details.cell(2, column_of(details, "alpha score"))  # not run: no score
    assert (blank.value, blank.has_style) == (None, False)  # no cell of its own is written


def test_an_empty_cell_is_left_out_and_its_column_carries_the_format() -> None:
    """Empty cells (None, an empty text, NaN) are not written (about a fifth of a lexical
    run's cells, ~6% of the workbook's CPU). The column's own format holds
    what the empty cell showed before (top alignment, wrapping) and what a number typed into
    it takes (the column's number format), so a reader sees the same sheet."""
    details = load_workbook(io.BytesIO(xlsx.details_xlsx(edge_rows(), METRICS)))["Details"]
    letter = details.cell(1, column_of(details, "alpha score")).column_letter
    score = details.column_dimensions[letter]
    assert (score.alignment.vertical, score.number_format) == ("top", "0.0000")
    answer = details.column_dimensions[details.cell(1, column_of(details, "answer")).column_letter]
    assert (answer.alignment.vertical, answer.alignment.wrap_text) == ("top", True)
    latency = details.column_dimensions[
        details.cell(1, column_of(details, "latency_ms")).column_letter
    ]
    assert latency.number_format == "0.0"
    # the not-run case's row: its empty cells are absent, its filled ones present
    assert details.cell(2, column_of(details, "alpha score")).has_style is False
    assert details.cell(2, 1).value == "blank"
    formula = details.cell(11, column_of(details, "answer"))
    assert (formula.value, formula.data_type) == ("'=SUM(A1)", "s")
    number_text_cell = details.cell(10, column_of(details, "answer"))
    assert (number_text_cell.value, number_text_cell.data_type) == ("-0.5", "s")
