"""Map tasks of several cases (issue 18): Prepare's batches, run_batch, its hand-off before a
time limit and its Catch path, on an embedded S3 without the state machine."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import ClassVar

import pytest

from evalrunner.errors import EventError
from evalrunner.event import read_event
from evalrunner.pipeline import batching, prepare, run_case
from evalrunner.pipeline.context import RunContext
from evalrunner.run import ManifestBatch, StepFailure
from evalrunner.targets.base import Target, TargetResponse
from tests.support.suite_bucket import suite_store

NOW = datetime(2026, 11, 24, 5, 0, 0, tzinfo=UTC)
CASES = 10
SUITE = (
    "id,question,expected_answer\n"
    + "".join(f"c{i},Question {i}?,Answer {i}.\n" for i in range(CASES))
).encode()


class Echo(Target):
    kind = "lambdaArn"
    questions: ClassVar[list[str]] = []

    @property
    def name(self) -> str:
        return "echo"

    def invoke(self, case):
        Echo.questions.append(case.question)
        return TargetResponse(answer=case.question.replace("Question", "Answer").rstrip("?") + ".")


def echo(spec, *, session=None):
    return Echo(spec)


@pytest.fixture
def store():
    with suite_store(SUITE) as store:
        Echo.questions = []
        yield store


def prepared(store, **event):
    raw = {
        "key": "test-suites/s.csv",
        "iterations": 1,
        "target": {"lambdaArn": "fn"},
        "metrics": ["Exact match"],
        "run_id": "rb",
        **event,
    }
    return prepare.prepare_run(read_event(raw), store, now=NOW)


def context(store) -> RunContext:
    return RunContext.load(store, "rb", target_factory=echo)


def statuses(store) -> dict[str, str]:
    keys = store.list_keys(store.records_prefix("rb"))
    records = [store.get_json(k) for k in keys]
    return {r["case_id"]: r["status"] for r in records}


@pytest.mark.parametrize(
    ("items", "concurrency", "expected"),
    [
        (1, 10, 1),
        (12, 10, 1),  # small runs keep one case per task
        (159, 10, 1),
        (160, 10, 2),  # 8 tasks per concurrent slot: 160 / 80
        (2000, 10, 25),  # 8 tasks per slot
        (10_000, 10, 100),  # capped
        (50_000, 10, 100),
        (500, 50, 1),  # an I/O-bound run keeps its 50 calls in flight
        (100_000, 1000, 12),
    ],
)
def test_auto_cases_per_task(items, concurrency, expected):
    assert batching.auto_cases_per_task(items, concurrency) == expected


@pytest.mark.parametrize(("items", "per_task"), [(10, 3), (10, 1), (10, 10), (10, 25), (0, 4)])
def test_batches_cover_every_item_once_in_order(items, per_task):
    refs = batching.batches(items, per_task)
    covered = [i for b in refs for i in range(b.first, b.first + b.count)]
    assert covered == list(range(items))
    assert all(1 <= b.count <= per_task for b in refs)


def test_prepare_writes_the_maps_batches(store):
    out = prepared(store, cases_per_task=4)
    assert out.cases_per_task == 4 and out.batches_key == store.batches_key("rb")
    assert store.get_json(out.batches_key) == [
        {"first": 0, "count": 4},
        {"first": 4, "count": 4},
        {"first": 8, "count": 2},
    ]
    assert len(store.get_json(out.manifest_key)) == CASES  # the manifest is unchanged


def test_prepare_chooses_cases_per_task_when_the_event_does_not(store):
    out = prepared(store)
    assert out.cases_per_task == 1
    assert len(store.get_json(out.batches_key)) == CASES


@pytest.mark.parametrize("value", [0, -1, 1001, "4", 2.5])
def test_a_bad_cases_per_task_is_named(store, value):
    with pytest.raises(EventError) as info:
        prepared(store, cases_per_task=value)
    assert "cases_per_task" in str(info.value)


def test_run_batch_runs_its_items_and_only_them(store):
    prepared(store, cases_per_task=4)
    reply = run_case.run_batch(
        context(store), ManifestBatch.model_validate({"first": 4, "count": 4})
    )
    assert reply.model_dump(mode="json") == {"done": 4, "errors": 0, "remaining": None}
    assert Echo.questions == [f"Question {i}?" for i in range(4, 8)]
    assert set(statuses(store)) == {f"c{i}" for i in range(4, 8)}


def test_a_case_that_raises_is_recorded_and_the_batch_goes_on(store, monkeypatch):
    prepared(store, cases_per_task=5)
    real = run_case.run_case

    def crashing(ctx, item):
        if item.case.case_id == "c2":
            raise RuntimeError("the case's code blew up")
        return real(ctx, item)

    monkeypatch.setattr(run_case, "run_case", crashing)
    reply = run_case.run_batch(
        context(store), ManifestBatch.model_validate({"first": 0, "count": 5})
    )
    assert reply.model_dump(mode="json") == {"done": 5, "errors": 1, "remaining": None}
    found = statuses(store)
    assert found.pop("c2") == "task_failed"
    assert set(found.values()) == {"ok"} and len(found) == 4
    keys = store.list_keys(store.records_prefix("rb"))
    (record,) = [r for r in map(store.get_json, keys) if r["case_id"] == "c2"]
    assert record["error"] == "RuntimeError: the case's code blew up"


def test_a_task_near_its_time_limit_hands_the_rest_over(store):
    prepared(store, cases_per_task=10)
    # asked before each case after the first: 130 s left, then 10 s less each time; under
    # the 60 s reserve (50 s) before the tenth
    clock = itertools.count(130, -10)
    reply = run_case.run_batch(
        context(store), ManifestBatch.model_validate({"first": 0, "count": 10}), lambda: next(clock)
    )
    assert reply.model_dump(mode="json") == {
        "done": 9,
        "errors": 0,
        "remaining": {"first": 9, "count": 1},
    }
    assert len(statuses(store)) == 9
    # the state machine gives the remaining batch to a new task, which finishes the run
    again = run_case.run_batch(context(store), reply.remaining, lambda: 900.0)
    assert again.model_dump(mode="json") == {"done": 1, "errors": 0, "remaining": None}
    assert Echo.questions == [f"Question {i}?" for i in range(CASES)]  # each asked once
    assert set(statuses(store).values()) == {"ok"} and len(statuses(store)) == CASES


def test_the_first_case_of_a_task_always_runs(store):
    prepared(store, cases_per_task=3)
    reply = run_case.run_batch(
        context(store), ManifestBatch.model_validate({"first": 0, "count": 3}), lambda: 1.0
    )
    assert reply.model_dump(mode="json") == {
        "done": 1,
        "errors": 0,
        "remaining": {"first": 1, "count": 2},
    }


def test_the_reserve_grows_with_the_slowest_case(store, monkeypatch):
    prepared(store, cases_per_task=3)
    ticks = iter([0.0, 100.0, 100.0, 100.0])  # the first case takes 100 s
    monkeypatch.setattr(run_case.time, "monotonic", lambda: next(ticks))
    # 150 s left: above the 60 s floor, below twice the slowest case
    reply = run_case.run_batch(
        context(store), ManifestBatch.model_validate({"first": 0, "count": 3}), lambda: 150.0
    )
    assert reply.remaining == ManifestBatch(first=1, count=2)


def test_the_catch_path_records_a_batchs_unfinished_items(store):
    prepared(store, cases_per_task=4)
    ctx = context(store)
    run_case.run_case(ctx, ctx.manifest_items(ManifestBatch(first=0, count=1))[0])
    failure = {"Error": "States.Timeout", "Cause": "Task timed out after 900.00 seconds"}
    reply = run_case.record_batch_failure(
        ctx,
        ManifestBatch.model_validate({"first": 0, "count": 4}),
        StepFailure.model_validate(failure),
    )
    assert reply.model_dump(mode="json") == {"done": 4, "errors": 3, "remaining": None}
    found = statuses(store)
    assert found == {
        "c0": "ok",
        "c1": "task_failed",
        "c2": "task_failed",
        "c3": "task_failed",
    }
    last = ctx.manifest_items(ManifestBatch(first=3, count=1))[0].item_id
    assert "Task timed out" in store.get_json(store.record_key("rb", last))["error"]


def test_a_batch_outside_the_manifest_is_an_error(store):
    prepared(store)
    with pytest.raises(
        ValueError, match=r"items 8\.\.11 are not in run rb's manifest \(10 items\)"
    ):
        run_case.run_batch(context(store), ManifestBatch.model_validate({"first": 8, "count": 4}))


def test_the_manifest_is_read_once_per_context(store, monkeypatch):
    prepared(store, cases_per_task=2)
    ctx = context(store)
    reads: list[str] = []
    real = store.get_json
    monkeypatch.setattr(store, "get_json", lambda key: reads.append(key) or real(key))
    for first in range(0, CASES, 2):
        run_case.run_batch(ctx, ManifestBatch.model_validate({"first": first, "count": 2}))
    assert reads.count(store.manifest_key("rb")) == 1
