"""The problems a run's missing models make: a high one per model whose evaluators were
skipped, a low one per evaluator the run's judge scored in its place (Toxicity without
detoxify), so the run says once, at run level, what was not measured and what was judged."""

from __future__ import annotations

from evalrunner.reports.model import Problem
from evalrunner.run import ModelNotice


def model_problems(notices: list[ModelNotice]) -> list[Problem]:
    """One high problem per model that was not there: the evaluators it skipped, and how
    to provide it. It comes first: a metric the user asked for was not measured at all.
    Evaluators the run's judge scored in its place get a low one, so the run says, once,
    which scored them (their scores are the judge's verdicts, not the model's)."""
    problems = []
    for n in notices:
        if n.evaluators:
            problems.append(
                Problem(
                    severity="high",
                    type="model_unavailable",
                    description=(
                        # one model can serve several roles (MiniLM: embeddings and BERTScore)
                        f"{', '.join(n.evaluators)} skipped: model {n.model!r} is not available"
                    ),
                    suggested_action=n.how,
                )
            )
        for evaluator, judge in n.judged.items():
            problems.append(
                Problem(
                    severity="low",
                    type="model_judged",
                    description=(
                        f"{evaluator} judged by {judge}: model {n.model!r} is not available, "
                        "so its scores are the judge's verdicts, not the model's"
                    ),
                    suggested_action=f"to score {evaluator} with the model: {n.how}",
                )
            )
    return problems
