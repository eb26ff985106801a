"""The upload trigger: an uploaded suite becomes a validated event and an execution, or a
rejection with its reasons. Core rules on moto S3 with a recording Step Functions client; the
whole path (handler -> embedded Step Functions -> reports) on the embedded engine."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import boto3
import openpyxl
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from evalrunner.engine.dispatch import Dispatcher, LambdaContext, dispatching
from evalrunner.engine.embedded import BUCKET
from evalrunner.engine.local import LocalEngine
from evalrunner.errors import ConfigError, EventError
from evalrunner.event import parse_event
from evalrunner.pipeline.context import Runtime
from evalrunner.storage import RunStore
from evalrunner.upload import (
    UploadDefaults,
    execution_name,
    is_suite_upload,
    parse_target_tag,
    rejection_key,
    sidecar_key,
    start_from_upload,
)
from lambdas.local import local_pipeline

DEMO = {"lambdaArn": "evalrunner-demo-hr"}
SM_ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:runner"
CSV = b"question,expected_answer\nHow many sick days?,10 days\n"


def xlsx(rows: list[list[Any]]) -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Suite"
    for row in rows:
        ws.append(row)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


GOOD_XLSX = xlsx(
    [
        ["question", "expected_answer"],
        ["How many days of annual leave do I get?", "25 days"],
        ["Can I carry over unused leave?", "Up to 5 days"],
    ]
)
BAD_XLSX = xlsx([["prompt_text", "answer"], ["How many days?", "25"]])


class RecordingSfn:
    """The one Step Functions call the trigger makes, recorded."""

    def __init__(self, fail_with: str | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail_with = fail_with

    def start_execution(self, **kwargs: Any) -> dict[str, Any]:
        if self.fail_with:
            raise ClientError({"Error": {"Code": self.fail_with, "Message": "x"}}, "Start")
        self.calls.append(kwargs)
        return {"executionArn": f"{SM_ARN.replace('stateMachine', 'execution')}:{kwargs['name']}"}


@pytest.fixture
def store():
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="runner")
        yield RunStore("runner", client=s3)


def put(store: RunStore, key: str, body: bytes, tags: dict[str, str] | None = None) -> None:
    extra = {}
    if tags:
        extra["Tagging"] = "&".join(f"{k}={v}" for k, v in tags.items())
    store.s3.put_object(Bucket=store.bucket, Key=key, Body=body, **extra)


def rejection(store: RunStore, key: str) -> dict[str, Any]:
    return store.get_json(rejection_key(key))


# ------------------------------------------------------------------ keys and tags


def test_keys():
    assert sidecar_key("test-suites/team/hr.xlsx") == "test-suites/team/hr.run.json"
    assert rejection_key("test-suites/team/hr.xlsx") == "test-reports/_rejected/team/hr.xlsx.json"
    assert is_suite_upload("test-suites/hr.XLSX") and is_suite_upload("test-suites/a/b.json")
    assert not is_suite_upload("test-suites/hr.run.json")
    assert not is_suite_upload("other/hr.xlsx") and not is_suite_upload("test-suites/hr.txt")
    name = execution_name("test-suites/My HR suite (v2).xlsx", "0d3c-11ee")
    assert name == "My-HR-suite-v2-0d3c-11ee"
    long = execution_name("test-suites/" + "x" * 200 + ".csv", "e" * 36)
    assert len(long) <= 80 and long.endswith("e" * 36)
    assert execution_name("test-suites/a.csv") != execution_name("test-suites/a.csv")


LAMBDA = "arn:aws:lambda:eu-west-1:111122223333:function:hr"
MACHINE = "arn:aws:states:eu-west-1:111122223333:stateMachine:sm"
ALIAS = "arn:aws:bedrock:us-east-1:111122223333:agent-alias/AGENT12345/ALIAS12345"


@pytest.mark.parametrize(
    ("value", "target"),
    [
        ('{"url": "https://h/ask"}', {"url": "https://h/ask"}),
        (LAMBDA, {"lambdaArn": LAMBDA}),
        (MACHINE, {"stepFunctionArn": MACHINE}),
        (ALIAS, {"agentId": "AGENT12345", "agentAliasId": "ALIAS12345"}),
        ("https://host/ask", {"url": "https://host/ask"}),
    ],
)
def test_target_tag_forms(value, target):
    assert parse_target_tag(value) == target


def test_target_tag_refuses_what_it_cannot_read():
    with pytest.raises(EventError, match="neither a JSON target"):
        parse_target_tag("my-agent")
    with pytest.raises(EventError, match="not valid JSON"):
        parse_target_tag("{nope")


def test_defaults_from_env():
    env = {"EVALRUNNER_DEFAULT_TARGET": json.dumps(DEMO), "EVALRUNNER_DEFAULT_ITERATIONS": "2"}
    assert UploadDefaults.from_env(env) == UploadDefaults(DEMO, 2)
    assert UploadDefaults.from_env({}) == UploadDefaults()
    with pytest.raises(ConfigError):
        UploadDefaults.from_env({"EVALRUNNER_DEFAULT_TARGET": "[1]"})
    with pytest.raises(ConfigError):
        UploadDefaults.from_env({"EVALRUNNER_DEFAULT_ITERATIONS": "two"})


# ------------------------------------------------------------------ where fields come from


def test_sidecar_wins_over_tags_and_defaults(store):
    sidecar = {"target": DEMO, "iterations": 3, "metrics": ["Rouge Metric"]}
    put(store, "test-suites/hr.run.json", json.dumps(sidecar).encode())
    put(store, "test-suites/hr.xlsx", GOOD_XLSX, {"evalrunner-iterations": "7"})
    sfn = RecordingSfn()
    out = start_from_upload(
        store, sfn, SM_ARN, "test-suites/hr.xlsx", UploadDefaults({"url": "http://x"}, 1)
    )
    assert out.status == "started", out.reasons
    assert out.sources == {"target": "sidecar", "iterations": "sidecar"}
    (call,) = sfn.calls
    event = json.loads(call["input"])
    assert event == {**sidecar, "key": "test-suites/hr.xlsx"}
    assert parse_event(event).metrics == ["Rouge Metric"]
    assert call["stateMachineArn"] == SM_ARN


def test_tags_then_defaults(store):
    put(
        store,
        "test-suites/hr.csv",
        CSV,
        {"evalrunner-target": "arn:aws:lambda:us-east-1:123456789012:function:hr"},
    )
    sfn = RecordingSfn()
    out = start_from_upload(store, sfn, SM_ARN, "test-suites/hr.csv", UploadDefaults(DEMO, 2))
    assert out.status == "started", out.reasons
    assert out.sources == {"target": "tag", "iterations": "default"}
    assert out.event["target"] == {"lambdaArn": "arn:aws:lambda:us-east-1:123456789012:function:hr"}
    assert out.event["iterations"] == 2


def test_defaults_alone(store):
    put(store, "test-suites/hr.csv", CSV)
    out = start_from_upload(
        store, RecordingSfn(), SM_ARN, "test-suites/hr.csv", UploadDefaults(DEMO, 1), token="ev-1"
    )
    assert out.status == "started"
    assert out.execution_arn.endswith(":hr-ev-1")


# ------------------------------------------------------------------ refusals


def test_nothing_configured_is_rejected_with_how_to_fix(store):
    put(store, "test-suites/hr.csv", CSV)
    sfn = RecordingSfn()
    out = start_from_upload(store, sfn, SM_ARN, "test-suites/hr.csv", UploadDefaults())
    assert out.status == "rejected" and not sfn.calls
    doc = rejection(store, "test-suites/hr.csv")
    assert doc["key"] == "test-suites/hr.csv"
    assert [r.split(":")[0] for r in doc["reasons"]] == ["target", "iterations"]
    assert "test-suites/hr.run.json" in doc["reasons"][0]
    assert "upload it first" in doc["fix"]


def test_bad_suite_and_bad_event_are_reported_together(store):
    put(store, "test-suites/hr.run.json", json.dumps({"target": DEMO, "iterations": 0}).encode())
    put(store, "test-suites/hr.xlsx", BAD_XLSX)
    sfn = RecordingSfn()
    out = start_from_upload(store, sfn, SM_ARN, "test-suites/hr.xlsx", UploadDefaults())
    assert out.status == "rejected" and not sfn.calls
    reasons = rejection(store, "test-suites/hr.xlsx")["reasons"]
    assert any(r.startswith("iterations:") for r in reasons)
    assert any("no sheet has a question column" in r and "hr.xlsx" in r for r in reasons)


def test_bad_sidecar_and_bad_tags(store):
    put(store, "test-suites/a.run.json", b"{not json")
    put(store, "test-suites/a.csv", CSV)
    out = start_from_upload(store, RecordingSfn(), SM_ARN, "test-suites/a.csv", UploadDefaults())
    assert out.status == "rejected"
    assert out.reasons[0].startswith("sidecar test-suites/a.run.json: not valid JSON")
    assert len(out.reasons) == 1  # no redundant "target: not given"

    put(
        store, "test-suites/b.csv", CSV, {"evalrunner-target": "nope", "evalrunner-iterations": "x"}
    )
    out = start_from_upload(store, RecordingSfn(), SM_ARN, "test-suites/b.csv", UploadDefaults())
    assert [r.split(":")[0] for r in out.reasons] == [
        "tag evalrunner-target",
        "tag evalrunner-iterations",
    ]


def test_sidecar_key_must_match(store):
    put(store, "test-suites/a.run.json", json.dumps({"key": "test-suites/b.csv"}).encode())
    put(store, "test-suites/a.csv", CSV)
    out = start_from_upload(
        store, RecordingSfn(), SM_ARN, "test-suites/a.csv", UploadDefaults(DEMO, 1)
    )
    assert out.status == "rejected" and "belongs to 'test-suites/a.csv'" in out.reasons[0]


def test_condition_error_names_the_row(store):
    bad = b'question,condition\nQ?,"""a"" AND (""b"""\n'
    put(store, "test-suites/c.csv", bad)
    out = start_from_upload(
        store, RecordingSfn(), SM_ARN, "test-suites/c.csv", UploadDefaults(DEMO, 1)
    )
    assert out.status == "rejected"
    assert "row 2" in " ".join(out.reasons)


def test_a_later_good_upload_clears_the_rejection(store):
    put(store, "test-suites/hr.csv", CSV)
    start_from_upload(store, RecordingSfn(), SM_ARN, "test-suites/hr.csv", UploadDefaults())
    assert store.list_keys("test-reports/_rejected/")
    out = start_from_upload(
        store, RecordingSfn(), SM_ARN, "test-suites/hr.csv", UploadDefaults(DEMO, 1)
    )
    assert out.status == "started"
    assert not store.list_keys("test-reports/_rejected/")


# ------------------------------------------------------------------ what is not a run


def test_sidecars_other_prefixes_and_vanished_objects_are_ignored(store):
    sfn = RecordingSfn()
    put(store, "test-suites/hr.run.json", b"{}")
    for key in ("test-suites/hr.run.json", "test-reports/x.csv", "test-suites/gone.csv"):
        out = start_from_upload(store, sfn, SM_ARN, key, UploadDefaults(DEMO, 1))
        assert out.status == "ignored", key
    assert not sfn.calls and not store.list_keys("test-reports/")


def test_url_encoded_key_from_the_notification(store):
    put(store, "test-suites/my suite.csv", CSV)
    out = start_from_upload(
        store, RecordingSfn(), SM_ARN, "test-suites/my+suite.csv", UploadDefaults(DEMO, 1)
    )
    assert out.status == "started" and out.key == "test-suites/my suite.csv"


def test_redelivered_event_starts_nothing_new(store):
    put(store, "test-suites/hr.csv", CSV)
    sfn = RecordingSfn(fail_with="ExecutionAlreadyExists")
    out = start_from_upload(store, sfn, SM_ARN, "test-suites/hr.csv", UploadDefaults(DEMO, 1))
    assert out.status == "duplicate"


# ------------------------------------------------------------------ the handler, end to end


def eventbridge(key: str, event_id: str = "5f3a4c1e-0000-4000-8000-000000000001") -> dict:
    """An S3 "Object Created" event as EventBridge delivers it."""
    return {
        "version": "0",
        "id": event_id,
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": "123456789012",
        "region": "us-east-1",
        "resources": [f"arn:aws:s3:::{BUCKET}"],
        "detail": {
            "version": "0",
            "bucket": {"name": BUCKET},
            "object": {"key": key, "size": 1, "etag": "x", "sequencer": "00"},
            "reason": "PutObject",
        },
    }


def wait(sfn: Any, arn: str, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        described = sfn.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.1)
    raise AssertionError(f"{arn} still running after {timeout}s")


@pytest.fixture
def deployed(monkeypatch):
    """The embedded runner: bucket, pipeline functions and the state machine."""
    from lambdas import start_from_upload as trigger

    # The deployed functions' environment (the stack sets both; the engine sets neither).
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("EVALRUNNER_BUCKET", BUCKET)
    engine = LocalEngine(pipeline=local_pipeline)
    with engine.embedded_aws(), dispatching(Dispatcher(engine.functions_for(Runtime()))):
        engine.deploy(b"placeholder", "test-suites/placeholder.csv")
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        arn = sfn.list_state_machines()["stateMachines"][0]["stateMachineArn"]
        monkeypatch.setenv("EVALRUNNER_STATE_MACHINE_ARN", arn)
        monkeypatch.delenv("EVALRUNNER_DEFAULT_TARGET", raising=False)
        monkeypatch.delenv("EVALRUNNER_DEFAULT_ITERATIONS", raising=False)
        yield trigger, boto3.client("s3", region_name="us-east-1"), sfn


def invoke(trigger: Any, event: dict) -> dict:
    ctx = LambdaContext("evalrunner-start-from-upload", "arn:aws:lambda:::function:x")
    return trigger.handler(event, ctx)


def test_a_good_xlsx_upload_runs_to_reports(deployed):
    trigger, s3, sfn = deployed
    sidecar = {"target": DEMO, "iterations": 1, "metrics": ["Rouge Metric"]}
    s3.put_object(Bucket=BUCKET, Key="test-suites/hr.run.json", Body=json.dumps(sidecar))
    s3.put_object(Bucket=BUCKET, Key="test-suites/hr.xlsx", Body=GOOD_XLSX)

    out = invoke(trigger, eventbridge("test-suites/hr.xlsx"))

    assert out["status"] == "started", out
    execution = sfn.describe_execution(executionArn=out["execution_arn"])
    event = json.loads(execution["input"])
    assert parse_event(event).key == "test-suites/hr.xlsx"
    assert event["target"] == DEMO and event["iterations"] == 1
    done = wait(sfn, out["execution_arn"])
    assert done["status"] == "SUCCEEDED", done
    summary = json.loads(done["output"])
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]}
    assert set(summary["reports"].values()) <= keys
    assert any(k.endswith("-result.csv") for k in summary["reports"].values())
    # A redelivery of the same EventBridge event starts nothing new.
    again = invoke(trigger, eventbridge("test-suites/hr.xlsx"))
    assert again["status"] == "duplicate"
    assert len(sfn.list_executions(stateMachineArn=execution["stateMachineArn"])["executions"]) == 1


def test_a_bad_xlsx_upload_is_refused_with_its_reason(deployed):
    trigger, s3, sfn = deployed
    s3.put_object(
        Bucket=BUCKET,
        Key="test-suites/broken.xlsx",
        Body=BAD_XLSX,
        Tagging="evalrunner-target=arn:aws:lambda:us-east-1:123456789012:function:evalrunner-demo-hr"
        "&evalrunner-iterations=1",
    )

    out = invoke(trigger, eventbridge("test-suites/broken.xlsx"))

    assert out["status"] == "rejected"
    assert out["rejection_key"] == "test-reports/_rejected/broken.xlsx.json"
    body = s3.get_object(Bucket=BUCKET, Key=out["rejection_key"])["Body"].read()
    doc = json.loads(body)
    assert doc["sources"] == {"target": "tag", "iterations": "tag"}
    assert len(doc["reasons"]) == 1 and "no sheet has a question column" in doc["reasons"][0]
    machine = sfn.list_state_machines()["stateMachines"][0]["stateMachineArn"]
    assert sfn.list_executions(stateMachineArn=machine)["executions"] == []


def test_a_sidecar_the_role_may_not_read_is_an_error_not_no_sidecar() -> None:
    """Only a missing sidecar means "none": a denied read must not silently drop the
    sidecar's target and iterations (issue 29: nothing denied is swallowed)."""
    from botocore.stub import Stubber

    from evalrunner.errors import StorageError
    from evalrunner.upload import read_sidecar

    client = boto3.client(
        "s3", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    store = RunStore("runner-bucket", client=client)
    with Stubber(client) as stub:
        stub.add_client_error("get_object", "NoSuchKey", http_status_code=404)
        assert read_sidecar(store, "test-suites/hr.xlsx") is None
        stub.add_client_error("get_object", "AccessDenied", "Access Denied", 403)
        with pytest.raises(StorageError, match="AccessDenied"):
            read_sidecar(store, "test-suites/hr.xlsx")
