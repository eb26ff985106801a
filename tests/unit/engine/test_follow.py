"""Following an execution: a SUCCEEDED status whose output moto has not stored yet is polled
again, not read (moto sets the status one statement before the output); once Aggregate has
returned, the end is polled every few milliseconds instead of every ``poll_seconds``."""

from __future__ import annotations

import threading

from evalrunner.engine.local import LocalEngine
from evalrunner.engine.run_types import Progress
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


class Waits:
    """What the follower waits on, recorded instead of slept."""

    def __init__(self) -> None:
        self.slept: list[float] = []
        self.waited: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


class RecordingEvent(threading.Event):
    def __init__(self, waits: Waits) -> None:
        super().__init__()
        self._waits = waits

    def wait(self, timeout: float | None = None) -> bool:
        self._waits.waited.append(float(timeout or 0))
        return self.is_set()


def test_once_aggregate_returned_the_end_is_polled_closely(monkeypatch) -> None:
    """Before Aggregate returns, the follower waits ``poll_seconds`` on the event (woken when
    it is set); after, it polls every few milliseconds until the execution has ended."""
    from evalrunner.engine import local

    waits = Waits()
    monkeypatch.setattr(local.time, "sleep", waits.sleep)
    engine = LocalEngine(pipeline=local_pipeline, poll_seconds=0.25)
    finishing = RecordingEvent(waits)

    class Ending:
        calls = 0

        def describe_execution(self, executionArn: str) -> dict:
            Ending.calls += 1
            if Ending.calls == 2:
                finishing.set()  # Aggregate returned between two polls
            if Ending.calls < 5:
                return {"status": "RUNNING"}
            return {"status": "SUCCEEDED", "output": "{}"}

    description = engine._follow(
        Ending(), "arn", Progress(), threading.Lock(), None, Watchdog(stall_timeout=60), finishing
    )
    assert description["status"] == "SUCCEEDED"
    assert waits.waited == [0.25]  # the first poll: Aggregate still running
    assert waits.slept == [local._FINISHING_POLL_SECONDS] * 3
    assert local._FINISHING_POLL_SECONDS <= 0.01


def test_a_run_sets_finishing_when_aggregate_returns(monkeypatch, tmp_path) -> None:
    from evalrunner.engine import local

    seen: list[bool] = []
    follow = local.LocalEngine._follow

    def spying(self, *args):
        description = follow(self, *args)
        seen.append(args[-1].is_set())
        return description

    monkeypatch.setattr(local.LocalEngine, "_follow", spying)
    LocalEngine(pipeline=local_pipeline).run(
        {"key": "test-suites/f.csv", "iterations": 1, "target": {"logged": "f"}},
        suite=b"id,question,expected_answer,actual_answer\nc1,Q?,a,a\n",
        out_dir=tmp_path,
    )
    assert seen == [True]
