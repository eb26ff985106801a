"""The run summary and the scores file as models: the JSON keeps its keys, order and nulls;
the typed summary is recovered from a cut execution output; the handler notifies with the
whole summary even when the output had to be cut."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from evalrunner.errors import ExecutionFailed
from evalrunner.pipeline.context import Settings
from evalrunner.reports.summary import fit_output, summary_of_output
from evalrunner.run import ScoresFile
from tests.support.summaries import metric, run_summary

#: summary.json's keys, in order: readers of the file (and of the execution output) see this.
SUMMARY_KEYS = [
    "run_id",
    "target",
    "target_kind",
    "suite",
    "started_at",
    "finished_at",
    "iterations",
    "cases",
    "items",
    "answered",
    "target_errors",
    "task_failures",
    "step_failures",
    "partial",
    "stopped_reason",
    "metrics",
    "run_metrics",
    "categories",
    "gates",
    "gates_passed",
    "regression",
    "judge",
    "models",
    "problems",
    "robustness",
    "estimate",
    "actual",
    "bucket",
    "reports",
    "verdict",
    "rescored_from",
]


def test_the_json_keeps_its_keys_order_and_nulls():
    summary = run_summary(
        metrics=[metric("ROUGE-L", average=None)],
        problems=[
            {
                "severity": "low",
                "type": "t",
                "description": "d",
                "affected_cases": [f"c{i}" for i in range(20)],
                "suggested_action": "a",
                "affected_count": 45,
            }
        ],
    )
    out = summary.model_dump(mode="json")
    assert list(out) == SUMMARY_KEYS
    assert out["regression"] is None and out["judge"] is None and out["models"] is None
    (line,) = out["metrics"]
    assert "iteration" not in line and line["average"] is None  # None stays null
    assert list(line)[:4] == ["metric", "evaluator", "primary", "threshold"]
    assert list(out["problems"][0])[-2:] == ["metric", "affected_count"]
    assert list(out["reports"]) == [
        "details",
        "details_xlsx",
        "result",
        "problems",
        "insights",
        "html",
        "report",
        "summary",
        "manifest",
    ]


def test_an_empty_scores_file_is_written_as_before():
    empty = ScoresFile()
    assert empty.model_dump(mode="json") == {"items": {}, "notices": [], "models": {}}
    assert ScoresFile.model_validate({"items": {}, "notices": [], "models": {}}).models is None


def test_the_typed_summary_of_a_cut_output_comes_from_summary_json():
    summary = run_summary(run_metrics={"Big": {"x": "y" * 5000}})
    whole = fit_output(summary)
    assert summary_of_output(whole, lambda key: pytest.fail("no read needed")) == summary
    cut = fit_output(summary, limit=1000)
    assert cut["truncated"] is True and cut["run_metrics"] == {"Big": "see summary.json"}
    reads: list[str] = []

    def read(key: str) -> bytes:
        reads.append(key)
        return summary.model_dump_json().encode()

    assert summary_of_output(cut, read) == summary
    assert reads == [summary.reports.summary]


def test_an_output_that_is_not_a_summary_is_a_clear_error():
    with pytest.raises(ExecutionFailed, match=r"not an evalrunner run summary.*run_id"):
        summary_of_output({"hello": "world"}, lambda key: b"")


class _NoRuns:
    """A runtime for a handler whose step is stubbed: it reads no run, and carries the
    process's settings (the topic) as a Runtime does."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def store(self, bucket: str) -> str:
        return bucket

    def context(self, store: object, run_id: str) -> None:
        return None


def test_a_cut_output_still_notifies_with_every_problem(monkeypatch):
    """The handler publishes the whole summary; it used to publish the cut output, whose
    problems have no description, and the notification failed."""
    from evalrunner.engine.dispatch import LambdaContext
    from lambdas import aggregate as handler

    summary = run_summary(
        run_metrics={"Big": {"x": "y" * 300_000}},
        problems=[
            {
                "severity": "high",
                "type": "below_threshold",
                "description": "ROUGE-L averages 0.2, below its threshold",
                "suggested_action": "a",
                "affected_count": 1,
            }
        ],
    )
    monkeypatch.setattr(handler, "aggregate_run", lambda *a, **k: summary)
    with mock_aws():
        sns = boto3.client("sns", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        topic = sns.create_topic(Name="runs")["TopicArn"]
        queue = sqs.create_queue(QueueName="q")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        output = handler.build(_NoRuns(Settings(topic_arn=topic)))(
            {"state": {"run_id": "r1", "bucket": "bkt"}},
            LambdaContext(function_name="agg", invoked_function_arn="arn:aws:lambda:::agg"),
        )
        (msg,) = sqs.receive_message(QueueUrl=queue)["Messages"]
    assert output["truncated"] is True and json.dumps(output)  # plain JSON, cut
    assert "[high] ROUGE-L averages 0.2, below its threshold" in json.loads(msg["Body"])["Message"]
