"""Issue 13, item 7: the similarity parts of Answer correctness and Answer relevancy (question
generation) are the cosine similarity of embeddings when the run has an embedding model, in
the Score step; the ROUGE-L stand-in stays only without one, and the reason says which.

The expected similarities are computed here with sentence-transformers directly (the model
loaded apart from the run's hub), so a wrong text pair, a missing normalisation or the
stand-in left in place all fail."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from evalrunner.api import evaluate
from evalrunner.evaluators.base import MetricResult, Sample
from evalrunner.evaluators.judge_rag import (
    AnswerCorrectness,
    AnswerRelevancyQuestionGeneration,
    factuality_f1,
    lexical_similarity,
)
from evalrunner.models import PACKAGED_MINILM, ModelHub, locate
from tests.support.fake_judge import FakeJudge

QUESTION = "How many days of annual leave do employees get?"
ANSWER = "You are entitled to 25 paid vacation days every year. Pizza is tasty."
EXPECTED = "Employees get 25 days of paid annual leave per year."
#: Paraphrases of the question sharing few words with it: ROUGE-L rates them low.
QUESTIONS = [
    "What is the yearly vacation allowance for staff?",
    "How much paid time off does a worker receive annually?",
    "How many holidays per year are employees entitled to?",
]
F1 = factuality_f1(1, 1, 1)  # the judge below: one of two statements right, one missed


@lru_cache(maxsize=1)
def _reference(model: str = PACKAGED_MINILM) -> SentenceTransformer:
    return SentenceTransformer(str(locate(model, "embedding")), device="cpu")


def cosine(a: str, b: str, model: str = PACKAGED_MINILM) -> float:
    x, y = _reference(model).encode([a, b], convert_to_numpy=True)
    return float(np.clip(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)), 0.0, 1.0))


def _sample() -> Sample:
    return Sample(question=QUESTION, answer=ANSWER, expected_answer=EXPECTED)


def _fake_judge() -> FakeJudge:
    judge = FakeJudge()
    judge.reply("statements", {"statements": ["Staff get 25 days.", "Pizza is tasty."]})
    verdicts = [{"reason": "", "verdict": True}, {"reason": "", "verdict": False}]
    judge.reply(
        "answer correctness verdicts", {"answer_verdicts": verdicts, "expected_verdicts": verdicts}
    )
    judge.reply("question generation", {"questions": QUESTIONS, "noncommittal": False})
    return judge


def _rescored(evaluator: Any, hub: ModelHub) -> tuple[MetricResult, MetricResult]:
    (per_case,) = evaluator.evaluate(_sample())
    (after,) = evaluator.rescore_run([(_sample(), [per_case])], hub)[0]
    return per_case, after


def test_answer_correctness_similarity_is_the_embedding_cosine(minilm_hub) -> None:
    per_case, after = _rescored(AnswerCorrectness(judge=_fake_judge()), minilm_hub)
    sim = cosine(ANSWER, EXPECTED)
    assert after.score == pytest.approx(0.75 * F1 + 0.25 * sim, abs=1e-4)
    assert per_case.score == pytest.approx(0.75 * F1 + 0.25 * lexical_similarity(ANSWER, EXPECTED))
    assert f"similarity: embeddings ({PACKAGED_MINILM})" in after.reason
    assert f"similarity {sim:.3f}" in after.reason and "ROUGE-L" not in after.reason


def test_question_generation_similarity_is_the_embedding_cosine(minilm_hub) -> None:
    evaluator = AnswerRelevancyQuestionGeneration(judge=_fake_judge())
    per_case, after = _rescored(evaluator, minilm_hub)
    expected = sum(cosine(QUESTION, q) for q in QUESTIONS) / len(QUESTIONS)
    assert after.score == pytest.approx(expected, abs=1e-4)
    # the paraphrases pass with embeddings and fail with the word-overlap stand-in
    assert after.success is True and per_case.success is False
    assert f"similarity: embeddings ({PACKAGED_MINILM})" in after.reason
    assert evaluator.score_step_models() == [PACKAGED_MINILM]


def test_the_embedding_model_option_picks_the_model(tiny_models) -> None:
    tiny = str(tiny_models["encoder"])
    evaluator = AnswerCorrectness(options={"embedding_model": tiny}, judge=_fake_judge())
    _, after = _rescored(evaluator, ModelHub(device="cpu"))
    assert after.score == pytest.approx(0.75 * F1 + 0.25 * cosine(ANSWER, EXPECTED, tiny), abs=1e-4)
    assert f"similarity: embeddings ({tiny})" in after.reason


# ------------------------------------------------------------------ through the embedded engine


def _judge_reply(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
    """The loopback judge: two statements per text, the first right and the second not, and
    the paraphrased questions."""
    prompt = "\n".join(m["content"] for m in messages)
    if "questions that the answer" in prompt:
        return {"questions": QUESTIONS, "noncommittal": False}
    counts = re.search(r"exactly (\d+) answer_verdicts.*?exactly (\d+) expected_verdicts", prompt)
    if counts:
        a, e = (int(n) for n in counts.groups())
        right = [{"reason": "", "verdict": True}]
        wrong = {"reason": "", "verdict": False}
        return {
            "answer_verdicts": right + [wrong] * (a - 1),
            "expected_verdicts": right + [wrong] * (e - 1),
        }
    return {"statements": ["Staff get 25 days.", "Pizza is tasty."]}


METRICS = ["Answer correctness", "Answer relevancy (question generation)"]


def _run(tmp_path, judge_stub, **options: Any):
    judge_stub.responder = _judge_reply
    judge = {
        "openai": {"base_url": judge_stub.url, "model": "stub"},
        "cache_dir": str(tmp_path / "judge-cache"),
        "max_retries": 0,
    }
    rows = [{"question": QUESTION, "expected_answer": EXPECTED}]
    return evaluate(
        rows, lambda question: ANSWER, metrics=METRICS, judge=judge, out=tmp_path / "out", **options
    )


def test_a_run_scores_the_similarity_parts_with_the_packaged_model(tmp_path, judge_stub) -> None:
    run = _run(tmp_path, judge_stub)
    row = run.report.rows[0]
    correctness = row.result("Answer correctness")
    relevancy = row.result("Answer relevancy (question generation)")
    assert correctness is not None and relevancy is not None
    assert correctness.score == pytest.approx(0.75 * F1 + 0.25 * cosine(ANSWER, EXPECTED), abs=1e-4)
    expected = sum(cosine(QUESTION, q) for q in QUESTIONS) / len(QUESTIONS)
    assert relevancy.score == pytest.approx(expected, abs=1e-4)
    for result in (correctness, relevancy):
        assert f"similarity: embeddings ({PACKAGED_MINILM})" in result.reason
    # one result per metric (the Score step's replaced the stand-in), the model on record
    assert [r.metric for r in row.results].count("Answer correctness") == 1
    assert run.summary.models is not None
    assert run.summary.models.by_evaluator["Answer correctness"] == PACKAGED_MINILM
    assert run.metric("Answer correctness") == pytest.approx(correctness.score)


def test_a_run_without_the_model_keeps_the_stand_in_and_says_why(tmp_path, judge_stub) -> None:
    missing = str(tmp_path / "no-such-model")
    options = {name: {"embedding_model": missing} for name in METRICS}
    run = _run(tmp_path, judge_stub, evaluator_options=options)
    row = run.report.rows[0]
    correctness = row.result("Answer correctness")
    relevancy = row.result("Answer relevancy (question generation)")
    assert correctness is not None and relevancy is not None
    lexical = lexical_similarity(ANSWER, EXPECTED)
    assert correctness.score == pytest.approx(0.75 * F1 + 0.25 * lexical)
    expected = sum(lexical_similarity(QUESTION, q) for q in QUESTIONS) / len(QUESTIONS)
    assert relevancy.score == pytest.approx(expected)
    for result in (correctness, relevancy):
        assert "similarity: ROUGE-L stand-in (no embedding model: " in result.reason
        assert missing in result.reason and "'embedding_model' option" in result.reason
    # scored, not skipped: no "model unavailable … skipped" problem
    assert not [p for p in run.problems if p.type == "model_unavailable"]
