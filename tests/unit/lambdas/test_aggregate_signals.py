"""The deployed path of a monitor run's signals: the very handlers (Prepare, RunCase,
Aggregate) over moto's S3, CloudWatch, SNS and SQS. A run of a suite the monitor wrote puts
Average and PassRate per primary metric (Target / Suite / Metric) into CloudWatch, its SNS
message lists the worst interactions masked and cut, and the target's history records the
same series; a suite run puts nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from evalrunner.event import read_event
from evalrunner.pipeline import prepare
from evalrunner.pipeline.context import ENV_TOPIC_ARN, Runtime, Settings
from evalrunner.signals.series import monitor_suite_label
from evalrunner.signals.settings import ENV_NAMESPACE, ENV_TEXT_CHARS, ENV_WORST
from lambdas import aggregate, run_case
from tests.support.suite_bucket import suite_store
from tests.unit.lambdas.test_run_case_handler import context

NAMESPACE = "evalrunner/monitor"
LONG = "Our leave policy gives twenty days a year. " * 30
ROWS = [
    # answered in the question's language: passes Language mismatch
    {"id": "i1", "question": "How many leave days do I get?", "actual_answer": LONG},
    # French answers to English questions fail it; the one with PII is the user's own
    {
        "id": "i2",
        "question": "Can you mail my payslip to jo.doe@example.com? My card is 4111 1111 "
        "1111 1111.",
        "actual_answer": "Nous avons envoyé la fiche de paie à jo.doe@example.com, merci "
        "de votre patience, bonne journée à vous et à votre équipe.",
    },
    {
        "id": "i3",
        "question": "What is the dress code at the office?",
        "actual_answer": "La tenue de travail est décontractée du lundi au vendredi, sauf "
        "pour les réunions avec les clients.",
    },
]


def run_monitor_suite(key: str, target: str, env: dict[str, str]):
    """One whole run of ``key`` through the handlers; yields the clients for reading back."""
    with suite_store(json.dumps(ROWS), key=key) as store:
        sns, sqs = boto3.client("sns"), boto3.client("sqs")
        topic = sns.create_topic(Name="runs")["TopicArn"]
        queue = sqs.create_queue(QueueName="summaries")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn["Attributes"]["QueueArn"])
        settings = Settings.from_env(
            {ENV_TOPIC_ARN: topic, "EVALRUNNER_BUCKET": store.bucket, **env}
        )
        runtime = Runtime(s3_client=store.s3, settings=settings)
        raw = {
            "key": key,
            "iterations": 1,
            "target": {"logged": target},
            "metrics": ["Language mismatch"],
            "run_id": "m1",
        }
        out = prepare.prepare_run(read_event(raw), store)
        batch = {"run_id": out.run_id, "bucket": store.bucket}
        run_case.build(runtime)({**batch, "item": {"first": 0, "count": 3}}, context())
        output = aggregate.build(runtime)({"state": out.model_dump(mode="json")}, context())
        messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
        body = json.loads(messages[0]["Body"])["Message"]
        yield store, boto3.client("cloudwatch"), output, body


@pytest.fixture
def monitor_run(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    key = "test-suites/_monitor/prod-hr/m1.json"
    env = {ENV_NAMESPACE: NAMESPACE, ENV_WORST: "5", ENV_TEXT_CHARS: "80"}
    yield from run_monitor_suite(key, "prod-hr", env)


def series(cloudwatch, name: str, metric: str) -> list[float]:
    now = datetime.now(UTC)
    stats = cloudwatch.get_metric_statistics(
        Namespace=NAMESPACE,
        MetricName=name,
        Dimensions=[
            {"Name": "Target", "Value": "prod-hr"},
            {"Name": "Suite", "Value": monitor_suite_label("prod-hr")},
            {"Name": "Metric", "Value": metric},
        ],
        StartTime=now - timedelta(days=1),
        EndTime=now + timedelta(hours=1),
        Period=3600,
        Statistics=["Average", "SampleCount"],
    )
    return [p["Average"] for p in stats["Datapoints"]]


def test_a_monitor_run_puts_its_series_into_cloudwatch(monitor_run):
    _, cloudwatch, output, _ = monitor_run
    metric = next(m for m in output["metrics"] if m["primary"])
    assert metric["metric"] == "Language mismatch"
    assert series(cloudwatch, "PassRate", "Language mismatch") == [pytest.approx(1 / 3)]
    assert series(cloudwatch, "Average", "Language mismatch") == [pytest.approx(metric["average"])]
    names = {
        (m["MetricName"], tuple(sorted((d["Name"], d["Value"]) for d in m["Dimensions"])))
        for m in cloudwatch.list_metrics(Namespace=NAMESPACE)["Metrics"]
    }
    dims = (("Metric", "Language mismatch"), ("Suite", "_monitor/prod-hr"), ("Target", "prod-hr"))
    assert names == {("Average", dims), ("PassRate", dims)}


def test_the_message_lists_the_worst_interactions_masked_and_cut(monitor_run):
    _, _, _, body = monitor_run
    section = body[body.index("Worst interactions") :]
    assert "Worst interactions (PII masked, texts cut to 80 characters):" in section
    assert "1. i2: Language mismatch" in section and "2. i3: Language mismatch" in section
    assert "i1:" not in section  # it failed nothing
    assert "jo.doe@example.com" not in body and "4111" not in body
    assert "Q: Can you mail my payslip to <EMAIL_1>? My card is <CARD_1>." in section
    assert "A: Nous avons envoyé la fiche de paie à <EMAIL_1>" in section
    answer_line = next(line for line in section.splitlines() if line.startswith("   A: Nous"))
    assert len(answer_line) <= len("   A: ") + 80 and answer_line.endswith("…")


def test_the_history_records_the_same_series(monitor_run):
    store, cloudwatch, _, _ = monitor_run
    history = store.get_json("test-reports/prod-hr/history.json")
    (run,) = history["runs"]
    assert run["pass_rates"] == {"Language mismatch": pytest.approx(1 / 3)}
    assert series(cloudwatch, "Average", "Language mismatch") == [
        pytest.approx(run["averages"]["Language mismatch"])
    ]


def test_a_suite_run_puts_nothing_and_lists_no_interaction(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    env = {ENV_NAMESPACE: NAMESPACE}
    for _, cloudwatch, output, body in run_monitor_suite("test-suites/hr.json", "hr", env):
        assert output["metrics"]
        assert cloudwatch.list_metrics(Namespace=NAMESPACE)["Metrics"] == []
        assert "Worst interactions" not in body


def test_without_a_namespace_nothing_is_put_but_the_message_still_lists(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    key = "test-suites/_monitor/prod-hr/m1.json"
    for _, cloudwatch, _, body in run_monitor_suite(key, "prod-hr", {}):
        assert cloudwatch.list_metrics(Namespace=NAMESPACE)["Metrics"] == []
        assert "1. i2: Language mismatch" in body
