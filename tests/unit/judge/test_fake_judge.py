"""The one shared fake judge (tests/support/fake_judge.py): what the judge tests rely on, and
that no test module grows its own copy again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from evalrunner.judge.base import JudgeParseError, Message
from tests.support.fake_judge import FakeJudge

TESTS = Path(__file__).resolve().parents[2]


class Score(BaseModel):
    score: int


def _ask(judge: FakeJudge, text: str = "q", *, logprobs: bool = False) -> tuple[int, object]:
    reply = judge.ask([Message(role="user", content=text)], Score, purpose="p", logprobs=logprobs)
    return reply.value.score, reply.top_logprobs


def test_scripted_replies_by_purpose_without_a_cache() -> None:
    answers = iter([1, 2])
    judge = FakeJudge.scripted({"p": lambda messages: {"score": next(answers)}})
    assert [_ask(judge)[0], _ask(judge)[0]] == [1, 2]  # same prompt, asked again
    assert judge.purposes() == ["p", "p"] and judge.billed == 2


def test_the_cache_answers_an_identical_prompt() -> None:
    judge = FakeJudge().reply("p", {"score": 3})
    assert [_ask(judge)[0], _ask(judge)[0]] == [3, 3]
    assert [c.cached for c in judge.calls] == [False, True] and judge.billed == 1


def test_logprobs_come_back_only_when_asked_for() -> None:
    top = [{" 4": -0.1}]
    judge = FakeJudge.scripted({"p": ({"score": 4}, top)})
    assert _ask(judge) == (4, None)
    assert _ask(judge, logprobs=True) == (4, top)
    assert [c.logprobs for c in judge.calls] == [False, True]


def test_when_rules_a_replaced_reply_and_failures() -> None:
    judge = FakeJudge().reply("p", {"score": 1}).reply("p", {"score": 2}, when="special")
    assert _ask(judge, "a special case")[0] == 2
    judge.reply("p", {"score": 5})  # replaces the reply without `when`
    assert _ask(judge, "other")[0] == 5
    judge.reply("p", {"score": "many"})
    with pytest.raises(JudgeParseError, match="does not match Score"):
        _ask(judge, "again")
    judge.reply("p", RuntimeError("down"))
    with pytest.raises(RuntimeError, match="down"):
        _ask(judge, "once more")


def test_no_test_module_defines_its_own_judge() -> None:
    """Judge fakes live in tests/support only (there were three copies). A test of the Judge
    base class itself may subclass it, named for what it checks, not as a fake."""
    allowed = {"_Unvalidated"}  # test_judge_extract: a client that skips validation
    found = [
        f"{path.relative_to(TESTS)}: {name}"
        for path in TESTS.rglob("*.py")
        if "support" not in path.relative_to(TESTS).parts
        for name in re.findall(r"^class (\w+)\((?:\w+\.)?Judge\)", path.read_text(), re.M)
        if name not in allowed
    ]
    assert found == []
