"""Untrusted text through the whole run: bad characters are replaced once where they enter,
the case is still scored, the replacement is noted, and every report stays valid."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
from typer.testing import CliRunner

from evalrunner.cli import app
from tests.support.loopback_http import serve

from .conftest import read_csv

runner = CliRunner()


def start(tmp_path: Path, suite: Path, target: dict, **extra) -> tuple[int, Path, str]:
    event = {
        "key": f"test-suites/{suite.name}",
        "iterations": 1,
        "target": target,
        "metrics": ["Rouge Metric", "Exact match"],
        **extra,
    }
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["start", "--event", str(path), "--out", str(out), "--json"], catch_exceptions=False
    )
    return result.exit_code, out, result.output


def reports_are_valid(out: Path) -> list[dict[str, str]]:
    """Every report parses; returns details.csv's rows."""
    for name in ("*summary.json", "*report.json", "*insights.json", "*problems.json"):
        for path in out.rglob(name):
            json.loads(path.read_text("utf-8"))
    workbook = openpyxl.load_workbook(next(out.rglob("*details.xlsx")), read_only=True)
    assert workbook.worksheets
    html = next(out.rglob("*report.html")).read_text("utf-8")
    assert "</html>" in html
    return read_csv(next(out.rglob("*details.csv")))


def test_a_lone_surrogate_in_an_http_answer_is_replaced_and_the_case_scored(tmp_path):
    suite = tmp_path / "s.csv"
    suite.write_text("id,question,expected_answer\nq1,Hello?,Hello there\n", encoding="utf-8")
    # json.dumps writes the lone surrogate as the escape "\ud800", as a real target would.
    body = json.dumps({"answer": "Hello \ud800 there\x00", "contexts": ["ctx \udfff"]})
    with serve(body.encode("ascii")) as (url, _):
        code, out, output = start(tmp_path, suite, {"url": url})
    assert code == 0, output
    (row,) = reports_are_valid(out)
    assert row["status"] == "ok", row["error"]
    assert row["answer"] == "Hello \ufffd there\ufffd"
    assert row["sanitized"] == "true" and row["truncated"] == "false"
    assert "answer: 1 control character, 1 lone surrogate replaced by U+FFFD" in row["notes"]
    assert "contexts: 1 lone surrogate" in row["notes"]
    assert row["ROUGE-L score"] not in ("", None)


def test_a_lone_surrogate_in_a_json_suite_is_replaced_and_the_run_finishes(tmp_path):
    suite = tmp_path / "s.json"
    cases = [
        {"id": "q1", "question": "How many sick days?\ud800", "expected_answer": "10 days"},
        {"id": "q2", "question": "How many leave days?", "expected_answer": "25\x07 days"},
    ]
    suite.write_text(json.dumps(cases), encoding="utf-8")  # ASCII with \ud800 escapes
    code, out, output = start(tmp_path, suite, {"lambdaArn": "evalrunner-demo-hr"})
    assert code == 0, output
    rows = reports_are_valid(out)
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert rows[0]["question"] == "How many sick days?\ufffd"
    assert "suite row 1" in rows[0]["notes"] and "question: 1 lone surrogate" in rows[0]["notes"]
    assert rows[1]["sanitized"] == "true" and "1 control character" in rows[1]["notes"]
