"""Lambda target: payload sent, payload shapes returned, function errors, IAM and retries."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend

from evalrunner.errors import TargetError
from evalrunner.targets.lambda_function import LambdaTarget, access_denied_message, function_name

ARN = "arn:aws:lambda:eu-west-1:123456789012:function:qa-bot"


class FakeFunction:
    """Stands in for the function's code inside moto's docker-free Lambda backend."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.result: Any = {"answer": "ok"}
        self.error: dict[str, str] | None = None

    def __call__(
        self, backend: Any, function_name: str, qualifier: Any, body: Any, headers: Any, rh: Any
    ) -> bytes:
        self.events.append(json.loads(body))
        if self.error is not None:
            rh["x-amz-function-error"] = "Unhandled"
            return json.dumps(self.error).encode()
        return json.dumps(self.result).encode()


@pytest.fixture
def fake_function(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeFunction]:
    fake = FakeFunction()

    def invoke(self: Any, function_name: str, qualifier: Any, body: Any, headers: Any, rh: Any):
        return fake(self, function_name, qualifier, body, headers, rh)

    monkeypatch.setattr(LambdaSimpleBackend, "invoke", invoke)
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield fake


def test_invokes_with_question_and_normalises_answer(
    fake_function: FakeFunction, make_case: Callable[..., Any]
) -> None:
    fake_function.result = {"answer": "25 days", "contexts": ["Staff get 25 days."]}
    target = LambdaTarget({"lambdaArn": ARN})
    response = target.invoke(make_case("How many days?"))
    assert fake_function.events == [{"question": "How many days?"}]
    assert response.answer == "25 days" and response.contexts == ["Staff get 25 days."]
    assert target.name == "qa-bot"
    assert target.client.meta.region_name == "eu-west-1"  # from the ARN, not the default


def test_conversation_and_question_field(
    fake_function: FakeFunction, make_case: Callable[..., Any]
) -> None:
    target = LambdaTarget({"lambdaArn": "qa-bot", "question_field": "input"})
    target.invoke(make_case("And next year?", turns=[("user", "Days off?"), ("assistant", "25")]))
    assert fake_function.events == [
        {
            "input": "And next year?",
            "conversation": [
                {"role": "user", "content": "Days off?"},
                {"role": "assistant", "content": "25"},
            ],
        }
    ]


def test_api_gateway_shaped_return_and_mapping(
    fake_function: FakeFunction, make_case: Callable[..., Any]
) -> None:
    fake_function.result = {"statusCode": 200, "body": json.dumps({"out": {"reply": "mapped"}})}
    target = LambdaTarget({"lambdaArn": ARN, "answer_path": "out.reply"})
    assert target.invoke(make_case()).answer == "mapped"


def test_bare_string_return(fake_function: FakeFunction, make_case: Callable[..., Any]) -> None:
    fake_function.result = "just a string"
    assert LambdaTarget({"lambdaArn": ARN}).invoke(make_case()).answer == "just a string"


def test_function_error_shows_type_and_message(
    fake_function: FakeFunction, make_case: Callable[..., Any]
) -> None:
    fake_function.error = {"errorMessage": "index out of range", "errorType": "IndexError"}
    with pytest.raises(TargetError) as info:
        LambdaTarget({"lambdaArn": ARN}).invoke(make_case())
    assert "IndexError" in info.value.message and "index out of range" in info.value.message
    assert "qa-bot" in info.value.message


def test_region_falls_back_to_spec_then_session() -> None:
    assert LambdaTarget(
        {"lambdaArn": "qa-bot", "region": "ap-south-1"}
    ).client.meta.region_name == ("ap-south-1")
    session = boto3.Session(region_name="ca-central-1")
    assert LambdaTarget({"lambdaArn": "qa-bot"}, session=session).client.meta.region_name == (
        "ca-central-1"
    )


def test_client_config_comes_from_spec() -> None:
    config = LambdaTarget(
        {"lambdaArn": ARN, "timeout_seconds": 7, "max_retries": 2}
    ).client.meta.config
    assert config.read_timeout == 7 and config.connect_timeout == 7
    assert config.retries == {"total_max_attempts": 3, "mode": "standard"}


def test_total_timeout_caps_botocore_attempts_to_whole_timeouts_that_fit() -> None:
    spec = {"lambdaArn": ARN, "timeout_seconds": 10, "max_retries": 5}
    config = LambdaTarget({**spec, "total_timeout_seconds": 25}).client.meta.config
    assert config.retries["total_max_attempts"] == 2
    config = LambdaTarget({**spec, "total_timeout_seconds": 5}).client.meta.config
    assert config.retries["total_max_attempts"] == 1  # always one attempt


def test_function_name_forms() -> None:
    assert function_name(ARN + ":prod") == "qa-bot"
    assert function_name("qa-bot:prod") == "qa-bot"
    assert function_name("qa-bot") == "qa-bot"


AWS_DENIAL = (
    "User: arn:aws:sts::111122223333:assumed-role/EvalRunnerRole/run-case is not authorized to "
    f"perform: lambda:InvokeFunction on resource: {ARN} because no resource-based policy allows "
    "the lambda:InvokeFunction action"
)


def test_access_denied_shows_the_permission_to_add(make_case: Callable[..., Any]) -> None:
    target = LambdaTarget({"lambdaArn": ARN})
    with Stubber(target.client) as stub:
        stub.add_client_error(
            "invoke",
            service_error_code="AccessDeniedException",
            service_message=AWS_DENIAL,
            http_status_code=403,
        )
        with pytest.raises(TargetError) as info:
            target.invoke(make_case())
    message = info.value.message
    assert (
        f"aws lambda add-permission --function-name {ARN} --statement-id evalrunner-invoke "
        "--action lambda:InvokeFunction "
        "--principal arn:aws:iam::111122223333:role/EvalRunnerRole --region eu-west-1"
    ) in message
    statement = json.loads(message.split("policy:\n  ", 1)[1].split("\n", 1)[0])
    assert statement == {
        "Sid": "AllowEvalrunnerInvoke",
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::111122223333:role/EvalRunnerRole"},
        "Action": "lambda:InvokeFunction",
        "Resource": ARN,
    }
    assert not info.value.retryable


def test_access_denied_with_unparseable_message_still_guides() -> None:
    message = access_denied_message("Access denied", ARN, "eu-west-1")
    assert "<ARN of the role running evalrunner>" in message and ARN in message


def test_not_found_names_function_and_region(make_case: Callable[..., Any]) -> None:
    target = LambdaTarget({"lambdaArn": ARN})
    with Stubber(target.client) as stub:
        stub.add_client_error(
            "invoke", service_error_code="ResourceNotFoundException", http_status_code=404
        )
        with pytest.raises(TargetError, match="eu-west-1"):
            target.invoke(make_case())


LAMBDA_THROTTLE = {
    "Type": "User",
    "message": "Rate Exceeded.",
    "Reason": "ReservedFunctionConcurrentInvocationLimitExceeded",
}


def test_throttling_is_retried_by_botocore(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", loopback.url)
    loopback.reply(429, LAMBDA_THROTTLE, headers={"x-amzn-ErrorType": "TooManyRequestsException"})
    loopback.always(200, {"answer": "after throttle"})
    target = LambdaTarget({"lambdaArn": ARN, "max_retries": 1})
    assert target.invoke(make_case()).answer == "after throttle"
    assert len(loopback.requests) == 2
    assert (
        loopback.requests[0].path == f"/2015-03-31/functions/{ARN.replace(':', '%3A')}/invocations"
    )


def test_throttling_beyond_max_retries_is_a_retryable_error(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", loopback.url)
    loopback.always(429, LAMBDA_THROTTLE, headers={"x-amzn-ErrorType": "TooManyRequestsException"})
    target = LambdaTarget({"lambdaArn": ARN, "max_retries": 0})
    with pytest.raises(TargetError) as info:
        target.invoke(make_case())
    assert info.value.retryable and "throttled" in info.value.message
    assert len(loopback.requests) == 1


def test_an_oversized_payload_is_refused_not_read_whole(
    fake_function: FakeFunction, make_case: Callable[..., Any]
) -> None:
    fake_function.result = {"answer": "x" * 5000}
    target = LambdaTarget({"lambdaArn": ARN, "max_response_bytes": 4096})
    with pytest.raises(TargetError, match=r"larger than max_response_bytes=4,096") as info:
        target.invoke(make_case())
    assert not info.value.retryable
    fake_function.result = {"answer": "x" * 4000}
    assert len(target.invoke(make_case()).answer) == 4000
