"""Issue 34 item 3: ``evalrunner promote RUN --worst N --to suite.xlsx|.jsonl`` writes a
monitor run's worst interactions as regression cases (the question, the production answer as
a candidate expected answer flagged for review), and ``evalrunner run`` reads the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.monitor.promote import REVIEW
from evalrunner.suite.readers import read_suite_file
from tests.support.loopback_http import serve

runner = CliRunner()
LOOPING = "Please check the policy. " * 12


def records() -> list[dict[str, str]]:
    base = {"timestamp": "2026-01-31T10:00:00Z", "contexts": "Leave: 25 days."}
    return [
        {**base, "id": "fine", "question": "How many days of leave?", "answer": "25 days."},
        {**base, "id": "leaks", "question": "Who runs payroll?", "answer": "Mail ann@corp.io."},
        {**base, "id": "loops", "question": "=SUM(A1) leave?", "answer": LOOPING},
        {**base, "id": "also-fine", "question": "Sick days?", "answer": "10 days a year."},
    ]


@pytest.fixture
def scored(tmp_path: Path) -> Path:
    log = tmp_path / "prod.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records()), "utf-8")
    out = tmp_path / "out"
    args = ["monitor", str(log), "--out", str(out), "--quiet", "--no-mask-pii"]
    args += ["--metric", "PII leakage", "--metric", "Looping detection", "--fail-on", "never"]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("suffix", [".jsonl", ".xlsx"])
def test_the_worst_become_cases_run_can_read(scored: Path, tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"regressions{suffix}"
    folder = scored / "test-reports" / "monitor-prod.jsonl"
    args = ["promote", str(folder), "--worst", "2", "--to", str(target), "--out", str(scored)]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    suite = read_suite_file(target)
    ids = [c.case_id for c in suite.cases]
    assert sorted(ids) == ["promoted-leaks", "promoted-loops"]  # the two fine ones are not
    first, second = (c.metadata["failed_metrics"].split(", ") for c in suite.cases)
    assert len(first) >= len(second)  # the most metrics failed first
    leaks, loops = sorted(suite.cases, key=lambda c: c.case_id)
    assert leaks.question == "Who runs payroll?"
    assert leaks.expected_answer is None  # never pinned as right
    assert leaks.metadata["candidate_expected_answer"] == "Mail ann@corp.io."
    assert leaks.metadata["review"] == REVIEW
    assert "PII in answer" in leaks.metadata["failed_metrics"]
    assert loops.metadata["candidate_expected_answer"].strip() == LOOPING.strip()
    if suffix == ".jsonl":
        assert loops.question == "=SUM(A1) leave?"
    else:  # a formula-like cell is written as text a spreadsheet will not run
        assert loops.question == "'=SUM(A1) leave?"
    body = json.dumps({"answer": "25 days."}).encode()
    with serve(body) as (url, served):
        args = ["run", "--suite", str(target), "--target", json.dumps({"url": url})]
        args += ["--out", str(tmp_path / "again"), "--quiet", "--no-preflight"]
        args += ["--metric", "PII leakage", "--fail-on", "errors"]
        result = runner.invoke(app, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert served.requests == 2


def test_promote_refuses_what_it_cannot_write(scored: Path, tmp_path: Path) -> None:
    folder = scored / "test-reports" / "monitor-prod.jsonl"
    result = runner.invoke(app, ["promote", str(folder), "--to", str(tmp_path / "x.csv")])
    assert result.exit_code == 2 and "write an .xlsx or a .jsonl suite" in result.output
    result = runner.invoke(app, ["promote", "no-such-run", "--to", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 2 and "no finished run with that id" in result.output


def test_fewer_failing_than_asked_promotes_only_the_failing_and_says_so(
    scored: Path, tmp_path: Path
) -> None:
    folder = scored / "test-reports" / "monitor-prod.jsonl"
    target = tmp_path / "regressions.jsonl"
    args = ["promote", str(folder), "--worst", "4", "--to", str(target), "--out", str(scored)]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    ids = sorted(c.case_id for c in read_suite_file(target).cases)
    assert ids == ["promoted-leaks", "promoted-loops"]  # the two passing ones are not promoted
    assert "only 2 of the 4 scored case(s) failed" in " ".join(result.output.split())

    # asked for explicitly, the closest passing ones fill the rest, worst first after the failing
    args += ["--include-passing"]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    cases = read_suite_file(target).cases
    assert [c.case_id for c in cases][:2] in (
        ["promoted-leaks", "promoted-loops"],
        ["promoted-loops", "promoted-leaks"],
    )
    assert len(cases) == 4 and not cases[3].metadata.get("failed_metrics")


def test_a_run_where_nothing_failed_promotes_nothing(tmp_path: Path) -> None:
    log = tmp_path / "prod.jsonl"
    fine = [r for r in records() if r["id"] in ("fine", "also-fine")]
    log.write_text("".join(json.dumps(r) + "\n" for r in fine), "utf-8")
    out = tmp_path / "out"
    args = ["monitor", str(log), "--out", str(out), "--quiet", "--no-mask-pii"]
    args += ["--metric", "PII leakage", "--metric", "Looping detection", "--fail-on", "never"]
    assert runner.invoke(app, args, catch_exceptions=False).exit_code == 0
    target = tmp_path / "regressions.jsonl"
    folder = out / "test-reports" / "monitor-prod.jsonl"
    result = runner.invoke(
        app, ["promote", str(folder), "--worst", "3", "--to", str(target), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert not target.exists()
    assert "no case failed" in " ".join(result.output.split())
