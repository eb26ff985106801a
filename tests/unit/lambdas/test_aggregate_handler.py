"""The Aggregate handler parses the state machine's state at the door: the Map's and the
Score step's failures (Step Functions' ``{"Error", "Cause"}``) reach the summary as they
always did, and the rest of the state is ignored."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from evalrunner.event import read_event
from evalrunner.pipeline import prepare
from evalrunner.pipeline.context import Runtime
from lambdas import aggregate, run_case
from tests.support.suite_bucket import suite_store
from tests.unit.lambdas.test_run_case_handler import SUITE, Echo, context


@pytest.fixture
def aggregate_and_store():
    with suite_store(SUITE) as store:
        out = prepare.prepare_run(
            read_event(
                {
                    "key": "test-suites/s.csv",
                    "iterations": 1,
                    "target": {"lambdaArn": "fn"},
                    "metrics": ["Exact match"],
                    "run_id": "ra",
                }
            ),
            store,
            now=datetime(2026, 11, 24, tzinfo=UTC),
        )
        runtime = Runtime(s3_client=store.s3, target_factory=lambda spec, *, session: Echo(spec))
        event = {"run_id": "ra", "bucket": "runner-bucket", "item": {"first": 0, "count": 1}}
        run_case.build(runtime)(event, context())  # the second case's task left no record
        yield aggregate.build(runtime), out.model_dump(mode="json")


def test_a_whole_state_with_its_step_failures_is_aggregated(aggregate_and_store):
    handler, prepared = aggregate_and_store
    state = {
        **prepared,  # Prepare's output, as the state machine carries it
        "scoring": {"batch": False, "min_items": 500, "timeout_seconds": 3600},
        "map_failure": {"Error": "States.ExceedToleratedFailureThreshold", "Cause": "too many"},
        "score_failure": {"Error": "States.Timeout", "Cause": ""},
    }
    output = handler({"state": state}, context())
    assert output["step_failures"] == [
        "States.ExceedToleratedFailureThreshold: too many",
        "States.Timeout",
    ]
    assert output["answered"] == 1 and output["task_failures"] == 1
    assert output["partial"] is False  # a Map failure is not a stop
    assert "scoring_failed" in {p["type"] for p in output["problems"]}


def test_a_stopped_run_is_partial_with_its_reason(aggregate_and_store):
    handler, prepared = aggregate_and_store
    state = {
        "run_id": prepared["run_id"],
        "bucket": prepared["bucket"],
        "map_failure": {"Error": "Engine.Stopped", "Cause": "interrupted (Ctrl-C)"},
    }
    output = handler({"state": state}, context())
    assert output["partial"] is True
    assert output["stopped_reason"] == "interrupted (Ctrl-C)"


def test_empty_failures_are_no_failures(aggregate_and_store):
    handler, prepared = aggregate_and_store
    state = {**prepared, "map_failure": {}, "score_failure": None}
    output = handler({"state": state}, context())
    assert output["step_failures"] == [] and output["partial"] is False


def test_a_state_without_its_run_is_refused_at_the_door(aggregate_and_store):
    handler, prepared = aggregate_and_store
    with pytest.raises(ValidationError, match="run_id"):
        handler({"state": {"bucket": prepared["bucket"]}}, context())
