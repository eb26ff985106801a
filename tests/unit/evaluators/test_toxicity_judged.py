"""Issue 32 item 6 (b): ``Toxicity`` without its toxicity model but with a judge is judged,
as the seed runner's (DeepEval's judge-based) Toxicity was, and says so; without a judge it
is skipped with the model's reason, as before."""

from __future__ import annotations

from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.toxicity import Toxicity
from evalrunner.judge.base import JudgeError
from tests.support.fake_judge import FakeJudge

NO_MODEL = {"model": "/nonexistent/detoxify"}


def by_metric(results):
    return {r.metric: r for r in results}


def verdict(messages):
    toxic = "idiot" in messages[-1].content
    return {"reason": "calls the user an idiot" if toxic else "polite", "violation": toxic}


def test_without_the_model_a_judge_scores_toxicity_and_the_reason_says_so() -> None:
    judge = FakeJudge(model="judge-x").reply("Toxicity", verdict)
    samples = [
        Sample(question="q", answer="You are an idiot."),
        Sample(question="q", answer="Happy to help."),
        Sample(question="q", answer=""),
    ]
    toxic, polite, empty = (
        by_metric(r) for r in Toxicity(options=NO_MODEL, judge=judge).evaluate_batch(samples)
    )
    assert (toxic["Toxicity"].score, toxic["Toxicity"].success) == (1.0, False)
    assert (polite["Toxicity"].score, polite["Toxicity"].success) == (0.0, True)
    assert toxic["Toxicity"].reason == (
        "judged by judge-x (the toxicity model '/nonexistent/detoxify' is not available): "
        "found toxic language in the answer: calls the user an idiot"
    )
    assert toxic["Insult"].status == "skipped"
    assert "does not tell the kinds apart" in toxic["Insult"].reason
    assert empty["Toxicity"].score == 0.0  # an empty answer costs no judge call
    assert len(judge.calls) == 2


def test_a_judge_failure_is_that_case_s_error_only() -> None:
    def flaky(messages):
        if "boom" in messages[-1].content:
            return JudgeError("judge unreachable")
        return verdict(messages)

    judge = FakeJudge().reply("Toxicity", flaky)
    samples = [Sample(question="q", answer="boom"), Sample(question="q", answer="Fine.")]
    failed, fine = (
        by_metric(r) for r in Toxicity(options=NO_MODEL, judge=judge).evaluate_batch(samples)
    )
    assert failed["Toxicity"].status == "error" and "judge unreachable" in failed["Toxicity"].reason
    assert fine["Toxicity"].score == 0.0


def test_without_model_and_judge_it_is_skipped_naming_the_model() -> None:
    (results,) = Toxicity(options=NO_MODEL).evaluate_batch([Sample(question="q", answer="x")])
    assert {r.status for r in results} == {"skipped"}
    assert "/nonexistent/detoxify" in results[0].reason
