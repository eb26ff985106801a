"""Nothing fails silently (issue 27, item 8): a suite header that is one of ours with a
look-alike letter or an invisible character is refused, naming the cell and the character,
before any target is called. Read as metadata, it left its column empty with exit 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openpyxl import Workbook
from typer.testing import CliRunner

from evalrunner.cli import app
from tests.support.loopback_http import Loopback

runner = CliRunner()


def run(suite: Path, url: str, out: Path):
    return runner.invoke(
        app,
        [
            "run",
            "--suite",
            str(suite),
            "--target",
            json.dumps({"url": url}),
            "--metric",
            "Token F1",
            "--out",
            str(out),
            "--quiet",
        ],
    )


@pytest.mark.parametrize(
    ("headers", "column", "told"),
    [
        (["quеstion", "expected_answer"], "A", "U+0435 CYRILLIC SMALL LETTER IE"),
        (["question", "expected\u200b_answer"], "B", "U+200B ZERO WIDTH SPACE"),
        (["question", "Expected Answer\ufeff"], "B", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
        (["question", "ехресted_answer"], "B", "U+0440 CYRILLIC SMALL LETTER ER"),
    ],
)
@pytest.mark.parametrize("kind", ["csv", "xlsx"])
def test_a_look_alike_header_is_refused_naming_the_cell(tmp_path, headers, column, told, kind):
    suite = tmp_path / f"s.{kind}"
    rows = [headers, ["How many days?", "25 days"], ["And sick?", "10"]]
    if kind == "csv":
        suite.write_text("".join(",".join(r) + "\n" for r in rows), "utf-8")
    else:
        book = Workbook()
        for row in rows:
            book.active.append(row)
        book.save(suite)
    with Loopback() as server:
        server.always(200, {"answer": "25 days"})
        result = run(suite, f"{server.url}/ask", tmp_path / "out")
        assert result.exit_code == 2, result.output
        assert not server.requests  # refused before anything started
    message = " ".join(result.stderr.split())
    assert f"(column {column})" in message and "row 1" in message
    assert told in message and "looks like" in message


def test_a_header_in_another_script_stays_a_metadata_column(tmp_path):
    suite = tmp_path / "s.csv"
    suite.write_text("question,expected_answer,категория\nHow many days?,25 days,отпуск\n", "utf-8")
    with Loopback() as server:
        server.always(200, {"answer": "25 days"})
        result = run(suite, f"{server.url}/ask", tmp_path / "out")
    assert result.exit_code == 0, result.output
