"""Azure OpenAI target against a loopback server: the exact request Azure expects (the
deployment in the path, api-version in the query, the key in ``api-key``, or an Entra ID
token as a bearer), the v1 API's form, and the refusals of endpoints and keys that cannot
work."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from evalrunner import redaction
from evalrunner.errors import ConfigError, TargetError
from evalrunner.secrets import event_problems
from evalrunner.targets.azure_openai import AzureOpenAITarget
from evalrunner.targets.factory import build_target, target_name

KEY = "az-key-0123456789abcdef"


@pytest.fixture(autouse=True)
def fast_and_keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AzureOpenAITarget, "backoff_factor", 0.01)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.delenv("AZURE_OPENAI_AD_TOKEN", raising=False)


def completion(content: str) -> dict[str, Any]:
    """A chat completion as Azure returns it (with its content-filter annotations)."""
    return {
        "id": "chatcmpl-AZ1",
        "object": "chat.completion",
        "created": 1732665600,
        "model": "gpt-4o-2024-08-06",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
                "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}},
            }
        ],
        "usage": {"prompt_tokens": 42, "completion_tokens": 6, "total_tokens": 48},
    }


def azure(loopback: Any, **options: Any) -> dict[str, Any]:
    return {"azure_openai": {"endpoint": loopback.url, "deployment": "gpt-4o-hr", **options}}


def test_the_request_is_azure_s_deployment_path_api_version_and_api_key(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    loopback.always(200, completion("Twenty-five days."))
    target = build_target(
        azure(loopback, system_prompt="Answer briefly.", max_tokens=64, api_version="2024-10-21")
    )
    case = make_case("And next year?", turns=[("user", "Days off?"), ("assistant", "25")])
    response = target.invoke(case)
    (request,) = loopback.requests
    path, query = urlsplit(request.path).path, parse_qs(urlsplit(request.path).query)
    assert path == "/openai/deployments/gpt-4o-hr/chat/completions"
    assert query == {"api-version": ["2024-10-21"]}
    assert request.method == "POST"
    assert request.headers["api-key"] == KEY
    assert request.headers["Content-Type"] == "application/json"
    assert "Authorization" not in request.headers
    assert request.json() == {  # no model: the deployment in the path is the model
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Days off?"},
            {"role": "assistant", "content": "25"},
            {"role": "user", "content": "And next year?"},
        ],
        "temperature": 0.0,
        "max_tokens": 64,
    }
    assert response.answer == "Twenty-five days."
    assert (response.input_tokens, response.output_tokens) == (42, 6)
    assert target.name == "azure-gpt-4o-hr"
    assert target_name(azure(loopback)) == "azure-gpt-4o-hr"  # no client needed
    assert KEY in redaction.registered()  # masked wherever it would be written


def test_the_default_api_version_and_the_v1_api(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    loopback.always(200, completion("ok"))
    build_target(azure(loopback)).invoke(make_case("Hi"))
    build_target(azure(loopback, api_version="v1")).invoke(make_case("Hi"))
    dated, v1 = loopback.requests
    assert dated.path == "/openai/deployments/gpt-4o-hr/chat/completions?api-version=2024-10-21"
    assert v1.path == "/openai/v1/chat/completions"  # the v1 API takes no api-version
    assert v1.json() == {
        "model": "gpt-4o-hr",
        "messages": [{"role": "user", "content": "Hi"}],
        "temperature": 0.0,
    }
    assert v1.headers["api-key"] == KEY


def test_an_entra_id_token_is_a_bearer_and_no_key_is_sent(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    monkeypatch.setenv("EVALRUNNER_SECRET_ENTRA", "eyJ0eXAiOiJKV1QiLCJhbGciOi.entra-token")
    loopback.always(200, completion("ok"))
    target = build_target(azure(loopback, bearer_token_env="EVALRUNNER_SECRET_ENTRA"))
    target.invoke(make_case("Hi"))
    (request,) = loopback.requests
    assert request.headers["Authorization"] == "Bearer eyJ0eXAiOiJKV1QiLCJhbGciOi.entra-token"
    assert "api-key" not in request.headers
    assert "eyJ0eXAiOiJKV1QiLCJhbGciOi.entra-token" in redaction.registered()


def test_a_refused_key_names_what_signs_without_its_value(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    # a gateway that echoes the request's headers in its error: the key must not come back
    loopback.always(401, {"error": {"code": "401", "message": f"Access denied: api-key {KEY}"}})
    with pytest.raises(TargetError) as info:
        build_target(azure(loopback)).invoke(make_case("Hi"))
    message = redaction.redact(info.value.message)
    assert "HTTP 401" in message and "AZURE_OPENAI_API_KEY" in message
    assert KEY not in message


@pytest.mark.parametrize(
    ("endpoint", "why"),
    [
        ("https://hr.openai.azure.com/openai/deployments/gpt-4o/chat/completions", "endpoint only"),
        ("https://hr.openai.azure.com/?api-version=2024-10-21", "without a query string"),
        ("hr.openai.azure.com", "should match pattern"),
    ],
)
def test_an_endpoint_that_is_not_the_resource_s_is_refused(endpoint: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why) as info:
        AzureOpenAITarget({"azure_openai": {"endpoint": endpoint, "deployment": "d"}})
    assert "target.azure_openai.endpoint" in info.value.message


def test_no_key_at_all_is_a_config_error_naming_the_fields(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AZURE_OPENAI_API_KEY")
    with pytest.raises(ConfigError, match="no API key; set AZURE_OPENAI_API_KEY"):
        AzureOpenAITarget(
            {"azure_openai": {"endpoint": "https://hr.openai.azure.com", "deployment": "d"}}
        )


def test_secret_names_are_checked_like_the_openai_kind_s() -> None:
    event = {
        "target": {
            "azure_openai": {
                "endpoint": "https://hr.openai.azure.com",
                "deployment": "d",
                "api_key_env": "AWS_SECRET_ACCESS_KEY",
                "bearer_token_env": "HOME",
            }
        }
    }
    problems = event_problems(event)
    assert any(p.startswith("target.azure_openai.api_key_env: AWS_SECRET") for p in problems)
    assert any(p.startswith("target.azure_openai.bearer_token_env: HOME") for p in problems)


def test_a_reasoning_deployment_gets_no_temperature_and_max_completion_tokens(
    loopback: Any, make_case: Callable[..., Any]
) -> None:
    """o-series and gpt-5 deployments refuse ``temperature`` and ``max_tokens``: with
    ``reasoning: true`` the body has neither, and the limit goes as ``max_completion_tokens``."""
    loopback.always(200, completion("ok"))
    build_target(azure(loopback, reasoning=True, max_tokens=2048)).invoke(make_case("Hi"))
    build_target(azure(loopback, reasoning=True)).invoke(make_case("Hi"))
    limited, unlimited = loopback.requests
    assert limited.json() == {
        "messages": [{"role": "user", "content": "Hi"}],
        "max_completion_tokens": 2048,
    }
    assert unlimited.json() == {"messages": [{"role": "user", "content": "Hi"}]}


def test_a_temperature_for_a_reasoning_deployment_is_refused(loopback: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        build_target(azure(loopback, reasoning=True, temperature=0))
    message = str(caught.value)
    assert "temperature" in message
    assert "reasoning" in message
    assert "Value error" not in message  # worded for the user, not by pydantic
