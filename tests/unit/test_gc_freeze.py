"""A run keeps the process's older objects out of the cyclic collector while it runs, puts
them back after, nests, and leaves a process that froze objects itself as it was."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from evalrunner.gc_freeze import older_objects_frozen

pytestmark = pytest.mark.usefixtures("thawed_collector")


def test_older_objects_are_frozen_inside_and_thawed_after() -> None:
    old = [object()]  # tracked by the collector before the block
    with older_objects_frozen():
        assert gc.get_freeze_count() > 0
        young: list[object] = []
        young.append(young)  # a cycle made inside is still collected
        del young
        assert gc.collect() >= 1
    assert gc.get_freeze_count() == 0
    assert gc.is_tracked(old)


def test_thawed_even_when_the_block_fails() -> None:
    with pytest.raises(RuntimeError), older_objects_frozen():
        raise RuntimeError("report bug")
    assert gc.get_freeze_count() == 0


def test_blocks_nest_and_only_the_outermost_thaws() -> None:
    """The engine freezes at a run's start; Aggregate, inside, adds what the run built."""
    with older_objects_frozen():
        outer = gc.get_freeze_count()
        built = [[i] for i in range(1000)]  # objects the run makes before Aggregate
        with older_objects_frozen():
            assert gc.get_freeze_count() >= outer + len(built)
        assert gc.get_freeze_count() >= outer + len(built)  # not thawed by the inner block
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_objects_itself_keeps_them_frozen() -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()
    with older_objects_frozen():
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == frozen


def test_a_disabled_collector_is_left_alone() -> None:
    gc.disable()
    with older_objects_frozen():
        assert gc.get_freeze_count() == 0
    assert not gc.isenabled()


def test_a_local_run_runs_frozen_and_thaws(tmp_path: Path) -> None:
    from evalrunner.engine import LocalEngine
    from lambdas.local import local_pipeline

    seen: list[int] = []

    def target(event: dict, context: object) -> dict:
        seen.append(gc.get_freeze_count())  # on an interpreter thread, mid-run
        return {"answer": "42 days"}

    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"t": target})
    engine.run(
        {"key": "test-suites/f.csv", "iterations": 1, "target": {"lambdaArn": "t"}},
        suite=b"id,question,expected_answer\nc1,How long?,42 days\n",
        out_dir=tmp_path,
    )
    assert seen and all(count > 0 for count in seen)
    assert gc.get_freeze_count() == 0


def test_full_collections_are_paused_inside_and_the_thresholds_put_back() -> None:
    before = gc.get_threshold()
    with older_objects_frozen():
        young, middle, full = gc.get_threshold()
        assert (young, middle) == before[:2] and full > 1000 * before[2]
        with older_objects_frozen():  # nested: still paused
            assert gc.get_threshold()[2] == full
        assert gc.get_threshold()[2] == full
        cycle: list[object] = []
        cycle.append(cycle)  # young cycles are still collected
        del cycle
        assert gc.collect(1) >= 1
    assert gc.get_threshold() == before


def test_the_thresholds_of_a_process_that_froze_itself_are_not_touched() -> None:
    gc.freeze()
    before = gc.get_threshold()
    with older_objects_frozen():
        assert gc.get_threshold() == before
