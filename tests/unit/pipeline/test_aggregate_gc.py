"""Aggregate sets the process's older objects aside from the cyclic collector while it runs
(issue 18: full collections walking the imported libraries and the embedded engine were a
quarter of its CPU), and leaves a process that froze objects itself as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from evalrunner.pipeline import aggregate
from evalrunner.pipeline.aggregate import _older_objects_frozen


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.enable()


def test_older_objects_are_frozen_inside_and_thawed_after() -> None:
    old = [object()]  # tracked by the collector before the block
    with _older_objects_frozen():
        assert gc.get_freeze_count() > 0
        young: list[object] = []
        young.append(young)  # a cycle made inside is still collected
        del young
        assert gc.collect() >= 1
    assert gc.get_freeze_count() == 0
    assert gc.is_tracked(old)


def test_thawed_even_when_the_block_fails() -> None:
    with pytest.raises(RuntimeError), _older_objects_frozen():
        raise RuntimeError("report bug")
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_objects_itself_keeps_them_frozen() -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()
    with _older_objects_frozen():
        pass
    assert gc.get_freeze_count() == frozen


def test_a_disabled_collector_is_left_alone() -> None:
    gc.disable()
    with _older_objects_frozen():
        assert gc.get_freeze_count() == 0
    assert not gc.isenabled()


def test_aggregate_runs_with_older_objects_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    monkeypatch.setattr(aggregate, "_aggregate", lambda *a, **k: seen.append(gc.get_freeze_count()))
    aggregate.aggregate_run(None)  # type: ignore[arg-type]
    assert seen and seen[0] > 0
    assert gc.get_freeze_count() == 0
