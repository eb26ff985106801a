"""The embedded engine runs the real ASL file end to end, keeps every case, writes reports."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import state_machines
from evalrunner.engine import LocalEngine
from evalrunner.errors import ExecutionFailed
from lambdas.local import local_pipeline

from .conftest import echo_target, read_csv

pytestmark = pytest.mark.slow


def event(**extra):
    base = {
        "key": "test-suites/mini.csv",
        "iterations": 2,
        "target": {"lambdaArn": "echo-target"},
        "metrics": ["Rouge Metric", "Exact match"],
    }
    base.update(extra)
    return base


@pytest.fixture(scope="module")
def two_iterations(tmp_path_factory):
    from .conftest import SUITE_CSV

    out = tmp_path_factory.mktemp("out")
    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"echo-target": echo_target})
    result = engine.run(
        event(fail_under={"Exact match": 0.9}), suite=SUITE_CSV.encode(), out_dir=out
    )
    return result


def test_runs_the_asl_file_itself(two_iterations):
    text = state_machines.test_runner_path().read_text("utf-8")
    assert "${RunCaseFunctionArn}" in text
    values = {p: "x" for p in state_machines.PLACEHOLDERS}
    # The executed definition is the file with its placeholders substituted, nothing else.
    executed = json.loads(two_iterations.definition)
    original = json.loads(text)
    assert executed.keys() == original.keys()
    assert list(executed["States"]) == [
        "Prepare",
        "RunCases",
        "ScoringPlan",
        "ChooseScoring",
        "ScoreOnBatch",
        "Score",
        "Aggregate",
    ]
    assert executed["States"]["RunCases"]["ItemProcessor"]["ProcessorConfig"] == {
        "Mode": "DISTRIBUTED",
        "ExecutionType": "STANDARD",
    }
    assert "${" not in two_iterations.definition
    assert state_machines.substitute(text, values).count("${") == 0


def test_a_changed_definition_changes_the_run(monkeypatch, tmp_path, suite_file):
    """Proof by intervention: a Fail state edited into the file is what the run executes."""
    asl = json.loads(state_machines.test_runner_asl())
    asl["States"]["Prepare"]["Next"] = "Stop"
    asl["States"]["Stop"] = {"Type": "Fail", "Error": "Edited", "Cause": "edited definition"}
    monkeypatch.setattr(state_machines, "test_runner_asl", lambda: json.dumps(asl))
    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"echo-target": echo_target})
    with pytest.raises(ExecutionFailed, match="edited definition"):
        engine.run(event(), suite=suite_file, out_dir=tmp_path)


def test_every_case_times_iterations_has_a_row(two_iterations):
    summary = two_iterations.summary
    assert summary.cases == 4 and summary.iterations == 2 and summary.items == 8
    details_path = next(p for p in two_iterations.files if p.name.endswith("details.csv"))
    rows = read_csv(details_path)
    assert sorted((r["case_id"], r["iteration"]) for r in rows) == sorted(
        (c, i) for c in ("c1", "c2", "c3", "c4") for i in ("1", "2")
    )


def test_failing_target_rows_are_present_with_the_error(two_iterations):
    details = next(p for p in two_iterations.files if p.name.endswith("details.csv"))
    broken = [r for r in read_csv(details) if r["case_id"] == "c3"]
    assert len(broken) == 2
    for row in broken:
        assert row["status"] == "target_error"
        assert "the target blew up on purpose" in row["error"]
        assert row["ROUGE-L reason"] == "not scored: the target call failed"
    assert two_iterations.summary.target_errors == 2


def test_report_layout_and_numbers(two_iterations):
    names = sorted(p.name.split("-", 2)[-1] for p in two_iterations.files)
    assert names == sorted(
        [
            "details.csv",
            "details.xlsx",
            "result.csv",
            "problems.json",
            "insights.json",
            "report.html",
            "report.json",
            "summary.json",
            "manifest.json",
        ]
    )
    assert two_iterations.files[-1].name.endswith("manifest.json")  # copied last
    for path in two_iterations.files:
        rel = path.relative_to(two_iterations.out_dir).as_posix()
        assert rel.startswith("test-reports/echo-target/")
        stamp = path.name.split("-")
        assert len(stamp[0]) == 6 and len(stamp[1]) == 6  # yymmdd-hhmmss
    result_csv = next(p for p in two_iterations.files if p.name.endswith("result.csv"))
    rows = read_csv(result_csv)
    result = {r["Metric"]: r for r in rows if r["Iteration"] == "all"}
    em = result["Exact match"]
    # scored: c1 (match) and c2 (no match), twice each; c3 errored twice; c4 skipped twice
    assert em["Count"] == "4" and em["Errored"] == "2" and em["Skipped"] == "2"
    assert math.isclose(float(em["Average Score"]), 0.5)
    assert math.isclose(float(em["Pass rate"]), 2 / 6, abs_tol=1e-4)
    assert em["Instability"] == "0.0000"  # the echo target answers the same every time
    per_iteration = [
        r
        for r in rows
        if r["Metric"] == "Exact match" and r["Iteration"] != "all" and not r["Category"]
    ]
    assert [r["Iteration"] for r in per_iteration] == ["1", "2"]
    # the suite's four categories: one row each, after the run-wide and per-iteration rows
    by_category = [r for r in rows if r["Metric"] == "Exact match" and r["Category"]]
    assert [r["Category"] for r in by_category] == ["leave", "benefits", "broken", "misc"]
    assert by_category[0]["Pass rate"] == "1.0000" and by_category[2]["Errored"] == "2"
    assert all(r["Count"] == "2" for r in per_iteration)
    rouge = result["ROUGE-L"]
    assert rouge["Primary"] == "true" and float(rouge["Min"]) < 1.0 <= float(rouge["Max"]) + 1e-9
    gate = two_iterations.summary.gates[0]
    assert gate.metric == "Exact match" and gate.passed is False
    assert two_iterations.summary.gates_passed is False
    problems = json.loads(
        next(p for p in two_iterations.files if p.name.endswith("problems.json")).read_text()
    )
    target_errors = next(p for p in problems if p["type"] == "target_errors")
    assert target_errors["affected_cases"] == ["c3"] and target_errors["severity"] == "high"
    html = next(p for p in two_iterations.files if p.name.endswith("report.html")).read_text()
    assert "echo-target" in html and "Exact match" in html


def test_case_task_failure_goes_through_catch_and_is_recorded(tmp_path, suite_file, monkeypatch):
    from lambdas import run_case

    # run_case.handler is the deployed container's (its runtime builds the target through
    # boto3, in the function's region): give it the region a deployed function has; the
    # engine no longer sets one in the process environment.
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")

    def crashing_run_case(ev, context):
        # one case per task in this small run: the task of manifest item 1 (c2) dies
        if "failure" not in ev and ev["item"] == {"first": 1, "count": 1}:
            raise MemoryError("Runtime exited: out of memory")
        return run_case.handler(ev, context)

    engine = LocalEngine(
        pipeline=local_pipeline,
        extra_functions={"echo-target": echo_target, "evalrunner-run-case": crashing_run_case},
    )
    result = engine.run(event(iterations=1), suite=suite_file, out_dir=tmp_path)
    rows = {
        r["case_id"]: r
        for r in read_csv(next(p for p in result.files if p.name.endswith("details.csv")))
    }
    assert rows["c2"]["status"] == "task_failed"
    assert "MemoryError" in rows["c2"]["error"] and "out of memory" in rows["c2"]["error"]
    assert rows["c1"]["status"] == "ok"  # the other cases are untouched
    assert result.summary.task_failures == 1


def test_bad_event_fails_the_execution_with_the_message_and_writes_nothing(tmp_path, suite_file):
    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"echo-target": echo_target})
    with pytest.raises(ExecutionFailed) as info:
        engine.run(event(iterations=0), suite=suite_file, out_dir=tmp_path / "out")
    assert "iterations" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_precomputed_answers_are_scored_without_calling_a_target(tmp_path):
    suite = b"question,expected_answer,actual_output\nQ1,alpha beta,alpha beta\nQ2,gamma,delta\n"
    engine = LocalEngine(pipeline=local_pipeline)
    result = engine.run(
        {
            "key": "test-suites/lab.csv",
            "iterations": 1,
            "target": {"lambdaArn": "nowhere"},
            "metrics": ["Exact match"],
        },
        suite=suite,
        out_dir=tmp_path,
    )
    (em,) = result.summary.metrics
    assert em.average == 0.5 and result.summary.target_errors == 0


def test_demo_run_reports(tmp_path):
    from evalrunner.demo.suite import demo_suite_path

    result = LocalEngine(pipeline=local_pipeline).run(
        {
            "key": "test-suites/demo-hr.xlsx",
            "iterations": 1,
            "target": {"lambdaArn": "evalrunner-demo-hr"},
        },
        suite=demo_suite_path(),
        out_dir=tmp_path,
    )
    summary = result.summary
    assert summary.cases == 27 and summary.target_errors == 0
    rouge = next(m for m in summary.metrics if m.metric == "ROUGE-L")
    # An imperfect assistant: neither all right nor all wrong.
    assert rouge.average is not None and rouge.pass_rate is not None
    assert 0.3 < rouge.average < 0.95 and 0.2 < rouge.pass_rate < 0.95
    assert Path(result.files[0]).is_file()


def intent_target(event, context):
    question = event["question"]
    intent = "leave" if "leave" in question else "benefits"
    return {
        "answer": f"About {intent}.",
        "intent": intent,
        "citations": [{"text": "chunk", "document": f"s3://kb/{intent}.md"}],
    }


def test_run_level_metrics_reach_the_summary(tmp_path):
    suite = (
        b"question,expected_intent,expected_documents\n"
        b"How much leave?,leave,leave.md\n"
        b"Parental leave length?,parental,parental.md\n"
        b"Pension match?,benefits,benefits.md\n"
    )
    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"intent-target": intent_target})
    result = engine.run(
        {
            "key": "test-suites/intents.csv",
            "iterations": 1,
            "target": {"lambdaArn": "intent-target"},
        },
        suite=suite,
        out_dir=tmp_path,
    )
    run_metrics = result.summary.run_metrics
    intents = run_metrics["Intent classification"]
    assert intents["accuracy"] == pytest.approx(2 / 3)
    assert intents["confusion_matrix"]["parental"] == {"benefits": 0, "leave": 1, "parental": 0}
    assert run_metrics["Retrieval rank"]["mrr"] == pytest.approx(2 / 3)
    names = {m.evaluator for m in result.summary.metrics}
    assert {"Intent classification", "Retrieval rank"} <= names
    assert "Rouge Metric" not in names  # no expected answers in this suite
