"""A Lambda target whose function the local engine hosts is invoked in-process (issue 18),
and nothing a user sees changes: each test builds the same target twice, once through boto3
and moto's Lambda (the way it was, and the way a deployed Lambda still is) and once through
the engine's target factory, and compares what the handler got and what the target made of
the answer. A spy on moto's Lambda responses tells the two paths apart.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from evalrunner.engine import LocalEngine
from evalrunner.engine.dispatch import Dispatcher, dispatching
from evalrunner.engine.embedded import ACCOUNT, REGION
from evalrunner.engine.moto_compat import InProcessLambdaClient, embedded_aws
from evalrunner.suite.model import TestCase, Turn
from evalrunner.targets.base import ConversationSession
from evalrunner.targets.lambda_function import LambdaTarget
from evalrunner.targets.registry import parse_spec
from lambdas.local import local_pipeline

#: (function name, the event as the handler got it, the event object itself)
EVENTS: list[tuple[str, dict[str, Any], dict[str, Any]]] = []


def answering(event: dict[str, Any], context: Any) -> Any:
    EVENTS.append((context.function_name, copy.deepcopy(event), event))
    event["prompt"] = "changed by the handler"  # its own parsed copy: no one else sees it
    return {
        "answer": "Twenty-five days, ünïcode kept.",
        "contexts": ["Policy §4: 25 days", "x" * 40],
        "tool": "leave_lookup",
        "usage": {"input_tokens": 12, "output_tokens": 7},
    }


def raising(event: dict[str, Any], context: Any) -> Any:
    raise PermissionError("the HR database refused the lookup")


def not_json(event: dict[str, Any], context: Any) -> Any:
    return {"answer": {1, 2}}


def a_list(event: dict[str, Any], context: Any) -> Any:
    return ["not", "an", "answer"]


def no_answer(event: dict[str, Any], context: Any) -> Any:
    return {"status": 200}


def oversized(event: dict[str, Any], context: Any) -> Any:
    return {"answer": "x" * 6_100_000}


HOSTED = {
    "answering": answering,
    "raising": raising,
    "not-json": not_json,
    "a-list": a_list,
    "no-answer": no_answer,
    "oversized": oversized,
}


@pytest.fixture
def hosting(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LocalEngine, Dispatcher]]:
    """An engine hosting :data:`HOSTED`, its dispatcher routing moto's Lambda, in the mock
    (the reference path through boto3 takes the mock's region from the environment: the
    engine no longer sets it there)."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    EVENTS.clear()
    engine = LocalEngine(pipeline=local_pipeline, extra_functions=HOSTED, fast=True)
    dispatcher = Dispatcher(dict(HOSTED))
    with engine.embedded_aws(), embedded_aws(), dispatching(dispatcher):
        yield engine, dispatcher


def both_targets(
    engine: LocalEngine, dispatcher: Dispatcher, spec: dict[str, Any]
) -> tuple[LambdaTarget, LambdaTarget]:
    """(through boto3 and moto, as before; through the engine's factory)."""
    through_boto3 = LambdaTarget(spec)
    hosted = engine.target_factory(dispatcher.invoke)(parse_spec(spec), session=None)
    assert isinstance(hosted, LambdaTarget)
    assert isinstance(hosted.client, InProcessLambdaClient)
    return through_boto3, hosted


def case() -> TestCase:
    earlier = [Turn(role="user", content="Hi"), Turn(role="assistant", content="Hello!")]
    return TestCase(index=0, case_id="c1", question="How many days?", conversation=earlier)


def outcome(target: LambdaTarget, *, session: ConversationSession | None = None) -> Any:
    """What the run records: the response, or the error's type, message and retryability."""
    try:
        if session is not None:
            return target.invoke_turn(case(), session)
        return target.invoke(case())
    except Exception as exc:
        return (type(exc).__name__, str(exc), getattr(exc, "retryable", None))


FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:answering"


@pytest.mark.parametrize(
    "lambda_arn",
    [
        "answering",
        "answering:live",
        FUNCTION_ARN,
        f"{FUNCTION_ARN}:7",
        "arn:aws:lambda:eu-west-1:111122223333:function:answering:prod",
    ],
)
def test_a_hosted_target_gets_the_same_event_and_gives_the_same_response(
    hosting: tuple[LocalEngine, Dispatcher], moto_invokes: list[str], lambda_arn: str
) -> None:
    """Every ARN form and qualifier reaches the hosted function as it did through moto; the
    handler gets a fresh event (its change to it stays its own), the answer is normalised to
    the same TargetResponse, and only the boto3 path crossed moto's Lambda responses."""
    engine, dispatcher = hosting
    spec = {"lambdaArn": lambda_arn, "question_field": "prompt", "history_field": "history"}
    through_boto3, hosted = both_targets(engine, dispatcher, spec)
    turn = ConversationSession(id="s-1", position=2)
    before = [outcome(through_boto3), outcome(through_boto3, session=turn)]
    assert len(moto_invokes) == 2
    after = [outcome(hosted), outcome(hosted, session=turn)]
    assert len(moto_invokes) == 2  # the hosted path made no trip through moto's Lambda
    assert after == before
    assert after[0].answer == "Twenty-five days, ünïcode kept."
    assert after[0].contexts == ["Policy §4: 25 days", "x" * 40]
    assert after[0].input_tokens == 12
    assert [name for name, _, _ in EVENTS] == ["answering"] * 4
    events = [event for _, event, _ in EVENTS]
    assert events[2] == events[0] and events[3] == events[1]
    assert events[0]["prompt"] == "How many days?"
    assert len({id(got) for _, _, got in EVENTS}) == 4  # a fresh dict per invocation
    assert events[0]["history"] == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
    ]
    assert events[1]["session_id"] == "s-1"


@pytest.mark.parametrize("function", ["raising", "not-json", "a-list", "no-answer", "oversized"])
def test_a_hosted_targets_failures_are_reported_as_through_boto3(
    hosting: tuple[LocalEngine, Dispatcher], moto_invokes: list[str], function: str
) -> None:
    """A handler that raises, an answer that is not JSON, one of the wrong shape, one without
    an answer and one over Lambda's 6 MB: the same error, word for word, on both paths."""
    engine, dispatcher = hosting
    through_boto3, hosted = both_targets(engine, dispatcher, {"lambdaArn": function})
    before = outcome(through_boto3)
    after = outcome(hosted)
    assert len(moto_invokes) == 1
    assert isinstance(after, tuple), f"{function} answered: {after}"
    assert after == before


def test_function_errors_keep_lambdas_shape(hosting: tuple[LocalEngine, Dispatcher]) -> None:
    """The hosted path's errors are Lambda's (FunctionError, errorType, errorMessage), so the
    target names the handler's exception, and an oversized answer is Lambda's size error."""
    engine, dispatcher = hosting
    _, raised = both_targets(engine, dispatcher, {"lambdaArn": "raising"})
    name, message, retryable = outcome(raised)
    assert name == "TargetError" and retryable is False
    assert "raised PermissionError: the HR database refused the lookup" in message
    assert "FunctionError=Unhandled" in message
    _, big = both_targets(engine, dispatcher, {"lambdaArn": "oversized"})
    assert "Function.ResponseSizeTooLarge" in outcome(big)[1]


def test_a_target_the_engine_does_not_host_still_goes_through_boto3(
    hosting: tuple[LocalEngine, Dispatcher], moto_invokes: list[str]
) -> None:
    """A deployed function (any name the engine does not host) keeps boto3's client: its call
    is a real botocore request, which inside the mock is the one moto's Lambda answers."""
    engine, dispatcher = hosting
    remote = "arn:aws:lambda:eu-west-1:111122223333:function:hr-assistant"
    target = engine.target_factory(dispatcher.invoke)(
        parse_spec({"lambdaArn": remote}), session=None
    )
    assert isinstance(target, LambdaTarget)
    assert not isinstance(target.client, InProcessLambdaClient)
    assert target.client.meta.service_model.service_name == "lambda"
    result = outcome(target)
    assert len(moto_invokes) == 1 and "hr-assistant" in moto_invokes[0]
    assert "no local handler for function 'hr-assistant'" in result[1]  # the mock's answer


def test_other_targets_are_built_as_before(hosting: tuple[LocalEngine, Dispatcher]) -> None:
    engine, dispatcher = hosting
    target = engine.target_factory(dispatcher.invoke)(
        parse_spec({"url": "http://127.0.0.1:9/ask"}), session=None
    )
    assert not isinstance(target, LambdaTarget)


def test_the_in_process_client_carries_json_bytes() -> None:
    """The payload crosses as the bytes Lambda would carry, not as the caller's object."""
    got: list[tuple[str, bytes]] = []

    def route(name: str, body: bytes, headers: dict[str, str]) -> bytes:
        got.append((name, body))
        return json.dumps({"ok": True}).encode()

    client = InProcessLambdaClient(route, lambda: None, region_name="us-east-1")
    answer = client.invoke(FunctionName="fn", InvocationType="RequestResponse", Payload='{"a":1}')
    assert got == [("fn", b'{"a":1}')]
    assert json.loads(answer["Payload"].read()) == {"ok": True}
    assert client.meta.region_name == "us-east-1"
