"""Which URLs the runner may call: the guard against server-side request forgery.

An event names the URL of an HTTP or OpenAI-compatible target and of an OpenAI-compatible
judge. Deployed, the run-case function sits inside an AWS account: without a guard an event
could make it call the instance metadata service, a VPC-internal admin API, or localhost.

The policy is a small model parsed once, from ``EVALRUNNER_NETWORK_POLICY`` (JSON), which the
stack writes from ``cdk.json``'s ``network`` object; where it is absent (a laptop, the
embedded engine, the CLI) every address is allowed and only cloud metadata addresses get a
warning. :func:`check_url` parses with the same URL parser urllib3 uses and checks every
address the host name resolves to, so the decimal, octal, IPv6-mapped and DNS-name spellings
of an internal address are all caught. Prepare runs it on the event's URLs (deployed) before
any case is sent, and every request path checks its URL again before its first request
through a :class:`UrlCheck`, once per client (that is, once per run and worker: the URL of a
client never changes), not once per call, which resolved the name on every request. Both HTTP
clients follow no redirects (a 3xx is reported), so a redirect cannot lead elsewhere.

Known limit: the check resolves the name, then urllib3 resolves it again to connect; a DNS
server that answers differently later (rebinding) is not caught, whether the check runs once
or before every call. The URL prefix allow-list (``allowed_url_prefixes``) is the strong
control when that matters.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import socket
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from evalrunner.errors import TargetError
from evalrunner.redaction import mask_url
from evalrunner.stack_policy import stack_policy

ENV_POLICY = "EVALRUNNER_NETWORK_POLICY"

logger = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

#: Cloud metadata endpoints (AWS IMDS over IPv4 and IPv6, and the same address elsewhere).
METADATA_ADDRESSES = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)

METADATA_NAMES = frozenset({"metadata", "metadata.google.internal", "instance-data"})
#: Hosts made of digits, hex digits, "x" and dots: the numeric spellings of an IPv4 address.
_NUMERIC_HOST = re.compile(r"[0-9a-fx.]+")


class NetworkPolicy(BaseModel):
    """Where the runner may send requests."""

    model_config = ConfigDict(extra="forbid")

    #: True where the stack set the policy: internal addresses are refused unless allowed.
    enforce: bool = False
    #: Allow loopback, private, link-local (metadata included) and other non-public addresses.
    allow_internal_addresses: bool = False
    #: When not empty, only URLs starting with one of these prefixes are called.
    allowed_url_prefixes: list[str] = Field(default_factory=list)

    @field_validator("allowed_url_prefixes")
    @classmethod
    def _prefixes(cls, values: list[str]) -> list[str]:
        for value in values:
            if not value.lower().startswith(("http://", "https://")) or "/" not in value[8:]:
                raise ValueError(
                    f"{value!r} must be a URL prefix with scheme, host and a '/', e.g. "
                    "https://api.example.com/ (without the '/', https://api.example.com "
                    "would also allow https://api.example.com.evil.net)"
                )
        return values


@cache
def _parse(raw: str | None) -> NetworkPolicy:
    return stack_policy(
        NetworkPolicy, ENV_POLICY, raw, set_by_stack="enforce", source="cdk.json 'network'"
    )


def current_policy(environ: Mapping[str, str] | None = None) -> NetworkPolicy:
    """This process's policy, from ``EVALRUNNER_NETWORK_POLICY`` (absent: local, permissive)."""
    env = os.environ if environ is None else environ
    return _parse(env.get(ENV_POLICY))


def _system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def address_kind(address: IPAddress) -> str | None:
    """What makes ``address`` internal (``"loopback"``, ``"link-local"``...), None if public."""
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped or address.sixtofour
        if mapped is not None:
            return address_kind(mapped)
        if address.teredo is not None:
            return address_kind(address.teredo[1])
    for kind, flag in (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    ):
        if flag:
            return kind
    if not address.is_global:
        return "non-public"
    return None


def check_url(
    url: str,
    field: str,
    policy: NetworkPolicy | None = None,
    *,
    resolve: Resolver = _system_resolver,
) -> None:
    """Refuse (TargetError) a URL the policy does not allow; warn locally about metadata.

    ``field`` names where the URL came from (``target.url``, ``judge.openai.base_url``)."""
    policy = policy or current_policy()
    shown = mask_url(url)
    if policy.enforce and policy.allowed_url_prefixes:
        if not any(url.startswith(prefix) for prefix in policy.allowed_url_prefixes):
            raise TargetError(
                f"{field}: {shown} is not under an allowed URL prefix "
                f"({', '.join(policy.allowed_url_prefixes)}); add its prefix to "
                "network.allowed_url_prefixes in cdk.json and redeploy"
            )
    if not policy.enforce and not _may_be_metadata(url):
        return  # locally nothing is refused; resolving only to warn would cost a lookup
    try:
        parts = parse_url(url)
    except LocationParseError as exc:
        raise TargetError(f"{field}: {shown} is not a valid URL ({exc})") from None
    host = (parts.host or "").strip("[]")
    if not host:
        raise TargetError(f"{field}: {shown} has no host name")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in resolve(host, port)]
    except (OSError, ValueError) as exc:
        if not policy.enforce:
            return  # the client will report the failure itself
        raise TargetError(
            f"{field}: cannot resolve {host} ({exc}); check the URL", retryable=True
        ) from None
    for address in addresses:
        kind = address_kind(address)
        if kind is None:
            continue
        if policy.enforce and not policy.allow_internal_addresses:
            what = "cloud metadata" if address in METADATA_ADDRESSES else kind
            raise TargetError(
                f"{field}: {shown} resolves to {address}, a {what} address, which the deployed "
                "runner does not call; set network.allow_internal_addresses to true in "
                "cdk.json if the target really lives in your network"
            )
        if address in METADATA_ADDRESSES:
            logger.warning(
                "%s: %s resolves to %s, a cloud metadata address: an event can use such a URL "
                "to read instance credentials",
                field,
                shown,
                address,
            )


class UrlCheck:
    """:func:`check_url` for one client's URL, passed once: a refusal is raised (and checked
    again) on every call, a pass is remembered, so a run pays for one resolution, not one
    per case. The policy is read when the check runs, as before: the client is built inside
    the process whose policy applies."""

    __slots__ = ("field", "passed", "url")

    def __init__(self, url: str, field: str) -> None:
        self.url = url
        self.field = field
        self.passed = False

    def __call__(self) -> None:
        if not self.passed:
            check_url(self.url, self.field)
            self.passed = True  # threads racing here both check: harmless, same answer


def _may_be_metadata(url: str) -> bool:
    """Locally, a cheap pre-filter: resolve only hosts that could be a metadata address (IP
    literals in any spelling the resolver accepts, e.g. 0xa9.0xfe.0xa9.0xfe, and the
    well-known metadata names), not every DNS name on every call."""
    try:
        host = (parse_url(url).host or "").strip("[]").lower()
    except LocationParseError:
        return False
    return ":" in host or bool(_NUMERIC_HOST.fullmatch(host)) or host in METADATA_NAMES


def event_urls(event: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, URL) for every URL an event makes the runner call."""
    found: list[tuple[str, str]] = []
    target = event.get("target")
    if isinstance(target, Mapping):
        if isinstance(target.get("url"), str):
            found.append(("target.url", target["url"]))
        options = target.get("openai")
        if isinstance(options, Mapping) and isinstance(options.get("base_url"), str):
            found.append(("target.openai.base_url", options["base_url"]))
    judge = event.get("judge")
    options = judge.get("openai") if isinstance(judge, Mapping) else None
    if isinstance(options, Mapping) and isinstance(options.get("base_url"), str):
        found.append(("judge.openai.base_url", options["base_url"]))
    return found


def event_problems(
    event: Mapping[str, Any],
    policy: NetworkPolicy | None = None,
    *,
    resolve: Resolver = _system_resolver,
) -> list[str]:
    """Where the policy is enforced (deployed), the event's URLs it refuses, at validation, so
    Prepare fails the run before any case is sent. Locally nothing is checked here."""
    policy = policy or current_policy()
    if not policy.enforce:
        return []
    problems: list[str] = []
    for field, url in event_urls(event):
        try:
            check_url(url, field, policy, resolve=resolve)
        except TargetError as exc:
            problems.append(exc.message)
    return problems
