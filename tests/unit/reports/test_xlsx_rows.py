"""details.xlsx's body rows are serialised by hand (:mod:`evalrunner.reports.xlsx_rows`, for
Aggregate's CPU): the workbook must be the one openpyxl writes when it styles and writes each
cell itself. The reference below is the writer this replaced (openpyxl's write-only cells, a
Font / Alignment / number format assigned per cell), kept here only to compare against."""

from __future__ import annotations

import io
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from itertools import chain, islice
from typing import Any

import pytest
from openpyxl import load_workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.compat import safe_string
from openpyxl.worksheet._write_only import WriteOnlyWorksheet

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports import xlsx
from evalrunner.reports.model import CaseRow
from evalrunner.reports.stats import Cell, ColumnKind
from evalrunner.reports.xlsx_rows import number_text
from evalrunner.suite.model import Perturbation
from tests.unit.reports.test_report_xlsx import METRICS, column_of
from tests.unit.reports.test_report_xlsx import rows as formula_rows


class _Reference:
    """What the reference writer hands back in place of a RowWriter: its rows went through
    openpyxl, so there is nothing to splice."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.file = tempfile.TemporaryFile()


def _reference_cell(
    sheet: WriteOnlyWorksheet, value: Cell, kind: ColumnKind, style: Any
) -> WriteOnlyCell:
    cell = WriteOnlyCell(sheet)
    cell.alignment = style
    if value is None:
        return cell
    if isinstance(value, str):
        cell.value = xlsx.safe_text(value)
        cell.data_type = "s"
    elif kind in xlsx._NUMBER_FORMATS:
        cell.value = float(value)
        cell.number_format = xlsx._NUMBER_FORMATS[kind]
    else:
        cell.value = value
    return cell


def _reference_fill_sheet(
    sheet: WriteOnlyWorksheet,
    header: Sequence[str],
    kinds: Sequence[ColumnKind],
    body: Iterable[Sequence[Cell]],
    wrap: Sequence[bool],
) -> _Reference:
    rows = iter(body)
    sample = list(islice(rows, xlsx._WIDTH_SAMPLE))
    for c, name in enumerate(header, start=1):
        longest = max([len(name), *(xlsx._display_len(r[c - 1], kinds[c - 1]) for r in sample)])
        cap = xlsx._MAX_WRAP_WIDTH if wrap[c - 1] else xlsx._MAX_WIDTH
        width = min(max(longest + 2, xlsx._MIN_WIDTH), cap)
        sheet.column_dimensions[xlsx.get_column_letter(c)].width = width
    sheet.freeze_panes = "B2"
    heading = []
    for name in header:
        cell = _reference_cell(sheet, name, "text", xlsx._WRAP)
        cell.font = xlsx._HEADER_FONT
        cell.fill = xlsx._HEADER_FILL
        heading.append(cell)
    sheet.append(heading)
    styles = [xlsx._WRAP if w else xlsx._TOP for w in wrap]
    count = 0
    for values in chain(sample, rows):
        sheet.append(
            [_reference_cell(sheet, v, k, s) for v, k, s in zip(values, kinds, styles, strict=True)]
        )
        count += 1
    sheet.auto_filter.ref = f"A1:{xlsx.get_column_letter(len(header))}{max(count + 1, 2)}"
    return _Reference(count)


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


def _parts(workbook: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(workbook)) as package:
        # core.xml holds the time of writing, nothing else differs
        return {n: package.read(n) for n in package.namelist() if n != "docProps/core.xml"}


@pytest.mark.parametrize("case_rows", [edge_rows, formula_rows, lambda: []])
def test_the_workbook_is_byte_for_byte_the_one_openpyxl_writes_cell_by_cell(
    monkeypatch: pytest.MonkeyPatch, case_rows: Any
) -> None:
    data = case_rows()
    fast = xlsx.details_xlsx(data, METRICS)
    monkeypatch.setattr(xlsx, "_fill_sheet", _reference_fill_sheet)
    reference = xlsx.details_xlsx(data, METRICS)
    fast_parts, reference_parts = _parts(fast), _parts(reference)
    assert list(fast_parts) == list(reference_parts)
    for name, content in reference_parts.items():
        assert fast_parts[name] == content, name


def test_styles_read_back_are_the_reference_writers() -> None:
    """The styles a reader sees on header, score, success, text and wrapped cells."""
    book = load_workbook(io.BytesIO(xlsx.details_xlsx(edge_rows(), METRICS)))
    details = book["Details"]
    header = details.cell(1, 1)
    assert (header.font.b, header.fill.fill_type, header.fill.fgColor.rgb) == (
        True,
        "solid",
        "00DDEBF7",
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
    assert (blank.value, blank.alignment.vertical, blank.number_format) == (None, "top", "General")
    formula = details.cell(11, column_of(details, "answer"))
    assert (formula.value, formula.data_type) == ("'=SUM(A1)", "s")
    number_text_cell = details.cell(10, column_of(details, "answer"))
    assert (number_text_cell.value, number_text_cell.data_type) == ("-0.5", "s")


@pytest.mark.parametrize(
    "value", [0, -0.0, 1e-20, 1 / 3, 10**17 + 1, float("nan"), float("inf"), float("-inf")]
)
def test_numbers_are_written_as_openpyxl_writes_them(value: float) -> None:
    assert number_text(value) == safe_string(value)
