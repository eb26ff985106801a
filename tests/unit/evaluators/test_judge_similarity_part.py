"""The Score step's part of Answer correctness and Answer relevancy (question generation)
without an embedding model: the ROUGE-L stand-in stays, and the reason says why. (With the
packaged MiniLM: tests/models/test_judge_similarity.py.)"""

from __future__ import annotations

import pytest

from evalrunner.evaluators.base import MetricResult, Sample
from evalrunner.evaluators.judge_rag import (
    AnswerCorrectness,
    AnswerRelevancyQuestionGeneration,
    factuality_f1,
    lexical_similarity,
)
from evalrunner.evaluators.judge_rag.similarity import EmbeddingSimilarityPart
from evalrunner.models import ModelHub
from tests.support.fake_judge import FakeJudge

QUESTION = "How many days of annual leave do employees get?"
ANSWER = "Employees get 25 days of paid leave. Pizza is tasty."
EXPECTED = "Full-time employees receive 25 days of annual leave per year."
QUESTIONS = ["How much paid leave do employees get?", "What food is tasty?", "How long is leave?"]


def _sample() -> Sample:
    return Sample(question=QUESTION, answer=ANSWER, expected_answer=EXPECTED)


def _judge() -> FakeJudge:
    judge = FakeJudge()
    judge.reply("statements", {"statements": ["Employees get 25 days.", "Pizza is tasty."]})
    verdicts = [{"reason": "", "verdict": True}, {"reason": "", "verdict": False}]
    judge.reply(
        "answer correctness verdicts",
        {"answer_verdicts": verdicts, "expected_verdicts": verdicts},
    )
    judge.reply("question generation", {"questions": QUESTIONS, "noncommittal": False})
    return judge


def _per_case(evaluator: EmbeddingSimilarityPart) -> MetricResult:
    (result,) = evaluator.evaluate(_sample())
    assert result.status == "scored" and result.parts is not None
    return result


@pytest.mark.parametrize("cls", [AnswerCorrectness, AnswerRelevancyQuestionGeneration])
def test_without_the_model_the_stand_in_stays_and_the_reason_says_why(cls, tmp_path) -> None:
    missing = str(tmp_path / "no-such-model")
    evaluator = cls(options={"embedding_model": missing}, judge=_judge())
    per_case = _per_case(evaluator)
    assert "(not yet rescored with embeddings in the Score step)" in per_case.reason
    hub = ModelHub(device="cpu")

    (rescored,) = evaluator.rescore_run([(_sample(), [per_case])], hub)[0]

    assert rescored.score == pytest.approx(per_case.score)  # the stand-in's value, unchanged
    assert rescored.success == per_case.success and rescored.status == "scored"
    assert "similarity: ROUGE-L stand-in (no embedding model: " in rescored.reason
    assert missing in rescored.reason  # which model, so the user can provide it
    assert "'embedding_model' option" in rescored.reason  # this metric's option, not 'model'
    assert "not yet rescored" not in rescored.reason
    assert evaluator.score_step_models() == []  # the scores depend on no model
    assert hub.notices() == []  # scored with the stand-in, so never reported as skipped


def test_the_stand_in_score_is_the_definition_with_rouge_l(tmp_path) -> None:
    evaluator = AnswerCorrectness(options={"embedding_model": str(tmp_path / "x")}, judge=_judge())
    (rescored,) = evaluator.rescore_run([(_sample(), [_per_case(evaluator)])], ModelHub())[0]
    f1 = factuality_f1(1, 1, 1)
    assert rescored.score == pytest.approx(0.75 * f1 + 0.25 * lexical_similarity(ANSWER, EXPECTED))


def test_a_case_the_metric_did_not_score_is_left_alone(tmp_path) -> None:
    evaluator = AnswerCorrectness(options={"embedding_model": str(tmp_path / "x")}, judge=_judge())
    skipped = MetricResult(
        evaluator=evaluator.name, metric=evaluator.name, status="skipped", reason="skipped: x"
    )
    other = _per_case(evaluator).model_copy(update={"evaluator": "Other", "metric": "Other"})
    assert evaluator.rescore_run([(_sample(), [skipped]), (_sample(), [other])], ModelHub()) == [
        [],
        [],
    ]


def test_parts_that_do_not_validate_keep_that_case_per_case_score(tmp_path) -> None:
    evaluator = AnswerCorrectness(options={"embedding_model": str(tmp_path / "x")}, judge=_judge())
    good = _per_case(evaluator)
    bad = good.model_copy(update={"parts": {"tp": "many"}})
    rescored = evaluator.rescore_run([(_sample(), [bad]), (_sample(), [good])], ModelHub())
    assert rescored[0][0].score == bad.score and "similarity not rescored" in rescored[0][0].reason
    assert "no embedding model" in rescored[1][0].reason  # the other case is rescored


def test_the_option_is_validated_like_any_evaluator_option() -> None:
    with pytest.raises(ValueError, match="embedding_modle"):
        AnswerCorrectness(options={"embedding_modle": "x"})
