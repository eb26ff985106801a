"""Issue 34 item 2, deployed: the scheduled monitor function reads Bedrock invocation logs
from an S3 prefix, writes the new interactions as a suite of logged answers (which the upload
trigger leaves alone), starts the state machine on it and moves the watermark in the run
bucket; the next schedule finds nothing new and starts nothing."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest
from moto import mock_aws

from evalrunner.event import parse_event
from evalrunner.monitor.deployed import ENV_SOURCE, ENV_STATE_MACHINE
from evalrunner.monitor.model import MonitorError
from evalrunner.monitor.watermark import Watermark, watermark_key
from evalrunner.pipeline.context import Runtime, Settings
from evalrunner.suite.readers import read_suite
from evalrunner.upload import is_suite_upload
from lambdas import monitor

SAMPLE = Path(__file__).parents[3] / "test_suites" / "monitor" / "bedrock-invocations.json.gz"
PREFIX = "AWSLogs/123456789012/BedrockModelInvocationLogs/eu-west-1/2026/01/31/11/"


def context() -> SimpleNamespace:
    return SimpleNamespace(
        function_name="evalrunner-monitor",
        function_version="$LATEST",
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:evalrunner-monitor",
        memory_limit_in_mb=1024,
        aws_request_id="r-1",
        get_remaining_time_in_millis=lambda: 900_000,
    )


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="runner-bucket")
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
        runtime = Runtime(
            s3_client=s3, settings=Settings(bucket="runner-bucket", region="us-east-1")
        )
        yield SimpleNamespace(s3=s3, sfn=sfn, arn=arn, handler=monitor.build(runtime))


def test_the_schedule_starts_a_run_and_moves_the_watermark(aws: SimpleNamespace) -> None:
    reply = aws.handler({"detail-type": "Scheduled Event", "detail": {}}, context())
    assert reply["status"] == "started" and reply["scored"] == 4 and reply["problems"] == []
    (execution,) = aws.sfn.list_executions(stateMachineArn=aws.arn)["executions"]
    event = json.loads(aws.sfn.describe_execution(executionArn=execution["executionArn"])["input"])
    assert event["target"] == {"logged": "monitor-123456789012"}
    assert event["key"] == reply["key"] and not is_suite_upload(event["key"])
    assert "Refusal" in event["metrics"] and "Answer Relevancy" not in event["metrics"]
    parse_event(event)  # what Prepare will accept
    body = aws.s3.get_object(Bucket="runner-bucket", Key=event["key"])["Body"].read()
    suite = read_suite(body, event["key"])
    assert suite.cases[0].question == "How many days of annual leave do I get?"
    assert all(c.answer and c.expected_answer is None for c in suite.cases)
    raw = aws.s3.get_object(Bucket="runner-bucket", Key=watermark_key("monitor-123456789012"))
    mark = Watermark.model_validate_json(raw["Body"].read())
    assert mark.runs == [reply["run_id"]] and len(mark.decided) == 4
    assert (
        mark.event_time is not None and mark.event_time.isoformat() == "2026-01-31T11:31:00+00:00"
    )

    again = aws.handler({}, context())
    assert again["status"] == "nothing_new" and again["duplicates"] == 4
    assert len(aws.sfn.list_executions(stateMachineArn=aws.arn)["executions"]) == 1


def test_new_logs_and_a_late_duplicate_delivery(aws: SimpleNamespace) -> None:
    aws.handler({}, context())
    records = gzip.decompress(SAMPLE.read_bytes()).decode().splitlines()
    newer = json.loads(records[0])
    newer["requestId"], newer["timestamp"] = "later-1", "2026-01-31T11:50:00Z"
    body = "\n".join([records[2], json.dumps(newer)])  # a record delivered twice, and one new
    aws.s3.put_object(
        Bucket="model-logs", Key=PREFIX + "part-2.json.gz", Body=gzip.compress(body.encode())
    )
    reply = aws.handler({"sample": 1, "seed": 3}, context())
    # part-1 is read again (written within the window): its four and the re-delivered copy
    # are duplicates, the new record alone is scored
    assert reply["status"] == "started" and reply["new"] == 1 and reply["duplicates"] == 5
    assert reply["scored"] == 1


def test_a_bad_event_fails_at_the_door(aws: SimpleNamespace) -> None:
    with pytest.raises(ValueError, match="samples"):
        aws.handler({"samples": 5}, context())


def test_the_deployed_suite_is_pii_masked(aws: SimpleNamespace) -> None:
    records = gzip.decompress(SAMPLE.read_bytes()).decode().splitlines()
    record = json.loads(records[0])
    record["input"]["inputBodyJson"]["messages"][0]["content"][0]["text"] = "I am jo@corp.io"
    aws.s3.put_object(
        Bucket="model-logs", Key="pii/part.json.gz", Body=gzip.compress(json.dumps(record).encode())
    )
    reply = aws.handler({"source": "s3://model-logs/pii/", "name": "pii"}, context())
    body = aws.s3.get_object(Bucket="runner-bucket", Key=reply["key"])["Body"].read()
    (row,) = json.loads(body)
    assert row["question"] == "I am <EMAIL_1>" and row["pii_masked"] == "1 EMAIL"


def test_masking_follows_the_deployment_not_the_event(
    aws: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = gzip.decompress(SAMPLE.read_bytes()).decode().splitlines()
    record = json.loads(records[0])
    text = "I am jo@corp.io, call +44 20 7946 0958"
    record["input"]["inputBodyJson"]["messages"][0]["content"][0]["text"] = text
    body = gzip.compress(json.dumps(record).encode())
    aws.s3.put_object(Bucket="model-logs", Key="pii/part.json.gz", Body=body)
    with pytest.raises(MonitorError, match="an event cannot turn masking off"):
        aws.handler({"source": "s3://model-logs/pii/", "mask_pii": False}, context())
    monkeypatch.setenv("EVALRUNNER_MONITOR_PII", json.dumps({"kinds": ["EMAIL"]}))
    reply = aws.handler({"source": "s3://model-logs/pii/", "name": "emails"}, context())
    (row,) = json.loads(aws.s3.get_object(Bucket="runner-bucket", Key=reply["key"])["Body"].read())
    assert row["question"] == "I am <EMAIL_1>, call +44 20 7946 0958"
    # cdk.json monitor.pii.enabled false: the env says off and the schedule says mask_pii false
    monkeypatch.setenv("EVALRUNNER_MONITOR_PII", "off")
    event = {"source": "s3://model-logs/pii/", "name": "plain", "mask_pii": False}
    reply = aws.handler(event, context())
    (row,) = json.loads(aws.s3.get_object(Bucket="runner-bucket", Key=reply["key"])["Body"].read())
    assert row["question"] == text and "pii_masked" not in row
    # an event may ask for more masking than the deployment's
    reply = aws.handler({**event, "name": "strict", "mask_pii": True}, context())
    (row,) = json.loads(aws.s3.get_object(Bucket="runner-bucket", Key=reply["key"])["Body"].read())
    assert row["question"] == "I am <EMAIL_1>, call <PHONE_1>"


def test_a_lone_surrogate_in_a_log_does_not_fail_the_invocation(aws: SimpleNamespace) -> None:
    """A JSON log may carry "\\ud800" (legal as an escape, not encodable as UTF-8): the suite
    must still be written (escaped) for the suite reader to replace it, not crash the run."""
    line = json.dumps(
        {"id": "s1", "question": "q \ud800", "answer": "a", "timestamp": "2026-01-31T12:00:00Z"}
    )
    aws.s3.put_object(Bucket="model-logs", Key="odd/app.jsonl", Body=line.encode())
    reply = aws.handler({"source": "s3://model-logs/odd/", "name": "odd"}, context())
    assert reply["status"] == "started"
    from evalrunner.suite.readers import read_suite

    body = aws.s3.get_object(Bucket="runner-bucket", Key=reply["key"])["Body"].read()
    (case,) = read_suite(body, "odd.json").cases
    assert case.question == "q \ufffd"


def executions(aws: SimpleNamespace) -> list[dict[str, str]]:
    """Every execution of the runner with its status, run id and suite key."""
    found = []
    for listed in aws.sfn.list_executions(stateMachineArn=aws.arn)["executions"]:
        described = aws.sfn.describe_execution(executionArn=listed["executionArn"])
        event = json.loads(described["input"])
        found.append(
            {
                "arn": listed["executionArn"],
                "status": described["status"],
                "run_id": event["run_id"],
                "key": event["key"],
            }
        )
    return found


def test_a_failed_execution_is_started_again_then_given_up_naming_it(
    aws: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watermark moves when the execution starts, so a run that then fails must not lose
    its interactions: the next schedules start its suite again (twice), and then fail the
    invocation naming the run and its suite, so the function's errors alarm fires, once."""
    monkeypatch.setenv("SF_EXECUTION_HISTORY_TYPE", "FAILURE")  # moto: executions fail
    first = aws.handler({}, context())
    assert first["status"] == "started" and first["scored"] == 4
    for attempt in (2, 3):
        reply = aws.handler({}, context())
        assert reply["status"] == "nothing_new" and reply["retried"] == [first["key"]]
        runs = executions(aws)
        assert len(runs) == attempt and {r["key"] for r in runs} == {first["key"]}
        assert len({r["run_id"] for r in runs}) == attempt  # each attempt its own run id
    with pytest.raises(MonitorError) as failed:
        aws.handler({}, context())
    message = str(failed.value)
    assert first["key"] in message and "3 attempt" in message and "FAILED" in message
    assert len(executions(aws)) == 3  # not started a fourth time
    quiet = aws.handler({}, context())  # given up once: the next schedule is clean
    assert quiet["status"] == "nothing_new" and quiet["retried"] == []
    assert len(executions(aws)) == 3


def test_a_running_execution_is_left_alone_and_an_aborted_one_not_restarted(
    aws: SimpleNamespace,
) -> None:
    first = aws.handler({}, context())
    again = aws.handler({}, context())  # still running: nothing restarted
    assert again["retried"] == [] and again["in_flight"] == 1
    aws.sfn.stop_execution(executionArn=first["execution_arn"])  # a person stopped it
    reply = aws.handler({}, context())
    assert reply["retried"] == [] and reply["in_flight"] == 0
    assert [r["status"] for r in executions(aws)] == ["ABORTED"]
    assert any("ABORTED" in p and first["key"] in p for p in reply["problems"])


def test_a_restarted_run_is_followed_while_it_runs(
    aws: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SF_EXECUTION_HISTORY_TYPE", "FAILURE")
    first = aws.handler({}, context())
    monkeypatch.delenv("SF_EXECUTION_HISTORY_TYPE")  # the retry runs (RUNNING in moto)
    reply = aws.handler({}, context())
    assert reply["retried"] == [first["key"]] and reply["in_flight"] == 1
    assert sorted(r["status"] for r in executions(aws)) == ["FAILED", "RUNNING"]
    raw = aws.s3.get_object(Bucket="runner-bucket", Key=watermark_key("monitor-123456789012"))
    mark = Watermark.model_validate_json(raw["Body"].read())
    (follow,) = mark.in_flight
    assert follow.attempts == 2 and follow.key == first["key"]


def test_a_long_monitor_name_still_makes_a_valid_execution_name(aws: SimpleNamespace) -> None:
    """A monitor may be named with up to 128 characters; Step Functions takes execution
    names of 80 at most: the name is cut to leave room for the run id (it was cut to 60,
    plus 21 for the run id, so every schedule of a long-named monitor failed to start)."""
    name = "prod-hr-assistant-eu-west-1-bedrock-invocations-" + "x" * 40
    reply = aws.handler({"name": name}, context())
    assert reply["status"] == "started"
    (execution,) = aws.sfn.list_executions(stateMachineArn=aws.arn)["executions"]
    assert len(execution["name"]) <= 80 and execution["name"].endswith(reply["run_id"])


def test_a_failed_run_whose_suite_was_deleted_is_given_up_at_once_naming_it(
    aws: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run failed and its suite is gone (deleted by hand, or by a retention rule shorter
    than the run lived): starting it again could only fail in Prepare, twice more, and the
    give-up would then say "start that suite again". It is given up at once, saying so."""
    monkeypatch.setenv("SF_EXECUTION_HISTORY_TYPE", "FAILURE")  # moto: executions fail
    first = aws.handler({}, context())
    aws.s3.delete_object(Bucket="runner-bucket", Key=first["key"])
    with pytest.raises(MonitorError) as failed:
        aws.handler({}, context())
    message = str(failed.value)
    assert first["key"] in message and "no longer there" in message
    assert len(executions(aws)) == 1  # not started again
    quiet = aws.handler({}, context())
    assert quiet["retried"] == [] and quiet["in_flight"] == 0
