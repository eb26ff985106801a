"""The local function limit (issue 31 goal 6): a local run has no 900 s Lambda limit unless
asked (``--function-timeout``); asked, a function running past it stops the run as Lambda
would have stopped it. The deployed limit stays Lambda's."""

from __future__ import annotations

import json
import threading
import time

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.engine import LocalEngine
from evalrunner.engine.dispatch import NO_LIMIT_MS, LambdaContext
from evalrunner.errors import EngineStalled
from lambdas.local import local_pipeline

SUITE = "id,question,expected_answer\nc1,Question 1?,Answer 1.\n"


class TellsTimeLeft:
    """A hosted target that answers with the time its context says it has left."""

    def __init__(self, sleep: float = 0.0) -> None:
        self.left: list[int] = []
        self.sleep = sleep
        self._lock = threading.Lock()

    def __call__(self, event, context):
        with self._lock:
            self.left.append(context.get_remaining_time_in_millis())
        time.sleep(self.sleep)
        return {"answer": "Answer 1.", "contexts": ["ctx"]}


def event() -> dict:
    return {
        "key": "test-suites/limit.csv",
        "iterations": 1,
        "target": {"lambdaArn": "tells", "timeout_seconds": 30},
        "metrics": ["Exact match"],
        "max_concurrency": 1,
    }


def test_a_local_function_has_no_lambda_limit_by_default(tmp_path):
    target = TellsTimeLeft()
    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"tells": target})
    result = engine.run(event(), suite=SUITE.encode(), out_dir=tmp_path)
    assert result.summary.target_errors == 0
    assert target.left == [NO_LIMIT_MS] and NO_LIMIT_MS > 900_000


def test_a_local_function_limit_is_told_and_enforced(tmp_path):
    told = TellsTimeLeft()
    engine = LocalEngine(
        pipeline=local_pipeline, extra_functions={"tells": told}, function_timeout=600
    )
    engine.run(event(), suite=SUITE.encode(), out_dir=tmp_path / "told")
    assert 0 < told.left[0] <= 600_000

    slow = TellsTimeLeft(sleep=2.5)
    engine = LocalEngine(
        pipeline=local_pipeline,
        extra_functions={"tells": slow},
        function_timeout=1,
        stall_timeout=60,
    )
    with pytest.raises(EngineStalled, match=r"past the 1 s function limit \(--function-timeout"):
        engine.run(event(), suite=SUITE.encode(), out_dir=tmp_path / "slow")


def test_the_deployed_context_keeps_lambdas_limit():
    context = LambdaContext(function_name="f", invoked_function_arn="arn")
    assert context.timeout_s == 900.0
    assert 0 < context.get_remaining_time_in_millis() <= 900_000


def cli_run(tmp_path, *extra: str):
    suite = tmp_path / "limit.csv"
    suite.write_text(SUITE, encoding="utf-8")
    return CliRunner().invoke(
        app,
        [
            "run",
            "--suite",
            str(suite),
            "--target",
            json.dumps({"lambdaArn": "evalrunner-demo-hr"}),
            "--metric",
            "Exact match",
            "--fail-on",
            "errors",
            "--no-preflight",
            "--out",
            str(tmp_path / "out"),
            *extra,
        ],
    )


def test_the_cli_takes_the_function_limit(tmp_path):
    result = cli_run(tmp_path, "--function-timeout", "600")
    assert result.exit_code == 0, result.output
    result = cli_run(tmp_path, "--function-timeout", "0.5")
    assert result.exit_code == 2, result.output  # below the option's minimum of 1 s
    assert "--function-timeout" in result.output


def test_the_python_api_takes_the_function_limit(tmp_path):
    from evalrunner import evaluate
    from evalrunner.errors import EventError

    def slow(question):
        time.sleep(2.5)
        return "Answer 1."

    rows = [{"question": "Question 1?", "expected_answer": "Answer 1."}]
    with pytest.raises(EngineStalled, match=r"past the 1 s function limit"):
        evaluate(
            rows,
            slow,
            metrics=["Exact match"],
            out=tmp_path / "slow",
            preflight=False,
            function_timeout=1,
        )
    with pytest.raises(EventError, match="function_timeout"):
        evaluate(rows, slow, out=tmp_path / "bad", function_timeout=0)
