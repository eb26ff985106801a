"""A judge with a deadline (:meth:`Judge.with_deadline`) asks no call, and no retry, that
could not finish before it: a step with a hard time limit (Prepare's Lambda) fails what does
not fit instead of being killed mid-call. No wall clock is asserted: each deadline leaves
room for a known number of attempts of the judge's timeout, and the stub counts them."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic import BaseModel

from evalrunner.judge import JudgeError, Message
from evalrunner.judge.base import JudgeDeadlineError
from tests.support.judge_stub import JudgeStub, StubReply

GOOD = '{"verdict": "yes"}'


class Verdict(BaseModel):
    verdict: str


def ask(judge: Any) -> Any:
    return judge.ask([Message(role="user", content="Supported?")], Verdict, purpose="verdicts")


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALRUNNER_SECRET_JUDGE_STUB_KEY", raising=False)


def test_a_call_that_cannot_finish_before_the_deadline_is_not_made_nor_remembered(
    judge_stub: JudgeStub,
) -> None:
    judge_stub.responder = lambda messages, request: StubReply(GOOD)
    judge = judge_stub.judge(timeout_seconds=5)
    bound = judge.with_deadline(time.monotonic() + 1)  # 1 s left, an attempt may take 5
    with pytest.raises(
        JudgeDeadlineError, match=r"not asked for 'verdicts'.*judge.timeout_seconds"
    ):
        ask(bound)
    assert judge_stub.requests == [] and judge.usage.calls == 0
    # the same ask with time enough is made (the refusal is not the key's failure)
    assert ask(judge).value == Verdict(verdict="yes")
    assert len(judge_stub.requests) == 1 and judge.usage.calls == 1


def test_no_retry_is_made_that_could_not_finish_before_the_deadline(
    judge_stub: JudgeStub,
) -> None:
    """The endpoint fails at once and asks for a 2 s wait: with 6.5 s left, the retry (2 s,
    then an attempt of up to 5) would end past the deadline, so it is not made."""
    judge_stub.responder = lambda messages, request: StubReply(
        "overloaded", status=503, headers={"Retry-After": "2"}
    )
    judge = judge_stub.judge(timeout_seconds=5, max_retries=2)
    with pytest.raises(JudgeDeadlineError, match=r"after 1 attempt\(s\) and no retry fits"):
        ask(judge.with_deadline(time.monotonic() + 6.5))
    assert len(judge_stub.requests) == 1
    # without a deadline, every retry is made
    judge_stub.responder = lambda messages, request: StubReply("overloaded", status=503)
    with pytest.raises(JudgeError, match=r"after 3 attempt\(s\)"):
        ask(judge_stub.judge(timeout_seconds=5, max_retries=2))
    assert len(judge_stub.requests) == 4
