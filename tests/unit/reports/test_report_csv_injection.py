"""CSV injection: hostile answers written to details.csv and details.xlsx stay text, stay in
their own cell, and read back as written (apostrophe aside); numbers stay numbers."""

from __future__ import annotations

import csv
import io
import zipfile
from typing import Any

import pytest
from openpyxl import load_workbook

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.analysis.stats import (
    compute_stats,
    detail_header,
    detail_table,
    result_table,
)
from evalrunner.reports.model import CaseRow, MetricInfo
from evalrunner.reports.writers.csv_writer import to_csv
from evalrunner.reports.writers.formulas import is_formula_like, neutralise
from evalrunner.reports.writers.xlsx import details_xlsx

#: Answers a hostile model (or a suite author) can send, and whether each must be defused.
HOSTILE: dict[str, bool] = {
    "Sure.\r=cmd|' /C calc'!A0": False,  # one cell starting "Sure."; the CR must not split it
    "Sure.\n=cmd|' /C calc'!A0": False,
    "Sure.\r\n@SUM(1+1)*cmd|' /C calc'!A0": False,
    "=cmd|' /C calc'!A0": True,
    '=HYPERLINK("http://evil.example","click")': True,
    "+1+1": True,
    "-2+3": True,
    "@SUM(A1:A2)": True,
    "\t=1": True,
    "\tplain": True,  # OWASP: a leading tab or CR is defused whatever follows
    "\r=1": True,
    "\rplain": True,
    "\n=1": True,
    "\n\n-1+1": True,
    " =1+1": True,
    "   @cmd": True,
    "\u00a0=1": True,  # no-break space
    "\u3000＝1": True,  # ideographic space, full-width equals
    "\u200b=1": True,  # zero-width space
    "\ufeff+1": True,  # a byte-order mark
    "＝1+1": True,
    "＋1+1": True,
    "－1+1": True,
    "＠SUM(A1)": True,
    "﹦1": True,  # small form variant
    "-": True,
    "-inf": True,
    "plain text": False,
    "a = b": False,
    "email@example.com": False,
    "": False,
    "   ": False,
    "'=already quoted": False,
    "-0.5": False,  # plain numbers cannot be formulas and must stay numbers
    "+3": False,
    "-1.25e-3": False,
    "12": False,
}


@pytest.mark.parametrize("text", list(HOSTILE))
def test_neutralise_defuses_every_formula_start(text: str) -> None:
    assert is_formula_like(text) is HOSTILE[text]
    assert neutralise(text) == ("'" + text if HOSTILE[text] else text)


def test_a_bare_cr_or_lf_never_splits_a_csv_record() -> None:
    data = to_csv(["answer", "n"], [["Sure.\r=cmd|' /C calc'!A0", "1"], ["a\nb", "2"]])
    text = data.decode("utf-8-sig")
    assert text == 'answer,n\r\n"Sure.\r=cmd|\' /C calc\'!A0",1\r\n"a\nb",2\r\n'
    records = list(csv.reader(io.StringIO(text, newline="")))
    assert records == [["answer", "n"], ["Sure.\r=cmd|' /C calc'!A0", "1"], ["a\nb", "2"]]


def rows() -> list[CaseRow]:
    return [
        CaseRow(
            case_id=f"c{i}",
            iteration=1,
            question=text,  # a suite cell can be hostile too
            answer=text,
            contexts=[text],
            status="ok",
            error=text or None,
            results=[
                MetricResult(
                    evaluator="e",
                    metric="m",
                    status="scored",
                    score=-0.5,
                    success=False,
                    reason=text,
                )
            ],
        )
        for i, text in enumerate(HOSTILE)
    ]


METRICS = [
    MetricInfo(metric="m", evaluator="e", primary=True, threshold=0.1, higher_is_better=True)
]


def test_hostile_details_csv_reads_back_with_every_record_and_column() -> None:
    header, body = detail_table(rows(), METRICS)
    text = to_csv(header, body).decode("utf-8-sig")
    records = list(csv.reader(io.StringIO(text, newline="")))
    assert len(records) == 1 + len(HOSTILE)
    assert all(len(r) == len(header) for r in records)
    answer, reason, score = (header.index(c) for c in ("answer", "m reason", "m score"))
    for record, text_in in zip(records[1:], HOSTILE, strict=True):
        assert record[answer] == neutralise(text_in)
        assert record[reason] == neutralise(text_in)
        assert record[score] == "-0.5000"  # a negative score is a number, not "'-0.5000"


def test_result_csv_keeps_negative_numbers_as_numbers() -> None:
    data = rows()
    stats = compute_stats(data, METRICS, iterations=1)
    header, body = result_table(stats)
    records = list(csv.DictReader(io.StringIO(to_csv(header, body).decode("utf-8-sig"))))
    assert records[0]["Average Score"] == "-0.5000" and records[0]["Min"] == "-0.5000"


@pytest.fixture(scope="module")
def book() -> Any:
    return load_workbook(io.BytesIO(details_xlsx(rows(), METRICS)))


def test_hostile_details_xlsx_holds_text_cells_with_the_same_rule(book: Any) -> None:
    sheet = book["Details"]
    names = [c.value for c in sheet[1]]
    assert names == detail_header(METRICS)
    for r, text_in in enumerate(HOSTILE, start=2):
        for name in ("question", "answer", "m reason"):
            cell = sheet.cell(r, names.index(name) + 1)
            # A CR is stored as Excel stores it, ``_x000D_`` (Excel decodes it, openpyxl does
            # not); what matters is the apostrophe and the type.
            expected = neutralise(text_in).replace("\r\n", "\n").replace("\r", "\n")
            value = (cell.value or "").replace("_x000D_", "\r")
            value = value.replace("\r\n", "\n").replace("\r", "\n")
            assert value == expected, (name, text_in)
            assert cell.value is None or cell.data_type == "s"
        score = sheet.cell(r, names.index("m score") + 1)
        assert score.value == -0.5 and score.data_type == "n"
    for line in sheet.iter_rows():
        assert all(c.data_type != "f" for c in line)


def test_xlsx_never_stores_a_formula_even_when_written_raw() -> None:
    """openpyxl turns a string starting with "=" into a formula unless the type is forced;
    the writer forces it, so even text the rule would leave alone (none today) stays text.
    Checked through the saved XML, where a formula would be an <f> element."""
    data = details_xlsx(rows(), METRICS)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        sheets = [n for n in archive.namelist() if n.startswith("xl/worksheets/sheet")]
        assert sheets
        for name in sheets:
            assert b"<f>" not in archive.read(name) and b"<f " not in archive.read(name)


def _rule_in_full(text: str) -> bool:
    """The rule with no shortcut for a safe first character (what is_formula_like did for
    every cell before it learnt one), kept here to compare against."""
    import re
    import unicodedata

    if re.fullmatch(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", text, re.ASCII):
        return False
    if text.startswith(("\t", "\r")):
        return True
    for char in text:
        if char.isspace() or unicodedata.category(char) == "Cf":
            continue
        return unicodedata.normalize("NFKC", char)[:1] in {"=", "+", "-", "@"}
    return False


def test_the_safe_first_character_shortcut_changes_no_verdict() -> None:
    firsts = [chr(c) for c in [*range(0x3100), *range(0xFE00, 0xFF80), 0x1D7CE, 0x1F600]]
    for first in firsts:
        for rest in ("", "1", "=1", " +x", "\u200b=1", "1e5"):
            text = first + rest
            assert is_formula_like(text) == _rule_in_full(text), repr(text)
