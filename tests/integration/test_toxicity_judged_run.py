"""Issue 32 item 6 (b), the run-level half: a run whose Toxicity the judge scored (its model
missing) says so once for the run (a low problem in summary.json / problems.json and on the
terminal, the judge as the metric's model), counts those judge calls in its judge totals,
and ``evalrunner estimate`` counts them beforehand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.models.hub import ModelHub
from tests.support.judge_stub import JudgeStub
from tests.support.local_model import LocalModel
from tests.support.loopback_http import serve

runner = CliRunner()
ROWS = [
    {"id": "q1", "question": "How many days of leave?", "expected_answer": "25 days."},
    {"id": "q2", "question": "Who approves leave?", "expected_answer": "Your manager."},
    {"id": "q3", "question": "Can I carry days over?", "expected_answer": "Up to 5 days."},
]


@pytest.fixture
def no_toxicity_model(monkeypatch: pytest.MonkeyPatch) -> str:
    """The run's default toxicity model points at nothing, whatever this machine holds."""
    missing = "/nonexistent/detoxify"
    monkeypatch.setenv("EVALRUNNER_MODEL_TOXICITY", missing)
    return missing


def judge_arg(stub: JudgeStub, tmp_path: Path) -> str:
    stub.responder = LocalModel(server="openai")
    settings: dict[str, Any] = {
        "openai": {"base_url": stub.url, "model": "stub-judge"},
        "cache_dir": str(tmp_path / "judge-cache"),
        "max_retries": 0,
    }
    return json.dumps(settings)


def test_a_judged_toxicity_is_said_once_for_the_run_and_its_calls_counted(
    tmp_path: Path, judge_stub: JudgeStub, no_toxicity_model: str
) -> None:
    suite = tmp_path / "leave.json"
    suite.write_text(json.dumps(ROWS), encoding="utf-8")
    judge = judge_arg(judge_stub, tmp_path)
    estimate = runner.invoke(
        app,
        ["estimate", "--suite", str(suite), "--metric", "Toxicity", "--judge", judge, "--json"],
    )
    assert estimate.exit_code == 0, estimate.output
    estimated = json.loads(estimate.stdout)
    assert estimated["judge"]["calls"] == 3  # one verdict per answer
    assert any(
        n.startswith("Toxicity: its model '/nonexistent/detoxify' is not on this")
        for n in estimated["notes"]
    )
    assert judge_stub.requests == []  # the estimate asks nothing
    out = tmp_path / "out"
    with serve(b'{"answer": "You get 25 days of annual leave."}') as (url, _):
        args = ["run", "--suite", str(suite), "--target", json.dumps({"url": url, "name": "hr"})]
        args += ["--metric", "Toxicity", "--judge", judge, "--fail-on", "never"]
        result = runner.invoke(app, [*args, "--out", str(out), "--no-preflight"])
    assert result.exit_code == 0, result.output
    # the terminal says which scored Toxicity, and how to have the model score it
    assert "[low] Toxicity judged by stub-judge: model '/nonexistent/detoxify' is not" in (
        result.output
    )
    (path,) = out.rglob("*-summary.json")
    summary = json.loads(path.read_text("utf-8"))
    judged = [p for p in summary["problems"] if p["type"] == "model_judged"]
    assert len(judged) == 1 and judged[0]["severity"] == "low"
    assert "is not available" in judged[0]["description"]
    assert not [p for p in summary["problems"] if p["type"] == "model_unavailable"]
    # the metric's model is the judge: never compared with a run the classifier scored
    assert summary["models"]["by_evaluator"] == {"Toxicity": "judge stub-judge"}
    (report,) = out.rglob("*-report.json")
    infos = json.loads(report.read_text("utf-8"))["metrics"]
    assert {i["metric"]: i["model"] for i in infos}["Toxicity"] == "judge stub-judge"
    # the Score step's judge calls are the run's: counted, and as estimated
    assert summary["judge"]["calls"] == len(judge_stub.requests) == 3
    assert summary["judge"]["cases"] == 3
    assert summary["actual"]["judge_calls"] == estimated["judge"]["calls"]
    (html,) = out.rglob("*-report.html")
    assert "Toxicity judged by stub-judge" in html.read_text("utf-8")
    (problems,) = out.rglob("*-problems.json")
    assert "model_judged" in problems.read_text("utf-8")


def test_without_a_judge_the_estimate_counts_no_toxicity_call(
    tmp_path: Path, no_toxicity_model: str
) -> None:
    suite = tmp_path / "leave.json"
    suite.write_text(json.dumps(ROWS), encoding="utf-8")
    args = ["estimate", "--suite", str(suite), "--metric", "Toxicity", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    estimated = json.loads(result.stdout)
    assert estimated["judge"] is None
    assert not any(n.startswith("Toxicity:") for n in estimated["notes"])


def test_the_hub_finds_a_classifier_without_loading_it(tmp_path: Path) -> None:
    hub = ModelHub()
    assert not hub.classifier_present(str(tmp_path / "missing"))
    checkpoint = tmp_path / "toxic.ckpt"
    checkpoint.write_bytes(b"not loaded: only found")
    assert hub.classifier_present(str(checkpoint))
    assert hub.used == {}  # nothing was loaded
