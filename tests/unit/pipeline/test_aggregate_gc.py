"""Who sets the cyclic collector aside (issue 30): the deployed Aggregate handler runs with the
process's older objects frozen (issue 18: full collections walking the imported libraries were
a quarter of its CPU), while ``aggregate_run`` itself, the core a notebook or a test session
reaches through the Python API, leaves the collector as it found it (the block itself:
tests/unit/test_gc_freeze.py)."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import pytest

import lambdas.aggregate
from evalrunner.pipeline import aggregate
from lambdas._common import RUNTIME

pytestmark = pytest.mark.usefixtures("thawed_collector")


class Seen(Exception):
    """Raised by the stand-in step once it has looked at the collector."""


def lambda_context() -> SimpleNamespace:
    return SimpleNamespace(
        function_name="evalrunner-aggregate",
        function_version="$LATEST",
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:evalrunner-aggregate",
        memory_limit_in_mb=1024,
        aws_request_id="r-1",
        get_remaining_time_in_millis=lambda: 900_000,
    )


def test_aggregate_run_leaves_the_collector_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    thresholds = gc.get_threshold()
    seen: list[tuple[int, tuple[int, int, int]]] = []
    monkeypatch.setattr(
        aggregate,
        "_aggregate",
        lambda *a, **k: seen.append((gc.get_freeze_count(), gc.get_threshold())),
    )
    aggregate.aggregate_run(None)  # type: ignore[arg-type]
    assert seen == [(0, thresholds)]
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds


def test_the_deployed_aggregate_handler_runs_frozen_and_thaws(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thresholds = gc.get_threshold()
    seen: list[tuple[int, int]] = []

    def step(context: object, *args: object, **kwargs: object) -> None:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[2]))
        raise Seen

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setattr(lambdas.aggregate, "aggregate_run", step)
    monkeypatch.setattr(RUNTIME, "context", lambda store, run_id: None)
    with pytest.raises(Seen):
        lambdas.aggregate.handler(
            {"state": {"run_id": "r1", "bucket": "gc-bucket"}}, lambda_context()
        )
    ((frozen, full_threshold),) = seen
    assert frozen > 0 and full_threshold > thresholds[2]
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds
