"""The judge's reply is untrusted, like a target's: a whole-call deadline per attempt and a
size cap, against loopback servers that trickle or flood. Nothing here asserts wall-clock
time: the proof is what the server managed to send before the judge hung up, and how many
requests it saw."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from pydantic import BaseModel

from evalrunner.judge import JudgeError, JudgeParseError, Message
from evalrunner.judge.config import JudgeConfig
from evalrunner.judge.openai_judge import MAX_RESPONSE_BYTES, OpenAIJudge
from tests.support.loopback_http import Served, serve

GOOD = '{"verdict": "yes"}'
#: A complete chat completion, about 110 bytes: eleven seconds at one byte per 0.1 s.
TRICKLED = json.dumps(
    {"choices": [{"message": {"role": "assistant", "content": GOOD}}], "usage": {}}
).encode()
#: Four times the judge's cap, and far more than loopback socket buffers hold, so a server
#: that could write it all must have had a client reading it all.
FLOOD = 4 * MAX_RESPONSE_BYTES


class Verdict(BaseModel):
    verdict: str


def judge_at(url: str, **settings: Any) -> OpenAIJudge:
    config = JudgeConfig.model_validate(
        {"openai": {"base_url": url, "model": "loopback-judge"}, "cache": False, **settings}
    )
    judge = OpenAIJudge(config)
    judge.backoff_base = 0.01
    return judge


def ask(judge: OpenAIJudge) -> Any:
    return judge.ask([Message(role="user", content="Supported?")], Verdict, purpose="verdicts")


def finished(served: Served, requests: int = 1, within: float = 15.0) -> None:
    """Wait (bounded) until the server's handlers for ``requests`` requests have ended."""
    ends = time.monotonic() + within
    while len(served.sent) < requests and time.monotonic() < ends:
        time.sleep(0.05)
    assert len(served.sent) >= requests, "the loopback server never finished its reply"


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_the_loopback_judge_answers_when_it_is_quick() -> None:
    with serve(TRICKLED) as (url, served):
        assert ask(judge_at(url)).value.verdict == "yes"
    assert served.requests == 1


def test_a_trickling_judge_is_cut_off_at_the_deadline_and_retried() -> None:
    # Every read gets a byte within 0.1 s, so per-read socket timeouts never fire; only the
    # whole-call deadline stops it.
    with serve(TRICKLED, trickle_every=0.1) as (url, served):
        judge = judge_at(url, timeout_seconds=1, max_retries=1)
        with pytest.raises(JudgeError) as info:
            ask(judge)
        finished(served, 2)
    assert not isinstance(info.value, JudgeParseError)
    message = info.value.message
    assert "did not answer within timeout_seconds=1 " in message
    assert "after 2 attempt(s)" in message and "judge.timeout_seconds" in message
    assert served.requests == 2  # a timeout is worth another attempt
    assert all(n < len(TRICKLED) for n in served.sent) and all(served.hung_up)
    assert (judge.usage.calls, judge.usage.retries) == (1, 1)


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "streamed"])
def test_an_oversized_judge_reply_is_refused_unread_and_not_retried(declared: bool) -> None:
    content = "x" * FLOOD
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})
    with serve(body.encode(), declare_length=declared) as (url, served):
        judge = judge_at(url, max_retries=3)
        with pytest.raises(JudgeError) as info:
            ask(judge)
        finished(served)
    message = info.value.message
    assert f"larger than {MAX_RESPONSE_BYTES:,} bytes" in message
    assert ("Content-Length" in message) is declared
    assert "loopback-judge" in message and "judge.openai.base_url" in message
    assert served.requests == 1  # it would come back as big
    assert served.sent[0] < len(body) and served.hung_up[0]
    assert judge.usage.retries == 0
