"""A block keeps the process's older objects out of the cyclic collector while it runs, puts
them back after, nests, and leaves a process that froze objects itself as it was; the CLI's
run is such a block, the Python API's is not (issue 30)."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from evalrunner.gc_freeze import held_until_exit, older_objects_frozen

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
    """Asked of the process's own object, not of the freeze count: another test's leftover
    thread may free frozen objects meanwhile, which lowers the count but thaws nothing."""
    mine = [object()]
    gc.freeze()
    assert not _tracked(mine)  # frozen: out of every generation the collector walks
    with older_objects_frozen():
        assert not _tracked(mine)
    assert not _tracked(mine) and gc.get_freeze_count() > 0


def _tracked(obj: object) -> bool:
    """Whether ``obj`` is in a generation the collector walks (a frozen object is not)."""
    return any(o is obj for o in gc.get_objects())


def test_a_disabled_collector_is_left_alone() -> None:
    gc.disable()
    with older_objects_frozen():
        assert gc.get_freeze_count() == 0
    assert not gc.isenabled()


def test_evaluate_leaves_the_collector_as_it_found_it(tmp_path: Path) -> None:
    """A notebook or a pytest run calling the Python API keeps its collector: nothing frozen
    during the run (seen from the target, on an interpreter thread) and the thresholds
    untouched (issue 30)."""
    from evalrunner.api import evaluate

    thresholds = gc.get_threshold()
    seen: list[tuple[int, tuple[int, int, int]]] = []

    def target(question: str) -> str:
        seen.append((gc.get_freeze_count(), gc.get_threshold()))
        return "42 days"

    run = evaluate(
        [{"question": "How long?", "expected_answer": "42 days"}],
        target,
        metrics=["Exact match"],
        out=tmp_path / "out",
        preflight=False,
    )
    assert run.summary.items == 1
    assert seen and all(state == (0, thresholds) for state in seen)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds


def test_a_cli_run_runs_frozen_and_thaws(tmp_path: Path) -> None:
    """``evalrunner run``'s process is the run's alone: older objects are set aside for the
    run (seen by the target, an HTTP server in this process) and put back after."""
    from typer.testing import CliRunner

    from evalrunner.cli import app
    from tests.support.loopback_http import Loopback, Reply, Seen

    thresholds = gc.get_threshold()
    seen: list[tuple[int, int]] = []

    def respond(request: Seen) -> Reply:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[2]))
        return Reply(body={"answer": "42 days"})

    suite = tmp_path / "s.csv"
    suite.write_text("question,expected_answer\nHow long?,42 days\n", "utf-8")
    with Loopback(responder=respond) as server:
        result = CliRunner().invoke(
            app,
            [
                "run",
                "--suite",
                str(suite),
                "--target",
                json.dumps({"url": server.url}),
                "--metric",
                "Exact match",
                "--out",
                str(tmp_path / "out"),
                "--quiet",
                "--no-preflight",
            ],
        )
    assert result.exit_code == 0, result.output
    assert seen and all(frozen > 0 and full > thresholds[2] for frozen, full in seen)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds


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


def test_a_held_process_keeps_its_objects_frozen_to_the_end() -> None:
    """Inside ``held_until_exit`` (the command's process, which ends with the block) the run's
    block does not thaw, full collections stay paused, and what is left at the end is frozen
    too, so the interpreter's collection at exit does not walk the heap (issue 31)."""
    before = gc.get_threshold()
    with held_until_exit():
        with older_objects_frozen():
            pass
        frozen = gc.get_freeze_count()
        assert frozen > 0  # not thawed: the process is ending
        assert gc.get_threshold()[2] > before[2]
        built = [[i] for i in range(1000)]  # what the command made after its run
        with older_objects_frozen():  # a second run of the same command is a block too
            assert gc.get_freeze_count() > frozen + len(built) // 2
        after = gc.get_freeze_count()
        more = [[i] for i in range(1000)]
    assert gc.get_freeze_count() > after + len(more) // 2
    assert gc.get_threshold() == before  # full collections resume (nothing left to walk)


def test_the_command_leaves_its_heap_frozen_at_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``evalrunner``'s ``main`` runs frozen and exits frozen (its process ends with it); the
    in-process ``app`` (the test above) thaws."""
    from evalrunner.cli import main
    from tests.support.loopback_http import Loopback, Reply, Seen

    seen: list[int] = []

    def respond(request: Seen) -> Reply:
        seen.append(gc.get_freeze_count())
        return Reply(body={"answer": "42 days"})

    suite = tmp_path / "s.csv"
    suite.write_text("question,expected_answer\nHow long?,42 days\n", "utf-8")
    with Loopback(responder=respond) as server:
        monkeypatch.setattr(
            "sys.argv",
            [
                "evalrunner",
                "run",
                "--suite",
                str(suite),
                "--target",
                json.dumps({"url": server.url}),
                "--metric",
                "Exact match",
                "--out",
                str(tmp_path / "out"),
                "--quiet",
                "--no-preflight",
            ],
        )
        with pytest.raises(SystemExit) as exited:
            main()
    assert exited.value.code == 0
    assert seen and all(frozen > 0 for frozen in seen)
    assert gc.get_freeze_count() > 0
