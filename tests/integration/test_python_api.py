"""evalrunner.evaluate(): the CLI's run as a Python call, with Python suites and targets."""

from __future__ import annotations

import json
import math
import socket
from pathlib import Path

import pandas as pd
import pytest
from bs4 import BeautifulSoup
from typer.testing import CliRunner

import evalrunner
from evalrunner.cli import app
from evalrunner.demo.suite import demo_suite_path
from evalrunner.errors import EventError, SuiteError
from evalrunner.pipeline.context import Runtime
from evalrunner.reports.views.notebook import render_notebook
from lambdas.local import local_pipeline

from .conftest import read_csv

pytestmark = pytest.mark.slow


def _number(cell: str) -> float | None:
    return float(cell) if cell != "" else None


def test_evaluate_on_the_demo_suite_gives_the_demo_commands_numbers(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALRUNNER_DEMO_DEGRADED", raising=False)
    cli = CliRunner().invoke(app, ["demo", "--out", str(tmp_path / "cli"), "--json"])
    expected = json.loads(cli.output)
    # some demo answers fail ROUGE-L: the default policy fails the run, in the CLI and here
    assert cli.exit_code == 1 == expected["verdict"]["exit_code"], cli.output

    run = evalrunner.evaluate(
        suite=demo_suite_path(), target={"lambdaArn": "evalrunner-demo-hr"}, out=tmp_path / "api"
    )

    assert not run.passed and run.verdict.outcome == expected["verdict"]["outcome"] == "failed"
    assert run.verdict.reasons == expected["verdict"]["reasons"]
    assert run.summary.cases == expected["cases"] == 27
    got = {m.metric: (m.average, m.pass_rate, m.count, m.skipped) for m in run.summary.metrics}
    want = {
        m["metric"]: (m["average"], m["pass_rate"], m["count"], m["skipped"])
        for m in expected["metrics"]
    }
    assert got == want
    # the DataFrames hold the CSVs' numbers, cell for cell
    cli_set = tmp_path / "cli" / expected["reports"]["details"]
    cli_rows = {(r["case_id"], r["iteration"]): r for r in read_csv(cli_set)}
    details = run.details
    assert len(details) == len(cli_rows) == 27
    score_columns = [c for c in details.columns if c.endswith(" score")]
    assert "ROUGE-L score" in score_columns
    for _, row in details.iterrows():
        cli_row = cli_rows[(row["case_id"], str(row["iteration"]))]
        assert row["answer"] == cli_row["answer"]
        for column in score_columns:
            mine, theirs = row[column], _number(cli_row[column])
            if theirs is None:
                assert mine is None or (isinstance(mine, float) and math.isnan(mine))
            else:
                assert mine == pytest.approx(theirs, abs=5e-5), column
    results = run.results.set_index(["Metric", "Iteration"])
    for m in expected["metrics"]:
        average = results.loc[(m["metric"], "all"), "Average Score"]
        if m["average"] is None:
            assert average is None or math.isnan(average)
        else:
            assert average == pytest.approx(m["average"])
    assert run.report_path.is_file() and run.report_path.name.endswith("report.html")


def test_a_python_function_is_a_target_with_no_server(tmp_path):
    asked: list[tuple[str, list]] = []

    def hr_bot(question, conversation):
        asked.append((question, conversation))
        if "explode" in question:
            raise RuntimeError("the bot failed on purpose")
        if "leave" in question:
            return {"answer": "You get 25 days of leave.", "contexts": ["Leave policy: 25 days."]}
        return "I do not know.", ["nothing relevant"]

    suite = pd.DataFrame(
        [
            {"question": "How many days of leave?", "expected_answer": "25 days of leave."},
            {"question": "What is the pension match?", "expected_answer": "6 percent."},
            {"question": "Please explode", "expected_answer": None},
        ]
    )
    run = evalrunner.evaluate(
        suite=suite, target=hr_bot, metrics=["Rouge Metric"], out=tmp_path, suite_name="bot"
    )

    assert sorted(q for q, _ in asked) == sorted(suite["question"])
    assert all(conv == [] for _, conv in asked)
    assert run.summary.target == "hr_bot" and run.summary.suite.endswith("bot.json")
    details = run.details.set_index("question")
    assert details.loc["How many days of leave?", "answer"] == "You get 25 days of leave."
    assert json.loads(details.loc["How many days of leave?", "contexts"]) == [
        "Leave policy: 25 days."
    ]
    assert details.loc["What is the pension match?", "contexts"] == '["nothing relevant"]'
    # the failing case is recorded with its error; the others are scored
    assert details.loc["Please explode", "status"] == "target_error"
    assert "failed on purpose" in details.loc["Please explode", "error"]
    assert run.summary.answered == 2
    assert details.loc["How many days of leave?", "ROUGE-L score"] > 0.5
    assert set(run.results["Metric"]) == {"ROUGE-1", "ROUGE-2", "ROUGE-L"}


def test_a_list_of_dicts_suite_and_a_plain_answer(tmp_path):
    run = evalrunner.evaluate(
        suite=[{"question": "Say hi", "expected_answer": "hi"}],
        target=lambda q: "hi",
        metrics=["Exact match"],
        fail_under={"Exact match": 0.5},
        out=tmp_path,
    )
    assert run.passed and run.summary.target == "python-lambda"
    assert '<testcase name="case-0001 · Exact match"' in run.junit_xml().decode()
    assert run.markdown().startswith("## evalrunner: ✅ PASSED: python-lambda on ")
    assert run.metric("Exact match") == 1.0
    with pytest.raises(KeyError, match="no metric 'BLEU-4'"):
        run.metric("BLEU-4")


def test_evaluate_takes_the_policy_and_the_run_says_its_verdict(tmp_path):
    suite = [
        {"question": "Say hi", "expected_answer": "hi"},
        {"question": "Say bye", "expected_answer": "bye"},
    ]
    strict = evalrunner.evaluate(
        suite=suite, target=lambda q: "hi", metrics=["Exact match"], out=tmp_path / "a"
    )
    # by default a case below its threshold fails the run, as the CLI's exit 1
    assert not strict.passed and strict.verdict.outcome == "failed"
    assert strict.verdict.reasons == [
        "Exact match: 1 of 2 scored cases below the threshold 0.5 (average 0.500)"
    ]
    assert "FAILED" in repr(strict)
    lenient = evalrunner.evaluate(
        suite=suite,
        target=lambda q: "hi",
        metrics=["Exact match"],
        out=tmp_path / "b",
        fail_on="regressions",
    )
    assert lenient.passed and lenient.verdict.policy.fail_on == "regressions"
    below, unchecked = lenient.verdict.notes
    assert below.endswith("(not failing: fail_on is regressions)")
    # a first run has no baseline: the regression gate says it had nothing to check
    assert unchecked.startswith("fail_on: regressions: no verifiable baseline (no earlier")
    with pytest.raises(EventError, match="fail_on: 'sometimes' is not one of failures"):
        evalrunner.evaluate(suite=suite, target=lambda q: "hi", out=tmp_path, fail_on="sometimes")


def test_notebook_view_renders_the_run(tmp_path):
    run = evalrunner.evaluate(
        suite=[{"question": "Say hi", "expected_answer": "hi"}],
        target=lambda q: "hello there",
        metrics=["Exact match", "Rouge Metric"],
        fail_under={"Exact match": 0.5},
        out=tmp_path,
    )
    page = BeautifulSoup(run._repr_html_(), "html.parser")
    assert not run.passed
    assert page.find("strong").get_text() == "FAILED"
    rows = page.select("table.evalrunner-metrics tbody tr")
    assert [r.find("td").get_text() for r in rows] == [m.metric for m in run.summary.metrics]
    exact = next(r for r in rows if r.find("td").get_text() == "Exact match")
    assert [td.get_text() for td in exact.find_all("td")][2:4] == ["0.000", "0%"]
    assert "gate Exact match >= 0.5: 0.000 FAIL" in page.select_one("ul.evalrunner-gates").text
    assert page.find("a")["href"] == run.report_path.resolve().as_uri()


def test_notebook_view_escapes_run_text(tmp_path):
    run = evalrunner.evaluate(
        suite=[{"question": "q", "expected_answer": "a"}],
        target=lambda q: "a",
        metrics=["Exact match"],
        out=tmp_path,
    )
    hostile = run.summary.model_copy(update={"target": "<script>alert(1)</script>"})
    html = render_notebook(hostile, run.report_path)
    assert "<script>" not in html and "&lt;script&gt;" in html


@pytest.mark.parametrize(
    ("suite", "target", "error", "message"),
    [
        ([{"question": "ok"}, "not a row"], {"url": "http://x"}, SuiteError, "row 2"),
        ({"question": "q"}, {"url": "http://x"}, SuiteError, "not a suite"),
        ([], {"url": "http://x"}, SuiteError, "no cases"),
        ([{"question": "q"}], 42, EventError, "not a target"),
        ([{"question": "q"}], "nonsense", EventError, "neither valid JSON nor a readable"),
        ([{"question": "q"}], "[1, 2]", EventError, "not a target object"),
        (Path("no/such/suite.xlsx"), {"url": "http://x"}, SuiteError, "does not exist"),
        ([{"expected_answer": "a"}], lambda q: q, SuiteError, "question"),
    ],
)
def test_bad_input_is_refused_before_anything_runs(tmp_path, suite, target, error, message):
    out = tmp_path / "out"
    with pytest.raises(error, match=message):
        evalrunner.evaluate(suite=suite, target=target, out=out)
    assert not out.exists()


def test_bad_iterations_are_refused(tmp_path):
    with pytest.raises(EventError, match="iterations"):
        evalrunner.evaluate(suite=[{"question": "q"}], target=lambda q: q, iterations=0)


def test_start_aws_runs_on_the_deployed_machine_and_returns_the_run(tmp_path, monkeypatch):
    """moto stands in for the account, as in the CLI's --aws test."""
    import boto3

    from evalrunner.engine.dispatch import Dispatcher, dispatching
    from evalrunner.engine.embedded import BUCKET
    from evalrunner.engine.local import LocalEngine

    # The deployed functions' environment (the stack sets both; the engine sets neither).
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("EVALRUNNER_BUCKET", BUCKET)

    suite = tmp_path / "hr.csv"
    suite.write_text("question,expected_answer\nHow many sick days?,10 days\n", "utf-8")
    event = {
        "key": "test-suites/hr.csv",
        "iterations": 1,
        "target": {"lambdaArn": "evalrunner-demo-hr"},
        "metrics": ["Rouge Metric"],
    }
    engine = LocalEngine(pipeline=local_pipeline)
    with engine.embedded_aws(), dispatching(Dispatcher(engine.functions_for(Runtime()))):
        engine.deploy(b"placeholder", "test-suites/other.csv")
        arn = boto3.client("stepfunctions").list_state_machines()["stateMachines"][0][
            "stateMachineArn"
        ]
        run = evalrunner.start_aws(
            event,
            bucket=BUCKET,
            state_machine_arn=arn,
            suite=suite,
            out=tmp_path / "out",
            poll_seconds=0.1,
        )
    assert run.summary.cases == 1 and run.summary.target == "evalrunner-demo-hr"
    assert run.report_path.is_file()
    assert list(run.details["question"]) == ["How many sick days?"]
    history = tmp_path / "out" / "test-reports" / "evalrunner-demo-hr" / "history.json"
    assert json.loads(history.read_text("utf-8"))["runs"][0]["run_id"] == run.summary.run_id


def test_start_aws_refuses_a_bad_event_before_calling_aws(tmp_path):
    with pytest.raises(EventError, match="iterations"):
        evalrunner.start_aws(
            {"key": "test-suites/x.csv", "target": {"url": "http://x"}},
            bucket="b",
            state_machine_arn="arn:aws:states:us-east-1:123456789012:stateMachine:x",
            out=tmp_path / "out",
        )
    assert not (tmp_path / "out").exists()


def test_a_dead_target_stops_evaluate_before_the_suite_unless_preflight_is_off(tmp_path):
    from evalrunner.preflight import PreflightFailed

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    rows = [
        {"question": "Say hi", "expected_answer": "hi"},
        {"question": "Again", "expected_answer": "hi"},
    ]
    target = {"url": f"http://127.0.0.1:{port}/ask", "max_retries": 0}
    with pytest.raises(PreflightFailed) as info:
        evalrunner.evaluate(suite=rows, target=target, metrics=["Exact match"], out=tmp_path)
    assert info.value.what == "target" and "nothing is listening" in info.value.message
    assert not list(tmp_path.rglob("*summary.json"))  # nothing ran
    run = evalrunner.evaluate(
        suite=rows, target=target, metrics=["Exact match"], out=tmp_path, preflight=False
    )
    assert run.summary.items == 2 and run.summary.answered == 0 and not run.passed
