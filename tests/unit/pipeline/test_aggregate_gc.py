"""Aggregate sets the process's older objects aside from the cyclic collector while it runs
(issue 18: full collections walking the imported libraries and the embedded engine were a
quarter of its CPU); inside a local run, it adds what the run built to what the engine froze
(the block itself: tests/unit/test_gc_freeze.py)."""

from __future__ import annotations

import gc

import pytest

from evalrunner.pipeline import aggregate

pytestmark = pytest.mark.usefixtures("thawed_collector")


def test_aggregate_runs_with_older_objects_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    monkeypatch.setattr(aggregate, "_aggregate", lambda *a, **k: seen.append(gc.get_freeze_count()))
    aggregate.aggregate_run(None)  # type: ignore[arg-type]
    assert seen and seen[0] > 0
    assert gc.get_freeze_count() == 0


def test_inside_a_run_aggregate_freezes_what_the_run_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalrunner.gc_freeze import older_objects_frozen

    seen: list[int] = []
    monkeypatch.setattr(aggregate, "_aggregate", lambda *a, **k: seen.append(gc.get_freeze_count()))
    with older_objects_frozen():  # the engine's, at the run's start
        at_start = gc.get_freeze_count()
        built = [[i] for i in range(2000)]  # what the run made before Aggregate
        aggregate.aggregate_run(None)  # type: ignore[arg-type]
        assert gc.get_freeze_count() >= at_start + len(built)  # still frozen: the engine thaws
    assert seen[0] >= at_start + len(built)
    assert gc.get_freeze_count() == 0
