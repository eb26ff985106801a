"""Nothing fails silently (issue 27, item 8): a baseline set that fails its manifest check
is named ("baseline ... ignored: its manifest does not match") in the output, the report
and problems.json, and ``--fail-on-regression`` with no verifiable baseline says so in the
output and the report, instead of passing as if it had checked."""

from __future__ import annotations

import json
from pathlib import Path

import xmlschema
from typer.testing import CliRunner

from evalrunner.cli import app
from tests.support.loopback_http import Loopback

runner = CliRunner()
JUNIT_XSD = Path(__file__).parents[1] / "data" / "junit-10.xsd"


def run(tmp_path: Path, url: str, *extra: str):
    suite = tmp_path / "s.csv"
    suite.write_text("question,expected_answer\nHow many days?,25 days\nAnd sick?,10\n", "utf-8")
    return runner.invoke(
        app,
        [
            "run",
            "--suite",
            str(suite),
            "--target",
            json.dumps({"url": url, "name": "checked"}),
            "--metric",
            "Token F1",
            "--out",
            str(tmp_path / "out"),
            "--quiet",
            # a case below its threshold does not fail these runs: only the baseline is tested
            "--fail-on",
            "errors",
            *extra,
        ],
    )


def sets(tmp_path: Path) -> list[Path]:
    """summary.json of each set."""
    return sorted((tmp_path / "out" / "test-reports" / "checked").glob("*summary.json"))


def flat(text: str) -> str:
    return " ".join(text.split())


def test_an_altered_baseline_is_named_and_the_regression_gate_says_it_checked_nothing(
    tmp_path,
):
    with Loopback() as server:
        server.always(200, {"answer": "25 days"})
        first = run(tmp_path, f"{server.url}/ask")
        assert first.exit_code == 0, first.output
        (baseline,) = sets(tmp_path)
        # Someone edits the baseline's summary by hand: it no longer matches its manifest.
        summary = json.loads(baseline.read_text("utf-8"))
        summary["gates_passed"] = not summary["gates_passed"]
        baseline.write_text(json.dumps(summary), "utf-8")
        prefix = baseline.relative_to(tmp_path / "out").as_posix()[: -len("summary.json")]

        second = run(tmp_path, f"{server.url}/ask", "--fail-on-regression")
    assert second.exit_code == 0, second.output
    output = flat(second.output)
    assert f"baseline {prefix} ignored: its manifest does not match" in output
    assert "--fail-on-regression: no verifiable baseline" in output

    (newer,) = [p for p in sets(tmp_path) if p != baseline]
    latest = json.loads(newer.read_text("utf-8"))
    assert latest["regression"] is None
    out = tmp_path / "out"
    problems = json.loads((out / latest["reports"]["problems"]).read_text("utf-8"))
    assert any(p["type"] == "baseline_ignored" and prefix in p["description"] for p in problems), (
        problems
    )
    html = flat((out / latest["reports"]["html"]).read_text("utf-8"))
    assert f"baseline {prefix} ignored: its manifest does not match" in html
    assert "no verifiable baseline" in html


def test_a_first_run_under_fail_on_regression_says_there_was_nothing_to_compare(tmp_path):
    markdown, junit = tmp_path / "summary.md", tmp_path / "junit.xml"
    with Loopback() as server:
        server.always(200, {"answer": "25 days"})
        result = run(
            tmp_path,
            f"{server.url}/ask",
            "--fail-on-regression",
            "--markdown",
            str(markdown),
            "--junit-xml",
            str(junit),
        )
    assert result.exit_code == 0, result.output  # a first run in CI passes
    note = "--fail-on-regression: no verifiable baseline (no earlier complete run"
    # a note of the run's one verdict: the terminal's verdict lines, summary.json, Markdown and
    # JUnit all carry it, as the report does
    assert f"note: {note}" in flat(result.output)
    (summary,) = sets(tmp_path)
    latest = json.loads(summary.read_text("utf-8"))
    assert any(n.startswith(note) for n in latest["verdict"]["notes"]), latest["verdict"]
    assert note in flat(markdown.read_text("utf-8"))
    assert note in flat(junit.read_text("utf-8"))  # the run verdict testcase's system-out
    xmlschema.XMLSchema(JUNIT_XSD).validate(junit.read_text("utf-8"))
    html = tmp_path / "out" / latest["reports"]["html"]
    assert "Not compared with an earlier run: no verifiable baseline" in flat(
        html.read_text("utf-8")
    )


def test_a_run_without_the_regression_gate_has_no_baseline_note_in_its_verdict(tmp_path):
    with Loopback() as server:
        server.always(200, {"answer": "25 days"})
        result = run(tmp_path, f"{server.url}/ask")
    assert result.exit_code == 0, result.output
    (summary,) = sets(tmp_path)
    notes = json.loads(summary.read_text("utf-8"))["verdict"]["notes"]
    assert not any("baseline" in n for n in notes), notes
