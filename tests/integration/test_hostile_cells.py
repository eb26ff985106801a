"""Hostile text through the whole local run: a loopback target that answers with formulas
(bare CR, LF, tab, full-width, leading space) and a suite whose cells are formulas too. Every
case keeps its row in details.csv and details.xlsx, no cell is a live formula, and the files
read back as written. And the issue's broken suite: an unclosed quote exits 2, not 0."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.reports.writers.formulas import neutralise
from tests.support.loopback_http import serve

#: What the target answers, by question number.
ANSWERS = [
    "Sure.\r=cmd|' /C calc'!A0",
    "Sure.\n=cmd|' /C calc'!A0",
    '=HYPERLINK("http://evil.example","click")',
    "\t=1+1",
    " @SUM(1+1)*cmd|' /C calc'!A0",
    "\n-2+3",
    "＝1+1",
    "\u3000＋cmd",
    "-0.5",
]

#: Suite cells are untrusted too: each question is a formula after its number.
QUESTIONS = [
    f'=HYPERLINK("q{i}")' if i % 2 else f"q{i}\r=cmd|' /C calc'!A" for i in range(len(ANSWERS))
]


def respond(request: bytes) -> tuple[bytes, float]:
    """The answer is picked by the number in the question's text."""
    number = int("".join(c for c in json.loads(request)["question"] if c.isdigit()))
    return json.dumps({"answer": ANSWERS[number]}).encode(), 0.0


@pytest.fixture
def target() -> Iterator[str]:
    with serve(respond) as (url, _):
        yield url


def run(suite: Path, target: str, out: Path) -> Any:
    spec = json.dumps({"url": target, "max_retries": 0})
    args = ["run", "--suite", str(suite), "--target", spec, "--out", str(out), "--quiet"]
    return CliRunner().invoke(app, [*args, "--metric", "Exact match"], catch_exceptions=False)


def test_hostile_answers_and_cells_stay_text_in_their_own_rows(tmp_path: Path, target: str):
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(["question", "expected_answer"])
    writer.writerows([[q, a] for q, a in zip(QUESTIONS, ANSWERS, strict=True)])
    suite = tmp_path / "hostile.csv"
    suite.write_text(buffer.getvalue(), encoding="utf-8", newline="")

    result = run(suite, target, tmp_path / "out")
    assert result.exit_code == 0, result.output

    details = next((tmp_path / "out").rglob("*-details.csv")).read_bytes().decode("utf-8-sig")
    records = list(csv.reader(io.StringIO(details, newline="")))
    header = records[0]
    assert len(records) == 1 + len(ANSWERS)  # a CR or LF split no record
    assert all(len(r) == len(header) for r in records)
    by_question = {r[header.index("question")]: r for r in records[1:]}
    for question, answer in zip(QUESTIONS, ANSWERS, strict=True):
        record = by_question[neutralise(question)]
        assert record[header.index("answer")] == neutralise(answer)
        assert record[header.index("status")] == "ok"
    # The target's answers equal the expected ones: a number stays a number, not "'1.0000".
    assert {r[header.index("Exact match score")] for r in records[1:]} == {"1.0000"}

    book = load_workbook(next((tmp_path / "out").rglob("*-details.xlsx")))
    sheet = book["Details"]
    names = [c.value for c in sheet[1]]
    answers = [sheet.cell(r, names.index("answer") + 1) for r in range(2, sheet.max_row + 1)]
    # A CR is stored as Excel stores it, _x000D_ (Excel decodes it, openpyxl does not):
    # compare with LF.
    expected = sorted(neutralise(a).replace("\r", "\n") for a in ANSWERS)
    read = (c.value.replace("_x000D_", "\r").replace("\r", "\n") for c in answers)
    assert sorted(read) == expected
    assert all(c.data_type == "s" for c in answers)
    for sheet in book.worksheets:
        for line in sheet.iter_rows():
            assert all(c.data_type != "f" for c in line)


def test_an_unclosed_quote_in_the_suite_exits_2_and_writes_nothing(tmp_path: Path, target: str):
    suite = tmp_path / "broken.csv"
    suite.write_bytes(b'question,expected_answer\n"What is 2+2?,4\nSecond question,5\n')
    result = run(suite, target, tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert "row 2, column 'question'" in result.stderr and "never closed" in result.stderr
    assert not (tmp_path / "out").exists()
