"""OpenAI-compatible target against a loopback /chat/completions stub."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from evalrunner.errors import ConfigError, TargetError
from evalrunner.targets.openai_chat import OpenAIChatTarget


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OpenAIChatTarget, "backoff_factor", 0.01)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def completion(content: Any, **message: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, **message}}],
        "usage": {"prompt_tokens": 31, "completion_tokens": 4, "total_tokens": 35},
    }


def target_for(loopback: Any, **options: Any) -> OpenAIChatTarget:
    return OpenAIChatTarget(
        {"openai": {"base_url": loopback.url + "/v1/", "model": "llama3.1:8b", **options}}
    )


def test_request_and_response(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    monkeypatch.setenv("EVALRUNNER_SECRET_MY_LLM_KEY", "sk-test")
    loopback.always(200, completion("Twenty-five days."))
    target = target_for(
        loopback,
        system_prompt="Answer briefly.",
        max_tokens=64,
        api_key_env="EVALRUNNER_SECRET_MY_LLM_KEY",
    )
    case = make_case("And next year?", turns=[("user", "Days off?"), ("assistant", "25")])
    response = target.invoke(case)
    assert response.answer == "Twenty-five days."
    assert (response.input_tokens, response.output_tokens) == (31, 4)
    (request,) = loopback.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-test"
    assert request.json() == {
        "model": "llama3.1:8b",
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Days off?"},
            {"role": "assistant", "content": "25"},
            {"role": "user", "content": "And next year?"},
        ],
        "temperature": 0.0,
        "max_tokens": 64,
    }
    assert target.name == "llama3.1-8b"


def test_no_key_means_no_authorization_header(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(200, completion("hi"))
    target_for(loopback).invoke(make_case("Hello"))
    (request,) = loopback.requests
    assert "Authorization" not in request.headers
    assert request.json() == {
        "model": "llama3.1:8b",
        "messages": [{"role": "user", "content": "Hello"}],
        "temperature": 0.0,
    }


def test_content_parts_and_tool_calls(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(
        200,
        completion(
            None,
            tool_calls=[
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_balance", "arguments": "{}"},
                }
            ],
        ),
    )
    response = target_for(loopback).invoke(make_case())
    assert response.answer == "" and response.tool == "get_balance"
    loopback.always(
        200, completion([{"type": "text", "text": "part one"}, {"type": "text", "text": " two"}])
    )
    assert target_for(loopback).invoke(make_case()).answer == "part one two"


def test_503_then_200(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.reply(503, {"error": {"message": "model loading"}})
    loopback.always(200, completion("ready"))
    assert target_for(loopback).invoke(make_case()).answer == "ready"
    assert len(loopback.requests) == 2


def test_unauthorized_points_at_the_key(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(401, {"error": {"message": "Incorrect API key provided"}})
    with pytest.raises(TargetError) as info:
        target_for(loopback).invoke(make_case())
    assert "HTTP 401" in info.value.message and "Incorrect API key" in info.value.message
    assert "OPENAI_API_KEY" in info.value.message
    assert len(loopback.requests) == 1


def test_500_forever(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(500, {"error": {"message": "boom"}})
    target = OpenAIChatTarget(
        {"openai": {"base_url": loopback.url, "model": "m"}, "max_retries": 1}
    )
    with pytest.raises(TargetError, match="HTTP 500 after 2 attempt"):
        target.invoke(make_case())
    assert len(loopback.requests) == 2


def test_response_without_choices(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(200, {"object": "list", "data": []})
    with pytest.raises(TargetError, match=r"choices\[0\]\.message"):
        target_for(loopback).invoke(make_case())


def test_missing_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="model"):
        OpenAIChatTarget({"openai": {"base_url": "http://127.0.0.1:1"}})


@pytest.mark.parametrize("where", ["system", "user"])
def test_send_contexts_numbers_the_case_contexts_as_sources(
    loopback: Any, make_case: Callable[..., Any], where: str
) -> None:
    loopback.always(200, completion("25 days [1]."))
    target = target_for(loopback, system_prompt="Be brief.", send_contexts=where)
    case = make_case("Days off?", contexts=["Staff get 25 days.", "Carry-over: 5 days."])
    response = target.invoke(case)
    messages = loopback.requests[0].json()["messages"]
    sources = "[1] Staff get 25 days.\n\n[2] Carry-over: 5 days."
    assert messages[0] == {"role": "system", "content": "Be brief."}
    if where == "system":
        assert messages[1]["role"] == "system" and messages[1]["content"].endswith(sources)
        assert messages[2] == {"role": "user", "content": "Days off?"}
    else:
        assert len(messages) == 2 and messages[1]["role"] == "user"
        assert sources in messages[1]["content"]
        assert messages[1]["content"].endswith("Question: Days off?")
    # what the model answered from is recorded as its retrieved context
    assert response.contexts == ["Staff get 25 days.", "Carry-over: 5 days."]
    assert OpenAIChatTarget.sends_contexts(target.spec) == "target.openai.send_contexts"


def test_contexts_are_not_sent_unless_asked(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(200, completion("25 days."))
    target = target_for(loopback)
    response = target.invoke(make_case("Days off?", contexts=["Staff get 25 days."]))
    assert loopback.requests[0].json()["messages"] == [{"role": "user", "content": "Days off?"}]
    assert response.contexts == []
    assert OpenAIChatTarget.sends_contexts(target.spec) is None


def test_send_contexts_must_name_where(loopback: Any) -> None:
    with pytest.raises(ConfigError, match=r"target\.openai\.send_contexts"):
        target_for(loopback, send_contexts="assistant")


def test_a_reasoning_model_gets_no_temperature_and_max_completion_tokens(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    """The openai kind shares the request with azure_openai: ``reasoning: true`` drops the
    temperature that o-series / gpt-5 refuse and sends the limit as ``max_completion_tokens``."""
    loopback.always(200, completion("ok"))
    target_for(loopback, reasoning=True, max_tokens=512).invoke(make_case("Hi"))
    (request,) = loopback.requests
    assert request.json() == {
        "model": "llama3.1:8b",
        "messages": [{"role": "user", "content": "Hi"}],
        "max_completion_tokens": 512,
    }
