"""The shortcuts Aggregate's CPU pass (issue 18) took in the report code give the answers
of the longer ways they replaced: the cell cleaning's one search, the cell limit's length
check, the column lookup made once per row, the records read a share per reader."""

from __future__ import annotations

from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

from evalrunner.evaluators.base import MetricResult
from evalrunner.pipeline.score import iter_records
from evalrunner.reports.analysis.problems import find_problems
from evalrunner.reports.analysis.stats import _result_of, column_results
from evalrunner.reports.model import CaseRow, MetricInfo
from evalrunner.reports.writers import xlsx
from evalrunner.reports.writers.formulas import neutralise
from evalrunner.reports.writers.xlsx import EXCEL_CELL_LIMIT, safe_text, truncate
from tests.unit.pipeline.test_aggregate_streaming import CountingStore, answered, items

HOSTILE = [
    "plain words",
    "",
    "   ",
    "\x00=cmd|' /C calc'!A0",  # a control character in front of a formula
    "ok\x07bell\x1fend",
    "lone \ud800 surrogate and \udfff",
    "\t=tab first",
    "\r\n+crlf",
    "＝full-width",
    "\u200b=zero width",
    "-0.5",
    "emoji 😀 \u2028",
    "\x0b\x0c vertical tab, form feed",
    "a" * 40_000,
    "😀" * 20_000,
]


def _long_way(text: str) -> str:
    cleaned = xlsx._SURROGATES.sub("\ufffd", ILLEGAL_CHARACTERS_RE.sub("", text))
    return truncate(neutralise(cleaned))


def test_safe_text_cleans_as_the_two_substitutions_did() -> None:
    for text in HOSTILE:
        assert safe_text(text) == _long_way(text), repr(text[:40])
    assert safe_text("\x00=cmd") == "'=cmd"


def test_the_cell_limit_is_counted_in_utf16_units_at_the_length_shortcut_edge() -> None:
    half = EXCEL_CELL_LIMIT // 2  # up to here no text can be over the limit
    assert truncate("😀" * half) == "😀" * half  # 32,766 units: fits
    over = "😀" * (half + 1)  # 32,768 units: over by one
    assert truncate(over) != over and "truncated" in truncate(over)
    assert truncate("a" * EXCEL_CELL_LIMIT) == "a" * EXCEL_CELL_LIMIT


def _r(evaluator: str, metric: str, score: float) -> MetricResult:
    return MetricResult(
        evaluator=evaluator, metric=metric, status="scored", score=score, reason="r"
    )


def test_column_results_are_result_of_for_every_column() -> None:
    infos = [
        MetricInfo(metric=m, evaluator=e, primary=True, threshold=0.5, higher_is_better=True)
        for e, m in [("a", "score"), ("b", "score"), ("a", "other"), ("c", "missing")]
    ]
    row = CaseRow(
        case_id="c",
        iteration=1,
        question="q",
        status="ok",
        # two evaluators name a metric alike; a repeated result: the first one counts
        results=[_r("b", "score", 0.2), _r("a", "score", 0.1), _r("a", "score", 0.9)],
    )
    row.results.append(_r("a", "other", 0.3))
    found = column_results(row, infos)
    assert found == [_result_of(row, info) for info in infos]
    assert [r.score if r else None for r in found] == [0.1, 0.2, 0.3, None]


def test_records_read_in_uneven_shares_come_back_in_manifest_order() -> None:
    run = items(45)  # chunks of 40 and 5: shares of 3 (the last 1) and of 1
    store = CountingStore({i.item_id: answered(i) for i in run if i.case.index % 7})
    pairs = list(iter_records(store, "r", run, chunk=40))  # type: ignore[arg-type]
    assert [i.item_id for i, _ in pairs] == [i.item_id for i in run]
    assert [r.item_id if r else None for _, r in pairs] == [
        i.item_id if i.case.index % 7 else None for i in run
    ]
    assert store.reads == 45


def test_evaluator_errors_read_each_rows_results_once_with_the_same_findings() -> None:
    """One evaluator, two metrics: a row whose first metric failed to parse and whose second
    errored counts in both problems (with the second's reason); the first error of a row is
    the one quoted; rows of another evaluator and scored rows count apart."""
    from tests.unit.reports.test_report_analysis import R1, ROUGE, TOX, of_type, report, res, row

    rows = [
        row(
            "a",
            res(ROUGE, status="error", reason="parsing failure: no JSON"),
            res(R1, status="error", reason="boom: first"),
        ),
        row(
            "b",
            res(ROUGE, status="error", reason="boom: second"),
            res(R1, status="error", reason="other: later"),
        ),
        row("c", res(ROUGE, 0.9), res(R1, 0.9), res(TOX, status="error", reason="tox down")),
        *[row(f"ok{i}", res(ROUGE, 0.9), res(R1, 0.9)) for i in range(5)],
    ]
    problems = find_problems(report(rows, metrics=[ROUGE, R1, TOX]))
    errors = of_type(problems, "evaluator_errors")
    assert [(p.metric, p.affected_cases) for p in errors] == [
        ("ROUGE-L", ["a", "b"]),
        ("Toxicity", ["c"]),
    ]
    assert "errored on 2 of 8 answers" in errors[0].description
    assert errors[0].description.endswith("most common (2): boom: first")
    parsing = of_type(problems, "parsing_failures")
    assert [(p.metric, p.affected_cases) for p in parsing] == [("ROUGE-L", ["a"])]


def test_a_rows_cells_are_neutralised_as_one_by_one() -> None:
    from evalrunner.reports.writers.formulas import neutralise_all

    cells = [*HOSTILE, "=1+1", "+1", "@SUM", "-inf", "-0.5000", "nan", "true", "'quoted"]
    assert neutralise_all(cells) == [neutralise(c) for c in cells]
    assert neutralise_all(["=cmd", "ok", ""]) == ["'=cmd", "ok", ""]


def test_the_written_out_illegal_characters_are_openpyxls() -> None:
    """The writer spells out openpyxl's class instead of importing openpyxl at start-up: every
    code point (surrogates apart, which ``_SURROGATES`` handles) is refused by both or by
    neither."""
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        ours = xlsx.ILLEGAL_CHARACTERS_RE.search(char) is not None
        assert ours == (ILLEGAL_CHARACTERS_RE.search(char) is not None), hex(code)
