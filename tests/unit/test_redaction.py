"""Masking by name and by value (issue 11, item 4): URLs, headers, query parameters, and every
registered secret in errors, logs and whatever the run store writes."""

from __future__ import annotations

import base64
import json
import logging

import boto3
import pytest
from moto import mock_aws

from evalrunner import redaction
from evalrunner.errors import TargetError
from evalrunner.pipeline.aggregate import mask_config
from evalrunner.storage import RunStore


def test_url_user_info_and_sensitive_query_parameters_are_masked() -> None:
    url = (
        "https://bob:hunter2@api.example.com/v1?API_KEY=k1&apikey=k2&Key=k3&token=k4"
        "&access_token=k5&sig=k6&Signature=k7&code=k8&password=k9&secret=k10&lang=en"
    )
    masked = mask_config({"target": {"url": url}})["target"]["url"]
    for value in ("bob", "hunter2", *(f"k{i}" for i in range(1, 11))):
        assert f"={value}&" not in masked + "&" and f"{value}@" not in masked
    assert masked.startswith("https://***@api.example.com/v1?")
    assert "lang=en" in masked


@pytest.mark.parametrize(
    "header",
    [
        "Authorization",
        "Ocp-Apim-Subscription-Key",
        "X-Functions-Key",
        "X-API-Key",
        "x-amz-security-token",
        "Cookie",
        "X-Hub-Signature",
        "Proxy-Authorization",
        "X-Client-Secret",
        "X-Password",
    ],
)
def test_sensitive_headers_are_masked_by_name(header: str) -> None:
    config = {"target": {"url": "https://h/", "headers": {header: "v4lue-x", "X-Tenant": "acme"}}}
    headers = mask_config(config)["target"]["headers"]
    assert headers == {header: "***", "X-Tenant": "acme"}


def test_names_of_secrets_stay_readable() -> None:
    config = {"openai": {"api_key_env": "EVALRUNNER_SECRET_K", "api_key_secret": "qa/key"}}
    assert mask_config(config) == config


def test_registered_values_are_masked_wherever_they_appear() -> None:
    redaction.register("Bearer tok-123456")
    config = {"target": {"url": "https://h/", "note": "sent Bearer tok-123456 twice"}}
    assert mask_config(config)["target"]["note"] == "sent *** twice"
    assert redaction.redact_value({"a": ["x tok-123456"]}) == {"a": ["x tok-123456"]}  # not whole
    redaction.register_headers({"Authorization": "Bearer tok-123456"})  # the token alone too
    assert redaction.redact_value({"a": ["x tok-123456"]}) == {"a": ["x ***"]}


def test_escaped_forms_are_masked_too() -> None:
    redaction.register('p"a&s<s>w/ord')
    assert redaction.redact(json.dumps({"v": 'p"a&s<s>w/ord'})) == '{"v": "***"}'
    assert redaction.redact("<td>p&quot;a&amp;s&lt;s&gt;w/ord</td>") == "<td>***</td>"
    assert redaction.redact("?q=p%22a%26s%3Cs%3Ew/ord") == "?q=***"


def test_short_values_are_not_registered() -> None:
    redaction.register("on")
    assert redaction.redact("only one") == "only one"


def test_error_messages_are_redacted_at_construction() -> None:
    redaction.register("sk-live-abcdef")
    error = TargetError("HTTP 401: invalid key sk-live-abcdef for this account")
    assert str(error) == error.message == "HTTP 401: invalid key *** for this account"


def test_logs_are_redacted_whatever_the_logger(caplog: pytest.LogCaptureFixture) -> None:
    redaction.register("sk-live-abcdef")
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("evalrunner.targets.http").warning("answer: %s", "sk-live-abcdef!")
        logging.getLogger("urllib3.connectionpool").debug("sent sk-live-abcdef")
        try:
            raise ValueError("boom sk-live-abcdef")
        except ValueError:
            logging.getLogger("somewhere.else").exception("failed")
    assert "sk-live-abcdef" not in caplog.text
    assert "answer: ***!" in caplog.text and "sent ***" in caplog.text
    assert "ValueError: boom ***" in caplog.text


@mock_aws
def test_the_run_store_redacts_outputs_but_keeps_inputs_exact() -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="runner-bucket")
    store = RunStore("runner-bucket", client=s3)
    redaction.register("sk-live-abcdef")
    store.put_json("runs/r/cases/c.json", {"answer": "your key is sk-live-abcdef"})
    store.put_bytes("test-reports/t/report.html", b"<p>sk-live-abcdef</p>", "text/html")
    store.put_json("runs/r/run.json", {"headers": {"X": "sk-live-abcdef"}}, redact=False)
    assert store.get_json("runs/r/cases/c.json") == {"answer": "your key is ***"}
    assert store.get_bytes("test-reports/t/report.html") == b"<p>***</p>"
    assert store.get_json("runs/r/run.json") == {"headers": {"X": "sk-live-abcdef"}}


# -- issue 27, item 4: by value, whatever the name, in every spelling --------------------------


def test_every_header_value_is_registered_whatever_the_header_is_called() -> None:
    redaction.register_headers(
        {"X-Pass": "hunter2-xyz", "X-Api": "k-2f9a8b7c", "Content-Type": "application/json"}
    )
    text = "got hunter2-xyz and k-2f9a8b7c as application/json"
    assert redaction.redact(text) == "got *** and *** as application/json"


def test_every_query_value_and_the_user_info_are_registered() -> None:
    redaction.register_url("https://bob-the-user:pw-123456@h/x?access_key=AK-9988776655&lang=en")
    text = "bob-the-user pw-123456 AK-9988776655 lang=en"
    assert redaction.redact(text) == "*** *** *** lang=en"


def test_credentials_in_a_body_are_registered_by_key() -> None:
    redaction.register_body({"question": "hi", "auth": {"client_secret": "cs-00112233"}})
    assert redaction.redact("echo cs-00112233, hi") == "echo ***, hi"


@pytest.mark.parametrize(
    "spelling",
    [
        "s3cr3t-Value-42",
        "S3CR3T-VALUE-42",
        "s3Cr3T-vAlUe-42",
        base64.b64encode(b"s3cr3t-Value-42").decode(),
        base64.urlsafe_b64encode(b"s3cr3t-Value-42").decode().rstrip("="),
    ],
)
def test_other_cases_and_base64_of_a_secret_are_masked(spelling: str) -> None:
    redaction.register("s3cr3t-Value-42")
    assert redaction.redact(f"echo: {spelling}.") == "echo: ***."


def test_a_basic_credential_is_masked_decoded_and_in_parts() -> None:
    credential = base64.b64encode(b"svc-account:pa55-w0rd-9").decode()
    redaction.register_headers({"Authorization": f"Basic {credential}"})
    for echoed in (credential, "svc-account:pa55-w0rd-9", "svc-account", "pa55-w0rd-9"):
        assert redaction.redact(f"[{echoed}]") == "[***]", echoed


def test_a_short_value_is_masked_only_as_a_word_of_its_own() -> None:
    redaction.register_headers({"X-Pin": "plan"})
    text = "The plan: an explanation of planets, in plan.json, PLAN and plan."
    assert redaction.redact(text) == (
        "The ***: an explanation of planets, in plan.json, *** and ***."
    )


def test_plain_short_values_sent_are_not_taken_for_secrets() -> None:
    redaction.register_headers({"X-Debug": "true", "X-Timeout": "3000"})
    redaction.register_url("https://h/x?stream=false&n=12")
    assert redaction.registered() == frozenset()
    text = "success true, 3000 ms, false, 12"
    assert redaction.redact(text) == text


def test_what_the_http_client_sends_is_masked_whatever_it_is_called() -> None:
    from evalrunner.http_client import JsonHttpClient
    from evalrunner.retry import RetryPolicy
    from tests.support.loopback_http import Loopback

    with Loopback() as server:
        client = JsonHttpClient(RetryPolicy(max_retries=0, timeout=5.0))
        url = f"http://127.0.0.1:{server.port}/x?access_key=qk-31415926"
        client.send("POST", url, {"q": "hi"}, {"X-Anything": "hv-27182818"}, "test call")
    assert redaction.redact("QK-31415926 hv-27182818") == "*** ***"


def test_a_conversation_session_id_in_a_body_is_no_credential() -> None:
    redaction.register_body({"question": "hi", "sessionId": "conv-0001-abcdef", "max_tokens": 9})
    assert redaction.registered() == frozenset()


@pytest.mark.parametrize(
    "event",
    [
        {"target": {"azure_openai": {"endpoint": "https://me:AzPass4567@res.openai.azure.com"}}},
        {"target": {"openai_responses": {"base_url": "https://me:AzPass4567@api.example/v1"}}},
        {"judge": {"azure_openai": {"endpoint": "https://r.example/?api-key=AzPass4567"}}},
        {"target": {"url": "https://h.example/ask", "headers": {"X-Token": "AzPass4567"}}},
        {"target": {"future_kind": {"gateway": {"headers": {"X-Token": "AzPass4567"}}}}},
    ],
)
def test_every_target_and_judge_kind_has_its_credentials_registered(event) -> None:
    """Not only the url and openai kinds: an Azure endpoint's user info, an OpenAI Responses
    base_url's, headers at any depth (a kind added later too) are masked in any message,
    such as a validation error quoting the endpoint."""
    redaction.register_event(event)
    assert "AzPass4567" not in redaction.redact("endpoint 'https://me:AzPass4567@x' refused")
