"""Validation of generated cases: each rule rejects what it should, with its reason."""

from __future__ import annotations

from evalrunner.generate.build import _candidates
from evalrunner.generate.chunks import Chunk
from evalrunner.generate.kinds import KINDS, Drafts
from evalrunner.generate.validate import Candidate, Validator
from tests.support.fake_judge import FakeJudge

LEAVE = Chunk(
    id="leave.md#1",
    document="leave.md",
    heading="Entitlement",
    text="Full-time employees receive 25 days of paid annual leave per calendar year. "
    "After five years of service the entitlement rises to 28 days.",
)
SICK = Chunk(
    id="sick.md#1",
    document="sick.md",
    heading="Sick leave",
    text="Employees get 10 days of paid sick leave per year.",
)


def _case(question, answer, sources=(LEAVE,), kind="fact"):
    return Candidate(
        kind=kind, topic="leave", question=question, answer=answer, sources=list(sources)
    )


NEEDS = {k.name: k.sources > 0 for k in KINDS.values()}


def test_lexical_rules_without_model_or_judge():
    v = Validator(None, None)
    good = _case(
        "How many days of annual leave do full-time employees get?",
        "Full-time employees receive 25 days of paid annual leave per calendar year.",
    )
    wrong_number = _case(
        "How many days of annual leave do full-time staff get?",
        "Full-time employees receive 30 days of paid annual leave.",
    )
    invented = _case(
        "Which perk is there on Fridays?", "Free helicopter rides every Friday afternoon."
    )
    giveaway = _case(
        "Do full-time employees receive 25 days of paid annual leave per calendar year?",
        "Full-time employees receive 25 days of paid annual leave per calendar year.",
    )
    twin = _case(
        "How many days of annual leave do full-time employees get?",
        "Full-time employees receive 25 days of paid annual leave per calendar year.",
    )
    probe = Candidate(kind="unrelated", topic="", question="Any stock tips?")
    result = v.run([good, wrong_number, invented, giveaway, twin, probe], NEEDS)
    assert [c.question for c in result.kept] == [good.question, probe.question]
    reasons = {r.question: (r.reason, r.detail) for r in result.rejected}
    assert reasons[wrong_number.question] == ("unsupported", "number(s) 30 in no source chunk")
    assert reasons[invented.question][0] == "unsupported"
    assert reasons[giveaway.question][0] == "answer_in_question"
    assert reasons[twin.question][0] == "duplicate"
    assert result.counts() == {
        "malformed": 0,
        "unsupported": 2,
        "not_answerable": 0,
        "answer_in_question": 1,
        "duplicate": 1,
    }
    assert result.method.startswith("lexical")


def test_bad_source_numbers_and_missing_sources_are_malformed():
    drafts = Drafts.model_validate(
        {
            "cases": [
                {"question": "q1", "answer": "a", "sources": [3]},
                {"question": "q2", "answer": "a", "sources": [1, 1]},
                {"question": "q3", "answer": "a", "sources": [1, 2]},
                {"question": "cut: beyond the count asked", "answer": "a", "sources": [1, 2]},
            ]
        }
    )
    out = _candidates(KINDS["multi-hop"], "t", drafts, [LEAVE, SICK], 3)
    assert len(out) == 3
    assert out[0].malformed == "source number(s) [3] name no chunk (1..2)"
    assert out[1].malformed == "cites 1 chunk(s); a multi-hop case needs 2"
    assert out[2].malformed is None and out[2].sources == [LEAVE, SICK]
    result = Validator(None, None).run(out[:2], NEEDS)
    assert result.counts()["malformed"] == 2


def test_the_judge_decides_without_the_embedding_model_and_is_accounted():
    judge = FakeJudge()
    judge.reply(
        "generated case check",
        {"supported": False, "answerable": True, "reason": "the chunk says 25 days, not 30"},
        when="Friday",
    )
    judge.reply("generated case check", {"supported": True, "answerable": True, "reason": "ok"})
    v = Validator(None, judge)
    good = _case(
        "How many days of annual leave do full-time employees get?",
        "Full-time employees receive 25 days of paid annual leave per calendar year.",
    )
    bad = _case("What happens on Friday?", "Full-time employees receive 25 days of leave.")
    result = v.run([good, bad], NEEDS)
    assert [c.question for c in result.kept] == [good.question]
    assert result.rejected[0].detail == "judge: the chunk says 25 days, not 30"
    assert result.method == "judge groundedness" and judge.usage.calls == 2
    # untrusted text goes in delimited
    assert "<answer>" in judge.calls[0].prompt and '<chunk id="1">' in judge.calls[0].prompt


def test_embedding_groundedness_on_the_packaged_model():
    from evalrunner.models.hub import tool_encoder

    v = Validator(tool_encoder("sentence-transformers/all-MiniLM-L6-v2").embed, None)
    good = _case(
        "How much annual leave does a full-time employee get?",
        "Full-time employees get 25 days of paid annual leave a year.",
    )
    invented = _case(
        "Which perk does the policy mention?",
        "Employees are given free helicopter rides every Friday afternoon.",
    )
    off = _case("What is the capital of France?", "Employees get 25 days of annual leave.")
    result = v.run([good, invented, off], NEEDS)
    assert [c.question for c in result.kept] == [good.question]
    assert {r.question: r.reason for r in result.rejected} == {
        invented.question: "unsupported",
        off.question: "not_answerable",
    }
