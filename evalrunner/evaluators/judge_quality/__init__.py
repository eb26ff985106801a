"""Answer-quality scores by an LLM judge: GEval (:mod:`.geval`), BYOP (:mod:`.byop`),
Summarization (judge) (:mod:`.summarization`) and the 1–5 family (:mod:`.one_to_five`, its
rubrics as data in :mod:`.rubrics`).

Every evaluator here needs a judge (without one its metrics are skipped with the reason),
makes one judge call per case (GEval: plus one per run to write its evaluation steps), and
shows the case's texts to the judge delimited, with the instruction to ignore instructions
inside them (:mod:`evalrunner.judge.prompts`). A reply that does not
validate (a score of 7 on a 1–5 form, no JSON) is repaired once by the judge client, then
reported as a parsing failure of the case's metrics: never NaN, never a silent 0.

Importing this package registers them, in this order: GEval, BYOP, Summarization (judge),
then the rubrics in the order of :data:`~.rubrics.RUBRICS`.
"""

# ruff: noqa: I001  (registration order is deliberate: it is the order users see)
from evalrunner.evaluators.judge_quality.geval import GEval, GEvalOptions, weighted_score
from evalrunner.evaluators.judge_quality.byop import BYOP, BYOP_PLACEHOLDERS, BYOPOptions
from evalrunner.evaluators.judge_quality.summarization import SummarizationJudge
from evalrunner.evaluators.judge_quality.one_to_five import (
    RUBRIC_EVALUATORS,
    Coherence,
    Fluency,
    Groundedness,
    OneToFiveEvaluator,
    Relevance,
    RetrievalScore,
    Similarity,
    one_to_five_metrics,
)

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 130

__all__ = [
    "BYOP",
    "BYOP_PLACEHOLDERS",
    "RUBRIC_EVALUATORS",
    "BYOPOptions",
    "Coherence",
    "Fluency",
    "GEval",
    "GEvalOptions",
    "Groundedness",
    "OneToFiveEvaluator",
    "Relevance",
    "RetrievalScore",
    "Similarity",
    "SummarizationJudge",
    "one_to_five_metrics",
    "weighted_score",
]
