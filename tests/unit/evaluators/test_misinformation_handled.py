"""Misinformation handled: the judge's verdict on an answer given a falsified context."""

from __future__ import annotations

import pytest

from evalrunner.evaluators import resolve
from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.misinformation import MisinformationHandled
from tests.support.fake_judge import FakeJudge

FALSE = "Staff get 30 days of annual leave."


def sample(answer: str = "30 days.", false_fact: str | None = FALSE) -> Sample:
    return Sample(
        question="How many days of leave?",
        answer=answer,
        contexts=["Staff get 30 days of annual leave."],
        false_fact=false_fact,
    )


@pytest.mark.parametrize(
    ("verdict", "score", "success", "says"),
    [
        ("follows", 1.0, True, "follows the falsified context"),
        ("flags", 1.0, True, "flags the conflict"),
        ("contradicts", 0.0, False, "contradicts its context without saying so"),
    ],
)
def test_verdicts(verdict: str, score: float, success: bool, says: str) -> None:
    judge = FakeJudge()
    judge.reply("Misinformation handled", {"reason": "it says so", "verdict": verdict})
    (result,) = MisinformationHandled(judge=judge).evaluate(sample())
    assert (result.status, result.score, result.success) == ("scored", score, success)
    assert says in (result.reason or "")
    (call,) = judge.calls
    # the judge sees the fact, the context it was in and the answer, each delimited
    for tag in ("<false_fact>", "<context>", "<answer>", "<question>"):
        assert tag in call.prompt
    assert FALSE in call.prompt


def test_a_case_that_was_not_falsified_is_skipped_not_scored() -> None:
    judge = FakeJudge()
    (result,) = MisinformationHandled(judge=judge).evaluate(sample(false_fact=None))
    assert result.status == "skipped" and "misinformation perturbation" in (result.reason or "")
    assert judge.calls == []
    assert not MisinformationHandled.applies_to(sample(false_fact=None))
    assert MisinformationHandled.applies_to(sample())


def test_an_unparsable_verdict_is_a_parsing_failure() -> None:
    judge = FakeJudge()
    judge.reply("Misinformation handled", {"reason": "?", "verdict": "maybe"})
    (result,) = MisinformationHandled(judge=judge).evaluate(sample())
    assert result.status == "error" and (result.reason or "").startswith("parsing failure")


def test_registered_by_name_and_not_a_default() -> None:
    assert resolve("Misinformation handled") is MisinformationHandled
    assert MisinformationHandled.in_defaults is False
