"""The misinformation perturbation: the judge's rewrite of one chunk, the chunk chosen by the
seed, failures kept per case, and the refusals Prepare gives when it cannot be carried out."""

from __future__ import annotations

import pytest

from evalrunner.errors import EventError
from evalrunner.judge.base import JudgeError
from evalrunner.perturb import PerturbationSpec, perturb_case
from evalrunner.perturb.misinformation import (
    CHECK,
    check_misinformation,
    chosen_chunk,
    misinform_all,
    misinform_case,
)
from evalrunner.suite.model import TestCase
from tests.support.fake_judge import FakeJudge

CHUNKS = ["Staff get 25 days of annual leave.", "Pensions are matched up to 6%.", "  "]


def case(case_id: str = "leave", contexts: list[str] | None = CHUNKS) -> TestCase:
    return TestCase(index=0, case_id=case_id, question="How many days of leave?", contexts=contexts)


def rewriting_judge() -> FakeJudge:
    """Falsifies whatever chunk it is sent: 25 -> 30, 6% -> 9%."""
    judge = FakeJudge()

    def rewrite(messages):
        # the last <chunk> block: the task text names the tag first
        chunk = messages[-1].content.rsplit("<chunk>", 1)[1].split("</chunk>")[0].strip()
        changed = chunk.replace("25", "30").replace("6%", "9%")
        return {"rewritten": changed, "false_fact": f"False: {changed}"}

    judge.reply("misinformation rewrite", rewrite)
    return judge


SPEC = PerturbationSpec(kind="misinformation", seed=3, name="misinformation")


def test_one_chunk_is_rewritten_and_the_case_carries_the_false_fact() -> None:
    judge = rewriting_judge()
    original = case()
    perturbed = misinform_case(original, SPEC, judge)
    assert perturbed is not None and perturbed.perturbation is not None
    p = perturbed.perturbation
    index = (p.chunk or 0) - 1
    assert index in (0, 1)  # never the blank chunk
    assert perturbed.case_id == "leave~misinformation"
    assert perturbed.question == original.question  # the question is kept
    changed = [
        i for i, (a, b) in enumerate(zip(CHUNKS, perturbed.contexts or [], strict=True)) if a != b
    ]
    assert changed == [index]
    assert p.original_context == CHUNKS[index]
    assert perturbed.contexts[index] == CHUNKS[index].replace("25", "30").replace("6%", "9%")
    assert p.false_fact == f"False: {perturbed.contexts[index]}"
    assert (p.check, p.context, p.error, p.of) == (CHECK, True, None, "leave")
    # the rewritten chunk is what the judge was asked about, with the question
    (call,) = judge.calls
    assert CHUNKS[index] in call.prompt and original.question in call.prompt


def test_the_chunk_is_chosen_by_the_seed_alone() -> None:
    picks = {
        seed: chosen_chunk(PerturbationSpec(kind="misinformation", seed=seed), case())
        for seed in range(20)
    }
    assert set(picks.values()) == {0, 1}  # both non-blank chunks get drawn, never the blank
    again = {
        seed: chosen_chunk(PerturbationSpec(kind="misinformation", seed=seed), case())
        for seed in range(20)
    }
    assert picks == again


def test_a_case_without_contexts_is_not_perturbed() -> None:
    judge = rewriting_judge()
    assert misinform_case(case(contexts=None), SPEC, judge) is None
    assert misinform_case(case(contexts=["", " "]), SPEC, judge) is None
    assert judge.calls == []


def test_a_judge_failure_is_kept_on_that_case_and_the_others_are_perturbed() -> None:
    judge = rewriting_judge()
    judge.reply("misinformation rewrite", JudgeError("judge down"), when="[bad]")
    cases = [case("ok"), case("bad", ["[bad] 25 days"]), case("ok2")]
    ok, bad, ok2 = misinform_all(cases, SPEC, judge)
    assert ok and ok.perturbation and ok.perturbation.false_fact
    assert ok2 and ok2.perturbation and ok2.perturbation.error is None
    assert bad and bad.perturbation
    assert bad.perturbation.error == "the judge could not rewrite contexts[0]: judge down"
    assert bad.contexts == ["[bad] 25 days"] and bad.perturbation.false_fact is None


def test_an_unchanged_rewrite_is_an_error_not_a_perturbation() -> None:
    judge = FakeJudge()
    judge.reply("misinformation rewrite", {"rewritten": "No number here.", "false_fact": "nothing"})
    perturbed = misinform_case(case(contexts=["No number here."]), SPEC, judge)
    assert perturbed and perturbed.perturbation
    assert perturbed.perturbation.error == "the judge returned contexts[0] unchanged"


def test_the_judge_reply_is_schema_validated() -> None:
    judge = FakeJudge()
    judge.reply("misinformation rewrite", {"rewritten": "", "false_fact": "x"})
    perturbed = misinform_case(case(), SPEC, judge)
    assert perturbed and perturbed.perturbation and perturbed.perturbation.error
    assert "could not rewrite" in perturbed.perturbation.error


def test_the_text_perturbators_refuse_it() -> None:
    with pytest.raises(ValueError, match="run's judge"):
        perturb_case(case(), SPEC)


@pytest.mark.parametrize(
    ("has_judge", "sends", "contexts", "message"),
    [
        (False, "target.openai.send_contexts", True, "set 'judge' in the event"),
        (True, None, True, "target.openai.send_contexts"),
        (True, None, True, "target.contexts_field"),
        (True, "target.contexts_field", False, "fill the retrieved_contexts column"),
    ],
)
def test_refused_with_what_to_set(
    has_judge: bool, sends: str | None, contexts: bool, message: str
) -> None:
    with pytest.raises(EventError, match=message) as caught:
        check_misinformation(
            [PerturbationSpec(kind="typos"), SPEC],
            has_judge=has_judge,
            target_kind="lambdaArn",
            sends_contexts=sends,
            any_contexts=contexts,
        )
    assert "perturbations[1] (misinformation)" in str(caught.value)


def test_accepted_when_everything_is_there() -> None:
    check_misinformation(
        [SPEC],
        has_judge=True,
        target_kind="openai",
        sends_contexts="target.openai.send_contexts",
        any_contexts=True,
    )
