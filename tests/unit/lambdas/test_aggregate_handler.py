"""The Aggregate handler parses the state machine's state at the door: the Map's and the
Score step's failures (Step Functions' ``{"Error", "Cause"}``) reach the summary as they
always did, and the rest of the state is ignored."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest
from pydantic import ValidationError

from evalrunner.event import read_event
from evalrunner.pipeline import prepare
from evalrunner.pipeline.context import ENV_TOPIC_ARN, Runtime, Settings
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


def test_the_summary_goes_to_the_topic_of_the_runtimes_settings(monkeypatch):
    """The topic is a setting read once into the runtime (EVALRUNNER_TOPIC_ARN, set by the
    stack), not looked up in the environment by the handler on each run."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv(ENV_TOPIC_ARN, raising=False)
    with suite_store(SUITE) as store:
        sns, sqs = boto3.client("sns"), boto3.client("sqs")
        topic = sns.create_topic(Name="runs")["TopicArn"]
        queue = sqs.create_queue(QueueName="summaries")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn["Attributes"]["QueueArn"])
        settings = Settings.from_env({ENV_TOPIC_ARN: topic, "EVALRUNNER_BUCKET": store.bucket})
        assert settings.topic_arn == topic
        runtime = Runtime(s3_client=store.s3, settings=settings)
        raw = {"key": "test-suites/s.csv", "iterations": 1, "target": {"lambdaArn": "fn"}}
        out = prepare.prepare_run(read_event({**raw, "metrics": ["Exact match"]}), store)
        aggregate.build(runtime)({"state": out.model_dump(mode="json")}, context())
        messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
        assert len(messages) == 1 and out.run_id in messages[0]["Body"]
