"""Issue 27 item 3: a small file cannot take the machine. Suites are refused on what they
unpack to, through ``evalrunner run`` as a user runs it: exit 2, nothing called or written,
and a message naming the file, the limit and the setting that raises it. The bombs are built
here (tests/support/bombs.py); most are small, against lowered limits, and the issue's own
3-million-row workbook is refused at the default limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.suite.readers import read_suite_file
from tests.support import bombs
from tests.support.loopback_http import Loopback

runner = CliRunner()


@pytest.fixture
def target():
    """A loopback target that counts its calls: a refused suite must call it zero times."""
    with Loopback() as server:
        server.always(200, {"answer": "25 days."})
        yield f"{server.url}/ask", server.requests


def _run(suite: Path, url: str, out: Path, **env: str):
    return runner.invoke(
        app,
        ["run", "--suite", str(suite), "--target", json.dumps({"url": url}), "--out", str(out)],
        env={"COLUMNS": "400", **env},
    )


def _refused(result, out: Path, calls: list[object], *words: str) -> str:
    message = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    for word in words:
        assert word in message, (word, message)
    assert "Traceback" not in result.output
    assert calls == [] and not any(out.glob("**/*.csv"))
    return message


def test_three_million_rows_in_a_small_xlsx_are_refused_at_the_default_limits(tmp_path, target):
    url, calls = target
    suite = bombs.xlsx_rows(tmp_path / "rows.xlsx", 3_000_000)
    assert suite.stat().st_size < 1_000_000
    result = _run(suite, url, tmp_path / "out")
    _refused(result, tmp_path / "out", calls, "rows.xlsx", "32.0 MB", "EVALRUNNER_MAX_SUITE_MB")


def test_rows_over_the_limit_are_counted_before_the_sheet_is_loaded(tmp_path, target):
    url, calls = target
    suite = bombs.xlsx_rows(tmp_path / "rows.xlsx", 500)
    result = _run(suite, url, tmp_path / "out", EVALRUNNER_MAX_SUITE_ROWS="100")
    _refused(
        result,
        tmp_path / "out",
        calls,
        "rows.xlsx",
        "rows (in xl/worksheets/sheet1.xml)",
        "limit of 100 rows",
        "EVALRUNNER_MAX_SUITE_ROWS",
    )
    # the setting the message names is the one that lets the suite through
    raised = _run(suite, url, tmp_path / "out2", EVALRUNNER_MAX_SUITE_ROWS="1000")
    assert raised.exit_code != 2, raised.output
    assert len(calls) == 1 + 500  # the pre-flight's probe, then every case


def test_a_huge_shared_strings_table_is_refused_by_its_unpacked_size(tmp_path, target):
    url, calls = target
    suite = bombs.xlsx_shared_strings(tmp_path / "strings.xlsx", 3)
    assert suite.stat().st_size < 100_000
    result = _run(suite, url, tmp_path / "out", EVALRUNNER_MAX_SUITE_MB="2")
    message = _refused(
        result,
        tmp_path / "out",
        calls,
        "strings.xlsx",
        "unpacks to 3.0 MB",
        "limit of 2.0 MB",
        "EVALRUNNER_MAX_SUITE_MB",
    )
    assert "on disk" in message


def test_a_shared_strings_table_of_tiny_strings_is_refused_by_their_number(tmp_path, target):
    """2 MB of one-letter strings is within the size limit, and 120,000 string objects."""
    url, calls = target
    suite = bombs.xlsx_shared_strings(tmp_path / "tiny.xlsx", 2, item=1)
    result = _run(suite, url, tmp_path / "out", EVALRUNNER_MAX_SUITE_CELLS="10000")
    _refused(
        result,
        tmp_path / "out",
        calls,
        "tiny.xlsx",
        "shared strings (in xl/sharedStrings.xml)",
        "limit of 10,000 cells",
        "EVALRUNNER_MAX_SUITE_CELLS",
    )


@pytest.mark.parametrize(
    ("cell", "words"),
    [
        ("A1000000", ("rows up to row 1,000,000", "EVALRUNNER_MAX_SUITE_ROWS")),
        ("XFD100", ("A1:XFD100 (1,638,400 cells", "EVALRUNNER_MAX_SUITE_CELLS")),
    ],
)
def test_one_cell_far_outside_the_table_is_refused(tmp_path, target, cell, words):
    """One row element, but an extent of millions of cells that reading would pad out."""
    url, calls = target
    suite = bombs.xlsx_far_cell(tmp_path / "far.xlsx", cell)
    _refused(_run(suite, url, tmp_path / "out"), tmp_path / "out", calls, "far.xlsx", *words)


@pytest.mark.parametrize("name", ["big.csv", "big.json"])
def test_csv_and_json_over_the_size_limit_are_refused_unread(tmp_path, target, name):
    url, calls = target
    suite = tmp_path / name
    row = {"question": "How many days of leave?", "expected_answer": "25 days. " * 50}
    if name.endswith(".csv"):
        suite.write_text("question,expected_answer\n" + "q,a\n" * 600_000)
    else:
        suite.write_text(json.dumps([row] * 3000))
    assert suite.stat().st_size > 1024 * 1024
    result = _run(suite, url, tmp_path / "out", EVALRUNNER_MAX_SUITE_MB="1")
    _refused(result, tmp_path / "out", calls, name, "limit of 1.0 MB", "EVALRUNNER_MAX_SUITE_MB")


def test_a_table_of_small_cells_is_refused_by_its_cells(tmp_path, target):
    """Few rows and few bytes, many cells: what the size limit alone does not bound."""
    url, calls = target
    suite = tmp_path / "wide.csv"
    suite.write_text("question" + ",x" * 999 + "\n" + ("q" + ",1" * 999 + "\n") * 20)
    result = _run(suite, url, tmp_path / "out", EVALRUNNER_MAX_SUITE_CELLS="10000")
    _refused(
        result,
        tmp_path / "out",
        calls,
        "wide.csv",
        "limit of 10,000 cells",
        "EVALRUNNER_MAX_SUITE_CELLS",
    )
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps([{"question": "q", **{f"k{n}": 1 for n in range(20_000)}}]))
    result = _run(keys, url, tmp_path / "out", EVALRUNNER_MAX_SUITE_CELLS="10000")
    _refused(result, tmp_path / "out", calls, "keys.json", "20,001 keys", "limit of 10,000")
    workbook = bombs.xlsx_rows(tmp_path / "cells.xlsx", 2000)
    result = _run(workbook, url, tmp_path / "out", EVALRUNNER_MAX_SUITE_CELLS="1000")
    _refused(result, tmp_path / "out", calls, "cells.xlsx", "cells (in xl/worksheets/sheet1.xml)")


@pytest.mark.parametrize(
    ("name", "text", "found"),
    [
        (
            "many.csv",
            "question\n" + "".join(f"q{n}\n" for n in range(200)),
            "more than 110 records",
        ),
        ("many.json", json.dumps([{"question": f"q{n}"} for n in range(200)]), "200 test cases"),
    ],
)
def test_csv_and_json_rows_over_the_limit_are_refused(tmp_path, target, name, text, found):
    url, calls = target
    suite = tmp_path / name
    suite.write_text(text)
    result = _run(suite, url, tmp_path / "out", EVALRUNNER_MAX_SUITE_ROWS="100")
    _refused(
        result,
        tmp_path / "out",
        calls,
        name,
        found,
        "limit of 100 rows",
        "EVALRUNNER_MAX_SUITE_ROWS",
    )


def test_a_json_suite_nested_100000_deep_is_refused_not_a_traceback(tmp_path, target):
    url, calls = target
    suite = bombs.deep_json(tmp_path / "deep.json", 100_000)
    result = _run(suite, url, tmp_path / "out")
    _refused(result, tmp_path / "out", calls, "deep.json", "more than 64 levels deep")


def test_json_nested_below_the_recursion_limit_but_past_the_limit_is_refused(tmp_path):
    """Deep enough to parse, too deep to be walked safely afterwards."""
    with pytest.raises(Exception, match="more than 64 levels deep") as caught:
        read_suite_file(bombs.deep_json(tmp_path / "deep.json", 500))
    assert type(caught.value).__name__ == "SuiteError"


def test_a_cell_nested_deep_is_text_not_a_crash(tmp_path):
    """A JSON-looking list cell too deep to parse is read as text, as other invalid JSON is."""
    suite = read_suite_file(bombs.deep_cell_csv(tmp_path / "deep.csv", 5000))
    assert suite.cases[0].expected_contexts is not None


def test_a_bad_limit_setting_is_named(tmp_path, target):
    url, _ = target
    suite = bombs.xlsx_rows(tmp_path / "rows.xlsx", 5)
    result = _run(suite, url, tmp_path / "out", EVALRUNNER_MAX_SUITE_ROWS="lots")
    assert result.exit_code == 2
    assert "EVALRUNNER_MAX_SUITE_ROWS='lots' is not a whole number" in result.output
