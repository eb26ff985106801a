"""Following an execution: a SUCCEEDED status whose output moto has not stored yet is polled
again, not read (moto sets the status one statement before the output)."""

from __future__ import annotations

import threading

from evalrunner.engine.local import LocalEngine, Progress
from evalrunner.engine.watchdog import Watchdog
from lambdas.local import local_pipeline


class RacingStepFunctions:
    """describe_execution as moto answers it in the window between the two assignments."""

    def __init__(self) -> None:
        self.calls = 0

    def describe_execution(self, executionArn: str) -> dict:
        self.calls += 1
        if self.calls == 1:
            return {"status": "RUNNING"}
        if self.calls == 2:
            return {"status": "SUCCEEDED"}  # the output is not there yet
        return {"status": "SUCCEEDED", "output": '{"ok": true}'}


def test_a_succeeded_execution_without_its_output_is_polled_again() -> None:
    engine = LocalEngine(pipeline=local_pipeline, poll_seconds=0.0)
    sfn = RacingStepFunctions()
    description = engine._follow(
        sfn, "arn", Progress(), threading.Lock(), None, Watchdog(stall_timeout=60)
    )
    assert description == {"status": "SUCCEEDED", "output": '{"ok": true}'}
    assert sfn.calls == 3


def test_a_failed_execution_is_returned_at_once() -> None:
    class Failed:
        def describe_execution(self, executionArn: str) -> dict:
            return {"status": "FAILED", "error": "x"}

    engine = LocalEngine(pipeline=local_pipeline, poll_seconds=0.0)
    description = engine._follow(
        Failed(), "arn", Progress(), threading.Lock(), None, Watchdog(stall_timeout=60)
    )
    assert description["status"] == "FAILED"
