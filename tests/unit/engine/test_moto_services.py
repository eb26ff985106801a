"""The engine's control plane reaches moto's backends directly (issue 18) and nobody can tell:
each call's effect and answer are compared with the same call through boto3 against the same
mock, and a whole local run is checked to make no botocore request at all."""

from __future__ import annotations

import inspect
import json
import threading
from pathlib import Path
from typing import Any

import boto3
import botocore.client
import pytest

from evalrunner.engine import LocalEngine
from evalrunner.engine.embedded import ACCOUNT, REGION, embedded_s3
from evalrunner.engine.moto_compat import embedded_aws, interpreter_speedups
from evalrunner.engine.moto_services import (
    InProcessStepFunctions,
    create_bucket,
    create_function,
    create_role,
)
from lambdas.local import local_pipeline

PLACES = {"account": ACCOUNT, "region": REGION}


def _machine(fail: bool) -> str:
    last = (
        {"Type": "Fail", "Error": "Bad.Input", "Cause": "n was 7"}
        if fail
        else {"Type": "Pass", "Parameters": {"got.$": "$.n"}, "End": True}
    )
    return json.dumps({"StartAt": "Last", "States": {"Last": last}})


def _finished(describe, arn: str) -> dict[str, Any]:
    wait = threading.Event()
    for _ in range(600):  # bounded: 60 s, far beyond the moment it takes
        description = describe(executionArn=arn)
        if description["status"] != "RUNNING" and (
            description["status"] != "SUCCEEDED" or "output" in description
        ):
            return description
        wait.wait(0.1)
    raise AssertionError("the execution did not finish")


def test_bucket_role_and_function_are_what_boto3_would_have_made():
    with embedded_aws():
        create_bucket("direct-bucket", **PLACES)
        role = create_role("direct-role", account=ACCOUNT, assume_role_policy="{}")
        arn = create_function(
            {
                "FunctionName": "direct-fn",
                "Runtime": "python3.12",
                "Role": role,
                "Handler": "index.handler",
                "Code": {"ZipFile": b"PK\x05\x06" + b"\x00" * 18},  # an empty zip
                "Timeout": 900,
            },
            **PLACES,
        )
        s3 = boto3.client("s3", region_name=REGION)
        s3.put_object(Bucket="direct-bucket", Key="k", Body=b"through boto3")
        assert s3.get_bucket_location(Bucket="direct-bucket")["LocationConstraint"] is None
        assert embedded_s3().get_object(Bucket="direct-bucket", Key="k")["Body"].read() == (
            b"through boto3"
        )
        iam = boto3.client("iam", region_name=REGION)
        assert iam.get_role(RoleName="direct-role")["Role"]["Arn"] == role
        function = boto3.client("lambda", region_name=REGION).get_function(
            FunctionName="direct-fn"
        )["Configuration"]
        assert function["FunctionArn"] == arn
        assert (function["Role"], function["Timeout"], function["CodeSize"]) == (role, 900, 22)


@pytest.mark.parametrize("fail", [False, True], ids=["succeeded", "failed"])
def test_executions_are_described_as_boto3_describes_them(fail):
    """Started and described in-process or through boto3, the same machine's executions
    answer with the same keys and values (the ARNs and names aside)."""
    with embedded_aws(), interpreter_speedups():
        direct = InProcessStepFunctions(**PLACES)
        sfn = boto3.client("stepfunctions", region_name=REGION)
        machine = direct.create_state_machine(
            name="direct", definition=_machine(fail), roleArn="arn:aws:iam::123456789012:role/r"
        )["stateMachineArn"]
        assert sfn.describe_state_machine(stateMachineArn=machine)["definition"] == _machine(fail)
        ours = direct.start_execution(stateMachineArn=machine, input='{"n": 7}')["executionArn"]
        theirs = sfn.start_execution(stateMachineArn=machine, input='{"n": 7}')["executionArn"]
        mine = _finished(direct.describe_execution, ours)
        boto = _finished(sfn.describe_execution, theirs)
        assert _finished(sfn.describe_execution, ours)["status"] == mine["status"]
    varying = {"executionArn", "name", "startDate", "stopDate", "ResponseMetadata"}
    assert {k for k in boto if k != "ResponseMetadata"} - {"outputDetails"} == set(mine) - {
        "name"  # moto names an execution started without one None, and boto3 drops a None
    }
    assert len(mine["name"]) == 36  # a UUID, as Step Functions names it
    assert {k: v for k, v in mine.items() if k not in varying} == {
        k: v for k, v in boto.items() if k not in varying | {"outputDetails"}
    }
    if fail:
        assert (mine["status"], mine["error"], mine["cause"]) == ("FAILED", "Bad.Input", "n was 7")
    else:
        assert (mine["status"], json.loads(mine["output"])) == ("SUCCEEDED", {"got": 7})


def test_a_local_run_makes_no_botocore_request(monkeypatch, tmp_path: Path):
    """Deploy, the interpreter's reads of the batches file, every handler's storage, the
    polling and the download all reach moto directly: a botocore request in a local run
    would cost a service model load and moto's URL table on the first one (~0.4 s)."""
    requests: list[str] = []
    real = botocore.client.BaseClient._make_api_call

    def counted(self: Any, operation: str, parameters: dict[str, Any]) -> Any:
        requests.append(f"{self.meta.service_model.service_name}.{operation}")
        return real(self, operation, parameters)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", counted)
    suite = b"id,question,expected_answer,actual_answer\n" + b"".join(
        f"c{i},Q{i}?,{i} days,{i} days\n".encode() for i in range(6)
    )
    result = LocalEngine(pipeline=local_pipeline, fast=True).run(
        {
            "key": "test-suites/direct.csv",
            "iterations": 1,
            "target": {"logged": "direct"},
            "metrics": ["Exact match"],
            "cases_per_task": 2,
        },
        suite=suite,
        out_dir=tmp_path,
    )
    assert (result.summary.items, result.summary.answered, result.summary.task_failures) == (
        6,
        6,
        0,
    )
    assert any(path.name.endswith("-report.html") for path in result.files)
    assert requests == []


def test_backend_calls_fit_the_pinned_moto():
    """The names and keywords these functions give moto's backends, and the response keys
    they mirror: if moto moves either, this fails before a run does."""
    from moto.awslambda.models import LambdaBackend
    from moto.iam.models import IAMBackend
    from moto.s3.models import S3Backend
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.responses import StepFunctionResponse

    def params(function: Any) -> set[str]:
        return set(inspect.signature(function).parameters) - {"self"}

    assert {"bucket_name", "region_name"} <= params(S3Backend.create_bucket)
    assert {
        "role_name",
        "assume_role_policy_document",
        "path",
        "permissions_boundary",
        "description",
        "tags",
        "max_session_duration",
    } <= params(IAMBackend.create_role)
    assert params(LambdaBackend.create_function) == {"spec"}
    assert {
        "name",
        "definition",
        "roleArn",
        "tags",
        "publish",
        "loggingConfiguration",
        "tracingConfiguration",
        "encryptionConfiguration",
        "version_description",
        "sm_type",
    } <= params(StepFunctionsParserBackend.create_state_machine)
    started = list(inspect.signature(StepFunctionsParserBackend.start_execution).parameters)
    assert started[1:4] == ["state_machine_arn", "name", "execution_input"]  # positional
    described = inspect.getsource(StepFunctionResponse.describe_execution)
    for key in ('"status"', '"output"', '"error"', '"cause"', '"stopDate"'):
        assert key in described, key
