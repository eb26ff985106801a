"""Bedrock agent target.

Stubber cannot stub InvokeAgent (it validates ``completion`` as a dict, not an event stream),
so the parsing logic is tested with a client-level fake that returns botocore's parsed shape,
and the real wire path (event-stream framing, exception events mid-stream) against a loopback
server that speaks the binary event-stream protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from evalrunner.errors import TargetError
from evalrunner.targets.bedrock_agent import BedrockAgentTarget
from tests.support.agent_stream import (
    STREAM_HEADERS,
    s3_ref,
    wire_chunk,
    wire_event,
    wire_exception,
)

SPEC = {"agentId": "AGENT12345", "agentAliasId": "ALIAS12345"}


def chunk(text: str, references: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"bytes": text.encode()}
    if references is not None:
        event["attribution"] = {
            "citations": [
                {
                    "generatedResponsePart": {"textResponsePart": {"text": text}},
                    "retrievedReferences": references,
                }
            ]
        }
    return {"chunk": event}


def trace(step: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"trace": {"agentId": SPEC["agentId"], "trace": {step: body}}}


def usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "modelInvocationOutput": {
            "metadata": {"usage": {"inputTokens": input_tokens, "outputTokens": output_tokens}}
        }
    }


class FakeAgent:
    """Replaces ``client.invoke_agent``; each call consumes the next scripted event list."""

    def __init__(self, *streams: list[dict[str, Any]]) -> None:
        self.streams = list(streams)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **params: Any) -> dict[str, Any]:
        self.calls.append(params)
        events = self.streams.pop(0) if len(self.streams) > 1 else self.streams[0]

        def stream() -> Iterable[dict[str, Any]]:
            yield from events

        return {"completion": stream(), "contentType": "application/json", "sessionId": "s"}


def agent_with(fake: FakeAgent, **spec: Any) -> BedrockAgentTarget:
    target = BedrockAgentTarget({**SPEC, **spec})
    target.client.invoke_agent = fake  # type: ignore[method-assign]
    target.backoff_base_s = 0.001
    return target


def test_chunks_are_joined_and_citations_become_contexts(make_case: Callable[..., Any]) -> None:
    fake = FakeAgent(
        [
            chunk("You get 25 days ", [s3_ref("Staff get 25 days.", "s3://hr/leave.pdf")]),
            chunk(
                "of leave.",
                [
                    s3_ref("Staff get 25 days.", "s3://hr/leave.pdf"),
                    {
                        "content": {"text": "Carry-over: 5."},
                        "location": {"webLocation": {"url": "https://hr/wiki"}},
                    },
                ],
            ),
            trace("orchestrationTrace", usage(100, 20)),
            trace("postProcessingTrace", usage(10, 5)),
        ]
    )
    target = agent_with(fake)
    response = target.invoke(make_case("Days off?"))
    assert response.answer == "You get 25 days of leave."
    assert response.contexts == ["Staff get 25 days.", "Carry-over: 5."]
    assert response.documents == ["s3://hr/leave.pdf", "https://hr/wiki"]
    assert (response.input_tokens, response.output_tokens) == (110, 25)
    assert target.name == "AGENT12345-ALIAS12345"
    (call,) = fake.calls
    assert call["agentId"] == "AGENT12345" and call["agentAliasId"] == "ALIAS12345"
    assert call["inputText"] == "Days off?" and call["enableTrace"] is True
    assert len(call["sessionId"]) == 36


def test_knowledge_base_lookups_in_trace_when_no_citations(make_case: Callable[..., Any]) -> None:
    lookup = {
        "observation": {
            "type": "KNOWLEDGE_BASE",
            "knowledgeBaseLookupOutput": {
                "retrievedReferences": [s3_ref("Policy text", "s3://hr/policy.pdf")]
            },
        }
    }
    fake = FakeAgent([trace("orchestrationTrace", lookup), chunk("Answer without citations")])
    response = agent_with(fake).invoke(make_case())
    assert response.answer == "Answer without citations"
    assert response.contexts == ["Policy text"] and response.documents == ["s3://hr/policy.pdf"]
    assert response.input_tokens is None


def test_citations_win_over_trace_lookups(make_case: Callable[..., Any]) -> None:
    lookup = {
        "observation": {
            "knowledgeBaseLookupOutput": {"retrievedReferences": [s3_ref("looked up", "s3://a")]}
        }
    }
    fake = FakeAgent([trace("orchestrationTrace", lookup), chunk("x", [s3_ref("cited", "s3://b")])])
    response = agent_with(fake).invoke(make_case())
    assert response.contexts == ["cited"] and response.documents == ["s3://b"]


def test_tool_from_action_group_invocation(make_case: Callable[..., Any]) -> None:
    action = {
        "invocationInput": {
            "invocationType": "ACTION_GROUP",
            "actionGroupInvocationInput": {
                "actionGroupName": "HRActions",
                "function": "get_balance",
            },
        }
    }
    fake = FakeAgent([trace("orchestrationTrace", action), chunk("You have 12 days left.")])
    assert agent_with(fake).invoke(make_case()).tool == "HRActions/get_balance"


def test_conversation_is_replayed_in_one_session(make_case: Callable[..., Any]) -> None:
    fake = FakeAgent(
        [chunk("first reply"), trace("orchestrationTrace", usage(10, 1))],
        [chunk("second reply"), trace("orchestrationTrace", usage(20, 2))],
        [chunk("final"), trace("orchestrationTrace", usage(30, 3))],
    )
    target = agent_with(fake, enableTrace=False, sessionAttributes={"tenant": "acme"})
    case = make_case(
        "And next year?",
        turns=[("user", "Hi"), ("assistant", "Hello!"), ("user", "Days off?"), ("assistant", "25")],
    )
    response = target.invoke(case)
    assert response.answer == "final"
    assert [c["inputText"] for c in fake.calls] == ["Hi", "Days off?", "And next year?"]
    assert len({c["sessionId"] for c in fake.calls}) == 1
    assert all(c["enableTrace"] is False for c in fake.calls)
    assert fake.calls[0]["sessionState"] == {"sessionAttributes": {"tenant": "acme"}}
    assert (response.input_tokens, response.output_tokens) == (60, 6)


def test_each_case_gets_a_fresh_session(make_case: Callable[..., Any]) -> None:
    fake = FakeAgent([chunk("a")])
    target = agent_with(fake)
    target.invoke(make_case())
    target.invoke(make_case())
    assert fake.calls[0]["sessionId"] != fake.calls[1]["sessionId"]


def test_throttling_in_stream_is_retried(make_case: Callable[..., Any]) -> None:
    throttled = [chunk("partial "), {"throttlingException": {"message": "Rate exceeded"}}]
    fake = FakeAgent(throttled, throttled, [chunk("complete answer")])
    response = agent_with(fake, max_retries=2).invoke(make_case())
    assert response.answer == "complete answer"  # the partial chunks of failed tries are gone
    assert len(fake.calls) == 3
    assert fake.calls[0]["sessionId"] != fake.calls[2]["sessionId"]


def test_throttling_retries_are_bounded(make_case: Callable[..., Any]) -> None:
    fake = FakeAgent([{"throttlingException": {"message": "Rate exceeded"}}])
    with pytest.raises(TargetError) as info:
        agent_with(fake, max_retries=1).invoke(make_case())
    assert len(fake.calls) == 2
    assert info.value.retryable
    assert "throttlingException" in info.value.message and "2 attempt(s)" in info.value.message


def test_non_retryable_stream_error_is_not_retried(make_case: Callable[..., Any]) -> None:
    fake = FakeAgent([{"accessDeniedException": {"message": "agent role cannot use model"}}])
    with pytest.raises(TargetError) as info:
        agent_with(fake, max_retries=3).invoke(make_case())
    assert len(fake.calls) == 1
    assert not info.value.retryable and "agent role cannot use model" in info.value.message


def test_failure_trace_without_answer_is_an_error(make_case: Callable[..., Any]) -> None:
    fake = FakeAgent([trace("failureTrace", {"failureReason": "Action group Lambda timed out"})])
    with pytest.raises(TargetError, match="Action group Lambda timed out"):
        agent_with(fake).invoke(make_case())


def test_return_control_reports_the_tool(make_case: Callable[..., Any]) -> None:
    control = {
        "returnControl": {
            "invocationId": "i",
            "invocationInputs": [
                {"functionInvocationInput": {"actionGroup": "Booking", "function": "book_room"}}
            ],
        }
    }
    response = agent_with(FakeAgent([control])).invoke(make_case())
    assert response.answer == "" and response.tool == "Booking/book_room"


# ----------------------------------------------------------------------- real wire format


def test_real_event_stream_with_mid_stream_throttling(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", loopback.url)
    loopback.reply(
        200,
        wire_chunk("partial")
        + wire_exception("throttlingException", "Your request rate is too high"),
        headers=STREAM_HEADERS,
    )
    trace_event = wire_event(
        "trace",
        {
            "agentId": SPEC["agentId"],
            "sessionId": "session-1",
            "trace": {"orchestrationTrace": usage(42, 7)},
        },
    )
    loopback.reply(
        200,
        wire_chunk("Twenty-five ", "s3://hr/leave.pdf") + wire_chunk("days.") + trace_event,
        headers=STREAM_HEADERS,
    )
    target = BedrockAgentTarget({**SPEC, "max_retries": 1})
    target.backoff_base_s = 0.001
    response = target.invoke(make_case("Days off?"))
    assert response.answer == "Twenty-five days."
    assert response.contexts == ["source of Twenty-five"]
    assert response.documents == ["s3://hr/leave.pdf"]
    assert (response.input_tokens, response.output_tokens) == (42, 7)
    assert len(loopback.requests) == 2
    first = loopback.requests[0]
    assert first.path.startswith("/agents/AGENT12345/agentAliases/ALIAS12345/sessions/")
    assert first.json() == {"inputText": "Days off?", "enableTrace": True}


def test_real_event_stream_error_after_retries(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", loopback.url)
    loopback.always(
        200, wire_exception("dependencyFailedException", "Lambda failed"), headers=STREAM_HEADERS
    )
    target = BedrockAgentTarget({**SPEC, "max_retries": 2})
    target.backoff_base_s = 0.001
    with pytest.raises(TargetError) as info:
        target.invoke(make_case())
    assert (
        "dependencyFailedException" in info.value.message and "Lambda failed" in info.value.message
    )
    assert len(loopback.requests) == 3


def test_access_denied_names_the_permission(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", loopback.url)
    loopback.always(
        403,
        {"message": "not authorized"},
        headers={"x-amzn-ErrorType": "AccessDeniedException"},
    )
    with pytest.raises(TargetError) as info:
        BedrockAgentTarget(SPEC).invoke(make_case())
    assert "bedrock:InvokeAgent" in info.value.message
    assert "agent-alias/AGENT12345/ALIAS12345" in info.value.message


def test_character_split_across_chunks(make_case: Callable[..., Any]) -> None:
    encoded = "Café".encode()
    fake = FakeAgent([{"chunk": {"bytes": encoded[:4]}}, {"chunk": {"bytes": encoded[4:]}}])
    assert agent_with(fake).invoke(make_case()).answer == "Café"


def test_a_stream_past_its_deadline_or_size_cap_is_cut_and_closed() -> None:
    import time

    from evalrunner.errors import TargetTimeout
    from evalrunner.targets.bedrock_agent import read_completion

    class Stream:
        """Endless chunks, as a runaway agent would send them; records being closed."""

        closed = False

        def __iter__(self):
            while not self.closed:
                yield {"chunk": {"bytes": b"blah " * 100}}

        def close(self) -> None:
            self.closed = True

    late = Stream()
    with pytest.raises(TargetTimeout, match="timeout_seconds=2"):
        read_completion(late, "agent", deadline=time.monotonic() - 1, timeout=2)
    assert late.closed
    big = Stream()
    with pytest.raises(TargetError, match="max_response_bytes=4,096") as info:
        read_completion(big, "agent", max_bytes=4096)
    assert big.closed and not info.value.retryable


def test_a_conversation_turn_sends_only_the_new_input_in_its_session(
    make_case: Callable[..., Any],
) -> None:
    from evalrunner.suite.model import Turn
    from evalrunner.targets.base import ConversationSession

    fake = FakeAgent([chunk("noted")], [chunk("hello Ana")], [chunk("you are Ana")])
    target = agent_with(fake)
    prior = (Turn(role="system", content="be brief"), Turn(role="user", content="I am Ana."))
    # turn 1 replays the suite's fixed user turns into the session first
    target.invoke_turn(make_case("Hi"), ConversationSession(id="conv-1", position=1, prior=prior))
    # turn 2 carries its history for the other kinds; the agent gets only the new input
    later = make_case("Who am I?", turns=[("user", "Hi"), ("assistant", "hello Ana")])
    response = target.invoke_turn(later, ConversationSession(id="conv-1", position=2, prior=prior))
    assert response.answer == "you are Ana"
    assert [(c["sessionId"], c["inputText"]) for c in fake.calls] == [
        ("conv-1", "I am Ana."),
        ("conv-1", "Hi"),
        ("conv-1", "Who am I?"),
    ]


def test_a_throttled_turn_is_retried_in_the_same_session(make_case: Callable[..., Any]) -> None:
    from evalrunner.targets.base import ConversationSession

    throttled = [{"throttlingException": {"message": "Rate exceeded"}}]
    fake = FakeAgent(throttled, [chunk("answer")])
    target = agent_with(fake, max_retries=1)
    response = target.invoke_turn(make_case("Q"), ConversationSession(id="conv-9", position=3))
    assert response.answer == "answer"
    assert [c["sessionId"] for c in fake.calls] == ["conv-9", "conv-9"]
