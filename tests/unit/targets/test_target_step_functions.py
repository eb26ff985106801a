"""Step Functions target: STANDARD executions on moto's interpreter, EXPRESS via Stubber."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

from evalrunner.errors import TargetError, TargetTimeout
from evalrunner.targets.step_functions import StepFunctionsTarget, state_machine_name

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/sfn"


@pytest.fixture
def sfn() -> Iterator[Any]:
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        yield boto3.client("stepfunctions", region_name=REGION)


def create(sfn: Any, name: str, states: dict[str, Any], start: str) -> str:
    definition = {"StartAt": start, "States": states}
    return sfn.create_state_machine(name=name, definition=json.dumps(definition), roleArn=ROLE)[
        "stateMachineArn"
    ]


@pytest.fixture
def fast_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(StepFunctionsTarget, "poll_initial_s", 0.02)
    monkeypatch.setattr(StepFunctionsTarget, "poll_max_s", 0.05)


def test_standard_execution_receives_question_and_returns_output(
    sfn: Any, fast_polling: None, make_case: Callable[..., Any]
) -> None:
    echo = {
        "Type": "Pass",
        "Parameters": {
            "answer.$": "States.Format('You asked: {}', $.question)",
            "contexts": ["c1"],
            "turns.$": "States.ArrayLength($.conversation)",
        },
        "End": True,
    }
    arn = create(sfn, "qa-flow", {"Echo": echo}, "Echo")
    target = StepFunctionsTarget({"stepFunctionArn": arn, "answer_path": "answer"})
    case = make_case("Days off?", turns=[("user", "hi"), ("assistant", "hello")])
    response = target.invoke(case)
    assert response.answer == "You asked: Days off?"
    assert response.contexts == ["c1"]
    assert target.name == "qa-flow"
    executions = sfn.list_executions(stateMachineArn=arn)["executions"]
    assert len(executions) == 1 and executions[0]["name"].startswith("evalrunner-case-0001-")
    output = json.loads(
        sfn.describe_execution(executionArn=executions[0]["executionArn"])["output"]
    )
    assert output["turns"] == 2  # the conversation reached the workflow


def test_standard_failure_reports_error_and_cause(
    sfn: Any, fast_polling: None, make_case: Callable[..., Any]
) -> None:
    fail = {"Type": "Fail", "Error": "RetrievalFailed", "Cause": "index unavailable"}
    arn = create(sfn, "broken", {"Boom": fail}, "Boom")
    with pytest.raises(TargetError) as info:
        StepFunctionsTarget({"stepFunctionArn": arn}).invoke(make_case())
    assert "FAILED" in info.value.message
    assert "RetrievalFailed" in info.value.message and "index unavailable" in info.value.message


def test_standard_timeout_stops_the_execution(
    sfn: Any, fast_polling: None, make_case: Callable[..., Any]
) -> None:
    arn = create(sfn, "slow", {"Wait": {"Type": "Wait", "Seconds": 60, "End": True}}, "Wait")
    target = StepFunctionsTarget({"stepFunctionArn": arn, "timeout_seconds": 0.3})
    with pytest.raises(TargetTimeout, match=r"timeout_seconds=0\.3"):
        target.invoke(make_case())
    # Without the timeout the 60 s workflow would succeed and nothing would be raised; the
    # error, and the execution stopped below, prove the timeout ended the wait.
    (execution,) = sfn.list_executions(stateMachineArn=arn)["executions"]
    for _ in range(40):  # moto applies StopExecution asynchronously
        status = sfn.describe_execution(executionArn=execution["executionArn"])["status"]
        if status != "RUNNING":
            break
        time.sleep(0.05)
    assert status == "ABORTED"


SM_ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:express-qa"


def describe(kind: str) -> dict[str, Any]:
    return {
        "stateMachineArn": SM_ARN,
        "name": "express-qa",
        "definition": "{}",
        "roleArn": ROLE,
        "type": kind,
        "creationDate": "2024-01-01T00:00:00Z",
    }


def sync_result(status: str, **extra: Any) -> dict[str, Any]:
    return {
        "executionArn": SM_ARN.replace("stateMachine", "express") + ":x",
        "startDate": "2024-01-01T00:00:00Z",
        "stopDate": "2024-01-01T00:00:01Z",
        "status": status,
        **extra,
    }


def test_express_uses_sync_execution_and_caches_the_type(make_case: Callable[..., Any]) -> None:
    target = StepFunctionsTarget({"stepFunctionArn": SM_ARN})
    assert target.client.meta.region_name == "eu-west-1"
    with Stubber(target.client) as stub:
        stub.add_response(
            "describe_state_machine", describe("EXPRESS"), {"stateMachineArn": SM_ARN}
        )
        for answer in ("one", "two"):
            stub.add_response(
                "start_sync_execution",
                sync_result("SUCCEEDED", output=json.dumps({"answer": answer})),
                {"stateMachineArn": SM_ARN, "name": ANY, "input": json.dumps({"question": "q"})},
            )
        assert target.invoke(make_case("q")).answer == "one"
        assert target.invoke(make_case("q")).answer == "two"  # no second describe
        stub.assert_no_pending_responses()


def test_express_failure(make_case: Callable[..., Any]) -> None:
    target = StepFunctionsTarget({"stepFunctionArn": SM_ARN})
    with Stubber(target.client) as stub:
        stub.add_response("describe_state_machine", describe("EXPRESS"))
        stub.add_response(
            "start_sync_execution",
            sync_result("TIMED_OUT", error="States.Timeout", cause="State 'Generate' timed out"),
        )
        with pytest.raises(TargetError) as info:
            target.invoke(make_case())
    assert "TIMED_OUT" in info.value.message and "States.Timeout" in info.value.message
    assert "'Generate' timed out" in info.value.message


def test_standard_polls_until_done(fast_polling: None, make_case: Callable[..., Any]) -> None:
    target = StepFunctionsTarget({"stepFunctionArn": SM_ARN})
    execution = SM_ARN.replace("stateMachine", "execution") + ":run-1"
    running = {
        "executionArn": execution,
        "stateMachineArn": SM_ARN,
        "status": "RUNNING",
        "startDate": "2024-01-01T00:00:00Z",
    }
    with Stubber(target.client) as stub:
        stub.add_response("describe_state_machine", describe("STANDARD"))
        stub.add_response(
            "start_execution", {"executionArn": execution, "startDate": "2024-01-01T00:00:00Z"}
        )
        stub.add_response("describe_execution", running, {"executionArn": execution})
        stub.add_response("describe_execution", running, {"executionArn": execution})
        stub.add_response(
            "describe_execution",
            {**running, "status": "SUCCEEDED", "output": json.dumps({"output": "done"})},
        )
        assert target.invoke(make_case()).answer == "done"
        stub.assert_no_pending_responses()


def test_succeeded_without_output_is_explained(make_case: Callable[..., Any]) -> None:
    target = StepFunctionsTarget({"stepFunctionArn": SM_ARN})
    with Stubber(target.client) as stub:
        stub.add_response("describe_state_machine", describe("EXPRESS"))
        stub.add_response("start_sync_execution", sync_result("SUCCEEDED"))
        with pytest.raises(TargetError, match="256 KiB"):
            target.invoke(make_case())


def test_missing_state_machine(make_case: Callable[..., Any]) -> None:
    target = StepFunctionsTarget({"stepFunctionArn": SM_ARN})
    with Stubber(target.client) as stub:
        stub.add_client_error("describe_state_machine", "StateMachineDoesNotExist", "no such")
        with pytest.raises(TargetError, match=r"not found.*eu-west-1"):
            target.invoke(make_case())


def test_state_machine_name() -> None:
    assert state_machine_name(SM_ARN) == "express-qa"


def test_an_oversized_output_is_refused(make_case: Callable[..., Any]) -> None:
    target = StepFunctionsTarget({"stepFunctionArn": SM_ARN, "max_response_bytes": 2048})
    with Stubber(target.client) as stub:
        stub.add_response(
            "describe_state_machine", describe("EXPRESS"), {"stateMachineArn": SM_ARN}
        )
        stub.add_response(
            "start_sync_execution",
            sync_result("SUCCEEDED", output=json.dumps({"answer": "é" * 1500})),
            {"stateMachineArn": SM_ARN, "name": ANY, "input": ANY},
        )
        with pytest.raises(TargetError, match=r"larger than max_response_bytes=2,048"):
            target.invoke(make_case("q"))
