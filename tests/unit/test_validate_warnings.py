"""``evalrunner validate`` warns, before anything runs, about a judge model Bedrock has
retired (the shipped Legacy/End-of-Life table) and about a max_concurrency the deployment
caps (issue 29, items 1 and 7). Both are warnings: the event stays valid (exit 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.event import ENV_CONCURRENCY_CAP

runner = CliRunner()
EVENT = {
    "key": "test-suites/hr.xlsx",
    "iterations": 1,
    "target": {"lambdaArn": "evalrunner-demo-hr"},
    "metrics": ["Faithfulness"],
}


def validate(tmp_path: Path, event: dict[str, object]):
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return runner.invoke(app, ["validate", str(path)])


def test_a_retired_bedrock_judge_is_a_warning_naming_the_replacement(tmp_path: Path) -> None:
    retired = "anthropic.claude-3-5-sonnet-20240620-v1:0"
    event = {**EVENT, "judge": {"bedrock": {"model_id": f"eu.{retired}", "region": "eu-west-1"}}}
    checked = validate(tmp_path, event)
    assert checked.exit_code == 0 and "valid" in checked.stdout
    warning = " ".join(checked.stderr.split())
    assert f"warning: the Bedrock judge model eu.{retired} is end-of-life" in warning
    assert "us.anthropic.claude-sonnet-4-5-20250929-v1:0" in warning
    active = {"model_id": "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "region": "us-east-1"}
    clean = validate(tmp_path, {**EVENT, "judge": {"bedrock": active}})
    assert clean.exit_code == 0 and "end-of-life" not in clean.stderr


def test_max_concurrency_above_the_reservation_is_capped_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = {**EVENT, "metrics": ["Exact match"], "max_concurrency": 1000}
    uncapped = validate(tmp_path, event)
    assert uncapped.exit_code == 0 and "capped" not in uncapped.stderr
    monkeypatch.setenv(ENV_CONCURRENCY_CAP, "50")
    capped = validate(tmp_path, event)
    assert capped.exit_code == 0
    warning = " ".join(capped.stderr.split())
    assert "warning: max_concurrency 1000 is capped to 50" in warning
    assert "case_runner_reserved_concurrency" in warning
    monkeypatch.setenv(ENV_CONCURRENCY_CAP, "fifty")
    broken = validate(tmp_path, event)
    assert broken.exit_code != 0
