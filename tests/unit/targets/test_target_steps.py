"""What an agent did, normalised into steps from each target's native shape: a Bedrock agent
trace (the real event shapes, over the real wire path), OpenAI tool_calls, a steps_path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalrunner.targets.adapters import normalise
from evalrunner.targets.steps import AgentStep, steps_from_json, steps_from_tool_calls
from tests.unit.targets.test_target_bedrock_agent import (
    SPEC,
    STREAM_HEADERS,
    FakeAgent,
    agent_with,
    chunk,
    trace,
    wire_chunk,
    wire_event,
)

ACTION = {
    "invocationInput": {
        "invocationType": "ACTION_GROUP",
        "traceId": "t-1",
        "actionGroupInvocationInput": {
            "actionGroupName": "HRActions",
            "function": "get_balance",
            "executionType": "LAMBDA",
            "parameters": [
                {"name": "employee_id", "type": "string", "value": "E42"},
                {"name": "year", "type": "integer", "value": "2026"},
            ],
        },
    }
}
ACTION_OUTPUT = {
    "observation": {
        "type": "ACTION_GROUP",
        "traceId": "t-1",
        "actionGroupInvocationOutput": {"text": '{"balance": 12}'},
    }
}
LOOKUP = {
    "invocationInput": {
        "invocationType": "KNOWLEDGE_BASE",
        "knowledgeBaseLookupInput": {"text": "annual leave policy", "knowledgeBaseId": "KB123"},
    }
}
LOOKUP_OUTPUT = {
    "observation": {
        "type": "KNOWLEDGE_BASE",
        "knowledgeBaseLookupOutput": {
            "retrievedReferences": [
                {"content": {"text": "25 days"}, "location": {"type": "S3"}},
                {"content": {"text": "carry over 5"}, "location": {"type": "S3"}},
            ]
        },
    }
}


def test_a_bedrock_trace_becomes_ordered_steps_with_arguments_and_outputs(
    make_case: Callable[..., Any],
) -> None:
    fake = FakeAgent(
        [
            trace("orchestrationTrace", LOOKUP),
            trace("orchestrationTrace", LOOKUP_OUTPUT),
            trace("orchestrationTrace", ACTION),
            trace("orchestrationTrace", ACTION_OUTPUT),
            chunk("You have 12 days left."),
        ]
    )
    response = agent_with(fake).invoke(make_case())
    assert response.steps == [
        AgentStep(
            kind="knowledge_base",
            name="KB123",
            arguments={"query": "annual leave policy"},
            output="2 reference(s)",
        ),
        AgentStep(
            name="HRActions/get_balance",
            arguments={"employee_id": "E42", "year": "2026"},
            output='{"balance": 12}',
        ),
    ]
    assert response.tool == "HRActions/get_balance"


def test_the_real_event_stream_carries_the_trace_steps(
    loopback: Any, monkeypatch: Any, make_case: Callable[..., Any]
) -> None:
    from evalrunner.targets.bedrock_agent import BedrockAgentTarget

    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", loopback.url)
    events = [
        wire_event(
            "trace",
            {"agentId": SPEC["agentId"], "sessionId": "s", "trace": {"orchestrationTrace": part}},
        )
        for part in (ACTION, ACTION_OUTPUT)
    ]
    loopback.reply(200, b"".join(events) + wire_chunk("12 days."), headers=STREAM_HEADERS)
    response = BedrockAgentTarget(dict(SPEC)).invoke(make_case("Balance?"))
    assert [(s.name, s.arguments, s.output) for s in response.steps] == [
        ("HRActions/get_balance", {"employee_id": "E42", "year": "2026"}, '{"balance": 12}')
    ]


def test_openai_tool_calls_are_steps_with_parsed_arguments() -> None:
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        },
        {"id": "call_2", "type": "function", "function": {"name": "book", "arguments": "oops"}},
        {"id": "call_3", "type": "function", "function": {"name": ""}},
    ]
    assert steps_from_tool_calls(calls) == [
        AgentStep(name="get_weather", arguments={"city": "Oslo"}),
        AgentStep(name="book", arguments={"value": "oops"}),  # not JSON: kept, not lost
    ]


def test_a_steps_path_maps_a_lambdas_own_shape() -> None:
    payload = {
        "reply": "Booked.",
        "trace": [
            {"tool": "search", "args": {"q": "flights"}, "output": ["AF1"]},
            {"name": "book", "arguments": {"id": "AF1"}, "error": "sold out"},
            {"name": "KB9", "kind": "knowledge_base"},
            "notify",
        ],
    }
    response = normalise(payload, {"answer_path": "reply", "steps_path": "trace"})
    assert [(s.kind, s.name, s.failed) for s in response.steps] == [
        ("tool", "search", False),
        ("tool", "book", True),
        ("knowledge_base", "KB9", False),
        ("tool", "notify", False),
    ]
    assert response.steps[0].output == '["AF1"]' and response.steps[1].error == "sold out"
    assert response.tool == "search, book, notify"  # the tools, for Tool choice as before


def test_steps_are_bounded() -> None:
    assert len(steps_from_json(["loop"] * 10_000)) == 200
