"""The one retry policy (evalrunner.retry): the status set written down, the waits, the
budget, and targets and judge retrying exactly the same statuses."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from evalrunner.errors import TargetError
from evalrunner.judge import JudgeError, Message
from evalrunner.retry import RETRY_STATUSES, RetryPolicy, is_retryable_status
from evalrunner.suite.model import TestCase
from evalrunner.targets.openai_chat import OpenAIChatTarget
from tests.support.judge_stub import JudgeStub, StubReply


def test_the_retried_statuses_are_the_documented_ones() -> None:
    assert sorted(RETRY_STATUSES) == [408, 429, 500, 502, 503, 504, 529]
    assert not any(is_retryable_status(s) for s in (200, 301, 400, 401, 403, 404, 409, 501))
    assert not is_retryable_status(None)


def test_without_jitter_the_wait_is_the_whole_doubling_window() -> None:
    policy = RetryPolicy(max_retries=5, timeout=3.0, base=0.5, jitter=False)
    assert [policy.delay(r) for r in range(4)] == [0.5, 1.0, 2.0, 3.0]  # capped by timeout
    assert policy.delay(0, retry_after=2.5) == 2.5


def test_the_clock_stops_at_max_retries_and_at_the_budget() -> None:
    clock = RetryPolicy(max_retries=2, timeout=10, base=0.01, jitter=False).start()
    assert clock.next_wait(1) == 0.01 and clock.next_wait(2) == 0.02
    assert clock.next_wait(3) is None and not clock.out_of_budget
    tight = RetryPolicy(max_retries=5, timeout=10, total_timeout=1, base=2, jitter=False).start()
    assert 0 < tight.attempt_seconds() <= 1  # an attempt never runs past the budget
    assert tight.next_wait(1) is None and tight.out_of_budget  # a 2 s wait would overshoot
    # Without a total, the budget is what the attempts and capped waits can take at most.
    assert RetryPolicy(max_retries=2, timeout=3).budget == 15


class _Verdict(BaseModel):
    verdict: str


def _case() -> TestCase:
    return TestCase(index=0, case_id="case-0001", question="How many leave days?")


@pytest.mark.parametrize("status", [408, 409, 429, 500, 501, 502, 503, 504, 529])
def test_targets_and_the_judge_retry_the_same_statuses(
    judge_stub: JudgeStub, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    """One policy: an HTTP target and the judge, at the same failing server, make the same
    number of attempts."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(OpenAIChatTarget, "backoff_factor", 0.01)
    judge_stub.responder = lambda messages, request: StubReply("failing", status=status)
    expected = 2 if status in RETRY_STATUSES else 1

    target = OpenAIChatTarget(
        {"openai": {"base_url": judge_stub.url, "model": "m"}, "max_retries": 1}
    )
    with pytest.raises(TargetError, match=f"HTTP {status}"):
        target.invoke(_case())
    target_attempts = len(judge_stub.requests)

    judge_stub.clear()
    # structured output set explicitly: with "auto" a first 500 also steps down the mode once
    # per run (llama-cpp-python's answer to json_schema), one request more than the policy's
    judge: Any = judge_stub.judge(max_retries=1, cache=False, structured_output="json_schema")
    with pytest.raises(JudgeError, match=f"HTTP {status}"):
        judge.ask([Message(role="user", content="Q")], _Verdict, purpose="verdicts")
    assert (target_attempts, len(judge_stub.requests)) == (expected, expected)
