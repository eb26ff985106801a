"""The seed runner's events name no judge: the operator's default judge judges them, and a
judge metric with no judge anywhere is a warning and a problem, never a silent skip."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from tests.integration.test_judge_cli import SUITE, answer_like_a_judge

runner = CliRunner()
#: A seed-003 style event: a target, a metric, iterations, and no judge.
EVENT = {
    "key": "test-suites/hr.csv",
    "iterations": 1,
    "target": {"lambdaArn": "evalrunner-demo-hr", "metric": "Faithfulness"},
}


def start(tmp_path: Path, event: dict[str, Any] | None = None) -> Any:
    (tmp_path / "hr.csv").write_text(SUITE, encoding="utf-8")
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event or EVENT), encoding="utf-8")
    out = str(tmp_path / "out")
    return runner.invoke(app, ["start", "--event", str(path), "--out", out, "--json"])


def stub_judge(stub: Any, tmp_path: Path) -> dict[str, Any]:
    return {
        "openai": {"base_url": stub.url, "model": "stub-judge"},
        "cache_dir": str(tmp_path / "judge-cache"),
        "max_retries": 1,
    }


def faithfulness(result: Any) -> dict[str, Any]:
    summary = json.loads(result.stdout)
    assert result.exit_code == summary["verdict"]["exit_code"], result.output
    (faith,) = [m for m in summary["metrics"] if m["metric"] == "Faithfulness"]
    return {**faith, "summary": summary}


def test_an_event_without_judge_is_judged_by_evalrunner_judge(
    tmp_path: Path, judge_stub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge_stub.responder = answer_like_a_judge
    monkeypatch.setenv("EVALRUNNER_JUDGE", json.dumps(stub_judge(judge_stub, tmp_path)))
    faith = faithfulness(start(tmp_path))
    assert faith["count"] == 2 and faith["average"] == 1.0
    assert judge_stub.requests  # the default judge was called
    assert faith["summary"]["judge"]["cases"] == 2


def test_the_config_file_gives_the_same_default(
    tmp_path: Path, judge_stub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge_stub.responder = answer_like_a_judge
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"judge": stub_judge(judge_stub, tmp_path)}), encoding="utf-8")
    monkeypatch.setenv("EVALRUNNER_CONFIG", str(config))
    faith = faithfulness(start(tmp_path))
    assert faith["count"] == 2 and faith["average"] == 1.0


def test_no_judge_anywhere_warns_at_validate_and_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(EVENT), encoding="utf-8")
    checked = runner.invoke(app, ["validate", str(path)])
    assert checked.exit_code == 0 and "valid" in checked.stdout
    assert "warning" in checked.stderr and "Faithfulness" in checked.stderr
    faith = faithfulness(start(tmp_path))
    assert faith["skipped"] == 2 and faith["count"] == 0
    # nothing was scored: the run is not measured (exit 4), never a pass
    assert faith["summary"]["verdict"]["outcome"] == "not_measured"
    (problem,) = [p for p in faith["summary"]["problems"] if p["type"] == "judge_not_configured"]
    assert problem["severity"] == "high" and "Faithfulness" in problem["description"]


def test_a_bad_default_judge_is_an_input_error_naming_its_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALRUNNER_JUDGE", json.dumps({"bedrock": {}}))
    path = tmp_path / "event.json"
    path.write_text(json.dumps(EVENT), encoding="utf-8")
    checked = runner.invoke(app, ["validate", str(path)])
    assert checked.exit_code == 2
    assert "judge.bedrock.model_id" in checked.stderr and "EVALRUNNER_JUDGE" in checked.stderr


def test_default_metrics_come_from_the_operator_and_say_what_was_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = {**EVENT, "target": {"lambdaArn": "evalrunner-demo-hr"}}
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    today = runner.invoke(app, ["validate", str(path)])
    assert today.exit_code == 0 and "BERT Score" not in today.stdout
    # one line with a count, the reasons and a pointer, not a line per metric
    left_out = [line for line in today.stderr.splitlines() if "metrics not run" in line]
    assert len(left_out) == 1, today.stderr
    assert re.fullmatch(
        r"(\d+) metrics not run \((\d+) need --judge, (\d+) need --metric\); "
        r"see 'evalrunner metrics'",
        left_out[0],
    ), left_out
    total, judged, named = map(int, re.findall(r"\d+", left_out[0]))
    assert total == judged + named and judged >= 1 and named >= 1
    assert "Faithfulness" not in today.stderr and "BERT Score" not in today.stderr
    monkeypatch.setenv("EVALRUNNER_DEFAULT_METRICS", json.dumps(["BERT Score", "Toxicity"]))
    configured = runner.invoke(app, ["validate", str(path)])
    assert configured.exit_code == 0
    assert "BERT Score, Toxicity" in configured.stdout and "Rouge Metric" in configured.stdout


def test_a_run_with_a_judge_has_no_judge_problem(
    tmp_path: Path, judge_stub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge_stub.responder = answer_like_a_judge
    event = {**EVENT, "judge": stub_judge(judge_stub, tmp_path)}
    faith = faithfulness(start(tmp_path, event))
    assert faith["count"] == 2
    assert not [p for p in faith["summary"]["problems"] if p["type"] == "judge_not_configured"]


@pytest.mark.parametrize(
    "target",
    [
        {"agentId": "AGENT12345", "agentAliasId": "ALIAS12345", "metric": "Faithfulness"},
        {
            "stepFunctionArn": "arn:aws:states:eu-west-1:111122223333:stateMachine:rag",
            "metric": "BERT Score",
        },
        {"lambdaArn": "arn:aws:lambda:eu-west-1:111122223333:function:hr", "metric": "Bias"},
    ],
)
def test_seed_003_events_pass_validate(tmp_path: Path, target: dict[str, Any]) -> None:
    path = tmp_path / "event.json"
    path.write_text(
        json.dumps({"key": "test-suites/dp.xlsx", "iterations": 2, "target": target}), "utf-8"
    )
    checked = runner.invoke(app, ["validate", str(path)])
    assert checked.exit_code == 0 and "valid" in checked.stdout, checked.output


def test_with_a_judge_the_left_out_reason_is_not_a_missing_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}
    monkeypatch.setenv("EVALRUNNER_JUDGE", json.dumps(judge))
    path = tmp_path / "event.json"
    event = {**EVENT, "target": {"lambdaArn": "evalrunner-demo-hr"}}
    path.write_text(json.dumps(event), encoding="utf-8")
    checked = runner.invoke(app, ["validate", str(path)])
    assert checked.exit_code == 0 and "Faithfulness" in checked.stdout  # judged by default
    assert "need --metric); see 'evalrunner metrics'" in checked.stderr
    assert "need --judge" not in checked.stderr and "warning" not in checked.stderr
