"""One verdict, everywhere it is read: each scenario (a clean pass, cases below threshold, a
failed gate, a regression with and without --fail-on-regression, the judge down, the target
down, a stopped run) is run once through the CLI, and every surface (the exit code, the
terminal, summary.json, report.html's banner, the Markdown summary, JUnit XML, the history
entry, ``EvalRun.passed`` and the pytest plugin's run-verdict item) must say the same thing."""

from __future__ import annotations

import json
import socket
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from typer.testing import CliRunner

from evalrunner.api.result import EvalRun
from evalrunner.cli import app
from evalrunner.engine.run_types import RunResult
from evalrunner.reports.summary import RunSummary
from evalrunner.reports.verdict import EXIT_CODES, HEADLINES, Outcome

from .test_engine_stall import kill_worker_at

pytestmark = [
    pytest.mark.slow,
    # the stopped run's simulated crash is an uncaught exception in an interpreter thread
    pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning"),
]

CASES = 8
SUITE = "id,question,expected_answer\n" + "".join(
    f"c{i},Question {i}?,The answer is number {i} today.\n" for i in range(CASES)
)


def number(event: dict[str, Any]) -> str:
    return str(event["question"].split()[1].rstrip("?"))


def right(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"answer": f"The answer is number {number(event)} today.", "contexts": ["policy"]}


def one_wrong(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if number(event) == "0":
        return {"answer": "No idea, sorry.", "contexts": ["policy"]}
    return right(event, context)


def half(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Every answer about half right: Token F1 near 0.6, below 1 on every case."""
    return {"answer": f"number {number(event)}", "contexts": ["policy"]}


def down(event: dict[str, Any], context: Any) -> dict[str, Any]:
    raise RuntimeError("the target is down")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


LOW = ("--threshold", "Token F1=0.05")  # every case passes; only the average can move


@dataclass(frozen=True)
class Scenario:
    #: (target function, extra options) per run, the last one judged; earlier runs are the
    #: baseline
    runs: tuple[tuple[Any, tuple[str, ...]], ...]
    expected: Outcome
    stop_at: int | None = None  # the run is stopped after this many cases


def dead_judge() -> tuple[str, ...]:
    judge = {
        "openai": {"base_url": f"http://127.0.0.1:{closed_port()}/v1", "model": "m"},
        "max_retries": 0,
        "cache": False,
    }
    # --no-preflight: the judge goes down once the run is under way (the pre-flight would
    # stop a run whose judge is down from the start with exit 5 and no reports)
    return ("--metric", "Faithfulness", "--judge", json.dumps(judge), "--no-preflight")


SCENARIOS = {
    "clean pass": Scenario(((right, ()),), Outcome.PASSED),
    "below threshold": Scenario(((one_wrong, ()),), Outcome.FAILED),
    "gate failed": Scenario(((half, (*LOW, "--fail-under", "Token F1=0.99")),), Outcome.FAILED),
    "regression, no flag": Scenario(((right, LOW), (half, LOW)), Outcome.PASSED),
    "regression, --fail-on-regression": Scenario(
        ((right, LOW), (half, (*LOW, "--fail-on-regression"))), Outcome.REGRESSED
    ),
    "judge down": Scenario(((right, dead_judge()),), Outcome.NOT_MEASURED),
    "target down": Scenario(((down, ("--no-preflight",)),), Outcome.NOT_MEASURED),
    "partial": Scenario(((right, ()),), Outcome.PARTIAL, stop_at=3),
}

SURFACES = [
    "exit code",
    "terminal",
    "summary.json",
    "report.html",
    "markdown",
    "junit",
    "history",
    "EvalRun",
    "pytest plugin",
]


@dataclass
class Observed:
    exit_code: int
    output: str
    summary: RunSummary
    summary_json: dict[str, Any]
    out: Path
    junit: Path
    markdown: Path


def run_scenario(scenario: Scenario, folder: Path) -> Observed:
    from evalrunner.engine import local

    suite = folder / "verdict.csv"
    suite.write_text(SUITE, encoding="utf-8")
    out, junit, markdown = folder / "out", folder / "junit.xml", folder / "summary.md"
    result = None
    for index, (function, options) in enumerate(scenario.runs):
        last = index == len(scenario.runs) - 1
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(local, "local_target_functions", lambda f=function: {"bot": f})
            if last and scenario.stop_at is not None:
                kill_worker_at(patch, scenario.stop_at)
            result = CliRunner().invoke(
                app,
                [
                    "run",
                    "--suite",
                    str(suite),
                    "--target",
                    '{"lambdaArn": "bot"}',
                    "--metric",
                    "Token F1",
                    "--max-concurrency",
                    "1",
                    "--out",
                    str(out),
                    "--quiet",
                    *(("--junit-xml", str(junit), "--markdown", str(markdown)) if last else ()),
                    *options,
                ],
            )
    assert result is not None
    # the last run's (two runs in one second are stamped 123456- and 123456-2-)
    newest = max(
        (out / "test-reports" / "bot").glob("*-summary.json"), key=lambda p: p.stat().st_mtime_ns
    )
    raw = json.loads(newest.read_text("utf-8"))
    return Observed(
        exit_code=result.exit_code,
        output=result.output,
        summary=RunSummary.model_validate(raw),
        summary_json=raw,
        out=out,
        junit=junit,
        markdown=markdown,
    )


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Observed]:
    return {
        name: run_scenario(scenario, tmp_path_factory.mktemp("verdict"))
        for name, scenario in SCENARIOS.items()
    }


def eval_run(seen: Observed) -> EvalRun:
    """The run as the Python API hands it over (``evaluate`` wraps the same RunResult)."""
    return EvalRun(
        RunResult(summary=seen.summary, execution_arn="", definition="", out_dir=seen.out)
    )


def outcome_of_surface(surface: str, seen: Observed) -> Outcome:
    """The outcome ``surface`` shows for the run, read the way its reader reads it."""
    if surface == "exit code":
        codes = {code: o for o, code in EXIT_CODES.items() if o is not Outcome.REGRESSED}
        if seen.exit_code == 1:  # failed and regressed share exit 1: the terminal tells them
            return (
                Outcome.REGRESSED
                if f"verdict: {HEADLINES[Outcome.REGRESSED]}" in seen.output
                else Outcome.FAILED
            )
        return codes[seen.exit_code]
    if surface == "terminal":
        if seen.summary.partial:  # the error line says how to resume; the verdict line follows
            assert f"--resume {seen.summary.run_id}" in seen.output, seen.output
        (line,) = [x for x in seen.output.splitlines() if x.startswith("verdict: ")]
        headline = line.removeprefix("verdict: ").split(" (exit code")[0]
        return {h: o for o, h in HEADLINES.items()}[headline]
    if surface == "summary.json":
        return Outcome(seen.summary_json["verdict"]["outcome"])
    if surface == "report.html":
        html = (seen.out / seen.summary.reports.html).read_text("utf-8")
        banner = BeautifulSoup(html, "html.parser").find(id="verdict")
        return {h: o for o, h in HEADLINES.items()}[banner.get_text()]
    if surface == "markdown":
        text = seen.markdown.read_text("utf-8")  # written for every outcome, a stopped run's too
        assert text == eval_run(seen).markdown()  # and what the API writes on demand
        first = text.splitlines()[0]
        passed = first.startswith("## evalrunner: ✅ ")
        headline = first.split(" ", 3)[3].split(":")[0]
        outcome = {h: o for o, h in HEADLINES.items()}[headline]
        assert passed == (outcome is Outcome.PASSED), first
        return outcome
    if surface == "junit":
        document = seen.junit.read_bytes()  # written for every outcome, a stopped run's too
        suite = ET.fromstring(document).find("testsuite")
        assert suite is not None
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        (case,) = [c for c in suite.iter("testcase") if c.get("name") == "run verdict"]
        failed = case.find("failure") is not None
        outcome = Outcome(str(props["verdict"]))
        assert failed == (outcome is not Outcome.PASSED)
        assert int(str(props["exit_code"])) == EXIT_CODES[outcome]
        return outcome
    if surface == "history":
        history = json.loads((seen.out / "test-reports" / "bot" / "history.json").read_text())
        entry = next(r for r in history["runs"] if r["run_id"] == seen.summary.run_id)
        return Outcome(entry["outcome"])
    if surface == "EvalRun":
        run = eval_run(seen)
        assert run.passed == (run.verdict.outcome is Outcome.PASSED)
        return run.verdict.outcome
    if surface == "pytest plugin":
        from evalrunner.pytest_plugin import run_failure

        failure = run_failure(eval_run(seen))
        if failure is None:
            return Outcome.PASSED
        return {h: o for o, h in HEADLINES.items()}[failure.splitlines()[0]]
    raise AssertionError(surface)


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_surface_shows_the_one_verdict(
    observed: dict[str, Observed], scenario: str, surface: str
) -> None:
    seen = observed[scenario]
    expected = SCENARIOS[scenario].expected
    assert seen.summary.verdict.outcome is expected, seen.output
    assert outcome_of_surface(surface, seen) is expected, seen.output


def test_the_verdicts_say_why(observed: dict[str, Observed]) -> None:
    """The reasons name what decided each outcome (and a regression that does not fail the
    run is still named, as a note with the flag that would make it fail)."""

    def verdict(name: str) -> Any:
        return observed[name].summary.verdict

    assert verdict("clean pass").reasons == [] and verdict("clean pass").notes == []
    assert verdict("below threshold").reasons == [
        "Token F1: 1 of 8 scored cases below the threshold 0.75 (average 0.875)"
    ]
    assert verdict("gate failed").failed_gates == ["Token F1"]
    assert not verdict("gate failed").below_threshold  # the gate alone failed it
    notes = verdict("regression, no flag").notes
    assert len(notes) == 1, notes
    (note,) = notes
    assert note.startswith("regression against run ") and "--fail-on-regression" in note
    assert verdict("regression, --fail-on-regression").regressed
    assert [e.metric for e in verdict("judge down").too_many_errors] == ["Faithfulness"]
    assert verdict("target down").reasons == [
        "no target call succeeded (8 tried): nothing was measured"
    ]
    assert "stopped before it finished" in verdict("partial").reasons[0]
