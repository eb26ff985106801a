"""details.xlsx read back with openpyxl: layout, conditional formats, formula neutralisation and
Excel's cell limit."""

from __future__ import annotations

import io
import tracemalloc
from typing import Any

import pytest
from openpyxl import load_workbook
from openpyxl.worksheet.worksheet import Worksheet

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.analysis.stats import (
    RESULT_COLUMNS,
    compute_stats,
    detail_header,
    detail_table,
    result_table,
)
from evalrunner.reports.model import CaseRow, MetricInfo
from evalrunner.reports.writers.xlsx import EXCEL_CELL_LIMIT, details_xlsx, truncate

METRICS = [
    MetricInfo(
        metric="alpha", evaluator="quality", primary=True, threshold=0.5, higher_is_better=True
    ),
    MetricInfo(
        metric="beta", evaluator="quality", primary=False, threshold=0.3, higher_is_better=False
    ),
]

FORMULAS = [
    '=HYPERLINK("http://evil.example","click")',
    "+1+1",
    "-2+3",
    "@SUM(A1:A2)",
    "\t=cmd|' /C calc'!A0",
    "\r=1",
]


def result(metric: str, score: float | None, success: bool | None, status: Any = "scored"):
    return MetricResult(
        evaluator="quality",
        metric=metric,
        status=status,
        score=score,
        success=success,
        reason=f"{metric}: {status}",
    )


def rows() -> list[CaseRow]:
    out = [
        CaseRow(
            case_id=f"c{i}",
            iteration=1 + i % 2,
            categories=["x"],
            question=f"q{i}",
            answer=answer,
            contexts=["ctx"],
            latency_ms=10.0 * i,
            input_tokens=5,
            status="ok",
            results=[result("alpha", 0.2 * i, i % 2 == 0), result("beta", 0.1, True)],
        )
        for i, answer in enumerate(FORMULAS)
    ]
    out.append(
        CaseRow(
            case_id="long",
            iteration=1,
            question="=1+2",  # a question can be a formula too
            answer="a" * 40_000,
            status="ok",
            error="\x00bad\x07 control characters\ud800",
            results=[result("alpha", None, None, "skipped")],
        )
    )
    out.append(
        CaseRow(
            case_id="failed",
            iteration=2,
            question="q",
            status="target_error",
            error="TimeoutError",
            results=[result("alpha", None, None, "error"), result("beta", None, None, "error")],
        )
    )
    return out


@pytest.fixture(scope="module")
def book() -> Any:
    data = rows()
    stats = compute_stats(data, METRICS, iterations=2)
    return load_workbook(io.BytesIO(details_xlsx(data, METRICS, stats=stats)))


def column_of(sheet: Worksheet, name: str) -> int:
    return next(c.column for c in sheet[1] if c.value == name)


def test_sheets_header_and_layout(book: Any) -> None:
    assert book.sheetnames == ["Details", "Results"]
    details, results = book["Details"], book["Results"]
    assert [c.value for c in details[1]] == detail_header(METRICS)
    assert [c.value for c in results[1]] == list(RESULT_COLUMNS)
    for sheet in (details, results):
        assert sheet.freeze_panes == "B2"
        assert all(c.font.b for c in sheet[1])
        assert sheet.auto_filter.ref and sheet.auto_filter.ref.startswith("A1:")
    assert details.auto_filter.ref == f"A1:{details.cell(1, details.max_column).column_letter}9"
    answer = details.cell(1, column_of(details, "answer")).column_letter
    iteration = details.cell(1, column_of(details, "iteration")).column_letter
    # capped at 60 characters; stored with Excel's 5-pixel padding, as Excel itself does
    assert details.column_dimensions[answer].width == pytest.approx(60.71, abs=0.01)
    assert details.column_dimensions[iteration].width < 15
    assert details.cell(2, column_of(details, "answer")).alignment.wrap_text
    assert details.cell(2, column_of(details, "alpha reason")).alignment.wrap_text
    assert not details.cell(2, column_of(details, "case_id")).alignment.wrap_text


def test_values_are_typed_and_match_the_csv_tables(book: Any) -> None:
    details = book["Details"]
    data = rows()
    _, text_rows = detail_table(data, METRICS)
    score = column_of(details, "alpha score")
    assert details.cell(3, score).value == pytest.approx(0.2)
    assert details.cell(3, score).number_format == "0.0000"
    assert details.cell(3, column_of(details, "alpha success")).value is False
    assert details.cell(2, column_of(details, "alpha success")).value is True
    assert details.cell(2, column_of(details, "iteration")).value == 1
    assert details.cell(3, column_of(details, "latency_ms")).value == 10.0
    assert details.cell(8, column_of(details, "alpha score")).value is None  # skipped
    assert details.cell(8, column_of(details, "beta reason")).value == "not evaluated"
    # Plain text cells are the same as in details.csv.
    for r, text_row in enumerate(text_rows, start=2):
        for c in (1, 3, 7, 12):  # case_id, categories, contexts, status
            assert (details.cell(r, c).value or "") == text_row[c - 1]

    results = book["Results"]
    header, body = result_table(compute_stats(data, METRICS, iterations=2))
    assert [results.cell(r, 4).value for r in range(2, results.max_row + 1)] == [
        "all" if row[3] == "all" else int(row[3]) for row in body
    ]
    average = header.index("Average Score") + 1
    assert f"{results.cell(2, average).value:.4f}" == body[0][average - 1]


def test_success_columns_have_green_and_red_rules_and_scores_a_colour_scale(book: Any) -> None:
    details = book["Details"]
    rules: dict[str, list[Any]] = {}
    for formatting in details.conditional_formatting:
        rules[str(formatting.sqref)] = list(formatting.rules)
    for metric, higher_is_better in (("alpha", True), ("beta", False)):
        success = details.cell(1, column_of(details, f"{metric} success")).column_letter
        found = rules[f"{success}2:{success}9"]
        assert [r.type for r in found] == ["expression", "expression"]
        green, red = found
        assert green.formula == [f"AND(ISLOGICAL({success}2),{success}2=TRUE)"]
        assert red.formula == [f"AND(ISLOGICAL({success}2),{success}2=FALSE)"]
        assert green.dxf.fill.bgColor.rgb.endswith("C6EFCE")
        assert red.dxf.fill.bgColor.rgb.endswith("FFC7CE")
        # Static fills would not follow a sort: the cells themselves carry none.
        assert details[f"{success}2"].fill.fill_type is None

        score = details.cell(1, column_of(details, f"{metric} score")).column_letter
        (scale,) = rules[f"{score}2:{score}9"]
        assert scale.type == "colorScale"
        colours = [c.rgb[-6:] for c in scale.colorScale.color]
        red, yellow, green = "F8696B", "FFEB84", "63BE7B"
        assert colours == ([red, yellow, green] if higher_is_better else [green, yellow, red])


def test_formula_looking_text_is_stored_as_neutralised_strings(book: Any) -> None:
    details = book["Details"]
    answer = column_of(details, "answer")
    for r, text in enumerate(FORMULAS, start=2):
        cell = details.cell(r, answer)
        assert cell.data_type == "s"
        # A raw CR may come back as LF (the stdlib XML reader normalises it; lxml keeps it);
        # the apostrophe is what matters.
        assert lf(cell.value) == "'" + lf(text)
    question = details.cell(8, column_of(details, "question"))
    assert (question.data_type, question.value) == ("s", "'=1+2")
    # No cell anywhere in the workbook is a formula.
    for sheet in book.worksheets:
        for line in sheet.iter_rows():
            assert all(c.data_type != "f" for c in line)


def test_long_cells_are_truncated_and_illegal_characters_dropped(book: Any) -> None:
    details = book["Details"]
    long = details.cell(8, column_of(details, "answer")).value
    assert len(long) == EXCEL_CELL_LIMIT
    assert long.startswith("aaaa")
    assert long.endswith("[truncated: 40,000 characters; full text in details.csv]")
    assert details.cell(8, column_of(details, "error")).value == "bad control characters\ufffd"


def test_truncate_counts_utf16_units_and_keeps_short_text() -> None:
    assert truncate("short") == "short"
    text = "😀" * 20_000  # 40,000 UTF-16 units
    cut = truncate(text)
    assert len(cut.encode("utf-16-le")) // 2 <= EXCEL_CELL_LIMIT
    assert "\ufffd" not in cut and cut.startswith("😀")


def test_stats_default_to_the_rows_and_an_empty_run_still_opens() -> None:
    data = rows()
    computed = load_workbook(io.BytesIO(details_xlsx(data, METRICS)))["Results"]
    assert computed.max_row == 1 + 2 * 3  # run-wide + 2 iterations, 2 metrics each
    empty = load_workbook(io.BytesIO(details_xlsx([], METRICS)))
    assert empty["Details"].max_row == 1
    assert [c.value for c in empty["Results"]["B"]][1:] == ["alpha", "beta"]


def lf(text: str) -> str:
    """A cell's line breaks as one reader or another gives them back: OOXML stores a CR as
    ``_x000D_`` (Excel decodes it; openpyxl does not), and the stdlib XML reader turns a raw
    CR into LF."""
    text = text.replace("_x000D_", "\r")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def test_the_workbook_is_streamed_so_its_memory_does_not_grow_with_the_rows() -> None:
    # openpyxl's normal mode holds one object per cell until it saves: 200 → 1,600 rows took
    # ~2 → ~14 MB. Written row by row (write-only mode), the peak beyond the file's own bytes
    # (held twice: the buffer and its copy) stays what one row and the sheet's head cost.
    def rows_of(n: int) -> list[CaseRow]:
        return [
            CaseRow(
                case_id=f"c{i}",
                iteration=1,
                question=f"question {i} " * 5,
                answer=f"answer {i} " * 20,
                contexts=["ctx"],
                status="ok",
                results=[result("alpha", 0.5, True), result("beta", 0.1, True)],
            )
            for i in range(n)
        ]

    def peak_beyond_file(n: int) -> int:
        data = rows_of(n)
        stats = compute_stats(data, METRICS, iterations=1)
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            out = details_xlsx(data, METRICS, stats=stats)
            peak = tracemalloc.get_traced_memory()[1] - start
        finally:
            tracemalloc.stop()
        assert load_workbook(io.BytesIO(out))["Details"].max_row == n + 1
        return peak - 3 * len(out)

    small, large = peak_beyond_file(200), peak_beyond_file(1_600)
    assert large < 2 * small, (small, large)
