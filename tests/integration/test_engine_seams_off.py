"""One run through moto's ordinary botocore path: the engine's speed seams off, as a deployed
run's calls go through botocore, and the same suite with them on gives the same reports.

The seams (evalrunner/engine/moto_compat.py: caches, the in-process S3, Lambda and Step
Functions clients) are checked to be *off* by counting the requests moto's botocore hook
answers: with them on, the run's storage never reaches it; with them off, every S3 put, every
Lambda task and every Step Functions call does.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from moto.core.botocore_stubber import BotocoreStubber

from evalrunner import engine_switch
from evalrunner.engine import LocalEngine
from evalrunner.engine.moto_compat import FAST_ENV, MOTO_VERSION, speed_seams_from_env
from evalrunner.errors import ConfigError
from lambdas.local import local_pipeline

from .conftest import SUITE_CSV, echo_target, read_csv

pytestmark = pytest.mark.slow

EVENT = {
    "key": "test-suites/mini.csv",
    "iterations": 2,
    "target": {"lambdaArn": "echo-target"},
    "metrics": ["Rouge Metric", "Exact match", "Token F1"],
    "fail_under": {"Exact match": 0.9},
}
#: What differs between any two runs of the same suite (ids, clocks), not between paths.
_PER_RUN = {"run_id", "started_at", "finished_at", "duration_seconds", "timestamp", "created_at"}


def _run(tmp: Path, fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Counter[str]]:
    """The run's result and the botocore operations moto's request hook answered in it."""
    seen: Counter[str] = Counter()
    original = BotocoreStubber.__call__

    def counting(self: BotocoreStubber, event_name: str, request: Any, **kwargs: Any) -> Any:
        if self.enabled:
            seen[event_name.removeprefix("before-send.")] += 1
        return original(self, event_name, request, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(BotocoreStubber, "__call__", counting)
        engine = LocalEngine(
            pipeline=local_pipeline,
            extra_functions={"echo-target": echo_target},
            fast=fast,
        )
        result = engine.run(dict(EVENT), suite=SUITE_CSV.encode(), out_dir=tmp)
    return result, seen


def _stable(value: Any) -> Any:
    """``value`` without what differs from run to run (ids, times, the run's folder)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _PER_RUN}
    if isinstance(value, str) and value.startswith("test-reports/"):  # <stamp>-<name>
        return value.rsplit("/", 1)[0] + "/" + value.rsplit("-", 1)[-1]
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _rows(files: list[Path], name: str) -> list[dict[str, str]]:
    results = [f for f in files if f.name.endswith(f"-{name}")]
    assert results, [f.name for f in files]
    rows = read_csv(results[0])
    return sorted(
        ({k: v for k, v in row.items() if "latency" not in k and "time" not in k} for row in rows),
        key=lambda row: json.dumps(row, sort_keys=True),
    )


def test_the_seams_off_go_through_botocore_and_change_no_report(tmp_path, monkeypatch):
    fast, fast_calls = _run(tmp_path / "fast", True, monkeypatch)
    slow, slow_calls = _run(tmp_path / "slow", False, monkeypatch)

    # Seams on: the run's storage and control plane never reach moto's botocore hook.
    assert fast_calls["s3.PutObject"] == 0
    assert fast_calls["sfn.StartExecution"] == 0
    assert fast_calls["lambda.Invoke"] == 0
    # Seams off: every store, every Lambda task and the control plane go through botocore.
    cases = 4 * EVENT["iterations"]
    assert slow_calls["s3.PutObject"] >= cases  # the suite, each case record, the reports
    assert slow_calls["lambda.Invoke"] >= cases + 3  # the target per case, the pipeline's
    assert slow_calls["sfn.StartExecution"] == 1
    assert slow_calls["sfn.CreateStateMachine"] == 1
    assert slow_calls["sfn.DescribeExecution"] >= 1
    assert slow_calls["s3.GetObject"] >= 1

    # The same reports either way.
    assert [f.name.split("-", 2)[-1] for f in fast.files] == [
        f.name.split("-", 2)[-1] for f in slow.files
    ]
    assert _stable(slow.summary.model_dump(mode="json")) == _stable(
        fast.summary.model_dump(mode="json")
    )
    assert slow.summary.items == fast.summary.items == cases
    for name in ("result.csv", "details.csv"):
        assert _rows(slow.files, name) == _rows(fast.files, name), name


def test_the_switch_is_read_from_the_environment(monkeypatch):
    monkeypatch.delenv(FAST_ENV, raising=False)
    assert speed_seams_from_env() is True
    assert LocalEngine(pipeline=local_pipeline).fast is True
    monkeypatch.setenv(FAST_ENV, "0")
    assert speed_seams_from_env() is False
    assert LocalEngine(pipeline=local_pipeline).fast is False
    assert LocalEngine(pipeline=local_pipeline, fast=True).fast is True  # the argument wins
    monkeypatch.setenv(FAST_ENV, "off")
    assert speed_seams_from_env() is False
    monkeypatch.setenv(FAST_ENV, "maybe")
    with pytest.raises(ConfigError, match=f"{FAST_ENV}='maybe'.*1.*0"):
        speed_seams_from_env()


def test_on_another_moto_the_seams_are_off_unless_asked_for(monkeypatch):
    """The local extra allows a range of moto; the seams reach into 5.2.5's private code, so
    on another release they are off by default, and asking for them is refused, saying why."""
    monkeypatch.setattr(engine_switch, "installed_moto_version", lambda: "5.2.0")
    monkeypatch.delenv(FAST_ENV, raising=False)
    assert speed_seams_from_env() is False
    assert LocalEngine(pipeline=local_pipeline).fast is False
    with pytest.raises(ConfigError, match=f"written for moto {MOTO_VERSION}.*5.2.0"):
        LocalEngine(pipeline=local_pipeline, fast=True)
    monkeypatch.setenv(FAST_ENV, "1")
    with pytest.raises(ConfigError, match=f"install moto=={MOTO_VERSION}"):
        speed_seams_from_env()


def test_a_bad_switch_is_bad_input_before_the_target_is_called(tmp_path, monkeypatch):
    """``evalrunner run`` with a value that is not a switch: exit 2, naming the variable, and
    the target (a loopback server) never called, not even by the pre-flight."""
    from typer.testing import CliRunner

    from evalrunner.cli import app
    from tests.support.loopback_http import Loopback

    suite = tmp_path / "s.csv"
    suite.write_text("question,expected_answer\nHow many days?,25 days\n", "utf-8")
    monkeypatch.setenv(FAST_ENV, "fastest")
    with Loopback() as server:
        server.always(200, {"answer": "25 days"})
        result = CliRunner().invoke(
            app,
            [
                "run",
                "--suite",
                str(suite),
                "--target",
                json.dumps({"url": server.url}),
                "--metric",
                "Token F1",
                "--out",
                str(tmp_path / "out"),
                "--quiet",
            ],
        )
        assert result.exit_code == 2, result.output
        assert f"{FAST_ENV}='fastest' is not a switch" in result.output
        assert server.requests == []
