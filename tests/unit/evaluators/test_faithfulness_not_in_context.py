"""Issue 32 item 6 (d): how Faithfulness counts a claim the retrieved context neither supports
nor contradicts: unfaithful by default (Ragas), faithful with ``not_in_context: "faithful"``
(DeepEval), where only a contradicted claim counts against the answer; and how repeated
statements and an empty answer count."""

from __future__ import annotations

import pytest

from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.judge_rag.evaluators import Faithfulness
from tests.support.fake_judge import FakeJudge

SAMPLE = Sample(
    question="How much annual leave do I get?",
    answer="You get 25 days. Leave is approved by HR. Unused leave expires in March.",
    contexts=["Staff get 25 days of annual leave.", "Line managers approve leave."],
)
CLAIMS = ["You get 25 days.", "Leave is approved by HR.", "Unused leave expires in March."]


def judge() -> FakeJudge:
    fake = FakeJudge().reply("statements", {"statements": CLAIMS})
    checks = [
        {"reason": "chunk 1", "supported": True, "relevant": True},
        {"reason": "managers approve it", "supported": False, "relevant": True},
        {"reason": "not mentioned", "supported": False, "relevant": True},
    ]
    fake.reply("answer statement checks", {"checks": checks})
    fake.reply(
        "faithfulness contradictions",
        {
            "verdicts": [
                {"reason": "chunk 2: line managers approve", "verdict": True},
                {"reason": "the context is silent", "verdict": False},
            ]
        },
    )
    return fake


def test_by_default_a_claim_the_context_lacks_is_unfaithful_as_in_ragas() -> None:
    fake = judge()
    (result,) = Faithfulness(judge=fake).evaluate(SAMPLE)
    assert result.score == pytest.approx(1 / 3)
    assert "faithfulness contradictions" not in fake.purposes()  # no extra call


def test_as_in_deepeval_only_a_contradicted_claim_is_unfaithful() -> None:
    fake = judge()
    (result,) = Faithfulness(options={"not_in_context": "faithful"}, judge=fake).evaluate(SAMPLE)
    assert result.score == pytest.approx(2 / 3)
    assert result.reason == (
        "2 of 3 claims faithful (1 the retrieved context neither supports nor contradicts, "
        'counted as faithful); first contradicted: "Leave is approved by HR." (chunk 2: line '
        "managers approve)"
    )
    # only the unsupported claims are asked about, against the context
    (asked,) = fake.calls_for("faithfulness contradictions")
    assert "You get 25 days." not in asked.prompt.split("<statements>")[1]
    assert "Line managers approve leave." in asked.prompt


def test_a_repeated_statement_counts_once_and_an_empty_answer_scores_1() -> None:
    fake = FakeJudge().reply("statements", {"statements": ["A.", "A.", "B."]})
    fake.reply(
        "answer statement checks",
        {"checks": [{"supported": True, "relevant": True}, {"supported": False, "relevant": True}]},
    )
    (result,) = Faithfulness(judge=fake).evaluate(
        Sample(question="q", answer="A. A. B.", contexts=["A."])
    )
    assert result.score == 0.5  # DeepEval would judge "A." twice: 2 of 3
    empty = FakeJudge()
    (result,) = Faithfulness(judge=empty).evaluate(Sample(question="q", answer="", contexts=["A."]))
    assert result.score == 1.0 and empty.calls == []  # as DeepEval: no claims, score 1


def test_an_unknown_choice_is_refused_naming_the_two() -> None:
    with pytest.raises(ValueError, match="'unfaithful' or 'faithful'"):
        Faithfulness(options={"not_in_context": "idk"})
