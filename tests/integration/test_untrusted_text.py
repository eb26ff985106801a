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
        "fail_on": "errors",  # the answers need not be right: the text's way through is tested
        **extra,
    }
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    out = tmp_path / "out"
    # no pre-flight: these hostile targets are to be recorded case by case, not refused
    args = ["start", "--event", str(path), "--out", str(out), "--json", "--no-preflight"]
    result = runner.invoke(app, args, catch_exceptions=False)
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


def test_a_huge_answer_is_cut_to_max_text_chars_and_every_report_stays_valid(tmp_path):
    suite = tmp_path / "s.csv"
    suite.write_text("id,question,expected_answer\nq1,Hello?,Hello there\n", encoding="utf-8")
    body = json.dumps({"answer": "Hello there. " * 1000}).encode()  # 13,000 characters
    with serve(body) as (url, _):
        out = tmp_path / "out"
        result = runner.invoke(
            app,
            [
                "run",
                "--suite",
                str(suite),
                "--target",
                json.dumps({"url": url}),
                "--out",
                str(out),
                "--quiet",
                "--max-text-chars",
                "1000",
                "--fail-on",
                "errors",
            ],
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.output
    (row,) = reports_are_valid(out)
    assert row["status"] == "ok" and row["truncated"] == "true"
    assert len(row["answer"]) == 1000
    assert "answer has 13,000 characters; the first 1,000 were kept" in row["notes"]


def test_a_trickling_target_is_recorded_as_a_timeout_and_an_oversized_one_refused(tmp_path):
    suite = tmp_path / "s.csv"
    suite.write_text("id,question,expected_answer\nq1,Hello?,Hello there\n", encoding="utf-8")
    slow = json.dumps({"answer": "Hello there, one byte at a time."}).encode()
    with serve(slow, trickle_every=0.2) as (url, served):
        _, out, output = start(
            tmp_path, suite, {"url": url, "timeout_seconds": 1, "max_retries": 0}
        )
    (row,) = reports_are_valid(out)
    assert row["status"] == "target_error", output
    assert (
        "did not answer within timeout_seconds=1 (connect, send and the whole body"
        in (row["error"])
    )
    problems = json.loads(next(out.rglob("*problems.json")).read_text("utf-8"))
    assert "target_timeouts" in json.dumps(problems)
    assert served.sent and served.sent[0] < len(slow)

    big = json.dumps({"answer": "x" * (2 * 1024 * 1024)}).encode()
    with serve(big) as (url, _):
        second = tmp_path / "second"
        second.mkdir()
        copy = second / suite.name
        copy.write_bytes(suite.read_bytes())
        _, out, output = start(second, copy, {"url": url, "max_retries": 0})
    (row,) = reports_are_valid(out)
    assert row["status"] == "target_error"
    assert "larger than max_response_bytes=1,048,576 bytes" in row["error"]


def test_escapes_in_a_json_cell_of_a_csv_suite_are_replaced_once_parsed(tmp_path):
    """A list cell written as a JSON array is clean text until it is parsed: its
    ``\\ud800`` and ``\\u0000`` escapes become a lone surrogate and a NUL only then, so they
    are cleaned after parsing too (the manifest could not be written: the run crashed)."""
    suite = tmp_path / "s.csv"
    contexts = '"[""Leave is 25 days."", ""Sick\\ud800 leave\\u0000 is 10 days.""]"'
    conversation = '"[{""role"": ""user"", ""content"": ""Hi\\udfff""}]"'
    suite.write_text(
        "id,question,expected_answer,actual_answer,retrieved_contexts,conversation\n"
        f"q1,How many leave days?,25 days,25 days,{contexts},{conversation}\n"
        "q2,How many sick days?,10 days,10 days,[],\n",
        encoding="utf-8",
    )
    code, out, output = start(tmp_path, suite, {"logged": "hr"})
    assert code == 0, output
    rows = reports_are_valid(out)
    assert [r["status"] for r in rows] == ["ok", "ok"]
    notes = rows[0]["notes"]
    assert "column retrieved_contexts: 1 control character, 1 lone surrogate" in notes
    assert "column conversation: 1 lone surrogate" in notes
    assert rows[0]["sanitized"] == "true" and rows[1]["sanitized"] == "false"
    assert json.loads(rows[0]["contexts"]) == [
        "Leave is 25 days.",
        "Sick\ufffd leave\ufffd is 10 days.",
    ]
