"""Prepare records the run's cost estimate in run.json (for summary.json); an estimate that
fails costs the comparison, never the run."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from evalrunner.event import read_event
from evalrunner.pipeline import prepare
from evalrunner.storage import RunStore
from tests.support.suite_bucket import suite_store

NOW = datetime(2026, 11, 22, 9, 30, 5, tzinfo=UTC)
SUITE = (
    b"id,question,expected_answer,expected_contexts\n"
    b"a,Q one?,alpha beta,alpha\nb,Q two?,gamma,gamma\n"
)
EVENT = {
    "key": "test-suites/s.csv",
    "iterations": 2,
    "run_id": "r1",
    "target": {"lambdaArn": "fn"},
    "metrics": ["Exact match", "Faithfulness"],
    "judge": {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "gpt-4o-mini"}},
}


@pytest.fixture
def store() -> Iterator[RunStore]:
    with suite_store(SUITE) as store:
        yield store


def test_run_json_carries_the_estimate(store: RunStore) -> None:
    prepare.prepare_run(read_event(dict(EVENT)), store, now=NOW)
    estimate = store.get_json(store.run_key("r1"))["estimate"]
    assert estimate["items"] == 4 and estimate["iterations"] == 2
    assert estimate["judge"]["model"] == "gpt-4o-mini" and estimate["judge"]["calls"] > 0
    assert estimate["aws"]["map_child_executions"] == 4


def test_a_failing_estimate_does_not_fail_the_run(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("price table unreadable")

    monkeypatch.setattr(prepare, "estimate_run", broken)
    out = prepare.prepare_run(read_event(dict(EVENT)), store, now=NOW)
    assert out.item_count == 4
    assert store.get_json(store.run_key("r1"))["estimate"] is None
