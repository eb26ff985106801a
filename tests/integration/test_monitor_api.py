"""Issue 34 item 2 from Python: ``evalrunner.monitor_logs()`` scores the new interactions once,
as ``evalrunner monitor`` does, and a second call over the same logs has nothing to score."""

from __future__ import annotations

from pathlib import Path

import pytest

import evalrunner
from evalrunner.api import monitoring
from evalrunner.monitor.model import MonitorError
from evalrunner.monitor.runner import DEFAULT_LATENESS_SECONDS

SAMPLES = Path(__file__).parents[2] / "test_suites" / "monitor"


def test_monitor_logs_twice(tmp_path: Path) -> None:
    source = SAMPLES / "bedrock-agent-traces.jsonl"
    first = evalrunner.monitor_logs(source, out=tmp_path, sample="50%", seed=2, fail_on="errors")
    assert first.run is not None and first.message is None
    assert first.run.summary.items == len(first.plan.chosen) < len(first.plan.new) == 4
    assert first.run.passed
    second = evalrunner.monitor_logs(source, out=tmp_path, sample="50%", seed=2)
    assert second.run is None and second.plan.duplicates == 4
    assert second.message == (
        "nothing new to score for monitor-bedrock-agent-traces.jsonl since its watermark"
    )


def test_bad_input_raises(tmp_path: Path) -> None:
    with pytest.raises(MonitorError, match="needs expected_answer"):
        evalrunner.monitor_logs(SAMPLES / "interactions.jsonl", out=tmp_path, metrics=["BLEU"])


def test_the_api_default_lateness_is_the_monitors() -> None:
    assert monitoring.DEFAULT_LATENESS_SECONDS == DEFAULT_LATENESS_SECONDS
