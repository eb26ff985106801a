"""Factory: kind detection, report names without clients, building each kind."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

import evalrunner.targets as targets
from evalrunner.errors import ConfigError
from evalrunner.targets.bedrock_agent import BedrockAgentTarget
from evalrunner.targets.factory import TARGET_KINDS, build_target, detect_kind, target_name
from evalrunner.targets.http import HttpSpec, HttpTarget
from evalrunner.targets.knowledge_base import KnowledgeBaseTarget
from evalrunner.targets.lambda_function import LambdaTarget
from evalrunner.targets.openai_chat import OpenAIChatTarget
from evalrunner.targets.registry import parse_spec
from evalrunner.targets.step_functions import StepFunctionsTarget

SPECS: list[tuple[dict[str, Any], type, str]] = [
    (
        {"agentId": "AGENT12345", "agentAliasId": "TSTALIASID", "metric": "BERT Score"},
        BedrockAgentTarget,
        "AGENT12345-TSTALIASID",
    ),
    (
        {"stepFunctionArn": "arn:aws:states:us-east-1:123456789012:stateMachine:qa-flow"},
        StepFunctionsTarget,
        "qa-flow",
    ),
    (
        {"lambdaArn": "arn:aws:lambda:us-east-1:123456789012:function:qa-bot:live"},
        LambdaTarget,
        "qa-bot",
    ),
    ({"url": "https://bot.example.com/api/ask"}, HttpTarget, "bot.example.com-api-ask"),
    (
        {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "gpt-4o-mini"}},
        OpenAIChatTarget,
        "gpt-4o-mini",
    ),
    (
        {"knowledgeBaseId": "KB12345678", "modelArn": "anthropic.claude-3-haiku-20240307-v1:0"},
        KnowledgeBaseTarget,
        "KB12345678",
    ),
]


@pytest.mark.parametrize(("spec", "cls", "name"), SPECS)
def test_each_kind(spec: dict[str, Any], cls: type, name: str) -> None:
    assert TARGET_KINDS[detect_kind(spec)] is cls
    assert target_name(spec) == name
    target = build_target(spec, session=boto3.Session(region_name="eu-north-1"))
    assert isinstance(target, cls) and target.kind == detect_kind(spec)
    assert target.name == name


@pytest.mark.parametrize(("spec", "cls", "name"), SPECS)
def test_a_parsed_spec_builds_the_same_target_from_the_object_as_written(
    spec: dict[str, Any], cls: type, name: str
) -> None:
    written = {"timeout_seconds": 30, **spec, "max_retries": 1}
    parsed = parse_spec(written)
    assert isinstance(parsed, cls.spec_model) and parsed.timeout_seconds == 30.0
    assert json.dumps(parsed.as_written()) == json.dumps(written)  # keys, order, numbers
    target = build_target(parsed, session=boto3.Session(region_name="eu-north-1"))
    assert isinstance(target, cls) and target.name == name
    assert target.spec == written
    assert target.options is not None and target.options.model_dump() == parsed.model_dump()


def test_a_spec_built_in_code_is_written_as_the_fields_set() -> None:
    spec = HttpSpec(url="https://bot.example.com/api/ask", timeout_seconds=5.0)
    assert spec.as_written() == {"url": "https://bot.example.com/api/ask", "timeout_seconds": 5.0}


@pytest.mark.parametrize(("spec", "cls", "name"), SPECS)
def test_name_override(spec: dict[str, Any], cls: type, name: str) -> None:
    renamed = {**spec, "name": "hr-assistant-prod"}
    assert target_name(renamed) == "hr-assistant-prod"
    assert build_target(renamed).name == "hr-assistant-prod"


def test_target_name_builds_no_client(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("target_name must not build clients")

    monkeypatch.setattr(boto3.Session, "client", refuse)
    assert target_name(SPECS[0][0]) == "AGENT12345-TSTALIASID"


def test_session_is_used() -> None:
    target = build_target(
        {"agentId": "AGENT12345", "agentAliasId": "ALIAS12345"},
        session=boto3.Session(region_name="ap-northeast-1"),
    )
    assert isinstance(target, BedrockAgentTarget)
    assert target.client.meta.region_name == "ap-northeast-1"


def test_no_region_anywhere_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    with pytest.raises(ConfigError, match="region"):
        build_target({"agentId": "AGENT12345", "agentAliasId": "ALIAS12345"})


def test_no_kind() -> None:
    with pytest.raises(ConfigError) as info:
        detect_kind({"metric": "BERT Score", "agent": "x"})
    message = info.value.message
    assert "found none" in message and "'agent'" in message
    for kind in ("agentId", "stepFunctionArn", "lambdaArn", "url", "openai", "knowledgeBaseId"):
        assert kind in message


def test_two_kinds() -> None:
    with pytest.raises(ConfigError, match="found agentId, lambdaArn"):
        detect_kind({"agentId": "AGENT12345", "agentAliasId": "A", "lambdaArn": "fn"})


@pytest.mark.parametrize(
    ("spec", "missing"),
    [({"agentId": "AGENT12345"}, "agentAliasId"), ({"knowledgeBaseId": "KB12345678"}, "modelArn")],
)
def test_missing_companion(spec: dict[str, Any], missing: str) -> None:
    with pytest.raises(ConfigError, match=missing):
        build_target(spec)


def test_not_an_object() -> None:
    with pytest.raises(ConfigError, match="JSON object"):
        detect_kind(["agentId"])


def test_bad_timeout_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="timeout_seconds"):
        build_target({"url": "http://127.0.0.1:9/x", "timeout_seconds": 0})


def test_package_exports_lazily() -> None:
    assert targets.build_target is build_target
    assert targets.TargetResponse(answer="a").answer == "a"
    with pytest.raises(AttributeError):
        _ = targets.no_such_thing
