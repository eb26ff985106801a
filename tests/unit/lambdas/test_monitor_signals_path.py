"""Issue 34, both deployed halves in one path: the scheduled monitor function reads Bedrock
invocation logs from an S3 prefix and starts the test runner on the suite it wrote; that
execution's own input runs through the very handlers (Prepare as the state machine calls it,
RunCase, Aggregate), and Aggregate puts the monitor's CloudWatch series; the next schedule
over the same logs starts nothing and puts nothing new. moto stands in for S3, Step
Functions (whose executions here do not run the handlers) and CloudWatch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from evalrunner.event import read_event
from evalrunner.monitor.deployed import ENV_SOURCE, ENV_STATE_MACHINE
from evalrunner.pipeline import prepare
from evalrunner.pipeline.context import Runtime, Settings
from evalrunner.signals.series import monitor_suite_label
from evalrunner.signals.settings import ENV_NAMESPACE
from evalrunner.storage import RunStore
from lambdas import aggregate, monitor, run_case
from tests.unit.lambdas.test_monitor_handler import PREFIX, SAMPLE, context

NAMESPACE = "evalrunner/monitor"
BUCKET = "runner-bucket"
NAME = "prod-hr"


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        s3.create_bucket(Bucket="model-logs")
        s3.put_object(Bucket="model-logs", Key=PREFIX + "part-1.json.gz", Body=SAMPLE.read_bytes())
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        arn = sfn.create_state_machine(
            name="evalrunner",
            definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
            roleArn="arn:aws:iam::123456789012:role/evalrunner-sfn",
        )["stateMachineArn"]
        monkeypatch.setenv(ENV_STATE_MACHINE, arn)
        monkeypatch.setenv(ENV_SOURCE, "s3://model-logs/AWSLogs/123456789012/")
        # the monitor's and Aggregate's settings, as the stack sets them
        settings = Settings.from_env(
            {
                "EVALRUNNER_BUCKET": BUCKET,
                "AWS_DEFAULT_REGION": "us-east-1",
                ENV_NAMESPACE: NAMESPACE,
            }
        )
        runtime = Runtime(s3_client=s3, settings=settings)
        yield SimpleNamespace(
            s3=s3,
            sfn=sfn,
            arn=arn,
            runtime=runtime,
            store=RunStore(BUCKET, client=s3),
            cloudwatch=boto3.client("cloudwatch", region_name="us-east-1"),
        )


def run_execution(aws: SimpleNamespace, execution_arn: str) -> dict[str, Any]:
    """What the state machine does with the execution's input: Prepare, every case, Aggregate."""
    raw = json.loads(aws.sfn.describe_execution(executionArn=execution_arn)["input"])
    out = prepare.prepare_run(read_event(raw), aws.store)
    batch = {"run_id": out.run_id, "bucket": BUCKET, "item": {"first": 0, "count": out.item_count}}
    done = run_case.build(aws.runtime)(batch, context())
    assert done["errors"] == 0 and done["done"] == out.item_count, done
    result: dict[str, Any] = aggregate.build(aws.runtime)(
        {"state": out.model_dump(mode="json")}, context()
    )
    return result


def points(aws: SimpleNamespace, name: str, metric: str) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    return aws.cloudwatch.get_metric_statistics(
        Namespace=NAMESPACE,
        MetricName=name,
        Dimensions=[
            {"Name": "Target", "Value": NAME},
            {"Name": "Suite", "Value": monitor_suite_label(NAME)},
            {"Name": "Metric", "Value": metric},
        ],
        StartTime=now - timedelta(days=1),
        EndTime=now + timedelta(hours=1),
        Period=3600,
        Statistics=["Average", "SampleCount"],
    )["Datapoints"]


def test_the_schedule_scores_logs_into_cloudwatch_once(deployed: SimpleNamespace) -> None:
    aws = deployed
    reply = monitor.build(aws.runtime)({"name": NAME}, context())
    assert reply["status"] == "started" and reply["scored"] == 4, reply
    (execution,) = aws.sfn.list_executions(stateMachineArn=aws.arn)["executions"]

    output = run_execution(aws, execution["executionArn"])
    assert output["cases"] == 4
    primary = {m["metric"]: m for m in output["metrics"] if m["primary"]}
    history = aws.store.get_json(f"test-reports/{NAME}/history.json")
    (run,) = history["runs"]
    # a metric no interaction could be scored on (Schema valid: no JSON answers) adds no point
    scored = {metric for metric, rate in run["pass_rates"].items() if rate is not None}
    assert "PII in answer" in scored and scored <= set(primary)
    for metric in scored:
        (rate,) = points(aws, "PassRate", metric)
        assert rate["Average"] == pytest.approx(run["pass_rates"][metric]), metric
        (average,) = points(aws, "Average", metric)
        assert average["Average"] == pytest.approx(primary[metric]["average"]), metric
    put = aws.cloudwatch.list_metrics(Namespace=NAMESPACE)["Metrics"]
    assert {m["MetricName"] for m in put} == {"Average", "PassRate"}
    assert {d["Value"] for m in put for d in m["Dimensions"] if d["Name"] == "Metric"} == scored

    again = monitor.build(aws.runtime)({"name": NAME}, context())
    assert again["status"] == "nothing_new" and again["scored"] == 0 and again["duplicates"] == 4
    assert len(aws.sfn.list_executions(stateMachineArn=aws.arn)["executions"]) == 1
    for metric in scored:  # no second run: each series still holds the one point
        assert [p["SampleCount"] for p in points(aws, "PassRate", metric)] == [1.0]
