"""The RunCase handler takes a batch (the Map's items since issue 18) and still takes one
manifest item, the shape an execution started by the definition before batches sends."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from evalrunner.event import read_event
from evalrunner.pipeline import prepare
from evalrunner.pipeline.context import Runtime
from evalrunner.targets.base import Target, TargetResponse
from lambdas import run_case
from tests.support.suite_bucket import suite_store

SUITE = b"id,question,expected_answer\na,Q one?,alpha\nb,Q two?,beta\n"


class Echo(Target):
    kind = "lambdaArn"

    @property
    def name(self) -> str:
        return "echo"

    def invoke(self, case):
        return TargetResponse(answer="alpha")


def context() -> SimpleNamespace:
    return SimpleNamespace(
        function_name="evalrunner-run-case",
        function_version="$LATEST",
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:evalrunner-run-case",
        memory_limit_in_mb=1024,
        aws_request_id="r-1",
        get_remaining_time_in_millis=lambda: 900_000,
    )


@pytest.fixture
def handler_and_store():
    with suite_store(SUITE) as store:
        prepare.prepare_run(
            read_event(
                {
                    "key": "test-suites/s.csv",
                    "iterations": 1,
                    "target": {"lambdaArn": "fn"},
                    "metrics": ["Exact match"],
                    "run_id": "rh",
                }
            ),
            store,
            now=datetime(2026, 11, 24, tzinfo=UTC),
        )
        runtime = Runtime(s3_client=store.s3, target_factory=lambda spec, *, session: Echo(spec))
        yield run_case.build(runtime), store


def test_a_batch_event_runs_its_cases(handler_and_store):
    handler, store = handler_and_store
    event = {"run_id": "rh", "bucket": "runner-bucket", "item": {"first": 0, "count": 2}}
    assert handler(event, context()) == {"done": 2, "errors": 0, "remaining": None}
    assert len(store.list_keys(store.records_prefix("rh"))) == 2


def test_one_manifest_item_is_still_run_and_recorded(handler_and_store):
    handler, store = handler_and_store
    first, second = store.get_json(store.manifest_key("rh"))
    event = {"run_id": "rh", "bucket": "runner-bucket", "item": first}
    assert handler(event, context()) == {"item_id": first["item_id"], "status": "ok"}
    failure = {"Error": "States.Timeout", "Cause": "timed out"}
    reply = handler({**event, "item": second, "failure": failure}, context())
    assert reply["status"] == "task_failed" and "States.Timeout" in reply["error"]
    statuses = {
        store.get_json(k)["case_id"]: store.get_json(k)["status"]
        for k in store.list_keys(store.records_prefix("rh"))
    }
    assert statuses == {"a": "ok", "b": "task_failed"}


def test_the_catch_path_of_a_batch_records_each_case_as_failed(handler_and_store):
    handler, store = handler_and_store
    failure = {"Error": "States.Timeout", "Cause": "Task timed out after 900.00 seconds"}
    event = {"run_id": "rh", "bucket": "runner-bucket", "item": {"first": 0, "count": 2}}
    reply = handler({**event, "failure": failure}, context())
    assert reply == {"done": 2, "errors": 2, "remaining": None}
    errors = {store.get_json(k)["error"] for k in store.list_keys(store.records_prefix("rh"))}
    assert errors == {"States.Timeout: Task timed out after 900.00 seconds"}


def test_a_reused_case_says_so_on_the_wire(handler_and_store):
    handler, store = handler_and_store
    first, _ = store.get_json(store.manifest_key("rh"))
    event = {"run_id": "rh", "bucket": "runner-bucket", "item": first}
    handler(event, context())
    assert handler(event, context()) == {
        "item_id": first["item_id"],
        "status": "ok",
        "reused": True,
    }


@pytest.mark.parametrize(
    "item",
    [
        {"first": 0},  # a batch without its count
        {"first": 0, "count": 2, "case": {}},  # neither a batch nor an item
        {"item_id": "x"},  # an item without its case
    ],
)
def test_an_item_of_neither_shape_is_refused_at_the_door(handler_and_store, item):
    handler, store = handler_and_store
    event = {"run_id": "rh", "bucket": "runner-bucket", "item": item}
    with pytest.raises(ValidationError, match="item"):
        handler(event, context())
    assert store.list_keys(store.records_prefix("rh")) == []
