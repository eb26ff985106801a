"""OpenAI Responses target against a loopback ``/v1/responses``: the exact request (file
search over the vector stores, its results asked for, nothing stored) and a realistic
response read back as answer, contexts, documents, steps and usage."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from evalrunner import redaction
from evalrunner.errors import ConfigError, TargetError
from evalrunner.secrets import event_problems
from evalrunner.targets.factory import build_target, target_name
from evalrunner.targets.openai_responses import OpenAIResponsesTarget

KEY = "sk-proj-responses-0123456789"

#: A Responses API reply to a file-search request, as OpenAI sends it (ids shortened).
RESPONSE: dict[str, Any] = {
    "id": "resp_67ccd2bed1ec8190",
    "object": "response",
    "created_at": 1741476542,
    "status": "completed",
    "error": None,
    "incomplete_details": None,
    "instructions": "Answer from the handbook.",
    "model": "gpt-4.1-mini-2025-04-14",
    "output": [
        {
            "type": "file_search_call",
            "id": "fs_67ccd2bf",
            "status": "completed",
            "queries": ["annual leave days", "leave carry over"],
            "results": [
                {
                    "file_id": "file-2dtbBZdjtDKS8eqWxqbgDi",
                    "filename": "leave-policy.pdf",
                    "score": 0.93,
                    "text": "Full-time staff get 25 days of annual leave a year.",
                    "attributes": {"region": "EU"},
                },
                {
                    "file_id": "file-8Ak1qB",
                    "filename": "carry-over.md",
                    "score": 0.71,
                    "text": "Up to 5 unused days may be carried over.",
                    "attributes": {},
                },
            ],
        },
        {
            "type": "message",
            "id": "msg_67ccd2bf",
            "status": "completed",
            "role": "assistant",
            "content": [
                {
                    "type": "output_text",
                    "text": "You get 25 days a year, and may carry over 5.",
                    "annotations": [
                        {
                            "type": "file_citation",
                            "index": 24,
                            "file_id": "file-2dtbBZdjtDKS8eqWxqbgDi",
                            "filename": "leave-policy.pdf",
                        },
                        {
                            "type": "file_citation",
                            "index": 45,
                            "file_id": "file-Zz9",
                            "filename": "handbook.pdf",
                        },
                    ],
                }
            ],
        },
    ],
    "tools": [{"type": "file_search", "vector_store_ids": ["vs_1234567890"]}],
    "usage": {"input_tokens": 1204, "output_tokens": 18, "total_tokens": 1222},
}


@pytest.fixture(autouse=True)
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OpenAIResponsesTarget, "backoff_factor", 0.01)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def responses(loopback: Any, **options: Any) -> dict[str, Any]:
    return {
        "openai_responses": {"base_url": loopback.url + "/v1", "model": "gpt-4.1-mini", **options}
    }


def test_the_request_searches_the_vector_stores_and_asks_for_the_results(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    loopback.always(200, RESPONSE)
    spec = responses(
        loopback,
        vector_store_ids=["vs_1234567890"],
        max_num_results=4,
        filters={"type": "eq", "key": "region", "value": "EU"},
        instructions="Answer from the handbook.",
        temperature=0,
        max_output_tokens=300,
    )
    target = build_target(spec)
    case = make_case("And how many carry over?", turns=[("user", "Days off?"), ("assistant", "25")])
    target.invoke(case)
    (request,) = loopback.requests
    assert (request.method, request.path) == ("POST", "/v1/responses")
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.headers["Content-Type"] == "application/json"
    assert request.json() == {
        "model": "gpt-4.1-mini",
        "instructions": "Answer from the handbook.",
        "input": [
            {"role": "user", "content": "Days off?"},
            {"role": "assistant", "content": "25"},
            {"role": "user", "content": "And how many carry over?"},
        ],
        "tools": [
            {
                "type": "file_search",
                "vector_store_ids": ["vs_1234567890"],
                "max_num_results": 4,
                "filters": {"type": "eq", "key": "region", "value": "EU"},
            }
        ],
        "include": ["file_search_call.results"],
        "temperature": 0.0,
        "max_output_tokens": 300,
        "store": False,
    }
    assert target.name == "gpt-4.1-mini" == target_name(spec)


def test_the_file_search_results_are_the_contexts_the_rag_metrics_read(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    loopback.always(200, RESPONSE)
    response = build_target(responses(loopback, vector_store_ids=["vs_1"])).invoke(make_case())
    assert response.answer == "You get 25 days a year, and may carry over 5."
    assert response.contexts == [
        "Full-time staff get 25 days of annual leave a year.",
        "Up to 5 unused days may be carried over.",
    ]
    # searched files first, then the ones only the answer cites; each once
    assert response.documents == ["leave-policy.pdf", "carry-over.md", "handbook.pdf"]
    (search,) = response.steps
    assert (search.kind, search.name) == ("knowledge_base", "file_search")
    assert search.arguments == {"queries": ["annual leave days", "leave carry over"]}
    assert (response.input_tokens, response.output_tokens) == (1204, 18)
    assert response.tool is None and response.notes == []


def test_without_vector_stores_the_bare_model_is_asked(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    message = RESPONSE["output"][1]
    loopback.always(
        200,
        {
            **RESPONSE,
            "output": [message],
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
        },
    )
    response = build_target(responses(loopback)).invoke(make_case("Hi"))
    (request,) = loopback.requests
    assert request.json() == {
        "model": "gpt-4.1-mini",
        "input": [{"role": "user", "content": "Hi"}],
        "store": False,
    }
    assert response.contexts == [] and response.steps == []
    assert response.notes == ["the response is incomplete (max_output_tokens)"]


def test_a_function_call_is_a_tool_step(loopback: Any, make_case: Callable[..., Any]) -> None:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "book_leave",
        "arguments": json.dumps({"days": 3}),
        "status": "completed",
    }
    loopback.always(200, {**RESPONSE, "output": [call]})
    response = build_target(responses(loopback)).invoke(make_case("Book 3 days"))
    assert response.answer == "" and response.tool == "book_leave"
    assert response.steps[0].arguments == {"days": 3}


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            {
                **RESPONSE,
                "status": "failed",
                "output": [],
                "error": {"code": "vector_store_not_found", "message": "No vector store vs_1"},
            },
            "failed: vector_store_not_found: No vector store vs_1",
        ),
        ({**RESPONSE, "output": [RESPONSE["output"][0]]}, "answered with no message"),
        ({"object": "response"}, "without an output list"),
    ],
)
def test_a_reply_without_an_answer_is_a_target_error(
    loopback: Any, make_case: Callable[..., Any], reply: dict[str, Any], message: str
) -> None:
    loopback.always(200, reply)
    with pytest.raises(TargetError, match=message):
        build_target(responses(loopback, vector_store_ids=["vs_1"])).invoke(make_case())


def test_a_refused_key_says_where_it_comes_from_never_what_it_is(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    loopback.always(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}})
    with pytest.raises(TargetError) as info:
        build_target(responses(loopback)).invoke(make_case())
    message = redaction.redact(info.value.message)
    assert "OPENAI_API_KEY" in message and KEY not in message


def test_bad_options_and_secret_names_are_refused() -> None:
    with pytest.raises(ConfigError, match="vector_store_ids"):
        OpenAIResponsesTarget(
            {
                "openai_responses": {
                    "base_url": "https://api.openai.com/v1",
                    "model": "m",
                    "vector_store_ids": ["a", "b", "c"],
                }
            }
        )
    event = {
        "target": {
            "openai_responses": {
                "base_url": "https://x",
                "model": "m",
                "api_key_env": "AWS_SECRET_ACCESS_KEY",
            }
        }
    }
    (problem,) = event_problems(event)
    assert problem.startswith("target.openai_responses.api_key_env: AWS_SECRET_ACCESS_KEY")
