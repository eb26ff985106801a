"""SSRF guard (issue 11, item 13): deployed, URLs that resolve to internal addresses are
refused unless cdk.json allows them, a URL prefix allow-list applies, redirects are not
followed; locally everything is allowed with a warning for metadata addresses."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from evalrunner import network
from evalrunner.errors import EventError, TargetError
from evalrunner.event import parse_event
from evalrunner.judge.base import JudgeError
from evalrunner.network import NetworkPolicy, address_kind, check_url
from evalrunner.targets.http import HttpTarget
from evalrunner.targets.openai_chat import OpenAIChatTarget

DEPLOYED = NetworkPolicy(enforce=True)


def resolves_to(*addresses: str) -> Callable[[str, int], list[str]]:
    return lambda host, port: list(addresses)


def deploy(monkeypatch: pytest.MonkeyPatch, **policy: Any) -> None:
    monkeypatch.setenv(network.ENV_POLICY, json.dumps(policy))


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv6-mapped IPv4
        ("::ffff:169.254.169.254", "link-local"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("10.1.2.3", "private"),
        ("172.16.0.9", "private"),
        ("192.168.1.1", "private"),
        ("fc00::5", "private"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("100.64.0.1", "non-public"),  # carrier-grade NAT
        ("2002:7f00:1::", "loopback"),  # 6to4 wrapping 127.0.0.1
    ],
)
def test_internal_addresses_are_classified(address: str, kind: str) -> None:
    import ipaddress

    assert address_kind(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
def test_public_addresses_pass(address: str) -> None:
    check_url("https://example.com/v1", "target.url", DEPLOYED, resolve=resolves_to(address))


def test_a_name_resolving_to_loopback_is_refused_deployed() -> None:
    with pytest.raises(TargetError) as info:
        check_url(
            "https://internal.example.com/ask",
            "target.url",
            DEPLOYED,
            resolve=resolves_to("93.184.216.34", "127.0.0.1"),  # every address is checked
        )
    assert info.value.message.startswith(
        "target.url: https://internal.example.com/ask resolves to 127.0.0.1, a loopback address"
    )
    assert "network.allow_internal_addresses" in info.value.message


def test_metadata_address_is_named_as_such() -> None:
    with pytest.raises(TargetError, match=r"169\.254\.169\.254, a cloud metadata address"):
        check_url("http://169.254.169.254/latest/meta-data/", "target.url", DEPLOYED)


@pytest.mark.parametrize(
    "host",
    ["2130706433", "0177.0.0.1", "0x7f.1", "127.1", "[::ffff:127.0.0.1]", "localhost"],
)
def test_every_spelling_of_loopback_is_refused_with_the_real_resolver(host: str) -> None:
    """urllib3 connects to each of these spellings (checked against a loopback server); the
    guard resolves them the same way, so none slips through."""
    with pytest.raises(TargetError, match="loopback address"):
        check_url(f"http://{host}:8080/ask", "target.url", DEPLOYED)


def test_allow_internal_addresses_lets_them_through() -> None:
    policy = NetworkPolicy(enforce=True, allow_internal_addresses=True)
    check_url("http://127.0.0.1:9/ask", "target.url", policy)


def test_url_prefix_allow_list() -> None:
    policy = NetworkPolicy(enforce=True, allowed_url_prefixes=["https://api.example.com/v1/"])
    public = resolves_to("93.184.216.34")
    check_url("https://api.example.com/v1/chat", "target.url", policy, resolve=public)
    for url in ("https://api.example.com.evil.net/v1/chat", "https://api.example.com/v2/x"):
        with pytest.raises(TargetError, match="not under an allowed URL prefix"):
            check_url(url, "target.url", policy, resolve=public)


def test_a_prefix_without_a_path_slash_is_refused() -> None:
    with pytest.raises(ValueError, match="must be a URL prefix"):
        NetworkPolicy(allowed_url_prefixes=["https://api.example.com"])


def test_refusal_masks_credentials_in_the_url() -> None:
    with pytest.raises(TargetError) as info:
        check_url("http://u:pw-123@127.0.0.1/?api_key=k-456", "target.url", DEPLOYED)
    assert "pw-123" not in info.value.message and "k-456" not in info.value.message


def test_local_allows_everything_but_warns_about_metadata(
    caplog: pytest.LogCaptureFixture,
) -> None:
    local = NetworkPolicy()
    with caplog.at_level(logging.WARNING, logger="evalrunner.network"):
        check_url("http://127.0.0.1:9/", "target.url", local)
        assert not caplog.records
        check_url("http://169.254.169.254/latest/", "target.url", local)
        check_url("http://0xa9.0xfe.0xa9.0xfe/latest/", "target.url", local)
    assert len(caplog.records) == 2
    assert "cloud metadata address" in caplog.records[0].getMessage()


def test_policy_comes_from_the_stack_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert network.current_policy() == NetworkPolicy()  # absent: local
    deploy(monkeypatch, allowed_url_prefixes=["https://a.example/"])
    policy = network.current_policy()
    assert policy.enforce and policy.allowed_url_prefixes == ["https://a.example/"]


# -- wired into the request paths --------------------------------------------------------------


def test_deployed_http_target_never_calls_loopback(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    deploy(monkeypatch)
    loopback.always(200, {"answer": "internal data"})
    with pytest.raises(TargetError, match=r"target\.url: .* loopback address"):
        HttpTarget({"url": loopback.url + "/ask"}).invoke(make_case())
    target = OpenAIChatTarget({"openai": {"base_url": loopback.url + "/v1", "model": "m"}})
    with pytest.raises(TargetError, match=r"target\.openai\.base_url: .* loopback address"):
        target.invoke(make_case())
    assert not loopback.requests


def test_redirect_to_metadata_is_not_followed(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    # deployed, with the loopback target itself allowed; it answers with a redirect
    policy = NetworkPolicy(enforce=True, allow_internal_addresses=True)
    monkeypatch.setattr(network, "current_policy", lambda environ=None: policy)
    loopback.always(302, b"", headers={"Location": "http://169.254.169.254/latest/meta-data/"})
    with pytest.raises(TargetError, match="HTTP 302"):
        HttpTarget({"url": loopback.url + "/ask", "max_retries": 0}).invoke(make_case())
    assert len(loopback.requests) == 1  # the redirect was reported, not followed


def test_deployed_judge_refuses_internal_base_url(
    judge_stub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pydantic import BaseModel

    from evalrunner.judge.base import Message

    class Verdict(BaseModel):
        ok: bool = True

    deploy(monkeypatch)
    judge = judge_stub.judge(max_retries=0)
    with pytest.raises(JudgeError, match=r"judge\.openai\.base_url: .* loopback address"):
        judge.ask([Message(role="user", content="hi")], Verdict, purpose="probe")
    assert not judge_stub.requests


def test_prepare_refuses_internal_urls_when_deployed(monkeypatch: pytest.MonkeyPatch) -> None:
    deploy(monkeypatch)
    raw = {
        "key": "test-suites/s.csv",
        "iterations": 1,
        "target": {"url": "http://169.254.169.254/latest/meta-data/iam/"},
        "judge": {"openai": {"base_url": "http://127.0.0.1:8000/v1", "model": "j"}},
    }
    with pytest.raises(EventError) as info:
        parse_event(raw)
    fields = [p.split(":", 1)[0] for p in info.value.problems]
    assert fields == ["target.url", "judge.openai.base_url"]


def test_local_validation_does_not_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(network, "_system_resolver", None)  # would crash if called
    parse_event({"key": "test-suites/s.csv", "iterations": 1, "target": {"url": "http://x/"}})


def test_a_passed_url_is_checked_once_per_client_a_refused_one_every_call(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    # The check resolves the host name: once per client (a run), not once per case.
    checked: list[str] = []
    real = network.check_url

    def counting(url: str, field: str, *args: Any, **kwargs: Any) -> None:
        checked.append(field)
        real(url, field, *args, **kwargs)

    monkeypatch.setattr(network, "check_url", counting)
    loopback.always(200, {"answer": "25 days"})
    target = HttpTarget({"url": loopback.url + "/ask"})
    for _ in range(3):
        assert target.invoke(make_case()).answer == "25 days"
    assert checked == ["target.url"]
    assert len(loopback.requests) == 3

    # A refusal is not remembered as a pass: every call is refused, none is sent.
    deploy(monkeypatch)
    refused = HttpTarget({"url": loopback.url + "/ask"})
    for _ in range(2):
        with pytest.raises(TargetError, match="loopback address"):
            refused.invoke(make_case())
    assert checked == ["target.url"] * 3
    assert len(loopback.requests) == 3
