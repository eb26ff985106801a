"""The policies the stack writes into the environment are read one way: absent = local and
permissive, present = strict and marked as the stack's, broken = an error that says redeploy."""

from __future__ import annotations

import pytest

from evalrunner import network, secrets
from evalrunner.errors import ConfigError


def test_absent_policies_are_the_local_ones() -> None:
    assert network.current_policy({}).enforce is False
    local = secrets.current_policy({secrets.ENV_ALLOWED_ENV: "MY_TOKEN, OTHER"})
    assert local.deployed is False and local.allowed_env == ["MY_TOKEN", "OTHER"]


def test_present_policies_are_marked_as_set_by_the_stack() -> None:
    policy = network.current_policy({network.ENV_POLICY: '{"allowed_url_prefixes": []}'})
    assert policy.enforce is True
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:qa/token-AbC123"
    deployed = secrets.current_policy(
        {secrets.ENV_POLICY: f'{{"allowed_secrets": ["{arn}"]}}', secrets.ENV_ALLOWED_ENV: "X"}
    )
    # deployed, the laptop's allowed variables do not apply: env vars are not read at all
    assert deployed.deployed is True and deployed.allowed_env == []
    assert deployed.secret_arn("qa/token") == arn


@pytest.mark.parametrize(
    ("module", "raw", "source"),
    [
        (network, "[1, 2]", "cdk.json 'network'"),
        (network, '{"allow_everything": true}', "cdk.json 'network'"),
        (secrets, "{not json", "cdk.json 'secrets'"),
        (secrets, '{"deployed": "maybe", "allowed_secrets": "x"}', "cdk.json 'secrets'"),
    ],
)
def test_a_broken_policy_names_its_variable_and_says_redeploy(module, raw, source) -> None:
    with pytest.raises(ConfigError) as info:
        module.current_policy({module.ENV_POLICY: raw})
    message = str(info.value)
    assert message.startswith(f"{module.ENV_POLICY} is not valid (")
    assert f"written by the stack from {source}, redeploy to fix it" in message
