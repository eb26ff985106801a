"""Only operator-allowed secrets can be read (issue 11, item 3): the local env-var rules, the
deployed Secrets Manager rules, validation errors that name the field and the fix, and the
target actually sending a secret read from (moto's) Secrets Manager."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from moto import mock_aws

from evalrunner import redaction, secrets
from evalrunner.errors import ConfigError, EventError
from evalrunner.event import parse_event
from evalrunner.judge.config import JudgeConfig
from evalrunner.judge.openai_judge import OpenAIJudge
from evalrunner.targets.http import HttpTarget
from evalrunner.targets.openai_chat import OpenAIChatTarget

ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:qa/bot-token-AbC123"


def event(target: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"key": "test-suites/s.csv", "iterations": 1, "target": target, **extra}


def deployed(monkeypatch: pytest.MonkeyPatch, *arns: str) -> None:
    monkeypatch.setenv(secrets.ENV_POLICY, json.dumps({"allowed_secrets": list(arns)}))


# -- local rules -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "aws_x"])
def test_aws_variables_are_never_allowed_even_when_listed(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv(secrets.ENV_ALLOWED_ENV, f"{name},OTHER")
    problem = secrets.current_policy().env_problem(name, "target.headers_from_env.Authorization")
    assert problem is not None and "never sent" in problem


def test_prefix_builtin_and_listed_names_are_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(secrets.ENV_ALLOWED_ENV, " MY_TEAM_KEY , ")
    policy = secrets.current_policy()
    for name in ("EVALRUNNER_SECRET_X", "OPENAI_API_KEY", "MY_TEAM_KEY"):
        assert policy.env_problem(name, "f") is None
    assert policy.env_problem("HOME", "f") is not None


def test_validation_names_the_field_and_the_fix() -> None:
    target = {
        "url": "https://h.example/ask",
        "headers_from_env": {"Authorization": "AWS_SECRET_ACCESS_KEY"},
    }
    with pytest.raises(EventError) as info:
        parse_event(event(target))
    (problem,) = info.value.problems
    assert problem.startswith(
        "target.headers_from_env.Authorization: AWS_SECRET_ACCESS_KEY is not an allowed secret"
    )
    assert secrets.ENV_PREFIX in problem


def test_validation_covers_openai_target_and_judge_keys() -> None:
    raw = event(
        {"openai": {"base_url": "http://h/v1", "model": "m", "api_key_env": "DATABASE_URL"}},
        judge={"openai": {"base_url": "http://h/v1", "model": "j", "api_key_env": "HOME"}},
    )
    with pytest.raises(EventError) as info:
        parse_event(raw)
    text = "\n".join(info.value.problems)
    assert "target.openai.api_key_env: DATABASE_URL is not an allowed" in text
    assert "judge.openai.api_key_env: HOME is not an allowed" in text
    assert secrets.ENV_ALLOWED_ENV in text


def test_a_target_built_without_validation_still_refuses(
    loopback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defence in depth: upload defaults or a hand-built target go through the same rule."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG")
    with pytest.raises(ConfigError, match="AWS_SECRET_ACCESS_KEY is not an allowed"):
        HttpTarget({"url": loopback.url, "headers_from_env": {"X": "AWS_SECRET_ACCESS_KEY"}})
    with pytest.raises(ConfigError, match="not an allowed"):
        OpenAIChatTarget(
            {"openai": {"base_url": loopback.url, "model": "m", "api_key_env": "PATH"}}
        )
    assert not loopback.requests


def test_value_read_is_registered_for_redaction(
    loopback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALRUNNER_SECRET_K", "value-of-k-123")
    HttpTarget({"url": loopback.url, "headers_from_env": {"X-Api-Key": "EVALRUNNER_SECRET_K"}})
    assert redaction.redact("echo value-of-k-123!") == "echo ***!"


def test_local_run_refuses_secrets_manager_with_a_hint(loopback: Any) -> None:
    with pytest.raises(ConfigError, match=r"deployed runner only.*EVALRUNNER_SECRET_"):
        HttpTarget({"url": loopback.url, "headers_from_secret": {"X-Api-Key": "qa/bot-token"}})


# -- deployed rules ----------------------------------------------------------------------------


def test_deployed_refuses_env_vars_pointing_at_headers_from_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deployed(monkeypatch, ARN)
    target = {"url": "https://h.example/", "headers_from_env": {"A": "EVALRUNNER_SECRET_A"}}
    with pytest.raises(EventError, match=r"target\.headers_from_env\.A: .*headers_from_secret"):
        parse_event(event(target))


def test_deployed_accepts_only_listed_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    deployed(monkeypatch, ARN)
    ok = {"url": "https://h.example/", "headers_from_secret": {"A": "qa/bot-token", "B": ARN}}
    parse_event(event(ok))
    bad = {"url": "https://h.example/", "headers_from_secret": {"A": "prod/db-password"}}
    with pytest.raises(EventError) as info:
        parse_event(event(bad))
    assert info.value.problems == [
        "target.headers_from_secret.A: prod/db-password is not an allowed secret; add its ARN "
        "to 'secrets' in cdk.json and redeploy (allowed: qa/bot-token)"
    ]


def test_deployed_default_openai_key_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    deployed(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator-key")
    target = OpenAIChatTarget({"openai": {"base_url": "http://h.example/v1", "model": "m"}})
    assert "Authorization" not in target.headers


@mock_aws
def test_headers_from_secret_reads_secrets_manager(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    arn = client.create_secret(Name="qa/bot-token", SecretString="Bearer sm-s3cret-77")["ARN"]
    client.create_secret(Name="other", SecretString="not-for-events")
    deployed(monkeypatch, arn)
    loopback.always(200, {"answer": "ok"})
    target = HttpTarget(
        {"url": loopback.url + "/ask", "headers_from_secret": {"Authorization": "qa/bot-token"}}
    )
    target.invoke(make_case())
    assert loopback.requests[0].headers["Authorization"] == "Bearer sm-s3cret-77"
    assert "Bearer sm-s3cret-77" in redaction.registered()
    with pytest.raises(ConfigError, match="other is not an allowed secret"):
        HttpTarget({"url": loopback.url, "headers_from_secret": {"A": "other"}})


@mock_aws
def test_judge_api_key_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    arn = client.create_secret(Name="judge-key", SecretString="sk-judge-999")["ARN"]
    deployed(monkeypatch, arn)
    config = JudgeConfig.model_validate(
        {"openai": {"base_url": "http://h.example/v1", "model": "j", "api_key_secret": arn}}
    )
    judge = OpenAIJudge(config)
    assert judge.headers["Authorization"] == "Bearer sk-judge-999"


def test_secret_name_strips_the_arn_suffix() -> None:
    assert secrets.secret_name(ARN) == "qa/bot-token"


def test_a_broken_policy_variable_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(secrets.ENV_POLICY, "{not json")
    with pytest.raises(ConfigError, match=secrets.ENV_POLICY):
        secrets.current_policy()
