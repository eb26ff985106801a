"""Issue 32 item 6 (a, b): ``--profile seed-003`` / ``evaluate(profile="seed-003")`` gives the
seed runner's nine metrics at DeepEval's default threshold 0.5, so result.csv has the nine rows
the seed shows, read by ``name``; and ``Toxicity`` without its model is judged by the run's
judge (the loopback OpenAI-compatible stub), never skipped for every case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import evalrunner
from evalrunner.cli import app
from evalrunner.run_defaults import SEED_DEFAULT_METRICS
from tests.support.judge_stub import JudgeStub
from tests.support.local_model import LocalModel
from tests.support.loopback_http import Loopback, Reply, Seen

from .conftest import read_csv

pytestmark = pytest.mark.slow

ROWS = [
    {
        "question": "How many days of annual leave do I get?",
        "expected_answer": "25 days of annual leave.",
    },
    {"question": "Who approves leave?", "expected_answer": "Your line manager approves leave."},
]
NINE = list(SEED_DEFAULT_METRICS)
#: The toxicity model's option points at nothing: the machine has no detoxify either way.
NO_MODEL = {"Toxicity": {"model": "/nonexistent/detoxify"}}


def answer(question: str) -> dict[str, Any]:
    return {
        "answer": "You get 25 days of annual leave; your line manager approves it.",
        "contexts": ["Staff get 25 days of annual leave.", "Line managers approve leave."],
    }


def judge_settings(stub: JudgeStub, tmp_path: Path) -> dict[str, Any]:
    stub.responder = LocalModel(server="openai")  # a plausible reply to every judge prompt
    return {
        "openai": {"base_url": stub.url, "model": "stub-judge"},
        "cache_dir": str(tmp_path / "judge-cache"),
        "max_retries": 0,
    }


def named_rows(out: Path) -> list[dict[str, str]]:
    """The run-wide rows of the evaluators' primary metrics: the rows the seed's result.csv
    had, one per metric asked for, named as it named them (the other metrics of an
    evaluator, e.g. ROUGE-1, follow under their own names)."""
    (result,) = out.rglob("*-result.csv")
    return [r for r in read_csv(result) if r["Iteration"] == "all" and r["Primary"] == "true"]


def assert_seed_rows(rows: list[dict[str, str]]) -> None:
    assert [r["name"] for r in rows] == NINE
    assert {r["name"]: float(r["Threshold"]) for r in rows} == {n: 0.5 for n in NINE}


def test_evaluate_with_the_seed_profile_gives_the_nine_rows(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    run = evalrunner.evaluate(
        suite=ROWS,
        target=answer,
        profile="seed-003",
        judge=judge_settings(judge_stub, tmp_path),
        evaluator_options=NO_MODEL,
        fail_on="never",
        preflight=False,
        out=tmp_path / "out",
    )
    assert_seed_rows(named_rows(tmp_path / "out"))
    toxicity = run.details["Toxicity reason"].tolist()
    # judged, not skipped: the reason says by which judge and why
    assert all(r.startswith("judged by stub-judge (the toxicity model") for r in toxicity)
    assert set(run.details["Severe toxicity reason"].str.startswith("skipped:")) == {True}


def test_the_cli_profile_gives_the_nine_rows_and_named_metrics_add_to_them(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    suite = tmp_path / "leave.json"
    suite.write_text(json.dumps(ROWS), encoding="utf-8")

    def http(seen: Seen) -> Reply:
        return Reply(body=answer(seen.json()["question"]))

    with Loopback(responder=http) as server:
        target = {"url": server.url, "answer_path": "answer", "contexts_path": "contexts"}
        args = ["run", "--suite", str(suite), "--target", json.dumps(target)]
        args += ["--profile", "seed-003", "--metric", "Token F1", "--threshold", "Bias=0.2"]
        args += ["--judge", json.dumps(judge_settings(judge_stub, tmp_path))]
        args += ["--evaluator-options", json.dumps(NO_MODEL), "--fail-on", "never"]
        args += ["--no-preflight", "--json", "--out", str(tmp_path / "out")]
        result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = named_rows(tmp_path / "out")
    assert [r["name"] for r in rows] == [*NINE, "Token F1"]
    thresholds = {r["name"]: float(r["Threshold"]) for r in rows[:9]}
    assert thresholds == {**{n: 0.5 for n in NINE}, "Bias": 0.2}  # the user's own wins


def test_an_unknown_profile_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    suite = tmp_path / "leave.json"
    suite.write_text(json.dumps(ROWS), encoding="utf-8")
    args = ["run", "--suite", str(suite), "--target", '{"url": "http://127.0.0.1:9"}']
    args += ["--profile", "seed-004", "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "profile: 'seed-004' is not a profile; use one of seed-003" in result.output


def test_a_seed_event_with_the_profile_runs_through_the_deployed_pipeline(
    tmp_path: Path, judge_stub: JudgeStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``evalrunner start --event``: the state machine and the deployed handlers (Prepare
    reads the profile from the event) in the embedded engine, the judge the operator's."""
    from tests.integration.test_judge_cli import SUITE

    monkeypatch.setenv("EVALRUNNER_JUDGE", json.dumps(judge_settings(judge_stub, tmp_path)))
    (tmp_path / "hr.csv").write_text(SUITE, encoding="utf-8")
    event = {
        "key": "test-suites/hr.csv",
        "iterations": 1,
        "target": {"lambdaArn": "evalrunner-demo-hr"},
        "profile": "seed-003",
        "evaluator_options": NO_MODEL,
        "fail_on": "never",
    }
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    args = ["start", "--event", str(path), "--out", str(tmp_path / "out"), "--json"]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert_seed_rows(named_rows(tmp_path / "out"))
