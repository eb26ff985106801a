"""Small helpers every target needs: report-safe names, retry policy, payloads.

The limits themselves (timeout, retries, budget, body cap) and their defaults are fields of
:class:`~evalrunner.targets.spec.TargetSpec`, read from each target's parsed ``options``.
"""

from __future__ import annotations

import re
from typing import Any

from evalrunner.http_client import ResponseTooLarge
from evalrunner.retry import RetryPolicy
from evalrunner.suite.model import TestCase
from evalrunner.targets.spec import TargetSpec

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


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


def retry_policy(options: TargetSpec, *, base: float, jitter: bool) -> RetryPolicy:
    """The shared retry policy with the target's timeout, retry count and budget."""
    return RetryPolicy(
        max_retries=options.max_retries,
        timeout=options.timeout_seconds,
        total_timeout=options.call_budget,
        base=base,
        jitter=jitter,
    )


def conversation_turns(case: TestCase) -> list[dict[str, str]]:
    return [{"role": turn.role, "content": turn.content} for turn in case.conversation]


def question_payload(
    case: TestCase,
    question_field: str = "question",
    contexts_field: str | None = None,
    *,
    history_field: str = "conversation",
    session: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The JSON sent to Lambda, Step Functions and HTTP targets.

    ``conversation`` (``history_field``) is added only for multi-turn cases so single-turn
    targets keep receiving exactly ``{"question": ...}``, the contract of the original test
    runner. With ``contexts_field`` (a generation endpoint that takes its context in the
    request), the case's contexts go under that field, a list of strings (empty when the case
    has none). ``session`` (field, id): a turn of a scripted conversation carries its
    conversation's session id.
    """
    payload: dict[str, Any] = {question_field: case.question}
    if contexts_field:
        payload[contexts_field] = list(case.contexts or [])
    if case.conversation:
        payload[history_field] = conversation_turns(case)
    if session is not None:
        payload[session[0]] = session[1]
    return payload


#: How a generation target is told to use the sources it is sent (``send_contexts``).
SOURCES_INSTRUCTION = (
    "Answer the question from the numbered sources below. If the sources contradict each "
    "other or what you know, say so."
)


def numbered_sources(contexts: list[str]) -> str:
    """The case's contexts as numbered sources, ``[1] ...`` one per paragraph, the form a
    generation prompt and a citation ("according to [2]") can both refer to."""
    return "\n\n".join(f"[{i}] {text}" for i, text in enumerate(contexts, 1))


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
