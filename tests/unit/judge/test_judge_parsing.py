"""JSON extraction, the schema instruction and the retry policy, without a server."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest
from pydantic import BaseModel

from evalrunner.judge import Message
from evalrunner.judge._client import InvalidReply, extract_json, parse_reply
from evalrunner.judge._client import with_schema_instruction as wrap
from evalrunner.retry import RetryPolicy, parse_retry_after


class Pair(BaseModel):
    a: int
    b: list[str]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  \n{"a": 1}\n', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```JSON {"a": 1}```', {"a": 1}),
        ('Here you go:\n```\n{"a": {"b": "}"}}\n```\nDone.', {"a": {"b": "}"}}),
        ('The result is {"a": 1, "b": ["{x}"]} as requested.', {"a": 1, "b": ["{x}"]}),
        ('{broken} then {"a": 2} then {"a": 3}', {"a": 2}),
        ('[1, 2] and {"a": 4}', {"a": 4}),
    ],
)
def test_extract_json(text: str, expected: dict) -> None:
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "no json", "[1, 2]", '{"a": 1', "```json\n```"])
def test_extract_json_failures(text: str) -> None:
    with pytest.raises(InvalidReply):
        extract_json(text)


def test_parse_reply_names_the_failing_fields() -> None:
    assert parse_reply('{"a": 1, "b": ["x"]}', Pair) == Pair(a=1, b=["x"])
    with pytest.raises(InvalidReply) as info:
        parse_reply('{"a": "one"}', Pair)
    assert "a:" in str(info.value) and "b:" in str(info.value)


def test_schema_line_joins_the_last_system_message() -> None:
    messages = [
        Message(role="system", content="Grade."),
        Message(role="user", content="Q"),
    ]
    wrapped = wrap(messages, Pair)
    assert wrapped[1] == messages[1] and messages[0].content == "Grade."  # input untouched
    head, line = wrapped[0].content.split("\n\n")
    assert head == "Grade." and line.startswith("Answer with JSON matching this schema: {")


def test_backoff_is_full_jitter_and_capped() -> None:
    policy = RetryPolicy(max_retries=5, timeout=3.0, base=0.5, cap=20.0)
    assert policy.attempts == 6
    for retry, window in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 3.0), (8, 3.0)]:
        delays = [policy.delay(retry) for _ in range(200)]
        assert all(0 <= d <= window for d in delays)
        assert max(delays) > window / 2  # spread over the window, not fixed
    assert policy.delay(0, retry_after=1.5) == 1.5
    assert policy.delay(0, retry_after=120) == 3.0  # capped by the per-call timeout
    long = RetryPolicy(max_retries=1, timeout=600, retry_after_cap=60)
    assert long.delay(0, retry_after=120) == 60


def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "7"}) == 7
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "1"}) == 0.25
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None
    in_ten = parse_retry_after({"Retry-After": formatdate(time.time() + 10, usegmt=True)})
    assert in_ten is not None and 8 <= in_ten <= 10
