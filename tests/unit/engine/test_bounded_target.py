"""engine/dispatch.bounded: a hosted target function held to a deadline and a size cap.
What an abandoned call does later is dropped: a late exception never reaches
threading.excepthook, where the engine's watchdog would take it for a dying interpreter
thread and stop the run."""

from __future__ import annotations

import threading

import pytest

from evalrunner.engine.dispatch import bounded
from evalrunner.errors import TargetError, TargetTimeout
from evalrunner.http_client import ResponseTooLarge


def test_a_late_failure_of_an_abandoned_call_is_dropped(monkeypatch):
    hooked: list[object] = []
    monkeypatch.setattr(threading, "excepthook", hooked.append)
    release, finished = threading.Event(), threading.Event()

    def late(event, context):
        try:
            release.wait()
            raise RuntimeError("too late")
        finally:
            finished.set()

    fn = bounded(late, name="late", timeout_s=0.05, max_bytes=1000)
    with pytest.raises(TargetTimeout, match=r"did not answer within timeout_seconds=0\.05"):
        fn({}, None)
    release.set()
    assert finished.wait(10)
    assert hooked == []


def test_answers_errors_and_the_size_cap():
    def answer(event, context):
        return event["give"]

    fn = bounded(answer, name="fn", timeout_s=10, max_bytes=100)
    assert fn({"give": {"answer": "25 days."}}, None) == {"answer": "25 days."}
    with pytest.raises(ResponseTooLarge, match=r"max_response_bytes=100 .*101 characters"):
        fn({"give": "x" * 101}, None)
    with pytest.raises(ResponseTooLarge, match="bytes of JSON"):
        fn({"give": {"answer": "x" * 95}}, None)

    def exits(event, context):
        raise SystemExit(3)

    with pytest.raises(TargetError, match="raised SystemExit"):
        bounded(exits, name="exits", timeout_s=10, max_bytes=100)({}, None)
