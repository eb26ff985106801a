"""Map tasks of several cases through the state machine in the embedded engine (issue 18): the
batches Prepare writes, the hand-off of a task near its time limit (MoreCases -> NextCases ->
RunCase), and the Catch path of a task that dies part-way."""

from __future__ import annotations

import threading

import pytest

from evalrunner.engine import LocalEngine
from evalrunner.pipeline import run_case as run_case_module
from lambdas import run_case
from lambdas.local import local_pipeline

from .conftest import echo_target, read_csv

RUN_CASE = "evalrunner-run-case"


def event(**extra):
    return {
        "key": "test-suites/mini.csv",
        "iterations": 2,
        "target": {"lambdaArn": "echo-target"},
        "metrics": ["Exact match"],
        "cases_per_task": 3,
        **extra,
    }


@pytest.fixture(autouse=True)
def deployed_region(monkeypatch):
    """run_case.handler is the deployed container's (its runtime builds the target through
    boto3, in the function's region): the region a deployed function has, which the engine
    no longer sets in the process environment."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


class Spy:
    """The RunCase function, counting the tasks it is given; optionally dying part-way."""

    def __init__(self, die_after: int | None = None) -> None:
        self.events: list[dict] = []
        self.die_after = die_after
        self._lock = threading.Lock()

    def __call__(self, ev, context):
        with self._lock:
            self.events.append(ev)
        item = ev["item"]
        if self.die_after is not None and "failure" not in ev and item["first"] == 0:
            # the task runs its first cases, then its Lambda dies (out of memory)
            run_case.handler({**ev, "item": {"first": 0, "count": self.die_after}}, context)
            raise MemoryError("Runtime exited: out of memory")
        return run_case.handler(ev, context)

    def tasks(self) -> list[dict]:
        return [e["item"] for e in self.events if "failure" not in e]


def details(result) -> list[dict[str, str]]:
    return read_csv(next(p for p in result.files if p.name.endswith("details.csv")))


def run(tmp_path, suite_file, spy, function_timeout=None, **extra):
    engine = LocalEngine(
        pipeline=local_pipeline,
        extra_functions={"echo-target": echo_target, RUN_CASE: spy},
        function_timeout=function_timeout,
    )
    seen = []
    result = engine.run(event(**extra), suite=suite_file, out_dir=tmp_path, on_progress=seen.append)
    return result, seen


def test_a_task_runs_several_cases_and_every_case_is_reported(tmp_path, suite_file):
    spy = Spy()
    result, progress = run(tmp_path, suite_file, spy)
    # 4 cases x 2 iterations in tasks of 3
    assert sorted((t["first"], t["count"]) for t in spy.tasks()) == [(0, 3), (3, 3), (6, 2)]
    rows = details(result)
    assert len(rows) == 8 and result.summary.items == 8
    assert sorted(r["case_id"] for r in rows) == sorted(["c1", "c2", "c3", "c4"] * 2)
    assert [r["status"] for r in rows].count("target_error") == 2  # c3 fails on purpose
    last = progress[-1]
    assert (last.total, last.done, last.errors) == (8, 8, 2)


def test_a_task_near_its_time_limit_hands_its_cases_to_a_new_task(
    tmp_path, suite_file, monkeypatch
):
    # a reserve above Lambda's whole 900 s: every task stops after its first case (a local
    # run has no function limit unless asked, so this one asks for Lambda's)
    monkeypatch.setattr(run_case_module, "MIN_CASE_RESERVE_S", 10_000.0)
    spy = Spy()
    result, _ = run(tmp_path, suite_file, spy, function_timeout=900.0)
    # the state machine gave each unstarted remainder to a new task, one case at a time
    assert sorted((t["first"], t["count"]) for t in spy.tasks()) == [
        (0, 3),
        (1, 2),
        (2, 1),
        (3, 3),
        (4, 2),
        (5, 1),
        (6, 2),
        (7, 1),
    ]
    rows = details(result)
    assert len(rows) == 8
    assert sorted(r["status"] for r in rows) == ["ok"] * 6 + ["target_error"] * 2


def test_a_task_that_dies_part_way_keeps_its_finished_cases(tmp_path, suite_file):
    spy = Spy(die_after=2)
    result, progress = run(tmp_path, suite_file, spy)
    failures = [e for e in spy.events if "failure" in e]
    assert [f["item"] for f in failures] == [{"first": 0, "count": 3}]
    assert "MemoryError" in failures[0]["failure"]["Error"]
    by_iteration = {(r["case_id"], r["iteration"]): r for r in details(result)}
    assert len(by_iteration) == 8
    # manifest items 0..2 are c1#1, c2#1, c3#1: the first two ran before the task died
    assert by_iteration[("c1", "1")]["status"] == "ok"
    assert by_iteration[("c2", "1")]["status"] == "ok"
    failed = by_iteration[("c3", "1")]
    assert failed["status"] == "task_failed" and "out of memory" in failed["error"]
    assert result.summary.task_failures == 1
    assert (progress[-1].done, progress[-1].errors) == (8, 2)
