"""Small helpers every target needs: spec defaults, report-safe names, retry policy, payloads.

The schema declares the defaults (timeout 60 s, 3 retries, 1 MiB bodies) but validation does
not fill them in, so each target reads them through here and they cannot drift apart.
"""

from __future__ import annotations

import re
from typing import Any

from evalrunner.errors import ConfigError
from evalrunner.http_client import DEFAULT_MAX_RESPONSE_BYTES, ResponseTooLarge
from evalrunner.retry import RetryPolicy
from evalrunner.suite.model import TestCase

DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_MAX_RETRIES = 3
#: The default retry budget never exceeds this (see :func:`total_timeout_seconds`).
DEFAULT_MAX_TOTAL_TIMEOUT_SECONDS = 600.0

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def timeout_seconds(spec: dict[str, Any]) -> float:
    value = spec.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"target.timeout_seconds must be a number > 0, got {value!r}")
    return float(value)


def total_timeout_seconds(spec: dict[str, Any]) -> float:
    """Budget for one case's calls, retries and backoff included (``total_timeout_seconds``).

    Default: three timeouts, but at most 10 minutes, so a case with its evaluators still
    ends inside the run-case Lambda's 15 minutes; never less than one timeout.
    """
    timeout = timeout_seconds(spec)
    value = spec.get("total_timeout_seconds")
    if value is None:
        return max(timeout, min(3 * timeout, DEFAULT_MAX_TOTAL_TIMEOUT_SECONDS))
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"target.total_timeout_seconds must be a number > 0, got {value!r}")
    return float(value)


def max_response_bytes(spec: dict[str, Any]) -> int:
    """Cap on one response body (``max_response_bytes``); reading stops there."""
    value = spec.get("max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1024:
        raise ConfigError(f"target.max_response_bytes must be an integer >= 1024, got {value!r}")
    return value


def max_retries(spec: dict[str, Any]) -> int:
    value = spec.get("max_retries", DEFAULT_MAX_RETRIES)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"target.max_retries must be an integer >= 0, got {value!r}")
    return value


def sanitise_name(raw: str, *, fallback: str = "target") -> str:
    """Make ``raw`` usable as the report folder: the event schema's ``name`` pattern.

    Report folders end up in S3 keys and local paths, so anything outside [A-Za-z0-9._-]
    becomes '-', and the result starts with an alphanumeric and stays within 128 characters.
    """
    cleaned = _UNSAFE.sub("-", raw).strip("-._")[:128].rstrip("-._")
    return cleaned or fallback


def report_name(spec: dict[str, Any], own_name: str) -> str:
    """The event's ``name`` wins over the target's own name (two aliases, one folder each)."""
    override = spec.get("name")
    return str(override) if override else own_name


def retry_policy(spec: dict[str, Any], *, base: float, jitter: bool) -> RetryPolicy:
    """The shared retry policy with the target's timeout, retry count and budget."""
    return RetryPolicy(
        max_retries=max_retries(spec),
        timeout=timeout_seconds(spec),
        total_timeout=total_timeout_seconds(spec),
        base=base,
        jitter=jitter,
    )


def conversation_turns(case: TestCase) -> list[dict[str, str]]:
    return [{"role": turn.role, "content": turn.content} for turn in case.conversation]


def question_payload(case: TestCase, question_field: str = "question") -> dict[str, Any]:
    """The JSON sent to Lambda, Step Functions and HTTP targets.

    ``conversation`` is added only for multi-turn cases so single-turn targets keep receiving
    exactly ``{"question": ...}``, the contract of the original test runner.
    """
    payload: dict[str, Any] = {question_field: case.question}
    if case.conversation:
        payload["conversation"] = conversation_turns(case)
    return payload




def read_capped(stream: Any, limit: int, what: str) -> bytes:
    """At most ``limit`` bytes of a file-like body (boto3's StreamingBody): reads one byte
    more to tell "exactly the limit" from "more", never the whole of an oversized body."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
        raise ResponseTooLarge(what, "more was sent", limit)
    return bytes(data)
